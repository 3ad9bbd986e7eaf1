#!/usr/bin/env bash
# cli_test.sh TILEC SOURCE_ROOT — the `tilec` command line as a user runs it: outputs,
# exit codes (0 ok, 1 bad input, 2 bad usage) and messages. Prints one line per check and
# "N passed, M failed" at the end.
set -u
tilec=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# expect NAME WANT_RC CMD... : runs CMD, keeps stdout/stderr in $tmp/out, $tmp/err
expect() {
    local name=$1 want=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq "$want" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $name: exit $rc, wanted $want"
        sed 's/^/  stderr: /' "$tmp/err" | head -20
    fi
}
# has NAME FILE TEXT : FILE contains TEXT literally
has() {
    if grep -qF -- "$3" "$2"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: '$3' not in $2:"; sed 's/^/  | /' "$2" | head -20; fi
}
# same NAME A B : the files are byte for byte the same
same() {
    if cmp -s "$2" "$3"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: $2 and $3 differ"; od -An -tx1 "$2" | head -3; od -An -tx1 "$3" | head -3; fi
}
# compiles_on_both WHAT FILE OUT: FILE compiles with NVRTC for sm_90 (OUT.cubin) and with
# hiprtc for gfx90a (OUT.co), each where it is installed, else a skip line that says so
compiles_on_both() {
    if ldconfig -p | grep -q libnvrtc; then
        expect "compile $1 for sm_90 (NVRTC)" 0 "$tilec" compile "$2" --target cuda --arch sm_90 -o "$3.cubin"
    else
        echo "skipped: NVRTC is not installed here, so $1 is not compiled for sm_90"
    fi
    if ldconfig -p | grep -q libamdhip64; then
        expect "compile $1 for gfx90a (hiprtc)" 0 "$tilec" compile "$2" --target hip --arch gfx90a -o "$3.co"
    else
        echo "skipped: hiprtc is not installed here, so $1 is not compiled for gfx90a"
    fi
}
empty() {
    if [ ! -s "$2" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: $2 is not empty:"; sed 's/^/  | /' "$2" | head -20; fi
}

expect "--version" 0 "$tilec" --version
has "--version prints the version" "$tmp/out" "tilec 0."
expect "--help" 0 "$tilec" --help
has "--help lists check" "$tmp/out" "check"
has "--help lists fmt" "$tmp/out" "fmt"
expect "no arguments" 2 "$tilec"
has "no arguments shows usage" "$tmp/err" "Usage: tilec COMMAND [OPTIONS] [FILE...]"
expect "unknown command" 2 "$tilec" frobnicate
has "unknown command is named" "$tmp/err" "unknown command 'frobnicate'"
for cmd in check fmt explain run emit compile reduce; do
    expect "$cmd --help" 0 "$tilec" "$cmd" --help
    has "$cmd --help shows usage" "$tmp/out" "Usage: tilec $cmd "
    has "$cmd --help lists its options (help2man reads the list)" "$tmp/out" "Options:"
    has "$cmd --help says how values are given" "$tmp/out" "--opt=VALUE or --opt VALUE"
    [ "$cmd" = reduce ] || expect "$cmd without FILE" 2 "$tilec" "$cmd"
    expect "$cmd with unknown option" 2 "$tilec" "$cmd" --bogus x.tile
done
help_lists() { # CMD OPTION... : each OPTION is at the start of an option line of CMD --help
    local cmd=$1 o
    shift
    "$tilec" "$cmd" --help >"$tmp/help"
    for o; do
        if grep -qE -- "^  (-., )?$o([= ]|$)" "$tmp/help"; then pass=$((pass + 1)); else
            fail=$((fail + 1)); echo "FAIL: tilec $cmd --help does not list $o"; fi
    done
}
help_lists check --warp-size --target --arch
help_lists fmt -o --in-place --check
help_lists explain --target --arch --warp-size --dump --verbose
help_lists run --backend --arch --warp-size --kernel --in --out --seed --check --specials --sim-budget
help_lists emit --target --arch --warp-size -o
help_lists compile --target --arch --warp-size -o
help_lists reduce --op --dtype --shape --axes --strides --out-dtype --nan --in --out --out2 --index-dtype --correction --offsets \
    --accumulate --out-init --backend --check --specials --repeat --seed --explain --sim-budget
expect "check --warp-size 48" 2 "$tilec" check --warp-size 48 "$root/examples/row_sum.tile"

for f in "$root"/examples/*.tile; do
    n=$(basename "$f")
    expect "check $n" 0 "$tilec" check "$f"
    empty "check $n is silent" "$tmp/out"
    empty "check $n is silent on stderr" "$tmp/err"
    expect "check --warp-size 64 $n" 0 "$tilec" check --warp-size 64 "$f"
    expect "fmt $n" 0 "$tilec" fmt "$f"
    cp "$tmp/out" "$tmp/once.tile"
    expect "fmt fmt $n" 0 "$tilec" fmt "$tmp/once.tile"
    if cmp -s "$tmp/out" "$tmp/once.tile"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: fmt is not idempotent on $n"; diff "$tmp/once.tile" "$tmp/out"; fi
    expect "fmt --check on canonical $n" 0 "$tilec" fmt --check "$tmp/once.tile"
    expect "check of formatted $n" 0 "$tilec" check "$tmp/once.tile"
done

# bad input: exit 1, FILE:LINE:COL, the source line and a caret
printf 'kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n  shared As: f32[4, 8]\n  cta.copy(As, A)\n  cta.sum(B, As)\n}\n' >"$tmp/race.tile"
expect "check finds a missing sync" 1 "$tilec" check "$tmp/race.tile"
has "error names file, line and column" "$tmp/err" "$tmp/race.tile:4:14: error: missing barrier: 'As' is read here"
has "error shows the source line" "$tmp/err" "    4 |   cta.sum(B, As)"
has "error shows a caret" "$tmp/err" "      |              ^"
has "note names the other line" "$tmp/err" "$tmp/race.tile:3:12: note: the earlier write of 'As' (cta.copy)"
empty "nothing on stdout for a bad file" "$tmp/out"
expect "fmt does not verify" 0 "$tilec" fmt "$tmp/race.tile"
printf 'kernel k(A: f31[4] global) threads=32 {}\n' >"$tmp/syntax.tile"
expect "fmt rejects a syntax error" 1 "$tilec" fmt "$tmp/syntax.tile"
has "fmt error is positioned" "$tmp/err" "syntax.tile:1:13: error: unknown dtype 'f31'; did you mean 'f32'?"
empty "fmt writes nothing on error" "$tmp/out"
expect "missing file" 1 "$tilec" check "$tmp/nope.tile"
has "missing file is explained" "$tmp/err" "tilec: cannot read '$tmp/nope.tile': No such file or directory"
expect "check reads standard input" 1 "$tilec" check - <"$tmp/syntax.tile"
has "standard input is named" "$tmp/err" "<stdin>:1:13: error:"

# check gives the verdict emit gives: a program no target can lower is not valid, with the
# dispatcher's FILE:LINE:COL and reasons; --target (and --arch, --warp-size) check one
# target as `emit --target` would
# check_fails NAME WANT_TEXT [CHECK OPTIONS...] < program : check exits 1 and says WANT_TEXT
check_fails() {
    local name=$1 want=$2
    shift 2
    cat >"$tmp/lower.tile"
    expect "check: $name" 1 "$tilec" check "$@" "$tmp/lower.tile"
    has "check: $name says why" "$tmp/err" "$want"
}
check_fails "a fragment destination of the wrong layout" "lower.tile:5:8: error: no variant can lower this max on cuda sm_90" <<'EOF'
kernel k(A: f32[16, 64] global, M: f32[16, 1] global) threads=32 {
  local S: f32[16, 64] layout=mma_m16n8k16_c
  local m: f32[16, 1] layout=linear(reg=((1, 0)), lane=((0, 0), (0, 0), (2, 0), (4, 0), (8, 0)))
  warp.copy(S, A)
  warp.max(m, S, axes=(1))
  warp.copy(M, m)
}
EOF
check_fails "a plain local destination of a fragment reduction" "lower.tile:5:8: error: no variant can lower this max on cuda sm_90" <<'EOF'
kernel k(A: f32[16, 64] global) threads=32 {
  local S: f32[16, 64] layout=mma_m16n8k16_c
  local m: f32[16]
  warp.copy(S, A)
  warp.max(m, S, axes=(1))
}
EOF
check_fails "a fragment in a partial warp" "threads=48 leaves a warp of 16 threads: a fragment needs whole warps" <<'EOF'
kernel k(A: f32[16, 64] global, M: f32[2, 16] global) threads=48 {
  local S: f32[16, 64] layout=mma_m16n8k16_c
  warp.copy(S, A)
  warp.max(M[warp_id], S, axes=(1))
}
EOF
check_fails "a copy between fragments of different layouts" "lower.tile:5:8: error: no variant can lower this copy on cuda sm_90" <<'EOF'
kernel k(A: f16[16, 16] global, B: f16[16, 16] global) threads=32 {
  local X: f16[16, 16] layout=mma_m16n8k16_a
  local Y: f16[16, 16] layout=mma_m16n8k16_b
  warp.copy(X, A)
  warp.copy(Y, X)
  warp.copy(B, Y)
}
EOF
check_fails "a layout bit along a reduced and a kept dimension" "lower.tile:4:8: error: no variant can lower this sum on cuda sm_90" <<'EOF'
kernel k(A: f32[4, 8] global, M: f32[4] global) threads=32 {
  local S: f32[4, 8] layout=linear(reg=(), lane=((1, 1), (2, 0), (0, 1), (0, 2), (0, 4)))
  warp.copy(S, A)
  warp.sum(M, S, axes=(1))
}
EOF
cat >"$tmp/warp64.tile" <<'EOF'
kernel k(A: f32[16, 64] global, M: f32[16] global) threads=64 {
  local S: f32[16, 64] layout=mma_m16n8k16_c
  warp.copy(S, A)
  warp.max(M, S, axes=(1))
}
EOF
check_fails "fragments at warp size 64" "fragment layouts are of warps of 32 lanes" --warp-size 64 <"$tmp/warp64.tile"
has "check: fragments at warp size 64 name the hip target" "$tmp/err" "lower.tile:3:8: error: no variant can lower this copy on hip gfx90a, warp size 64"
check_fails "fragments on hip" "lower.tile:3:8: error: no variant can lower this copy on hip gfx90a, warp size 64" --target hip <"$tmp/warp64.tile"
check_fails "a misspelt variant" "registered: local, local_smem, cols, rows, cta_tree, shared, sequential, smem_tree; did you mean 'rows'?" <<'EOF'
kernel k(A: f32[32, 64] global, B: f32[32] global) threads=32 {
  shared As: f32[32, 64]
  shared Bs: f32[32]
  cta.copy(As, A)
  cta.sync()
  cta.sum(Bs, As, axes=(1), variant=rowz)
  cta.sync()
  cta.copy(B, Bs)
}
EOF
has "check: a misspelt variant is marked at its value" "$tmp/err" "lower.tile:6:37: error: no variant named 'rowz' is registered for sum on cuda"
has "check: a misspelt variant's caret is under it" "$tmp/err" "      |                                     ^"
check_fails "a misspelt op" "lower.tile:2:7: error: unknown operation 'smu'; did you mean 'sum'?" <<'EOF'
kernel k(A: f32[32] global, B: f32[1] global) threads=32 {
  cta.smu(B, A, axes=(0))
}
EOF
check_fails "a misspelt dtype" "lower.tile:1:13: error: unknown dtype 'f23'; did you mean 'f32'?" <<'EOF'
kernel k(A: f23[32] global, B: f32[1] global) threads=32 {
  cta.sum(B, A, axes=(0))
}
EOF
# a program one target lowers is valid (fragments: CUDA only); --target asks for one
expect "check: fragments are valid (cuda lowers them)" 0 "$tilec" check "$root/tests/fragments/layouts.tile"
empty "check: valid fragments are silent" "$tmp/err"
expect "check --target cuda: fragments" 0 "$tilec" check --target cuda "$root/tests/fragments/layouts.tile"
expect "check --target hip: fragments" 1 "$tilec" check --target hip "$root/tests/fragments/layouts.tile"
has "check --target hip: fragments say why" "$tmp/err" "fragment layouts are of warps of 32 lanes (NVIDIA's MMA layouts); this target runs 64"
# a warpgroup's barrier: the CTA's own (barrier 0) where the CTA is one warpgroup, so ptxas
# reserves no named barriers that would cap the CTAs a multiprocessor holds; a named one
# (1 + its warpgroup) where the CTA has two
expect "emit: fragments of a warpgroup of a 128-thread CTA" 0 "$tilec" emit --target cuda "$root/tests/fragments/layouts.tile" -o "$tmp/wg1.cu"
if grep -q 'bar.sync [0-9]' "$tmp/wg1.cu"; then fail=$((fail + 1)); echo "FAIL: a 128-thread CTA's warpgroup barrier is a named one"; else pass=$((pass + 1)); fi
has "and syncs the CTA" "$tmp/wg1.cu" "__syncthreads();"
cat >"$tmp/wg2.tile" <<'EOF'
kernel wg2(A: f32[2, 64, 128] global, C: f32[2, 128] global) threads=256 {
  local S: f32[64, 128] layout=wgmma_m64nNk16_d
  warpgroup.copy(S, A[warpgroup_id])
  warpgroup.max(C[warpgroup_id], S, axes=(0))
}
EOF
expect "emit: two warpgroups" 0 "$tilec" emit --target cuda "$tmp/wg2.tile" -o "$tmp/wg2.cu"
has "each its named barrier, its id a constant" "$tmp/wg2.cu" 'switch (tl_tid / 128) { case 0: asm volatile("bar.sync 1, 128;" ::: "memory"); break; case 1: asm volatile("bar.sync 2, 128;" ::: "memory"); break; }'
expect "run: two warpgroups on the simulator" 0 "$tilec" run "$tmp/wg2.tile" --backend sim --check --specials
if ldconfig -p | grep -q libnvrtc; then
    expect "compile the two warpgroups' switch of barriers for sm_90 (NVRTC)" 0 "$tilec" compile "$tmp/wg2.tile" --target cuda --arch sm_90 -o "$tmp/wg2.cubin"
else
    echo "skipped: NVRTC is not installed here, so the two warpgroups' barriers are not compiled"
fi
expect "check --target hip --arch gfx1100: fragments of warps" 0 "$tilec" check --target hip --arch gfx1100 "$root/tests/fragments/mma_rows_cols.tile"
expect "check --arch without --target" 2 "$tilec" check --arch sm_90 "$root/examples/row_sum.tile"
expect "check --target sim" 2 "$tilec" check --target sim "$root/examples/row_sum.tile"
expect "check --target cuda --warp-size 64, as emit" 2 "$tilec" check --target cuda --warp-size 64 "$root/examples/row_sum.tile"
has "check --target cuda --warp-size 64 says why" "$tmp/err" "CUDA runs warps of 32 threads, not 64"
# without --target each target checks the rules at its own warp size, as emit does: every
# warp indexes its own slice, so 256 threads fit 4 slices only in HIP gfx90a's warps of 64
sed 's/threads=128/threads=256/' "$root/examples/warp_rows.tile" >"$tmp/wave64.tile"
expect "check: warp_id within bounds at HIP's warp size" 0 "$tilec" check "$tmp/wave64.tile"
empty "check: valid at HIP's warp size is silent" "$tmp/err"
expect "check --target hip: the same verdict" 0 "$tilec" check --target hip "$tmp/wave64.tile"
expect "emit --target hip: the same verdict" 0 "$tilec" emit --target hip "$tmp/wave64.tile" -o "$tmp/wave64.hip"
expect "check --target cuda: warp_id out of bounds at 32" 1 "$tilec" check --target cuda "$tmp/wave64.tile"
expect "check --warp-size 32: that warp size for every target" 1 "$tilec" check --warp-size 32 "$tmp/wave64.tile"
has "check --warp-size 32 says why" "$tmp/err" "warp_id reaches 7 but dimension 0 of 'Bs' has extent 4"
# no target lowers it: each target's reasons, under the --target that gives them
sed 's/threads=128/threads=512/' "$root/examples/warp_rows.tile" >"$tmp/wave64.tile"
expect "check: warp_id out of bounds at every warp size" 1 "$tilec" check "$tmp/wave64.tile"
has "check: cuda's reasons are named" "$tmp/err" "wave64.tile: not lowered for --target=cuda:"
has "check: hip's reasons are named" "$tmp/err" "wave64.tile: not lowered for --target=hip:"
has "check: cuda's reason, at warps of 32" "$tmp/err" "warp_id reaches 15 but dimension 0 of 'Bs' has extent 4"
has "check: hip's reason, at warps of 64" "$tmp/err" "warp_id reaches 7 but dimension 0 of 'Bs' has extent 4"
# a reason no target changes is said once, with no target named
expect "check: a missing barrier" 1 "$tilec" check "$tmp/race.tile"
if [ "$(grep -c "error: missing barrier" "$tmp/err")" = 1 ] && ! grep -q "not lowered for" "$tmp/err"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: a missing barrier is said once:"; sed 's/^/  | /' "$tmp/err"; fi

# fmt's modes
printf 'kernel k(A:f32[4] global) threads=32 {\n cta.fill(A,1.50)  # one and a half\n}\n' >"$tmp/loose.tile"
cp "$tmp/loose.tile" "$tmp/loose.orig"
expect "fmt --check on loose text" 1 "$tilec" fmt --check "$tmp/loose.tile"
has "fmt --check says why" "$tmp/err" "not in canonical form"
expect "fmt -o" 0 "$tilec" fmt "$tmp/loose.tile" -o "$tmp/written.tile"
has "fmt -o writes canonical text" "$tmp/written.tile" "  cta.fill(A, 1.5)  # one and a half"
if cmp -s "$tmp/loose.tile" "$tmp/loose.orig"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: fmt -o changed its input"; fi
expect "fmt -i" 0 "$tilec" fmt -i "$tmp/loose.tile"
if cmp -s "$tmp/loose.tile" "$tmp/written.tile"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: fmt -i differs from fmt -o"; fi
expect "fmt -i and -o together" 2 "$tilec" fmt -i -o x "$tmp/loose.tile"
expect "fmt -i on stdin" 2 "$tilec" fmt -i -

# explain: the table for every example, a forced impossible variant shows why
for f in "$root"/examples/*.tile; do
    n=$(basename "$f")
    expect "explain $n" 0 "$tilec" explain "$f"
    has "explain $n names each statement's variant" "$tmp/out" ") -> "
    if grep -q "priority.*rejected\|target_scope" "$tmp/out"; then fail=$((fail + 1)); echo "FAIL: explain $n (short) prints the table"; else pass=$((pass + 1)); fi
    expect "explain --verbose $n" 0 "$tilec" explain "$f" --verbose
    has "explain --verbose $n marks a winner" "$tmp/out" "    * "
    has "explain --verbose $n shows every check" "$tmp/out" "target_scope     ok"
    expect "explain --target hip $n" 0 "$tilec" explain "$f" --target hip --arch gfx1100
    expect "explain --dump=loop $n" 0 "$tilec" explain "$f" --dump=loop --target sim --warp-size 64
    has "explain --dump=loop $n prints loop IR" "$tmp/out" "warp_size=64"
    for ws in 32 64; do
        expect "run --check $n at warp size $ws" 0 "$tilec" run "$f" --backend sim --warp-size "$ws" --check
        has "run --check $n reports ok" "$tmp/out" ": ok"
    done
done
# fragments (tests/fragments): checked against the reference on the simulator at warp size
# 32 (with special values too), and refused at warp size 64 with the reason
for f in "$root"/tests/fragments/*.tile; do
    n=$(basename "$f")
    expect "explain $n" 0 "$tilec" explain "$f"
    has "explain $n names the fragment variants" "$tmp/out" "-> fragment"
    expect "run --check $n" 0 "$tilec" run "$f" --backend sim --check
    expect "run --check --specials $n" 0 "$tilec" run "$f" --backend sim --check --specials --seed 5
    expect "run $n at warp size 64" 1 "$tilec" run "$f" --backend sim --warp-size 64
    has "run $n at warp size 64 says why" "$tmp/err" "fragment layouts are of warps of 32 lanes"
done
# thread-block clusters (tests/clusters): checked against the reference on the simulator at
# warp size 32 (with special values too), fmt keeps them, CUDA sm_90 emits them; refused at
# warp size 64 and on HIP, with the reason
for f in "$root"/tests/clusters/*.tile; do
    n=$(basename "$f")
    expect "fmt --check $n" 0 "$tilec" fmt --check "$f"
    expect "explain $n" 0 "$tilec" explain --target cuda "$f"
    has "explain $n names the cluster variant" "$tmp/out" "-> cluster"
    has "explain $n says how the states meet" "$tmp/out" "through distributed shared memory, in rank order"
    expect "run --check $n" 0 "$tilec" run "$f" --backend sim --check
    has "run $n names the clusters" "$tmp/out" "threads (clusters of "
    expect "run --check --specials $n" 0 "$tilec" run "$f" --backend sim --check --specials --seed 5
    expect "run $n at warp size 64" 1 "$tilec" run "$f" --backend sim --warp-size 64
    has "run $n at warp size 64 says why" "$tmp/err" "the simulator at warp size 64 has no thread-block clusters (they are CUDA's, sm_90 and later, at warp size 32); run it at warp size 32"
    expect "emit $n for CUDA" 0 "$tilec" emit "$f" --target cuda -o "$tmp/cl.cu"
    has "emit $n declares the cluster" "$tmp/cl.cu" "__cluster_dims__("
    expect "emit $n for HIP" 1 "$tilec" emit "$f" --target hip -o "$tmp/cl.hip"
    has "emit $n for HIP says why" "$tmp/err" "HIP gfx90a has no thread-block clusters"
    if [ ! -e "$tmp/cl.hip" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: emit $n for HIP wrote $tmp/cl.hip"; fi
done
# swizzled shared tiles (tests/swizzle): checked against the reference on the simulator at
# warp sizes 32 and 64 (with special values too), fmt keeps them, and NVRTC / hiprtc compile
# them where installed (the emitted XOR and the tile's alignment)
for f in "$root"/tests/swizzle/*.tile; do
    n=$(basename "$f")
    expect "fmt --check $n" 0 "$tilec" fmt --check "$f"
    for ws in 32 64; do
        expect "run --check $n at warp size $ws" 0 "$tilec" run "$f" --backend sim --warp-size "$ws" --check
        expect "run --check --specials $n at warp size $ws" 0 "$tilec" run "$f" --backend sim --warp-size "$ws" --check --specials --seed 3
    done
    expect "emit $n for CUDA" 0 "$tilec" emit "$f" --target cuda -o "$tmp/swz.cu"
    has "emit $n aligns the tile to the swizzle's 1024 bytes" "$tmp/swz.cu" "__shared__ __attribute__((aligned(1024))) float S[8192];"
    compiles_on_both "$n" "$f" "$tmp/swz"
done
printf 'kernel k(A: f32[2, 64] global, B: f32[2] global) threads=80 {\n  cta.sum(B, A, variant=cta_tree)\n}\n' >"$tmp/forced.tile"
expect "explain with an impossible forced variant" 1 "$tilec" explain "$tmp/forced.tile"
has "the table says why" "$tmp/err" "several_warps    no: threads=80 is not a multiple of the warp size (32)"
has "the short form names the statement" "$tmp/out" "cta.sum(B, A, axes=(-1), variant=cta_tree) -> no variant (the error says why)"
expect "explain --verbose with an impossible forced variant" 1 "$tilec" explain "$tmp/forced.tile" --verbose
has "explain --verbose still prints the table on stdout" "$tmp/out" "cta_tree    priority 20  rejected"
# the short form: the variant, the one reason it won, what it does; the table with --verbose
expect "explain row_sum" 0 "$tilec" explain "$root/examples/row_sum.tile"
has "names the variant" "$tmp/out" "  line 10: cta.sum(Bs, As, axes=(-1)) -> rows"
has "and why it won: cols applies, but costs more (the totals, then their parts)" "$tmp/out" "    why: cols (tried first at the same priority 24) costs more: 104 vs 86 cycles; the cost model puts rows first: rows about 43 + 43 = 86 cycles (alone, and four to a multiprocessor), cols 52 + 52 = 104"
has "and what it does" "$tmp/out" "    how: 4 outputs of 8 elements; 1 lane an output (16-byte loads, "
has "with the model's estimate" "$tmp/out" "; the cost model's estimate: "
has "a copy is one line" "$tmp/out" "  line 8: cta.copy(As, A) -> copy"
has "and which constants priced the plans" "$tmp/out" "cost model: the default constants (an H200's; \`tilec calibrate\` measures this GPU's)"
if [ "$(wc -l <"$tmp/out")" -eq 10 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: explain row_sum is not 10 lines:"; cat "$tmp/out"; fi

# the cost model's constants: a file as `tilec calibrate` writes it (its checksum made here
# with sha256sum, as docs/dispatch.md describes the format), used by explain and emit
costs_file() { # ARCH BARRIER > FILE
    printf '# a test\nformat tilec-costs 1\ndevice Test GPU\narch %s\nwarp-size 32\nsms 132\ntilec test\n' "$1" >"$tmp/costs.body"
    printf 'lds_latency 23\nshfl_latency 24\nadd_latency 4.5\nbarrier %s\nwavefront 0.87\nrequest 1.4\nshuffle 0.8\ninstruction 0.25\n' "$2" >>"$tmp/costs.body"
    cat "$tmp/costs.body"
    printf 'sha256 %s\n' "$(sha256sum <"$tmp/costs.body" | cut -d' ' -f1)"
}
costs_file sm_90 25 >"$tmp/costs-default.txt"
costs_file sm_90 5000 >"$tmp/costs-dear.txt"
expect "explain --costs with the default values" 0 "$tilec" explain --costs "$tmp/costs-default.txt" "$root/examples/col_sum.tile"
has "says which constants" "$tmp/out" "cost model: the constants of $tmp/costs-default.txt (measured on Test GPU, sm_90, 132 multiprocessors)"
has "and plans as the defaults do" "$tmp/out" "4 slices of the reduced elements"
expect "explain --costs with dear barriers" 0 "$tilec" explain --costs "$tmp/costs-dear.txt" "$root/examples/col_sum.tile"
has "plans without a barrier" "$tmp/out" "  line 8: cta.sum(Bs, As, axes=(0)) -> rows"
expect "emit --costs" 0 "$tilec" emit --target cuda --costs "$tmp/costs-dear.txt" -o "$tmp/dear.cu" "$root/examples/col_sum.tile"
expect "emit" 0 "$tilec" emit --target cuda -o "$tmp/default.cu" "$root/examples/col_sum.tile"
if cmp -s "$tmp/dear.cu" "$tmp/default.cu"; then fail=$((fail + 1)); echo "FAIL: emit --costs changed nothing"; else pass=$((pass + 1)); fi
expect "compile --costs of another arch" 2 "$tilec" compile --target cuda --arch sm_80 --costs "$tmp/costs-dear.txt" -o "$tmp/x.cubin" "$root/examples/col_sum.tile"
has "is refused with what to do" "$tmp/err" "are for sm_90 at warp size 32, not this target's sm_80 at warp size 32: measure this target's with \`tilec calibrate\`"
sed 's/^barrier 5000$/barrier 50/' "$tmp/costs-dear.txt" >"$tmp/costs-edited.txt"
expect "explain --costs of an edited file" 1 "$tilec" explain --costs "$tmp/costs-edited.txt" "$root/examples/col_sum.tile"
has "is refused at its checksum" "$tmp/err" "costs-edited.txt:16:8: error: the checksum does not match the lines above it"
empty "and explains nothing" "$tmp/out"
head -c 200 "$tmp/costs-dear.txt" >"$tmp/costs-cut.txt"
expect "explain --costs of a truncated file" 1 "$tilec" explain --costs "$tmp/costs-cut.txt" "$root/examples/col_sum.tile"
has "is refused as cut short" "$tmp/err" "truncated"
head -c 5000 /dev/zero >"$tmp/costs-big.txt"
expect "explain --costs of a big file" 1 "$tilec" explain --costs "$tmp/costs-big.txt" "$root/examples/col_sum.tile"
has "is refused by its size" "$tmp/err" "is longer than one (4096 bytes at most)"
expect "explain --costs of no file" 1 "$tilec" explain --costs "$tmp/none.txt" "$root/examples/col_sum.tile"
expect "explain --costs -" 2 "$tilec" explain --costs - "$root/examples/col_sum.tile"
has "is refused: a file, not standard input" "$tmp/err" "--costs takes a file"
cp "$tmp/costs-dear.txt" "$tmp/keep.txt"
expect "emit -o over the --costs file" 2 "$tilec" emit --target cuda --costs "$tmp/keep.txt" -o "$tmp/keep.txt" "$root/examples/col_sum.tile"
if cmp -s "$tmp/keep.txt" "$tmp/costs-dear.txt"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: emit overwrote the --costs file"; fi
expect "explain --target sim --costs of an sm_90 file" 0 "$tilec" explain --target sim --costs "$tmp/costs-dear.txt" "$root/examples/col_sum.tile"
has "the simulator plans with it" "$tmp/out" "  line 8: cta.sum(Bs, As, axes=(0)) -> rows"
expect "calibrate the simulator" 2 "$tilec" calibrate --backend sim
has "says there is nothing to measure" "$tmp/err" "--backend sim has nothing to measure"
expect "calibrate a negative device" 2 "$tilec" calibrate --device -1
expect "calibrate a FILE" 2 "$tilec" calibrate x.txt
expect "calibrate -o the same file twice" 2 "$tilec" calibrate -o "$tmp/a" -o "$tmp/b"
expect "explain -v row_sum" 0 "$tilec" explain "$root/examples/row_sum.tile" -v
has "lists local_smem too" "$tmp/out" "      local_smem  priority 25  rejected"
has "and every check" "$tmp/out" "        several_warps    no: an instance has 32 threads, fewer than two warps of 32"
has "and the cost model's plans" "$tmp/out" "    cost model (cycles alone / four to a multiprocessor; counts for one instance):"
printf 'kernel total(A: f32[100000] global, B: f32[1] global) threads=256 {\n  grid.sum(B, A, axes=(0))\n}\n' >"$tmp/gridsum.tile"
expect "explain a grid statement" 0 "$tilec" explain "$tmp/gridsum.tile"
has "says the launch in plain words" "$tmp/out" "    how: 1 output of 100000 elements; a grid of 13 CTAs of 256 threads; an output's elements are spread over several CTAs, whose partial results are then folded, always in the same order, so every run gives the same bits"
has "and why rows" "$tmp/out" "    why: grid_cols (tried first at the same priority 20) does not apply: the innermost dim in memory is reduced (a row layout)"
# the mirror case: the rival of the same priority comes after the winner, and is said to
printf 'kernel t(A: f32[1000, 64] global, B: f32[64] global) threads=256 {\n  grid.sum(B, A, axes=(0))\n}\n' >"$tmp/gridcols.tile"
expect "explain a column grid statement" 0 "$tilec" explain "$tmp/gridcols.tile"
has "and why columns, saying the priority the same way" "$tmp/out" "    why: grid_rows (tried after it at the same priority 20) does not apply: the innermost dim in memory is kept (a column layout)"
expect "reduce --explain of an argmax" 0 "$tilec" reduce --op argmax --dtype f32 --shape 8x1000 --backend sim --explain
if grep -q "groups of 32 lanes" "$tmp/out"; then fail=$((fail + 1)); echo "FAIL: a grid argmax's table names CTA lane groups:"; grep lanes "$tmp/out"; else pass=$((pass + 1)); fi
has "its plan says the lanes" "$tmp/out" "plan: "
expect "explain with a bad arch" 2 "$tilec" explain "$tmp/forced.tile" --target cuda --arch gfx90a
expect "explain warpgroup on hip" 1 "$tilec" explain /dev/stdin --target hip <<'TILE'
kernel k(A: f32[2, 4, 64] global, B: f32[2, 4] global) threads=256 {
  warpgroup.max(B[warpgroup_id], A[warpgroup_id])
}
TILE
has "hip has no warpgroup" "$tmp/err" "warpgroup scope needs a barrier of 128 threads, which HIP does not have"

# run: --in / --out round trip, sizes, names, backends
rs="$root/examples/row_sum.tile"
expect "run --out" 0 "$tilec" run "$rs" --seed 5 --out A="$tmp/a.bin" --out B="$tmp/b.bin"
if [ "$(stat -c %s "$tmp/a.bin")" = 128 ] && [ "$(stat -c %s "$tmp/b.bin")" = 16 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: --out wrote files of the wrong size"; fi
expect "run --in gives the same result" 0 "$tilec" run "$rs" --in A="$tmp/a.bin" --out B="$tmp/b2.bin" --check
if cmp -s "$tmp/b.bin" "$tmp/b2.bin"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --in did not reproduce --out"; fi
expect "run is deterministic for a seed" 0 "$tilec" run "$rs" --seed 5 --out B="$tmp/b3.bin"
if cmp -s "$tmp/b.bin" "$tmp/b3.bin"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: the same seed gave other bits"; fi
head -c 100 "$tmp/a.bin" >"$tmp/short.bin"
expect "run --in of the wrong size" 1 "$tilec" run "$rs" --in A="$tmp/short.bin"
has "the size is explained" "$tmp/err" "'$tmp/short.bin' has 100 bytes, but A is f32[4, 8]: 128 bytes"
expect "run --in of an unknown parameter" 1 "$tilec" run "$rs" --in Z="$tmp/a.bin" --out B="$tmp/ran.bin"
has "the name is explained, with the names there are" "$tmp/err" "tilec run: --in names 'Z', which is no parameter of what runs (A, B); nothing was run: give one of those names"
empty "checked before the run: no report" "$tmp/out"
if [ ! -e "$tmp/ran.bin" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --out was written though --in named no parameter"; fi
expect "run --out of an unknown parameter" 1 "$tilec" run "$rs" --out Z="$tmp/ran.bin"
has "is told before the run too" "$tmp/err" "tilec run: --out names 'Z', which is no parameter of what runs (A, B); nothing was run"
empty "no report" "$tmp/out"
expect "run --in without =" 2 "$tilec" run "$rs" --in A
# no GPU here (as for reduce --backend cuda below): an explicit GPU backend exits 3 with
# the runtime's reason, and auto runs on the simulator behind the runtime (tilec_run_kernel)
expect "run --backend cuda" 3 "$tilec" run "$rs" --backend cuda --check
has "cuda is unavailable, and says why" "$tmp/err" "tilec: error: "
has "the reason is the runtime's" "$tmp/err" "CUDA"
empty "nothing ran on cuda" "$tmp/out"
if grep -qF "simulator only" "$tmp/err"; then fail=$((fail + 1)); echo "FAIL: run --backend cuda still says 'simulator only'"; else pass=$((pass + 1)); fi
expect "run --backend hip" 3 "$tilec" run "$rs" --backend hip
has "hip is unavailable, and says why" "$tmp/err" "tilec: error: "
expect "run --backend auto" 0 "$tilec" run "$rs" --backend auto --check
has "auto runs on the simulator" "$tmp/out" "kernel row_sum on sim (warp size 32): grid 1 x 32 threads"
has "and checks it" "$tmp/out" "check B: largest error"
expect "run --backend auto --out" 0 "$tilec" run "$rs" --backend auto --in A="$tmp/a.bin" --out B="$tmp/b_auto.bin"
expect "run --backend sim --out" 0 "$tilec" run "$rs" --backend sim --in A="$tmp/a.bin" --out B="$tmp/b_sim.bin"
if cmp -s "$tmp/b_auto.bin" "$tmp/b_sim.bin"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: auto (the runtime) and sim (tilec_simulate) give different bits"; fi
expect "run --backend auto --warp-size 64" 0 "$tilec" run "$rs" --backend auto --warp-size 64 --check
has "the simulator takes the warp size" "$tmp/out" "kernel row_sum on sim (warp size 64)"
expect "run --backend auto of a func" 0 "$tilec" run "$root/examples/tile_row_max.tile" --check
has "a func runs on the simulator" "$tmp/out" "func tile_row_max on sim (warp size 32)"
printf 'kernel k(A: i32[3, 1001] global, B: i32[3] global) threads=256 {\n  grid.max(B, A, axes=(1))\n}\n' >"$tmp/gridmax.tile"
expect "run --backend auto of a grid statement" 0 "$tilec" run "$tmp/gridmax.tile" --check
has "is checked exactly" "$tmp/out" "check B: exact, largest error 0: ok"
expect "run --backend bogus" 2 "$tilec" run "$rs" --backend bogus
expect "run --kernel unknown" 1 "$tilec" run "$rs" --kernel nope
printf 'kernel k(A: f32[2, 8] global, B: f32[2] global) threads=32 {\n  shared S: f32[2, 8]\n  cta.copy(S, A)\n  cta.sync()\n  cta.copy(B, S[0:2, 0])\n}\n' >"$tmp/copy.tile"
expect "run --check of a copy" 0 "$tilec" run "$tmp/copy.tile" --check
has "a copy is compared exactly" "$tmp/out" "check B: exact, largest error 0: ok"
expect "run of a missing file" 1 "$tilec" run "$tmp/nonexistent.tile"
printf 'kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As[0:2], A[0:2])\n  cta.sync()\n  cta.sum(Bs, As)\n  cta.copy(B, Bs)\n}\n' >"$tmp/uninit.tile"
expect "run reports an uninitialised read" 1 "$tilec" run "$tmp/uninit.tile"
has "the simulator names the line" "$tmp/err" "uninit.tile:6:7: error: simulator (warp size 32): CTA 0, thread 2 (warp 0, lane 2): reads As[16] before anything wrote it"

# emit and compile
cp "$root/examples/row_sum.tile" "$tmp/rs.tile"
rs_src="$root/examples/row_sum.tile"
expect "emit --target cuda" 0 "$tilec" emit "$tmp/rs.tile" --target cuda
has "emit writes FILE.cu" "$tmp/rs.cu" "extern \"C\" __global__ void __launch_bounds__(32) row_sum("
expect "emit --target hip" 0 "$tilec" emit "$tmp/rs.tile" --target hip --arch gfx1030
has "emit writes FILE.hip for wave32" "$tmp/rs.hip" "tl_p3_f32x4 tl_v = *(const tl_p3_f32x4 *)&As["
expect "emit -o -" 0 "$tilec" emit "$tmp/rs.tile" --target cuda -o -
has "emit to standard output" "$tmp/out" "// line 10: cta.sum(Bs, As, axes=(-1))  [rows]"
expect "emit without --target" 2 "$tilec" emit "$tmp/rs.tile"
expect "emit --target sim" 2 "$tilec" emit "$tmp/rs.tile" --target sim
expect "compile without --arch" 2 "$tilec" compile "$tmp/rs.tile" --target cuda
expect "emit of a bad program" 1 "$tilec" emit "$tmp/race.tile" --target cuda
has "emit verifies first" "$tmp/err" "missing barrier"
# the default output is FILE with .cu, .hip, .cubin or .co in place of its extension: when
# that is the input itself (by name, or the same file through a symlink or a hard link),
# nothing is written and the user is told to give -o
cp "$rs_src" "$tmp/prog.cu"
cp "$tmp/prog.cu" "$tmp/prog.cu.orig"
expect "emit prog.cu --target cuda" 2 "$tilec" emit "$tmp/prog.cu" --target cuda
has "says the output would be the input" "$tmp/err" "tilec emit: the output would be '$tmp/prog.cu', the input itself; give -o OUT to write the source elsewhere"
same "and leaves the input as it was" "$tmp/prog.cu" "$tmp/prog.cu.orig"
cp "$rs_src" "$tmp/prog.hip"
expect "emit prog.hip --target hip" 2 "$tilec" emit "$tmp/prog.hip" --target hip
same "leaves prog.hip as it was" "$tmp/prog.hip" "$tmp/prog.cu.orig"
cp "$rs_src" "$tmp/k.cubin"
expect "compile k.cubin" 2 "$tilec" compile "$tmp/k.cubin" --target cuda --arch sm_90
has "says so for compile" "$tmp/err" "tilec compile: the output would be '$tmp/k.cubin', the input itself; give -o OUT"
same "leaves k.cubin as it was" "$tmp/k.cubin" "$tmp/prog.cu.orig"
cp "$rs_src" "$tmp/k.co"
expect "compile k.co" 2 "$tilec" compile "$tmp/k.co" --target hip --arch gfx90a
same "leaves k.co as it was" "$tmp/k.co" "$tmp/prog.cu.orig"
cp "$rs_src" "$tmp/real2.tile"
cp "$rs_src" "$tmp/via2.tile"
ln -s via2.tile "$tmp/via2.cu"
expect "emit FILE whose FILE.cu is a symlink to FILE" 2 "$tilec" emit "$tmp/via2.tile" --target cuda
has "is the same file" "$tmp/err" "the input itself"
same "and FILE is untouched" "$tmp/via2.tile" "$tmp/prog.cu.orig"
ln "$tmp/real2.tile" "$tmp/real2.cu"
expect "emit FILE whose FILE.cu is a hard link to it" 2 "$tilec" emit "$tmp/real2.tile" --target cuda
expect "emit -o naming the input" 2 "$tilec" emit "$tmp/real2.tile" --target cuda -o "$tmp/real2.tile"
has "is refused too" "$tmp/err" "tilec emit: -o '$tmp/real2.tile' would overwrite the input FILE '$tmp/real2.tile' (the same file), which is read first; write the output elsewhere"
same "which is untouched" "$tmp/real2.tile" "$tmp/prog.cu.orig"
expect "emit prog.cu -o another file" 0 "$tilec" emit "$tmp/prog.cu" --target cuda -o "$tmp/prog-out.cu"
has "writes it" "$tmp/prog-out.cu" "Generated by tilec"
if ldconfig -p | grep -q libnvrtc; then
    expect "compile --target cuda" 0 "$tilec" compile "$tmp/rs.tile" --target cuda --arch sm_80
    if [ "$(head -c 4 "$tmp/rs.cubin" | od -An -c | tr -d ' ')" = '177ELF' ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: rs.cubin is not an ELF file"; fi
    expect "compile for an arch NVRTC does not know" 3 "$tilec" compile "$tmp/rs.tile" --target cuda --arch sm_10
    has "it says what NVRTC knows" "$tmp/err" "does not compile for sm_10; it knows:"
    expect "compile with NVRTC missing" 3 env TILEC_NVRTC_PATH=/nonexistent/libnvrtc.so LD_LIBRARY_PATH=/nonexistent "$tilec" compile "$tmp/rs.tile" --target cuda --arch sm_90 -o "$tmp/x.cubin"
    has "it says what it tried" "$tmp/err" "NVRTC is not available: tried /nonexistent/libnvrtc.so. Install the CUDA toolkit, or set TILEC_NVRTC_PATH"
else
    echo "skipped: NVRTC is not installed here, so 'tilec compile --target cuda' is not run"
fi
# names that C++, CUDA, HIP, their libraries or the prelude already define (tests/names):
# valid, renamed tl_u_<name> in the emitted source, which NVRTC compiles, and each kernel
# still runs by the name it has in the program (tests/codegen_warnings.sh builds them with nvcc)
clash=$root/tests/names/clashing.tile
expect "check: clashing names are valid" 0 "$tilec" check "$clash"
expect "emit: clashing names" 0 "$tilec" emit "$clash" --target cuda -o "$tmp/clash.cu"
for n in TL_P1_PRELUDE expf size_t float3 INT_MAX linux lgammaf_r dim3 cudaMalloc strlen main; do
    has "emit: kernel $n is renamed" "$tmp/clash.cu" "tl_u_$n(const float *__restrict__"
    expect "run --kernel $n by its own name" 0 "$tilec" run "$clash" --kernel "$n" --backend sim --check
done
for n in tl_p1_u16 min threadIdx int8_t make_float4 EOF errno fopen64 atomicAdd nv_bfloat16 a__b M_PIf expm1f fabsf; do
    has "emit: $n is renamed" "$tmp/clash.cu" "tl_u_$n"
done
compiles_on_both "clashing names" "$clash" "$tmp/clash"
# map statements of every operator and cast (tests/maps): the simulator against the reference,
# and NVRTC and hiprtc compile what the lowering writes (a fragment's map: NVRTC, warps of 32)
maps=$root/tests/maps/elementwise.tile
expect "run --check: map statements on the simulator" 0 "$tilec" run "$maps" --backend sim --check --specials
compiles_on_both "map statements" "$maps" "$tmp/maps"
expect "explain map statements" 0 "$tilec" explain "$maps"
has "explain names a map's variant" "$tmp/out" "  line 7: cta.map(Y, bf16(f32(X) * r) * w) -> map"
has "and says its vectors and how each operand is read" "$tmp/out" "    how: 16384 elements; 16-byte vectors of 8, each inside a row, spread over the threads (four in flight where each thread has four); 'X' in vector loads; 'r' once a vector (broadcast along the row); 'w' in vector loads"
has "and a local destination's" "$tmp/out" "    how: 5 elements; each thread computes all of its own 'L'"
has "and a gather's, in vectors beside the other operands" "$tmp/out" "    how: 512 elements; 16-byte vectors of 4, each inside a row, spread over the threads (four in flight where each thread has four); 'Xs' in vector loads; 'T' once a vector (broadcast along the row); a gather's elements read one by one (once a vector where one along the row)"
# the fused RMSNorm scale's loop: every vector (four a turn, then one a turn) loads X and w
# in 16 bytes, r once, stores Y in 16 bytes, and divides its index by the row only twice
# (the row and the column: no index arithmetic an element)
expect "dump the maps' loops" 0 "$tilec" explain --dump=loop "$maps"
sed -n '/^loop kernel rmsnorm/,/^loop kernel softmax/p' "$tmp/out" >"$tmp/rms.loop"
counts="$(grep -c ') = X\[e[0-9_]* \.\. +8\]$' "$tmp/rms.loop") $(grep -c ') = w\[c[0-9]* \.\. +8\]$' "$tmp/rms.loop")"
counts="$counts $(grep -c '= r\[c[0-9]*\]$' "$tmp/rms.loop") $(grep -c '^ *Y\[e[0-9_]* \.\. +8\] = (' "$tmp/rms.loop")"
counts="$counts $(grep -c ' [/%] ' "$tmp/rms.loop")"
if [ "$counts" = "5 5 5 5 10" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: the bf16 map's loop: X, w, r loads, Y stores and divisions are $counts, not 5 5 5 5 10:"
    sed 's/^/  | /' "$tmp/rms.loop" | head -60; fi
if ldconfig -p | grep -q libnvrtc; then
    expect "compile a fragment's map for sm_90 (NVRTC)" 0 "$tilec" compile "$root/tests/fragments/map_softmax.tile" --target cuda --arch sm_90 -o "$tmp/map_softmax.cubin"
fi
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    expect "emit a func for your own kernel" 0 "$tilec" emit "$root/examples/tile_row_max.tile" --target cuda -o "$tmp/tile_row_max.cuh"
    expect "nvcc compiles a kernel that calls the func (docs/codegen.md)" 0 "$nvcc" -arch=sm_90 -c "$root/examples/call_func.cu" -I "$tmp" -o "$tmp/call_func.o"
    # an mma.sync kernel that passes its accumulator fragments to a func (scripts/gpu-check
    # runs it on a GPU): compiled and linked, so the func's signature and the host code build
    expect "emit the func of examples/attention" 0 "$tilec" emit "$root/examples/attention/attention_stats.tile" --target cuda -o "$tmp/attention_stats.cuh"
    expect "nvcc builds examples/attention/attention_stats.cu" 0 "$nvcc" -arch=sm_90 "$root/examples/attention/attention_stats.cu" -I "$tmp" -o "$tmp/attention_stats"
else
    echo "skipped: no nvcc here, so examples/call_func.cu and examples/attention/attention_stats.cu are not compiled"
fi
# examples/attention's func (fragments: warps of 32, so not among examples/*.tile, which run
# at warp size 64 too): canonical, and right on the simulator against the reference
expect "fmt --check examples/attention/attention_stats.tile" 0 "$tilec" fmt --check "$root/examples/attention/attention_stats.tile"
expect "run --check examples/attention/attention_stats.tile" 0 "$tilec" run --backend sim --check "$root/examples/attention/attention_stats.tile"
has "it checks the running logsumexp" "$tmp/out" "check l:"
if ldconfig -p | grep -q libamdhip64; then
    expect "compile --target hip" 0 "$tilec" compile "$tmp/rs.tile" --target hip --arch gfx90a
    if [ -s "$tmp/rs.co" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: no rs.co"; fi
    expect "compile for an arch ROCm does not know" 3 "$tilec" compile "$tmp/rs.tile" --target hip --arch gfx9999
    has "it lists the archs it knows" "$tmp/err" "does not know gfx9999; it compiles for:"
    expect "compile with hiprtc missing" 3 env TILEC_HIPRTC_PATH=/nonexistent/libhiprtc.so "$tilec" compile "$tmp/rs.tile" --target hip --arch gfx90a -o "$tmp/x.co"
    has "it says what it tried" "$tmp/err" "hiprtc is not available: tried /nonexistent/libhiprtc.so. Install ROCm (hiprtc), or set TILEC_HIPRTC_PATH"
else
    echo "skipped: hiprtc is not installed here, so 'tilec compile --target hip' is not run"
fi

# reduce: the JIT through the public API, on the simulator
expect "reduce rows" 0 "$tilec" reduce --op sum --dtype f32 --shape 300x37 --backend sim --check --repeat 2
has "reduce shows the variant" "$tmp/out" "variant grid_rows"
has "reduce checks" "$tmp/out" "): ok"
expect "reduce a column set around a kept axis" 0 "$tilec" reduce --op max --dtype bf16 --shape 6x5x40 --axes 0,2 --nan ignore --check --repeat 1
has "reduce merges the view" "$tmp/out" "view: 6 (reduced) 5 40 (reduced)"
expect "reduce a long row" 0 "$tilec" reduce --op min --dtype i64 --shape 70001 --axes 0 --check --repeat 1 --accumulate
has "a long row is split over CTAs" "$tmp/out" "2 scratch buffers"
expect "reduce a norm of columns" 0 "$tilec" reduce --op norm2 --dtype bf16 --shape 3000x7 --axes 0 --backend sim --check --repeat 0
has "the norm checks" "$tmp/out" "): ok"
expect "a mean of integers" 1 "$tilec" reduce --op mean --dtype i32 --shape 30x10 --backend sim
has "it says mean is for floats" "$tmp/err" "mean is defined for float dtypes, not i32: convert the input to f32 or f64 first"
expect "a norm accumulated" 1 "$tilec" reduce --op norm2 --dtype f32 --shape 30x10 --backend sim --accumulate
has "it says accumulate does not apply" "$tmp/err" "accumulate does not apply to norm2"
expect "an unknown op" 2 "$tilec" reduce --op avg --dtype f32 --shape 30x10 --backend sim
has "it lists the ops" "$tmp/err" "--op must be sum, max, min, prod, sumsq, norm2, mean, argmax, argmin, aminmax, logsumexp, var or std, not 'avg'"
expect "reduce a transposed view" 0 "$tilec" reduce --op sum --dtype f32 --shape 300x200 --strides 1,300 --axes 0 --backend sim --check --repeat 1
has "the view shows its strides" "$tmp/out" "view: 300 (reduced) 200; strides 1, 300"
has "a transposed view is checked" "$tmp/out" "): ok"
expect "reduce a reversed, broadcast view" 0 "$tilec" reduce --op max --dtype bf16 --shape 4x25x14 --strides 0,-14,1 --axes 0,2 --backend sim --check --repeat 1
# reduce --offsets: segments of the last axis (tilec_reduce_segmented)
printf '0 3,3\n10\n' >"$tmp/off.txt"
expect "reduce segments from a text file" 0 "$tilec" reduce --op sum --dtype f32 --shape 2x10 --offsets "$tmp/off.txt" --backend sim --check --out "$tmp/seg.bin"
has "it says what it reduces" "$tmp/out" "segments: 3 of axis -1 (int64 offsets from"
has "each segment checked" "$tmp/out" "check: 6 segments, each against the reference of its row"
[ "$(wc -c <"$tmp/seg.bin")" -eq 24 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: --out of segments holds 2 x 3 f32"; }
{ printf '\223NUMPY\001\000\166\000'; printf "%-117s\n" "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }"
  printf '\000\000\000\000\004\000\000\000\005\000\000\000\011\000\000\000'; } >"$tmp/off.npy" # int32 0 4 5 9
expect "reduce segments of an argmax, i32 offsets from a .npy" 0 "$tilec" reduce --op argmax --dtype f32 --shape 3x9 --offsets "$tmp/off.npy" --backend sim --check --specials
has "they are int32" "$tmp/out" "segments: 3 of axis -1 (int32 offsets from"
expect "an empty segment of max" 1 "$tilec" reduce --op max --dtype f32 --shape 10 --offsets "$tmp/off.txt" --backend sim
has "it says which" "$tmp/err" "a segmented max had 1 output of an empty segment (a segment of a row each; the first counted: segment 1)"
printf '0 5 3 10' >"$tmp/bad.txt"
expect "offsets that fall" 1 "$tilec" reduce --op sum --dtype f32 --shape 10 --offsets "$tmp/bad.txt" --backend sim
has "they are reported" "$tmp/err" "segment 1 runs from 5 to 3, which falls"
# the verdict does not depend on the rows: bad offsets are refused with none as with one,
# and no segments of max over an empty axis are no outputs, nothing to refuse
expect "offsets that fall, no rows" 1 "$tilec" reduce --op sum --dtype f32 --shape 0x10 --offsets "$tmp/bad.txt" --backend sim
has "they are reported" "$tmp/err" "segment 1 runs from 5 to 3, which falls"
expect "offsets that fall, one row" 1 "$tilec" reduce --op sum --dtype f32 --shape 1x10 --offsets "$tmp/bad.txt" --backend sim
printf '0\n' >"$tmp/none.txt"
expect "no segments of max over an empty axis" 0 "$tilec" reduce --op max --dtype f32 --shape 3x0 --offsets "$tmp/none.txt" --backend sim
printf '0 0\n' >"$tmp/one.txt"
expect "one (empty) segment of max over an empty axis" 1 "$tilec" reduce --op max --dtype f32 --shape 3x0 --offsets "$tmp/one.txt" --backend sim
has "it counts its outputs" "$tmp/err" "a segmented max had 3 outputs of an empty segment (a segment of a row each; the first counted: segment 0)"
printf '0 5 x' >"$tmp/bad.txt"
expect "an offset that is no number" 1 "$tilec" reduce --op sum --dtype f32 --shape 10 --offsets "$tmp/bad.txt" --backend sim
has "the strict parser says so" "$tmp/err" "--offsets takes an integer from"
expect "offsets with two axes" 2 "$tilec" reduce --op sum --dtype f32 --shape 4x10 --axes 0,1 --offsets "$tmp/off.txt" --backend sim
expect "offsets of an inner axis" 1 "$tilec" reduce --op sum --dtype f32 --shape 10x4 --axes 0 --offsets "$tmp/off.txt" --backend sim
has "the library says move it last" "$tmp/err" "is not the innermost"
expect "strides, one too few" 2 "$tilec" reduce --op sum --dtype f32 --shape 3x4 --strides 1 --backend sim
has "it says how many" "$tmp/err" "--strides 1 gives 1 strides for the 2 dims of --shape 3x4: give one per dim"
expect "strides that reach too far" 2 "$tilec" reduce --op sum --dtype f32 --shape 3x4 --strides 1,281474976710656 --backend sim
has "it says the bound" "$tmp/err" "reach more than 2^48 elements"
expect "a bad axis of a huge view, before any allocation" 1 "$tilec" reduce --op sum --dtype f32 --shape 281474976710656 --strides 0 --axes 1 --backend sim --repeat 0
has "it names the axis" "$tmp/err" "axis 1 is out of range for rank 1 (axes -1 to 0)"
head -c 16 /dev/zero >"$tmp/z16"
expect "a strided --in of the wrong size" 1 "$tilec" reduce --op sum --dtype f32 --shape 4x5 --strides 10,1 --in "$tmp/z16" --backend sim --repeat 0
has "it gives the memory the view reaches" "$tmp/err" "the input f32[4, 5] with --strides 10,1 (35 elements of memory) is 140 bytes"
expect "a stride that is no number" 2 "$tilec" reduce --op sum --dtype f32 --shape 3x4 --strides 1,x --backend sim
expect "reduce --explain" 0 "$tilec" reduce --op sum --dtype f16 --shape 4x1x8 --axes 2 --explain --repeat 1
has "explain shows the tile program" "$tmp/out" "grid.sum(B, A, axes=(1))"
expect "reduce --explain of columns" 0 "$tilec" reduce --op sum --dtype f32 --shape 4096x1024 --axes 0 --explain --repeat 0 --backend sim
has "explain shows the executor's plan" "$tmp/out" "plan: 32 blocks of 128 rows a column (the fold order); 32 column lanes x 8 row lanes, 16-byte loads, 8 in flight; 32 blocks a CTA, 1 CTA a column block"
expect "TILEC_JIT_LOG on a miss" 0 env TILEC_JIT_LOG=1 TILEC_CACHE_DIR="$tmp/jitlog-cache" "$tilec" reduce --op sum --dtype f32 --shape 1000x37 --repeat 0 --backend sim
has "the log says the plan" "$tmp/err" "variant grid_rows, grid 8 x 256, lowered in"
has "and the executor's layout" "$tmp/err" "; plan: 1 piece of up to 37 elements an output, one block (the fold order); a group of 16 lanes an output, 8 outputs in flight, element loads"
expect "reduce over an empty axis" 0 "$tilec" reduce --op sum --dtype f32 --shape 4x0 --check --repeat 1
has "an empty sum is 0" "$tmp/out" "a reduced extent is 0: the output is set to 0"
expect "logsumexp over an empty axis" 0 "$tilec" reduce --op logsumexp --dtype f64 --shape 3x0 --backend sim --check --repeat 1
has "says -inf, what it writes" "$tmp/out" "a reduced extent is 0: the output is set to -inf"
expect "max over an empty axis" 1 "$tilec" reduce --op max --dtype f32 --shape 4x0 --repeat 1
has "is an error" "$tmp/err" "max over an empty axis has no value"
expect "reduce without --shape" 2 "$tilec" reduce --op sum --dtype f32
has "names the missing option" "$tmp/err" "tilec reduce: --shape is required"
expect "reduce with --op only" 2 "$tilec" reduce --op sum
has "names both missing options" "$tmp/err" "tilec reduce: --dtype and --shape are required"
expect "reduce --dtype float32 (numpy's name)" 0 "$tilec" reduce --op sum --dtype float32 --shape 4x8 --backend sim --check
has "is f32" "$tmp/out" "check: largest error"
expect "reduce --dtype bfloat16 --out-dtype float32" 0 "$tilec" reduce --op max --dtype bfloat16 --out-dtype float32 --shape 4x8 --backend sim --check --out "$tmp/bf.bin"
has "widens to f32: 4 floats" <(stat -c %s "$tmp/bf.bin") "16"
expect "reduce --index-dtype int32" 0 "$tilec" reduce --op argmax --dtype int32 --shape 4x8 --backend sim --index-dtype int32 --check --out2 "$tmp/idx.bin"
has "writes 4 int32 indices" <(stat -c %s "$tmp/idx.bin") "16"
for dt in float16 float64 uint32 int64; do
    expect "reduce --dtype $dt" 0 "$tilec" reduce --op min --dtype "$dt" --shape 3x5 --backend sim --check
done
expect "reduce --dtype float8" 2 "$tilec" reduce --op sum --dtype float8 --shape 4
has "lists both spellings" "$tmp/err" "--dtype must be f16 (float16), bf16 (bfloat16), f32 (float32), f64 (float64), i32 (int32), u32 (uint32) or i64 (int64), not 'float8'"
expect "reduce with a bad axis" 1 "$tilec" reduce --op sum --dtype f32 --shape 4x4 --axes 5
has "the axis is explained" "$tmp/err" "axis 5 is out of range for rank 2"
if ! ldconfig -p | grep -q 'libcuda.so.1 '; then
    expect "reduce --backend cuda without a GPU" 3 "$tilec" reduce --op sum --dtype f32 --shape 8 --backend cuda
    has "says what is missing" "$tmp/err" "no CUDA driver"
fi
printf 'kernel total(A: f32[100000] global, B: f32[1] global) threads=256 {\n  grid.sum(B, A, axes=(0))\n}\n' >"$tmp/grid.tile"
expect "run a grid statement" 0 "$tilec" run "$tmp/grid.tile" --check
has "the grid is chosen by tilec" "$tmp/out" "kernel total on sim (warp size 32): grid 13 x 256 threads"
printf 'kernel total(A: f32[10] global, B: f32[1] global) threads=32 grid=4 {\n  grid.sum(B, A, axes=(0))\n}\n' >"$tmp/grid2.tile"
expect "a grid statement with grid=" 1 "$tilec" check "$tmp/grid2.tile"
has "is refused with a reason" "$tmp/err" "a grid statement must be the only statement of a kernel without grid="

# --specials: the random data gets NaN, infinities, signed zeros, subnormals (integer
# extremes for integers), and --check must still hold on it; numpy is the oracle
py=/usr/bin/python3
if $py -c 'import numpy' 2>/dev/null; then
    expect "run --specials a nan=ignore func" 0 "$tilec" run "$root/examples/tile_row_max.tile" --backend sim --specials --check \
        --out src="$tmp/sp_src.bin" --out dst="$tmp/sp_dst.bin"
    has "and checks it" "$tmp/out" "check dst: exact, largest error 0: ok"
    expect "numpy: the data has NaN, inf and -0, and dst is its nanmax" 0 $py - "$tmp/sp_src.bin" "$tmp/sp_dst.bin" <<'PY'
import sys, warnings, numpy as np
x = np.fromfile(sys.argv[1], "<f4").reshape(64, 128)
y = np.fromfile(sys.argv[2], "<f4")
assert np.isnan(x).sum() > 8 and np.isposinf(x).any() and np.isneginf(x).any(), "no specials"
assert (np.signbit(x) & (x == 0)).any() and ((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)).any()
assert np.isnan(x).any(axis=1).sum() > 8, "few rows with a NaN"
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    want = np.nanmax(x, axis=1)
assert np.array_equal(y, want, equal_nan=True), (y, want)
PY
    for ignore in propagate ignore; do
        expect "reduce max --nan $ignore --specials" 0 "$tilec" reduce --op max --dtype f32 --shape 64x100 --nan $ignore --specials --backend sim --check --out "$tmp/sp_$ignore.bin"
        has "checks" "$tmp/out" "check: exact, largest error 0: ok"
    done
    expect "numpy: the data had NaN (propagate's rows), ignore skipped them" 0 $py - "$tmp/sp_propagate.bin" "$tmp/sp_ignore.bin" <<'PY'
import sys, numpy as np
p, i = (np.fromfile(f, "<f4") for f in sys.argv[1:])
assert np.isnan(p).sum() > 16 and not np.isnan(i).any(), (p, i)
keep = ~np.isnan(p)
assert np.array_equal(p[keep], i[keep])
assert np.isposinf(i).any()
PY
    expect "reduce sum i32 --specials (integer extremes wrap)" 0 "$tilec" reduce --op sum --dtype i32 --shape 16x64 --specials --backend sim --check
    has "checks exactly" "$tmp/out" "check: exact, largest error 0: ok"

    # .npy files for --in and --out, against numpy: written by np.save, read by np.load
    $py - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
x = rng.standard_normal((6, 50)).astype(np.float32)
x[1, 3] = np.nan; x[2, :] = np.nan; x[4, 7] = -np.inf
np.save(d + "/x.npy", x)
np.save(d + "/x64.npy", x.astype(np.float64))
np.lib.format.write_array(open(d + "/x_v2.npy", "wb"), x, version=(2, 0))
np.save(d + "/xF.npy", np.asfortranarray(x))
np.save(d + "/xBE.npy", x.astype(">f4"))
np.save(d + "/off0.npy", np.zeros(0, np.int64))
np.save(d + "/offBE.npy", np.array([0, 20, 50], dtype=">i8"))
np.save(d + "/offF.npy", np.array([0, 20, 50], dtype=np.float64))
np.save(d + "/xflat.npy", x.ravel())
np.save(d + "/i.npy", rng.integers(-1000, 1000, (7, 9), dtype=np.int32))
np.save(d + "/u16.npy", (x.view(np.uint32) >> 16).astype(np.uint16))  # bf16 patterns
np.save(d + "/A.npy", rng.standard_normal((4, 8)).astype(np.float32))
raw = open(d + "/x.npy", "rb").read()
open(d + "/short.npy", "wb").write(raw[:-4])
open(d + "/long.npy", "wb").write(raw + b"\0\0\0\0")
open(d + "/magic.npy", "wb").write(b"\x93NUMPX" + raw[6:])
h = raw[10:raw.index(b"\n") + 1]
bad = b"{'descr': '<f4', 'fortran_order': False, 'shape': (6, 50), 'x': 1}"
bad = bad + b" " * (len(h) - len(bad) - 1) + b"\n"
open(d + "/key.npy", "wb").write(raw[:10] + bad + raw[10 + len(h):])
PY
    oracle() { # NAME PYTHON : the python code, with d (the temporary directory) and np, asserts
        expect "$1" 0 $py -c "import sys, warnings, numpy as np; warnings.simplefilter('ignore'); d = sys.argv[1]; $2" "$tmp"
    }
    expect "reduce --in x.npy (dtype and shape from the file) --out y.npy" 0 "$tilec" reduce --op sum --in "$tmp/x.npy" --backend sim --check --out "$tmp/y.npy"
    has "takes f32[6, 50] from the file" "$tmp/out" "view: 6 50 (reduced)"
    oracle "y.npy is numpy's sum, float32 of shape (6,)" "x = np.load(d + '/x.npy'); y = np.load(d + '/y.npy'); assert y.dtype == np.float32 and y.shape == (6,); assert np.allclose(y, x.sum(axis=1), rtol=1e-5, atol=1e-5, equal_nan=True), (y, x.sum(axis=1))"
    expect "reduce --in x.npy with --dtype float32 --shape 6x50" 0 "$tilec" reduce --op max --dtype float32 --shape 6x50 --nan ignore --in "$tmp/x.npy" --backend sim --check --out "$tmp/m.npy"
    oracle "max nan=ignore is numpy's nanmax" "x = np.load(d + '/x.npy'); y = np.load(d + '/m.npy'); assert np.array_equal(y, np.nanmax(x, axis=1), equal_nan=True), y"
    expect "reduce a .npy of version 2.0 over axis 0" 0 "$tilec" reduce --op min --in "$tmp/x_v2.npy" --axes 0 --backend sim --check --out "$tmp/c.npy"
    oracle "min over axis 0 is numpy's" "x = np.load(d + '/x.npy'); y = np.load(d + '/c.npy'); assert y.shape == (50,) and np.array_equal(y, x.min(axis=0), equal_nan=True)"
    expect "reduce every axis to a 0-d .npy" 0 "$tilec" reduce --op sum --in "$tmp/i.npy" --axes 0,1 --backend sim --check --out "$tmp/s.npy"
    oracle "a 0-d int32 array, numpy's sum" "x = np.load(d + '/i.npy'); y = np.load(d + '/s.npy'); assert y.shape == () and y.dtype == np.int32 and y == x.sum(dtype=np.int32)"
    expect "reduce argmax --out2 idx.npy" 0 "$tilec" reduce --op argmax --in "$tmp/i.npy" --backend sim --check --out "$tmp/v.npy" --out2 "$tmp/idx.npy"
    oracle "values and int64 indices are numpy's" "x = np.load(d + '/i.npy'); v = np.load(d + '/v.npy'); i = np.load(d + '/idx.npy'); assert i.dtype == np.int64 and (i == x.argmax(axis=1)).all() and (v == x.max(axis=1)).all()"
    expect "reduce --out-dtype float64 to .npy" 0 "$tilec" reduce --op sum --in "$tmp/i.npy" --out-dtype int64 --backend sim --out "$tmp/w.npy"
    oracle "is an int64 array" "y = np.load(d + '/w.npy'); assert y.dtype == np.int64 and y.shape == (7,)"
    expect "reduce bf16 from uint16 patterns" 0 "$tilec" reduce --op max --dtype bf16 --in "$tmp/u16.npy" --backend sim --check --out "$tmp/b.npy"
    oracle "bf16 is written as uint16 patterns" "x = np.load(d + '/x.npy'); b = np.load(d + '/b.npy'); assert b.dtype == np.uint16 and b.shape == (6,); f = (b.astype(np.uint32) << 16).view(np.float32); u = (np.load(d + '/u16.npy').astype(np.uint32) << 16).view(np.float32); assert np.array_equal(f, u.max(axis=1), equal_nan=True)"
    expect "reduce a strided view of a 1-d .npy (its memory)" 0 "$tilec" reduce --op max --dtype f32 --shape 50x6 --strides 1,50 --in "$tmp/xflat.npy" --backend sim --check --out "$tmp/t.npy"
    oracle "the view is x.T" "x = np.load(d + '/x.npy'); y = np.load(d + '/t.npy'); assert y.shape == (50,) and np.array_equal(y, x.T.max(axis=1), equal_nan=True)"
    expect "run --in A=A.npy --out B=B.npy" 0 "$tilec" run "$rs" --backend sim --in A="$tmp/A.npy" --out B="$tmp/B.npy" --check
    oracle "B is numpy's row sums" "a = np.load(d + '/A.npy'); b = np.load(d + '/B.npy'); assert b.shape == (4,) and np.allclose(b, a.sum(axis=1), rtol=1e-6, atol=1e-6)"
    # strict: what tilec does not read is refused, saying why
    expect "a Fortran-order .npy" 1 "$tilec" reduce --op sum --in "$tmp/xF.npy" --backend sim
    has "is refused, saying how (the dtype is the file's)" "$tmp/err" "is in Fortran (column-major) order; tilec reads row-major: save np.ascontiguousarray(x) instead"
    expect "a big-endian .npy, its dtype from the file" 1 "$tilec" reduce --op sum --in "$tmp/xBE.npy" --backend sim
    has "is refused, saying how" "$tmp/err" "holds big-endian elements ('>f4'); tilec reads little-endian: save x.astype('<f4') instead"
    expect "an --offsets .npy of no offsets" 1 "$tilec" reduce --op sum --in "$tmp/x.npy" --offsets "$tmp/off0.npy" --backend sim
    has "says what is wrong" "$tmp/err" "holds no offsets (shape (0,)); give nsegs + 1 of them, at least one (np.array([0]): no segments)"
    expect "a big-endian --offsets .npy" 1 "$tilec" reduce --op sum --in "$tmp/x.npy" --offsets "$tmp/offBE.npy" --backend sim
    has "says how to save it" "$tmp/err" "--offsets '$tmp/offBE.npy' holds big-endian elements ('>i8'); tilec reads little-endian: save x.astype('<i8') instead"
    expect "a float64 --offsets .npy" 1 "$tilec" reduce --op sum --in "$tmp/x.npy" --offsets "$tmp/offF.npy" --backend sim
    has "says what it holds and how to save it" "$tmp/err" "holds '<f8' of 1 dims; give a 1-D int64 or int32 array of nsegs + 1 offsets (save np.asarray(x, dtype=np.int64).ravel())"
    expect "a Fortran-order .npy with --dtype" 1 "$tilec" reduce --op sum --dtype f32 --shape 6x50 --in "$tmp/xF.npy" --backend sim
    has "is refused, saying how" "$tmp/err" "is in Fortran (column-major) order; tilec reads row-major: save np.ascontiguousarray(x) instead"
    expect "a big-endian .npy" 1 "$tilec" reduce --op sum --dtype f32 --shape 6x50 --in "$tmp/xBE.npy" --backend sim
    has "is refused" "$tmp/err" "holds big-endian elements ('>f4'); tilec reads little-endian: save x.astype('<f4') instead"
    expect "a .npy of another dtype" 1 "$tilec" reduce --op sum --dtype f32 --shape 6x50 --in "$tmp/x64.npy" --backend sim
    has "names both" "$tmp/err" "--in '$tmp/x64.npy' holds float64[6, 50], but the input is float32[6, 50]: save x.astype('float32')"
    expect "a .npy of another shape" 1 "$tilec" reduce --op sum --dtype f32 --shape 50x6 --in "$tmp/x.npy" --backend sim
    has "names both" "$tmp/err" "holds float32[6, 50], but the input is float32[50, 6]: give an array of that shape"
    expect "run --in of another shape" 1 "$tilec" run "$rs" --backend sim --in A="$tmp/x.npy"
    has "names the parameter" "$tmp/err" "holds float32[6, 50], but parameter A is float32[4, 8]"
    expect "a truncated .npy" 1 "$tilec" reduce --op sum --in "$tmp/short.npy" --backend sim
    has "is refused" "$tmp/err" "has 1196 bytes of data after its header, but f32[6, 50] is 1200 bytes"
    expect "a .npy with bytes after its data" 1 "$tilec" reduce --op sum --in "$tmp/long.npy" --backend sim
    has "is refused" "$tmp/err" "has more than 1200 bytes of data after its header"
    expect "a .npy without the magic" 1 "$tilec" reduce --op sum --in "$tmp/magic.npy" --backend sim
    has "is refused" "$tmp/err" "is not a .npy file tilec reads: it does not start with numpy's magic"
    expect "a .npy header with another key" 1 "$tilec" reduce --op sum --in "$tmp/key.npy" --backend sim
    has "is refused" "$tmp/err" "its header has the key 'x'"
    expect "a uint16 .npy without --dtype bf16" 1 "$tilec" reduce --op max --in "$tmp/u16.npy" --backend sim
    has "says how to read it" "$tmp/err" "give --dtype bf16 to read its 16-bit patterns as bf16"
    $py - "$tmp" <<'PY'
import sys, struct
d = sys.argv[1]
def npy(name, header, data=b"\0" * 24, version=1, hlen=None):
    h = header.encode() + b"\n"
    n = len(h) if hlen is None else hlen
    pre = b"\x93NUMPY" + bytes([version, 0]) + (struct.pack("<H", n) if version == 1 else struct.pack("<I", n))
    open("%s/%s.npy" % (d, name), "wb").write(pre + h + data)
npy("h_int", "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }")
npy("h_rank9", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 6), }")
npy("h_huge", "{'descr': '<f4', 'fortran_order': False, 'shape': (281474976710657,), }")
npy("h_nokey", "{'descr': '<f4', 'shape': (6,), }")
npy("h_twice", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,), }")
npy("h_struct", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }")
npy("h_long", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", version=2, hlen=100000)
npy("h_v9", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", version=9)
npy("h_ok", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }")
PY
    for c in "h_int:'shape' is not a tuple of integers" "h_rank9:'shape' has more than 8 extents" \
             "h_huge:extents from 0 to 2^48" "h_nokey:its header lacks 'fortran_order'" "h_twice:its header gives 'descr' twice" \
             "h_struct:'descr' is not a simple dtype string" "h_long:a header of 100000 bytes; tilec reads headers of at most 65536" \
             "h_v9:format version 9.0"; do
        expect "a .npy header: ${c%%:*}" 1 "$tilec" reduce --op sum --in "$tmp/${c%%:*}.npy" --backend sim
        has "says why" "$tmp/err" "${c#*:}"
    done
    expect "a hand-written .npy header" 0 "$tilec" reduce --op sum --in "$tmp/h_ok.npy" --backend sim
    expect "/dev/zero as a .npy" 1 timeout 60 sh -c 'ln -s /dev/zero "$1/zero.npy" && exec "$2" reduce --op sum --in "$1/zero.npy" --backend sim' sh "$tmp" "$tilec"
    has "is refused" "$tmp/err" "is not a .npy file tilec reads"
else
    echo "skipped: no numpy for /usr/bin/python3, so --specials and .npy files are not compared with it"
fi

# ---- sizes, bounded reading, safe writing, strict numbers ---------------------------------
# is NAME WHAT PATH : PATH is a symlink (-L), FIFO (-p), character device (-c) or regular file (-f)
is() {
    if [ "$2" "$3" ] && { [ "$2" = -L ] || [ ! -L "$3" ]; }; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: $3 is not $2:"; ls -la "$3"; fi
}
# le32 V... : little-endian 32-bit integers, written out by hand (not by tilec)
le32() {
    local v
    for v; do
        printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) $((v >> 24 & 255)))"
    done
}
asan=false
if ldd "$tilec" 2>/dev/null | grep -q 'libasan\|libubsan'; then asan=true; fi
# run CMD with at most 1 GiB of address space where the sanitizers do not need more
bounded() { if $asan; then timeout 120 "$@"; else (ulimit -v 1048576; exec timeout 120 "$@"); fi; }

# --offsets text whose offsets cannot be allocated: said so (64 MiB of text, 256 MiB of
# offsets in 300 MiB of address space)
if ! $asan; then
    head -c 67108864 /dev/zero | tr '\0' ' ' >"$tmp/big-off.txt"
    expect "--offsets text with no memory for its offsets" 1 sh -c 'ulimit -v 307200; exec "$@"' sh "$tilec" reduce --op sum --dtype f32 --shape 10 --offsets "$tmp/big-off.txt" --backend sim
    has "says so" "$tmp/err" "tilec reduce: out of memory for the offsets of --offsets '$tmp/big-off.txt' (67108864 bytes of text); give a smaller file, or a .npy"
    rm -f "$tmp/big-off.txt"
fi

# sizes are checked before anything is allocated (no product overflows)
expect "reduce --shape 2^62" 2 "$tilec" reduce --op sum --dtype f32 --shape 4611686018427387904 --backend sim
has "an extent past 2^48 is refused with the range" "$tmp/err" "--shape takes integers from 0 to 281474976710656 separated by 'x', not '4611686018427387904'"
expect "reduce --shape 2^48 x 2" 2 "$tilec" reduce --op sum --dtype f32 --shape 281474976710656x2 --backend sim
has "a product past 2^48 is refused" "$tmp/err" "--shape 281474976710656x2 has more than 2^48 elements"
expect "reduce --shape 2^48 x 2^48 x 0" 2 "$tilec" reduce --op sum --dtype f32 --shape 281474976710656x281474976710656x0 --axes 2 --backend sim
has "an empty tensor does not hide a product past 2^48" "$tmp/err" "has more than 2^48 elements"
if ! $asan; then  # 2^50 bytes: more than any address space, so malloc fails (ASan would abort)
    expect "fused: x of 2^48 f32" 1 "$tilec" fused --op softmax --dtype f32 --shape 281474976710656 --backend sim
    has "says it is out of memory" "$tmp/err" "tilec fused: out of memory for the data of --shape 281474976710656 (x alone is 1125899906842624 bytes of f32); use a smaller --shape"
fi
expect "fused --eps 1e-0" 2 "$tilec" fused --op rms_norm --dtype f32 --shape 4x8 --eps 1e-0 --backend sim
has "says what K may be" "$tmp/err" "tilec fused: --eps 1e-K: K takes an integer from 1 to 30, not '0'"
if [ "$(grep -c '^tilec fused:' "$tmp/err")" -eq 1 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: fused --eps 1e-0 says it once:"; sed 's/^/  | /' "$tmp/err"; fi
# docs/cli.md's example of tilec fused shows the plan line the command prints
expect "fused: docs/cli.md's example" 0 "$tilec" fused --op rms_norm --dtype bf16 --shape 4x4096 --weight random --backend sim --check
shown=$(grep -A2 '^\$ tilec fused --op rms_norm --dtype bf16 --shape 4x4096' "$root/docs/cli.md" | grep '^plan 1:')
has "prints the plan docs/cli.md shows" "$tmp/out" "${shown:-docs/cli.md no longer shows the plan line of this example}"
# TILEC_FUSED_REGS (measuring the register plan's sizes): taken where it fits, else refused
TILEC_FUSED_REGS=8,128 expect "fused: TILEC_FUSED_REGS=8,128" 0 "$tilec" fused --op layer_norm --dtype f32 --shape 19x512 --weight random --bias random --backend sim --check
has "takes the sizes" "$tmp/out" "plan 1: rows 0 to 15, 8 a CTA, rows held in registers: grid 2 x 128 threads"
has "and the rows left a warp each" "$tmp/out" "plan 2: rows 16 to 18, 1 a CTA, rows held in registers: grid 3 x 32 threads"
# a kernel of thousands of registers, some named with a final digit (exp's k1 of register 271
# and k of 1271 were both tl_k1271): NVRTC compiles what the emitter names
TILEC_FUSED_REGS=8,128 "$tilec" fused --op softmax --dtype bf16 --shape 8x2048 --backend sim --explain |
    sed -n '/^kernel tilec_softmax(/,/^}/p' >"$tmp/regs2048.tile"
has "the program of 8 rows of 2048 in registers" "$tmp/regs2048.tile" "local Xf: bf16[8, 2048]"
if ldconfig -p | grep -q libnvrtc; then
    expect "compile it for sm_90 (NVRTC): no two registers share a name" 0 "$tilec" compile "$tmp/regs2048.tile" --target cuda --arch sm_90 -o "$tmp/regs2048.cubin"
else
    echo "skipped: NVRTC is not installed here, so the kernel of 8 rows of 2048 in registers is not compiled"
fi
# the loop IR's dump names registers as the emitters do: exp's k1 of register 270 is k1_270
# (k1270 would be k of 1270); an exp whose argument shows no bound scales in two steps, k1's
sed 's/exp(min(Xf - M, 0))/exp(Xf - M)/' "$tmp/regs2048.tile" >"$tmp/regs2048k.tile"
has "an exp of no bound" "$tmp/regs2048k.tile" "exp(Xf - M)"
expect "dump the loop of a kernel of thousands of registers" 0 "$tilec" explain --dump=loop "$tmp/regs2048k.tile"
if grep -qE 'k1_[0-9]+ = \(k[0-9]+ >> 1\)' "$tmp/out"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: names exp's k1 registers k1_N, apart from the k of 1N: no 'k1_N = (kM >> 1)' in the dump"; fi
TILEC_FUSED_REGS=16,1024 expect "fused: TILEC_FUSED_REGS=16,1024 of rows of 8192" 1 "$tilec" fused --op cross_entropy --dtype f32 --shape 16x8192 --backend sim
has "says a fragment's limit" "$tmp/err" "16 rows are 131072 elements, and a fragment holds at most 65536 (a layout's 16 bits); give fewer rows, or unset it"
TILEC_FUSED_REGS=1,512 expect "fused: rows of 4096 held in a CTA's fragment of 512 threads" 0 "$tilec" fused --op layer_norm --dtype bf16 --shape 5x4096 --weight random --bias random --backend sim --check
has "plans a CTA's fragment" "$tmp/out" "plan 1: rows 0 to 4, 1 a CTA, rows held in registers: grid 5 x 512 threads"
TILEC_FUSED_REGS=4,128x expect "fused: TILEC_FUSED_REGS=4,128x" 1 "$tilec" fused --op softmax --dtype bf16 --shape 8x1024 --backend sim
has "says what it takes" "$tmp/err" "TILEC_FUSED_REGS='4,128x' is not ROWS,THREADS, two whole numbers (say 4,128: 4 rows a CTA of 128 threads held in registers), or off; unset it for the planned sizes"
TILEC_FUSED_REGS=off expect "fused: TILEC_FUSED_REGS=off" 0 "$tilec" fused --op rms_norm --dtype bf16 --shape 8x1024 --backend sim --check
has "plans without registers" "$tmp/out" "plan 1: rows 0 to 7, 8 a CTA, rows staged in shared memory: grid 1 x 256 threads"
TILEC_FUSED_REGS=4,0 expect "fused: TILEC_FUSED_REGS=4,0, whatever the plan" 1 "$tilec" fused --op softmax --dtype bf16 --shape 3x65536 --backend sim
has "says what the numbers may be" "$tmp/err" "TILEC_FUSED_REGS=4,0: ROWS is a power of two from 1 to 128 and THREADS one from 32 to 1024; unset it for the planned sizes"
TILEC_FUSED_REGS=2,128 expect "fused: a row over 2 warps, rows left" 1 "$tilec" fused --op softmax --dtype bf16 --shape 7x4096 --backend sim
has "says why" "$tmp/err" "TILEC_FUSED_REGS=2,128 spreads a row over 2 warps, which leaves the last 1 of 7 rows no plan of the same fold; give rows a multiple of 2, or unset it"
TILEC_FUSED_REGS=1,128 expect "fused: too few elements a thread" 1 "$tilec" fused --op softmax --dtype bf16 --shape 8x256 --backend sim
has "says what fits" "$tmp/err" "TILEC_FUSED_REGS=1,128 cannot hold bf16 rows of 256 columns in registers: 1 rows over 128 threads are 2 elements (4 bytes) a thread, where 4 to 128 elements and at least 16 bytes fit; unset it for the planned sizes"
TILEC_FUSED_REGS=1,128 expect "fused: TILEC_FUSED_REGS, not a register plan" 0 "$tilec" fused --op softmax --dtype bf16 --shape 8x250 --backend sim
expect "fused --math fast" 2 "$tilec" fused --op softmax --dtype f32 --shape 4x8 --math fast --backend sim
has "names the choices" "$tmp/err" "tilec fused: --math takes exact (the same bits everywhere, the default) or approx (the GPU's hardware exponential), not 'fast'"
expect "fused --math approx of a norm" 2 "$tilec" fused --op rms_norm --dtype f32 --shape 4x8 --math approx --backend sim
has "says which ops it is for" "$tmp/err" "tilec fused: --math approx is for softmax, log_softmax and cross_entropy (their exponentials), not rms_norm"
expect "fused --math approx --check" 0 "$tilec" fused --op cross_entropy --dtype bf16 --shape 9x5000 --math approx --specials --backend sim --check
# rows of 0 and -100: exp(-100) is subnormal in f32, which math=approx flushes to 0 (within --check's bound)
printf '\x00\x00\x00\x00\x00\x00\xc8\xc2%.0s' 1 2 3 4 5 6 7 8 >"$tmp/flush.bin"
expect "fused --math approx of a flushed exponential" 0 "$tilec" fused --op softmax --dtype f32 --shape 8x2 --in "$tmp/flush.bin" --math approx --check --backend sim
expect "fused --math exact of the same rows" 0 "$tilec" fused --op softmax --dtype f32 --shape 8x2 --in "$tmp/flush.bin" --check --backend sim
# tilec run --check of a math=approx kernel: its reference widens the exponential's bound (flush, |x| 2^-24)
cat >"$tmp/approx.tile" <<'EOF'
kernel ap(X: f32[2, 128] global, Y: f32[2, 128] global) threads=64 math=approx {
  cta.map(Y, exp(X * 60 - 20))
}
EOF
expect "run --check of a math=approx kernel" 0 "$tilec" run --backend sim --check "$tmp/approx.tile"
expect "fused --eps 2e-5" 2 "$tilec" fused --op rms_norm --dtype f32 --shape 4x8 --eps 2e-5 --backend sim
has "names the form" "$tmp/err" "tilec fused: --eps takes 1e-K with K from 1 to 30 (1e-5, 1e-6), not '2e-5'"

# reading stops at the limit: a source at 16 MiB, an --in at the parameter's size
expect "check /dev/zero" 1 bounded "$tilec" check /dev/zero
has "a source past 16 MiB is refused" "$tmp/err" "tilec: '/dev/zero' has more than 16 MiB of .tile text; tilec reads at most 16 MiB"
expect "yes | check -" 1 bounded sh -c 'yes | "$1" check -' sh "$tilec"
has "an endless pipe is refused" "$tmp/err" "tilec: '-' has more than 16 MiB of .tile text"
head -c 17000000 /dev/zero >"$tmp/big.tile"
{ "$tilec" check - 2>/dev/null; wc -c >"$tmp/left"; } <"$tmp/big.tile"
has "check - reads 16 MiB + 1 byte and no more" "$tmp/left" "$((17000000 - 16777217))"
expect "run --in A=/dev/zero" 1 bounded "$tilec" run "$root/examples/row_sum.tile" --in A=/dev/zero
has "an --in past the parameter is refused" "$tmp/err" "tilec: '/dev/zero' has more than 128 bytes, but A is f32[4, 8]: 128 bytes"
head -c 1000 /dev/zero >"$tmp/k.bin"
{ "$tilec" run "$root/examples/row_sum.tile" --in A=- >/dev/null 2>&1; wc -c >"$tmp/left"; } <"$tmp/k.bin"
has "run --in A=- reads the parameter's bytes + 1 and no more" "$tmp/left" "871"

# every output through one safe write: symlinks, modes, FIFOs, devices, standard output
# (written with emit -o, which existed before; what it writes is what emit -o - prints)
rs="$root/examples/row_sum.tile"
"$tilec" emit "$rs" --target cuda -o - >"$tmp/want.cu"
echo "do not touch" >"$tmp/victim"
cp "$tmp/victim" "$tmp/victim.orig"
# the old code wrote PATH.tmp<pid> with fopen: a symlink planted there had its target overwritten
expect "a symlink planted at PATH.tmp<pid>" 0 sh -c 'ln -s "$1/victim" "$1/o.cu.tmp$$" && exec "$2" emit "$3" --target cuda -o "$1/o.cu"' sh "$tmp" "$tilec" "$rs"
same "the planted symlink's target is untouched" "$tmp/victim" "$tmp/victim.orig"
is "the output is a regular file" -f "$tmp/o.cu"
same "and has the source" "$tmp/o.cu" "$tmp/want.cu"
rm -f "$tmp"/o.cu.tmp*
echo old >"$tmp/mode.cu"
chmod 600 "$tmp/mode.cu"
expect "emit -o over a 0600 file" 0 "$tilec" emit "$rs" --target cuda -o "$tmp/mode.cu"
same "the 0600 file gets the source" "$tmp/mode.cu" "$tmp/want.cu"
has "and keeps its mode" <(stat -c %a "$tmp/mode.cu") "600"
cp "$tmp/victim" "$tmp/linked.cu"
ln -s linked.cu "$tmp/link.cu"
expect "emit -o through a symlink" 0 "$tilec" emit "$rs" --target cuda -o "$tmp/link.cu"
is "the symlink stays a symlink" -L "$tmp/link.cu"
same "the file it leads to gets the source" "$tmp/linked.cu" "$tmp/want.cu"
ln -s nowhere "$tmp/dangling.cu"
expect "emit -o a dangling symlink" 1 "$tilec" emit "$rs" --target cuda -o "$tmp/dangling.cu"
has "is refused" "$tmp/err" "it is a symlink to a file that does not exist"
is "and stays a symlink" -L "$tmp/dangling.cu"
mkfifo "$tmp/fifo"
timeout 60 cat "$tmp/fifo" >"$tmp/from_fifo" &
reader=$!
expect "emit -o a FIFO" 0 timeout 60 "$tilec" emit "$rs" --target cuda -o "$tmp/fifo"
wait "$reader"
is "the FIFO stays a FIFO" -p "$tmp/fifo"
same "the reader gets the bytes" "$tmp/from_fifo" "$tmp/want.cu"
expect "emit -o /dev/null" 0 "$tilec" emit "$rs" --target cuda -o /dev/null
is "/dev/null stays a device" -c /dev/null
expect "run --out B=/dev/full" 1 "$tilec" run "$rs" --out B=/dev/full
has "a full device is an error" "$tmp/err" "cannot write '/dev/full': No space left on device"
is "/dev/full stays a device" -c /dev/full
if mknod "$tmp/null" c 1 3 2>/dev/null; then # a device node of our own (root only)
    expect "emit -o a device node" 0 "$tilec" emit "$rs" --target cuda -o "$tmp/null"
    is "the node stays a device" -c "$tmp/null"
fi
expect "emit -o /dev/stdout > FILE" 0 sh -c '"$1" emit "$2" --target cuda -o /dev/stdout >"$3"' sh "$tilec" "$rs" "$tmp/stdout.cu"
same "/dev/stdout writes standard output's file" "$tmp/stdout.cu" "$tmp/want.cu"
is "which stays the file the shell opened" -f "$tmp/stdout.cu"
printf 'kernel k(A:f32[4] global) threads=32 {\n cta.fill(A,1.50)\n}\n' >"$tmp/real.tile"
ln -s real.tile "$tmp/via.tile"
chmod 640 "$tmp/real.tile"
expect "fmt -i through a symlink" 0 "$tilec" fmt -i "$tmp/via.tile"
is "fmt -i keeps the symlink" -L "$tmp/via.tile"
has "and rewrites the file it leads to" "$tmp/real.tile" "  cta.fill(A, 1.5)"
has "which keeps its mode" <(stat -c %a "$tmp/real.tile") "640"
echo keep >"$tmp/big.cu"
expect "a write that fails" 1 sh -c 'trap "" XFSZ; ulimit -f 1; exec "$1" emit "$2" --target cuda -o "$3"' sh "$tilec" "$rs" "$tmp/big.cu"
has "says why" "$tmp/err" "cannot write '$tmp/big.cu': File too large"
has "leaves the old file" "$tmp/big.cu" "keep"
ls -a "$tmp" >"$tmp/names"
if grep -q 'tmp' "$tmp/names"; then fail=$((fail + 1)); echo "FAIL: a temporary file was left:"; grep tmp "$tmp/names"; else pass=$((pass + 1)); fi
mkdir "$tmp/dir.cu"
expect "-o a directory" 1 "$tilec" emit "$rs" --target cuda -o "$tmp/dir.cu"
has "is refused" "$tmp/err" "it is a directory"

# every number through one strict parser; single-valued options once; missing values named
bad_usage() { # NAME MESSAGE ARGS...
    local name=$1 msg=$2
    shift 2
    expect "$name" 2 timeout 60 "$tilec" "$@"
    has "$name: the message" "$tmp/err" "$msg"
}
r4=(reduce --op sum --dtype f32 --shape 4 --backend sim)
bad_usage "reduce --axes 2^32+1" "--axes takes integers from -8 to 7 separated by ',', not '4294967297'" "${r4[@]}" --axes 4294967297
bad_usage "reduce --dtype twice" "option --dtype is given twice ('f32', then 'f8')" reduce --op sum --dtype f32 --dtype f8 --shape 4
bad_usage "reduce --op twice" "option --op is given twice" "${r4[@]}" --op max
bad_usage "reduce --shape 4x" "--shape takes integers from 0 to 281474976710656 separated by 'x', not '4x' (an empty item)" reduce --op sum --dtype f32 --shape 4x
bad_usage "reduce --shape 4x5a" "not '4x5a' ('5a' is not one)" reduce --op sum --dtype f32 --shape 4x5a
bad_usage "reduce --shape ' 4'" "not ' 4'" reduce --op sum --dtype f32 --shape ' 4'
bad_usage "reduce --shape of rank 9" "--shape takes at most 8 values" reduce --op sum --dtype f32 --shape 1x1x1x1x1x1x1x1x1
bad_usage "reduce --repeat 3abc" "--repeat takes an integer from 0 to 1000000, not '3abc'" "${r4[@]}" --repeat 3abc
bad_usage "reduce --repeat 10^17" "--repeat takes an integer from 0 to 1000000, not '99999999999999999'" "${r4[@]}" --repeat 99999999999999999
bad_usage "reduce --repeat -1" "not '-1'" "${r4[@]}" --repeat -1
bad_usage "reduce --seed abc" "--seed takes an integer from 0 to 18446744073709551615, not 'abc'" "${r4[@]}" --seed abc
bad_usage "reduce --seed -1" "--seed takes an integer from 0 to 18446744073709551615, not '-1'" "${r4[@]}" --seed -1
bad_usage "reduce --seed 2^64" "not '18446744073709551616'" "${r4[@]}" --seed 18446744073709551616
bad_usage "reduce --seed without a value" "option --seed needs a value" "${r4[@]}" --seed
bad_usage "reduce --backend bogus" "--backend must be auto, cuda, hip or sim, not 'bogus'" reduce --op sum --dtype f32 --shape 4 --backend bogus
bad_usage "run --seed abc" "--seed takes an integer from 0 to 18446744073709551615, not 'abc'" run "$rs" --seed abc
bad_usage "run --seed twice" "option --seed is given twice" run "$rs" --seed 1 --seed 2
bad_usage "run --seed without a value" "option --seed needs a value" run "$rs" --seed
bad_usage "run --in without a value" "option --in needs a value" run "$rs" --in
bad_usage "run --in A twice" "--in names 'A' twice" run "$rs" --in A=x --in A=y
bad_usage "run --warp-size 32x" "--warp-size must be 32 or 64, not '32x'" run "$rs" --warp-size 32x
bad_usage "run --warp-size 48" "--warp-size must be 32 or 64, not '48'" run "$rs" --warp-size 48
expect "reduce --nan ignore on a sum" 1 "$tilec" reduce --op sum --dtype f32 --shape 8 --nan ignore --backend sim
has "says it is for max and min of floats" "$tmp/err" "nan policy ignore applies to the ops that compare (max, min, argmax, argmin, aminmax) of float dtypes only (a sum with a NaN is NaN; integers have none), not to sum f32"
expect "reduce --nan ignore on an integer" 1 "$tilec" reduce --op max --dtype i32 --shape 8 --nan ignore --backend sim
has "names the dtype" "$tmp/err" "not to max i32"
bad_usage "check --warp-size twice" "option --warp-size is given twice" check --warp-size 32 --warp-size 64 "$rs"
bad_usage "check --warp-size without a value" "option --warp-size needs a value" check "$rs" --warp-size
bad_usage "fmt -o without a value" "option -o needs a value" fmt "$rs" -o
bad_usage "emit -o twice" "option -o is given twice" emit "$rs" --target cuda -o "$tmp/a.cu" -o "$tmp/b.cu"
bad_usage "emit --target twice" "option --target is given twice" emit "$rs" --target cuda --target hip -o "$tmp/t.cu"
bad_usage "explain --arch without a value" "option --arch needs a value" explain "$rs" --arch
bad_usage "explain --dump other" "--dump takes 'loop', not 'ir'" explain "$rs" --dump ir
expect "reduce --seed 2^64-1" 0 "$tilec" "${r4[@]}" --seed 18446744073709551615 --repeat 0
expect "reduce --axes -1 (the default, given)" 0 "$tilec" reduce --op sum --dtype f32 --shape 3x4 --axes -1 --backend sim --repeat 0

# reduce --in / --out: user data in, the first call's result out; expected bytes written by hand
le32 1 2 3 4 5 6 >"$tmp/x6.bin"
le32 6 15 >"$tmp/sum6.bin"
red6() { "$tilec" reduce --op sum --dtype i32 --shape 2x3 --backend sim --repeat 0 --in "$tmp/x6.bin" "$@"; }
expect "reduce --in --out" 0 red6 --axes 1 --out "$tmp/r.bin" --check
is "--out writes a regular file" -f "$tmp/r.bin"
same "sums the rows" "$tmp/r.bin" "$tmp/sum6.bin"
has "and checks them" "$tmp/out" "check: exact, largest error 0: ok"
le32 5 7 9 >"$tmp/cols.bin"
expect "reduce --in --out over axis 0" 0 red6 --axes 0 --out "$tmp/r.bin"
same "sums the columns" "$tmp/r.bin" "$tmp/cols.bin"
le32 -7 3 -2147483648 2147483647 0 -1 >"$tmp/ext.bin"
le32 -2147483648 -1 >"$tmp/min.bin"
expect "reduce min of integer extremes" 0 "$tilec" reduce --op min --dtype i32 --shape 2x3 --backend sim --repeat 2 --in "$tmp/ext.bin" --out "$tmp/r.bin" --check
same "gives the least of each row" "$tmp/r.bin" "$tmp/min.bin"
le32 100 -100 >"$tmp/init.bin"
le32 106 -85 >"$tmp/acc.bin"
expect "reduce --accumulate --out-init" 0 "$tilec" reduce --op sum --dtype i32 --shape 2x3 --backend sim --in "$tmp/x6.bin" --out "$tmp/r.bin" --accumulate --out-init "$tmp/init.bin" --check --repeat 3
same "--out holds one accumulating call on --out-init" "$tmp/r.bin" "$tmp/acc.bin"
bad_usage "reduce --accumulate --out without --out-init" "--accumulate with --out needs --out-init FILE" reduce --op sum --dtype i32 --shape 2x3 --in "$tmp/x6.bin" --out "$tmp/r.bin" --accumulate
bad_usage "reduce --out-init without --accumulate" "--out-init gives the output before an accumulating call: it needs --accumulate" reduce --op sum --dtype i32 --shape 2x3 --out-init "$tmp/init.bin"
expect "reduce --in of the wrong size" 1 "$tilec" reduce --op sum --dtype i32 --shape 2x4 --backend sim --in "$tmp/x6.bin"
has "names both sizes" "$tmp/err" "tilec reduce: --in '$tmp/x6.bin' has 24 bytes, but the input i32[2, 4] is 32 bytes"
expect "reduce --in /dev/zero" 1 bounded "$tilec" reduce --op sum --dtype i32 --shape 2x3 --backend sim --in /dev/zero
has "stops at the input's size" "$tmp/err" "--in '/dev/zero' has more than 24 bytes, but the input i32[2, 3] is 24 bytes"
expect "reduce --out-init of the wrong size" 1 red6 --accumulate --out-init "$tmp/x6.bin"
has "names the output's size" "$tmp/err" "--out-init '$tmp/x6.bin' has 24 bytes, but the output i32[2] is 8 bytes"
head -c 1000 /dev/zero >"$tmp/k.bin"
expect "run --in of a file too big" 1 "$tilec" run "$rs" --in A="$tmp/k.bin"
has "says the file's size" "$tmp/err" "'$tmp/k.bin' has 1000 bytes, but A is f32[4, 8]: 128 bytes"
expect "reduce --repeat 0" 0 red6
has "times the first call only" "$tmp/out" "first call"
# the simulator runs once unless --repeat is given, and says so before a long simulation
expect "reduce on the simulator without --repeat" 0 "$tilec" reduce --op sum --dtype f32 --shape 4x8 --backend sim
if grep -q "per call" "$tmp/out"; then fail=$((fail + 1)); echo "FAIL: the simulator was timed by default:"; cat "$tmp/out"; else pass=$((pass + 1)); fi
empty "a short simulation says nothing more" "$tmp/err"
expect "reduce --repeat 1" 0 "$tilec" reduce --op sum --dtype f32 --shape 4x8 --backend sim --repeat 1
has "one call is one call" "$tmp/out" "per call over 1 call, "
# (--sim-budget stops it at once: the line comes before the simulation)
expect "a long simulation" 1 "$tilec" reduce --op max --dtype bf16 --shape 8388608 --backend sim --sim-budget 1000
has "says what it is doing first" "$tmp/err" "tilec reduce: simulating bf16[8388608] (8388608 elements) on the CPU"
# the simulator's work budget and memory bounds
printf 'kernel k(A: f32[4] global) threads=1024 grid=2147483647 {\n  shared S: f32[1024]\n  cta.fill(S, 1)\n}\n' >"$tmp/days.tile"
expect "a grid that would run for days stops at once" 1 timeout 20 "$tilec" run "$tmp/days.tile"
has "with the budget and how to raise it" "$tmp/err" "simulating kernel 'k' takes more than 30000000000 thread-steps, its budget"
has "naming the option" "$tmp/err" "--sim-budget N of tilec run and tilec reduce) or run a smaller program"
printf 'kernel k(A: f32[64, 1000] global, B: f32[64] global) threads=64 {\n  cta.sum(B, A)\n}\n' >"$tmp/small.tile"
expect "run --sim-budget low" 1 "$tilec" run "$tmp/small.tile" --sim-budget 1000
has "stops while it runs" "$tmp/err" "the simulation stopped after 1000 thread-steps (its budget), in CTA 0 of 1"
expect "run --sim-budget raised" 0 "$tilec" run "$tmp/small.tile" --sim-budget 100000000 --check
has "and finishes right" "$tmp/out" "check B: largest error"
expect "run --sim-budget unlimited" 0 "$tilec" run "$tmp/small.tile" --sim-budget unlimited
expect "TILEC_SIM_BUDGET low" 1 env TILEC_SIM_BUDGET=1000 "$tilec" run "$tmp/small.tile"
has "stops too" "$tmp/err" "stopped after 1000 thread-steps"
expect "--sim-budget wins over TILEC_SIM_BUDGET" 0 env TILEC_SIM_BUDGET=1000 "$tilec" run "$tmp/small.tile" --sim-budget 100000000
expect "a bad TILEC_SIM_BUDGET" 1 env TILEC_SIM_BUDGET=lots "$tilec" run "$tmp/small.tile"
has "is refused" "$tmp/err" "TILEC_SIM_BUDGET='lots' is not a number of thread-steps"
for v in abc -1 12x 99999999999999999999 ""; do
    expect "run --sim-budget '$v'" 2 "$tilec" run "$tmp/small.tile" --sim-budget "$v"
done
has "says what it takes" "$tmp/err" "--sim-budget takes a number of thread-steps (0: the default) or 'unlimited'"
expect "reduce --sim-budget low" 1 "$tilec" reduce --op sum --dtype f32 --shape 100000 --backend sim --repeat 1 --sim-budget 1000
has "reduce stops" "$tmp/err" "simulating kernel 'tilec_reduce' takes more than 1000 thread-steps, its budget"
expect "reduce --sim-budget raised" 0 "$tilec" reduce --op sum --dtype f32 --shape 100000 --backend sim --repeat 1 --check --sim-budget 100000000
expect "reduce --sim-budget bad" 2 "$tilec" reduce --op sum --dtype f32 --shape 8 --sim-budget x
printf 'kernel k(A: f32[268435456] global, B: f32[268435456] global) threads=32 {\n  cta.copy(B, A)\n}\n' >"$tmp/gib.tile"
expect "run refuses parameters above the bound" 1 "$tilec" run "$tmp/gib.tile"
has "before allocating them" "$tmp/err" "tilec run: the parameters of 'k' take more than 1024 MiB"
printf 'kernel k(A: f32[100, 256] global, B: f32[100] global) threads=256 {\n  shared S: f32[100, 256]\n  cta.copy(S, A)\n  cta.sync()\n  cta.sum(B, S)\n}\n' >"$tmp/smem.tile"
expect "100 KiB of shared memory on sm_90" 0 "$tilec" emit "$tmp/smem.tile" --target cuda --arch sm_90 -o "$tmp/smem.cu"
expect "100 KiB of shared memory on sm_75" 1 "$tilec" emit "$tmp/smem.tile" --target cuda --arch sm_75 -o "$tmp/smem.cu"
has "is refused at the buffer" "$tmp/err" "smem.tile:2:10: error: 'S' takes 102400 bytes of shared memory, more than the 64 KiB a CTA gets on CUDA sm_75"
expect "100 KiB of shared memory on HIP" 1 "$tilec" emit "$tmp/smem.tile" --target hip -o "$tmp/smem.hip"
has "is refused on HIP" "$tmp/err" "more than the 64 KiB a CTA gets on HIP gfx90a"

# files the user may not write are not replaced; a writable file in a directory that
# takes no temporary is written in place (as another user: root may write anything)
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    perm=$(mktemp -d) # outside $tmp, which only its owner may enter
    mkdir -p "$perm/rodir"
    cp "$root/examples/row_sum.tile" "$perm/r.tile"
    echo old >"$perm/ro.cu"
    chmod 444 "$perm/ro.cu"
    echo mine >"$perm/rodir/mine.cu"
    chown 65534 "$perm/ro.cu" "$perm/rodir/mine.cu"
    chmod 777 "$perm"
    chmod 755 "$perm/rodir"
    chmod 644 "$perm/r.tile"
    expect "emit -o a read-only file" 1 as_nobody "$tilec" emit "$perm/r.tile" --target cuda -o "$perm/ro.cu"
    has "is refused" "$tmp/err" "cannot write '$perm/ro.cu': Permission denied; make it writable (chmod u+w) or write elsewhere"
    has "and the file is untouched" "$perm/ro.cu" "old"
    expect "emit -o a writable file in a read-only directory" 0 as_nobody "$tilec" emit "$perm/r.tile" --target cuda -o "$perm/rodir/mine.cu"
    has "is written in place" "$perm/rodir/mine.cu" "Generated by tilec"
    expect "emit -o a new file in a read-only directory" 1 as_nobody "$tilec" emit "$perm/r.tile" --target cuda -o "$perm/rodir/new.cu"
    has "says why" "$tmp/err" "cannot create a temporary file beside it"
    rm -rf "$perm"
else
    echo "skipped: the permission tests of safe writes (they need root and setpriv)"
fi

# ---- one option parser, many files, terminals, no internal IR in errors ------------------
# --opt=value and --opt value, for every command
expect "check --warp-size=64" 0 "$tilec" check --warp-size=64 "$rs"
expect "run --warp-size=64 --seed=3" 0 "$tilec" run "$rs" --warp-size=64 --seed=3 --check
has "runs at warp size 64" "$tmp/out" "warp size 64"
expect "reduce --axes=0" 0 "$tilec" reduce --op=sum --dtype=f32 --shape=4x8 --axes=0 --backend=sim --repeat=0
has "reduces axis 0" "$tmp/out" "view: 4 (reduced) 8"
expect "reduce --axes=-1" 0 "$tilec" reduce --op sum --dtype f32 --shape 4x8 --axes=-1 --backend sim --repeat 0
has "reduces the last axis" "$tmp/out" "view: 4 8 (reduced)"
expect "explain --dump loop" 0 "$tilec" explain "$rs" --dump loop --target=sim
has "prints the loop IR" "$tmp/out" "warp_size=32"
expect "emit --target=cuda -o FILE" 0 "$tilec" emit "$rs" --target=cuda -o "$tmp/eq.cu"
has "writes the source" "$tmp/eq.cu" "Generated by tilec"
expect "emit -oFILE" 0 "$tilec" emit "$rs" --target cuda -o"$tmp/glued.cu"
same "is -o FILE" "$tmp/glued.cu" "$tmp/eq.cu"
# "--" ends the options: a file named -x.tile
mkdir "$tmp/dash"
cp "$root/examples/row_sum.tile" "$tmp/dash/-x.tile"
expect "check -- -x.tile" 0 sh -c 'cd "$1" && exec "$2" check -- -x.tile' sh "$tmp/dash" "$tilec"
expect "check -x.tile without --" 2 sh -c 'cd "$1" && exec "$2" check -x.tile' sh "$tmp/dash" "$tilec"
has "is an unknown option" "$tmp/err" "tilec check: unknown option -x.tile; see tilec check --help"
expect "fmt --check -- -x.tile" 0 sh -c 'cd "$1" && exec "$2" fmt --check -- -x.tile' sh "$tmp/dash" "$tilec"
expect "emit -- -x.tile" 0 sh -c 'cd "$1" && exec "$2" emit --target cuda -- -x.tile' sh "$tmp/dash" "$tilec"
is "writes -x.cu" -f "$tmp/dash/-x.cu"
expect "check -- --help is a file" 1 "$tilec" check -- --help
has "which does not exist" "$tmp/err" "cannot read '--help'"
# messages of the parser
for cmd in check fmt explain run emit compile; do
    bad_usage "$cmd --bogus" "tilec $cmd: unknown option --bogus; see tilec $cmd --help" "$cmd" --bogus "$rs"
    bad_usage "$cmd --bogus=1" "tilec $cmd: unknown option --bogus; see tilec $cmd --help" "$cmd" --bogus=1 "$rs"
done
bad_usage "reduce --bogus" "tilec reduce: unknown option --bogus; see tilec reduce --help" reduce --bogus
bad_usage "reduce with an operand" "tilec reduce: takes no FILE; 'x.tile' is extra" "${r4[@]}" x.tile
bad_usage "check --warp-size at the end" "tilec check: option --warp-size needs a value" check "$rs" --warp-size
bad_usage "explain --target at the end" "tilec explain: option --target needs a value" explain "$rs" --target
bad_usage "emit -o at the end" "tilec emit: option -o needs a value" emit "$rs" --target cuda -o
bad_usage "reduce --shape at the end" "tilec reduce: option --shape needs a value" reduce --op sum --dtype f32 --shape
bad_usage "run --kernel at the end" "tilec run: option --kernel needs a value" run "$rs" --kernel
bad_usage "fmt --check=yes" "tilec fmt: option --check takes no value, not 'yes'; give --check alone" fmt --check=yes "$rs"
bad_usage "reduce --explain=1" "option --explain takes no value" "${r4[@]}" --explain=1
bad_usage "run --check=no" "option --check takes no value" run "$rs" --check=no
bad_usage "fmt -ix" "unknown option -ix" fmt -ix "$rs"
bad_usage "--axes=bad through the strict parser" "--axes takes integers from -8 to 7 separated by ',', not '0x1'" "${r4[@]}" --axes=0x1
bad_usage "--seed= (empty)" "--seed takes an integer from 0 to 18446744073709551615, not ''" "${r4[@]}" --seed=
bad_usage "--dtype=f32 --dtype f64" "option --dtype is given twice ('f32', then 'f64')" reduce --op sum --dtype=f32 --dtype f64 --shape 4
bad_usage "emit two FILEs" "tilec emit: one FILE only; 'x.tile' is extra" emit "$rs" x.tile --target cuda

# check and fmt over many files: each reported, the exit status the worst
printf 'kernel k(A:f32[4] global) threads=32 {\n cta.fill(A,2.50)\n}\n' >"$tmp/loose2.tile"
printf 'kernel k(A:f32[4] global) threads=32 {\n cta.fill(A,1.50)\n}\n' >"$tmp/loose1.tile"
cp "$tmp/loose1.tile" "$tmp/loose1.orig"
expect "check of valid files" 0 "$tilec" check "$rs" "$tmp/loose1.tile" "$root/examples/col_sum.tile"
empty "is silent" "$tmp/err"
expect "check: good, bad, good" 1 "$tilec" check "$rs" "$tmp/race.tile" "$tmp/loose1.tile"
has "names the bad file" "$tmp/err" "$tmp/race.tile:4:14: error: missing barrier"
expect "check: a missing file and a syntax error" 1 "$tilec" check "$tmp/nope.tile" "$tmp/syntax.tile" "$rs"
has "reports the missing file" "$tmp/err" "cannot read '$tmp/nope.tile'"
has "and the syntax error after it" "$tmp/err" "syntax.tile:1:13: error: unknown dtype 'f31'"
expect "check of many files with a bad option" 2 "$tilec" check "$rs" "$tmp/race.tile" --warp-size 48
expect "fmt --check of many files" 1 "$tilec" fmt --check "$rs" "$tmp/loose1.tile" "$tmp/written.tile" "$tmp/loose2.tile"
has "names the first loose file" "$tmp/err" "$tmp/loose1.tile: not in canonical form"
has "and the second" "$tmp/err" "$tmp/loose2.tile: not in canonical form"
if grep -q "$rs\|written.tile" "$tmp/err"; then fail=$((fail + 1)); echo "FAIL: fmt --check named a canonical file"; else pass=$((pass + 1)); fi
expect "fmt --check of canonical files" 0 "$tilec" fmt --check "$rs" "$tmp/written.tile"
expect "fmt of many files to standard output" 0 "$tilec" fmt "$tmp/loose1.tile" "$tmp/loose2.tile"
has "prints the first" "$tmp/out" "cta.fill(A, 1.5)"
has "and the second" "$tmp/out" "cta.fill(A, 2.5)"
expect "fmt: a syntax error among many" 1 "$tilec" fmt "$tmp/loose1.tile" "$tmp/syntax.tile" "$tmp/loose2.tile"
has "still prints the others" "$tmp/out" "cta.fill(A, 2.5)"
bad_usage "fmt -o with many files" "-o OUT takes one FILE" fmt "$tmp/loose1.tile" "$tmp/loose2.tile" -o "$tmp/o.tile"
bad_usage "fmt - among many" "'-' (standard input) must be the only FILE" fmt - "$tmp/loose1.tile"
# fmt -i over many: a symlink stays one, its target is rewritten with its mode
printf 'kernel k(A:f32[4] global) threads=32 {\n cta.fill(A,3.50)\n}\n' >"$tmp/target3.tile"
chmod 604 "$tmp/target3.tile"
ln -s target3.tile "$tmp/link3.tile"
chmod 640 "$tmp/loose2.tile"
cp "$rs" "$tmp/rs-copy.tile"
expect "fmt -i of many files, one a symlink" 0 "$tilec" fmt -i "$tmp/loose1.tile" "$tmp/link3.tile" "$tmp/loose2.tile" "$tmp/rs-copy.tile"
has "rewrites the first" "$tmp/loose1.tile" "  cta.fill(A, 1.5)"
has "and the last" "$tmp/loose2.tile" "  cta.fill(A, 2.5)"
has "keeping its mode" <(stat -c %a "$tmp/loose2.tile") "640"
is "the symlink stays a symlink" -L "$tmp/link3.tile"
has "its target is rewritten" "$tmp/target3.tile" "  cta.fill(A, 3.5)"
has "with its mode" <(stat -c %a "$tmp/target3.tile") "604"
same "a canonical file is left as it was" "$tmp/rs-copy.tile" "$rs"
printf 'kernel k(A:f32[4] global) threads=32 {\n cta.fill(A,4.50)\n}\n' >"$tmp/loose4.tile"
cp "$tmp/loose4.tile" "$tmp/loose4.orig"
expect "fmt -i: a syntax error among many" 1 "$tilec" fmt -i "$tmp/syntax.tile" "$tmp/loose4.tile"
has "the others are still rewritten" "$tmp/loose4.tile" "  cta.fill(A, 4.5)"

# binary output is never written to a terminal; text may be
# on_tty OUT ERR CMD... : runs CMD with standard output on a pseudo-terminal (its bytes
# copied to OUT), standard error to ERR; exits with CMD's status
on_tty() {
    /usr/bin/python3 - "$@" <<'PY'
import os, pty, subprocess, sys, threading
out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
master, slave = pty.openpty()
got = bytearray()
def drain():
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            return
        if not b:
            return
        got.extend(b)
t = threading.Thread(target=drain, daemon=True)
t.start()
with open(err, "wb") as e:
    rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=e, timeout=120).returncode
os.close(slave)
t.join(5)
open(out, "wb").write(bytes(got))
sys.exit(rc)
PY
}
tty_expect() { # NAME WANT_RC CMD...
    local name=$1 want=$2
    shift 2
    on_tty "$tmp/out" "$tmp/err" "$@"
    local rc=$?
    if [ "$rc" -eq "$want" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $name: exit $rc, wanted $want"; sed 's/^/  stderr: /' "$tmp/err" | head -5; fi
}
tty_expect "compile - to a terminal" 2 sh -c 'exec "$1" compile - --target cuda --arch sm_90 <"$2"' sh "$tilec" "$rs"
has "is refused" "$tmp/err" "tilec compile: will not write a CUBIN (binary) to a terminal; use -o FILE or redirect standard output (> FILE)"
empty "and nothing reaches the terminal" "$tmp/out"
tty_expect "compile -o - to a terminal" 2 "$tilec" compile "$rs" --target hip --arch gfx90a -o -
has "is refused" "$tmp/err" "will not write a code object (binary) to a terminal; use -o FILE"
tty_expect "reduce --out - to a terminal" 2 "$tilec" "${r4[@]}" --out - --repeat 0
has "is refused" "$tmp/err" "tilec reduce: will not write --out's raw tensor bytes to a terminal; use --out FILE or redirect"
tty_expect "reduce --out2 - to a terminal" 2 "$tilec" reduce --op argmax --dtype f32 --shape 4 --backend sim --out2 - --repeat 0
has "is refused" "$tmp/err" "will not write --out2's raw tensor bytes to a terminal"
tty_expect "run --out B=- to a terminal" 2 "$tilec" run "$rs" --out B=-
has "is refused" "$tmp/err" "tilec run: will not write --out B's raw bytes to a terminal; use --out B=FILE or redirect"
tty_expect "emit -o - to a terminal (text)" 0 "$tilec" emit "$rs" --target cuda -o -
has "is written" "$tmp/out" "__global__"
tty_expect "fmt to a terminal (text)" 0 "$tilec" fmt "$rs"
has "is written" "$tmp/out" "kernel row_sum"
# raw bytes on standard output are all that is there: the report goes to standard error
expect "reduce --out - to a pipe" 0 "$tilec" reduce --op sum --dtype i32 --shape 2x3 --backend sim --repeat 2 --in "$tmp/x6.bin" --out - --check
same "standard output holds exactly the 8 bytes of the result" "$tmp/out" "$tmp/sum6.bin"
has "the report is on standard error" "$tmp/err" "check: exact, largest error 0: ok"
has "the timing too" "$tmp/err" "per call over 2 calls"
has "and the backend" "$tmp/err" "backend sim"
expect "reduce --out /dev/stdout > FILE" 0 sh -c '"$1" reduce --op sum --dtype i32 --shape 2x3 --backend sim --in "$2" --out /dev/stdout --check >"$3"' sh "$tilec" "$tmp/x6.bin" "$tmp/stdout.bin"
same "the file holds exactly the result" "$tmp/stdout.bin" "$tmp/sum6.bin"
expect "reduce --out2 - (argmax's indices)" 0 "$tilec" reduce --op argmax --dtype i32 --shape 2x3 --backend sim --in "$tmp/x6.bin" --out2 - --index-dtype i32 --check
le32 2 2 >"$tmp/am_want.bin"
same "standard output holds the indices alone" "$tmp/out" "$tmp/am_want.bin"
expect "run --out B=- to a pipe" 0 "$tilec" run "$rs" --backend sim --in A="$tmp/a.bin" --out B=- --check
same "standard output holds exactly B's 16 bytes" "$tmp/out" "$tmp/b.bin"
has "the kernel line is on standard error" "$tmp/err" "kernel row_sum on sim (warp size 32)"
has "and the check" "$tmp/err" "check B: largest error"
expect "run of a file with a func, --out B=-" 0 "$tilec" run "$rs" --in A="$tmp/a.bin" --out B=/dev/stdout
same "through /dev/stdout too" "$tmp/out" "$tmp/b.bin"

# output that is lost is a failure: every command checks the final flush of standard output
full() { # NAME CMD... : CMD with standard output on /dev/full exits 1 and says why
    local name=$1
    shift
    "$@" >/dev/full 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name > /dev/full: exit $rc, wanted 1"; fi
    has "$name > /dev/full says why" "$tmp/err" "No space left on device"
}
full "explain" "$tilec" explain "$rs"
full "explain --verbose" "$tilec" explain "$rs" --verbose
full "run" "$tilec" run "$rs" --backend sim --check
full "reduce" "$tilec" reduce --op sum --dtype f32 --shape 4x8 --backend sim --check
full "reduce --out -" "$tilec" reduce --op sum --dtype i32 --shape 2x3 --backend sim --in "$tmp/x6.bin" --out -
full "--help" "$tilec" --help
full "--version" "$tilec" --version
full "run --help" "$tilec" run --help
full "fmt" "$tilec" fmt "$rs"
full "emit -o -" "$tilec" emit "$rs" --target cuda -o -
if [ "$(grep -c . "$tmp/err")" -eq 1 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: a lost write is reported once:"; cat "$tmp/err"; fi
expect "check prints nothing, so /dev/full loses nothing" 0 sh -c '"$1" check "$2" >/dev/full' sh "$tilec" "$rs"

# TILEC_DUMP_SOURCE: the source each compile hands to NVRTC, in DIR
if ldconfig -p | grep -q libnvrtc; then
    mkdir "$tmp/dump"
    expect "compile with TILEC_DUMP_SOURCE" 0 env TILEC_DUMP_SOURCE="$tmp/dump" "$tilec" compile "$rs" --target cuda --arch sm_90 -o "$tmp/d.cubin"
    empty "is silent" "$tmp/err"
    ls "$tmp/dump" >"$tmp/dumped"
    has "names the file by the kernel" "$tmp/dumped" "row_sum-"
    "$tilec" emit "$rs" --target cuda -o "$tmp/d.cu"
    same "which holds the source emit writes" "$tmp/dump/$(head -1 "$tmp/dumped")" "$tmp/d.cu"
    expect "TILEC_DUMP_SOURCE that is no directory" 0 env TILEC_DUMP_SOURCE="$tmp/nope-dir" "$tilec" compile "$rs" --target cuda --arch sm_90 -o "$tmp/d.cubin"
    has "is a warning, and the compile goes on" "$tmp/err" "tilec: warning: TILEC_DUMP_SOURCE=$tmp/nope-dir: cannot open the directory (No such file or directory); the kernel is compiled, its source is not saved (set it to an existing directory)"
else
    echo "skipped: NVRTC is not installed here, so TILEC_DUMP_SOURCE is not tried through tilec compile"
fi

# usage errors say what is wrong in the user's terms, never the generated program
for args in "--op max --dtype i32 --nan ignore" "--op sum --dtype f32 --nan ignore" "--op mean --dtype i32" \
            "--op argmax --dtype f64 --accumulate" "--op var --dtype f32 --accumulate" "--op logsumexp --dtype i64"; do
    # shellcheck disable=SC2086
    expect "reduce $args" 1 "$tilec" reduce $args --shape 4x8 --backend sim --repeat 0
    if grep -q "grid\.\|program\|kernel '\|statement\|axes=(" "$tmp/err"; then
        fail=$((fail + 1)); echo "FAIL: reduce $args shows internal IR:"; sed 's/^/  | /' "$tmp/err"
    else pass=$((pass + 1)); fi
done
has "--nan on an integer: floats only" <("$tilec" reduce --op max --dtype i32 --nan ignore --shape 8 --backend sim 2>&1) "of float dtypes only"

# ---- what run and reduce write -------------------------------------------------------------
# no output overwrites the program, an --in file (what was read would be lost) or another
# output (the second write would replace the first): by name, through a symlink or a hard
# link, checked before anything runs (exit 2), the file left as it was
absent() { # NAME PATH : nothing is at PATH
    if [ ! -e "$2" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1: $2 exists"; fi
}
mkdir "$tmp/ow"
cp "$rs" "$tmp/ow/v.tile"
expect "run --out B=FILE (the program)" 2 "$tilec" run "$tmp/ow/v.tile" --backend sim --out B="$tmp/ow/v.tile"
has "is refused: write elsewhere" "$tmp/err" "tilec run: --out B='$tmp/ow/v.tile' would overwrite the input FILE '$tmp/ow/v.tile' (the same file), which is read first; write the output elsewhere"
same "and the program is as it was" "$tmp/ow/v.tile" "$rs"
ln -s v.tile "$tmp/ow/link.tile"
expect "run --out B=a symlink to the program" 2 "$tilec" run "$tmp/ow/v.tile" --backend sim --out B="$tmp/ow/link.tile"
same "which is as it was" "$tmp/ow/v.tile" "$rs"
"$tilec" run "$rs" --seed 3 --out A="$tmp/ow/a.bin" >/dev/null
cp "$tmp/ow/a.bin" "$tmp/ow/a.orig"
ln "$tmp/ow/a.bin" "$tmp/ow/a-hard.bin"
expect "run --in A=F --out B=F" 2 "$tilec" run "$rs" --backend sim --in A="$tmp/ow/a.bin" --out B="$tmp/ow/a.bin"
has "names the --in" "$tmp/err" "tilec run: --out B='$tmp/ow/a.bin' would overwrite the input --in A='$tmp/ow/a.bin' (the same file)"
expect "run --in A=F --out B=a hard link to F" 2 "$tilec" run "$rs" --backend sim --in A="$tmp/ow/a.bin" --out B="$tmp/ow/a-hard.bin"
same "the input is as it was" "$tmp/ow/a.bin" "$tmp/ow/a.orig"
# a parameter's own --in and --out may be one file: its content after the run replaces
# its content before (an update in place, as tests/oracle/test_argmax.py runs V and I)
"$tilec" run "$rs" --seed 3 --out B="$tmp/ow/b.bin" >/dev/null
cp "$tmp/ow/b.bin" "$tmp/ow/b-want.bin"
le32 7 7 7 7 >"$tmp/ow/b.bin"
expect "run --in B=F --out B=F (an update in place)" 0 "$tilec" run "$rs" --backend sim --in A="$tmp/ow/a.bin" --in B="$tmp/ow/b.bin" --out B="$tmp/ow/b.bin"
same "F holds B after the run" "$tmp/ow/b.bin" "$tmp/ow/b-want.bin"
expect "run --out A=X --out B=X" 2 "$tilec" run "$rs" --backend sim --out A="$tmp/ow/x.bin" --out B="$tmp/ow/./x.bin"
has "two outputs, one file" "$tmp/err" "tilec run: --out A='$tmp/ow/x.bin' and --out B='$tmp/ow/./x.bin' are the same file: the second write would replace the first; give each output its own file"
absent "nothing was written" "$tmp/ow/x.bin"
expect "run --out A=/dev/null --out B=/dev/null (a device takes both)" 0 "$tilec" run "$rs" --backend sim --out A=/dev/null --out B=/dev/null
le32 1 2 3 4 5 6 >"$tmp/ow/x6.bin"
cp "$tmp/ow/x6.bin" "$tmp/ow/x6.orig"
red=(reduce --dtype i32 --shape 2x3 --backend sim --repeat 0)
expect "reduce --in F --out F" 2 "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out "$tmp/ow/x6.bin"
has "is refused: write elsewhere" "$tmp/err" "tilec reduce: --out '$tmp/ow/x6.bin' would overwrite the input --in '$tmp/ow/x6.bin' (the same file), which is read first; write the output elsewhere"
same "and the input is as it was" "$tmp/ow/x6.bin" "$tmp/ow/x6.orig"
# an input read from standard input ("-") is the file standard input has open: `< F` and
# `--out F` lose F as `--in F --out F` would (the "-" was not compared with anything)
expect "reduce --in - --out F < F" 2 sh -c 'exec "$@" <"$0"' "$tmp/ow/x6.bin" "$tilec" "${red[@]}" --op sum --in - --out "$tmp/ow/x6.bin"
has "is refused as --in F is" "$tmp/err" "tilec reduce: --out '$tmp/ow/x6.bin' would overwrite the input --in '-' (the same file)"
same "and the input is as it was" "$tmp/ow/x6.bin" "$tmp/ow/x6.orig"
expect "reduce --in - --out G < F (another file)" 0 sh -c 'exec "$@" <"$0"' "$tmp/ow/x6.bin" "$tilec" "${red[@]}" --op sum --in - --out "$tmp/ow/x6-sum.bin"
cp "$rs" "$tmp/ow/stdin.tile"
expect "run - --out B=FILE < FILE" 2 sh -c 'exec "$@" <"$0"' "$tmp/ow/stdin.tile" "$tilec" run - --backend sim --out B="$tmp/ow/stdin.tile"
same "the program read from standard input is untouched" "$tmp/ow/stdin.tile" "$rs"
expect "reduce --in F --out2 F" 2 "$tilec" "${red[@]}" --op argmax --in "$tmp/ow/x6.bin" --out2 "$tmp/ow/x6.bin"
le32 10 20 >"$tmp/ow/init.bin"
expect "reduce --out-init F --out2 F" 2 "$tilec" "${red[@]}" --op aminmax --accumulate --in "$tmp/ow/x6.bin" --out-init "$tmp/ow/init.bin" --out2 "$tmp/ow/init.bin"
has "names --out-init" "$tmp/err" "tilec reduce: --out2 '$tmp/ow/init.bin' would overwrite the input --out-init '$tmp/ow/init.bin' (the same file)"
expect "reduce --accumulate --out-init F --out F (accumulating in place)" 0 "$tilec" "${red[@]}" --op sum --accumulate --in "$tmp/ow/x6.bin" --out-init "$tmp/ow/init.bin" --out "$tmp/ow/init.bin"
le32 16 35 >"$tmp/ow/want.bin"
same "F holds F + the sums" "$tmp/ow/init.bin" "$tmp/ow/want.bin"
expect "reduce --out F --out2 F" 2 "$tilec" "${red[@]}" --op argmax --out "$tmp/ow/s.bin" --out2 "$tmp/ow/s.bin"
has "two outputs, one file" "$tmp/err" "tilec reduce: --out '$tmp/ow/s.bin' and --out2 '$tmp/ow/s.bin' are the same file: the second write would replace the first; give each output its own file"
ln -s s.bin "$tmp/ow/s-link.bin"
expect "reduce --out F --out2 a symlink to F (F not there yet)" 2 "$tilec" "${red[@]}" --op argmax --out "$tmp/ow/s.bin" --out2 "$tmp/ow/s-link.bin"
absent "nothing was written" "$tmp/ow/s.bin"
le32 9 9 >"$tmp/ow/s.bin"
expect "reduce --out F --out2 a symlink to F" 2 "$tilec" "${red[@]}" --op aminmax --out "$tmp/ow/s-link.bin" --out2 "$tmp/ow/s.bin"
expect "reduce --out F --out2 G" 0 "$tilec" "${red[@]}" --op argmax --in "$tmp/ow/x6.bin" --out "$tmp/ow/s.bin" --out2 "$tmp/ow/i.bin" --index-dtype i32
le32 3 6 >"$tmp/ow/want.bin"
same "writes the values" "$tmp/ow/s.bin" "$tmp/ow/want.bin"
# --offsets is an input too: the results never replace it, by name, symlink or hard link,
# and nothing runs (the offsets are not even read before the check)
printf '0 1 3\n' >"$tmp/ow/off.txt"
cp "$tmp/ow/off.txt" "$tmp/ow/off.orig"
ln -s off.txt "$tmp/ow/off-link.txt"
ln "$tmp/ow/off.txt" "$tmp/ow/off-hard.txt"
seg=(reduce --dtype f32 --shape 2x3 --backend sim --repeat 0 --offsets "$tmp/ow/off.txt")
expect "reduce --offsets F --out F" 2 "$tilec" "${seg[@]}" --op sum --out "$tmp/ow/off.txt"
has "is refused: both named, write elsewhere" "$tmp/err" "tilec reduce: --out '$tmp/ow/off.txt' would overwrite the input --offsets '$tmp/ow/off.txt' (the same file), which is read first; write the output elsewhere"
same "and the offsets are as they were" "$tmp/ow/off.txt" "$tmp/ow/off.orig"
expect "reduce --offsets F --out2 F" 2 "$tilec" "${seg[@]}" --op argmax --out2 "$tmp/ow/off.txt"
has "names --out2 and --offsets" "$tmp/err" "tilec reduce: --out2 '$tmp/ow/off.txt' would overwrite the input --offsets '$tmp/ow/off.txt'"
expect "reduce --offsets F --out a symlink to F" 2 "$tilec" "${seg[@]}" --op sum --out "$tmp/ow/off-link.txt"
expect "reduce --offsets F --out a hard link to F" 2 "$tilec" "${seg[@]}" --op sum --out "$tmp/ow/off-hard.txt"
same "the offsets are still as they were" "$tmp/ow/off.txt" "$tmp/ow/off.orig"
expect "reduce --offsets F --out G" 0 "$tilec" "${seg[@]}" --op sum --out "$tmp/ow/seg.bin"
# an output that goes to standard output ("-", /dev/stdout, /dev/fd/1, /proc/self/fd/1) or
# standard error is written into the file the shell opened, not replaced; when that file
# is an input (`1<>F`), the bytes would still go over what was read: refused, as cat
# refuses "input file is output file". The name is compared first, whatever standard
# output or error is. A pipe, a terminal or /dev/null there loses nothing.
for o in - /dev/stdout /dev/fd/1 /proc/self/fd/1; do
    [ "$o" = /proc/self/fd/1 ] && [ ! -e /proc/self/fd/1 ] && continue
    expect "reduce --in F --out $o 1<>F" 2 sh -c 'exec "$@" 1<>"$0"' "$tmp/ow/x6.bin" "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out "$o"
    has "says standard output is the input" "$tmp/err" "tilec reduce: --out '$o' would overwrite the input --in '$tmp/ow/x6.bin' (standard output is that file), which is read first; write the output elsewhere"
    same "and the input is as it was" "$tmp/ow/x6.bin" "$tmp/ow/x6.orig"
done
expect "reduce --in F --out F 2>>F (F is standard error's file)" 2 sh -c 'exec "$@" 2>>"$0"' "$tmp/ow/x6.bin" "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out "$tmp/ow/x6.bin"
head -c "$(wc -c <"$tmp/ow/x6.orig")" "$tmp/ow/x6.bin" >"$tmp/ow/x6.head"
same "the input's bytes are as they were (the message after them)" "$tmp/ow/x6.head" "$tmp/ow/x6.orig"
has "which says so" "$tmp/ow/x6.bin" "tilec reduce: --out '$tmp/ow/x6.bin' would overwrite the input --in '$tmp/ow/x6.bin' (the same file)"
cp "$tmp/ow/x6.orig" "$tmp/ow/x6.bin"
expect "reduce --in F --out /dev/stderr 2>>F" 2 sh -c 'exec "$@" 2>>"$0"' "$tmp/ow/x6.bin" "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out /dev/stderr
has "says standard error is the input" "$tmp/ow/x6.bin" "(standard error is that file)"
cp "$tmp/ow/x6.orig" "$tmp/ow/x6.bin"
expect "reduce --in - --out - <F 1<>F" 2 sh -c 'exec "$@" <"$0" 1<>"$0"' "$tmp/ow/x6.bin" "$tilec" "${red[@]}" --op sum --in - --out -
same "the input is as it was" "$tmp/ow/x6.bin" "$tmp/ow/x6.orig"
le32 6 15 >"$tmp/ow/sum6.bin"
expect "reduce --in F --out - | cat (a pipe)" 0 sh -c '"$@" | cat >"$0"' "$tmp/ow/piped.bin" "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out -
same "the pipe carries the sums" "$tmp/ow/piped.bin" "$tmp/ow/sum6.bin"
expect "reduce --in F --out - >/dev/null" 0 sh -c 'exec "$@" >/dev/null' "$tmp/ow/x6.bin" "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out -
cp "$rs" "$tmp/ow/e.tile"
expect "emit FILE -o - 1<>FILE" 2 sh -c 'exec "$@" 1<>"$0"' "$tmp/ow/e.tile" "$tilec" emit --target cuda "$tmp/ow/e.tile" -o -
has "is refused" "$tmp/err" "tilec emit: -o '-' would overwrite the input FILE '$tmp/ow/e.tile' (standard output is that file), which is read first; write the output elsewhere"
same "and the source is as it was" "$tmp/ow/e.tile" "$rs"
expect "emit - <FILE 1<>FILE (standard output by default)" 2 sh -c 'exec "$@" <"$0" 1<>"$0"' "$tmp/ow/e.tile" "$tilec" emit --target cuda -
has "names standard output" "$tmp/err" "tilec emit: standard output '-' would overwrite the input FILE '-' (standard output is that file)"
same "and the source is as it was" "$tmp/ow/e.tile" "$rs"
expect "run --in A=F --out B=/dev/stdout 1<>F" 2 sh -c 'exec "$@" 1<>"$0"' "$tmp/ow/a.bin" "$tilec" run "$rs" --backend sim --in A="$tmp/ow/a.bin" --out B=/dev/stdout
has "is refused" "$tmp/err" "tilec run: --out B='/dev/stdout' would overwrite the input --in A='$tmp/ow/a.bin' (standard output is that file)"
same "the input is as it was" "$tmp/ow/a.bin" "$tmp/ow/a.orig"
expect "run FILE --out B=- 1<>FILE" 2 sh -c 'exec "$@" 1<>"$0"' "$tmp/ow/e.tile" "$tilec" run "$tmp/ow/e.tile" --backend sim --out B=-
same "the program is as it was" "$tmp/ow/e.tile" "$rs"
# the updates in place stay allowed through standard output: a parameter's own --in, and
# --accumulate's --out-init
le32 7 7 7 7 >"$tmp/ow/b.bin"
expect "run --in B=F --out B=/dev/stdout 1<>F (an update in place)" 0 sh -c 'exec "$@" 1<>"$0"' "$tmp/ow/b.bin" "$tilec" run "$rs" --backend sim --in A="$tmp/ow/a.bin" --in B="$tmp/ow/b.bin" --out B=/dev/stdout
same "F holds B after the run" "$tmp/ow/b.bin" "$tmp/ow/b-want.bin"
le32 10 20 >"$tmp/ow/init.bin"
expect "reduce --accumulate --out-init F --out - 1<>F" 0 sh -c 'exec "$@" 1<>"$0"' "$tmp/ow/init.bin" "$tilec" "${red[@]}" --op sum --accumulate --in "$tmp/ow/x6.bin" --out-init "$tmp/ow/init.bin" --out -
le32 16 35 >"$tmp/ow/want.bin"
same "F holds F + the sums" "$tmp/ow/init.bin" "$tmp/ow/want.bin"

# binary output is never written to a terminal, by whatever name: the destination itself is
# asked (/dev/tty, not only standard output); util-linux `script` runs the command on a
# pseudo-terminal whose bytes it copies to its standard output
if command -v script >/dev/null && script -qec true /dev/null </dev/null >/dev/null 2>&1; then
    in_script() { # NAME WANT_RC CMD... : CMD on a pseudo-terminal, everything it shows in $tmp/tty
        local name=$1 want=$2 line
        shift 2
        line=$(printf '%q ' "$@")
        script -qec "$line" /dev/null </dev/null >"$tmp/tty" 2>&1
        local rc=$?
        if [ "$rc" -eq "$want" ]; then pass=$((pass + 1)); else
            fail=$((fail + 1)); echo "FAIL: $name: exit $rc, wanted $want"; sed 's/^/  | /' "$tmp/tty" | head -5; fi
    }
    no_binary() { # NAME : no NUL byte reached the terminal
        if [ "$(tr -dc '\000' <"$tmp/tty" | wc -c)" -eq 0 ]; then pass=$((pass + 1)); else
            fail=$((fail + 1)); echo "FAIL: $1: raw bytes reached the terminal:"; od -c "$tmp/tty" | head -5; fi
    }
    in_script "reduce --out /dev/tty" 2 "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out /dev/tty
    has "is refused" "$tmp/tty" "tilec reduce: will not write --out's raw tensor bytes to a terminal"
    no_binary "reduce --out /dev/tty"
    in_script "reduce --out2 /dev/tty" 2 "$tilec" "${red[@]}" --op argmax --in "$tmp/ow/x6.bin" --out2 /dev/tty
    no_binary "reduce --out2 /dev/tty"
    in_script "run --out B=/dev/tty" 2 "$tilec" run "$rs" --backend sim --in A="$tmp/a.bin" --out B=/dev/tty
    has "is refused" "$tmp/tty" "tilec run: will not write --out B's raw bytes to a terminal"
    no_binary "run --out B=/dev/tty"
    in_script "compile -o /dev/tty" 2 "$tilec" compile "$rs" --target cuda --arch sm_90 -o /dev/tty
    has "is refused" "$tmp/tty" "tilec compile: will not write a CUBIN (binary) to a terminal"
    ln -s /dev/tty "$tmp/ow/tty-link"
    in_script "reduce --out a symlink to /dev/tty" 2 "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out "$tmp/ow/tty-link"
    no_binary "reduce --out a symlink to /dev/tty"
    in_script "emit -o /dev/tty (text)" 0 "$tilec" emit "$rs" --target cuda -o /dev/tty
    has "is written" "$tmp/tty" "__global__"
    in_script "reduce --out /dev/null on a terminal" 0 "$tilec" "${red[@]}" --op sum --in "$tmp/ow/x6.bin" --out /dev/null
else
    echo "skipped: no util-linux script here to give a pseudo-terminal, so --out /dev/tty is not tried"
fi

# a write of standard output that fails part way (a help or a table longer than stdio's
# buffer) says why, as every other path does, not only that a write failed
for cmd in check fmt explain run emit compile reduce; do full "$cmd --help" "$tilec" "$cmd" --help; done
cat "$root"/examples/*.tile >"$tmp/ow/all.tile"
full "explain --verbose of every example (7 KB)" "$tilec" explain "$tmp/ow/all.tile" --verbose
full "reduce --explain" "$tilec" reduce --op argmax --dtype f32 --shape 8x1000 --backend sim --explain --repeat 0

# a standard output closed before tilec started (>&-) that is given nothing is no failure
# (closing it again fails with EBADF: coreutils' close_stdout allows it); output written
# to it is lost, and that still fails, as /dev/full does above
expect "check ok.tile >&-" 0 sh -c '"$1" check "$2" >&-' sh "$tilec" "$rs"
empty "says nothing" "$tmp/err"
expect "fmt -o OUT ok.tile >&-" 0 sh -c '"$1" fmt -o "$2" "$3" >&-' sh "$tilec" "$tmp/ow/closed.tile" "$rs"
same "writes OUT" "$tmp/ow/closed.tile" "$rs"
expect "explain ok.tile >&- (its text is lost)" 1 sh -c '"$1" explain "$2" >&-' sh "$tilec" "$rs"
has "says why" "$tmp/err" "tilec: cannot write standard output: Bad file descriptor"
expect "reduce --out - >&-" 1 sh -c '"$1" reduce --op sum --dtype f32 --shape 4 --backend sim --out - >&-' sh "$tilec"
has "says why" "$tmp/err" "tilec: cannot write '-': Bad file descriptor"

# a bandwidth is a GPU's: timed calls on the simulator say their time, and that it is the
# CPU's (run.sh's own line: reduce --check --repeat 3, on the simulator here)
expect "reduce --repeat 3 on the simulator" 0 "$tilec" reduce --op sum --dtype f32 --shape 1024x1000 --backend sim --check --repeat 3
has "says the time of the timed calls" "$tmp/out" "per call over 3 calls, simulated on the CPU (no bandwidth)"
if grep -q "GB/s" "$tmp/out"; then fail=$((fail + 1)); echo "FAIL: reduce on the simulator prints a bandwidth:"; cat "$tmp/out"
else pass=$((pass + 1)); fi
"$tilec" reduce --help >"$tmp/help"
has "the help says so" "$tmp/help" "simulator's time is the CPU's, so it has none"

# each --help points an installed user to the man page (an install has no docs/); "the
# worst of them" only where many FILEs are taken; the -h line lines up with the options
"$tilec" --help >"$tmp/help"
has "tilec --help names the man page" "$tmp/help" "Documentation: man tilec, and"
has "and where docs/ is" "$tmp/help" "docs/cli.md in tilec's source tree."
for cmd in check fmt explain run emit compile reduce; do
    "$tilec" "$cmd" --help >"$tmp/help"
    has "$cmd --help names the man page" "$tmp/help" "Documentation: man tilec, and"
    has "$cmd --help says where docs/ is" "$tmp/help" "docs/cli.md in tilec's source tree."
    case $cmd in check | fmt) want=1 ;; *) want=0 ;; esac
    if [ "$(grep -c "worst of them" "$tmp/help")" -eq "$want" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $cmd --help says 'the worst of them' $(grep -c "worst of them" "$tmp/help") times, wanted $want"; fi
    # the column of the -h line's text, and the one most other option lines use
    cols=$(awk '/^  -/ && match($0, /^  [^ ]+( [^ ]+)?  +/) {
            if ($0 ~ /^  -h, --help/) h = RLENGTH + 1; else n[RLENGTH + 1]++ }
        END { for (c in n) if (n[c] > m || (n[c] == m && c + 0 < b)) { m = n[c]; b = c + 0 }; print h, b }' "$tmp/help")
    if [ "${cols% *}" = "${cols#* }" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $cmd --help: the -h line's text starts at column ${cols% *}, the options' at ${cols#* }:"
        grep -- '^  -' "$tmp/help" | tail -3; fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
