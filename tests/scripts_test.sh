#!/usr/bin/env bash
# scripts_test.sh SOURCE_ROOT — the GPU machine's scripts, checked without a GPU: every bash
# script parses (bash -n) and every Python one compiles; scripts/bench --list names a
# section for every script under scripts/bench.d/ and no other, refuses a word that is not
# a section (exit 2), and runs the sections' self-tests (bench python --selftest and bench
# fused --selftest, which need no GPU, and bench fused-plans --generate-only with build/tilec);
# scripts/gpu-check --list lists its sections and refuses an unknown one (exit 2); and every
# `scripts/NAME` (or `scripts/bench SECTION`) that the docs, the README, the sources and the
# scripts name exists, so a renamed script leaves no stale reference behind.
set -u
root=$1
cd "$root" || exit 1
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

for f in scripts/* scripts/bench.d/*; do
    [ -f "$f" ] || continue
    if head -1 "$f" | grep -q python; then
        /usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f" 2>&1 && ok || bad "$f does not compile"
    elif head -1 "$f" | grep -q bash || [ "${f##*.}" = sh ]; then
        bash -n "$f" 2>&1 && ok || bad "$f does not parse (bash -n)"
    fi
done

listed=$(scripts/bench --list | awk '{print $1}' | sort)
present=$(ls scripts/bench.d | grep -vx __pycache__ | sort)  # python3 -m py_compile of a section leaves one
[ "$listed" = "$present" ] && ok || bad "scripts/bench --list ($(echo $listed)) is not scripts/bench.d/ ($(echo $present))"
scripts/bench no-such-section >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "scripts/bench no-such-section did not exit 2"
out=$(PYTHON=/usr/bin/python3 scripts/bench python --selftest 2>&1)
if [ $? -eq 0 ] && grep -q "python: exit 0" <<<"$out"; then ok; else bad "scripts/bench python --selftest: $out"; fi
out=$(PYTHON=/usr/bin/python3 scripts/bench fused --selftest 2>&1)
if [ $? -eq 0 ] && grep -q "fused: exit 0" <<<"$out"; then ok; else bad "scripts/bench fused --selftest: $out"; fi
# fused-plans writes its programs without a GPU (with build/tilec, when built): every one emits
if [ -x build/tilec ] && [ ! -e build-gpu ]; then
    t=$(mktemp -d)
    out=$(OUT=$t scripts/bench fused-plans --generate-only --cols 1024,65536 2>&1)
    if [ $? -eq 0 ] && grep -q "fused-plans: [1-9][0-9]* kernels" <<<"$out" && [ "$(ls "$t"/fused-plans/*.cu | wc -l)" -ge 60 ]; then ok
    else bad "scripts/bench fused-plans --generate-only: $out"; fi
    rm -rf "$t"
fi

sections=$(scripts/gpu-check --list | awk '/^  [a-z]/ {print $1}')
[ "$(echo $sections)" = "build kernels run attention memcheck racecheck cvt jit first-call jit-sum calibrate fused python torch" ] && ok ||
    bad "scripts/gpu-check --list gave: $(echo $sections)"
scripts/gpu-check no-such-section >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "scripts/gpu-check no-such-section did not exit 2"

# every script the tree names exists
# (words of prose after "scripts/bench", and names in capitals, are not references)
while IFS= read -r ref; do
    name=${ref#scripts/}
    case "$name" in
    bench\ and | bench\ or | bench\ has | bench\ is | bench\ read | bench\ runs | bench\ with | bench\ to | bench\ in | bench\ the | bench\ its | bench\ that | bench\ which) ;;
    *[A-Z]*) [[ "$name" =~ [a-z] ]] || continue
        [ -e "scripts/$name" ] && ok || bad "'$ref' is named (grep -rn '$ref' .) but there is no scripts/$name" ;;
    bench\ *)
        s=${name#bench }
        [ -f "scripts/bench.d/$s" ] && ok || bad "'$ref' is named (grep -rn '$ref' .) but scripts/bench has no section $s" ;;
    *) [ -e "scripts/$name" ] && ok || bad "'$ref' is named (grep -rn '$ref' .) but there is no scripts/$name" ;;
    esac
done < <(grep -rhoE --exclude=scripts_test.sh "scripts/(bench [a-z][a-z0-9-]*|[A-Za-z0-9_.-]*[A-Za-z0-9_])" README.md docs/*.md src tools bench \
    tests/*.sh tests/meson.build scripts meson.build meson_options.txt test.sh run.sh python/tilec 2>/dev/null | sort -u)

echo "scripts_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
