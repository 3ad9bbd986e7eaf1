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
# the Python package, as installed: its note of the library's directory, and a reduction
pkg=$(dirname "$(find "$root" -path '*/tilec/__init__.py' | head -1)")
[ -f "$pkg/_install.py" ] || { echo "install check: the Python package was not installed" >&2; exit 1; }
grep -qF "LIBDIR = '${libdir#"$root"}'" "$pkg/_install.py" ||
    { echo "install check: $pkg/_install.py does not name ${libdir#"$root"}" >&2; exit 1; }
TILEC_LIB=$libdir/libtilec.so PYTHONPATH=$(dirname "$pkg") PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import numpy, tilec
got = tilec.sum(numpy.array([3, -7, 2**31 - 1], dtype=numpy.int64))
assert got == 2**31 - 5, got
'
echo "install check: header, library, pkg-config file, tilec and the Python package installed; embed.c, jit_sum.c and a Python reduction ran"
