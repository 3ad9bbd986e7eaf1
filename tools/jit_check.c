/*
 * jit_check.c — tilec_reduce on a GPU, through the public API only: the correctness
 * matrix of tests/test_jit.c on the CUDA backend, bitwise determinism, 8 threads × 200
 * mixed calls, all-NaN slices under nan=ignore, f32 max / min of special pairs, rows of
 * 2^31 - 1 f16 elements, segmented reductions (every op and dtype, three layouts), calls of
 * one shape on two non-blocking streams at once, one context used from threads that did
 * not open it, and the JIT's latencies (first call, cached call,
 * host time per call).
 *
 *   jit_check [--out FILE.md]      exit 0 ok, 1 a failure, 3 no usable GPU; the matrix's
 *                                  result is its "jit_check: matrix" line (scripts/gpu-check
 *                                  makes the table row of it), FILE.md gets the other rows
 *   jit_check --part K/N           only the matrix's cases i with i % N == K (so N
 *                                  processes compile and check it side by side)
 *   jit_check --no-matrix [--out FILE.md]  everything but the matrix
 *   jit_check --streams            only the stream and thread checks (PASS / FAIL lines),
 *                                  the graph captures among them
 *   jit_check --graph-unprepared   only the capture of calls never prepared (global mode)
 *   jit_check --first-call         only the time to a new process's first result of one
 *                                  shape (run it twice on a fresh cache: a miss, then a
 *                                  disk hit)
 *   jit_check --call-cost          only the latencies of one shape: its first call and
 *                                  the host time of a cached call (scripts/gpu-python)
 *   jit_check --segmented          only the segmented reductions (every op and dtype, three
 *                                  worker layouts, against the reference and the simulator)
 *
 * The streams and contexts of the caller's side come from the driver API (dlopen of
 * libcuda.so.1, as the library does): tilec takes streams, it does not make them.
 */
#include "../tests/sim_support.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SIM_MAX_ELEMS = 1 << 17 }; /* the largest case the simulator runs again */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Bytes of a reduction's results: the output, then the second one (argmax, argmin: the
 * indices, i64 or i32; aminmax: the maxima, in the output's dtype). */
static size_t result_bytes(const tilec_reduce_desc *d) {
    size_t n = (size_t)desc_elems(d, true);
    tilec_dtype two = d->index_i32 ? TILEC_I32 : tilec_op_second_dtype(d->op, d->dtype);
    return n * tilec_dtype_size(d->dtype) + (tilec_op_outputs(d->op) == 2 ? n * tilec_dtype_size(two) : 0);
}

/* One checked reduction on the context's backend, the input `shift` elements past an
 * aligned address (so 16-byte loads are off); *out_bits (when given) gets the results
 * (result_bytes: the output, then the indices of an op with two). */
static bool run_shifted(tilec_ctx *ctx, const tilec_reduce_desc *desc, uint64_t seed, int shift, void **out_bits,
                        char *why, size_t wn) {
    tilec_reduce_desc dd = *desc, *d = &dd;
    size_t es = tilec_dtype_size(d->dtype);
    int64_t in_n = desc_elems(d, false), out_n = desc_elems(d, true);
    size_t ib = (size_t)in_n * es, ob = (size_t)out_n * es, ob2 = result_bytes(d) - ob;
    void *in = malloc(ib + 16), *before = malloc(ob + 16), *after = malloc(ob + ob2 + 16), *din = NULL, *dout = NULL,
         *dout2 = NULL;
    void (*fill)(tilec_dtype, void *, int64_t, int64_t, bool, uint64_t *) = d->op == TILEC_OP_PROD ? fill_factors : fill_buffer;
    fill(d->dtype, in, in_n, d->shape[d->rank - 1], true, &seed);
    fill(d->dtype, before, out_n, 1, false, &seed);
    tilec_check_result r = {0};
    size_t off = (size_t)shift * es;
    bool ok = tilec_mem_alloc(ctx, ib + off, &din) == TILEC_OK && tilec_mem_alloc(ctx, ob, &dout) == TILEC_OK &&
              (!ob2 || tilec_mem_alloc(ctx, ob2, &dout2) == TILEC_OK) &&
              tilec_mem_upload(ctx, (char *)din + off, in, ib) == TILEC_OK &&
              tilec_mem_upload(ctx, dout, before, ob) == TILEC_OK;
    d->out2 = dout2;
    ok = ok && tilec_reduce(ctx, d, (char *)din + off, dout) == TILEC_OK && tilec_synchronize(ctx) == TILEC_OK &&
         tilec_mem_download(ctx, after, dout, ob) == TILEC_OK &&
         (!ob2 || tilec_mem_download(ctx, (char *)after + ob, dout2, ob2) == TILEC_OK);
    d->out2 = ob2 ? (char *)after + ob : NULL; /* the indices as downloaded, for the check */
    ok = ok && tilec_reduce_check(ctx, d, in, before, after, &r) == TILEC_OK;
    if (!ok) snprintf(why, wn, "%s", tilec_diag_text(ctx));
    else if (!r.ok) {
        snprintf(why, wn, "%s %s: %lld mismatches, first [%lld] got %.9g want %.9g", tilec_op_name(d->op),
                 tilec_dtype_name(d->dtype), (long long)r.mismatches, (long long)r.first_bad, r.got, r.want);
        ok = false;
    }
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    tilec_mem_free(ctx, dout2);
    if (out_bits) *out_bits = after;
    else free(after);
    free(in);
    free(before);
    return ok;
}

static bool run_one(tilec_ctx *ctx, const tilec_reduce_desc *d, uint64_t seed, void **out_bits, char *why, size_t wn) {
    return run_shifted(ctx, d, seed, 0, out_bits, why, wn);
}

/* The matrix: every axis set of ranks 1 to 4 × ops, and dtypes × strategies × accum / NaN. */
static int matrix(tilec_reduce_desc *all, int max) {
    int n = 0;
    static const int64_t ext[] = {3, 1, 5, 7};
    for (int rank = 1; rank <= 4; rank++)
        for (unsigned mask = 1; mask < (1u << rank); mask++)
            for (int op = 0; op < TILEC_OP_COUNT && n < max; op++) {
                tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = TILEC_F32, .rank = rank};
                for (int i = 0; i < rank; i++) d.shape[i] = ext[i] * (i == rank - 1 ? 13 : 1);
                for (int i = 0; i < rank; i++)
                    if (mask >> i & 1) d.axes[d.naxes++] = i;
                all[n++] = d;
            }
    static const struct { int rank; int64_t shape[4]; int naxes; int axes[3]; } shapes[] = {
        {1, {(1 << 24) + 3}, 1, {0}},          /* one output: blocks over CTAs, partials */
        {2, {3, 700001}, 1, {-1}},             /* few long rows, element loads */
        {2, {3, 700000}, 1, {-1}},             /* few long rows, 16-byte loads, a ragged piece */
        {2, {600, 8200}, 1, {-1}},             /* blocks of a row in one CTA, rounds */
        {2, {3000, 4096}, 1, {1}},             /* several rows a CTA */
        {2, {100000, 37}, 1, {1}}, {2, {100001, 32}, 1, {1}}, {2, {3000, 1024}, 1, {1}}, /* short rows */
        {2, {40999, 7}, 1, {0}}, {2, {40999, 8}, 1, {0}}, {2, {37, 90000}, 1, {0}}, {2, {37, 90001}, 1, {0}}, /* columns */
        {3, {6, 5, 4000}, 2, {0, 2}}, {2, {64, 1 << 16}, 1, {1}},
        {3, {30, 500, 7}, 1, {1}},             /* columns under a kept outer axis */
        {4, {16, 64, 28, 28}, 3, {0, 2, 3}},   /* batch-norm statistics */
        {4, {8, 64, 32, 256}, 2, {1, 3}},      /* two axes around kept ones */
    };
    for (int dt = 0; dt < TILEC_DTYPE_COUNT; dt++)
        for (int op = 0; op < TILEC_OP_COUNT; op++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int v = 0; v < 2 && n < max && tilec_op_supports((tilec_op)op, (tilec_dtype)dt, false); v++) {
                    bool flt = dt <= TILEC_F64;
                    tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = (tilec_dtype)dt, .rank = shapes[s].rank,
                                           .naxes = shapes[s].naxes,
                                           .accumulate = v == 1 && tilec_op_supports((tilec_op)op, (tilec_dtype)dt, true),
                                           .nan = flt && v && tilec_op_compares((tilec_op)op) ? TILEC_NAN_IGNORE : TILEC_NAN_PROPAGATE,
                                           .index_i32 = v == 1 && op == TILEC_OP_ARGMIN};
                    memcpy(d.shape, shapes[s].shape, sizeof shapes[s].shape);
                    memcpy(d.axes, shapes[s].axes, sizeof shapes[s].axes);
                    all[n++] = d;
                }
    return n;
}

typedef struct worker {
    const tilec_reduce_desc *descs;
    int ndescs, id, failed;
    char why[512];
} worker;

static void *work(void *arg) {
    worker *w = arg;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    if (tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0) != TILEC_OK) { w->failed = 200; tilec_close(ctx); return NULL; }
    for (int i = 0; i < 200; i++)
        if (!run_one(ctx, &w->descs[(i * 7 + w->id) % w->ndescs], (uint64_t)(w->id * 1000 + i), NULL, w->why, sizeof w->why))
            w->failed++;
    tilec_close(ctx);
    return NULL;
}

/* ---- streams and threads ------------------------------------------------------------------------ */

typedef int CUresult;
static struct {
    void *lib;
    CUresult (*init)(unsigned);
    CUresult (*device_get)(int *, int);
    CUresult (*retain)(void **, int);
    CUresult (*release)(int);
    CUresult (*push)(void *);
    CUresult (*pop)(void **);
    CUresult (*get_current)(void **);
    CUresult (*set_current)(void *);
    CUresult (*ctx_create)(void **, unsigned, int);
    CUresult (*ctx_destroy)(void *);
    CUresult (*stream_create)(void **, unsigned);
    CUresult (*stream_destroy)(void *);
    CUresult (*stream_sync)(void *);
    CUresult (*begin_capture)(void *, int);
    CUresult (*end_capture)(void *, void **);
    CUresult (*instantiate)(void **, void *, unsigned long long);
    CUresult (*graph_launch)(void *, void *);
    CUresult (*exec_destroy)(void *);
    CUresult (*graph_destroy)(void *);
    CUresult (*module_load)(void **, const void *);
    CUresult (*module_function)(void **, void *, const char *);
    CUresult (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
} cu;

enum { CU_STREAM_NON_BLOCKING = 1, STREAM_CALLS = 1000 };

static bool cu_bind(void *fn, const char *name) {
    void *p = dlsym(cu.lib, name);
    memcpy(fn, &p, sizeof p);
    return p != NULL;
}

static bool cu_load(void) {
    if (cu.lib) return true;
    if (!(cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) return false;
    return cu_bind(&cu.init, "cuInit") && cu_bind(&cu.device_get, "cuDeviceGet") &&
           cu_bind(&cu.retain, "cuDevicePrimaryCtxRetain") && cu_bind(&cu.release, "cuDevicePrimaryCtxRelease_v2") &&
           cu_bind(&cu.push, "cuCtxPushCurrent_v2") && cu_bind(&cu.pop, "cuCtxPopCurrent_v2") &&
           cu_bind(&cu.get_current, "cuCtxGetCurrent") && cu_bind(&cu.set_current, "cuCtxSetCurrent") &&
           cu_bind(&cu.ctx_create, "cuCtxCreate_v2") && cu_bind(&cu.ctx_destroy, "cuCtxDestroy_v2") &&
           cu_bind(&cu.stream_create, "cuStreamCreate") && cu_bind(&cu.stream_destroy, "cuStreamDestroy_v2") &&
           cu_bind(&cu.stream_sync, "cuStreamSynchronize") && cu_bind(&cu.begin_capture, "cuStreamBeginCapture_v2") &&
           cu_bind(&cu.end_capture, "cuStreamEndCapture") && cu_bind(&cu.instantiate, "cuGraphInstantiateWithFlags") &&
           cu_bind(&cu.graph_launch, "cuGraphLaunch") && cu_bind(&cu.exec_destroy, "cuGraphExecDestroy") &&
           cu_bind(&cu.graph_destroy, "cuGraphDestroy") && cu_bind(&cu.module_load, "cuModuleLoadData") &&
           cu_bind(&cu.module_function, "cuModuleGetFunction") && cu_bind(&cu.launch, "cuLaunchKernel") &&
           cu.init(0) == 0;
}

/* Two CU_STREAM_NON_BLOCKING streams × the shape × STREAM_CALLS calls each, interleaved,
 * on two different inputs, each call into its own output slot, with no synchronisation
 * between the calls: every one of the 2 × STREAM_CALLS results must have the bits of the
 * same reduction run alone on the default stream, which must match the CPU reference.
 * Shared scratch shows as mixed partials and completion counts: wrong or missing sums
 * (the slots start as NaN). The shape must plan `variant` with scratch. */
static bool two_streams(tilec_ctx *ctx, tilec_reduce_desc d, const char *variant, char *why, size_t wn) {
    char *text = NULL, want[64];
    snprintf(want, sizeof want, "variant %s,", variant);
    if (tilec_reduce_explain(ctx, &d, &text) != TILEC_OK || !strstr(text, want) || strstr(text, " 0 scratch buffers")) {
        snprintf(why, wn, "the shape does not plan %s with scratch:\n%s", variant, text ? text : tilec_diag_text(ctx));
        tilec_free(text);
        return false;
    }
    tilec_free(text);
    size_t es = tilec_dtype_size(d.dtype);
    int64_t in_n = desc_elems(&d, false), out_n = desc_elems(&d, true);
    size_t ib = (size_t)in_n * es, ob = (size_t)out_n * es, slots = (size_t)STREAM_CALLS * ob;
    void *host_in[2] = {malloc(ib), malloc(ib)}, *host_out[2] = {malloc(slots), malloc(slots)}, *alone[2] = {malloc(ob), malloc(ob)};
    void *din[2] = {NULL, NULL}, *dout[2] = {NULL, NULL}, *dalone = NULL, *streams[2] = {NULL, NULL}, *primary = NULL, *popped;
    unsigned char *nan_slots = malloc(slots);
    bool ok = host_in[0] && host_in[1] && host_out[0] && host_out[1] && alone[0] && alone[1] && nan_slots;
    if (!ok) { snprintf(why, wn, "out of host memory"); goto done; }
    memset(nan_slots, 0xff, slots);
    uint64_t seed = 77;
    int device;
    /* the caller's streams belong to the device's primary context, as tilec's calls do */
    if (cu.device_get(&device, 0) || cu.retain(&primary, device) || cu.push(primary) ||
        cu.stream_create(&streams[0], CU_STREAM_NON_BLOCKING) || cu.stream_create(&streams[1], CU_STREAM_NON_BLOCKING) ||
        cu.pop(&popped)) {
        snprintf(why, wn, "could not make two non-blocking streams");
        ok = false;
        goto done;
    }
    for (int s = 0; s < 2 && ok; s++) {
        fill_buffer(d.dtype, host_in[s], in_n, d.shape[d.rank - 1], false, &seed);
        ok = tilec_mem_alloc(ctx, ib, &din[s]) == TILEC_OK && tilec_mem_alloc(ctx, slots, &dout[s]) == TILEC_OK &&
             tilec_mem_upload(ctx, din[s], host_in[s], ib) == TILEC_OK &&
             tilec_mem_upload(ctx, dout[s], nan_slots, slots) == TILEC_OK;
    }
    /* each input alone on the default stream, checked against the CPU reference */
    ok = ok && tilec_mem_alloc(ctx, ob, &dalone) == TILEC_OK;
    for (int s = 0; s < 2 && ok; s++) {
        tilec_check_result r = {0};
        ok = tilec_reduce(ctx, &d, din[s], dalone) == TILEC_OK && tilec_synchronize(ctx) == TILEC_OK &&
             tilec_mem_download(ctx, alone[s], dalone, ob) == TILEC_OK &&
             tilec_reduce_check(ctx, &d, host_in[s], nan_slots, alone[s], &r) == TILEC_OK;
        if (ok && !r.ok) {
            snprintf(why, wn, "input %d alone: %lld mismatches with the reference, first [%lld] got %.9g want %.9g", s,
                     (long long)r.mismatches, (long long)r.first_bad, r.got, r.want);
            goto done;
        }
    }
    /* the uploads ran on the legacy default stream, which non-blocking streams do not
     * wait for: everything is finished here (tilec_synchronize above) */
    for (int i = 0; i < STREAM_CALLS && ok; i++)
        for (int s = 0; s < 2 && ok; s++) {
            d.stream = streams[s];
            ok = tilec_reduce(ctx, &d, din[s], (char *)dout[s] + (size_t)i * ob) == TILEC_OK;
        }
    d.stream = NULL;
    ok = ok && tilec_synchronize(ctx) == TILEC_OK && tilec_mem_download(ctx, host_out[0], dout[0], slots) == TILEC_OK &&
         tilec_mem_download(ctx, host_out[1], dout[1], slots) == TILEC_OK;
    if (!ok) { snprintf(why, wn, "%s", tilec_diag_text(ctx)); goto done; }
    int bad = 0, first_s = -1, first_i = -1;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < STREAM_CALLS; i++)
            if (memcmp((char *)host_out[s] + (size_t)i * ob, alone[s], ob)) {
                if (!bad++) first_s = s, first_i = i;
            }
    if (bad) {
        snprintf(why, wn, "%d of %d results differ from the same reduction run alone (first: stream %d, call %d)", bad,
                 2 * STREAM_CALLS, first_s, first_i);
        ok = false;
    }
done:
    if (!ok && !why[0]) snprintf(why, wn, "%s", tilec_diag_text(ctx));
    if (primary && cu.push(primary) == 0) {
        for (int s = 0; s < 2; s++)
            if (streams[s]) cu.stream_destroy(streams[s]);
        cu.pop(&popped);
    }
    if (primary) cu.release(device);
    for (int s = 0; s < 2; s++) {
        tilec_mem_free(ctx, din[s]);
        tilec_mem_free(ctx, dout[s]);
        free(host_in[s]);
        free(host_out[s]);
        free(alone[s]);
    }
    tilec_mem_free(ctx, dalone);
    free(nan_slots);
    return ok;
}

/* A thread that never made a context current, or that has one of its own current, uses
 * the main thread's tilec context: the results are right, and the thread's current
 * context is what it was before each call (none, or its own). */
typedef struct foreign {
    tilec_ctx *ctx;
    bool own_context; /* make a context of its own current first */
    bool ok;
    char why[512];
} foreign;

static void *foreign_thread(void *arg) {
    foreign *f = arg;
    void *mine = NULL, *cur = (void *)1;
    int device;
    if (f->own_context && (cu.device_get(&device, 0) || cu.ctx_create(&mine, 0, device))) {
        snprintf(f->why, sizeof f->why, "could not create a context of the thread's own");
        return NULL;
    }
    /* cuCtxCreate makes the new context current; no context current otherwise */
    if (cu.get_current(&cur) || cur != mine) {
        snprintf(f->why, sizeof f->why, "the thread's current context is not what the test set up");
        goto done;
    }
    tilec_reduce_desc ds[2] = {
        {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {1 << 20}, .naxes = 1, .axes = {0}},
        {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {8192, 256}, .naxes = 1, .axes = {0}},
    };
    f->ok = true;
    for (int i = 0; i < 2 && f->ok; i++) {
        f->ok = run_one(f->ctx, &ds[i], (uint64_t)(100 + i), NULL, f->why, sizeof f->why);
        if (f->ok && (cu.get_current(&cur) || cur != mine)) {
            snprintf(f->why, sizeof f->why, "after the call the thread's current context is %p, not %p as before", cur, mine);
            f->ok = false;
        }
    }
done:
    if (mine) cu.ctx_destroy(mine);
    return NULL;
}

/* The stream and thread checks; the number that failed. */
/* tilec_reduce_prepare, then one tilec_reduce captured in a CUDA graph on a non-blocking
 * stream, and the graph replayed: REPLAYS times on new data (the input uploaded between
 * replays), each result checked against the reference and against the same call made
 * directly, bit for bit; then 200 replays on one input, every one the same bits. */
enum { REPLAYS = 10 };
static bool graph_replays(tilec_ctx *ctx, tilec_reduce_desc d, char *why, size_t wn) {
    size_t es = tilec_dtype_size(d.dtype);
    int64_t in_n = desc_elems(&d, false), out_n = desc_elems(&d, true);
    size_t ib = (size_t)in_n * es, ob = (size_t)out_n * es;
    void *in = malloc(ib), *got = malloc(ob), *direct = malloc(ob), *first = malloc(ob);
    void *din = NULL, *dout = NULL, *ddirect = NULL, *stream = NULL, *primary = NULL, *popped, *graph = NULL, *exec = NULL;
    bool ok = in && got && direct && first && cu.retain(&primary, 0) == 0 && cu.push(primary) == 0;
    if (!ok) { snprintf(why, wn, "no memory or no primary context"); goto out; }
    ok = cu.stream_create(&stream, CU_STREAM_NON_BLOCKING) == 0 && tilec_mem_alloc(ctx, ib, &din) == TILEC_OK &&
         tilec_mem_alloc(ctx, ob, &dout) == TILEC_OK && tilec_mem_alloc(ctx, ob, &ddirect) == TILEC_OK;
    if (!ok) { snprintf(why, wn, "could not allocate: %s", tilec_diag_text(ctx)); goto out; }
    d.stream = stream;
    if (tilec_reduce_prepare(ctx, &d, din) != TILEC_OK) { snprintf(why, wn, "prepare: %s", tilec_diag_text(ctx)); ok = false; goto out; }
    ok = cu.begin_capture(stream, 2 /* relaxed */) == 0;
    tilec_status st = ok ? tilec_reduce(ctx, &d, din, dout) : TILEC_OK;
    ok = cu.end_capture(stream, &graph) == 0 && ok && st == TILEC_OK && cu.instantiate(&exec, graph, 0) == 0;
    if (!ok) { snprintf(why, wn, "capture failed: %s", st ? tilec_diag_text(ctx) : "a driver call failed"); goto out; }
    for (int k = 0; k < REPLAYS && ok; k++) {
        uint64_t seed = 500 + (uint64_t)k;
        fill_buffer(d.dtype, in, in_n, d.shape[d.rank - 1], true, &seed);
        tilec_reduce_desc plain = d;
        plain.stream = NULL;
        tilec_check_result r = {0};
        ok = tilec_mem_upload(ctx, din, in, ib) == TILEC_OK && cu.graph_launch(exec, stream) == 0 &&
             cu.stream_sync(stream) == 0 && tilec_mem_download(ctx, got, dout, ob) == TILEC_OK &&
             tilec_reduce(ctx, &plain, din, ddirect) == TILEC_OK && tilec_synchronize(ctx) == TILEC_OK &&
             tilec_mem_download(ctx, direct, ddirect, ob) == TILEC_OK &&
             tilec_reduce_check(ctx, &d, in, NULL, got, &r) == TILEC_OK;
        if (!ok) snprintf(why, wn, "replay %d: a call failed: %s", k, tilec_diag_text(ctx));
        else if (!r.ok) { snprintf(why, wn, "replay %d: %lld mismatches with the reference", k, (long long)r.mismatches); ok = false; }
        else if (memcmp(got, direct, ob)) { snprintf(why, wn, "replay %d: other bits than the direct call", k); ok = false; }
    }
    for (int k = 0; k < 200 && ok; k++) { /* the same input: the same bits every time */
        ok = cu.graph_launch(exec, stream) == 0 && cu.stream_sync(stream) == 0 && tilec_mem_download(ctx, got, dout, ob) == TILEC_OK;
        if (ok && k == 0) memcpy(first, got, ob);
        if (ok && memcmp(got, first, ob)) { snprintf(why, wn, "replay %d of one input gave other bits", k); ok = false; }
    }
out:
    if (exec) cu.exec_destroy(exec);
    if (graph) cu.graph_destroy(graph);
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    tilec_mem_free(ctx, ddirect);
    if (stream) cu.stream_destroy(stream);
    if (primary) { cu.pop(&popped); cu.release(0); }
    free(in);
    free(got);
    free(direct);
    free(first);
    return ok;
}

/* Calls never prepared, captured in CU_STREAM_CAPTURE_MODE_GLOBAL (the strictest mode,
 * torch.cuda.graph's default) on a non-blocking stream, in a context of their own so that
 * nothing was made before but what the case says, as torch users capture:
 *  - norm2 f32 [2^22] (a gradient norm), called once before on another non-blocking
 *    stream (warmed up: its plan loaded), never on the captured one: its scratch for that
 *    stream is made during the capture;
 *  - sum f32 [2^22 + 5], never called before: its plan is compiled and loaded, and its
 *    scratch made, during the capture;
 *  - max f32 [4096, 1003] over axis 1, never called before: a plan without scratch.
 * The graph (the three launches) is replayed REPLAYS times on new data, each result
 * checked against the reference and against the same call made directly on the default
 * stream, bit for bit; then 200 times on one input, the same bits every time. After the
 * replays, explain must show scratch for the first two and none for the third, so that
 * both paths were covered. */
enum { UNPREPARED = 3 };
static bool graph_unprepared(char *why, size_t wn) {
    static const tilec_reduce_desc cases[UNPREPARED] = {
        {.op = TILEC_OP_NORM2, .dtype = TILEC_F32, .rank = 1, .shape = {1 << 22}, .naxes = 1, .axes = {0}},
        {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {(1 << 22) + 5}, .naxes = 1, .axes = {0}},
        {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {4096, 1003}, .naxes = 1, .axes = {1}},
    };
    static const bool scratch[UNPREPARED] = {true, true, false};
    tilec_ctx *ctx = NULL;
    void *in[UNPREPARED] = {0}, *got[UNPREPARED] = {0}, *direct[UNPREPARED] = {0}, *first[UNPREPARED] = {0};
    void *din[UNPREPARED] = {0}, *dout[UNPREPARED] = {0}, *ddirect[UNPREPARED] = {0};
    size_t ib[UNPREPARED], ob[UNPREPARED];
    void *stream = NULL, *warm = NULL, *primary = NULL, *popped, *graph = NULL, *exec = NULL;
    bool pushed = false;
    int res = 0;
    tilec_open(&ctx);
    bool ok = tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0) == TILEC_OK;
    if (!ok) { snprintf(why, wn, "no CUDA runtime: %s", tilec_diag_text(ctx)); goto out; }
    ok = cu.retain(&primary, 0) == 0 && (pushed = cu.push(primary) == 0) &&
         cu.stream_create(&stream, CU_STREAM_NON_BLOCKING) == 0 && cu.stream_create(&warm, CU_STREAM_NON_BLOCKING) == 0;
    if (!ok) { snprintf(why, wn, "no primary context or no non-blocking streams"); goto out; }
    for (int c = 0; c < UNPREPARED && ok; c++) {
        const tilec_reduce_desc *d = &cases[c];
        ib[c] = (size_t)desc_elems(d, false) * tilec_dtype_size(d->dtype);
        ob[c] = (size_t)desc_elems(d, true) * tilec_dtype_size(d->dtype);
        ok = (in[c] = malloc(ib[c])) && (got[c] = malloc(ob[c])) && (direct[c] = malloc(ob[c])) && (first[c] = malloc(ob[c])) &&
             tilec_mem_alloc(ctx, ib[c], &din[c]) == TILEC_OK && tilec_mem_alloc(ctx, ob[c], &dout[c]) == TILEC_OK &&
             tilec_mem_alloc(ctx, ob[c], &ddirect[c]) == TILEC_OK;
    }
    if (!ok) { snprintf(why, wn, "could not allocate: %s", tilec_diag_text(ctx)); goto out; }
    /* the warm-up of the first case, on another stream, then waited for */
    tilec_reduce_desc d = cases[0];
    d.stream = warm;
    uint64_t seed0 = 899;
    fill_buffer(d.dtype, in[0], desc_elems(&d, false), d.shape[d.rank - 1], true, &seed0);
    ok = tilec_mem_upload(ctx, din[0], in[0], ib[0]) == TILEC_OK && tilec_synchronize(ctx) == TILEC_OK &&
         tilec_reduce(ctx, &d, din[0], dout[0]) == TILEC_OK && (res = cu.stream_sync(warm)) == 0;
    if (!ok) { snprintf(why, wn, "the warm-up failed (driver %d): %s", res, tilec_diag_text(ctx)); goto out; }
    if ((res = cu.begin_capture(stream, 0 /* CU_STREAM_CAPTURE_MODE_GLOBAL */))) {
        snprintf(why, wn, "cuStreamBeginCapture failed (%d)", res);
        ok = false;
        goto out;
    }
    tilec_status st = TILEC_OK;
    int failed_case = -1;
    for (int c = 0; c < UNPREPARED && st == TILEC_OK; c++) {
        d = cases[c];
        d.stream = stream;
        if ((st = tilec_reduce(ctx, &d, din[c], dout[c])) != TILEC_OK) failed_case = c;
    }
    res = cu.end_capture(stream, &graph);
    if (st != TILEC_OK || res) {
        if (st != TILEC_OK)
            snprintf(why, wn, "the captured call of case %d failed: %s (cuStreamEndCapture: %d)", failed_case,
                     tilec_diag_text(ctx), res);
        else snprintf(why, wn, "cuStreamEndCapture failed (%d): the capture was invalidated", res);
        ok = false;
        goto out;
    }
    if ((res = cu.instantiate(&exec, graph, 0))) {
        snprintf(why, wn, "cuGraphInstantiate failed (%d)", res);
        ok = false;
        goto out;
    }
    for (int k = 0; k < REPLAYS && ok; k++) {
        for (int c = 0; c < UNPREPARED && ok; c++) {
            uint64_t seed = 900 + (uint64_t)(k * UNPREPARED + c);
            fill_buffer(cases[c].dtype, in[c], desc_elems(&cases[c], false), cases[c].shape[cases[c].rank - 1], true, &seed);
            ok = tilec_mem_upload(ctx, din[c], in[c], ib[c]) == TILEC_OK;
        }
        /* the uploads finished (the legacy stream), then the replay, then the direct calls */
        ok = ok && tilec_synchronize(ctx) == TILEC_OK && (res = cu.graph_launch(exec, stream)) == 0 &&
             (res = cu.stream_sync(stream)) == 0;
        for (int c = 0; c < UNPREPARED && ok; c++) {
            tilec_check_result r = {0};
            ok = tilec_mem_download(ctx, got[c], dout[c], ob[c]) == TILEC_OK &&
                 tilec_reduce(ctx, &cases[c], din[c], ddirect[c]) == TILEC_OK && tilec_synchronize(ctx) == TILEC_OK &&
                 tilec_mem_download(ctx, direct[c], ddirect[c], ob[c]) == TILEC_OK &&
                 tilec_reduce_check(ctx, &cases[c], in[c], NULL, got[c], &r) == TILEC_OK;
            if (!ok) snprintf(why, wn, "replay %d, case %d: a call failed (driver %d): %s", k, c, res, tilec_diag_text(ctx));
            else if (!r.ok) {
                snprintf(why, wn, "replay %d, case %d: %lld mismatches with the reference, first [%lld] got %.9g want %.9g", k,
                         c, (long long)r.mismatches, (long long)r.first_bad, r.got, r.want);
                ok = false;
            } else if (memcmp(got[c], direct[c], ob[c])) {
                snprintf(why, wn, "replay %d, case %d: other bits than the direct call", k, c);
                ok = false;
            }
        }
        if (!ok && !why[0]) snprintf(why, wn, "replay %d failed (driver %d): %s", k, res, tilec_diag_text(ctx));
    }
    for (int k = 0; k < 200 && ok; k++) { /* the same inputs: the same bits every time */
        ok = (res = cu.graph_launch(exec, stream)) == 0 && (res = cu.stream_sync(stream)) == 0;
        for (int c = 0; c < UNPREPARED && ok; c++) {
            ok = tilec_mem_download(ctx, got[c], dout[c], ob[c]) == TILEC_OK;
            if (ok && k == 0) memcpy(first[c], got[c], ob[c]);
            if (ok && memcmp(got[c], first[c], ob[c])) {
                snprintf(why, wn, "replay %d of one input, case %d: other bits", k, c);
                ok = false;
            }
        }
        if (!ok && !why[0]) snprintf(why, wn, "replay %d of one input failed (driver %d): %s", k, res, tilec_diag_text(ctx));
    }
    for (int c = 0; c < UNPREPARED && ok; c++) { /* what the cases covered */
        char *text = NULL;
        ok = tilec_reduce_explain(ctx, &cases[c], &text) == TILEC_OK;
        bool none = ok && strstr(text, " 0 scratch buffers");
        if (ok && none == scratch[c]) {
            snprintf(why, wn, "case %d plans %s scratch, so the test does not cover what it says; pick another shape:\n%s", c,
                     none ? "no" : "some", text);
            ok = false;
        }
        tilec_free(text);
    }
out:
    if (exec) cu.exec_destroy(exec);
    if (graph) cu.graph_destroy(graph);
    for (int c = 0; c < UNPREPARED; c++) {
        tilec_mem_free(ctx, din[c]);
        tilec_mem_free(ctx, dout[c]);
        tilec_mem_free(ctx, ddirect[c]);
        free(in[c]);
        free(got[c]);
        free(direct[c]);
        free(first[c]);
    }
    if (tilec_runtime_backend(ctx) == TILEC_BACKEND_CUDA && tilec_synchronize(ctx) != TILEC_OK && ok) {
        snprintf(why, wn, "%s", tilec_diag_text(ctx));
        ok = false;
    }
    tilec_close(ctx); /* the sets made during the capture are freed here */
    if (stream) cu.stream_destroy(stream);
    if (warm) cu.stream_destroy(warm);
    if (pushed) cu.pop(&popped);
    if (primary) cu.release(0);
    return ok;
}

static bool print_graph_unprepared(FILE *table) {
    char why[2048] = "";
    bool ok = graph_unprepared(why, sizeof why);
    printf("jit_check: unprepared calls (norm2 f32 [2^22] warmed up on another stream, sum f32 [2^22 + 5] and max f32 "
           "[4096, 1003] never called) captured in a CUDA graph in global mode, %d replays on new data and 200 on one: "
           "%s%s%s\n", REPLAYS, ok ? "PASS" : "FAIL", ok ? "" : ": ", ok ? "" : why);
    if (table)
        fprintf(table, "| unprepared calls captured in a CUDA graph in global mode (norm2 f32 [2^22] warmed up on another "
                       "stream; sum f32 [2^22 + 5], max f32 [4096, 1003] never called): %d replays on new data against the "
                       "reference and the direct call, 200 on one input | %s |\n", REPLAYS, ok ? "pass, bit-identical" : "FAIL");
    return ok;
}

static int streams_and_threads(tilec_ctx *ctx, FILE *table) {
    int failed = 0;
    char why[2048];
    if (!cu_load()) {
        printf("  FAIL streams and threads: the driver API (libcuda.so.1) could not be loaded\n");
        return 1;
    }
    /* 64 MB inputs: a kernel (about 15 us) outlasts the host's enqueue of a call (about
     * 5 us), so the queues fill and the two streams' kernels run at the same time */
    static const struct { tilec_reduce_desc d; const char *variant, *name; } cases[] = {
        {{.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {1 << 24}, .naxes = 1, .axes = {0}}, "grid_rows", "f32 sum [2^24]"},
        {{.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {65536, 256}, .naxes = 1, .axes = {0}}, "grid_cols", "f32 sum [65536, 256] over axis 0"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        why[0] = 0;
        bool ok = two_streams(ctx, cases[c].d, cases[c].variant, why, sizeof why);
        printf("jit_check: two non-blocking streams x %d calls of %s (%s), interleaved: %s%s%s\n", STREAM_CALLS,
               cases[c].name, cases[c].variant, ok ? "PASS" : "FAIL", ok ? "" : ": ", ok ? "" : why);
        if (table)
            fprintf(table, "| two non-blocking streams × %d interleaved calls of %s (%s), each result against the same call alone and the reference | %s |\n",
                    STREAM_CALLS, cases[c].name, cases[c].variant, ok ? "pass, bit-identical" : "FAIL");
        failed += !ok;
    }
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        why[0] = 0;
        bool ok = graph_replays(ctx, cases[c].d, why, sizeof why);
        printf("jit_check: tilec_reduce_prepare, one call of %s (%s) captured in a CUDA graph, %d replays on new data and "
               "200 on one: %s%s%s\n", cases[c].name, cases[c].variant, REPLAYS, ok ? "PASS" : "FAIL", ok ? "" : ": ", ok ? "" : why);
        if (table)
            fprintf(table, "| tilec_reduce_prepare, a call of %s (%s) captured in a CUDA graph: %d replays on new data against the reference and the direct call, 200 on one input | %s |\n",
                    cases[c].name, cases[c].variant, REPLAYS, ok ? "pass, bit-identical" : "FAIL");
        failed += !ok;
    }
    failed += !print_graph_unprepared(table);
    for (int own = 0; own < 2; own++) {
        foreign f = {.ctx = ctx, .own_context = own == 1};
        pthread_t th;
        if (pthread_create(&th, NULL, foreign_thread, &f)) snprintf(f.why, sizeof f.why, "pthread_create failed");
        else pthread_join(th, NULL);
        const char *what = own ? "a thread with a context of its own current (restored after each call)"
                               : "a thread that never made a context current";
        printf("jit_check: the main thread's context used from %s: %s%s%s\n", what, f.ok ? "PASS" : "FAIL",
               f.ok ? "" : ": ", f.ok ? "" : f.why);
        if (table) fprintf(table, "| the main thread's context used from %s | %s |\n", what, f.ok ? "pass" : "FAIL");
        failed += !f.ok;
    }
    return failed;
}

/* nan=ignore over all-NaN slices on the GPU: NaN in every output but output 0, whose
 * slice holds the only number (element 0 = 5), for a shape of each grid variant and every
 * float dtype; the expected values are written here. Returns the failures. */
static int all_nan_ignore(tilec_ctx *ctx, int *cases) {
    static const struct { int rank; int64_t shape[3]; int naxes; int axes[2]; } shapes[] = {
        {1, {(1 << 24) + 3}, 1, {0}}, {2, {3, 700001}, 1, {-1}}, {2, {600, 8200}, 1, {-1}}, {2, {100001, 32}, 1, {1}},
        {2, {3000, 1024}, 1, {1}}, {2, {40999, 8}, 1, {0}}, {2, {37, 90000}, 1, {0}}, {2, {37, 90001}, 1, {0}},
        {3, {6, 5, 4000}, 2, {0, 2}}, {2, {5, 1}, 1, {1}},
    };
    static const tilec_dtype dts[] = {TILEC_F32, TILEC_F16, TILEC_BF16, TILEC_F64};
    int failed = 0;
    *cases = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t t = 0; t < 4; t++)
            for (int op = TILEC_OP_MAX; op <= TILEC_OP_MIN; op++) {
                tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = dts[t], .rank = shapes[s].rank,
                                       .naxes = shapes[s].naxes, .nan = TILEC_NAN_IGNORE};
                memcpy(d.shape, shapes[s].shape, sizeof shapes[s].shape);
                memcpy(d.axes, shapes[s].axes, sizeof shapes[s].axes);
                size_t es = tilec_dtype_size(d.dtype);
                int64_t in_n = desc_elems(&d, false), out_n = desc_elems(&d, true);
                unsigned char *in = malloc((size_t)in_n * es), *out = malloc((size_t)out_n * es);
                for (int64_t i = 0; i < in_n; i++) {
                    double v = i == 0 ? 5.0 : NAN;
                    if (es == 2) {
                        uint16_t h = d.dtype == TILEC_F16 ? tilec_f16_from_double(v) : tilec_bf16_from_double(v);
                        memcpy(in + 2 * i, &h, 2);
                    } else if (es == 4) {
                        float f = (float)v;
                        memcpy(in + 4 * i, &f, 4);
                    } else {
                        memcpy(in + 8 * i, &v, 8);
                    }
                }
                void *din = NULL, *dout = NULL;
                bool ok = tilec_mem_alloc(ctx, (size_t)in_n * es, &din) == TILEC_OK &&
                          tilec_mem_alloc(ctx, (size_t)out_n * es, &dout) == TILEC_OK &&
                          tilec_mem_upload(ctx, din, in, (size_t)in_n * es) == TILEC_OK &&
                          tilec_reduce(ctx, &d, din, dout) == TILEC_OK && tilec_synchronize(ctx) == TILEC_OK &&
                          tilec_mem_download(ctx, out, dout, (size_t)out_n * es) == TILEC_OK;
                for (int64_t o = 0; ok && o < out_n; o++) {
                    double got;
                    if (es == 2) {
                        uint16_t h;
                        memcpy(&h, out + 2 * o, 2);
                        got = d.dtype == TILEC_F16 ? tilec_f16_to_double(h) : tilec_bf16_to_double(h);
                    } else if (es == 4) {
                        float f;
                        memcpy(&f, out + 4 * o, 4);
                        got = f;
                    } else {
                        memcpy(&got, out + 8 * o, 8);
                    }
                    if (o == 0 ? got != 5.0 : !isnan(got)) {
                        printf("  FAIL all-NaN nan=ignore: shape %zu %s %s output %lld is %g\n", s, tilec_op_name(d.op),
                               tilec_dtype_name(d.dtype), (long long)o, got);
                        ok = false;
                    }
                }
                if (!ok) failed++;
                ++*cases;
                tilec_mem_free(ctx, din);
                tilec_mem_free(ctx, dout);
                free(in);
                free(out);
            }
    printf("jit_check: all-NaN slices under nan=ignore: %d of %d cases NaN (and the one number kept)\n", *cases - failed, *cases);
    return failed;
}

/* f32 max and min of every ordered pair of special values (±0, NaNs with payloads and a
 * signalling one, ±1, ±inf, ±the least subnormal, the largest float), both NaN policies,
 * as rows ([144, 2] over axis 1) and as columns ([2, 144] over axis 0): against the rule
 * of docs/format.md written out here (a NaN wins under propagate and loses under ignore,
 * +0 above -0) and against the simulator's bits. The GPU folds them with its max / min
 * instructions (sm_80 on), the simulator with its own code. Returns the failures. */
static float pair_want(float a, float b, bool max, bool ignore) {
    if (isnan(a) && isnan(b)) return NAN;
    if (isnan(a) || isnan(b)) return !ignore ? NAN : isnan(a) ? b : a;
    if (a == b) return (signbit(a) != 0) == max ? b : a; /* +0 above -0 */
    return (a > b) == max ? a : b;
}

static int special_pairs(tilec_ctx *ctx, int *cases) {
    static const uint32_t bits[] = {0x00000000u, 0x80000000u, 0x7fc00000u, 0xffc00001u, 0x7fa00001u, 0x3f800000u,
                                    0xbf800000u, 0x7f800000u, 0xff800000u, 0x00000001u, 0x80000001u, 0x7f7fffffu};
    enum { NV = sizeof bits / sizeof bits[0], NP = NV * NV };
    float v[NV], rows[NP * 2], cols[2 * NP], got[NP], sim_got[NP];
    memcpy(v, bits, sizeof v);
    for (int i = 0; i < NP; i++) {
        rows[2 * i] = cols[i] = v[i / NV];
        rows[2 * i + 1] = cols[NP + i] = v[i % NV];
    }
    tilec_ctx *sim = NULL;
    if (tilec_open(&sim) != TILEC_OK || tilec_runtime_open(sim, TILEC_BACKEND_SIM, 0) != TILEC_OK) {
        printf("  FAIL special pairs: the simulator does not open: %s", sim ? tilec_diag_text(sim) : "no context\n");
        tilec_close(sim);
        *cases = 1;
        return 1;
    }
    int failed = 0;
    *cases = 0;
    for (int layout = 0; layout < 2; layout++)
        for (int op = TILEC_OP_MAX; op <= TILEC_OP_MIN; op++)
            for (int nan = 0; nan < 2; nan++) {
                tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = TILEC_F32, .rank = 2, .naxes = 1,
                                       .nan = nan ? TILEC_NAN_IGNORE : TILEC_NAN_PROPAGATE};
                d.shape[0] = layout ? 2 : NP;
                d.shape[1] = layout ? NP : 2;
                d.axes[0] = layout ? 0 : 1;
                const float *in = layout ? cols : rows;
                const char *what = layout ? "columns" : "rows", *policy = nan ? "nan=ignore" : "nan=propagate";
                bool ok = true;
                for (int side = 0; side < 2 && ok; side++) {
                    tilec_ctx *c = side ? sim : ctx;
                    void *din = NULL, *dout = NULL;
                    ok = tilec_mem_alloc(c, sizeof rows, &din) == TILEC_OK && tilec_mem_alloc(c, sizeof got, &dout) == TILEC_OK &&
                         tilec_mem_upload(c, din, in, sizeof rows) == TILEC_OK && tilec_reduce(c, &d, din, dout) == TILEC_OK &&
                         tilec_synchronize(c) == TILEC_OK && tilec_mem_download(c, side ? sim_got : got, dout, sizeof got) == TILEC_OK;
                    if (!ok)
                        printf("  FAIL special pairs: %s %s as %s on the %s: %s", tilec_op_name(d.op), policy, what,
                               side ? "simulator" : "GPU", tilec_diag_text(c));
                    tilec_mem_free(c, din);
                    tilec_mem_free(c, dout);
                }
                int bad = 0;
                for (int i = 0; ok && i < NP; i++) {
                    float w = pair_want(v[i / NV], v[i % NV], op == TILEC_OP_MAX, nan == 1);
                    bool right = isnan(w) ? isnan(got[i]) : memcmp(&w, &got[i], 4) == 0;
                    if (!right || memcmp(&got[i], &sim_got[i], 4)) {
                        uint32_t g, sg;
                        memcpy(&g, &got[i], 4);
                        memcpy(&sg, &sim_got[i], 4);
                        if (bad++ < 8) /* the first few; the count follows */
                            printf("  FAIL special pairs: %s %s of 0x%08x, 0x%08x as %s: GPU 0x%08x, simulator 0x%08x\n",
                                   tilec_op_name(d.op), policy, bits[i / NV], bits[i % NV], what, g, sg);
                    }
                }
                if (bad) printf("  FAIL special pairs: %s %s as %s: %d of %d pairs wrong\n", tilec_op_name(d.op), policy, what, bad, NP);
                failed += !ok || bad;
                ++*cases;
            }
    tilec_close(sim);
    printf("jit_check: f32 max/min of every pair of special values: %d of %d cases right and the simulator's bits\n",
           *cases - failed, *cases);
    return failed;
}

/* Rows of 2^31 - 1 f16 elements (32-bit indices would step past INT32_MAX on them): a sum
 * of 2^-10 every 64 elements, its sign alternating (+-0 elsewhere), and 0.5 and 1 as the
 * last two elements: exact in f32 in any order (every partial sum is a multiple of 2^-10
 * below 2^14) and in f16 too (the total is in [1, 2), where f16 steps by 2^-10), so one
 * element lost or read twice changes the result; known without a reference. A max and a
 * min planted at the last elements. Returns the failures. */
static int rows_of_2g(tilec_ctx *ctx) {
    const int64_t n = 2147483647;
    uint16_t *h = malloc((size_t)n * 2 * 2), v16[1000];
    void *din = NULL, *dout = NULL;
    if (!h || tilec_mem_alloc(ctx, (size_t)n * 2 * 2, &din) != TILEC_OK || tilec_mem_alloc(ctx, 16, &dout) != TILEC_OK) {
        printf("jit_check: 2^31-1 f16 rows: could not allocate: %s\n", tilec_diag_text(ctx));
        free(h);
        return 1;
    }
    int failed = 0;
    for (int r = 0; r < 2; r++) { /* [n], then [2, n] over axis 1 (row 1 starts at an odd element) */
        int64_t want_units[2] = {0, 0}; /* in 2^-10 */
        for (int64_t row = 0; row <= r; row++)
            for (int64_t i = 0; i < n; i++) {
                uint16_t x = (uint16_t)((i & 1) ? 0x8000 : 0); /* -0 / +0 */
                if (i % 64 == 0) x = (i / 64) % 2 ? 0x9400 : 0x1400; /* -2^-10, +2^-10 */
                if (i % 64 == 0) want_units[row] += (i / 64) % 2 ? -1 : 1;
                if (i == n - 2) { x = 0x3800; want_units[row] += 512; } /* 0.5 */
                if (i == n - 1) { x = 0x3c00; want_units[row] += 1024; } /* 1 */
                h[row * n + i] = x;
            }
        tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F16, .rank = r + 1, .naxes = 1, .axes = {r}};
        d.shape[0] = r ? 2 : n;
        d.shape[1] = n;
        uint16_t got[2] = {0, 0};
        bool ok = tilec_mem_upload(ctx, din, h, (size_t)n * 2 * (size_t)(r + 1)) == TILEC_OK &&
                  tilec_reduce(ctx, &d, din, dout) == TILEC_OK && tilec_synchronize(ctx) == TILEC_OK &&
                  tilec_mem_download(ctx, got, dout, (size_t)(r + 1) * 2) == TILEC_OK;
        for (int row = 0; row <= r; row++) {
            double want = (double)want_units[row] / 1024.0, g = tilec_f16_to_double(got[row]);
            uint16_t want_bits = tilec_f16_from_double(want);
            bool same = ok && got[row] == want_bits;
            printf("jit_check: f16 sum of %s row %d (2^31-1 elements): %.9g, want %.9g: %s\n", r ? "[2, 2^31-1]" : "[2^31-1]",
                   row, g, want, same ? "exact" : "WRONG");
            failed += !same;
        }
    }
    /* max and min over [2^31 - 1], planted at the last two elements */
    for (int i = 0; i < 1000; i++) v16[i] = tilec_f16_from_double((double)i / 1000.0 - 0.5);
    for (int64_t i = 0; i < n; i++) h[i] = v16[i % 1000];
    h[n - 1] = 0x4780; /* 7.5 */
    h[n - 2] = 0xc200; /* -3 */
    for (int op = TILEC_OP_MAX; op <= TILEC_OP_MIN; op++) {
        tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = TILEC_F16, .rank = 1, .shape = {n}, .naxes = 1, .axes = {0}};
        uint16_t got = 0;
        bool ok = tilec_mem_upload(ctx, din, h, (size_t)n * 2) == TILEC_OK && tilec_reduce(ctx, &d, din, dout) == TILEC_OK &&
                  tilec_synchronize(ctx) == TILEC_OK && tilec_mem_download(ctx, &got, dout, 2) == TILEC_OK &&
                  got == (op == TILEC_OP_MAX ? 0x4780 : 0xc200);
        printf("jit_check: f16 %s of 2^31-1 elements: %g, want %g: %s\n", tilec_op_name(d.op), tilec_f16_to_double(got),
               op == TILEC_OP_MAX ? 7.5 : -3.0, ok ? "exact" : "WRONG");
        failed += !ok;
    }
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    free(h);
    return failed;
}

/* Segmented reductions (tilec_reduce_segmented, docs/runtime.md): every op with every dtype
 * it takes, in the three worker layouts the mean length picks (a group of lanes a segment:
 * mean 40; a CTA a segment: 6000; several CTAs a segment: 150000, for f32, bf16, f64 and
 * i64), int64 and int32 offsets by turns, two rows of random lengths with empty segments
 * (none for the ops that have no value for one), special values in the data. Every
 * segment against the double-precision reference as a dense row of its elements
 * (tilec_reduce_check); the two shorter layouts also against the simulator's bits for the
 * same call. Then offsets that fall: the next tilec_synchronize says so, the one after is
 * clean. Returns the failures; *cases the calls checked. */
static int segmented(tilec_ctx *ctx, int *cases) {
    static const tilec_dtype dts[] = {TILEC_F16, TILEC_BF16, TILEC_F32, TILEC_F64, TILEC_I32, TILEC_U32, TILEC_I64};
    static const int64_t means[3] = {40, 6000, 150000}, counts[3] = {300, 8, 2};
    tilec_ctx *sim;
    tilec_open(&sim);
    bool have_sim = tilec_runtime_open(sim, TILEC_BACKEND_SIM, 0) == TILEC_OK;
    int failed = 0, k = 0;
    uint64_t seed = 321;
    *cases = 0;
    for (int op = 0; op < TILEC_OP_COUNT; op++)
        for (size_t t = 0; t < sizeof dts / sizeof *dts; t++)
            for (int layout = 0; layout < 3; layout++) {
                tilec_dtype dt = dts[t];
                if (!tilec_op_supports((tilec_op)op, dt, false)) continue;
                if (layout == 2 && dt != TILEC_F32 && dt != TILEC_BF16 && dt != TILEC_F64 && dt != TILEC_I64) continue;
                bool needs_one = op == TILEC_OP_MAX || op == TILEC_OP_MIN || op == TILEC_OP_ARGMAX || op == TILEC_OP_ARGMIN ||
                                 op == TILEC_OP_AMINMAX, i32 = k++ % 2, two = tilec_op_outputs((tilec_op)op) == 2;
                int64_t rows = 2, nsegs = counts[layout], off[301];
                off[0] = 0;
                for (int64_t i = 0; i < nsegs; i++) { /* 0 to 2 * mean, a fifth of them empty where allowed */
                    int64_t len = (int64_t)(rng_next(&seed) % (uint64_t)(2 * means[layout] + 1));
                    if (!needs_one && rng_next(&seed) % 5 == 0) len = 0;
                    if (needs_one && len == 0) len = 1;
                    off[i + 1] = off[i] + len;
                }
                int64_t extent = off[nsegs] + 3; /* a few elements past the last segment: read by none */
                size_t es = tilec_dtype_size(dt), es2 = two ? tilec_dtype_size(tilec_op_second_dtype((tilec_op)op, dt)) : 0;
                size_t ib = (size_t)(rows * extent) * es, ob = (size_t)(rows * nsegs) * es, ob2 = (size_t)(rows * nsegs) * es2;
                unsigned char *in = malloc(ib), *res[2] = {calloc(1, ob + ob2 + 1), calloc(1, ob + ob2 + 1)};
                int32_t off32[301];
                for (int64_t i = 0; i <= nsegs; i++) off32[i] = (int32_t)off[i];
                (op == TILEC_OP_PROD ? fill_factors : fill_buffer)(dt, in, rows * extent, 97, true, &seed);
                tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = dt, .rank = 2, .shape = {rows, extent}, .naxes = 1,
                                       .axes = {1}};
                char why[512] = "";
                bool ok = in && res[0] && res[1];
                for (int b = 0; b < 2 && ok; b++) { /* b = 0: the GPU; 1: the simulator, the two shorter layouts */
                    tilec_ctx *c = b ? sim : ctx;
                    if (b && (!have_sim || layout == 2)) break;
                    void *din = NULL, *dout = NULL, *dout2 = NULL, *doff = NULL;
                    size_t offb = (size_t)(nsegs + 1) * (i32 ? 4 : 8);
                    ok = tilec_mem_alloc(c, ib, &din) == TILEC_OK && tilec_mem_alloc(c, ob, &dout) == TILEC_OK &&
                         (!two || tilec_mem_alloc(c, ob2, &dout2) == TILEC_OK) && tilec_mem_alloc(c, offb, &doff) == TILEC_OK &&
                         tilec_mem_upload(c, din, in, ib) == TILEC_OK &&
                         tilec_mem_upload(c, doff, i32 ? (void *)off32 : (void *)off, offb) == TILEC_OK;
                    d.out2 = dout2;
                    ok = ok && tilec_reduce_segmented(c, &d, doff, i32, nsegs, din, dout) == TILEC_OK &&
                         tilec_synchronize(c) == TILEC_OK && tilec_mem_download(c, res[b], dout, ob) == TILEC_OK &&
                         (!two || tilec_mem_download(c, res[b] + ob, dout2, ob2) == TILEC_OK);
                    if (!ok) snprintf(why, sizeof why, "%s: %s", b ? "simulator" : "GPU", tilec_diag_text(c));
                    tilec_mem_free(c, din);
                    tilec_mem_free(c, dout);
                    tilec_mem_free(c, dout2);
                    tilec_mem_free(c, doff);
                    if (ok && b && memcmp(res[0], res[1], ob + ob2)) {
                        ok = false;
                        snprintf(why, sizeof why, "the simulator gives other bits than the GPU");
                    }
                }
                for (int64_t r = 0; r < rows && ok; r++) /* each non-empty segment: a dense row of its elements */
                    for (int64_t s = 0; s < nsegs && ok; s++) {
                        int64_t len = off[s + 1] - off[s], o = r * nsegs + s;
                        if (!len) continue;
                        tilec_reduce_desc e = {.op = (tilec_op)op, .dtype = dt, .rank = 1, .shape = {len}, .naxes = 1,
                                               .axes = {0}, .out2 = two ? res[0] + ob + (size_t)o * es2 : NULL};
                        tilec_check_result cr = {0};
                        if (tilec_reduce_check(ctx, &e, in + (size_t)(r * extent + off[s]) * es, NULL, res[0] + (size_t)o * es,
                                               &cr) != TILEC_OK || !cr.ok) {
                            ok = false;
                            snprintf(why, sizeof why, "row %lld segment %lld (%lld elements): got %.9g want %.9g %s", (long long)r,
                                     (long long)s, (long long)len, cr.got, cr.want, tilec_diag_text(ctx));
                        }
                    }
                (*cases)++;
                if (!ok) {
                    failed++;
                    printf("  FAIL segmented %s %s, mean %lld, %s offsets: %s\n", tilec_op_name((tilec_op)op), tilec_dtype_name(dt),
                           (long long)means[layout], i32 ? "int32" : "int64", why);
                }
                free(in);
                free(res[0]);
                free(res[1]);
            }
    tilec_close(sim);
    /* offsets that fall: an error on the next tilec_synchronize, and only there */
    {
        int64_t off[4] = {0, 50, 20, 100};
        float in[100] = {0}, out[3];
        void *din = NULL, *dout = NULL, *doff = NULL;
        tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {100}, .naxes = 1, .axes = {0}};
        bool ok = tilec_mem_alloc(ctx, sizeof in, &din) == TILEC_OK && tilec_mem_alloc(ctx, sizeof out, &dout) == TILEC_OK &&
                  tilec_mem_alloc(ctx, sizeof off, &doff) == TILEC_OK && tilec_mem_upload(ctx, din, in, sizeof in) == TILEC_OK &&
                  tilec_mem_upload(ctx, doff, off, sizeof off) == TILEC_OK &&
                  tilec_reduce_segmented(ctx, &d, doff, false, 3, din, dout) == TILEC_OK &&
                  tilec_synchronize(ctx) == TILEC_ERR_INVALID_ARG && strstr(tilec_diag_text(ctx), "segment") &&
                  tilec_synchronize(ctx) == TILEC_OK;
        (*cases)++;
        if (!ok) {
            failed++;
            printf("  FAIL segmented: offsets 0, 50, 20, 100 were not reported by the next tilec_synchronize alone: %s\n",
                   tilec_diag_text(ctx));
        }
        tilec_mem_free(ctx, din);
        tilec_mem_free(ctx, dout);
        tilec_mem_free(ctx, doff);
    }
    printf("jit_check: segmented reductions: %d of %d cases right (every op and dtype, three worker layouts, the reference "
           "of each segment as a row, the simulator's bits; bad offsets reported)\n", *cases - failed, *cases);
    return failed;
}

/* The time from the first tilec_reduce of a shape to its result, in a process that has
 * only opened the runtime (CUDA context creation is not counted). */
static int first_call(tilec_ctx *ctx) {
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {2048, 777}, .naxes = 1, .axes = {1}};
    void *din, *dout;
    if (tilec_mem_alloc(ctx, 2048 * 777 * 4, &din) || tilec_mem_alloc(ctx, 2048 * 4, &dout)) return 1;
    double t0 = now_ms();
    tilec_status st = tilec_reduce(ctx, &d, din, dout);
    if (st == TILEC_OK) st = tilec_synchronize(ctx);
    printf("%.2f\n", now_ms() - t0);
    return st == TILEC_OK ? 0 : 1;
}

enum { CALLS = 2000 };

/* Latencies of one shape (f32 max of rows of 1003, 4096 of them; scripts/gpu-python times
 * the same call from Python): its first call, then the host time of a cached call (the
 * mean of CALLS enqueues). */
static int call_cost(tilec_ctx *ctx, double *first, double *host) {
    tilec_reduce_desc lat = {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {4096, 1000 + 3}, .naxes = 1, .axes = {1}};
    void *din = NULL, *dout = NULL;
    tilec_status st = tilec_mem_alloc(ctx, 4096 * 1003 * 4, &din);
    if (st == TILEC_OK) st = tilec_mem_alloc(ctx, 4096 * 4, &dout);
    double t0 = now_ms();
    if (st == TILEC_OK) st = tilec_reduce(ctx, &lat, din, dout);
    if (st == TILEC_OK) st = tilec_synchronize(ctx);
    *first = now_ms() - t0;
    t0 = now_ms();
    for (int i = 0; i < CALLS && st == TILEC_OK; i++) st = tilec_reduce(ctx, &lat, din, dout);
    *host = (now_ms() - t0) / CALLS * 1e3;
    if (st == TILEC_OK) st = tilec_synchronize(ctx);
    if (st == TILEC_OK)
        printf("jit_check: first call of a new shape %.1f ms (NVRTC included); a cached call %.2f us of host time\n", *first, *host);
    /* the same on a reduction whose kernel is far shorter than a call's host time (a sum of
     * 4096 floats), in runs of 200 calls, the least of 7: the host's own cost, which 2000
     * calls of the 4096 x 1003 max (a 4 us kernel) may pass and then wait for the GPU */
    tilec_reduce_desc small = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {4096}, .naxes = 1, .axes = {0}};
    double best = 1e30;
    if (st == TILEC_OK) st = tilec_reduce(ctx, &small, din, dout);
    for (int rep = 0; rep < 7 && st == TILEC_OK; rep++) {
        if ((st = tilec_synchronize(ctx)) != TILEC_OK) break;
        double t1 = now_ms();
        for (int i = 0; i < 200 && st == TILEC_OK; i++) st = tilec_reduce(ctx, &small, din, dout);
        double t = (now_ms() - t1) / 200 * 1e3;
        if (t < best) best = t;
    }
    if (st == TILEC_OK) st = tilec_synchronize(ctx);
    if (st == TILEC_OK) printf("jit_check: a cached call of a sum of 4096 floats %.2f us of host time (runs of 200, the least of 7)\n", best);
    else
        printf("jit_check: the latency calls failed: %s\n", tilec_diag_text(ctx));
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    return st != TILEC_OK;
}

/* Where a cached call's host time goes, in one process: the driver's own cuLaunchKernel of
 * an empty kernel of three pointers (the floor every launch pays), with the primary
 * context pushed around it as tilec does where it is not current; cuCtxGetCurrent;
 * tilec_reduce_prepare (the planning: the view, the key, the cache, the scratch); and
 * tilec_reduce, each on a sum of 4096 floats (a kernel shorter than a call) and the max of
 * 4096 rows of 1003, µs a call, the least of 7 runs of 200. */
static const char empty_ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n"
                                ".visible .entry tilec_empty(.param .u64 a, .param .u64 b, .param .u64 c)\n{\n\tret;\n}\n";

static double least_of_7(tilec_ctx *ctx, tilec_status (*fn)(void *), void *arg, tilec_status *st) {
    double best = 1e30;
    for (int rep = 0; rep < 8 && *st == TILEC_OK; rep++) {
        if ((*st = tilec_synchronize(ctx)) != TILEC_OK) break; /* the context's work, the empty kernels' too */
        double t0 = now_ms();
        for (int i = 0; i < 200 && *st == TILEC_OK; i++) *st = fn(arg);
        double t = (now_ms() - t0) / 200 * 1e3;
        if (rep && t < best) best = t; /* the first run warms up */
    }
    return best;
}

typedef struct lc_arg {
    tilec_ctx *ctx;
    tilec_reduce_desc *d;
    void *in, *out, *fn, *primary;
    bool push;
} lc_arg;

static tilec_status lc_reduce(void *a) {
    lc_arg *l = a;
    return tilec_reduce(l->ctx, l->d, l->in, l->out);
}
static tilec_status lc_prepare(void *a) {
    lc_arg *l = a;
    return tilec_reduce_prepare(l->ctx, l->d, l->in);
}
static tilec_status lc_raw(void *a) {
    lc_arg *l = a;
    void *popped;
    unsigned long long v[3] = {(unsigned long long)(uintptr_t)l->in, (unsigned long long)(uintptr_t)l->out, 0};
    void *params[3] = {&v[0], &v[1], &v[2]};
    if (l->push && cu.push(l->primary)) return TILEC_ERR_UNAVAILABLE;
    CUresult r = cu.launch(l->fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
    if (l->push) cu.pop(&popped);
    return r ? TILEC_ERR_UNAVAILABLE : TILEC_OK;
}
static tilec_status lc_current(void *a) {
    (void)a;
    void *c;
    return cu.get_current(&c) ? TILEC_ERR_UNAVAILABLE : TILEC_OK;
}

static int launch_cost(tilec_ctx *ctx) {
    if (!cu_load()) {
        printf("jit_check: the driver API (libcuda.so.1) could not be loaded\n");
        return 1;
    }
    void *in = NULL, *out = NULL, *module = NULL, *primary = NULL, *popped;
    int dev0;
    tilec_status st = tilec_mem_alloc(ctx, 4096 * 1003 * 4, &in);
    if (st == TILEC_OK) st = tilec_mem_alloc(ctx, 4096 * 4, &out);
    lc_arg a = {.ctx = ctx, .in = in, .out = out};
    if (st == TILEC_OK && (cu.device_get(&dev0, 0) || cu.retain(&primary, dev0) || cu.push(primary) ||
                           cu.module_load(&module, empty_ptx) || cu.module_function(&a.fn, module, "tilec_empty")))
        st = TILEC_ERR_UNAVAILABLE;
    if (primary) cu.pop(&popped);
    a.primary = primary;
    double raw_pushed = st == TILEC_OK ? (a.push = true, least_of_7(ctx, lc_raw, &a, &st)) : 0;
    if (st == TILEC_OK) cu.push(primary); /* current from here on, as in torch's threads */
    double raw = st == TILEC_OK ? (a.push = false, least_of_7(ctx, lc_raw, &a, &st)) : 0;
    double cur = st == TILEC_OK ? least_of_7(ctx, lc_current, &a, &st) : 0;
    tilec_reduce_desc shapes[2] = {{.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {4096}, .naxes = 1, .axes = {0}},
                                   {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {4096, 1003}, .naxes = 1, .axes = {1}}};
    const char *names[2] = {"f32 sum of 4096", "f32 max of 4096 rows of 1003"};
    if (st == TILEC_OK)
        printf("jit_check: cuLaunchKernel of an empty kernel %.2f us a call (%.2f us with the context pushed and popped "
               "around it); cuCtxGetCurrent %.3f us\n", raw, raw_pushed, cur);
    for (int i = 0; i < 2 && st == TILEC_OK; i++) {
        a.d = &shapes[i];
        if ((st = tilec_reduce(ctx, a.d, in, out)) != TILEC_OK) break; /* planned and loaded */
        double prep = least_of_7(ctx, lc_prepare, &a, &st);
        double full = st == TILEC_OK ? least_of_7(ctx, lc_reduce, &a, &st) : 0;
        if (st == TILEC_OK)
            printf("jit_check: %s: tilec_reduce %.2f us a call, of which tilec_reduce_prepare's planning %.2f us; "
                   "beyond the empty kernel's launch %.2f us\n", names[i], full, prep, full - raw);
    }
    if (st != TILEC_OK) printf("jit_check: the launch-cost calls failed: %s\n", tilec_diag_text(ctx));
    if (primary) {
        cu.pop(&popped);
        cu.release(dev0);
    }
    tilec_mem_free(ctx, in);
    tilec_mem_free(ctx, out);
    return st != TILEC_OK;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress survives a time limit */
    const char *out = NULL;
    int part = 0, parts = 1;
    bool with_matrix = true, only_matrix = false;
    for (int i = 1; i < argc; i++) {
        char tail;
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--no-matrix")) with_matrix = false;
        else if (!strcmp(argv[i], "--part") && !only_matrix && i + 1 < argc &&
                 sscanf(argv[i + 1], "%d/%d%c", &part, &parts, &tail) == 2 && parts >= 1 && parts <= 64 && part >= 0 &&
                 part < parts)
            only_matrix = true, i++;
        else if (argc == 2 && (!strcmp(argv[1], "--streams") || !strcmp(argv[1], "--first-call") ||
                               !strcmp(argv[1], "--call-cost") || !strcmp(argv[1], "--graph-unprepared") ||
                               !strcmp(argv[1], "--launch-cost") || !strcmp(argv[1], "--segmented")))
            break;
        else {
            fprintf(stderr, "usage: jit_check [--out FILE.md] [--no-matrix] | --part K/N | --streams | --graph-unprepared | "
                            "--first-call | --call-cost | --launch-cost | --segmented\n");
            return 2;
        }
    }
    if (only_matrix && (out || !with_matrix)) {
        fprintf(stderr, "jit_check: --part runs only the matrix: no --out, no --no-matrix\n");
        return 2;
    }
    tilec_ctx *ctx;
    tilec_open(&ctx);
    if (tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0) != TILEC_OK) {
        fprintf(stderr, "jit_check: no usable CUDA GPU: %s", tilec_diag_text(ctx));
        return 3;
    }
    if (argc == 2 && !strcmp(argv[1], "--segmented")) {
        int cases = 0, rc = segmented(ctx, &cases) ? 1 : 0;
        tilec_close(ctx);
        return rc;
    }
    if (argc == 2 && !strcmp(argv[1], "--first-call")) {
        int rc = first_call(ctx);
        tilec_close(ctx);
        return rc;
    }
    if (argc == 2 && !strcmp(argv[1], "--call-cost")) {
        double first, host;
        int rc = call_cost(ctx, &first, &host);
        tilec_close(ctx);
        return rc;
    }
    if (argc == 2 && !strcmp(argv[1], "--launch-cost")) {
        int rc = launch_cost(ctx);
        tilec_close(ctx);
        return rc;
    }
    if (argc == 2 && !strcmp(argv[1], "--graph-unprepared")) {
        int rc = !cu_load() ? (printf("  FAIL: the driver API (libcuda.so.1) could not be loaded\n"), 1)
                            : print_graph_unprepared(NULL) ? 0 : 1;
        tilec_close(ctx);
        return rc;
    }
    if (argc == 2 && !strcmp(argv[1], "--streams")) {
        int rc = streams_and_threads(ctx, NULL) ? 1 : 0;
        tilec_close(ctx);
        return rc;
    }
    static tilec_reduce_desc descs[4096];
    int n = matrix(descs, 4096), passed = 0, failed = 0;
    if (n == 4096) { fprintf(stderr, "jit_check: the matrix fills its table; make descs larger\n"); return 1; }
    char why[2048];
    /* the simulator on the same inputs: the same bits (docs/runtime.md, "Fold order") */
    tilec_ctx *sim;
    tilec_open(&sim);
    bool have_sim = tilec_runtime_open(sim, TILEC_BACKEND_SIM, 0) == TILEC_OK;
    int compared = 0, same_bits = 0;
    for (int i = 0; i < n && with_matrix; i++) {
        if (i % parts != part) continue;
        int shift = descs[i].accumulate ? 1 : 0;
        void *gpu = NULL, *cpu = NULL;
        if (run_shifted(ctx, &descs[i], (uint64_t)i, shift, &gpu, why, sizeof why)) passed++;
        else { failed++; printf("  FAIL %d: %s\n", i, why); }
        if (have_sim && desc_elems(&descs[i], false) <= SIM_MAX_ELEMS) {
            compared++;
            size_t ob = result_bytes(&descs[i]);
            bool ran = run_shifted(sim, &descs[i], (uint64_t)i, shift, &cpu, why, sizeof why);
            if (ran && !memcmp(gpu, cpu, ob)) same_bits++;
            else { failed++; printf("  FAIL %d: %s\n", i, ran ? "the simulator gives other bits than the GPU" : why); }
        }
        free(gpu);
        free(cpu);
    }
    tilec_close(sim);
    if (with_matrix)
        printf("jit_check: matrix %d of %d reductions match the reference; %d of %d give the simulator's bits (cases of up "
               "to %d elements)\n", passed, (n - part + parts - 1) / parts, same_bits, compared, SIM_MAX_ELEMS);
    if (only_matrix) {
        tilec_close(ctx);
        return failed ? 1 : 0;
    }
    /* determinism: a 2^26-element sum twice, bit for bit */
    tilec_reduce_desc big = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {1 << 26}, .naxes = 1, .axes = {0}};
    void *a = NULL, *b = NULL;
    bool same = run_one(ctx, &big, 9, &a, why, sizeof why) && run_one(ctx, &big, 9, &b, why, sizeof why) && !memcmp(a, b, 4);
    free(a);
    free(b);
    printf("jit_check: a 2^26-element sum gives the same bits twice: %s\n", same ? "yes" : "NO");
    failed += !same;
    /* beyond 2^31 elements: a u32 sum of ones and an f32 max planted near the end; the
     * answers are known without a reference (which would need ~50 GB of host memory) */
    int64_t huge = (1ll << 31) + 7;
    bool big_ok = false;
    {
        void *din = NULL, *dout = NULL;
        uint32_t *ones = malloc((size_t)huge * 4), sum = 0;
        float top = 0;
        if (ones && tilec_mem_alloc(ctx, (size_t)huge * 4, &din) == TILEC_OK && tilec_mem_alloc(ctx, 16, &dout) == TILEC_OK) {
            for (int64_t i = 0; i < huge; i++) ones[i] = 1;
            tilec_reduce_desc s = {.op = TILEC_OP_SUM, .dtype = TILEC_U32, .rank = 1, .shape = {huge}, .naxes = 1, .axes = {0}};
            bool sum_ok = tilec_mem_upload(ctx, din, ones, (size_t)huge * 4) == TILEC_OK && tilec_reduce(ctx, &s, din, dout) == TILEC_OK &&
                     tilec_mem_download(ctx, &sum, dout, 4) == TILEC_OK && sum == (uint32_t)huge;
            float *f = (float *)ones;
            for (int64_t i = 0; i < huge; i++) f[i] = (float)(i % 1000) / 1000.0f;
            f[huge - 3] = 7.5f;
            tilec_reduce_desc m = {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 1, .shape = {huge}, .naxes = 1, .axes = {0}};
            bool max_ok = tilec_mem_upload(ctx, din, f, (size_t)huge * 4) == TILEC_OK && tilec_reduce(ctx, &m, din, dout) == TILEC_OK &&
                     tilec_mem_download(ctx, &top, dout, 4) == TILEC_OK && top == 7.5f;
            big_ok = sum_ok && max_ok;
            printf("jit_check: 2^31+7 elements: u32 sum %u (want %lld), f32 max %g (want 7.5): %s\n", sum, (long long)huge,
                   (double)top, big_ok ? "ok" : "WRONG");
        } else {
            printf("jit_check: 2^31+7 elements: could not allocate: %s\n", tilec_diag_text(ctx));
        }
        tilec_mem_free(ctx, din);
        tilec_mem_free(ctx, dout);
        free(ones);
        failed += !big_ok;
    }
    int nan_cases = 0, nan_failed = all_nan_ignore(ctx, &nan_cases), g2_failed = rows_of_2g(ctx);
    int pair_cases = 0, pair_failed = special_pairs(ctx, &pair_cases);
    int seg_cases = 0, seg_failed = segmented(ctx, &seg_cases);
    failed += nan_failed + g2_failed + pair_failed + seg_failed;
    /* 8 threads × 200 mixed calls, each thread its own context */
    pthread_t th[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){descs, 60, i, 0, ""};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    int tfail = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        tfail += w[i].failed;
        if (w[i].failed) printf("  thread %d: %d failed: %s\n", i, w[i].failed, w[i].why);
    }
    printf("jit_check: 8 threads x 200 mixed calls: %d failed\n", tfail);
    failed += tfail;
    /* one shape on two streams at once; the context from threads that did not open it */
    char *stream_rows = NULL;
    size_t stream_rows_n = 0;
    FILE *rows = open_memstream(&stream_rows, &stream_rows_n);
    failed += streams_and_threads(ctx, rows);
    if (rows) fclose(rows);
    double first, host;
    failed += call_cost(ctx, &first, &host);
    tilec_close(ctx);
    if (out) {
        FILE *f = fopen(out, "w");
        if (f) {
            fprintf(f, "| check | result |\n|---|---|\n");
            fprintf(f, "| 2^26-element f32 sum, twice | %s |\n", same ? "bit-identical" : "DIFFERENT");
            fprintf(f, "| 2^31+7 elements (64-bit indices): u32 sum of ones, f32 max planted 3 from the end | %s |\n",
                    big_ok ? "exact" : "WRONG");
            fprintf(f, "| all-NaN slices under nan=ignore (10 shapes, one for each grid variant and the planner's extent-1 case × f32/f16/bf16/f64 × max/min): NaN, the one number kept | %d of %d |\n",
                    nan_cases - nan_failed, nan_cases);
            fprintf(f, "| f32 max and min of every ordered pair of 12 special values (±0, ±1, NaNs, ±inf, ±subnormal, the largest float) × both NaN policies × rows and columns, against the format's rule and the simulator's bits | %d of %d |\n",
                    pair_cases - pair_failed, pair_cases);
            fprintf(f, "| rows of 2^31-1 f16 elements ([2^31-1] and [2, 2^31-1]): sums exact in any order, max and min planted at the end | %s |\n",
                    g2_failed ? "WRONG" : "exact");
            fprintf(f, "| segmented reductions (tilec_reduce_segmented): every op × dtype it takes × the three worker layouts (mean lengths 40, 6000; 150000 for f32, bf16, f64, i64), int64 and int32 offsets, random lengths with empty segments, special values; each segment against the reference as a dense row, the two shorter layouts also against the simulator's bits; offsets that fall reported by the next tilec_synchronize | %d of %d |\n",
                    seg_cases - seg_failed, seg_cases);
            fprintf(f, "| 8 threads × 200 mixed calls, one context each | %d failures |\n", tfail);
            if (stream_rows) fputs(stream_rows, f);
            fprintf(f, "| first call of a new shape (plan, NVRTC, load) | %.1f ms |\n", first);
            fprintf(f, "| cached call, host time per tilec_reduce (enqueue only, mean of %d) | %.2f µs |\n", CALLS, host);
            fclose(f);
        }
    }
    free(stream_rows);
    return failed ? 1 : 0;
}
