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
has "no arguments shows usage" "$tmp/err" "usage: tilec"
expect "unknown command" 2 "$tilec" frobnicate
has "unknown command is named" "$tmp/err" "unknown command 'frobnicate'"
for cmd in check fmt; do
    expect "$cmd --help" 0 "$tilec" "$cmd" --help
    has "$cmd --help shows usage" "$tmp/out" "usage: tilec $cmd"
    expect "$cmd without FILE" 2 "$tilec" "$cmd"
    expect "$cmd with unknown option" 2 "$tilec" "$cmd" --bogus x.tile
done
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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
