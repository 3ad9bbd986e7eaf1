#!/usr/bin/env bash
# ./test.sh — set up, build, and run every test: the suites in a normal build, the same
# suites again under AddressSanitizer + UndefinedBehaviorSanitizer, and an install check
# (the header, library and pkg-config file used by an outside program). Exits non-zero if
# anything fails; ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")"
scripts/setup.sh || exit 1

passed=0
failed=0
# run_suites DIR: meson test in DIR, adding its counts to the totals
run_suites() {
    local log
    log=$(mktemp)
    meson test -C "$1" --print-errorlogs 2>&1 | tee "$log"
    local ok fail
    ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log")
    fail=$(sed -n 's/^\(Fail\|Timeout\|Unexpected Pass\): *\([0-9]*\).*/\2/p' "$log" | awk '{s += $1} END {print s + 0}')
    passed=$((passed + ${ok:-0}))
    failed=$((failed + ${fail:-0}))
    [ -n "$ok" ] || failed=$((failed + 1)) # no summary: meson itself failed
    rm -f "$log"
}

echo "== build"
if scripts/build.sh build; then run_suites build; else echo "build failed"; failed=$((failed + 1)); fi

echo "== build with AddressSanitizer and UndefinedBehaviorSanitizer"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug; then
    run_suites build-asan
else
    echo "sanitizer build failed"; failed=$((failed + 1))
fi

echo "== install check"
if scripts/install-check.sh build; then passed=$((passed + 1)); else echo "install check failed"; failed=$((failed + 1)); fi

echo
echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
