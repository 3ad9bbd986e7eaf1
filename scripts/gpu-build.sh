# scripts/gpu-build.sh — sourced by the GPU scripts (gpu-check, gpu-attention, gpu-bits,
# gpu-sanitize, gpu-sharded) so each prints its progress the same way and builds build-gpu/
# the same way. Set gpu_name (the script's name) before sourcing it.
#   say MESSAGE           "NAME: [S s] MESSAGE", S the seconds since the script started
#   beat LABEL CMD...     runs CMD, saying "LABEL: still running" every 30 s; CMD's status
#   build_gpu [TARGET...] meson setup (once) and ninja of build-gpu/ (release, no tests),
#                         a line per step and every 30 s; on failure the errors and 1
#   build_bench           the same for build-bench/ (with bench/bench.cu: -Dbench=enabled)
gpu_t0=$(date +%s)
say() { echo "${gpu_name:-gpu}: [$(( $(date +%s) - gpu_t0 )) s] $*"; }
beat() {
    local label=$1; shift
    "$@" &
    local pid=$! n=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        n=$((n + 1))
        if [ $((n % 30)) -eq 0 ]; then say "$label: still running"; fi
    done
    wait "$pid"
}
build_gpu() { build_tree build-gpu "-Dtests=disabled --buildtype=release" "$@"; }
build_bench() { build_tree build-bench "-Dtests=disabled -Dbench=enabled --buildtype=release"; }
# build_tree DIR "MESON OPTIONS" [TARGET...]
build_tree() {
    local dir=$1 opts=$2 log
    shift 2
    log=$(mktemp -t gpu-build.XXXXXX)
    if [ ! -f "$dir/build.ninja" ]; then
        say "meson setup $dir $opts"
        # shellcheck disable=SC2086 # the options are words
        meson setup "$dir" $opts >"$log" 2>&1 || { tail -n 30 "$log"; return 1; }
    fi
    say "ninja -C $dir${*:+ $*} (a fresh machine takes a few minutes; its output: $log)"
    if ! beat "ninja" sh -c 'log=$1; dir=$2; shift 2; ninja -C "$dir" "$@" >>"$log" 2>&1' sh "$log" "$dir" "$@"; then
        if grep -q '^FAILED: ' "$log"; then sed -n '/^FAILED: /,$p' "$log" | head -n 60; else tail -n 30 "$log"; fi
        return 1
    fi
    say "$dir is built"
}
