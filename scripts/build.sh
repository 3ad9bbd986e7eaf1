#!/usr/bin/env bash
# scripts/build.sh DIR [MESON OPTIONS...] — configures DIR once (again when the options
# change) and builds it.
set -euo pipefail
dir=$1
shift
stamp="$dir/.tilec-options"
if [ ! -f "$dir/build.ninja" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$*" ]; then
    rm -rf "$dir"
    meson setup "$dir" "$@" >/dev/null
    echo "$*" >"$stamp"
fi
ninja -C "$dir" >/dev/null
