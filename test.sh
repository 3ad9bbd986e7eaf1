#!/usr/bin/env bash
# ./test.sh — set up, build, and run every test: the suites in a normal build, the same
# suites again under AddressSanitizer + UndefinedBehaviorSanitizer, an install check (the
# header, library, pkg-config file, CMake package and Python package used by an outside
# program), a build of tilec as a Meson subproject (scripts/subproject-check.sh), the Python
# wheel built, installed into a fresh venv and tested there (scripts/wheel-check),
# valgrind memcheck of the CLI over every example, 30 s of each fuzzer (libFuzzer +
# ASan/UBSan), and the HIP of every example and the kernel matrix compiled for gfx942 and
# gfx1100 by the ROCm 5.7 of a Debian 13 root (scripts/hip-new-archs). Exits non-zero if
# anything fails; ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")"
scripts/setup.sh || exit 1

passed=0
failed=0
# run_suites DIR [MESON TEST OPTIONS...]: meson test in DIR, adding its counts to the totals
run_suites() {
    local log dir=$1
    shift
    log=$(mktemp)
    meson test -C "$dir" --print-errorlogs "$@" 2>&1 | tee "$log"
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
# intercept_tls_get_addr=0: LeakSanitizer's end-of-process scan otherwise crashed its own
# tracer ("Tracer caught signal 11", every run of test_codegen, after all its tests passed)
# walking the dynamic TLS of the threads NVRTC leaves behind: google/sanitizers#1353, the
# workaround its reports give. Leaks are still checked.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# -O1, as AddressSanitizer's documentation advises for a usable speed: test_sim took 182 s at
# -O0 and 86 s at -O1 on a 2-core machine, and the whole pass had outgrown CI's 90 minutes
if scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Doptimization=1; then
    # the sanitizers make every suite several times slower (the cli suite passed 120 s on a
    # busy machine): each limit of tests/meson.build is tripled here, so a loaded machine
    # gives a slow pass, not a red one
    run_suites build-asan --timeout-multiplier 3
else
    echo "sanitizer build failed"; failed=$((failed + 1))
fi

echo "== install check"
if scripts/install-check.sh build; then passed=$((passed + 1)); else echo "install check failed"; failed=$((failed + 1)); fi

# run_check NAME COMMAND...: one more pass or fail; exit 3 means what it needs (a tool, a network) is not available
# here (scripts/setup.sh installs it where the distribution has it) and is a skip
run_check() {
    local name=$1 rc=0
    shift
    "$@" || rc=$?
    if [ "$rc" -eq 0 ]; then passed=$((passed + 1))
    elif [ "$rc" -eq 3 ]; then echo "skipped: $name (what it needs is not available here; its message above says what)"
    else echo "$name failed"; failed=$((failed + 1)); fi
}

echo "== tilec as a Meson subproject (examples/meson-subproject)"
run_check "subproject check" scripts/subproject-check.sh

echo "== the Python wheel: built offline, installed into a fresh venv, its tilec run and the Python suite run against it (scripts/wheel-check)"
run_check "wheel check" scripts/wheel-check

echo "== HIP for gfx942 and gfx1100 with Debian 13's ROCm 5.7 (scripts/hip-new-archs; its root is built once)"
run_check "hip-new-archs" scripts/hip-new-archs build

echo "== valgrind memcheck of the CLI over every example"
run_check "memcheck" scripts/memcheck build

echo "== fuzz smoke: each fuzzer 30 s from its corpus (scripts/fuzz)"
run_check "fuzz" scripts/fuzz 30

echo
echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
