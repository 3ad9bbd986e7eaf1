// bench.cu — tilec_reduce against CUB and the copy ceiling, in one process, on one GPU.
//
// Every case is checked against a double-precision CPU reference before it is timed;
// timing is CUDA events around batches of launches, median of 7 batches, after a warm-up;
// inputs smaller than L2 are rotated among copies so no batch reads from L2. Effective
// bandwidth is (input bytes + output bytes) / time of one reduction.
//
//   bench [--quick] [--csv FILE]
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

static void tilec_ok(tilec_status st, const char *what) {
    if (st != TILEC_OK) {
        std::fprintf(stderr, "%s: %s\n%s", what, tilec_status_name(st), tilec_diag_text(ctx));
        std::exit(1);
    }
}

// Median time in ms of one call of fn(i), i cycling over `copies` inputs.
template <class F> static double time_ms(F fn, int copies) {
    cudaEvent_t a, b;
    CUDA(cudaEventCreate(&a));
    CUDA(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) fn(i % copies); // warm-up (and the JIT's first call)
    CUDA(cudaDeviceSynchronize());
    // calls per batch: enough for ~5 ms
    CUDA(cudaEventRecord(a));
    fn(0);
    CUDA(cudaEventRecord(b));
    CUDA(cudaEventSynchronize(b));
    float one = 0;
    CUDA(cudaEventElapsedTime(&one, a, b));
    int per = std::max(1, std::min(2000, (int)(5.0 / std::max(one, 0.001f))));
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
    std::sort(batches.begin(), batches.end());
    return batches[3];
}

// Copies of an input that together exceed L2 (60 MB on an H200), for rotation.
static int copies_for(size_t bytes) { return (int)std::min<size_t>(16, std::max<size_t>(1, (256u << 20) / std::max<size_t>(bytes, 1))); }

static void fill_host(std::vector<float> &h, unsigned seed) {
    uint64_t s = seed;
    for (auto &x : h) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = (float)((double)(s >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
}

static void row(const char *group, const char *name, const char *impl, double ms, double bytes, double goal, const char *note) {
    double tbs = bytes / (ms * 1e-3) / 1e12;
    std::printf("  %-10s %-24s %-22s %9.4f ms  %6.3f TB/s  %s\n", group, name, impl, ms, tbs, note);
    if (csv) std::fprintf(csv, "%s,%s,%s,%.6f,%.4f,%.4f\n", group, name, impl, ms, tbs, goal);
    std::fflush(stdout);
}

// Reference results in double on the host: op over axis (rows: last axis; cols: first).
static std::vector<double> reference(const std::vector<float> &h, long long rows, long long cols, int axis, tilec_op op,
                                     std::vector<double> *mag) {
    long long n_out = axis == 1 ? rows : cols;
    std::vector<double> out(n_out, op == TILEC_OP_SUM ? 0.0 : op == TILEC_OP_MAX ? -INFINITY : INFINITY);
    mag->assign(n_out, 0.0);
    for (long long r = 0; r < rows; r++)
        for (long long c = 0; c < cols; c++) {
            double x = h[r * cols + c];
            long long o = axis == 1 ? r : c;
            if (op == TILEC_OP_SUM) out[o] += x, (*mag)[o] += std::fabs(x);
            else if (op == TILEC_OP_MAX) out[o] = std::max(out[o], x);
            else out[o] = std::min(out[o], x);
        }
    return out;
}

static bool close_enough(const std::vector<float> &got, const std::vector<double> &want, const std::vector<double> &mag, tilec_op op) {
    for (size_t i = 0; i < got.size(); i++) {
        double tol = op == TILEC_OP_SUM ? 1e-5 * mag[i] : 0.0;
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

// One f32 reduction over rows x cols (axis 1: rows; axis 0: columns; rows 1: whole array):
// tilec_reduce, and CUB where CUB has the operation.
static void bench_f32(const char *group, long long rows, long long cols, int axis, tilec_op op, double goal) {
    size_t n = (size_t)rows * cols, n_out = axis == 1 ? rows : cols;
    std::vector<float> h(n);
    fill_host(h, (unsigned)(rows * 31 + cols));
    int copies = copies_for(n * 4);
    std::vector<float *> d_in(copies);
    for (int i = 0; i < copies; i++) {
        CUDA(cudaMalloc(&d_in[i], n * 4));
        CUDA(cudaMemcpy(d_in[i], h.data(), n * 4, cudaMemcpyHostToDevice));
    }
    float *d_out;
    CUDA(cudaMalloc(&d_out, n_out * 4));
    std::vector<double> mag;
    std::vector<double> want = reference(h, rows, cols, axis, op, &mag);
    std::vector<float> got(n_out);
    char name[64];
    if (rows == 1) std::snprintf(name, sizeof name, "%s 2^%d", tilec_op_name(op), (int)std::log2((double)cols));
    else std::snprintf(name, sizeof name, "%s %lldx%lld", axis ? "rows" : "cols", rows, cols);
    double bytes = (double)(n + n_out) * 4;
    // tilec
    tilec_reduce_desc d = desc_2d(op, TILEC_F32, rows, cols, axis);
    tilec_ok(tilec_reduce(ctx, &d, d_in[0], d_out), "tilec_reduce");
    CUDA(cudaMemcpy(got.data(), d_out, n_out * 4, cudaMemcpyDeviceToHost));
    bool ok = close_enough(got, want, mag, op);
    double t_tilec = time_ms([&](int i) { tilec_reduce(ctx, &d, d_in[i], d_out); }, copies);
    row(group, name, "tilec", t_tilec, bytes, goal, ok ? "checked" : "WRONG");
    // CUB
    void *tmp = nullptr;
    size_t tmp_bytes = 0;
    if (rows == 1) {
        auto run = [&](int i) {
            if (op == TILEC_OP_SUM) cub::DeviceReduce::Sum(tmp, tmp_bytes, d_in[i], d_out, (int)n);
            else if (op == TILEC_OP_MAX) cub::DeviceReduce::Max(tmp, tmp_bytes, d_in[i], d_out, (int)n);
            else cub::DeviceReduce::Min(tmp, tmp_bytes, d_in[i], d_out, (int)n);
        };
        run(0);
        CUDA(cudaMalloc(&tmp, tmp_bytes));
        run(0);
        CUDA(cudaMemcpy(got.data(), d_out, 4, cudaMemcpyDeviceToHost));
        bool cub_ok = close_enough(got, want, mag, op);
        double t_cub = time_ms(run, copies);
        row(group, name, "CUB DeviceReduce", t_cub, bytes, goal, cub_ok ? "checked" : "WRONG");
        std::printf("  %-10s %-24s %-22s tilec speed-up over CUB %.2fx\n", group, name, "", t_cub / t_tilec);
    } else if (axis == 1 && op == TILEC_OP_SUM) {
        std::vector<int> offs(rows + 1);
        for (long long r = 0; r <= rows; r++) offs[r] = (int)(r * cols);
        int *d_offs;
        CUDA(cudaMalloc(&d_offs, (rows + 1) * sizeof(int)));
        CUDA(cudaMemcpy(d_offs, offs.data(), (rows + 1) * sizeof(int), cudaMemcpyHostToDevice));
        auto run = [&](int i) {
            cub::DeviceSegmentedReduce::Sum(tmp, tmp_bytes, d_in[i], d_out, (int)rows, d_offs, d_offs + 1);
        };
        run(0);
        CUDA(cudaMalloc(&tmp, tmp_bytes));
        run(0);
        CUDA(cudaMemcpy(got.data(), d_out, n_out * 4, cudaMemcpyDeviceToHost));
        bool cub_ok = close_enough(got, want, mag, op);
        double t_cub = time_ms(run, copies);
        row(group, name, "CUB SegmentedReduce", t_cub, bytes, goal, cub_ok ? "checked" : "WRONG");
        std::printf("  %-10s %-24s %-22s tilec speed-up over CUB %.2fx\n", group, name, "", t_cub / t_tilec);
        CUDA(cudaFree(d_offs));
    }
    if (tmp) CUDA(cudaFree(tmp));
    for (auto p : d_in) CUDA(cudaFree(p));
    CUDA(cudaFree(d_out));
}

// A 16-bit float reduction (tilec only; CUB's f16 paths differ in accumulation), checked
// with tilec_reduce_check against the double-precision reference before it is timed.
static void bench_16(tilec_dtype dt, long long rows, long long cols, int axis, double goal) {
    size_t n = (size_t)rows * cols, n_out = axis == 1 ? rows : cols;
    std::vector<uint16_t> h(n), before(n_out, 0), after(n_out);
    uint64_t s = 12345;
    for (auto &x : h) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double f = (double)(s >> 11) * 0x1p-53 * 2.0 - 1.0;
        x = dt == TILEC_F16 ? tilec_f16_from_double(f) : tilec_bf16_from_double(f);
    }
    int copies = copies_for(n * 2);
    std::vector<void *> d_in(copies);
    for (int i = 0; i < copies; i++) {
        CUDA(cudaMalloc(&d_in[i], n * 2));
        CUDA(cudaMemcpy(d_in[i], h.data(), n * 2, cudaMemcpyHostToDevice));
    }
    void *d_out;
    CUDA(cudaMalloc(&d_out, n_out * 2));
    CUDA(cudaMemset(d_out, 0, n_out * 2));
    tilec_reduce_desc d = desc_2d(TILEC_OP_SUM, dt, rows, cols, axis);
    tilec_ok(tilec_reduce(ctx, &d, d_in[0], d_out), "tilec_reduce");
    CUDA(cudaMemcpy(after.data(), d_out, n_out * 2, cudaMemcpyDeviceToHost));
    tilec_check_result r;
    tilec_ok(tilec_reduce_check(ctx, &d, h.data(), before.data(), after.data(), &r), "tilec_reduce_check");
    char name[64];
    if (rows == 1) std::snprintf(name, sizeof name, "%s sum 2^%d", tilec_dtype_name(dt), (int)std::log2((double)cols));
    else std::snprintf(name, sizeof name, "%s %s %lldx%lld", tilec_dtype_name(dt), axis ? "rows" : "cols", rows, cols);
    double t = time_ms([&](int i) { tilec_reduce(ctx, &d, d_in[i], d_out); }, copies);
    row("16-bit", name, "tilec", t, (double)(n + n_out) * 2, goal, r.ok ? "checked" : "WRONG");
    for (auto p : d_in) CUDA(cudaFree(p));
    CUDA(cudaFree(d_out));
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) csv = std::fopen(argv[++i], "w");
    }
    if (csv) std::fprintf(csv, "group,case,impl,ms,tbs,goal_tbs\n");
    tilec_open(&ctx);
    tilec_ok(tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0), "tilec_runtime_open");
    cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, 0));
    int driver = 0;
    cudaDriverGetVersion(&driver);
    std::printf("bench: %s, %d SMs, %.0f MB L2, driver API %d.%d%s\n", prop.name, prop.multiProcessorCount,
                prop.l2CacheSize / 1e6, driver / 1000, driver % 1000 / 10, quick ? " (quick)" : "");
    // the copy ceiling: a large device-to-device copy, bytes read + written
    size_t cbytes = quick ? (1u << 30) : (4ull << 30);
    void *a, *b;
    CUDA(cudaMalloc(&a, cbytes));
    CUDA(cudaMalloc(&b, cbytes));
    CUDA(cudaMemset(a, 1, cbytes));
    double t_copy = time_ms([&](int) { cudaMemcpyAsync(b, a, cbytes, cudaMemcpyDeviceToDevice); }, 1);
    row("ceiling", "d2d copy", "cudaMemcpy", t_copy, 2.0 * cbytes, 0, "read + write");
    CUDA(cudaFree(a));
    CUDA(cudaFree(b));
    // whole arrays
    int top = quick ? 26 : 30;
    for (int e = 16; e <= top; e += 2)
        for (int op = 0; op < 3; op++)
            if (op == 0 || e == top) bench_f32("whole", 1, 1ll << e, 1, (tilec_op)op, 0);
    // rows, and the same shapes as columns
    static const long long rows_shapes[][2] = {{1048576, 32}, {262144, 128}, {65536, 1024}, {16384, 4096},
                                               {4096, 16384}, {1024, 65536}, {64, 4194304}};
    for (auto &s : rows_shapes) bench_f32("rows", s[0], s[1], 1, TILEC_OP_SUM, 0);
    static const long long col_shapes[][2] = {{8192, 8192}, {1048576, 32}, {65536, 1024}, {32, 1048576}};
    for (auto &s : col_shapes) bench_f32("cols", s[0], s[1], 0, TILEC_OP_SUM, 0);
    // 16-bit floats: the goal is 90% of the f32 bandwidth in bytes of the same shape
    for (tilec_dtype dt : {TILEC_F16, TILEC_BF16}) {
        bench_16(dt, 1, 1ll << (quick ? 26 : 28), 1, 0);
        bench_16(dt, 65536, 1024, 1, 0);
        bench_16(dt, 8192, 8192, 0, 0);
    }
    tilec_close(ctx);
    if (csv) std::fclose(csv);
    return 0;
}
