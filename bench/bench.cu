// bench.cu — tilec on one GPU, in one process and one run, against the copy ceiling, CUB
// and multi-pass kernels; every target of docs/performance.md as a ratio next to its goal.
//
//   bench [--quick] [--only SECTION] [--tile-variants V1,V2,...] [--csv FILE] [--md FILE]
//                            (--tile-variants: also time those tilec variants, forced, in
//                             the tile matrix where they apply; never counted as peers)
//   bench ... --costs FILE   (the tile matrix also times tilec's own choice under the cost
//                             model's constants of FILE, `tilec calibrate -o FILE`, in each
//                             case where that plan differs from the defaults', and counts
//                             those cases and what each measures; never counted as peers)
//   bench --jit-child        (run by bench itself: a new process's first call, from the
//                             disk cache the parent filled)
//   bench --tile-sources DIR [--arch sm_XY]   (no GPU: writes the tile matrix's NVRTC
//                             sources, tilec's funcs and the peers, into DIR)
//   bench --fragment-sources DIR [--arch sm_XY]   (no GPU: the same for the fragments
//                             part, DIR/fragments.cu)
//
// Every case is checked against a double-precision CPU reference before it is timed and
// run twice more to see that it gives the same bits. Timing is CUDA events around batches
// of launches (about 5 ms each), the median of 7 batches after a warm-up; inputs smaller
// than L2 are rotated among copies that together exceed it. Effective bandwidth is
// (input bytes + output bytes) / time of one reduction.
//
// Sections: the copy ceiling; whole arrays (sum, max, min, 2^16 to 2^30) against CUB
// DeviceReduce; rows against CUB DeviceSegmentedReduce (fixed-size segments); columns;
// f16 and bf16; tiles (clock64 constants for a cost model; tilec funcs, its own choice,
// beside CUB WarpReduce / BlockReduce and hand-written loops on the same tiles in one
// clock64 harness that NVRTC compiles with them, at 1 and 4 CTAs a multiprocessor; kernels
// that stream tiles global -> shared -> reduce); fragments (row max and sum of
// mma.sync and wgmma accumulators in registers beside FlashAttention-2/3's, column sums,
// a swizzled shared tile beside padded ones, in the same clock64 harness); multipass (a
// whole array reduced by relaunching a 512-elements-a-CTA kernel on its partials, two
// tilec programs); the JIT's latencies. Then the targets table. A
// progress line per case goes to stderr.
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

#include "tilec.h"

#define CUDA(call)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                       \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

static tilec_ctx *ctx;
static FILE *csv;
static bool quick;
static std::vector<std::string> tile_variants; // --tile-variants a,b: also time these forced
static char arch[16];
static double copy_tbs;                      // the ceiling, measured first
static std::map<std::string, double> f32_tbs; // tilec's f32 bandwidth by shape, for the 16-bit goals
static bool all_deterministic = true;
static int cases_wrong = 0;

static double now_s() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}
static double t_start;

static void progress(const std::string &what) {
    std::fprintf(stderr, "bench: %6.1f s  %s\n", now_s() - t_start, what.c_str());
}

static void tilec_ok(tilec_status st, const char *what) {
    if (st != TILEC_OK) {
        std::fprintf(stderr, "%s: %s\n%s", what, tilec_status_name(st), tilec_diag_text(ctx));
        std::exit(1);
    }
}

// ---- targets ---------------------------------------------------------------------------

struct Target {
    std::string what, measured, goal;
    double ratio; // measured / goal: >= 1 meets it
    std::string note;
};
static std::vector<Target> targets;

static void target(const std::string &what, const std::string &measured, const std::string &goal, double ratio,
                   const std::string &note = "") {
    targets.push_back({what, measured, goal, ratio, note});
}

static std::string fmt(const char *f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

// ---- timing ----------------------------------------------------------------------------

// Median time in ms of one call of fn(i), i cycling over `copies` inputs.
template <class F> static double time_ms(F fn, int copies) {
    cudaEvent_t a, b;
    CUDA(cudaEventCreate(&a));
    CUDA(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) fn(i % copies); // warm-up (and the JIT's first call)
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaEventRecord(a));
    fn(0);
    CUDA(cudaEventRecord(b));
    CUDA(cudaEventSynchronize(b));
    float one = 0;
    CUDA(cudaEventElapsedTime(&one, a, b));
    int per = std::max(1, std::min(2000, (int)(5.0 / std::max(one, 0.001f)))); // ~5 ms a batch
    std::vector<double> batches;
    for (int k = 0; k < 7; k++) {
        CUDA(cudaEventRecord(a));
        for (int i = 0; i < per; i++) fn(i % copies);
        CUDA(cudaEventRecord(b));
        CUDA(cudaEventSynchronize(b));
        float ms = 0;
        CUDA(cudaEventElapsedTime(&ms, a, b));
        batches.push_back(ms / per);
    }
    CUDA(cudaGetLastError());
    CUDA(cudaEventDestroy(a));
    CUDA(cudaEventDestroy(b));
    std::sort(batches.begin(), batches.end());
    return batches[3];
}

// Copies of an input that together exceed L2 (60 MB on an H200), for rotation.
static int copies_for(size_t bytes) {
    return (int)std::min<size_t>(16, std::max<size_t>(1, (256u << 20) / std::max<size_t>(bytes, 1)));
}

static double row(const char *group, const std::string &name, const char *impl, double ms, double bytes,
                  const char *note) {
    double tbs = bytes / (ms * 1e-3) / 1e12;
    std::printf("  %-8s %-26s %-22s %9.4f ms  %6.3f TB/s  %s\n", group, name.c_str(), impl, ms, tbs, note);
    if (csv) std::fprintf(csv, "%s,%s,%s,%.6f,%.4f,TB/s\n", group, name.c_str(), impl, ms, tbs);
    std::fflush(stdout);
    return tbs;
}

// ---- data and references ---------------------------------------------------------------

// Uniform in [-1, 1): negatives, no zeros to hide unwritten outputs.
static double draw(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1p-53 * 2.0 - 1.0;
}

// op over axis (1: each row; 0: each column) of a rows x cols array, in double; mag gets
// the sum of magnitudes (the scale of a sum's rounding).
template <class T, class Conv>
static std::vector<double> reference(const std::vector<T> &h, long long rows, long long cols, int axis, tilec_op op,
                                     std::vector<double> *mag, Conv conv) {
    long long n_out = axis == 1 ? rows : cols;
    // the three ops this benchmark times (scripts/bench ops times the others against torch)
    if (op != TILEC_OP_SUM && op != TILEC_OP_MAX && op != TILEC_OP_MIN) {
        std::fprintf(stderr, "bench: no reference for %s\n", tilec_op_name(op));
        std::exit(1);
    }
    std::vector<double> out(n_out, op == TILEC_OP_SUM ? 0.0 : op == TILEC_OP_MAX ? -INFINITY : INFINITY);
    mag->assign(n_out, 0.0);
    for (long long r = 0; r < rows; r++)
        for (long long c = 0; c < cols; c++) {
            double x = conv(h[r * cols + c]);
            long long o = axis == 1 ? r : c;
            if (op == TILEC_OP_SUM) out[o] += x, (*mag)[o] += std::fabs(x);
            else if (op == TILEC_OP_MAX) out[o] = std::max(out[o], x);
            else out[o] = std::min(out[o], x);
        }
    return out;
}

// Sums within rel of their magnitude; max and min exact.
static bool matches(const std::vector<double> &got, const std::vector<double> &want, const std::vector<double> &mag,
                    tilec_op op, double rel) {
    for (size_t i = 0; i < got.size(); i++) {
        double tol = op == TILEC_OP_SUM ? rel * mag[i] : 0.0;
        if (!(std::fabs(got[i] - want[i]) <= tol)) {
            std::fprintf(stderr, "    mismatch at %zu: got %.9g want %.9g\n", i, got[i], want[i]);
            return false;
        }
    }
    return true;
}

// A rows x cols array reduced along one axis (0: columns, 1: rows).
static tilec_reduce_desc desc_2d(tilec_op op, tilec_dtype dt, long long rows, long long cols, int axis) {
    tilec_reduce_desc d = {};
    d.op = op;
    d.dtype = dt;
    d.rank = 2;
    d.shape[0] = rows;
    d.shape[1] = cols;
    d.naxes = 1;
    d.axes[0] = axis;
    return d;
}

static std::string case_name(long long rows, long long cols, int axis, tilec_op op) {
    char name[64];
    if (rows == 1) std::snprintf(name, sizeof name, "%s 2^%d", tilec_op_name(op), (int)std::log2((double)cols));
    else std::snprintf(name, sizeof name, "%s %lldx%lld", axis ? "rows" : "cols", rows, cols);
    return name;
}

// One reduction over rows x cols of dtype T (axis 1: rows; 0: columns; rows == 1: the
// whole array): tilec_reduce, checked, run again for determinism, timed; then CUB where
// CUB has the operation (f32). Returns {tilec TB/s, CUB TB/s or 0}.
template <class T>
static std::pair<double, double> bench_case(const char *group, tilec_dtype dt, long long rows, long long cols, int axis,
                                            tilec_op op) {
    size_t n = (size_t)rows * cols, n_out = axis == 1 ? rows : cols, es = sizeof(T);
    std::string name = case_name(rows, cols, axis, op);
    if (dt != TILEC_F32) name = std::string(tilec_dtype_name(dt)) + " " + name;
    progress(std::string(group) + " " + name);
    std::vector<T> h(n);
    uint64_t seed = (uint64_t)(rows * 31 + cols + op);
    auto conv = [&](T x) -> double {
        if constexpr (sizeof(T) == 2) return dt == TILEC_F16 ? tilec_f16_to_double(x) : tilec_bf16_to_double(x);
        else return (double)x;
    };
    for (auto &x : h) {
        double f = draw(&seed);
        if constexpr (sizeof(T) == 2) x = dt == TILEC_F16 ? tilec_f16_from_double(f) : tilec_bf16_from_double(f);
        else x = (T)f;
    }
    int copies = copies_for(n * es);
    std::vector<T *> d_in(copies);
    for (int i = 0; i < copies; i++) {
        CUDA(cudaMalloc(&d_in[i], n * es));
        CUDA(cudaMemcpy(d_in[i], h.data(), n * es, cudaMemcpyHostToDevice));
    }
    T *d_out;
    CUDA(cudaMalloc(&d_out, n_out * es));
    std::vector<double> mag, want = reference(h, rows, cols, axis, op, &mag, conv), got(n_out);
    std::vector<T> out(n_out), again(n_out);
    double rel = es == 2 ? 1e-2 : 1e-5; // 16-bit results round once, to 8 or 11 bits
    auto fetch = [&](std::vector<T> &v) {
        CUDA(cudaMemcpy(v.data(), d_out, n_out * es, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n_out; i++) got[i] = conv(v[i]);
    };
    double bytes = (double)(n + n_out) * es;
    tilec_reduce_desc d = desc_2d(op, dt, rows, cols, axis);
    CUDA(cudaMemset(d_out, 0xff, n_out * es)); // NaN: an unwritten output cannot pass
    tilec_ok(tilec_reduce(ctx, &d, d_in[0], d_out), "tilec_reduce");
    fetch(out);
    bool ok = matches(got, want, mag, op, rel);
    bool same = true;
    for (int k = 0; k < 2; k++) {
        tilec_ok(tilec_reduce(ctx, &d, d_in[0], d_out), "tilec_reduce");
        fetch(again);
        same = same && std::memcmp(out.data(), again.data(), n_out * es) == 0;
    }
    all_deterministic = all_deterministic && same;
    cases_wrong += !ok;
    double t_tilec = time_ms([&](int i) { tilec_reduce(ctx, &d, d_in[i], d_out); }, copies);
    double tilec_tbs = row(group, name, "tilec", t_tilec, bytes, !ok ? "WRONG" : same ? "checked, same bits x3" : "checked, BITS DIFFER");
    double cub_tbs = 0;
    if constexpr (sizeof(T) == 4) {
        void *tmp = nullptr;
        size_t tmp_bytes = 0;
        int *d_offs = nullptr;
        auto whole = [&](int i) {
            if (op == TILEC_OP_SUM) cub::DeviceReduce::Sum(tmp, tmp_bytes, d_in[i], d_out, (int)n);
            else if (op == TILEC_OP_MAX) cub::DeviceReduce::Max(tmp, tmp_bytes, d_in[i], d_out, (int)n);
            else cub::DeviceReduce::Min(tmp, tmp_bytes, d_in[i], d_out, (int)n);
        };
        auto segmented = [&](int i) {
            cub::DeviceSegmentedReduce::Sum(tmp, tmp_bytes, d_in[i], d_out, (int)rows, d_offs, d_offs + 1);
        };
        auto run_cub = [&](auto fn, const char *impl) {
            fn(0);
            CUDA(cudaMalloc(&tmp, tmp_bytes));
            CUDA(cudaMemset(d_out, 0xff, n_out * es));
            fn(0);
            fetch(out);
            bool cub_ok = matches(got, want, mag, op, rel);
            double t = time_ms(fn, copies);
            cub_tbs = row(group, name, impl, t, bytes, cub_ok ? "checked" : "WRONG");
            std::printf("  %-8s %-26s tilec speed-up over CUB %.2fx\n", group, name.c_str(), t / t_tilec);
        };
        if (rows == 1) run_cub(whole, "CUB DeviceReduce");
        else if (axis == 1 && op == TILEC_OP_SUM) {
            std::vector<int> offs(rows + 1);
            for (long long r = 0; r <= rows; r++) offs[r] = (int)(r * cols);
            CUDA(cudaMalloc(&d_offs, (rows + 1) * sizeof(int)));
            CUDA(cudaMemcpy(d_offs, offs.data(), (rows + 1) * sizeof(int), cudaMemcpyHostToDevice));
            run_cub(segmented, "CUB SegmentedReduce");
            CUDA(cudaFree(d_offs));
        }
        if (tmp) CUDA(cudaFree(tmp));
    }
    for (auto p : d_in) CUDA(cudaFree(p));
    CUDA(cudaFree(d_out));
    return {tilec_tbs, cub_tbs};
}

// ---- whole arrays, rows, columns, 16-bit -----------------------------------------------

static void bench_whole() {
    int top = quick ? 26 : 30;
    for (int e = 16; e <= top; e += 2)
        for (int op = 0; op < 3; op++) {
            auto r = bench_case<float>("whole", TILEC_F32, 1, 1ll << e, 1, (tilec_op)op);
            std::string what = std::string(tilec_op_name((tilec_op)op)) + " 2^" + std::to_string(e) + ", speed-up over CUB";
            double speedup = r.first / r.second;
            if (e <= 22) target(what, fmt("%.2fx", speedup), ">= 1.2x", speedup / 1.2);
            else if (e >= 26) target(what, fmt("%.2fx", speedup), ">= 1.0x", speedup / 1.0);
            if (e == 30) target(what.substr(0, what.find(',')) + ", bandwidth", fmt("%.2f TB/s", r.first), ">= 4.3 TB/s", r.first / 4.3);
            if (op == 0) f32_tbs[case_name(1, 1ll << e, 1, TILEC_OP_SUM)] = r.first;
        }
}

static void bench_rows() {
    static const struct { long long r, c; double goal; } shapes[] = {
        {1048576, 32, 3.5}, {262144, 128, 3.8}, {65536, 1024, 4.2}, {16384, 4096, 4.2},
        {4096, 16384, 4.2}, {1024, 65536, 4.2}, {64, 4194304, 4.2}};
    for (auto &s : shapes) {
        auto r = bench_case<float>("rows", TILEC_F32, s.r, s.c, 1, TILEC_OP_SUM);
        std::string name = case_name(s.r, s.c, 1, TILEC_OP_SUM);
        f32_tbs[name] = r.first;
        target(name, fmt("%.2f TB/s", r.first) + fmt(" (%.1fx CUB)", r.first / r.second), fmt(">= %.1f TB/s", s.goal),
               r.first / s.goal);
    }
}

static void bench_cols() {
    // the targets' four shapes, then the row shapes transposed
    static const struct { long long r, c; double goal; } shapes[] = {
        {8192, 8192, 3.5}, {1048576, 32, 3.5}, {65536, 1024, 3.5}, {32, 1048576, 3.5},
        {128, 262144, 0}, {1024, 65536, 0}, {4096, 16384, 0}, {16384, 4096, 0}, {4194304, 64, 0}};
    for (auto &s : shapes) {
        if (quick && s.goal == 0) continue;
        auto r = bench_case<float>("cols", TILEC_F32, s.r, s.c, 0, TILEC_OP_SUM);
        std::string name = case_name(s.r, s.c, 0, TILEC_OP_SUM);
        f32_tbs[name] = r.first;
        if (s.goal) target(name, fmt("%.2f TB/s", r.first), fmt(">= %.1f TB/s", s.goal), r.first / s.goal);
    }
}

static void bench_16() {
    static const struct { long long r, c; int axis; } shapes[] = {
        {1, 1ll << 26, 1}, {1048576, 32, 1}, {65536, 1024, 1}, {8192, 8192, 0}, {1048576, 32, 0}};
    for (tilec_dtype dt : {TILEC_F16, TILEC_BF16})
        for (auto &s : shapes) {
            auto r = bench_case<uint16_t>("16-bit", dt, s.r, s.c, s.axis, TILEC_OP_SUM);
            std::string f32 = case_name(s.r, s.c, s.axis, TILEC_OP_SUM);
            double base = f32_tbs.count(f32) ? f32_tbs[f32] : 0;
            if (base > 0)
                target(std::string(tilec_dtype_name(dt)) + " " + f32 + ", bytes/s of f32's", fmt("%.0f%%", 100 * r.first / base),
                       ">= 90%", r.first / base / 0.9, fmt("f32: %.2f TB/s", base));
        }
}

// ---- tiles -----------------------------------------------------------------------------
//
// Three parts, run in this order by `--only tiles`:
//   constants  clock64 microbenchmarks of the numbers a cost model needs (latencies of
//              dependent shared loads, shuffles, adds; barriers; shared-memory and shuffle
//              throughput with 4 CTAs a multiprocessor)
//   tile       a tile in shared memory, loaded once, reduced `reps` times between two
//              clock64() reads: tilec's own choice (a `func` emitted by tilec_emit) beside
//              peers written as a user would (CUB WarpReduce / BlockReduce, hand-written
//              loops), every one checked against a double-precision reference, at one and
//              at four CTAs a multiprocessor
//   stream     kernels that stream tiles global -> shared -> reduce -> global, a tile a CTA,
//              beside the copy ceiling

struct Module {
    cudaLibrary_t lib = nullptr;
    cudaKernel_t kernel(const char *name) {
        cudaKernel_t k;
        CUDA(cudaLibraryGetKernel(&k, lib, name));
        return k;
    }
};

// Where NVRTC finds CUB (CUDA_HOME, else CUDA_PATH, else /usr/local/cuda).
static std::string cuda_home() {
    const char *h = std::getenv("CUDA_HOME");
    if (!h || !*h) h = std::getenv("CUDA_PATH");
    return h && *h ? h : "/usr/local/cuda";
}

// NVRTC, for the GPU's own sm_XY, with CUB on the include path: a cubin, or empty with
// the log. Touches no CUDA state, so several run at once on threads of their own.
static std::vector<char> nvrtc_cubin(const std::string &src, std::string *log) {
    nvrtcProgram p;
    nvrtcCreateProgram(&p, src.c_str(), "tiles.cu", 0, nullptr, nullptr);
    std::string opt = std::string("--gpu-architecture=") + arch;
    std::string inc1 = "-I" + cuda_home() + "/include/cccl", inc2 = "-I" + cuda_home() + "/include";
    const char *opts[] = {opt.c_str(), "--std=c++17", "-default-device", inc1.c_str(), inc2.c_str()};
    std::vector<char> cubin;
    if (nvrtcCompileProgram(p, 5, opts) != NVRTC_SUCCESS) {
        size_t n;
        nvrtcGetProgramLogSize(p, &n);
        log->assign(n, '\0');
        nvrtcGetProgramLog(p, &(*log)[0]);
    } else {
        size_t n;
        nvrtcGetCUBINSize(p, &n);
        cubin.resize(n);
        nvrtcGetCUBIN(p, cubin.data());
    }
    nvrtcDestroyProgram(&p);
    return cubin;
}

static Module load_cubin(const std::vector<char> &cubin) {
    Module m;
    CUDA(cudaLibraryLoadData(&m.lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    return m;
}

// A tilec program from text: parsed (in context c, the default one unless given), or an
// empty pointer with the reason.
static tilec_program *parse(const std::string &text, std::string *why, tilec_ctx *c = nullptr) {
    if (!c) c = ctx;
    tilec_program *p = nullptr;
    if (tilec_parse(c, "bench.tile", text.data(), text.size(), &p) != TILEC_OK) {
        *why = tilec_diag_text(c);
        return nullptr;
    }
    return p;
}

// --costs FILE: a context that plans with the cost model's constants of FILE (tilec
// calibrate -o FILE), beside the default one: the tile matrix times tilec's choice under
// them too, where it differs
static tilec_ctx *ctx_cal = nullptr;
static void load_costs(const char *path) {
    FILE *f = std::fopen(path, "rb");
    char text[TILEC_COSTS_MAX_BYTES + 1];
    size_t n = f ? std::fread(text, 1, sizeof text, f) : 0;
    if (f) std::fclose(f);
    tilec_open(&ctx_cal);
    if (!f || n > TILEC_COSTS_MAX_BYTES || tilec_costs_load(ctx_cal, path, text, n) != TILEC_OK) {
        std::fprintf(stderr, "bench: --costs %s: %s\n", path, f ? tilec_diag_text(ctx_cal) : "cannot be read");
        std::exit(2);
    }
}

// the text of func `name` in emitted source, its name blanked (to compare two plans)
static std::string func_body(const std::string &src, const std::string &name) {
    size_t at = src.find("void " + name + "(");
    if (at == std::string::npos) return "";
    size_t end = src.find("\n}\n", at);
    std::string b = src.substr(at + 5 + name.size(), end == std::string::npos ? std::string::npos : end - at - 5 - name.size());
    return b;
}

static Module tilec_module(const std::string &text) {
    std::string why;
    tilec_program *p = parse(text, &why);
    if (!p) {
        std::fprintf(stderr, "bench: %s", why.c_str());
        std::exit(1);
    }
    tilec_target t = {TILEC_BACKEND_CUDA, arch, 32};
    void *bin;
    size_t n;
    tilec_ok(tilec_compile(p, &t, &bin, &n), "tilec_compile");
    Module m;
    CUDA(cudaLibraryLoadData(&m.lib, bin, nullptr, nullptr, 0, nullptr, nullptr, 0));
    tilec_free(bin);
    tilec_program_free(p);
    return m;
}

static void launch(cudaKernel_t k, long long grid, int threads, void **args) {
    CUDA(cudaLaunchKernel((const void *)k, dim3((unsigned)grid), dim3((unsigned)threads), args, 0, 0));
}

static std::vector<float> random_floats(size_t n, uint64_t seed) {
    std::vector<float> h(n);
    for (auto &x : h) x = (float)draw(&seed);
    return h;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// ---- constants: what a cost model needs, measured with clock64 --------------------------

enum { CHAIN = 1024 };

// a dependent chain of 4-byte shared loads: each load's value is the next one's byte offset
__global__ void c_lds4_chain(long long *cyc, int *sink) {
    __shared__ __align__(16) int s[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = ((i + 33) & 1023) * 4;
    __syncthreads();
    if (threadIdx.x) return;
    int j = 0;
    const char *b = (const char *)s;
    long long t0 = clock64();
#pragma unroll 16
    for (int k = 0; k < CHAIN; k++) j = *(const int *)(b + j);
    long long t1 = clock64();
    cyc[0] = t1 - t0;
    sink[0] = j;
}

// the same with 16-byte loads (the offset in the vector's first word)
__global__ void c_lds16_chain(long long *cyc, int *sink) {
    __shared__ __align__(16) int4 s[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = make_int4(((i + 33) & 1023) * 16, i, i, i);
    __syncthreads();
    if (threadIdx.x) return;
    int j = 0;
    const char *b = (const char *)s;
    long long t0 = clock64();
#pragma unroll 16
    for (int k = 0; k < CHAIN; k++) {
        int4 v = *(const int4 *)(b + j);
        j = v.x;
    }
    long long t1 = clock64();
    cyc[0] = t1 - t0;
    sink[0] = j;
}

// a dependent chain of __shfl_xor_sync (one full warp)
__global__ void c_shfl_chain(long long *cyc, int *sink) {
    float x = (float)threadIdx.x;
    long long t0 = clock64();
#pragma unroll 4
    for (int k = 0; k < CHAIN / 4; k++) {
        x = __shfl_xor_sync(0xffffffffu, x, 1);
        x = __shfl_xor_sync(0xffffffffu, x, 2);
        x = __shfl_xor_sync(0xffffffffu, x, 4);
        x = __shfl_xor_sync(0xffffffffu, x, 8);
    }
    long long t1 = clock64();
    if (threadIdx.x == 0) cyc[0] = t1 - t0;
    if (x == 12345.f) sink[0] = 1;
}

// a dependent chain of f32 adds (y is not known to the compiler: nothing folds)
__global__ void c_fadd_chain(long long *cyc, int *sink, float y) {
    float x = (float)threadIdx.x;
    long long t0 = clock64();
#pragma unroll 16
    for (int k = 0; k < CHAIN; k++) x = x + y;
    long long t1 = clock64();
    if (threadIdx.x == 0) cyc[0] = t1 - t0;
    if (x == 12345.f) sink[0] = 1;
}

// __syncthreads() back to back: the cost of one barrier with blockDim.x / 32 warps
__global__ void c_sync(long long *cyc) {
    __syncthreads();
    long long t0 = clock64();
#pragma unroll 16
    for (int k = 0; k < CHAIN; k++) __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0) cyc[0] = t1 - t0;
}

// shared-memory throughput: every warp of the CTA reads conflict-free rows of W bytes a
// lane (a 4-byte warp load is one 128-byte wavefront, a 16-byte one four), 8 independent
// loads an iteration; the CTA's time is read after a barrier that waits for all warps
template <int W> __global__ void c_lds_tp(long long *cyc, int *sink, int iters) {
    __shared__ __align__(16) int s[8192]; // 32 KB: 4 CTAs fit a multiprocessor
    for (int i = threadIdx.x; i < 8192; i += blockDim.x) s[i] = i * 7;
    __syncthreads();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned acc = 0;
    long long t0 = clock64();
    for (int k = 0; k < iters; k++) {
#pragma unroll
        for (int u = 0; u < 8; u++) {
            int row = (k * 8 + u + w) & (W == 4 ? 255 : 63); // 256 rows of 128 B, or 64 of 512 B
            if constexpr (W == 4) acc ^= (unsigned)s[row * 32 + lane];
            else {
                int4 v = ((const int4 *)s)[row * 32 + lane];
                acc ^= (unsigned)(v.x ^ v.y ^ v.z ^ v.w);
            }
        }
    }
    __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
    if (acc == 0x9e3779b9u) sink[0] = (int)acc;
}

// shuffle throughput: 8 independent chains a thread, every warp of the CTA
__global__ void c_shfl_tp(long long *cyc, int *sink, int iters) {
    float a[8];
    for (int u = 0; u < 8; u++) a[u] = (float)(threadIdx.x + u);
    __syncthreads();
    long long t0 = clock64();
    for (int k = 0; k < iters; k++) {
#pragma unroll
        for (int u = 0; u < 8; u++) a[u] = __shfl_xor_sync(0xffffffffu, a[u], 1 + (u & 3));
    }
    __syncthreads();
    long long t1 = clock64();
    if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
    float t = 0;
    for (int u = 0; u < 8; u++) t += a[u];
    if (t == 12345.f) sink[0] = 1;
}

static std::map<std::string, double> constants; // by name, for the docs

static void constant(const char *name, double value, const char *what) {
    constants[name] = value;
    std::printf("  constant %-28s %8.2f cycles   %s\n", name, value, what);
    if (csv) std::fprintf(csv, "constant,%s,,,%.3f,cycles\n", name, value);
    std::fflush(stdout);
}

static void bench_constants() {
    progress("tile constants");
    int sms = 0;
    CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    long long *d_cyc;
    int *d_sink;
    CUDA(cudaMalloc(&d_cyc, 4 * sms * 8));
    CUDA(cudaMalloc(&d_sink, 4));
    auto one = [&](auto fn) { // the smallest of 5 runs of a single-CTA kernel, cycles a step
        long long best = -1;
        for (int k = 0; k < 5; k++) {
            fn();
            CUDA(cudaDeviceSynchronize());
            long long c;
            CUDA(cudaMemcpy(&c, d_cyc, 8, cudaMemcpyDeviceToHost));
            if (best < 0 || c < best) best = c;
        }
        return (double)best / CHAIN;
    };
    constant("lds4_latency", one([&] { c_lds4_chain<<<1, 32>>>(d_cyc, d_sink); }), "a dependent 4-byte shared load");
    constant("lds16_latency", one([&] { c_lds16_chain<<<1, 32>>>(d_cyc, d_sink); }), "a dependent 16-byte shared load");
    constant("shfl_latency", one([&] { c_shfl_chain<<<1, 32>>>(d_cyc, d_sink); }), "a dependent __shfl_xor_sync");
    constant("fadd_latency", one([&] { c_fadd_chain<<<1, 32>>>(d_cyc, d_sink, 1.0f); }), "a dependent f32 add");
    constant("sync_4warps", one([&] { c_sync<<<1, 128>>>(d_cyc); }), "a __syncthreads() of 4 warps, back to back");
    constant("sync_8warps", one([&] { c_sync<<<1, 256>>>(d_cyc); }), "a __syncthreads() of 8 warps, back to back");
    // throughputs: 4 CTAs of 8 warps a multiprocessor, all loading or shuffling at once
    const int iters = 1024, ctas = 4 * sms;
    auto many = [&](auto fn) { // the median CTA's cycles, of the best of 3 runs
        double best = -1;
        for (int k = 0; k < 3; k++) {
            fn();
            CUDA(cudaDeviceSynchronize());
            std::vector<long long> c(ctas);
            CUDA(cudaMemcpy(c.data(), d_cyc, ctas * 8, cudaMemcpyDeviceToHost));
            std::sort(c.begin(), c.end());
            if (best < 0 || c[ctas / 2] < best) best = (double)c[ctas / 2];
        }
        return best;
    };
    int fit = 0;
    CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, c_lds_tp<4>, 256, 0));
    double per_sm = 4.0 * 8 * iters * 8; // warp loads (or shuffles) a multiprocessor
    double c4 = many([&] { c_lds_tp<4><<<ctas, 256>>>(d_cyc, d_sink, iters); });
    double c16 = many([&] { c_lds_tp<16><<<ctas, 256>>>(d_cyc, d_sink, iters); });
    double cs = many([&] { c_shfl_tp<<<ctas, 256>>>(d_cyc, d_sink, iters); });
    constant("lds4_cycles_per_wavefront", c4 / per_sm, "conflict-free 4-byte warp loads, 4 CTAs x 8 warps a SM");
    constant("lds16_cycles_per_wavefront", c16 / (per_sm * 4), "conflict-free 16-byte warp loads (4 wavefronts each)");
    constant("shfl_cycles_per_shuffle", cs / per_sm, "warp-wide __shfl_xor_sync, 4 CTAs x 8 warps a SM");
    std::printf("  constant %-28s %8.2f per cycle a SM (the inverse)%s\n", "shfl_throughput", per_sm / cs,
                fit < 4 ? "  (fewer than 4 CTAs fit: the throughputs are per CTA count that fit)" : "");
    if (csv) std::fprintf(csv, "constant,shfl_throughput,,,%.3f,shuffles per cycle per SM\n", per_sm / cs);
    CUDA(cudaFree(d_cyc));
    CUDA(cudaFree(d_sink));
}

// ---- the tile matrix --------------------------------------------------------------------

// The peers, compiled by NVRTC into the same modules as tilec's funcs and the harness: what
// a user of CUB, or of a hand-written loop, would put in a kernel. Every one folds in f32
// (16-bit data converted as it is read) and rounds once at the store; max is max.NaN as
// tilec's (NaN propagates), sum a plain add.
static const char *peer_prelude = R"PB(
#include <cub/warp/warp_reduce.cuh>
#include <cub/block/block_reduce.cuh>
typedef unsigned short pb_u16;
template <int DT> struct pb_t;
template <> struct pb_t<0> {
  typedef float S;
  static __device__ __forceinline__ float f(float x) { return x; }
  static __device__ __forceinline__ float st(float x) { return x; }
  static __device__ __forceinline__ float nan() { return __int_as_float(0x7fffffff); }
};
template <> struct pb_t<1> {
  typedef pb_u16 S;
  static __device__ __forceinline__ float f(unsigned h) { float r; asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"((pb_u16)h)); return r; }
  static __device__ __forceinline__ pb_u16 st(float x) { pb_u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h; }
  static __device__ __forceinline__ pb_u16 nan() { return 0xffff; }
};
template <> struct pb_t<2> {
  typedef pb_u16 S;
  static __device__ __forceinline__ float f(unsigned h) { return __uint_as_float((h & 0xffffu) << 16); }
  static __device__ __forceinline__ pb_u16 st(float x) { pb_u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h; }
  static __device__ __forceinline__ pb_u16 nan() { return 0xffff; }
};
template <int DT> using pb_s = typename pb_t<DT>::S;
template <int OP> __device__ __forceinline__ float pb_op(float a, float b) {
  if constexpr (OP == 0) return a + b;
  else { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
}
template <int OP> __device__ __forceinline__ float pb_id() { return OP == 0 ? 0.0f : __int_as_float(0xff800000); }
template <int OP> struct pb_fn { __device__ __forceinline__ float operator()(float a, float b) const { return pb_op<OP>(a, b); } };
#define PB_SYNC(CTA) do { if constexpr (CTA) __syncthreads(); else __syncwarp(); } while (0)

// V consecutive elements at p (aligned to V elements: one load of 4 * V or 2 * V bytes), in f32
template <int DT, int V> __device__ __forceinline__ void pb_unpack(const pb_s<DT> *p, float *x) {
  if constexpr (DT == 0) {
    if constexpr (V == 1) x[0] = p[0];
    else if constexpr (V == 2) { float2 v = *(const float2 *)p; x[0] = v.x; x[1] = v.y; }
    else { float4 v = *(const float4 *)p; x[0] = v.x; x[1] = v.y; x[2] = v.z; x[3] = v.w; }
  } else if constexpr (V == 1) {
    x[0] = pb_t<DT>::f(p[0]);
  } else {
    unsigned w[V / 2];
    if constexpr (V == 2) w[0] = *(const unsigned *)p;
    else if constexpr (V == 4) { uint2 v = *(const uint2 *)p; w[0] = v.x; w[1] = v.y; }
    else { uint4 v = *(const uint4 *)p; w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w; }
#pragma unroll
    for (int i = 0; i < V / 2; i++) { x[2 * i] = pb_t<DT>::f(w[i] & 0xffffu); x[2 * i + 1] = pb_t<DT>::f(w[i] >> 16); }
  }
}
template <int OP, int V> __device__ __forceinline__ float pb_tree(float *x) {
#pragma unroll
  for (int s = V / 2; s >= 1; s /= 2)
#pragma unroll
    for (int i = 0; i < s; i++) x[i] = pb_op<OP>(x[i], x[i + s]);
  return x[0];
}

// Rows (the last axis) with logical warps of L lanes (L = 1: a lane a row, a plain loop;
// else cub::WarpReduce<float, L>): T / L groups take rows in turn; a lane folds every
// L-th vector of V elements of its row. When groups outnumber rows, each row is cut into
// K slices, a group a slice, and the K partials meet in shared memory ("then warps").
template <int DT, int OP, int R, int C, int S, int T, int L, int V, bool CTA>
__device__ __forceinline__ void pb_rows_warp(pb_s<DT> *res, const pb_s<DT> *tile) {
  constexpr int G = T / L;
  constexpr int K0 = G > R ? G / R : 1;
  constexpr int K = K0 * L * V > C ? (C / (L * V) > 0 ? C / (L * V) : 1) : K0; // a lane has a vector at least
  constexpr int SL = C / K;
  constexpr int N = (SL + L * V - 1) / (L * V);
  const int g = threadIdx.x / L, lane = threadIdx.x % L;
  __shared__ float part[K > 1 ? R * K : 1];
  typedef cub::WarpReduce<float, (L > 1 ? L : 2)> WR;
  __shared__ typename WR::TempStorage ts[L > 1 ? G : 1];
  for (int r = K > 1 ? g / K : g; r < R; r += K > 1 ? R : G) {
    const pb_s<DT> *p = tile + r * S + (K > 1 ? (g % K) * SL : 0);
    float acc = pb_id<OP>();
#pragma unroll
    for (int i = 0; i < N; i++) {
      int j = (i * L + lane) * V;
      if (N * L * V == SL || j < SL) { float x[V]; pb_unpack<DT, V>(p + j, x); acc = pb_op<OP>(acc, pb_tree<OP, V>(x)); }
    }
    float v = acc;
    if constexpr (L > 1) v = OP == 0 ? WR(ts[g]).Sum(acc) : WR(ts[g]).Reduce(acc, pb_fn<OP>());
    if (lane == 0) {
      if constexpr (K > 1) part[r * K + g % K] = v;
      else res[r] = pb_t<DT>::st(v);
    }
  }
  if constexpr (K > 1) {
    PB_SYNC(CTA);
    for (int r = threadIdx.x; r < R; r += T) {
      float a = part[r * K];
#pragma unroll
      for (int k = 1; k < K; k++) a = pb_op<OP>(a, part[r * K + k]);
      res[r] = pb_t<DT>::st(a);
    }
  }
  PB_SYNC(CTA);
}

// Rows with cub::BlockReduce<float, T, ALGO>, an output at a time: every thread folds its
// vectors of the row, the block reduces, thread 0 stores, a barrier frees the storage.
template <int DT, int OP, int R, int C, int S, int T, int V, int ALG>
__device__ __forceinline__ void pb_rows_block(pb_s<DT> *res, const pb_s<DT> *tile) {
  typedef cub::BlockReduce<float, T, ALG == 0 ? cub::BLOCK_REDUCE_WARP_REDUCTIONS
                                     : ALG == 1 ? cub::BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY : cub::BLOCK_REDUCE_RAKING> BR;
  __shared__ typename BR::TempStorage ts;
  constexpr int N = (C + T * V - 1) / (T * V);
  for (int r = 0; r < R; r++) {
    float acc = pb_id<OP>();
#pragma unroll
    for (int i = 0; i < N; i++) {
      int j = (i * T + (int)threadIdx.x) * V;
      if (N * T * V == C || j < C) { float x[V]; pb_unpack<DT, V>(tile + r * S + j, x); acc = pb_op<OP>(acc, pb_tree<OP, V>(x)); }
    }
    float v = OP == 0 ? BR(ts).Sum(acc) : BR(ts).Reduce(acc, pb_fn<OP>());
    if (threadIdx.x == 0) res[r] = pb_t<DT>::st(v);
    __syncthreads();
  }
}

// Columns (axis 0), by hand: consecutive threads take consecutive groups of V columns and
// fold down them in registers; when threads outnumber the groups, P row slices fold their
// rows and meet in a shared [slice][column] buffer, then one pass folds the slices.
template <int DT, int OP, int R, int C, int S, int T, int V, bool CTA>
__device__ __forceinline__ void pb_cols(pb_s<DT> *res, const pb_s<DT> *tile) {
  constexpr int CG = C / V;
  constexpr int P0 = T > CG ? T / CG : 1;
  constexpr int P = P0 > R ? R : P0;
  constexpr int RS = R / P;
  __shared__ float part[P > 1 ? P * C : 1];
  if constexpr (T >= CG) {
    const int cg = threadIdx.x % CG, p = threadIdx.x / CG;
    if (p < P) {
      float acc[V];
#pragma unroll
      for (int k = 0; k < V; k++) acc[k] = pb_id<OP>();
#pragma unroll
      for (int i = 0; i < RS; i++) {
        float x[V];
        pb_unpack<DT, V>(tile + (p * RS + i) * S + cg * V, x);
#pragma unroll
        for (int k = 0; k < V; k++) acc[k] = pb_op<OP>(acc[k], x[k]);
      }
#pragma unroll
      for (int k = 0; k < V; k++) {
        if constexpr (P > 1) part[p * C + cg * V + k] = acc[k];
        else res[cg * V + k] = pb_t<DT>::st(acc[k]);
      }
    }
  } else {
    for (int cg = threadIdx.x; cg < CG; cg += T) {
      float acc[V];
#pragma unroll
      for (int k = 0; k < V; k++) acc[k] = pb_id<OP>();
#pragma unroll
      for (int r = 0; r < R; r++) {
        float x[V];
        pb_unpack<DT, V>(tile + r * S + cg * V, x);
#pragma unroll
        for (int k = 0; k < V; k++) acc[k] = pb_op<OP>(acc[k], x[k]);
      }
#pragma unroll
      for (int k = 0; k < V; k++) res[cg * V + k] = pb_t<DT>::st(acc[k]);
    }
  }
  if constexpr (P > 1) {
    PB_SYNC(CTA);
    for (int c = threadIdx.x; c < C; c += T) {
      float a = part[c];
#pragma unroll
      for (int p = 1; p < P; p++) a = pb_op<OP>(a, part[p * C + c]);
      res[c] = pb_t<DT>::st(a);
    }
  }
  PB_SYNC(CTA);
}

// Columns as a naive user would write them with row tools: a logical warp of L lanes a
// column, a lane folding every L-th element down it, then cub::WarpReduce.
template <int DT, int OP, int R, int C, int S, int T, int L, bool CTA>
__device__ __forceinline__ void pb_cols_warp(pb_s<DT> *res, const pb_s<DT> *tile) {
  constexpr int G = T / L;
  constexpr int N = (R + L - 1) / L;
  const int g = threadIdx.x / L, lane = threadIdx.x % L;
  typedef cub::WarpReduce<float, L> WR;
  __shared__ typename WR::TempStorage ts[G];
  for (int c = g; c < C; c += G) {
    float acc = pb_id<OP>();
#pragma unroll
    for (int i = 0; i < N; i++) {
      int r = i * L + lane;
      if (N * L == R || r < R) acc = pb_op<OP>(acc, pb_t<DT>::f(tile[r * S + c]));
    }
    float v = OP == 0 ? WR(ts[g]).Sum(acc) : WR(ts[g]).Reduce(acc, pb_fn<OP>());
    if (lane == 0) res[c] = pb_t<DT>::st(v);
  }
  PB_SYNC(CTA);
}

// The harness: CTA b loads tile b % 16 (a tile of SPAN elements) into shared memory, poisons
// the outputs with NaN, then calls the reduction `reps` times between two clock64() reads.
#define PB_PRE(DT, SPAN, NOUT, T)                                                                  \
  for (int i = threadIdx.x; i < SPAN; i += T) tile[i] = in[(long long)(blockIdx.x % 16) * SPAN + i]; \
  for (int i = threadIdx.x; i < NOUT; i += T) res[i] = pb_t<DT>::nan();                            \
  __syncthreads();                                                                                 \
  long long t0 = clock64();
#define PB_POST(NOUT, T)                                                                           \
  long long t1 = clock64();                                                                        \
  __syncthreads();                                                                                 \
  for (int i = threadIdx.x; i < NOUT; i += T) out[(long long)blockIdx.x * NOUT + i] = res[i];      \
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
)PB";

static const char *dt_name[3] = {"f32", "f16", "bf16"};
static const char *op_name[2] = {"sum", "max"};

struct Impl {
    std::string name, kernel;
    bool forced = false; // tilec with variant=: reported, never a peer
    bool calibrated = false; // tilec's own choice under --costs FILE's constants (forced too: never a peer)
    double cyc[2] = {0, 0}; // 1/SM, 4/SM (median over CTAs, a tile)
    bool ok[2] = {false, false};
    int fit = 0; // CTAs a multiprocessor that fit
};

struct TileRun {
    int dt, op;
    bool rows, warp; // rows: axes=(-1); else columns, axes=(0); warp: warp scope
    int r, c, s, threads;
    int group, id;
    std::string label, func, variant; // func: tilec's name
    std::string cal_variant;          // the variant under --costs FILE ("" without it)
    std::vector<Impl> impls;          // [0]: tilec
};

static int es_of(int dt) { return dt == 0 ? 4 : 2; }

// a .tile func: tilec's own choice (no variant=); the padded tile is a [r, s] buffer of
// which the reduction reads the first c columns: the layout strides=(s, 1) gives
static std::string tile_func(const TileRun &t, const std::string &variant = "", const std::string &suffix = "") {
    char b[512];
    bool pad = t.s != t.c;
    std::snprintf(b, sizeof b,
                  "func %s%s(dst: %s[%d] shared, src: %s[%d, %d] shared) threads=%d {\n  %s.%s(dst, src%s, axes=(%s)%s%s)\n}\n",
                  t.func.c_str(), suffix.c_str(), dt_name[t.dt], t.rows ? t.r : t.c, dt_name[t.dt], t.r, t.s, t.threads,
                  t.warp ? "warp" : "cta", op_name[t.op], pad ? (std::string("[:, 0:") + std::to_string(t.c) + "]").c_str() : "",
                  t.rows ? "-1" : "0", variant.empty() ? "" : ", variant=", variant.c_str());
    return b;
}

// whether a func lowers for this GPU (a forced variant may not apply)
static bool lowers(const std::string &text) {
    std::string why;
    tilec_program *p = parse(text, &why);
    if (!p) return false;
    tilec_target t = {TILEC_BACKEND_CUDA, arch, 32};
    char *src = nullptr;
    tilec_status st = tilec_emit(p, &t, &src, nullptr);
    tilec_free(src);
    tilec_program_free(p);
    return st == TILEC_OK;
}

static std::string harness(const TileRun &t, const std::string &kname, const std::string &call) {
    char b[1024];
    const char *st = t.dt ? "pb_u16" : "float";
    int span = t.r * t.s, nout = t.rows ? t.r : t.c;
    std::snprintf(b, sizeof b,
                  "extern \"C\" __global__ void __launch_bounds__(%d) %s(const %s *in, %s *out, long long *cyc, int reps) {\n"
                  "  __shared__ __align__(16) %s tile[%d];\n  __shared__ __align__(16) %s res[%d];\n"
                  "  PB_PRE(%d, %d, %d, %d)\n#pragma unroll 1\n  for (int k = 0; k < reps; k++) %s;\n  PB_POST(%d, %d)\n}\n",
                  t.threads, kname.c_str(), st, st, st, span, st, nout, t.dt, span, nout, t.threads, call.c_str(), nout,
                  t.threads);
    return b;
}

// the peers of a case, each a kernel of the harness
static void add_peers(TileRun &t, std::string &src) {
    int es = es_of(t.dt), v4 = 4 / es, v16 = 16 / es;
    auto fits = [&](int v) { return t.c % v == 0 && t.s % v == 0; };
    char args[128];
    std::snprintf(args, sizeof args, "%d, %d, %d, %d, %d, %d", t.dt, t.op, t.r, t.c, t.s, t.threads);
    std::string cta = t.warp ? "false" : "true";
    auto add = [&](const std::string &name, const std::string &call) {
        Impl p;
        p.name = name;
        p.kernel = "k" + std::to_string(t.id) + "_" + std::to_string(t.impls.size());
        src += harness(t, p.kernel, call);
        t.impls.push_back(p);
    };
    // the load widths that apply: 4 and 16 bytes where the layout is aligned for them;
    // 2-byte loads for 16-bit data whose rows are not 4-byte aligned
    std::vector<std::pair<int, std::string>> widths;
    if (fits(v4)) widths.push_back({v4, "4-byte"});
    else widths.push_back({1, std::to_string(es) + "-byte"});
    if (v16 != v4 && fits(v16)) widths.push_back({v16, "16-byte"});
    if (t.rows) {
        for (int L = 1; L <= 32 && L <= t.threads; L *= 2)
            for (auto &w : widths) {
                if (L * w.first > t.c) continue; // more lanes than vectors a row: not what a user writes
                std::string name = L == 1 ? "1 lane a row, " + w.second : "WarpReduce<" + std::to_string(L) + ">, " + w.second;
                add(name, "pb_rows_warp<" + std::string(args) + ", " + std::to_string(L) + ", " + std::to_string(w.first) +
                              ", " + cta + ">(res, tile)");
            }
        if (!t.warp) {
            static const char *algo[3] = {"WARP_REDUCTIONS", "RAKING_COMMUTATIVE_ONLY", "RAKING"};
            int v = widths.back().first;
            for (int a = 0; a < 3; a++)
                add(std::string("BlockReduce ") + algo[a] + ", " + widths.back().second,
                    "pb_rows_block<" + std::string(args) + ", " + std::to_string(v) + ", " + std::to_string(a) + ">(res, tile)");
        }
    } else {
        for (auto &w : widths)
            add("column loop, " + w.second,
                "pb_cols<" + std::string(args) + ", " + std::to_string(w.first) + ", " + cta + ">(res, tile)");
        int L = std::min(32, t.r); // the naive one: row tools down a column, a lane per row element
        add("WarpReduce<" + std::to_string(L) + "> down a column, " + std::to_string(es) + "-byte",
            "pb_cols_warp<" + std::string(args) + ", " + std::to_string(L) + ", " + cta + ">(res, tile)");
    }
}

// the tilec variant named in the emitted source: the comment "// line N: ...  [variant]"
// that opens the func's statement
static std::string variant_of(const std::string &src, const std::string &func) {
    size_t at = src.find("void " + func + "(");
    if (at == std::string::npos) return "?";
    at = src.find("// line ", at);
    if (at == std::string::npos) return "?";
    size_t eol = src.find('\n', at), open = src.rfind('[', eol), close = src.rfind(']', eol);
    if (open == std::string::npos || open < at || close < open) return "?";
    return src.substr(open + 1, close - open - 1);
}

// inputs of 16 tiles uniform in [-1, 1) (16-bit: rounded to the type), and their reference
// in double: want[tile][output], mag (sum of magnitudes)
struct TileData {
    std::vector<uint16_t> h16;
    std::vector<float> h32;
    std::vector<double> x;             // the values, as the GPU sees them
    std::vector<double> want, mag;     // 16 x nout
};

static TileData tile_data(const TileRun &t) {
    TileData d;
    size_t span = (size_t)t.r * t.s, n = 16 * span;
    uint64_t seed = (uint64_t)t.r * 131 + t.c * 7 + t.s + t.dt * 1000003;
    d.x.resize(n);
    if (t.dt) d.h16.resize(n);
    else d.h32.resize(n);
    for (size_t i = 0; i < n; i++) {
        double f = draw(&seed);
        if (t.dt == 1) d.h16[i] = tilec_f16_from_double(f), d.x[i] = tilec_f16_to_double(d.h16[i]);
        else if (t.dt == 2) d.h16[i] = tilec_bf16_from_double(f), d.x[i] = tilec_bf16_to_double(d.h16[i]);
        else d.h32[i] = (float)f, d.x[i] = d.h32[i];
    }
    int nout = t.rows ? t.r : t.c;
    d.want.assign(16 * nout, t.op == 0 ? 0.0 : -INFINITY);
    d.mag.assign(16 * nout, 0.0);
    for (int k = 0; k < 16; k++)
        for (int i = 0; i < t.r; i++)
            for (int j = 0; j < t.c; j++) {
                double v = d.x[k * span + (size_t)i * t.s + j];
                size_t o = (size_t)k * nout + (t.rows ? i : j);
                if (t.op == 0) d.want[o] += v, d.mag[o] += std::fabs(v);
                else d.want[o] = std::max(d.want[o], v);
            }
    return d;
}

// every output of every CTA against the reference of its tile: sums within 1e-5 of their
// magnitude (f32 accumulation), plus, for 16-bit outputs, half an ulp of the type at the
// result (rounded once); max exact
static bool tile_check(const TileRun &t, const TileData &d, const void *got, int ctas) {
    int nout = t.rows ? t.r : t.c;
    double u = t.dt == 1 ? 0x1p-11 : t.dt == 2 ? 0x1p-8 : 0;
    for (int b = 0; b < ctas; b++)
        for (int o = 0; o < nout; o++) {
            size_t i = (size_t)b * nout + o, w = (size_t)(b % 16) * nout + o;
            double g = t.dt == 0 ? (double)((const float *)got)[i]
                       : t.dt == 1 ? tilec_f16_to_double(((const uint16_t *)got)[i])
                                   : tilec_bf16_to_double(((const uint16_t *)got)[i]);
            double e = 1e-5 * d.mag[w], tol = t.op == 0 ? e + u * (std::fabs(d.want[w]) + e) + (t.dt == 1 ? 0x1p-25 : 0) : 0;
            if (!(std::fabs(g - d.want[w]) <= tol)) {
                std::fprintf(stderr, "    CTA %d output %d: got %.9g want %.9g\n", b, o, g, d.want[w]);
                return false;
            }
        }
    return true;
}

static std::string tile_label(const TileRun &t) {
    char b[96];
    std::snprintf(b, sizeof b, "%s %s %s %dx%d%s t%d%s", dt_name[t.dt], op_name[t.op], t.rows ? "rows" : "cols", t.r, t.c,
                  t.s != t.c ? (" pad" + std::to_string(t.s)).c_str() : "", t.threads, t.warp ? " warp" : "");
    return b;
}

// the matrix's cases, and a source (one NVRTC compile) per dtype, op and orientation:
// tilec's funcs as tilec_emit gives them for `arch`, the peers, the harness kernels
static void tile_sources(std::vector<TileRun> &runs, std::vector<std::string> &srcs) {
    // {rows, columns, row stride, threads..., scope}
    struct Shape { int r, c, s; std::vector<int> threads; bool warp, only16; };
    const std::vector<Shape> shapes = {
        {4, 8, 8, {32, 128}, false, false},      {32, 32, 32, {128, 256}, false, false},
        {64, 64, 64, {128, 256}, false, false},  {64, 128, 128, {128, 256}, false, false},
        {128, 64, 64, {128, 256}, false, false}, {128, 128, 128, {128, 256}, false, true},
        {16, 256, 256, {128, 256}, false, false}, {256, 16, 16, {128, 256}, false, false},
        {8, 512, 512, {128, 256}, false, false}, {4, 1024, 1024, {128, 256}, false, false},
        {1, 4096, 4096, {128, 256}, false, false}, {64, 128, 129, {128, 256}, false, false},
        {32, 32, 32, {32}, true, false}};
    // a module (one NVRTC compile) per dtype, op and orientation
    for (int dt = 0; dt < 3; dt++)
        for (int op = 0; op < 2; op++)
            for (int rows = 1; rows >= 0; rows--) {
                int group = (int)srcs.size();
                std::string funcs, funcs_cal, harnesses;
                for (auto &s : shapes) {
                    if (s.only16 && dt == 0) continue; // 128x128 f32 is 64 KB: more than a static shared array
                    if (!rows && s.r == 1) continue;   // columns of one row: a copy
                    // --quick: every shape for f32 sum; the others only on four shapes
                    if (quick && (dt || op) && !(s.r == 32 && s.c == 32) && !(s.r == 64 && s.c == 128 && s.s == 128) &&
                        !(s.r == 128 && s.c == 64) && !(s.r == 128 && s.c == 128))
                        continue;
                    for (int th : s.threads) {
                        TileRun t;
                        t.dt = dt, t.op = op, t.rows = rows, t.warp = s.warp;
                        t.r = s.r, t.c = s.c, t.s = s.s, t.threads = th;
                        t.group = group, t.id = (int)runs.size();
                        t.func = "tilec_t" + std::to_string(t.id);
                        t.label = tile_label(t);
                        funcs += tile_func(t);
                        Impl mine;
                        mine.name = "tilec";
                        mine.kernel = "k" + std::to_string(t.id) + "_0";
                        t.impls.push_back(mine);
                        harnesses += harness(t, mine.kernel, t.func + "(res, tile)");
                        if (ctx_cal) { /* kept below only where the plan differs from the default's */
                            funcs_cal += tile_func(t, "", "_cal");
                            Impl c;
                            c.name = "tilec calibrated";
                            c.forced = c.calibrated = true;
                            c.kernel = "k" + std::to_string(t.id) + "_cal";
                            harnesses += harness(t, c.kernel, t.func + "_cal(res, tile)");
                            t.impls.push_back(c);
                        }
                        add_peers(t, harnesses);
                        for (size_t v = 0; v < tile_variants.size(); v++) { // --tile-variants: forced, where they apply
                            std::string sfx = "_v" + std::to_string(v), text = tile_func(t, tile_variants[v], sfx);
                            if (!lowers(text)) continue;
                            funcs += text;
                            Impl f;
                            f.name = "tilec variant=" + tile_variants[v];
                            f.forced = true;
                            f.kernel = "k" + std::to_string(t.id) + "_" + std::to_string(t.impls.size());
                            harnesses += harness(t, f.kernel, t.func + sfx + "(res, tile)");
                            t.impls.push_back(f);
                        }
                        runs.push_back(t);
                    }
                }
                // tilec's funcs of the module, emitted once for this GPU
                std::string why;
                tilec_program *p = parse(funcs, &why);
                if (!p) {
                    std::fprintf(stderr, "bench: %s", why.c_str());
                    std::exit(1);
                }
                tilec_target tt = {TILEC_BACKEND_CUDA, arch, 32};
                char *emitted = nullptr;
                tilec_ok(tilec_emit(p, &tt, &emitted, nullptr), "tilec_emit");
                for (auto &t : runs)
                    if (t.group == group) t.variant = variant_of(emitted, t.func);
                std::string cal_src;
                if (ctx_cal) { /* the same funcs (named _cal) planned with --costs FILE's constants */
                    tilec_program *pc = parse(funcs_cal, &why, ctx_cal);
                    char *emitted_cal = nullptr;
                    if (!pc || tilec_emit(pc, &tt, &emitted_cal, nullptr) != TILEC_OK) {
                        std::fprintf(stderr, "bench: --costs: %s%s", why.c_str(), tilec_diag_text(ctx_cal));
                        std::exit(1);
                    }
                    cal_src = emitted_cal;
                    for (auto &t : runs) {
                        if (t.group != group) continue;
                        t.cal_variant = variant_of(cal_src, t.func + "_cal");
                        bool same = func_body(emitted, t.func) == func_body(cal_src, t.func + "_cal");
                        for (size_t i = 0; i < t.impls.size(); i++)
                            if (t.impls[i].calibrated && same) t.impls.erase(t.impls.begin() + (long)i--);
                    }
                    tilec_free(emitted_cal);
                    tilec_program_free(pc);
                }
                srcs.push_back(std::string(peer_prelude) + emitted + cal_src + harnesses);
                tilec_free(emitted);
                tilec_program_free(p);
            }
}

// bench --tile-sources DIR [--arch sm_XY]: writes the tile matrix's NVRTC sources (no GPU
// needed), to read them or to compile them by hand
static int write_tile_sources(const char *dir) {
    tilec_open(&ctx);
    std::vector<TileRun> runs;
    std::vector<std::string> srcs;
    tile_sources(runs, srcs);
    for (size_t i = 0; i < srcs.size(); i++) {
        std::string path = std::string(dir) + "/tiles" + std::to_string(i) + ".cu";
        FILE *f = std::fopen(path.c_str(), "w");
        if (!f) {
            std::fprintf(stderr, "bench: cannot write %s\n", path.c_str());
            return 1;
        }
        std::fputs(srcs[i].c_str(), f);
        std::fclose(f);
    }
    int changed = 0;
    for (auto &t : runs) {
        size_t peers = 0;
        bool cal = false;
        for (size_t i = 1; i < t.impls.size(); i++) t.impls[i].calibrated ? cal = true : peers++;
        changed += cal;
        std::printf("%-36s %-24s %zu peers%s%s\n", t.label.c_str(), t.variant.c_str(), peers,
                    cal ? "; under --costs: " : "", cal ? t.cal_variant.c_str() : "");
    }
    if (ctx_cal) std::printf("--costs changes tilec's plan in %d of %zu cases\n", changed, runs.size());
    tilec_close(ctx);
    return 0;
}

static void bench_tile_matrix() {
    int sms = 0;
    CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::vector<TileRun> runs;
    std::vector<std::string> srcs;
    tile_sources(runs, srcs);
    // NVRTC, the modules at once on threads of their own
    progress("tile: compiling " + std::to_string(srcs.size()) + " modules of " + std::to_string(runs.size()) + " cases");
    std::vector<std::vector<char>> cubins(srcs.size());
    std::vector<std::string> logs(srcs.size());
    {
        std::vector<std::thread> pool;
        for (size_t i = 0; i < srcs.size(); i++)
            pool.emplace_back([&, i] { cubins[i] = nvrtc_cubin(srcs[i], &logs[i]); });
        for (auto &th : pool) th.join();
    }
    std::vector<Module> mods;
    for (size_t i = 0; i < srcs.size(); i++) {
        if (cubins[i].empty()) {
            std::fprintf(stderr, "NVRTC failed on tile module %zu:\n%s\n", i, logs[i].c_str());
            std::exit(1);
        }
        mods.push_back(load_cubin(cubins[i]));
    }
    progress("tile: compiled");
    std::printf("  tile: cycles a tile (median over CTAs); 1/SM: %d CTAs, 4/SM: %d; ratio = best peer / tilec (> 1: tilec ahead)\n",
                sms, 4 * sms);
    // run: every impl of a case, checked, at both occupancies
    long long *d_cyc;
    CUDA(cudaMalloc(&d_cyc, 4 * sms * 8));
    std::vector<double> logs_ratio, cal_logs; // cal_logs: default / calibrated cycles where --costs changed the plan
    int cal_changed = 0;
    for (auto &t : runs) {
        progress("tile " + t.label);
        TileData d = tile_data(t);
        int es = es_of(t.dt), nout = t.rows ? t.r : t.c;
        size_t span = (size_t)t.r * t.s;
        void *d_in, *d_out;
        CUDA(cudaMalloc(&d_in, 16 * span * es));
        CUDA(cudaMalloc(&d_out, (size_t)4 * sms * nout * es));
        CUDA(cudaMemcpy(d_in, t.dt ? (const void *)d.h16.data() : (const void *)d.h32.data(), 16 * span * es,
                        cudaMemcpyHostToDevice));
        int reps = std::max(64, std::min(1024, (1 << 20) / (t.r * t.c)));
        std::vector<char> got((size_t)4 * sms * nout * es);
        for (auto &im : t.impls) {
            cudaKernel_t k = mods[t.group].kernel(im.kernel.c_str());
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&im.fit, (const void *)k, t.threads, 0) != cudaSuccess) {
                cudaGetLastError(); // a runtime that does not take a library's kernel here: assume 4 and say so
                im.fit = 4;
                std::printf("  tile %-34s %-40s occupancy not known: 4/SM assumed\n", t.label.c_str(), im.name.c_str());
            }
            for (int occ = 0; occ < 2; occ++) {
                int per = occ == 0 ? 1 : std::min(4, im.fit);
                if (im.fit < 1) { // not even one CTA fits: nothing to launch, never the best
                    std::printf("  tile %-34s %-40s does not fit a multiprocessor\n", t.label.c_str(), im.name.c_str());
                    break;
                }
                int ctas = per * sms;
                void *args[] = {&d_in, &d_out, &d_cyc, &reps};
                CUDA(cudaMemset(d_out, 0xff, (size_t)ctas * nout * es));
                launch(k, ctas, t.threads, args); // warm-up
                CUDA(cudaMemset(d_out, 0xff, (size_t)ctas * nout * es));
                launch(k, ctas, t.threads, args);
                CUDA(cudaDeviceSynchronize());
                std::vector<long long> cyc(ctas);
                CUDA(cudaMemcpy(got.data(), d_out, (size_t)ctas * nout * es, cudaMemcpyDeviceToHost));
                CUDA(cudaMemcpy(cyc.data(), d_cyc, ctas * 8, cudaMemcpyDeviceToHost));
                im.ok[occ] = tile_check(t, d, got.data(), ctas);
                std::vector<double> per_tile;
                for (long long c : cyc) per_tile.push_back((double)c / reps);
                im.cyc[occ] = median(per_tile);
                if (!im.ok[occ]) {
                    cases_wrong++;
                    std::printf("  tile %-34s %-40s WRONG (%s)\n", t.label.c_str(), im.name.c_str(), occ ? "4/SM" : "1/SM");
                }
                if (csv)
                    std::fprintf(csv, "tile,%s,\"%s%s%s\",,%.1f,cycles %d/SM%s\n", t.label.c_str(), im.name.c_str(),
                                 &im == &t.impls[0] ? " " : "", &im == &t.impls[0] ? ("[" + t.variant + "]").c_str() : "",
                                 im.cyc[occ], per, im.ok[occ] ? "" : " WRONG");
            }
        }
        CUDA(cudaFree(d_in));
        CUDA(cudaFree(d_out));
        // the line of the case, and its targets
        const Impl &me = t.impls[0];
        const Impl *best[2] = {nullptr, nullptr};
        for (int occ = 0; occ < 2; occ++)
            for (size_t i = 1; i < t.impls.size(); i++)
                if (!t.impls[i].forced && t.impls[i].ok[occ] && (!best[occ] || t.impls[i].cyc[occ] < best[occ]->cyc[occ])) best[occ] = &t.impls[i];
        double ratio[2] = {0, 0};
        for (int occ = 0; occ < 2; occ++)
            if (me.ok[occ] && best[occ] && me.cyc[occ] > 0) {
                ratio[occ] = best[occ]->cyc[occ] / me.cyc[occ];
                logs_ratio.push_back(std::log(ratio[occ]));
            }
        auto cyc_s = [](const Impl *im, int occ) { return im && im->ok[occ] ? fmt("%.0f", im->cyc[occ]) : std::string("-"); };
        std::string peer = !best[0] ? "-" : best[1] && best[1] != best[0] ? best[0]->name + " / " + best[1]->name : best[0]->name;
        std::printf("  tile %-34s %-22s tilec %6s %6s%s  best peer %6s %6s  ratio %5.2f %5.2f  %s%s\n", t.label.c_str(),
                    ("[" + t.variant + "]").c_str(), cyc_s(&me, 0).c_str(), cyc_s(&me, 1).c_str(),
                    me.fit < 4 ? fmt(" (%g/SM fit)", me.fit).c_str() : "", cyc_s(best[0], 0).c_str(), cyc_s(best[1], 1).c_str(),
                    ratio[0], ratio[1], peer.c_str(), me.ok[0] && me.ok[1] ? "" : "  tilec WRONG");
        for (auto &f : t.impls)
            if (f.calibrated) {
                std::printf("  tile %-34s %-22s tilec %6s %6s  (calibrated constants' plan; default / calibrated %.2f %.2f)\n",
                            t.label.c_str(), ("[" + t.cal_variant + "]").c_str(), cyc_s(&f, 0).c_str(), cyc_s(&f, 1).c_str(),
                            f.ok[0] && me.ok[0] ? me.cyc[0] / f.cyc[0] : 0.0, f.ok[1] && me.ok[1] ? me.cyc[1] / f.cyc[1] : 0.0);
                for (int occ = 0; occ < 2; occ++)
                    if (f.ok[occ] && me.ok[occ] && f.cyc[occ] > 0) cal_logs.push_back(std::log(me.cyc[occ] / f.cyc[occ]));
                cal_changed++;
            } else if (f.forced)
                std::printf("  tile %-34s %-22s tilec %6s %6s  (forced)\n", t.label.c_str(), f.name.substr(6).c_str(),
                            cyc_s(&f, 0).c_str(), cyc_s(&f, 1).c_str());
        if (csv)
            std::fprintf(csv, "tile-ratio,%s,best peer / tilec,,%.4f,1/SM\ntile-ratio,%s,best peer / tilec,,%.4f,4/SM\n",
                         t.label.c_str(), ratio[0], t.label.c_str(), ratio[1]);
        std::fflush(stdout);
        target("tile " + t.label + " [" + t.variant + "], best peer / tilec at 1/SM, 4/SM", fmt("%.2f", ratio[0]) + fmt(", %.2f", ratio[1]),
               ">= 1 at both", std::min(ratio[0], ratio[1]), peer);
        double bytes = (double)t.r * t.c * es;
        if (bytes >= 16384 && me.ok[1]) {
            int per = std::min(4, me.fit);
            double floor = bytes * per / 128.0;
            target("tile " + t.label + ", cycles at 4/SM vs the shared-memory floor", fmt("%.0f", me.cyc[1]) + fmt(" (floor %.0f)", floor),
                   fmt("<= %.0f", 1.3 * floor), 1.3 * floor / me.cyc[1], fmt("%.2fx the floor", me.cyc[1] / floor));
        }
    }
    CUDA(cudaFree(d_cyc));
    double gm = 0;
    for (double l : logs_ratio) gm += l;
    gm = logs_ratio.empty() ? 0 : std::exp(gm / logs_ratio.size());
    std::printf("  tile: geometric mean of best peer / tilec over %zu case-occupancies: %.3f\n", logs_ratio.size(), gm);
    if (ctx_cal) {
        double cg = 0;
        int faster = 0, slower = 0;
        for (double l : cal_logs) cg += l, faster += l > std::log(1.02), slower += l < -std::log(1.02);
        cg = cal_logs.empty() ? 1 : std::exp(cg / cal_logs.size());
        std::printf("  tile: the calibrated constants change tilec's plan in %d of %zu cases; over those, default / "
                    "calibrated cycles: geometric mean %.3f, %d case-occupancies 2%% or more faster, %d slower\n",
                    cal_changed, runs.size(), cg, faster, slower);
        if (csv) std::fprintf(csv, "tile-calibrated,changed,%d,,%.4f,geomean default/calibrated\n", cal_changed, cg);
    }
    target("tile matrix, geometric mean of best peer / tilec (both occupancies)", fmt("%.3f", gm), ">= 1.2", gm / 1.2,
           std::to_string(logs_ratio.size()) + " case-occupancies");
    for (auto &m : mods) CUDA(cudaLibraryUnload(m.lib));
}

// ---- streamed tiles ----------------------------------------------------------------------

static std::string stream_kernel(const std::string &name, int r, int c, int threads, long long grid) {
    char b[512];
    std::snprintf(b, sizeof b,
                  "kernel %s(A: f32[%lld, %d, %d] global, B: f32[%lld, %d] global) threads=%d grid=%lld {\n"
                  "  shared As: f32[%d, %d]\n  shared Bs: f32[%d]\n  cta.copy(As, A[cta_id])\n  cta.sync()\n"
                  "  cta.sum(Bs, As, axes=(-1))\n  cta.sync()\n  cta.copy(B[cta_id], Bs)\n}\n",
                  name.c_str(), grid, r, c, grid, r, threads, grid, r, c, r);
    return b;
}

// rows of many r x c tiles, in double, and whether got matches them
static bool rows_match(const std::vector<float> &in, const std::vector<float> &got, long long nrows, int c) {
    for (long long i = 0; i < nrows; i++) {
        double want = 0, mag = 0;
        for (int j = 0; j < c; j++) want += in[i * c + j], mag += std::fabs(in[i * c + j]);
        if (!(std::fabs(got[i] - want) <= 1e-5 * mag)) {
            std::fprintf(stderr, "    row %lld: got %.9g want %.9g\n", i, got[i], want);
            return false;
        }
    }
    return true;
}

// tiles global -> shared -> reduce -> global, a tile a CTA, tilec's own choice, f32 rows;
// goals: >= 85% of the copy ceiling for tiles of 16 KB or more, >= 75% for 4 KB tiles
static void bench_stream() {
    static const int shapes[][2] = {{4, 8},    {32, 32},  {64, 64},  {64, 128}, {128, 64},
                                    {16, 256}, {256, 16}, {8, 512},  {4, 1024}, {1, 4096}};
    std::string text;
    struct S { int r, c, threads; long long grid; std::string name; };
    std::vector<S> cases;
    for (auto &s : shapes)
        for (int threads : {128, 256}) {
            S c = {s[0], s[1], threads, (quick ? (64ll << 20) : (256ll << 20)) / (4ll * s[0] * s[1]), ""};
            c.name = "s_" + std::to_string(c.r) + "x" + std::to_string(c.c) + "_t" + std::to_string(threads);
            text += stream_kernel(c.name, c.r, c.c, c.threads, c.grid);
            cases.push_back(c);
        }
    progress("tile stream: compiling " + std::to_string(cases.size()) + " kernels");
    Module sm = tilec_module(text); // one program, one compile
    for (auto &c : cases) {
        progress("tile stream " + c.name);
        size_t n = (size_t)c.grid * c.r * c.c;
        std::vector<float> h = random_floats(n, 99 + c.r);
        float *d_in, *d_out;
        CUDA(cudaMalloc(&d_in, n * 4));
        CUDA(cudaMalloc(&d_out, (size_t)c.grid * c.r * 4));
        CUDA(cudaMemcpy(d_in, h.data(), n * 4, cudaMemcpyHostToDevice));
        CUDA(cudaMemset(d_out, 0xff, (size_t)c.grid * c.r * 4));
        void *args[] = {&d_in, &d_out};
        cudaKernel_t k = sm.kernel(c.name.c_str());
        launch(k, c.grid, c.threads, args);
        CUDA(cudaDeviceSynchronize());
        std::vector<float> got((size_t)c.grid * c.r);
        CUDA(cudaMemcpy(got.data(), d_out, got.size() * 4, cudaMemcpyDeviceToHost));
        bool ok = rows_match(h, got, c.grid * c.r, c.c);
        cases_wrong += !ok;
        double ms = time_ms([&](int) { launch(k, c.grid, c.threads, args); }, 1);
        double tbs = row("stream", "auto_" + c.name.substr(2), "tilec's choice", ms, (double)(n + c.grid * c.r) * 4, ok ? "checked" : "WRONG");
        int bytes = 4 * c.r * c.c;
        double goal = bytes >= 16384 ? 0.85 : bytes == 4096 ? 0.75 : 0;
        if (goal > 0)
            target("stream " + c.name.substr(2) + ", share of the copy ceiling", ok ? fmt("%.0f%%", 100 * tbs / copy_tbs) : "WRONG",
                   fmt(">= %.0f%%", 100 * goal), ok ? tbs / copy_tbs / goal : 0, fmt("%.2f TB/s", tbs));
        CUDA(cudaFree(d_in));
        CUDA(cudaFree(d_out));
    }
    CUDA(cudaLibraryUnload(sm.lib));
}

static void bench_tiles() {
    bench_constants();
    bench_tile_matrix();
    bench_stream();
}

// ---- fragments ---------------------------------------------------------------------
//
// `--only fragments`: the fragments' targets (docs/performance.md) in the clock64 harness of the tile matrix,
// one NVRTC module holding tilec's funcs, the hand-written peers and a kernel per
// implementation (`bench --fragment-sources DIR` writes it without a GPU):
//   mma    a warp's m16n8k16 f32 accumulator of 16 x 64 (float acc[32], 8 n8 tiles;
//          4 warps a CTA, each its own): row max and row sum into a fragment replicated
//          over each quad (as FlashAttention-2 keeps row_max), beside FA2's thread_reduce_
//          (a chain a row) + Allreduce<4>; column sums into shared memory beside XOR 4, 8,
//          16 on every column (CUTLASS's scheme) and a halving butterfly
//   wgmma  a warpgroup's m64n128 f32 accumulator (float acc[64]): the same, beside FA3's
//          reduce_max / reduce_sum, and columns beside XOR 4, 8, 16 + a shared-memory
//          combine across the four warps
//   smem   a 64 x 128 f32 tile in shared memory, rows and columns: 128-byte swizzled
//          (row-major, and as TMA stores 128-byte boxes: 4 panels [4][64][32]), beside
//          the tile unswizzled at strides 128, 129, 132 and 136; hand-written peers
//          reading each placement (XOR on the address where swizzled)
// The accumulator is loaded from global memory by the layout's PTX formula and stays in
// registers; between the two clock64() reads the reduction runs `reps` times, each
// register passed through an empty asm volatile a rep (no instruction, but the compiler
// can neither hoist nor merge the calls) and a register result through another. Every
// result (every lane's copy of a replicated one) is checked against a double reference.

static const char *frag_prelude = R"FB(
template <int OP> __device__ __forceinline__ float fb_op(float a, float b) { return OP == 0 ? a + b : fmaxf(a, b); }
__device__ __forceinline__ float fb_nan() { return __int_as_float(0x7fffffff); }

// FlashAttention-2 (csrc/flash_attn/src/softmax.h, reduce_max / reduce_sum with the quad
// allreduce): thread_reduce_ folds each of the lane's two rows in one chain, column by
// column (register 4n + 2j + e holds row j's column 2n + e of the lane's), then
// Allreduce<4>: XOR 2, then 1. ORDER 1 is FlashAttention-3's (hopper/softmax.h): the
// columns outer and the rows inner, the two chains interleaved.
template <int OP, int NT, int ORDER> __device__ __forceinline__ void fb_fa_rows(const float *acc, float *m) {
  if constexpr (ORDER == 0) {
#pragma unroll
    for (int j = 0; j < 2; j++) {
      m[j] = acc[2 * j];
#pragma unroll
      for (int c = 1; c < 2 * NT; c++) m[j] = fb_op<OP>(m[j], acc[4 * (c >> 1) + 2 * j + (c & 1)]);
    }
  } else {
#pragma unroll
    for (int c = 0; c < 2 * NT; c++)
#pragma unroll
      for (int j = 0; j < 2; j++) m[j] = c == 0 ? acc[2 * j] : fb_op<OP>(m[j], acc[4 * (c >> 1) + 2 * j + (c & 1)]);
  }
#pragma unroll
  for (int j = 0; j < 2; j++) {
    m[j] = fb_op<OP>(m[j], __shfl_xor_sync(0xffffffffu, m[j], 2));
    m[j] = fb_op<OP>(m[j], __shfl_xor_sync(0xffffffffu, m[j], 1));
  }
}

// The same rows with the thread's fold as a pairwise tree (independent chains)
template <int OP, int NT> __device__ __forceinline__ void fb_tree_rows(const float *acc, float *m) {
#pragma unroll
  for (int j = 0; j < 2; j++) {
    float x[2 * NT];
#pragma unroll
    for (int c = 0; c < 2 * NT; c++) x[c] = acc[4 * (c >> 1) + 2 * j + (c & 1)];
#pragma unroll
    for (int lv = 0; lv < 6; lv++) // halves of NT >> lv (constant bounds: the loops unroll, x stays in registers)
#pragma unroll
      for (int i = 0; i < NT; i++)
        if (i < (NT >> lv)) x[i] = fb_op<OP>(x[i], x[i + (NT >> lv)]);
    m[j] = fb_op<OP>(x[0], __shfl_xor_sync(0xffffffffu, x[0], 2));
    m[j] = fb_op<OP>(m[j], __shfl_xor_sync(0xffffffffu, m[j], 1));
  }
}

// Columns of an accumulator of NT n8 tiles whose lane holds rows g and g + 8 of its warp's
// 16: the lane folds its two rows (2 NT column values), then XOR 4, 8 and 16 over the
// lanes of the same t on every value (CUTLASS's column reduction); lanes 0-3 hold the
// warp's sums, column 8n + 2t + e. W > 1: the W warps' partial sums meet in shared
// memory (part[W][8 NT]) and thread c folds column c. The result goes to res[8 NT].
template <int OP, int NT, int W> __device__ __forceinline__ void fb_cols_xor(float *res, const float *acc, float *part) {
  const int l = threadIdx.x & 31, w = threadIdx.x >> 5, t = l & 3;
  float v[2 * NT];
#pragma unroll
  for (int c = 0; c < 2 * NT; c++) {
    v[c] = fb_op<OP>(acc[4 * (c >> 1) + (c & 1)], acc[4 * (c >> 1) + 2 + (c & 1)]);
    v[c] = fb_op<OP>(v[c], __shfl_xor_sync(0xffffffffu, v[c], 4));
    v[c] = fb_op<OP>(v[c], __shfl_xor_sync(0xffffffffu, v[c], 8));
    v[c] = fb_op<OP>(v[c], __shfl_xor_sync(0xffffffffu, v[c], 16));
  }
  float *dst = W > 1 ? part + w * 8 * NT : res;
  if (l < 4)
#pragma unroll
    for (int c = 0; c < 2 * NT; c++) dst[8 * (c >> 1) + 2 * t + (c & 1)] = v[c];
  if constexpr (W > 1) {
    __syncthreads();
    for (int c = threadIdx.x; c < 8 * NT; c += 32 * W) {
      float a = part[c];
#pragma unroll
      for (int k = 1; k < W; k++) a = fb_op<OP>(a, part[k * 8 * NT + c]);
      res[c] = a;
    }
    __syncthreads();
  } else {
    __syncwarp();
  }
}

// The same columns with a halving butterfly: at XOR 4 a lane keeps half of its values and
// sends the other half, at 8 a quarter, at 16 an eighth (2 NT - 2 NT / 8 shuffles instead
// of 3 x 2 NT); each lane ends with 2 NT / 8 sums, which it writes
template <int OP, int NT, int W> __device__ __forceinline__ void fb_cols_fly(float *res, const float *acc, float *part) {
  const int l = threadIdx.x & 31, w = threadIdx.x >> 5, t = l & 3;
  float v[2 * NT];
#pragma unroll
  for (int c = 0; c < 2 * NT; c++) v[c] = fb_op<OP>(acc[4 * (c >> 1) + (c & 1)], acc[4 * (c >> 1) + 2 + (c & 1)]);
#pragma unroll
  for (int s = 0; s < 3; s++) {
    const bool hi = (l >> (2 + s)) & 1;
#pragma unroll
    for (int k = 0; k < NT; k++) // NT >> s values kept (constant bounds: the loops unroll)
      if (k < (NT >> s)) {
        const int n = NT >> s;
        float keep = hi ? v[k + n] : v[k], send = hi ? v[k] : v[k + n];
        v[k] = fb_op<OP>(keep, __shfl_xor_sync(0xffffffffu, send, 4 << s));
      }
  }
  // value k of the lane is value ((g & 1) 2NT/2 + ((g >> 1) & 1) 2NT/4 + ((g >> 2) & 1) 2NT/8 + k)
  const int g = l >> 2, base = (g & 1) * NT + ((g >> 1) & 1) * (NT / 2) + ((g >> 2) & 1) * (NT / 4);
  float *dst = W > 1 ? part + w * 8 * NT : res;
#pragma unroll
  for (int k = 0; k < NT / 4; k++) {
    int c = base + k;
    dst[8 * (c >> 1) + 2 * t + (c & 1)] = v[k];
  }
  if constexpr (W > 1) {
    __syncthreads();
    for (int c = threadIdx.x; c < 8 * NT; c += 32 * W) {
      float a = part[c];
#pragma unroll
      for (int k = 1; k < W; k++) a = fb_op<OP>(a, part[k * 8 * NT + c]);
      res[c] = a;
    }
    __syncthreads();
  } else {
    __syncwarp();
  }
}

// Where element (r, c) of the 64 x 128 tile lives (a float index): PL 0 row-major with the
// 128-byte swizzle, PL 1 TMA's 128-byte boxes (4 panels [4][64][32]) swizzled, else a
// row stride of PL floats unswizzled. The swizzle: byte o goes to o ^ (((o >> 7) & 7) << 4).
template <int PL> __device__ __forceinline__ int fb_at(int r, int c) {
  if constexpr (PL == 0 || PL == 1) {
    int e = PL == 0 ? r * 128 + c : (c >> 5) * 2048 + r * 32 + (c & 31);
    return e ^ (((e >> 5) & 7) << 2);
  } else {
    return r * PL + c;
  }
}

// Rows of the tile: L lanes a row, each folding V-wide loads (float4 keeps its 16 bytes
// together under the swizzle, which moves 16-byte chunks), then XOR L/2 ... 1
template <int OP, int PL, int T, int L, int V> __device__ __forceinline__ void fb_smem_rows(float *res, const float *tile) {
  const int lane = threadIdx.x % L, grp = threadIdx.x / L;
  for (int r = grp; r < 64; r += T / L) {
    float a[4]; // four chains
#pragma unroll
    for (int k = 0; k < 4; k++) a[k] = OP == 0 ? 0.0f : __int_as_float(0xff800000);
#pragma unroll
    for (int i = 0; i < 128 / (L * V); i++) {
      int c = (i * L + lane) * V;
      if constexpr (V == 4) {
        float4 x = *(const float4 *)(tile + fb_at<PL>(r, c));
        a[0] = fb_op<OP>(a[0], x.x); a[1] = fb_op<OP>(a[1], x.y); a[2] = fb_op<OP>(a[2], x.z); a[3] = fb_op<OP>(a[3], x.w);
      } else {
        a[i & 3] = fb_op<OP>(a[i & 3], tile[fb_at<PL>(r, c)]);
      }
    }
    float s = fb_op<OP>(fb_op<OP>(a[0], a[1]), fb_op<OP>(a[2], a[3]));
#pragma unroll
    for (int m = L / 2; m >= 1; m /= 2) s = fb_op<OP>(s, __shfl_xor_sync(0xffffffffu, s, m));
    if (lane == 0) res[r] = s;
  }
  __syncthreads();
}

// Columns of the tile: thread c % (128 / V) takes V columns, P = T V / 128 row slices fold
// 64 / P rows each and meet in part[P][128]
template <int OP, int PL, int T, int V> __device__ __forceinline__ void fb_smem_cols(float *res, const float *tile, float *part) {
  constexpr int CG = 128 / V, P = T / CG, RS = 64 / P;
  const int cg = threadIdx.x % CG, p = threadIdx.x / CG;
  float a[4]; // V == 4: a chain a column; V == 1: four chains down the column
#pragma unroll
  for (int k = 0; k < 4; k++) a[k] = OP == 0 ? 0.0f : __int_as_float(0xff800000);
#pragma unroll 8
  for (int i = 0; i < RS; i++) {
    int r = p * RS + i;
    if constexpr (V == 4) {
      float4 x = *(const float4 *)(tile + fb_at<PL>(r, cg * 4));
      a[0] = fb_op<OP>(a[0], x.x); a[1] = fb_op<OP>(a[1], x.y); a[2] = fb_op<OP>(a[2], x.z); a[3] = fb_op<OP>(a[3], x.w);
    } else {
      a[i & 3] = fb_op<OP>(a[i & 3], tile[fb_at<PL>(r, cg)]);
    }
  }
  if constexpr (V == 1) a[0] = fb_op<OP>(fb_op<OP>(a[0], a[1]), fb_op<OP>(a[2], a[3]));
  if constexpr (P > 1) {
#pragma unroll
    for (int k = 0; k < V; k++) part[p * 128 + cg * V + k] = a[k];
    __syncthreads();
    for (int c = threadIdx.x; c < 128; c += T) {
      float s = part[c];
#pragma unroll
      for (int q = 1; q < P; q++) s = fb_op<OP>(s, part[q * 128 + c]);
      res[c] = s;
    }
  } else {
#pragma unroll
    for (int k = 0; k < V; k++) res[cg * V + k] = a[k];
  }
  __syncthreads();
}

// the accumulator of warp w (mma: 16 x 64 tile (4 b + w) % 16 of 1024 floats; wgmma: the
// 64 x 128 tile b % 16 of 8192), each register from its element by the PTX formula
#define FB_LOAD_MMA(acc)                                                                         \
  { const float *src = in + (long long)((blockIdx.x * 4 + w) % 16) * 1024;                         \
    _Pragma("unroll") for (int i = 0; i < 32; i++)                                               \
      acc[i] = src[(g + 8 * ((i >> 1) & 1)) * 64 + 8 * (i >> 2) + 2 * t + (i & 1)]; }
#define FB_LOAD_WG(acc)                                                                          \
  { const float *src = in + (long long)(blockIdx.x % 16) * 8192;                                 \
    _Pragma("unroll") for (int i = 0; i < 64; i++)                                               \
      acc[i] = src[(16 * w + g + 8 * ((i >> 1) & 1)) * 128 + 8 * (i >> 2) + 2 * t + (i & 1)]; }
)FB";

enum { FR_MMA, FR_WG, FR_SMEM };

struct FragRun {
    int kind, op;            // FR_*, 0 sum / 1 max
    bool rows;
    int pl = 0;              // smem: placement (0 swizzled, 1 TMA panels, 2 TMA by strides, else a row stride)
    int id;
    std::string label, func, variant, target_peer; // target_peer: the peer the target names
    std::vector<Impl> impls; // [0]: tilec
    std::vector<int> regs, local_bytes;
};

static const char *frag_rows_layout_mma = "linear(reg=((8, 0)), lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)))";
static const char *frag_rows_layout_wg =
    "linear(reg=((8, 0)), lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)), warp=((16, 0), (32, 0)))";

// outputs a CTA writes: a replicated row result every thread holds 2 of; columns and shared
// tiles go through a shared res array
static int frag_nout(const FragRun &f) {
    if (f.kind != FR_SMEM && f.rows) return 128 * 2;
    if (f.kind == FR_MMA) return 4 * 64;
    return f.kind == FR_WG ? 128 : (f.rows ? 64 : 128);
}

static std::string frag_func(const FragRun &f) {
    const char *op = op_name[f.op];
    char b[1024];
    if (f.kind == FR_MMA && f.rows)
        std::snprintf(b, sizeof b, "func %s(S: f32[16, 64] local layout=mma_m16n8k16_c, m: f32[16, 1] local layout=%s) threads=128 {\n  warp.%s(m, S, axes=(1))\n}\n",
                      f.func.c_str(), frag_rows_layout_mma, op);
    else if (f.kind == FR_WG && f.rows)
        std::snprintf(b, sizeof b, "func %s(S: f32[64, 128] local layout=wgmma_m64nNk16_d, m: f32[64, 1] local layout=%s) threads=128 {\n  warpgroup.%s(m, S, axes=(1))\n}\n",
                      f.func.c_str(), frag_rows_layout_wg, op);
    else if (f.kind == FR_MMA)
        std::snprintf(b, sizeof b, "func %s(S: f32[16, 64] local layout=mma_m16n8k16_c, s: f32[4, 64] shared) threads=128 {\n  warp.%s(s[warp_id], S, axes=(0))\n}\n",
                      f.func.c_str(), op);
    else if (f.kind == FR_WG)
        std::snprintf(b, sizeof b, "func %s(S: f32[64, 128] local layout=wgmma_m64nNk16_d, s: f32[128] shared) threads=128 {\n  warpgroup.%s(s, S, axes=(0))\n}\n",
                      f.func.c_str(), op);
    else if (f.pl == 0)
        std::snprintf(b, sizeof b, "func %s(dst: f32[%d] shared, src: f32[64, 128] shared swizzle=sw128) threads=128 {\n  cta.%s(dst, src, axes=(%s))\n}\n",
                      f.func.c_str(), f.rows ? 64 : 128, op, f.rows ? "-1" : "0");
    else if (f.pl == 1) // TMA's boxes as the dense [4][64][32] they are
        std::snprintf(b, sizeof b, "func %s(dst: f32[%s] shared, src: f32[4, 64, 32] shared swizzle=sw128) threads=128 {\n  cta.%s(dst, src, axes=(%s))\n}\n",
                      f.func.c_str(), f.rows ? "64" : "4, 32", op, f.rows ? "0, 2" : "1");
    else if (f.pl == 2) // the same memory as [row, panel, column] by strides, where a parameter takes strides=
        std::snprintf(b, sizeof b, "func %s(dst: f32[%s] shared, src: f32[64, 4, 32] shared strides=(32, 2048, 1) swizzle=sw128) threads=128 {\n  cta.%s(dst, src, axes=(%s))\n}\n",
                      f.func.c_str(), f.rows ? "64" : "128", op, f.rows ? "1, 2" : "0");
    else
        std::snprintf(b, sizeof b, "func %s(dst: f32[%d] shared, src: f32[64, %d] shared) threads=128 {\n  cta.%s(dst, src%s, axes=(%s))\n}\n",
                      f.func.c_str(), f.rows ? 64 : 128, f.pl, op, f.pl != 128 ? "[:, 0:128]" : "", f.rows ? "-1" : "0");
    return b;
}

// a kernel of the harness around `call`; the fragment's registers pass through an empty
// asm each rep, a register result through another
static std::string frag_harness(const FragRun &f, const std::string &kname, const std::string &call) {
    std::string s = "extern \"C\" __global__ void __launch_bounds__(128) " + kname +
                    "(const float *in, float *out, long long *cyc, int reps) {\n"
                    "  const int l = threadIdx.x & 31, w = threadIdx.x >> 5, g = l >> 2, t = l & 3;\n  (void)w; (void)g; (void)t;\n";
    int nout = frag_nout(f);
    bool regs_out = f.kind != FR_SMEM && f.rows;
    int nr = f.kind == FR_MMA ? 32 : 64;
    if (f.kind == FR_SMEM) {
        int span = f.pl <= 2 ? 8192 : 64 * f.pl;
        s += "  __shared__ __align__(1024) float tile[" + std::to_string(span) + "];\n";
        s += "  __shared__ __align__(16) float res[" + std::to_string(nout) + "];\n";
        if (!f.rows) s += "  __shared__ __align__(16) float part[4 * 128];\n";
        s += "  { const float *src = in + (long long)(blockIdx.x % 16) * 8192;\n"
             "    for (int i = threadIdx.x; i < 8192; i += 128) tile[fb_at<" + std::to_string(f.pl == 2 ? 1 : f.pl) +
             ">(i >> 7, i & 127)] = src[i]; }\n";
        s += "  for (int i = threadIdx.x; i < " + std::to_string(nout) + "; i += 128) res[i] = fb_nan();\n";
    } else {
        s += "  float acc[" + std::to_string(nr) + "];\n";
        s += f.kind == FR_MMA ? "  FB_LOAD_MMA(acc)\n" : "  FB_LOAD_WG(acc)\n";
        if (regs_out) s += "  float m[2] = {fb_nan(), fb_nan()};\n";
        else {
            s += "  __shared__ __align__(16) float res[" + std::to_string(nout) + "];\n";
            s += "  __shared__ __align__(16) float part[4 * 128];\n";
            s += "  for (int i = threadIdx.x; i < " + std::to_string(nout) + "; i += 128) res[i] = fb_nan();\n";
        }
    }
    s += "  __syncthreads();\n  long long t0 = clock64();\n#pragma unroll 1\n  for (int k = 0; k < reps; k++) {\n";
    if (f.kind != FR_SMEM)
        s += "#pragma unroll\n    for (int i = 0; i < " + std::to_string(nr) + "; i++) asm volatile(\"\" : \"+f\"(acc[i]));\n";
    s += "    " + call + ";\n";
    if (regs_out) s += "    asm volatile(\"\" :: \"f\"(m[0]), \"f\"(m[1]));\n";
    s += "  }\n  long long t1 = clock64();\n  __syncthreads();\n";
    if (regs_out)
        s += "  out[((long long)blockIdx.x * 128 + threadIdx.x) * 2] = m[0];\n"
             "  out[((long long)blockIdx.x * 128 + threadIdx.x) * 2 + 1] = m[1];\n";
    else
        s += "  for (int i = threadIdx.x; i < " + std::to_string(nout) + "; i += 128) out[(long long)blockIdx.x * " +
             std::to_string(nout) + " + i] = res[i];\n";
    s += "  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;\n}\n";
    return s;
}

static void frag_peers(FragRun &f, std::string &src) {
    auto add = [&](const std::string &name, const std::string &call) {
        Impl p;
        p.name = name;
        p.kernel = "f" + std::to_string(f.id) + "_" + std::to_string(f.impls.size());
        src += frag_harness(f, p.kernel, call);
        f.impls.push_back(p);
    };
    std::string op = std::to_string(f.op);
    if (f.kind != FR_SMEM && f.rows) {
        std::string nt = f.kind == FR_MMA ? "8" : "16";
        f.target_peer = f.kind == FR_MMA ? "FA2 thread_reduce_ + Allreduce<4>" : "FA3 reduce_max/reduce_sum";
        add("FA2 thread_reduce_ + Allreduce<4>", "fb_fa_rows<" + op + ", " + nt + ", 0>(acc, m)");
        add("FA3 reduce_max/reduce_sum", "fb_fa_rows<" + op + ", " + nt + ", 1>(acc, m)");
        add("tree fold + Allreduce<4>", "fb_tree_rows<" + op + ", " + nt + ">(acc, m)");
    } else if (f.kind != FR_SMEM) {
        std::string a = f.kind == FR_MMA ? "8, 1>(res + w * 64, acc, part)" : "16, 4>(res, acc, part)";
        f.target_peer = "XOR 4,8,16 + smem combine";
        add("XOR 4,8,16 + smem combine", "fb_cols_xor<" + op + ", " + a);
        add("halving butterfly 4,8,16 + smem", "fb_cols_fly<" + op + ", " + a);
    } else {
        std::string pl = std::to_string(f.pl == 2 ? 1 : f.pl);
        bool v4 = f.pl <= 2 || f.pl % 4 == 0;
        if (f.rows) {
            for (int L : {4, 8, 16, 32})
                for (int V : {1, 4}) {
                    if (V == 4 && !v4) continue;
                    add(std::to_string(L) + " lanes a row, " + (V == 4 ? "16-byte" : "4-byte"),
                        "fb_smem_rows<" + op + ", " + pl + ", 128, " + std::to_string(L) + ", " + std::to_string(V) + ">(res, tile)");
                }
        } else {
            for (int V : {1, 4}) {
                if (V == 4 && !v4) continue;
                add(std::string("column loop, ") + (V == 4 ? "16-byte" : "4-byte"),
                    "fb_smem_cols<" + op + ", " + pl + ", 128, " + std::to_string(V) + ">(res, tile, part)");
            }
        }
    }
}

static std::string frag_label(const FragRun &f) {
    std::string s = f.kind == FR_MMA ? "mma 16x64 warp" : f.kind == FR_WG ? "wgmma 64x128 warpgroup" : "smem 64x128 ";
    if (f.kind == FR_SMEM) s += f.pl == 0 ? "swizzle128" : f.pl == 1 ? "swizzle128 TMA panels" : f.pl == 2 ? "swizzle128 TMA strides" : "stride" + std::to_string(f.pl);
    return s + " " + op_name[f.op] + " " + (f.rows ? "rows" : "cols");
}

// the cases and their one NVRTC source: the funcs that lower (a placement tilec does not
// take yet, e.g. a swizzle before it exists, is skipped with a line saying so)
static void frag_sources(std::vector<FragRun> &runs, std::string &src) {
    std::vector<FragRun> cases;
    for (int kind : {FR_MMA, FR_WG})
        for (int rows = 1; rows >= 0; rows--)
            for (int op = 0; op < 2; op++) {
                if (!rows && op == 1) continue; // columns: the sums of the target
                FragRun f;
                f.kind = kind, f.op = op, f.rows = rows;
                cases.push_back(f);
            }
    for (int rows = 1; rows >= 0; rows--)
        for (int pl : {0, 1, 2, 128, 129, 132, 136}) {
            FragRun f;
            f.kind = FR_SMEM, f.op = 0, f.rows = rows, f.pl = pl;
            cases.push_back(f);
        }
    std::string funcs, harnesses;
    for (auto &f : cases) {
        f.id = (int)runs.size();
        f.func = "tilec_f" + std::to_string(f.id);
        f.label = frag_label(f);
        std::string text = frag_func(f);
        if (!lowers(text)) {
            std::string why = tilec_diag_text(ctx);
            std::printf("  fragments %-44s skipped: tilec does not take it (yet): %s\n", f.label.c_str(),
                        why.empty() ? "it does not lower for this GPU" : why.substr(0, why.find('\n')).c_str());
            continue;
        }
        funcs += text;
        Impl mine;
        mine.name = "tilec";
        mine.kernel = "f" + std::to_string(f.id) + "_0";
        f.impls.push_back(mine);
        std::string call;
        if (f.kind != FR_SMEM && f.rows) call = f.func + "(acc, m)";
        else if (f.kind != FR_SMEM) call = f.func + "(acc, res)";
        else call = f.func + "(res, tile)";
        harnesses += frag_harness(f, mine.kernel, call);
        frag_peers(f, harnesses);
        runs.push_back(f);
    }
    std::string why;
    tilec_program *p = parse(funcs, &why);
    if (!p) {
        std::fprintf(stderr, "bench: %s", why.c_str());
        std::exit(1);
    }
    tilec_target tt = {TILEC_BACKEND_CUDA, arch, 32};
    char *emitted = nullptr;
    tilec_ok(tilec_emit(p, &tt, &emitted, nullptr), "tilec_emit");
    for (auto &f : runs) f.variant = variant_of(emitted, f.func);
    src = std::string(frag_prelude) + emitted + harnesses;
    tilec_free(emitted);
    tilec_program_free(p);
}

// bench --fragment-sources DIR [--arch sm_XY]: the fragment part's NVRTC source (no GPU),
// DIR/fragments.cu (to compile by hand: nvcc -std=c++17 -arch=sm_90 -cubin -Xptxas -v),
// and its cubin from NVRTC, DIR/fragments.cubin (cuobjdump -res-usage)
static int write_frag_sources(const char *dir) {
    tilec_open(&ctx);
    std::vector<FragRun> runs;
    std::string src;
    frag_sources(runs, src);
    std::string path = std::string(dir) + "/fragments.cu";
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f) {
        std::fprintf(stderr, "bench: cannot write %s\n", path.c_str());
        return 1;
    }
    std::fputs(src.c_str(), f);
    std::fclose(f);
    // NVRTC needs no GPU: the module must compile as bench_fragments compiles it; the cubin
    // is kept for cuobjdump -res-usage (registers a kernel)
    std::string log;
    std::vector<char> cubin = nvrtc_cubin(src, &log);
    if (cubin.empty()) {
        std::fprintf(stderr, "bench: NVRTC (%s) failed on %s:\n%s\n", arch, path.c_str(), log.c_str());
        return 1;
    }
    std::string cpath = std::string(dir) + "/fragments.cubin";
    if (FILE *c = std::fopen(cpath.c_str(), "wb")) {
        std::fwrite(cubin.data(), 1, cubin.size(), c);
        std::fclose(c);
    }
    std::printf("wrote %s and %s (NVRTC, %s)\n", path.c_str(), cpath.c_str(), arch);
    for (auto &r : runs) {
        std::printf("%-48s %-12s", r.label.c_str(), ("[" + r.variant + "]").c_str());
        for (auto &im : r.impls) std::printf(" %s=%s", im.kernel.c_str(), im.name.c_str());
        std::printf("\n");
    }
    tilec_close(ctx);
    return 0;
}

// the reference of every output a CTA writes (CTA b), and the scale of a sum's rounding
static void frag_reference(const FragRun &f, const std::vector<float> &in, int b, std::vector<double> *want,
                           std::vector<double> *mag) {
    int nout = frag_nout(f);
    want->assign(nout, 0);
    mag->assign(nout, 0);
    auto fold = [&](const float *tile, int cols, bool row, int k, double *w, double *m) {
        double acc = f.op == 0 ? 0 : -INFINITY, s = 0;
        int n = row ? cols : (int)(f.kind == FR_MMA ? 16 : 64);
        for (int i = 0; i < n; i++) {
            double x = row ? tile[k * cols + i] : tile[i * cols + k];
            acc = f.op == 0 ? acc + x : std::max(acc, x);
            s += std::fabs(x);
        }
        *w = acc, *m = s;
    };
    for (int o = 0; o < nout; o++) {
        if (f.kind == FR_MMA && f.rows) { // thread o / 2, register o % 2: row g + 8 j of warp w's tile
            int tid = o / 2, j = o % 2, w = tid / 32, g = (tid % 32) / 4;
            fold(&in[(size_t)((b * 4 + w) % 16) * 1024], 64, true, g + 8 * j, &(*want)[o], &(*mag)[o]);
        } else if (f.kind == FR_WG && f.rows) {
            int tid = o / 2, j = o % 2, w = tid / 32, g = (tid % 32) / 4;
            fold(&in[(size_t)(b % 16) * 8192], 128, true, 16 * w + g + 8 * j, &(*want)[o], &(*mag)[o]);
        } else if (f.kind == FR_MMA) {
            int w = o / 64;
            fold(&in[(size_t)((b * 4 + w) % 16) * 1024], 64, false, o % 64, &(*want)[o], &(*mag)[o]);
        } else {
            fold(&in[(size_t)(b % 16) * 8192], 128, f.rows, o, &(*want)[o], &(*mag)[o]);
        }
    }
}

// every output of every CTA (a CTA's reference is that of CTA b % 16): sums within 1e-5 of
// their magnitude, max exact
static bool frag_check(const FragRun &f, const std::vector<float> &in, const std::vector<float> &got, int ctas) {
    int nout = frag_nout(f);
    std::vector<std::vector<double>> want(16), mag(16);
    for (int b = 0; b < 16; b++) frag_reference(f, in, b, &want[b], &mag[b]);
    for (int b = 0; b < ctas; b++)
        for (int o = 0; o < nout; o++) {
            double g = got[(size_t)b * nout + o], w = want[b % 16][o], tol = f.op == 0 ? 1e-5 * mag[b % 16][o] : 0;
            if (!(std::fabs(g - w) <= tol)) {
                std::fprintf(stderr, "    %s: CTA %d output %d: got %.9g want %.9g\n", f.label.c_str(), b, o, g, w);
                return false;
            }
        }
    return true;
}

static void bench_fragments() {
    int sms = 0;
    CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::vector<FragRun> runs;
    std::string src;
    frag_sources(runs, src);
    progress("fragments: compiling " + std::to_string(runs.size()) + " cases");
    std::string log;
    std::vector<char> cubin = nvrtc_cubin(src, &log);
    if (cubin.empty()) {
        std::fprintf(stderr, "NVRTC failed on the fragment module:\n%s\n", log.c_str());
        cases_wrong++;
        return;
    }
    Module mod = load_cubin(cubin);
    std::printf("  fragments: cycles a call (median over CTAs) at 1/SM (%d CTAs of 128 threads) and 4/SM (%d); "
                "regs = registers a thread (+ local bytes); ratio = peer / tilec (> 1: tilec ahead)\n",
                sms, 4 * sms);
    std::vector<float> in = random_floats(16 * 8192, 33);
    float *d_in, *d_out;
    long long *d_cyc;
    CUDA(cudaMalloc(&d_in, in.size() * 4));
    CUDA(cudaMemcpy(d_in, in.data(), in.size() * 4, cudaMemcpyHostToDevice));
    CUDA(cudaMalloc(&d_out, (size_t)4 * sms * 256 * 4));
    CUDA(cudaMalloc(&d_cyc, (size_t)4 * sms * 8));
    int reps = quick ? 256 : 1024;
    for (auto &f : runs) {
        progress("fragments " + f.label);
        int nout = frag_nout(f);
        std::vector<float> got((size_t)4 * sms * nout);
        for (auto &im : f.impls) {
            cudaKernel_t k = mod.kernel(im.kernel.c_str());
            cudaFuncAttributes fa = {};
            if (cudaFuncGetAttributes(&fa, (const void *)k) != cudaSuccess) cudaGetLastError(), fa.numRegs = -1;
            f.regs.push_back(fa.numRegs);
            f.local_bytes.push_back((int)fa.localSizeBytes);
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&im.fit, (const void *)k, 128, 0) != cudaSuccess)
                cudaGetLastError(), im.fit = 4;
            for (int occ = 0; occ < 2; occ++) {
                int per = occ == 0 ? 1 : std::min(4, im.fit);
                if (im.fit < 1) break;
                int ctas = per * sms;
                void *args[] = {&d_in, &d_out, &d_cyc, &reps};
                launch(k, ctas, 128, args); // warm-up
                CUDA(cudaMemset(d_out, 0xff, (size_t)ctas * nout * 4));
                launch(k, ctas, 128, args);
                CUDA(cudaDeviceSynchronize());
                std::vector<long long> cyc(ctas);
                CUDA(cudaMemcpy(got.data(), d_out, (size_t)ctas * nout * 4, cudaMemcpyDeviceToHost));
                CUDA(cudaMemcpy(cyc.data(), d_cyc, ctas * 8, cudaMemcpyDeviceToHost));
                im.ok[occ] = frag_check(f, in, got, ctas);
                std::vector<double> per_call;
                for (long long c : cyc) per_call.push_back((double)c / reps);
                im.cyc[occ] = median(per_call);
                if (!im.ok[occ]) {
                    cases_wrong++;
                    std::printf("  fragments %-44s %-34s WRONG (%s)\n", f.label.c_str(), im.name.c_str(), occ ? "4/SM" : "1/SM");
                }
            }
        }
        for (size_t i = 0; i < f.impls.size(); i++) {
            const Impl &im = f.impls[i];
            auto c = [&](int occ) { return im.ok[occ] ? fmt("%.1f", im.cyc[occ]) : std::string("-"); };
            std::string name = i ? im.name : "tilec [" + f.variant + "]";
            std::printf("  fragments %-44s %-34s %8s %8s  regs %3d%s%s\n", f.label.c_str(), name.c_str(), c(0).c_str(),
                        c(1).c_str(), f.regs[i], f.local_bytes[i] ? fmt(" + %g local bytes", f.local_bytes[i]).c_str() : "",
                        im.fit < 4 ? fmt("  (%g/SM fit)", im.fit).c_str() : "");
            if (csv)
                for (int occ = 0; occ < 2; occ++)
                    std::fprintf(csv, "fragments,%s,\"%s\",,%.2f,cycles %d/SM regs %d%s\n", f.label.c_str(), name.c_str(),
                                 im.cyc[occ], occ ? 4 : 1, f.regs[i], im.ok[occ] ? "" : " WRONG");
        }
        std::fflush(stdout);
    }
    // the fragments' targets
    auto find = [&](int kind, int op, bool rows, int pl) -> FragRun * {
        for (auto &f : runs)
            if (f.kind == kind && f.op == op && f.rows == rows && (kind != FR_SMEM || f.pl == pl)) return &f;
        return nullptr;
    };
    auto line = [&](const std::string &what, double r1, double r4, const std::string &goal, double goal_ratio, const std::string &note) {
        bool met = r1 >= goal_ratio && r4 >= goal_ratio;
        std::printf("  fragments target: %-64s %5.2f %5.2f  (goal %s)  %s\n", what.c_str(), r1, r4, goal.c_str(),
                    met ? "met" : "MISSED");
        if (csv) std::fprintf(csv, "fragments-target,%s,,,%.4f,%s\n", what.c_str(), std::min(r1, r4), met ? "met" : "missed");
        target("fragments " + what + " (1/SM, 4/SM)", fmt("%.2f", r1) + fmt(", %.2f", r4), goal,
               std::min(r1, r4) / goal_ratio, note);
    };
    auto vs_peer = [&](FragRun *f, const std::string &what) {
        if (!f) {
            std::printf("  fragments target: %-64s not measured (tilec does not take it)\n", what.c_str());
            target("fragments " + what, "not measured", "peer / tilec >= 1", 0, "tilec does not take it");
            return;
        }
        double r[2] = {0, 0};
        const Impl &me = f->impls[0];
        for (auto &im : f->impls)
            if (im.name == f->target_peer)
                for (int occ = 0; occ < 2; occ++)
                    if (me.ok[occ] && im.ok[occ] && me.cyc[occ] > 0) r[occ] = im.cyc[occ] / me.cyc[occ];
        line(what + ", " + f->target_peer + " / tilec", r[0], r[1], "peer / tilec >= 1", 1.0,
             fmt("tilec %.1f", me.cyc[0]) + fmt(" / %.1f cycles", me.cyc[1]));
    };
    for (int op = 0; op < 2; op++) {
        vs_peer(find(FR_MMA, op, true, 0), std::string("mma 16x64 row ") + op_name[op]);
        vs_peer(find(FR_WG, op, true, 0), std::string("wgmma 64x128 row ") + op_name[op]);
    }
    vs_peer(find(FR_MMA, 0, false, 0), "mma 16x64 column sum");
    vs_peer(find(FR_WG, 0, false, 0), "wgmma 64x128 column sum");
    // the swizzled tile against tilec on the best padding (the fewest cycles of the four)
    for (int rows = 1; rows >= 0; rows--) {
        FragRun *best[2] = {nullptr, nullptr};
        for (int occ = 0; occ < 2; occ++)
            for (int pl : {128, 129, 132, 136}) {
                FragRun *f = find(FR_SMEM, 0, rows, pl);
                if (f && f->impls[0].ok[occ] && (!best[occ] || f->impls[0].cyc[occ] < best[occ]->impls[0].cyc[occ])) best[occ] = f;
            }
        for (int pl : {0, 1, 2}) {
            FragRun *f = find(FR_SMEM, 0, rows, pl);
            std::string what = std::string("smem 64x128 ") + (pl == 0 ? "swizzle128" : pl == 1 ? "swizzle128 TMA panels" : "swizzle128 TMA strides") +
                               (rows ? " rows" : " cols") + ", best pad / swizzled";
            if (!f || !best[0] || !best[1]) {
                if (pl == 2 && !f) continue; // the strides form: only where a parameter takes strides=
                std::printf("  fragments target: %-64s not measured (tilec does not take it)\n", what.c_str());
                target("fragments " + what, "not measured", ">= 0.95", 0, "tilec does not take it");
                continue;
            }
            double r[2] = {0, 0};
            for (int occ = 0; occ < 2; occ++)
                if (f->impls[0].ok[occ]) r[occ] = best[occ]->impls[0].cyc[occ] / f->impls[0].cyc[occ];
            line(what, r[0], r[1], ">= 0.95 (within 5%)", 0.95,
                 "best pad " + std::to_string(best[0]->pl) + " / " + std::to_string(best[1]->pl));
        }
    }
    CUDA(cudaFree(d_in));
    CUDA(cudaFree(d_out));
    CUDA(cudaFree(d_cyc));
    CUDA(cudaLibraryUnload(mod.lib));
}

// A multi-pass host loop: a CTA reduces 512 elements to one, relaunched on the partials
// until one is left; its two kernels are tilec programs forcing smem_tree (the branchy
// halving tree) and cta_tree (warp shuffles, a slot per warp).
static void bench_multipass() {
    for (int e : {24, 26}) {
        long long n0 = 1ll << e;
        std::vector<float> h = random_floats((size_t)n0, 1234 + e);
        double want = 0, mag = 0;
        for (float x : h) want += x, mag += std::fabs(x);
        float *buf[3];
        CUDA(cudaMalloc(&buf[0], n0 * 4));
        CUDA(cudaMalloc(&buf[1], n0 / 512 * 4 + 4));
        CUDA(cudaMalloc(&buf[2], n0 / 512 * 4 + 4));
        CUDA(cudaMemcpy(buf[0], h.data(), n0 * 4, cudaMemcpyHostToDevice));
        for (const char *v : {"smem_tree", "cta_tree"}) {
            progress(std::string("multi-pass ") + v + " 2^" + std::to_string(e));
            std::string text;
            std::vector<std::pair<std::string, long long>> passes; // kernel, grid
            for (long long n = n0; n > 1;) {
                long long w = n >= 512 ? 512 : n, g = n / w;
                std::string name = std::string("p") + std::to_string(passes.size());
                char b[512];
                std::snprintf(b, sizeof b,
                              "kernel %s(A: f32[%lld, %lld] global, B: f32[%lld, 1] global) threads=256 grid=%lld {\n"
                              "  shared As: f32[%lld]\n  shared Bs: f32[1]\n  cta.copy(As, A[cta_id])\n  cta.sync()\n"
                              "  cta.sum(Bs, As, axes=(0), variant=%s)\n  cta.sync()\n  cta.copy(B[cta_id], Bs)\n}\n",
                              name.c_str(), g, w, g, g, w, v);
                text += b;
                passes.push_back({name, g});
                n = g;
            }
            Module m = tilec_module(text);
            std::vector<cudaKernel_t> ks;
            for (auto &p : passes) ks.push_back(m.kernel(p.first.c_str()));
            auto run = [&](int) { // ping-pong between the two partial buffers
                const float *in = buf[0];
                for (size_t i = 0; i < passes.size(); i++) {
                    float *out = buf[1 + i % 2];
                    void *args[] = {&in, &out};
                    launch(ks[i], passes[i].second, 256, args);
                    in = out;
                }
            };
            float *last = buf[1 + (passes.size() - 1) % 2];
            CUDA(cudaMemset(last, 0xff, 4));
            run(0);
            float got;
            CUDA(cudaMemcpy(&got, last, 4, cudaMemcpyDeviceToHost));
            bool ok = std::fabs(got - want) <= 1e-5 * mag;
            cases_wrong += !ok;
            double ms = time_ms(run, 1);
            row("multipass", "sum 2^" + std::to_string(e), (std::string("multi-pass ") + v).c_str(), ms, (double)n0 * 4 + 4,
                ok ? "checked (multi-pass)" : "WRONG");
            CUDA(cudaLibraryUnload(m.lib));
        }
        for (auto b : buf) CUDA(cudaFree(b));
    }
}

// ---- the JIT's latencies ---------------------------------------------------------------

// A shape no other case uses, so its first call compiles (scripts/bench kernels gives the
// run an empty disk cache).
static tilec_reduce_desc latency_desc() { return desc_2d(TILEC_OP_MAX, TILEC_F32, 4096, 1003, 1); }

// bench --jit-child: a new process, the runtime open (context creation is not counted),
// then the time to the first result of latency_desc() — from the disk cache the parent
// left. Prints milliseconds.
static int jit_child() {
    tilec_open(&ctx);
    tilec_ok(tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0), "tilec_runtime_open");
    tilec_reduce_desc d = latency_desc();
    void *in, *out;
    tilec_ok(tilec_mem_alloc(ctx, 4096 * 1003 * 4, &in), "alloc");
    tilec_ok(tilec_mem_alloc(ctx, 4096 * 4, &out), "alloc");
    tilec_ok(tilec_synchronize(ctx), "sync");
    double t0 = now_s();
    tilec_ok(tilec_reduce(ctx, &d, in, out), "tilec_reduce");
    tilec_ok(tilec_synchronize(ctx), "sync");
    std::printf("%.3f\n", (now_s() - t0) * 1e3);
    tilec_close(ctx);
    return 0;
}

__global__ void empty_kernel(const float *, float *) {}

static void bench_jit(const char *self) {
    progress("JIT latencies");
    tilec_reduce_desc d = latency_desc();
    float *in, *out;
    CUDA(cudaMalloc(&in, 4096 * 1003 * 4));
    CUDA(cudaMalloc(&out, 4096 * 4));
    CUDA(cudaMemset(in, 0, 4096 * 1003 * 4));
    CUDA(cudaDeviceSynchronize());
    double t0 = now_s();
    tilec_ok(tilec_reduce(ctx, &d, in, out), "tilec_reduce");
    CUDA(cudaDeviceSynchronize());
    double first = (now_s() - t0) * 1e3;
    // host time per call, enqueue only: tilec_reduce (cached) and a bare launch
    enum { CALLS = 2000 };
    auto host_us = [&](auto fn) {
        std::vector<double> runs;
        for (int k = 0; k < 5; k++) {
            CUDA(cudaDeviceSynchronize());
            double a = now_s();
            for (int i = 0; i < CALLS; i++) fn();
            runs.push_back((now_s() - a) / CALLS * 1e6);
        }
        CUDA(cudaDeviceSynchronize());
        std::sort(runs.begin(), runs.end());
        return runs[2];
    };
    double cached = host_us([&] { tilec_reduce(ctx, &d, in, out); });
    double bare = host_us([&] {
        const float *a = in;
        float *b = out;
        void *args[] = {&a, &b};
        cudaLaunchKernel((const void *)empty_kernel, dim3(512), dim3(256), args, 0, 0);
    });
    CUDA(cudaGetLastError());
    // a new process that finds the kernel in the disk cache
    std::string cmd = std::string(self) + " --jit-child";
    double child = -1;
    if (FILE *p = popen(cmd.c_str(), "r")) {
        if (std::fscanf(p, "%lf", &child) != 1) child = -1;
        pclose(p);
    }
    std::printf("  %-8s first call of a new kernel (plan, NVRTC, load, launch)   %8.2f ms\n", "jit", first);
    std::printf("  %-8s cached tilec_reduce, host time                          %8.2f us\n", "jit", cached);
    std::printf("  %-8s bare cudaLaunchKernel, host time                         %8.2f us\n", "jit", bare);
    std::printf("  %-8s new process, disk-cache hit to first result              %8.3f ms\n", "jit", child);
    if (csv) {
        std::fprintf(csv, "jit,first call,tilec,,%.3f,ms\njit,cached call,tilec,,%.3f,us\n", first, cached);
        std::fprintf(csv, "jit,bare launch,cuda,,%.3f,us\njit,disk hit,tilec,,%.3f,ms\n", bare, child);
    }
    target("JIT first call of a new kernel (on the GPU machine; plan + NVRTC + load + launch)", fmt("%.1f ms", first),
           "<= 80 ms", 80 / first, "the dev-box NVRTC compile is in docs/performance.md");
    target("JIT cached call, host time over a bare launch", fmt("%.2f us", cached - bare), "<= 5 us",
           5 / std::max(cached - bare, 0.01), fmt("%.2f us", cached) + fmt(" vs %.2f us", bare));
    target("JIT new process, disk-cache hit to first result", child < 0 ? "failed" : fmt("%.2f ms", child), "<= 2 ms",
           child < 0 ? 0 : 2 / child);
    CUDA(cudaFree(in));
    CUDA(cudaFree(out));
}

// ---- the report ------------------------------------------------------------------------

static void report(const char *md_path, const cudaDeviceProp &prop, int driver) {
    target("deterministic: every tilec case gave the same bits three times", all_deterministic ? "yes" : "NO", "yes",
           all_deterministic ? 1 : 0);
    std::printf("\ntargets (docs/performance.md): ratio = measured / goal, >= 1 meets it\n");
    int met = 0;
    for (auto &t : targets) {
        met += t.ratio >= 1;
        std::printf("  %-72s %-22s %-12s %6.3f  %s\n", t.what.c_str(), t.measured.c_str(), t.goal.c_str(), t.ratio,
                    t.ratio >= 1 ? "met" : "MISSED");
    }
    std::printf("bench: %d of %zu targets met; %d case(s) wrong\n", met, targets.size(), cases_wrong);
    if (!md_path) return;
    FILE *f = std::fopen(md_path, "w");
    if (!f) return;
    std::fprintf(f, "%s (%d SMs, %.0f MB L2), driver API %d.%d; %d of %zu targets met; %s.\n\n", prop.name,
                 prop.multiProcessorCount, prop.l2CacheSize / 1e6, driver / 1000, driver % 1000 / 10, met,
                 targets.size(), cases_wrong ? "SOME RESULTS WERE WRONG" : "every result checked before it was timed");
    std::fprintf(f, "| target | measured | goal | ratio | |\n|---|---|---|---|---|\n");
    for (auto &t : targets)
        std::fprintf(f, "| %s | %s%s%s | %s | %.3f | %s |\n", t.what.c_str(), t.measured.c_str(), t.note.empty() ? "" : " — ",
                     t.note.c_str(), t.goal.c_str(), t.ratio, t.ratio >= 1 ? "met" : "**missed**");
    std::fclose(f);
}

int main(int argc, char **argv) {
    const char *md = nullptr, *only = nullptr, *tile_dir = nullptr, *frag_dir = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!std::strcmp(argv[i], "--jit-child")) return jit_child();
        else if (!std::strcmp(argv[i], "--arch") && i + 1 < argc) std::snprintf(arch, sizeof arch, "%s", argv[++i]);
        else if (!std::strcmp(argv[i], "--tile-sources") && i + 1 < argc) tile_dir = argv[++i];
        else if (!std::strcmp(argv[i], "--fragment-sources") && i + 1 < argc) frag_dir = argv[++i];
        else if (!std::strcmp(argv[i], "--tile-variants") && i + 1 < argc) {
            std::string list = argv[++i];
            for (size_t a = 0, b; a <= list.size(); a = b + 1) {
                b = list.find(',', a);
                if (b == std::string::npos) b = list.size();
                if (b > a) tile_variants.push_back(list.substr(a, b - a));
            }
        }
        else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) csv = std::fopen(argv[++i], "w");
        else if (!std::strcmp(argv[i], "--md") && i + 1 < argc) md = argv[++i];
        else if (!std::strcmp(argv[i], "--costs") && i + 1 < argc) load_costs(argv[++i]);
        else {
            std::fprintf(stderr, "usage: bench [--quick] [--only jit|whole|rows|cols|16-bit|tiles|fragments|multipass] [--tile-variants V1,V2] [--costs FILE] [--csv FILE] [--md FILE]\n"
                                 "       bench --tile-sources DIR [--arch sm_XY]\n"
                                 "       bench --fragment-sources DIR [--arch sm_XY]\n");
            return 2;
        }
    }
    if (tile_dir) {
        if (!arch[0]) std::snprintf(arch, sizeof arch, "sm_90");
        return write_tile_sources(tile_dir);
    }
    if (frag_dir) {
        if (!arch[0]) std::snprintf(arch, sizeof arch, "sm_90");
        return write_frag_sources(frag_dir);
    }
    t_start = now_s();
    if (csv) std::fprintf(csv, "group,case,impl,ms,value,unit\n");
    tilec_open(&ctx);
    tilec_ok(tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0), "tilec_runtime_open");
    cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, 0));
    std::snprintf(arch, sizeof arch, "sm_%d%d", prop.major, prop.minor);
    int driver = 0;
    cudaDriverGetVersion(&driver);
    std::printf("bench: %s, %d SMs, %.0f MB L2, driver API %d.%d%s\n", prop.name, prop.multiProcessorCount,
                prop.l2CacheSize / 1e6, driver / 1000, driver % 1000 / 10, quick ? " (quick)" : "");
    // the copy ceiling: a large device-to-device copy, bytes read + written
    progress("copy ceiling");
    size_t cbytes = quick ? (1u << 30) : (4ull << 30);
    void *a, *b;
    CUDA(cudaMalloc(&a, cbytes));
    CUDA(cudaMalloc(&b, cbytes));
    CUDA(cudaMemset(a, 1, cbytes));
    double t_copy = time_ms([&](int) { cudaMemcpyAsync(b, a, cbytes, cudaMemcpyDeviceToDevice); }, 1);
    copy_tbs = row("ceiling", "d2d copy", "cudaMemcpy", t_copy, 2.0 * cbytes, "read + write");
    CUDA(cudaFree(a));
    CUDA(cudaFree(b));
    auto want = [&](const char *section) { return !only || !std::strcmp(only, section); };
    if (want("jit")) bench_jit(argv[0]); // first: its first call must be the process's first compile of that shape
    if (want("whole")) bench_whole();
    if (want("rows") || want("16-bit")) bench_rows(); // the 16-bit goals are relative to f32's
    if (want("cols") || want("16-bit")) bench_cols();
    if (want("16-bit")) bench_16();
    if (want("tiles")) bench_tiles();
    if (want("fragments")) bench_fragments();
    if (want("multipass")) bench_multipass();
    report(md, prop, driver);
    progress("done");
    tilec_close(ctx);
    if (csv) std::fclose(csv);
    return cases_wrong ? 1 : 0;
}
