#!/usr/bin/env bash
# scripts/setup.sh — installs what building and testing tilec needs, only when it is
# missing: meson, ninja, pkg-config and cmocka; cmake (the CMake package and its install
# check) and help2man (the man page); python3-dev (Python.h, for the Python package's
# compiled core); Debian's python3 numpy and pytest (the
# oracle suite, tests/oracle, fails without them); pip, venv and meson-python (the Python
# wheel: pip install ., and scripts/wheel-check); the HIP packages (hipcc, the HIP
# runtime with hiprtc, its builtins and the ROCm device libraries) where the distribution
# has them; clang (libFuzzer) and valgrind for the fuzz and memcheck runs of ./test.sh;
# mmdebstrap, which builds the ROCm 5.7 root of scripts/rocm-root.sh.
# Installing needs root (apt-get update, then apt-get install). Run by ./run.sh and
# ./test.sh; safe to run again.
set -euo pipefail

core=(meson ninja-build pkg-config libcmocka-dev gcc g++ python3-numpy python3-pytest python3-dev cmake help2man
      python3-pip python3-venv python3-mesonpy)
hip=(hipcc libamdhip64-dev libhiprtc-builtins5 rocm-device-libs)
checkers=(clang libclang-rt-14-dev valgrind mmdebstrap) # the fuzzers (clang, its libFuzzer), memcheck, and the
# Debian 13 root of ROCm 5.7 (scripts/rocm-root.sh) that compiles for gfx942 and gfx1100 in ./test.sh

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing_core=()
missing_optional=()
for p in "${core[@]}"; do installed "$p" || missing_core+=("$p"); done
for p in "${hip[@]}" "${checkers[@]}"; do installed "$p" || missing_optional+=("$p"); done

if ((${#missing_core[@]} + ${#missing_optional[@]})); then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        if ((${#missing_core[@]})); then
            echo "setup: missing ${missing_core[*]}; install them (as root: apt-get install ${missing_core[*]})" >&2
            exit 1
        fi
        echo "setup: optional packages missing (${missing_optional[*]}): HIP compilation, the fuzzers, memcheck or the gfx942/gfx1100 compiles will be unavailable" >&2
    else
        echo "setup: installing ${missing_core[*]} ${missing_optional[*]}"
        apt-get update -qq
        want=("${missing_core[@]}")
        for p in "${missing_optional[@]}"; do
            if apt-cache show "$p" >/dev/null 2>&1; then want+=("$p")
            else echo "setup: $p is not in this distribution; what needs it will be skipped" >&2; fi
        done
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
    fi
fi

# CUDA (NVRTC, headers) is found under $CUDA_HOME or /usr/local/cuda; it is optional.
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -d "$cuda" ]; then echo "setup: CUDA toolkit at $cuda"; else echo "setup: no CUDA toolkit at $cuda (optional)"; fi
