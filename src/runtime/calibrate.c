/*
 * calibrate.c — tilec_calibrate: the cost model's constants measured on the runtime's GPU
 * (docs/dispatch.md#calibrated-constants).
 *
 * Micro-kernels, compiled by NVRTC or hiprtc for the device and launched through the
 * backend like any plan, time themselves with the GPU's clock (clock64, the
 * multiprocessor's cycles: the unit of the model):
 *
 *   latencies   one warp of one CTA runs a dependent chain of CHAIN steps: 4- and 16-byte
 *               shared loads (each load's value is the next one's offset), warp shuffles,
 *               f32 adds; and barriers back to back in CTAs of 4 and 8 warps. The least of
 *               5 runs, per step.
 *   throughputs four CTAs of 8 warps a multiprocessor (4 x sms CTAs) all read shared memory
 *               without conflicts (4-byte loads: one wavefront each; 16-byte: four),
 *               shuffle, or add in 8 independent chains; each CTA times its loop between two
 *               barriers. The median CTA of the best of 3 runs, per warp instruction of a
 *               multiprocessor.
 *
 * The model's constants are then: lds_latency the mean of the two load chains, barrier the
 * mean of 4 and 8 warps, wavefront the 16-byte loads' cycles per wavefront, request the
 * 4-byte loads', shuffle the shuffles', instruction the adds' (a warp instruction each).
 */
#include "costs.h"

#include "rtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ITERS: long enough that the 4 x sms CTAs of a throughput kernel overlap as four a
 * multiprocessor (128 was not, on an H200); ITERS_HIP keeps a CTA's count far below 2^20
 * cycles, where the clock of some AMD parts wraps */
enum { CHAIN = 1024, ITERS = 1024, ITERS_HIP = 128, CTA_THREADS = 256, PER_SM = 4 };

/* The kernels: every parameter a pointer (the backends launch pointers); cfg[0] is the
 * throughput loops' count, cfg[1] the bits of 1.0f (an addend the compiler cannot see). */
static const char *const source_parts[] = {
    "#ifdef __HIPCC__\n"
    "#define TL_SHFL(x, m) __shfl_xor((x), (m))\n"
    "#else\n"
    "#define TL_SHFL(x, m) __shfl_xor_sync(0xffffffffu, (x), (m))\n"
    "#endif\n"
    "#define TL_CHAIN 1024\n"
    "struct __attribute__((aligned(16))) tl_i4 { int x, y, z, w; };\n"
    "extern \"C\" __global__ void tl_cal_lds4(long long *cyc, int *sink, const int *cfg) {\n"
    "  __shared__ __attribute__((aligned(16))) int s[1024];\n"
    "  for (int i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = ((i + 33) & 1023) * 4;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x) return;\n"
    "  int j = 0;\n"
    "  const char *b = (const char *)s;\n"
    "  long long t0 = clock64();\n"
    "#pragma unroll 16\n"
    "  for (int k = 0; k < TL_CHAIN; k++) j = *(const int *)(b + j);\n"
    "  long long t1 = clock64();\n"
    "  cyc[0] = t1 - t0;\n"
    "  sink[0] = j;\n"
    "}\n"
    "extern \"C\" __global__ void tl_cal_lds16(long long *cyc, int *sink, const int *cfg) {\n"
    "  __shared__ __attribute__((aligned(16))) tl_i4 s[1024];\n"
    "  for (int i = threadIdx.x; i < 1024; i += blockDim.x) { s[i].x = ((i + 33) & 1023) * 16; s[i].y = s[i].z = s[i].w = i; }\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x) return;\n"
    "  int j = 0;\n"
    "  const char *b = (const char *)s;\n"
    "  int o = 0;\n"
    "  long long t0 = clock64();\n"
    "#pragma unroll 16\n"
    "  for (int k = 0; k < TL_CHAIN; k++) { tl_i4 v = *(const tl_i4 *)(b + j); j = v.x; o ^= v.y ^ v.z ^ v.w; }\n"
    "  long long t1 = clock64();\n"
    "  cyc[0] = t1 - t0;\n"
    "  sink[0] = j ^ o;\n"
    "}\n",
    "extern \"C\" __global__ void tl_cal_shfl(long long *cyc, int *sink, const int *cfg) {\n"
    "  float x = (float)threadIdx.x;\n"
    "  long long t0 = clock64();\n"
    "#pragma unroll 4\n"
    "  for (int k = 0; k < TL_CHAIN / 4; k++) {\n"
    "    x = TL_SHFL(x, 1); x = TL_SHFL(x, 2); x = TL_SHFL(x, 4); x = TL_SHFL(x, 8);\n"
    "  }\n"
    "  long long t1 = clock64();\n"
    "  if (threadIdx.x == 0) cyc[0] = t1 - t0;\n"
    "  if (x == 12345.f) sink[0] = 1;\n"
    "}\n"
    "extern \"C\" __global__ void tl_cal_fadd(long long *cyc, int *sink, const int *cfg) {\n"
    "  float y = __int_as_float(cfg[1]), x = (float)threadIdx.x;\n"
    "  long long t0 = clock64();\n"
    "#pragma unroll 16\n"
    "  for (int k = 0; k < TL_CHAIN; k++) x = x + y;\n"
    "  long long t1 = clock64();\n"
    "  if (threadIdx.x == 0) cyc[0] = t1 - t0;\n"
    "  if (x == 12345.f) sink[0] = 1;\n"
    "}\n"
    "extern \"C\" __global__ void tl_cal_sync(long long *cyc, int *sink, const int *cfg) {\n"
    "  __syncthreads();\n"
    "  long long t0 = clock64();\n"
    "#pragma unroll 16\n"
    "  for (int k = 0; k < TL_CHAIN; k++) __syncthreads();\n"
    "  long long t1 = clock64();\n"
    "  if (threadIdx.x == 0) cyc[0] = t1 - t0;\n"
    "}\n",
    /* shared-memory throughput: 16 KB a CTA (four fit a multiprocessor of 64 KB), rows of
       128 bytes (4-byte loads) or 512 (16-byte), 8 consecutive rows an iteration from a base
       that moves by 8 rows and wraps: one address a loop, the 8 loads at fixed offsets */
    "template <int W> __device__ void tl_lds_tp(long long *cyc, int *sink, const int *cfg) {\n"
    "  __shared__ __attribute__((aligned(16))) int s[4096];\n"
    "  for (int i = threadIdx.x; i < 4096; i += blockDim.x) s[i] = i * 7;\n"
    "  int iters = cfg[0];\n"
    "  __syncthreads();\n"
    "  const int lane = threadIdx.x & 31;\n"
    "  const int rows = W == 4 ? 128 : 32;\n"
    "  unsigned acc = 0;\n"
    "  long long t0 = clock64();\n"
    "  for (int k = 0; k < iters; k++) {\n"
    "    int base = (k * 8) & (rows - 8);\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < 8; u++) {\n"
    "      if (W == 4) acc ^= (unsigned)s[(base + u) * 32 + lane];\n"
    "      else { tl_i4 v = ((const tl_i4 *)s)[(base + u) * 32 + lane]; acc ^= (unsigned)(v.x ^ v.y ^ v.z ^ v.w); }\n"
    "    }\n"
    "  }\n"
    "  __syncthreads();\n"
    "  long long t1 = clock64();\n"
    "  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;\n"
    "  if (acc == 0x9e3779b9u) sink[0] = (int)acc;\n"
    "}\n"
    "extern \"C\" __global__ void tl_cal_lds4_tp(long long *cyc, int *sink, const int *cfg) { tl_lds_tp<4>(cyc, sink, cfg); }\n"
    "extern \"C\" __global__ void tl_cal_lds16_tp(long long *cyc, int *sink, const int *cfg) { tl_lds_tp<16>(cyc, sink, cfg); }\n"
    /* throughput of 8 independent chains a thread: shuffles (MODE 0), or f32 adds for the
       issue rate (MODE 1: 4 rounds an iteration, 32 adds to the loop's two or three
       instructions) */
    "template <int MODE> __device__ void tl_chains_tp(long long *cyc, int *sink, const int *cfg) {\n"
    "  float y = __int_as_float(cfg[1]), a[8];\n"
    "  for (int u = 0; u < 8; u++) a[u] = (float)(threadIdx.x + u);\n"
    "  int iters = cfg[0];\n"
    "  __syncthreads();\n"
    "  long long t0 = clock64();\n"
    "  for (int k = 0; k < iters; k++) {\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < (MODE ? 4 : 1); r++)\n"
    "#pragma unroll\n"
    "      for (int u = 0; u < 8; u++) a[u] = MODE ? a[u] + y : TL_SHFL(a[u], 1 + (u & 3));\n"
    "  }\n"
    "  __syncthreads();\n"
    "  long long t1 = clock64();\n"
    "  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;\n"
    "  float t = 0;\n"
    "  for (int u = 0; u < 8; u++) t += a[u];\n"
    "  if (t == 12345.f) sink[0] = 1;\n"
    "}\n"
    "extern \"C\" __global__ void tl_cal_shfl_tp(long long *cyc, int *sink, const int *cfg) { tl_chains_tp<0>(cyc, sink, cfg); }\n"
    "extern \"C\" __global__ void tl_cal_issue(long long *cyc, int *sink, const int *cfg) { tl_chains_tp<1>(cyc, sink, cfg); }\n",
    NULL}; /* parts, each under the 4095 characters a C compiler must take in a literal */

void rt_calibrate_source(ir_str *s) {
    for (int i = 0; source_parts[i]; i++) ir_str_put(s, source_parts[i], strlen(source_parts[i]));
}

typedef struct bench {
    rt *r;
    const void *binary;
    void *cyc, *sink, *cfg;
    long long *host; /* PER_SM * sms cycle counts */
    int ctas;
} bench;

/* Launches kernel `name` (grid x threads) `runs` times; after each, reads the first n
 * CTAs' counts; keeps per run the least count (n == 1) or the median CTA's, and returns
 * the least of the runs in *out. */
static tilec_status time_kernel(bench *b, const char *name, int grid, int threads, int n, int runs, double *out) {
    rt *r = b->r;
    rt_plan p;
    memset(&p, 0, sizeof p);
    snprintf(p.info.symbol, sizeof p.info.symbol, "%s", name);
    p.info.grid = grid;
    p.info.threads = threads;
    tilec_status st = r->be->load(r, &p, b->binary);
    void *args[3] = {b->cyc, b->sink, b->cfg};
    double best = -1;
    for (int k = 0; k < runs && st == TILEC_OK; k++) {
        if ((st = r->be->launch(r, &p, args, 3, NULL, NULL)) != TILEC_OK) break;
        if ((st = r->be->sync(r)) != TILEC_OK) break;
        if ((st = r->be->download(r, b->host, b->cyc, (size_t)n * sizeof(long long))) != TILEC_OK) break;
        /* the median of n (insertion sort: n is a few hundred) */
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && b->host[j - 1] > b->host[j]; j--) {
                long long t = b->host[j];
                b->host[j] = b->host[j - 1];
                b->host[j - 1] = t;
            }
        double v = (double)b->host[n / 2];
        if (best < 0 || v < best) best = v;
    }
    r->be->unload(r, &p);
    if (st == TILEC_OK && !(best > 0)) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "calibrating: kernel %s measured %.0f cycles: the GPU's clock "
                                                          "did not advance", name, best);
        st = TILEC_ERR_UNAVAILABLE;
    }
    *out = best;
    return st;
}

/* The measurements into f->c. */
/* cycles a warp instruction costs a multiprocessor at the least: 4 schedulers, one a cycle each */
static const double INSTRUCTION_FLOOR = 0.25;

static tilec_status measure(rt *r, const void *binary, rt_costs_file *f) {
    int sms = r->target.sms > 0 ? r->target.sms : 1, ws = r->target.warp_size;
    bench b = {r, binary, NULL, NULL, NULL, NULL, PER_SM * sms};
    tilec_status st = TILEC_OK;
    b.host = malloc((size_t)b.ctas * sizeof(long long));
    if (!b.host) return TILEC_ERR_NOMEM;
    int iters = r->target.backend == TILEC_BACKEND_HIP ? ITERS_HIP : ITERS;
    int cfg[2] = {iters, 0x3f800000}; /* 1.0f */
    if ((st = r->be->alloc(r, (size_t)b.ctas * sizeof(long long), &b.cyc)) == TILEC_OK &&
        (st = r->be->alloc(r, 16, &b.sink)) == TILEC_OK && (st = r->be->alloc(r, sizeof cfg, &b.cfg)) == TILEC_OK)
        st = r->be->upload(r, b.cfg, cfg, sizeof cfg);
    double lds4 = 0, lds16 = 0, shfl = 0, fadd = 0, sync4 = 0, sync8 = 0, tp4 = 0, tp16 = 0, tps = 0, tpi = 0;
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_lds4", 1, 32, 1, 5, &lds4);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_lds16", 1, 32, 1, 5, &lds16);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_shfl", 1, 32, 1, 5, &shfl);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_fadd", 1, 32, 1, 5, &fadd);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_sync", 1, 128, 1, 5, &sync4);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_sync", 1, 256, 1, 5, &sync8);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_lds4_tp", b.ctas, CTA_THREADS, b.ctas, 3, &tp4);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_lds16_tp", b.ctas, CTA_THREADS, b.ctas, 3, &tp16);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_shfl_tp", b.ctas, CTA_THREADS, b.ctas, 3, &tps);
    if (st == TILEC_OK) st = time_kernel(&b, "tl_cal_issue", b.ctas, CTA_THREADS, b.ctas, 3, &tpi);
    if (b.cyc) r->be->release(r, b.cyc);
    if (b.sink) r->be->release(r, b.sink);
    if (b.cfg) r->be->release(r, b.cfg);
    free(b.host);
    if (st != TILEC_OK) return st;
    /* warp instructions of one multiprocessor in a throughput loop: PER_SM CTAs of
       CTA_THREADS / ws warps, ITERS iterations of 8 (the adds: 32); a warp-wide 16-byte
       load is 4 wavefronts of 128 bytes for each 32 lanes (the model's phases), a 4-byte one
       one a 32 lanes */
    double per_sm = (double)PER_SM * (CTA_THREADS / ws) * iters * 8, phases = ws / 32.0;
    f->c.lds_latency = (lds4 + lds16) / 2 / CHAIN;
    f->c.shfl_latency = shfl / CHAIN;
    f->c.add_latency = fadd / CHAIN;
    f->c.barrier = (sync4 + sync8) / 2 / CHAIN;
    f->c.wavefront = tp16 / (per_sm * 4 * phases);
    f->c.request = tp4 / per_sm;
    f->c.shuffle = tps / per_sm;
    f->c.instruction = tpi / (per_sm * 4);
    /* A multiprocessor's 4 schedulers issue at most one warp instruction a cycle each: below
     * 0.25 the loop measured something else (0.160 on an H100, 0.163 on an H200, not
     * explained), and the model would price a plan's instructions below what any plan can
     * issue. Measured against the default on an H100's tile matrix, the floor brings back
     * the default's plan in 22 of the 130 cases 0.160 changes, its worst losses among them
     * (docs/performance.md, "Calibrated constants against the defaults"). */
    if (f->c.instruction < INSTRUCTION_FLOOR) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_NOTE, 0, 0,
                    "calibrating: the issue loop measured %.3f cycles a warp instruction, below the %.2f that a "
                    "multiprocessor's 4 schedulers can reach; the constants take %.2f", f->c.instruction,
                    INSTRUCTION_FLOOR, INSTRUCTION_FLOOR);
        f->c.instruction = INSTRUCTION_FLOOR;
    }
    /* what a file can hold: 0.001 to 100000 (a value outside says the measurement failed) */
    for (const double *v = &f->c.lds_latency; v <= &f->c.instruction; v++)
        if (!(*v >= 0.001 && *v <= 100000)) {
            ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                        "calibrating: a constant came out as %g cycles, outside what a GPU can take (0.001 to 100000); "
                        "the measurement failed, and nothing was written", *v);
            return TILEC_ERR_UNAVAILABLE;
        }
    return TILEC_OK;
}

static char *dup_text(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

tilec_status tilec_calibrate(tilec_ctx *ctx, unsigned flags, tilec_costs *out, char **text, char **path) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    if (text) *text = NULL;
    if (path) *path = NULL;
    ir_begin(ctx);
    if (flags & ~TILEC_CALIBRATE_NO_SAVE) return ir_bad(ctx, "tilec_calibrate: unknown flags 0x%x", flags);
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    if (st != TILEC_OK) return st;
    if (r->target.backend == TILEC_BACKEND_SIM) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "calibrating needs a GPU: the runtime runs on the simulator, whose plans use the default constants "
                    "(open the runtime on CUDA or HIP, or run `tilec calibrate` on a machine with a GPU)");
        return TILEC_ERR_UNAVAILABLE;
    }
    rtc_result bin;
    ir_str src = {0};
    rt_calibrate_source(&src);
    if (src.oom) { ir_str_free(&src); return TILEC_ERR_NOMEM; }
    st = rtc_compile(ctx, r->target.backend, r->target.arch, r->target.warp_size, "calibrate.cu", src.data, RTC_BINARY, &bin);
    ir_str_free(&src);
    if (st != TILEC_OK) return st;
    rt_costs_file f;
    rt_costs_identity(r, &f);
    st = measure(r, bin.data, &f);
    rtc_result_free(&bin);
    if (st != TILEC_OK) return st;
    if (out) *out = f.c;
    ir_str s = {0};
    rt_costs_format(&s, &f);
    if (s.oom) { ir_str_free(&s); return TILEC_ERR_NOMEM; }
    rt_costs_file back;
    rt_costs_error e;
    if (!rt_costs_parse(s.data, s.len, &back, &e)) { /* what a later open would refuse is never saved */
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "calibrating: the constants file would not read back (line %d: %s); "
                                                      "nothing was saved", e.line, e.message);
        ir_str_free(&s);
        return TILEC_ERR_INTERNAL;
    }
    if (text && !(*text = dup_text(s.data))) { ir_str_free(&s); return TILEC_ERR_NOMEM; }
    if (flags & TILEC_CALIBRATE_NO_SAVE) { ir_str_free(&s); return TILEC_OK; }
    char name[96], why[300], full[PATH_MAX + 100];
    rt_costs_file_name(&f, name, sizeof name);
    snprintf(full, sizeof full, "%s/%s", r->cache.dir, name);
    bool wrote = cache_write_file(&r->cache, name, s.data, s.len, why, sizeof why);
    ir_str_free(&s);
    if (!wrote && (r->cache.mode != CACHE_RW || !r->cache.has_dir)) {
        ir_diag_add(ctx, NULL, TILEC_SEV_NOTE, 0, 0, "the constants were measured but not saved: %s (TILEC_CACHE=rw and a "
                                                     "usable TILEC_CACHE_DIR keep them for this device)", why);
    } else if (!wrote) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the constants were measured but %s could not be written: %s", full, why);
        return TILEC_ERR_INTERNAL; /* *out and *text hold them */
    }
    /* this runtime's new plans use them, as a new one's would */
    r->costs = f.c;
    rt_costs_describe(&f, wrote ? full : "this calibration", r->costs_what, sizeof r->costs_what);
    r->has_costs = true;
    r->target.costs = &r->costs;
    r->target.costs_what = r->costs_what;
    if (wrote && path && !(*path = dup_text(full))) return TILEC_ERR_NOMEM;
    return TILEC_OK;
}
