#!/usr/bin/env bash
# ./run.sh — set up, build, and run the main job: every example is checked, printed back
# in canonical form, explained (which variant lowers each statement, and why), emitted as
# CUDA and HIP and compiled with NVRTC (sm_90) and hiprtc (gfx90a) where they are
# installed, and run with --check against the CPU reference at warp sizes 32 and 64.
# The attention fragments (examples/attention/*.tile) at warp size 32. Then the JIT:
# `tilec fused --check` runs fused kernels, examples/jit_sum.c and `tilec reduce --check`
# run tilec_reduce, on a GPU when one is usable, else on the simulator. tilec run too: at
# warp size 32 on a GPU when one is usable (tilec_run_kernel, checked against the
# reference and the simulator's bits), else the simulator; at 64 on the simulator.
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
    $tilec explain "$f"
    out=$(mktemp -d)
    for t in "cuda sm_90" "hip gfx90a"; do
        set -- $t
        $tilec emit "$f" --target "$1" --arch "$2" -o "$out/src"
        if $tilec compile "$f" --target "$1" --arch "$2" -o "$out/bin" 2>"$out/err"; then
            echo "$1 $2: $(wc -l <"$out/src") lines of source, $(stat -c %s "$out/bin") bytes compiled"
        else
            echo "$1 $2: $(wc -l <"$out/src") lines of source; not compiled: $(head -1 "$out/err")"
        fi
    done
    rm -rf "$out"
    $tilec run "$f" --backend auto --check
    $tilec run "$f" --backend sim --warp-size 64 --check
done

# fragments of NVIDIA's MMA layouts: warps of 32 lanes only
for f in examples/attention/*.tile; do
    echo
    echo "== $f"
    $tilec check "$f"
    $tilec explain "$f" >/dev/null
    $tilec run "$f" --backend auto --check
done

echo
echo "== the JIT's fused kernels: tilec_fused (a GPU when one is usable, else the simulator)"
$tilec fused --op softmax --dtype bf16 --shape 64x1000 --check --repeat 3
$tilec fused --op rms_norm --dtype bf16 --shape 8x4096 --weight random --check --repeat 3
$tilec fused --op layer_norm --dtype f32 --shape 33x257 --weight random --bias random --stats --check --repeat 3
$tilec fused --op cross_entropy --dtype bf16 --shape 16x32000 --stats --check --repeat 3

echo
echo "== the JIT: tilec_reduce (a GPU when one is usable, else the simulator)"
build/examples_jit_sum
$tilec reduce --op sum --dtype f32 --shape 1024x1000 --check --repeat 3
$tilec reduce --op max --dtype bf16 --shape 8x1x4096x3 --axes 0,2 --nan ignore --check --repeat 3
