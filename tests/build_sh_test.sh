#!/usr/bin/env bash
# build_sh_test.sh ROOT — scripts/build.sh shows what fails: on a tiny Meson project of
# its own (a C file with a deliberate compile error, then a meson.build with a deliberate
# error), the compiler's and meson's messages must appear in build.sh's output, with a
# line saying what is being configured and built; fixed, the same project builds quietly.
set -u
root=$1
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # check NAME CONDITION-STATUS OUTPUT
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1; build.sh printed:"; echo "$3" | sed 's/^/  | /'; fi
}
has() { grep -qF -- "$2" <<<"$1"; }

mkdir "$tmp/proj"
cd "$tmp/proj"
cat >meson.build <<'M'
project('fixture', 'c')
executable('fixture', 'fixture.c')
M
# an undeclared identifier: every C compiler names it in its error
printf 'int main(void) { return tilec_fixture_undeclared; }\n' >fixture.c

out=$("$root/scripts/build.sh" b 2>&1); rc=$?
check "a compile error exits non-zero (exit $rc)" "$([ "$rc" -ne 0 ]; echo $?)" "$out"
check "a compile error shows the compiler's message" "$(has "$out" "tilec_fixture_undeclared" && has "$out" "error"; echo $?)" "$out"
check "a compile error names the log" "$(has "$out" "b/build.log"; echo $?)" "$out"
check "a line says what is configured" "$(has "$out" "build.sh: configuring b/"; echo $?)" "$out"
check "a line says what is built" "$(has "$out" "build.sh: building b/"; echo $?)" "$out"

# the same directory again, still broken: the error again (not only on the first build)
out=$("$root/scripts/build.sh" b 2>&1); rc=$?
check "a second build of the broken file shows the error again (exit $rc)" \
    "$([ "$rc" -ne 0 ] && has "$out" "tilec_fixture_undeclared"; echo $?)" "$out"

# fixed: exit 0, no error text
printf 'int main(void) { return 0; }\n' >fixture.c
out=$("$root/scripts/build.sh" b 2>&1); rc=$?
check "the fixed project builds (exit $rc)" "$([ "$rc" -eq 0 ] && ! has "$out" "error"; echo $?)" "$out"

# a meson.build error: meson's own message
printf "project('fixture', 'c')\nexecutable('fixture', 'missing_file.c')\n" >meson.build
out=$("$root/scripts/build.sh" b2 2>&1); rc=$?
check "a meson error exits non-zero and shows meson's message (exit $rc)" \
    "$([ "$rc" -ne 0 ] && has "$out" "missing_file.c"; echo $?)" "$out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
