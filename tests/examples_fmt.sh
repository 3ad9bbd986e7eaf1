#!/usr/bin/env bash
# examples_fmt.sh TILEC SOURCE_ROOT — every .tile file in examples/ is in canonical form
# (`tilec fmt --check` passes on all of them), so what the documentation shows is what
# `tilec fmt` prints. A failure names each file; `tilec fmt -i examples/*.tile` fixes them.
set -u
tilec=$1
root=$2
shopt -s nullglob
files=("$root"/examples/*.tile)
if [ "${#files[@]}" -eq 0 ]; then echo "FAIL: no .tile files in $root/examples"; exit 1; fi
if "$tilec" fmt --check "${files[@]}"; then
    echo "${#files[@]} examples in canonical form"
else
    echo "FAIL: the files named above are not in canonical form; run: tilec fmt -i examples/*.tile"
    exit 1
fi
