#!/usr/bin/env bash
# scripts/build.sh DIR [MESON OPTIONS...] — configures DIR once (again when the options
# change) and builds it, from the source tree in the current directory (run.sh and test.sh
# call it from the top of the tree; tests/build_sh_test.sh from a tiny project of its own).
# Says in a line what it configures and what it builds; meson's and ninja's output go to
# DIR/build.log, and when a step fails its errors (the compiler's, or meson's) are printed
# from the log, with the log's path, and the script exits 1.
set -euo pipefail
if [ $# -lt 1 ]; then echo "usage: scripts/build.sh DIR [MESON OPTIONS...]" >&2; exit 2; fi
dir=$1
shift
stamp="$dir/.tilec-options"
log="$dir/build.log"

# fail WHAT: the errors of the step that failed, from the log, and the log's path
fail() {
    echo "build.sh: $1 failed; its errors:" >&2
    # ninja marks each failed command with FAILED: (the compiler's messages follow it);
    # meson ends with ERROR: — otherwise the log's last lines
    if grep -q '^FAILED: ' "$log"; then
        sed -n '/^FAILED: /,$p' "$log" | head -n 80 >&2
    else
        tail -n 30 "$log" >&2
    fi
    echo "build.sh: the whole output is in $log" >&2
    exit 1
}

configured=false
if [ ! -f "$dir/build.ninja" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$*" ]; then
    echo "build.sh: configuring $dir/ (meson setup${*:+ $*}; the first build takes a minute or more)"
    rm -rf "$dir"
    mkdir -p "$dir"
    meson setup "$dir" "$@" >"$log" 2>&1 || fail "meson setup of $dir/"
    echo "$*" >"$stamp"
    configured=true
fi
echo "build.sh: building $dir/ (ninja)"
$configured || : >"$log" # the log holds this run's output only, so a FAILED: in it is this run's
ninja -C "$dir" >>"$log" 2>&1 || fail "the build of $dir/"
