#!/usr/bin/env bash
# scripts/install-check.sh BUILD — installs BUILD into a scratch root and builds
# examples/embed.c and examples/jit_sum.c against it with `pkg-config --cflags --libs
# tilec`, as a user of the installed library would, then runs them (jit_sum on a GPU when
# one is usable, else on the simulator).
set -euo pipefail
build=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --destdir "$root" >/dev/null
pc=$(dirname "$(find "$root" -name tilec.pc | head -1)")
export PKG_CONFIG_PATH=$pc PKG_CONFIG_SYSROOT_DIR=$root
libdir=$(dirname "$(find "$root" -name 'libtilec.so' | head -1)")
test -x "$(find "$root" -name tilec -type f | head -1)"
cc -std=c11 -Wall -Wextra -Werror examples/embed.c $(pkg-config --cflags --libs tilec) -o "$root/embed"
LD_LIBRARY_PATH=$libdir "$root/embed"
cc -std=c11 -Wall -Wextra -Werror examples/jit_sum.c $(pkg-config --cflags --libs tilec) -lm -o "$root/jit_sum"
LD_LIBRARY_PATH=$libdir "$root/jit_sum"
echo "install check: header, library, pkg-config file and tilec installed; embed.c and jit_sum.c built and ran"
