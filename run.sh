#!/usr/bin/env bash
# ./run.sh — set up, build, and run the main job: every example is checked, printed back
# in canonical form, explained (which variant lowers each statement, and why), and run
# with --check against the CPU reference at warp sizes 32 and 64. There is no GPU runtime
# in this build yet, so examples run on the CPU simulator.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
scripts/build.sh build
tilec=build/tilec
echo "$($tilec --version)"
for f in examples/*.tile; do
    echo
    echo "== $f"
    $tilec check "$f"
    $tilec fmt "$f"
    echo
    $tilec explain "$f" | grep -E '^(kernel|func)|^  line|^    \*'
    for ws in 32 64; do
        $tilec run "$f" --backend sim --warp-size "$ws" --check
    done
done
