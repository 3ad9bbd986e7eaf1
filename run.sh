#!/usr/bin/env bash
# ./run.sh — set up, build, and run the main job: every example is checked and printed
# back in canonical form.
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
done
