#!/usr/bin/env bash
# tests/codegen_warnings.sh TILEC SOURCE_ROOT — what `tilec emit` writes compiles without a
# single warning in a user's own build: every examples/*.tile, the grid kernels (the
# JIT's whole-tensor reductions: rows, columns, argmax's pair, var, f64 argmax and i64
# aminmax, logsumexp, and rows of odd lengths), the swizzled tiles of tests/swizzle,
# the fragment programs of tests/fragments
# (CUDA only: fragments are of warps of 32 lanes), the map statements of tests/maps,
# the cluster programs of tests/clusters (CUDA only: sm_90 and later), and
# tests/names (kernels, parameters and
# buffers named as what the headers of a host build define: expf, INT_MAX, size_t, linux,
# strlen…, which emitted code renames), emitted for CUDA sm_90
# and compiled with `nvcc -c -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror` (the
# device front end's diagnostics and the host compiler's), and for HIP gfx90a with
# `hipcc -Wall -Wextra -Werror` (clang: device and host). Then every emitted file of a
# compiler, with two more, in one translation unit (below). No GPU is needed.
#
# The emitted source is written for NVRTC and hiprtc, which need no include; hipcc gets
# `-include hip/hip_runtime.h` (nvcc includes the CUDA runtime itself). A compiler that is
# not installed, or cannot build a two-line kernel here, is skipped with the reason; when
# both are, the test is skipped (exit 77). NVCC and HIPCC override the compilers' paths.
set -uo pipefail
tilec=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
hipcc=${HIPCC:-$(command -v hipcc || true)}
nvcc_flags=(-c -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror)
hipcc_flags=(--offload-arch=gfx90a -Wall -Wextra -Werror -include hip/hip_runtime.h -c)

# the grid kernels (the .tile programs tilec_reduce builds, in text)
cat >"$tmp/grid_rows.tile" <<'EOF'
kernel grid_rows(A: f32[64, 100000] global, B: f32[64] global) threads=256 {
  grid.sum(B, A, axes=(1))
}
EOF
cat >"$tmp/grid_cols.tile" <<'EOF'
kernel grid_cols(A: f16[8192, 512] global, B: f32[512] global) threads=256 {
  grid.max(B, A, axes=(0), nan=ignore)
}
EOF
cat >"$tmp/grid_argmax.tile" <<'EOF'
kernel grid_argmax(A: bf16[16, 300000] global, V: bf16[16] global, I: i64[16] global) threads=256 {
  grid.argmax(V, I, A, axes=(1))
}
EOF
cat >"$tmp/grid_argmax_f64.tile" <<'EOF'
kernel grid_argmax_f64(A: f64[16, 300000] global, V: f64[16] global, I: i64[16] global) threads=256 {
  grid.argmax(V, I, A, axes=(1))
}
EOF
cat >"$tmp/grid_aminmax_i64.tile" <<'EOF'
kernel grid_aminmax_i64(A: i64[300000, 7] global, L: i64[7] global, H: i64[7] global) threads=256 {
  grid.aminmax(L, H, A, axes=(0))
}
EOF
# rows of odd lengths: not 16-byte aligned, so loaded an element at a time (a kernel
# that declared its vector registers and never used them would fail -Werror)
cat >"$tmp/grid_rows_odd.tile" <<'EOF'
kernel grid_rows_odd(A: f32[3, 100003] global, B: f32[3] global) threads=256 {
  grid.sum(B, A, axes=(1))
}
EOF
cat >"$tmp/grid_argmin_f64_odd.tile" <<'EOF'
kernel grid_argmin_f64_odd(A: f64[3, 100003] global, V: f64[3] global, I: i32[3] global) threads=256 {
  grid.argmin(V, I, A, axes=(1), nan=ignore)
}
EOF
cat >"$tmp/grid_aminmax_i64_odd.tile" <<'EOF'
kernel grid_aminmax_i64_odd(A: i64[5, 7, 999] global, L: i64[7] global, H: i64[7] global) threads=256 {
  grid.aminmax(L, H, A, axes=(0, 2))
}
EOF
cat >"$tmp/grid_var.tile" <<'EOF'
kernel grid_var(A: f32[1000000] global, B: f32[1] global) threads=256 {
  grid.var(B, A, axes=(0))
}
EOF
# logsumexp's rows: its lowering makes registers it does not use, which must not be declared
cat >"$tmp/grid_logsumexp.tile" <<'EOF'
kernel grid_logsumexp(A: bf16[64, 4096] global, B: f32[64] global) threads=256 {
  grid.logsumexp(B, A, axes=(1))
}
EOF
# math=approx: the hardware exponential's helper beside the prelude (CUDA's PTX, HIP's inline assembly)
cat >"$tmp/softmax_approx.tile" <<'EOF'
kernel softmax_approx(X: bf16[8, 4, 1000] global, Y: bf16[8, 4, 1000] global) threads=128 grid=8 math=approx {
  shared L: f32[4, 1]
  cta.logsumexp(L, X[cta_id], axes=(-1))
  cta.map(Y[cta_id], exp(X[cta_id] - L))
}
EOF
printf 'extern "C" __global__ void probe(float *a) { a[0] = 1.0f; }\n' >"$tmp/probe.cu"
cp "$tmp/probe.cu" "$tmp/probe.hip"

# usable COMPILER FLAGS... FILE: whether it builds FILE (its output in $tmp/probe.log)
usable() {
    "$@" -o "$tmp/probe.o" >"$tmp/probe.log" 2>&1
}
targets=()
if [ ! -x "$nvcc" ]; then
    echo "skip cuda: $nvcc not found (set NVCC to an nvcc)"
elif ! usable "$nvcc" "${nvcc_flags[@]}" "$tmp/probe.cu"; then
    echo "skip cuda: $nvcc cannot build a two-line kernel here:"
    sed 's/^/  /' "$tmp/probe.log" | head -20
else
    targets+=(cuda)
fi
if [ -z "$hipcc" ] || [ ! -x "$hipcc" ]; then
    echo "skip hip: hipcc not found (Debian's hipcc package; or set HIPCC)"
elif ! usable "$hipcc" "${hipcc_flags[@]}" "$tmp/probe.hip"; then
    echo "skip hip: $hipcc cannot build a two-line kernel here (the HIP headers?):"
    sed 's/^/  /' "$tmp/probe.log" | head -20
else
    targets+=(hip)
fi
if [ ${#targets[@]} -eq 0 ]; then
    echo "codegen warnings: neither nvcc nor hipcc can compile here; skipped"
    exit 77
fi

failed=0
compiled=0
# fragments are of warps of 32 lanes (gfx90a runs 64: refused there), so CUDA only
for tile in "$root"/examples/*.tile "$tmp"/grid_*.tile "$tmp"/softmax_approx.tile "$root"/tests/swizzle/*.tile "$root"/tests/fragments/*.tile \
    "$root"/tests/maps/*.tile "$root"/tests/names/*.tile "$root"/tests/clusters/*.tile; do
    name=$(basename "$tile" .tile)
    for target in "${targets[@]}"; do
        case $tile in */tests/fragments/* | */tests/clusters/*) [ "$target" = cuda ] || continue ;; esac
        if [ "$target" = cuda ]; then
            src=$tmp/$name.cu
            cmd=("$nvcc" "${nvcc_flags[@]}" "$src")
            arch=sm_90
        else
            src=$tmp/$name.hip
            cmd=("$hipcc" "${hipcc_flags[@]}" "$src")
            arch=gfx90a
        fi
        if ! "$tilec" emit "$tile" --target "$target" --arch "$arch" -o "$src" 2>"$tmp/emit.log"; then
            echo "FAIL $name ($target): tilec emit failed:"
            cat "$tmp/emit.log"
            failed=1
            continue
        fi
        "${cmd[@]}" -o "$tmp/$name.$target.o" >"$tmp/cc.log" 2>&1
        rc=$?
        compiled=$((compiled + 1))
        # -Werror makes every warning an error; a "warning" that still gets through fails too
        if [ $rc -ne 0 ] || grep -qi 'warning' "$tmp/cc.log"; then
            echo "FAIL $name ($target, exit $rc): ${cmd[*]}"
            sed 's/^/  /' "$tmp/cc.log" | head -40
            failed=1
        else
            echo "ok   $name ($target)"
        fi
    done
done

# Emitted files combine: one translation unit includes every file emitted above (one per
# kernel name: two files that define the same kernel are the user's own clash), two more
# emitted with other options (CUDA sm_75, HIP gfx1100's 32-lane waves; math=approx, whose helper
# softmax_approx's file defines too, under its own guard), and one whose
# prelude is of another ABI (its names and guard say tl_p<ABI+1>_ / TL_P<ABI+1>_, as
# another tilec version's would), and compiles it with the same flags: no name is defined twice.
# extern_names FILE: the extern "C" names an emitted file defines, one a line
extern_names() {
    sed -n 's/^extern "C" __[a-z]*__ void \(__launch_bounds__([0-9, ]*) \)\{0,1\}\([A-Za-z_0-9]*\)(.*/\2/p' "$1"
}
cat >"$tmp/other_options.tile" <<'EOF'
kernel other_options(A: f16[64, 1000] global, B: f32[64] global) threads=128 math=approx {
  grid.max(B, A, axes=(1), nan=ignore)
}
EOF
cat >"$tmp/other_abi.tile" <<'EOF'
kernel other_abi(A: bf16[8, 256] global, B: bf16[8] global) threads=64 {
  grid.sum(B, A, axes=(1))
}
EOF
for target in "${targets[@]}"; do
    if [ "$target" = cuda ]; then ext=cu; other=(--arch sm_75); else ext=hip; other=(--arch gfx1100); fi
    tu=$tmp/all_in_one.$ext
    : >"$tu"
    : >"$tmp/names"
    for src in "$tmp"/*."$ext"; do
        case $src in */probe."$ext" | "$tu") continue ;; esac
        if extern_names "$src" | grep -qxFf "$tmp/names"; then continue; fi
        extern_names "$src" >>"$tmp/names"
        echo "#include \"$src\"" >>"$tu"
    done
    if ! "$tilec" emit "$tmp/other_options.tile" --target "$target" "${other[@]}" -o "$tmp/options.$ext.inc" 2>"$tmp/emit.log" ||
        ! "$tilec" emit "$tmp/other_abi.tile" --target "$target" -o "$tmp/abi.$ext.inc" 2>>"$tmp/emit.log"; then
        echo "FAIL one translation unit ($target): tilec emit failed:"
        cat "$tmp/emit.log"
        failed=1
        continue
    fi
    # the ABI the file's guard names (TL_P<ABI>_PRELUDE); the other file says ABI + 1
    abi=$(sed -n 's/^#ifndef TL_P\([0-9][0-9]*\)_PRELUDE.*/\1/p' "$tmp/abi.$ext.inc" | head -n 1)
    if [ -z "$abi" ]; then
        echo "FAIL one translation unit ($target): the emitted prelude has no #ifndef TL_P<ABI>_PRELUDE guard"
        failed=1
    else
        sed -i "s/tl_p${abi}_/tl_p$((abi + 1))_/g; s/TL_P${abi}_/TL_P$((abi + 1))_/g" "$tmp/abi.$ext.inc"
    fi
    printf '#include "%s"\n' "$tmp/options.$ext.inc" "$tmp/abi.$ext.inc" >>"$tu"
    if [ "$target" = cuda ]; then cmd=("$nvcc" "${nvcc_flags[@]}" "$tu"); else cmd=("$hipcc" "${hipcc_flags[@]}" "$tu"); fi
    "${cmd[@]}" -o "$tmp/all_in_one.$target.o" >"$tmp/cc.log" 2>&1
    rc=$?
    compiled=$((compiled + 1))
    if [ $rc -ne 0 ] || grep -qi 'warning' "$tmp/cc.log"; then
        echo "FAIL one translation unit of $(grep -c include "$tu") emitted files ($target, exit $rc): ${cmd[*]}"
        sed 's/^/  /' "$tmp/cc.log" | head -40
        failed=1
    else
        echo "ok   one translation unit of $(grep -c include "$tu") emitted files ($target)"
    fi
done
echo "codegen warnings: $compiled compiles (${targets[*]}), $([ $failed = 0 ] && echo 'no warning' || echo 'some FAILED')"
exit $failed
