/*
 * test_jit.c — tilec_reduce through the public API on the simulator backend: every
 * planner strategy, ranks 1 to 5 with every axis set, extents 0, 1, primes, powers of two
 * and 2^20 + 3, every dtype and op, NaN and ±inf, accumulate, bitwise determinism, the plan cache,
 * every kind of bad input with its status and message, and the scratch kept per stream
 * (through a backend that is the simulator and logs what the runtime asks of it).
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../src/ir/ir.h" /* the context's runtime, for the logging backend */
#include "../src/runtime/runtime.h"
#include "sim_support.h"

static tilec_ctx *sim_ctx(void) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    assert_int_equal(tilec_runtime_backend(ctx), TILEC_BACKEND_SIM);
    return ctx;
}

/* tilec_reduce(ctx, d, in, out); for an op with a second output (argmax, argmin, aminmax)
 * through device memory of its own, downloaded into *second (malloc'd) when second is not
 * NULL. */
static tilec_status jit_reduce(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, void *out, void **second) {
    tilec_reduce_desc two = *d;
    tilec_dtype t2 = d->index_i32 ? TILEC_I32 : tilec_op_second_dtype(d->op, d->widen ? tilec_dtype_wide(d->dtype) : d->dtype);
    size_t bytes = (size_t)desc_elems(d, true) * tilec_dtype_size(t2);
    void *dev = NULL;
    if (second) *second = NULL;
    if (ir_op(d->op)->second) {
        assert_int_equal(tilec_mem_alloc(ctx, bytes ? bytes : 1, &dev), TILEC_OK);
        two.out2 = dev;
    }
    tilec_status st = tilec_reduce(ctx, &two, in, out);
    if (dev && st == TILEC_OK) {
        assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
        if (second) {
            *second = malloc(bytes ? bytes : 1);
            assert_int_equal(tilec_mem_download(ctx, *second, dev, bytes), TILEC_OK);
        }
    }
    if (dev) tilec_mem_free(ctx, dev);
    return st;
}

/* tilec_reduce_check with the second output, when the op has one. */
static tilec_status jit_check(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, const void *before,
                              const void *after, void *second, tilec_check_result *r) {
    tilec_reduce_desc two = *d;
    two.out2 = second;
    return tilec_reduce_check(ctx, &two, in, before, after, r);
}

/* Runs d on random data with special values through device memory, the input `shift`
 * elements past an aligned address; checks the result against the reference; returns
 * the output (malloc'd) for bitwise comparisons. */
static void *reduce_shifted(tilec_ctx *ctx, const tilec_reduce_desc *d, uint64_t seed, int shift) {
    size_t es = tilec_dtype_size(d->dtype);
    int64_t in_n = desc_elems(d, false), out_n = desc_elems(d, true);
    size_t in_bytes = (size_t)in_n * es, out_bytes = (size_t)out_n * es;
    void *in = malloc(in_bytes + 16), *before = malloc(out_bytes + 16), *after = malloc(out_bytes + 16);
    void (*fill)(tilec_dtype, void *, int64_t, int64_t, bool, uint64_t *) = d->op == TILEC_OP_PROD ? fill_factors : fill_buffer;
    fill(d->dtype, in, in_n, d->shape[d->rank - 1] ? d->shape[d->rank - 1] : 1, true, &seed);
    fill(d->dtype, before, out_n, 1, false, &seed);
    void *din, *dout;
    assert_int_equal(tilec_mem_alloc(ctx, in_bytes + (size_t)shift * es, &din), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, out_bytes, &dout), TILEC_OK);
    void *src = (char *)din + (size_t)shift * es;
    assert_int_equal(tilec_mem_upload(ctx, src, in, in_bytes), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, dout, before, out_bytes), TILEC_OK);
    void *second;
    tilec_status st = jit_reduce(ctx, d, src, dout, &second);
    if (st != TILEC_OK) fail_msg("tilec_reduce: %s\n%s", tilec_status_name(st), tilec_diag_text(ctx));
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, after, dout, out_bytes), TILEC_OK);
    tilec_check_result r;
    assert_int_equal(jit_check(ctx, d, in, before, after, second, &r), TILEC_OK);
    free(second);
    if (!r.ok) {
        char shape[128] = "";
        for (int i = 0; i < d->rank; i++) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i ? "x" : "", (long long)d->shape[i]);
        fail_msg("%s %s shape %s: %lld mismatches, first [%lld] got %.9g want %.9g", tilec_op_name(d->op),
                 tilec_dtype_name(d->dtype), shape, (long long)r.mismatches, (long long)r.first_bad, r.got, r.want);
    }
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    free(in);
    free(before);
    return after;
}

static void *reduce_and_check(tilec_ctx *ctx, const tilec_reduce_desc *d, uint64_t seed) {
    return reduce_shifted(ctx, d, seed, 0);
}

/* The ops on doubles, as the format defines them for the values these tests give (max
 * and min of numbers; sums and products that are exact, or compared within a bound): what
 * an element becomes, how two fold, and what the fold of n elements gives. */
static double plain_lift(tilec_op op, double x) {
    switch (op) {
    case TILEC_OP_SUMSQ:
    case TILEC_OP_NORM2: return x * x;
    case TILEC_OP_LOGSUMEXP: return exp(x);
    case TILEC_OP_SUM:
    case TILEC_OP_MAX:
    case TILEC_OP_MIN:
    case TILEC_OP_PROD:
    case TILEC_OP_MEAN:
    case TILEC_OP_ARGMAX:
    case TILEC_OP_ARGMIN:
    case TILEC_OP_AMINMAX:
    case TILEC_OP_VAR:
    case TILEC_OP_STD: return x;
    case TILEC_OP_COUNT: break;
    }
    fail_msg("plain_lift: op %d", (int)op);
    return 0;
}

static double plain_op(tilec_op op, double acc, double x) {
    switch (op) {
    case TILEC_OP_SUM:
    case TILEC_OP_SUMSQ:
    case TILEC_OP_NORM2:
    case TILEC_OP_MEAN:
    case TILEC_OP_LOGSUMEXP:
    case TILEC_OP_VAR:
    case TILEC_OP_STD: return acc + x;
    case TILEC_OP_MAX:
    case TILEC_OP_ARGMAX: return x > acc ? x : acc; /* its value; test_argmax checks the index */
    case TILEC_OP_MIN:
    case TILEC_OP_ARGMIN:
    case TILEC_OP_AMINMAX: return x < acc ? x : acc; /* aminmax: its first output, the minimum */
    case TILEC_OP_PROD: return acc * x;
    case TILEC_OP_COUNT: break;
    }
    fail_msg("plain_op: op %d", (int)op);
    return 0;
}

/* acc: the fold of the n lifted elements; sq: the sum of the squares of the elements
 * (var and std, with Bessel's correction, from the exact sums of small integers). */
static double plain_finish(tilec_op op, double acc, double sq, int64_t n) {
    switch (op) {
    case TILEC_OP_VAR: return fmax(sq - acc * acc / (double)n, 0) / (double)(n - 1); /* (a rounding may cancel below 0) */
    case TILEC_OP_STD: return sqrt(fmax(sq - acc * acc / (double)n, 0) / (double)(n - 1));
    case TILEC_OP_MEAN: return acc / (double)n;
    case TILEC_OP_NORM2: return sqrt(acc);
    case TILEC_OP_LOGSUMEXP: return log(acc);
    case TILEC_OP_SUM:
    case TILEC_OP_SUMSQ:
    case TILEC_OP_MAX:
    case TILEC_OP_MIN:
    case TILEC_OP_PROD:
    case TILEC_OP_ARGMAX:
    case TILEC_OP_ARGMIN:
    case TILEC_OP_AMINMAX: return acc;
    case TILEC_OP_COUNT: break;
    }
    fail_msg("plain_finish: op %d", (int)op);
    return 0;
}

/* The same fold on an i32's bits (and its square's), wrapped modulo 2^32; max and min are
 * compared as doubles, so theirs is not used. */
static uint32_t plain_wrap(tilec_op op, uint32_t acc, uint32_t x) {
    switch (op) {
    case TILEC_OP_SUM:
    case TILEC_OP_SUMSQ:
    case TILEC_OP_NORM2:
    case TILEC_OP_MEAN:
    case TILEC_OP_VAR:
    case TILEC_OP_STD: return acc + x;
    case TILEC_OP_PROD: return acc * x;
    case TILEC_OP_MAX:
    case TILEC_OP_MIN:
    case TILEC_OP_ARGMAX:
    case TILEC_OP_ARGMIN:
    case TILEC_OP_AMINMAX:
    case TILEC_OP_LOGSUMEXP: return 0;
    case TILEC_OP_COUNT: break;
    }
    fail_msg("plain_wrap: op %d", (int)op);
    return 0;
}

/* d over a dense row-major x by plain loops, knowing nothing of tilec's view planning:
 * element i's coordinates, its output the row-major index over the kept dims. Sums in
 * double (exact for the small integers the caller gives), then each output finished. */
static void plain_reduce(const tilec_reduce_desc *d, const float *x, double *want, int64_t nout) {
    bool red[TILEC_MAX_RANK] = {false};
    for (int a = 0; a < d->naxes; a++) red[(d->axes[a] + d->rank) % d->rank] = true;
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++) n *= d->shape[i];
    int64_t *seen = calloc((size_t)nout, sizeof *seen);
    double *sq = calloc((size_t)nout, sizeof *sq);
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i, o = 0, scale = 1;
        for (int k = d->rank - 1; k >= 0; k--) {
            int64_t c = rest % d->shape[k];
            rest /= d->shape[k];
            if (!red[k]) o += c * scale, scale *= d->shape[k];
        }
        double v = plain_lift(d->op, x[i]), *w = &want[o];
        *w = seen[o]++ ? plain_op(d->op, *w, v) : v;
        sq[o] += (double)x[i] * x[i];
    }
    for (int64_t o = 0; o < nout; o++) want[o] = plain_finish(d->op, want[o], sq[o], seen[o]);
    free(seen);
    free(sq);
}

/* Ranks 1 to 5, every non-empty axis set, on two shapes each: extents 1 and primes, and
 * extents 1 and powers of two (the last dim long enough for several lanes); the results
 * against plain loops over the index space (small integers: every order sums exactly). */
static void test_every_axis_set(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const int64_t ext[2][5] = {{3, 1, 5, 7, 13}, {4, 1, 8, 2, 32}};
    for (int rank = 1; rank <= 5; rank++)
        for (int e = 0; e < 2; e++)
            for (unsigned mask = 1; mask < (1u << rank); mask++)
                for (int op = 0; op < TILEC_OP_COUNT; op++) {
                    tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = TILEC_F32, .rank = rank};
                    int64_t n = 1, nout = 1;
                    for (int i = 0; i < rank; i++) {
                        d.shape[i] = ext[e][i] * (i == rank - 1 ? 13 + 3 * e : 1);
                        n *= d.shape[i];
                        if (!(mask >> i & 1)) nout *= d.shape[i];
                    }
                    for (int i = 0; i < rank; i++)
                        if (mask >> i & 1) d.axes[d.naxes++] = (mask & 8) ? i - rank : i;
                    float *x = malloc((size_t)n * sizeof *x), *got = malloc((size_t)nout * sizeof *got);
                    double *want = malloc((size_t)nout * sizeof *want);
                    uint64_t h = mask * 2654435761u + (uint64_t)e * 97 + (uint64_t)op;
                    for (int64_t i = 0; i < n; i++) {
                        h = h * 6364136223846793005ull + 1442695040888963407ull;
                        x[i] = (float)((int)(h >> 59) - 16); /* -16 .. 15 */
                        /* a product's: ±1, a -2 or 0.5 in 64 each; exact while partial products stay in
                         * range, which the balanced doublings and halvings keep them in these orders */
                        if (op == TILEC_OP_PROD) x[i] = (h >> 58 & 63) == 0 ? -2.0f : (h >> 58 & 63) == 1 ? 0.5f : (h >> 57 & 1) ? 1.0f : -1.0f;
                    }
                    plain_reduce(&d, x, want, nout);
                    void *din, *dout;
                    assert_int_equal(tilec_mem_alloc(ctx, (size_t)n * sizeof *x, &din), TILEC_OK);
                    assert_int_equal(tilec_mem_alloc(ctx, (size_t)nout * sizeof *got, &dout), TILEC_OK);
                    assert_int_equal(tilec_mem_upload(ctx, din, x, (size_t)n * sizeof *x), TILEC_OK);
                    if (jit_reduce(ctx, &d, din, dout, NULL) != TILEC_OK) fail_msg("tilec_reduce: %s", tilec_diag_text(ctx));
                    assert_int_equal(tilec_mem_download(ctx, got, dout, (size_t)nout * sizeof *got), TILEC_OK);
                    /* a logsumexp's fold of n exponentials in f32: within 4(n - 1) roundings of its log */
                    double lse = d.op == TILEC_OP_LOGSUMEXP ? 4.0 * (double)(n / nout) * 0x1p-24 : 0;
                    /* a variance or deviation: from f64 sums, within a rounding of f32 (a slice of one: NaN) */
                    bool var = d.op == TILEC_OP_VAR || d.op == TILEC_OP_STD;
                    for (int64_t o = 0; o < nout; o++) /* a mean or norm rounded once to f32 (from a double
                                                          quotient or root: the same as directly) */
                        if (var ? !(isnan(want[o]) ? isnan(got[o]) : fabs(got[o] - want[o]) <= 0x1p-23 * fabs(want[o]))
                            : lse ? fabs(got[o] - want[o]) > lse + 0x1p-24 * fabs(want[o]) : got[o] != (float)want[o])
                            fail_msg("rank %d shape %d axes mask %u op %s: output %lld is %g, plain loops give %g", rank, e, mask,
                                     tilec_op_name(d.op), (long long)o, (double)got[o], want[o]);
                    tilec_mem_free(ctx, din);
                    tilec_mem_free(ctx, dout);
                    free(x);
                    free(got);
                    free(want);
                }
    tilec_close(ctx);
}

/* A shape for each grid executor and each of its paths (the simulator plans for a GPU of 4
 * multiprocessors). Pieces are 1024 elements (512 of 8-byte types). */
static const struct { int rank; int64_t shape[3]; int naxes; int axes[2]; const char *variant; } shapes[] = {
    {1, {(1 << 20) + 3}, 1, {0}, "grid_rows"},   /* one output: 4096 blocks over CTAs, partials, a ragged piece */
    {2, {3, 70001}, 1, {-1}, "grid_rows"},       /* few long rows: blocks over CTAs, element loads */
    {2, {3, 70000}, 1, {-1}, "grid_rows"},       /* few long rows: 16-byte loads, ragged last piece */
    {2, {37, 8200}, 1, {-1}, "grid_rows"},       /* 9 blocks a row: one CTA per row, rounds */
    {2, {70, 4096}, 1, {1}, "grid_rows"},        /* 4 blocks a row: two rows per CTA */
    {2, {1000, 37}, 1, {1}, "grid_rows"},        /* many short rows, element loads, rows in flight */
    {2, {1001, 32}, 1, {1}, "grid_rows"},        /* rows of one 16-byte load per lane: rows in flight */
    {2, {70, 1024}, 1, {1}, "grid_rows"},        /* rows of one piece, several loads per lane */
    {3, {3, 50, 3}, 2, {0, 2}, "grid_rows"},     /* short runs: a block's pieces one after another */
    {3, {6, 5, 40}, 2, {0, 2}, "grid_rows"},     /* around a kept middle axis */
    {3, {40, 7, 300}, 2, {0, 2}, "grid_rows"},   /* around a kept middle axis, blocks of runs */
    {2, {4099, 7}, 1, {0}, "grid_cols"},         /* columns, one at a time, partials over CTAs */
    {2, {4099, 8}, 1, {0}, "grid_cols"},         /* columns, 16 bytes of them per lane */
    {2, {37, 9000}, 1, {0}, "grid_cols"},        /* many columns, 16 bytes of them per lane */
    {2, {37, 9001}, 1, {0}, "grid_cols"},        /* many columns, element loads */
    {3, {5, 300, 6}, 1, {1}, "grid_cols"},       /* columns under a kept outer axis */
    {3, {70, 3, 9}, 2, {0, 1}, "grid_cols"},     /* two reduced axes over columns */
};

/* Every dtype and op, accumulate, NaN policies, from aligned and unaligned addresses
 * (16-byte loads or not), on a shape for each grid variant and each of its paths. */
static void test_dtypes_and_strategies(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    for (int dt = 0; dt < TILEC_DTYPE_COUNT; dt++)
        for (int op = 0; op < TILEC_OP_COUNT; op++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int variant = 0; variant < 2; variant++) {
                    bool flt = dt == TILEC_F16 || dt == TILEC_BF16 || dt == TILEC_F32 || dt == TILEC_F64;
                    if (!tilec_op_supports((tilec_op)op, (tilec_dtype)dt, false)) continue;
                    tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = (tilec_dtype)dt, .rank = shapes[s].rank,
                                           .naxes = shapes[s].naxes,
                                           .accumulate = variant == 1 && tilec_op_supports((tilec_op)op, (tilec_dtype)dt, true),
                                           .nan = flt && tilec_op_compares((tilec_op)op) && variant == 1 ? TILEC_NAN_IGNORE
                                                                                                                : TILEC_NAN_PROPAGATE};
                    memcpy(d.shape, shapes[s].shape, sizeof shapes[s].shape);
                    memcpy(d.axes, shapes[s].axes, sizeof shapes[s].axes);
                    if (s == 0 && dt > TILEC_F32) continue; /* one big tensor per op is enough */
                    if (dt == TILEC_F32 && variant == 0) { /* the shape reaches the variant it is here for */
                        char *text, want[64];
                        assert_int_equal(tilec_reduce_explain(ctx, &d, &text), TILEC_OK);
                        snprintf(want, sizeof want, "variant %s,", shapes[s].variant);
                        if (!strstr(text, want)) fail_msg("shape %zu: %s not in\n%s", s, want, text);
                        tilec_free(text);
                    }
                    free(reduce_shifted(ctx, &d, (uint64_t)(dt * 100 + op * 10 + (int)s), variant));
                }
    tilec_close(ctx);
}

/* nan=ignore over all-NaN slices gives NaN in every grid variant (and over an extent-1
 * axis, which the planner drops); element 0, the only number, reaches output 0 alone.
 * The expected values are written here, not taken from the reference. */
static void test_nan_ignore_all_nan(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const tilec_dtype dts[] = {TILEC_F32, TILEC_F16, TILEC_BF16, TILEC_F64};
    static const struct { int rank; int64_t shape[3]; int naxes; int axes[2]; } dropped[] = {
        {2, {5, 1}, 1, {1}}, {3, {1, 3, 1}, 2, {0, 2}}, {1, {1}, 1, {0}}};
    enum { N = sizeof shapes / sizeof shapes[0], M = sizeof dropped / sizeof dropped[0] };
    for (size_t s = 0; s < N + M; s++)
        for (size_t dt = 0; dt < sizeof dts / sizeof dts[0]; dt++)
            for (int op = TILEC_OP_MAX; op <= TILEC_OP_MIN; op++)
                for (int accum = 0; accum < 2; accum++) {
                    if (s == 0 && dt > 0) continue; /* one big tensor is enough */
                    tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = dts[dt], .nan = TILEC_NAN_IGNORE, .accumulate = accum};
                    d.rank = s < N ? shapes[s].rank : dropped[s - N].rank;
                    d.naxes = s < N ? shapes[s].naxes : dropped[s - N].naxes;
                    memcpy(d.shape, s < N ? shapes[s].shape : dropped[s - N].shape, sizeof d.shape[0] * 3);
                    memcpy(d.axes, s < N ? shapes[s].axes : dropped[s - N].axes, sizeof d.axes[0] * 2);
                    size_t es = tilec_dtype_size(d.dtype);
                    int64_t in_n = desc_elems(&d, false), out_n = desc_elems(&d, true);
                    unsigned char *in = malloc((size_t)in_n * es), *out = malloc((size_t)out_n * es);
                    uint16_t h16 = d.dtype == TILEC_F16 ? 0x7e00 : 0x7fc0;
                    float f32 = NAN;
                    double f64 = NAN;
                    for (int64_t i = 0; i < (in_n > out_n ? in_n : out_n); i++) {
                        const void *nan = es == 2 ? (const void *)&h16 : es == 4 ? (const void *)&f32 : (const void *)&f64;
                        if (i < in_n) memcpy(in + (size_t)i * es, nan, es);
                        if (i < out_n) memcpy(out + (size_t)i * es, nan, es);
                    }
                    /* element 0 is 5 */
                    uint16_t five16 = d.dtype == TILEC_F16 ? tilec_f16_from_double(5) : tilec_bf16_from_double(5);
                    float five32 = 5;
                    double five64 = 5;
                    memcpy(in, es == 2 ? (const void *)&five16 : es == 4 ? (const void *)&five32 : (const void *)&five64, es);
                    void *din, *dout;
                    assert_int_equal(tilec_mem_alloc(ctx, (size_t)in_n * es, &din), TILEC_OK);
                    assert_int_equal(tilec_mem_alloc(ctx, (size_t)out_n * es, &dout), TILEC_OK);
                    assert_int_equal(tilec_mem_upload(ctx, din, in, (size_t)in_n * es), TILEC_OK);
                    assert_int_equal(tilec_mem_upload(ctx, dout, out, (size_t)out_n * es), TILEC_OK);
                    if (jit_reduce(ctx, &d, din, dout, NULL) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
                    assert_int_equal(tilec_mem_download(ctx, out, dout, (size_t)out_n * es), TILEC_OK);
                    for (int64_t o = 0; o < out_n; o++) {
                        double got = dt == 0 ? ((float *)out)[o] : dt == 3 ? ((double *)out)[o]
                                   : d.dtype == TILEC_F16 ? tilec_f16_to_double(((uint16_t *)out)[o])
                                                         : tilec_bf16_to_double(((uint16_t *)out)[o]);
                        if (o == 0 ? got != 5 : !isnan(got))
                            fail_msg("shape %zu %s %s%s: output %lld is %g, want %s", s, tilec_op_name(d.op),
                                     tilec_dtype_name(d.dtype), accum ? " accumulate" : "", (long long)o, got,
                                     o == 0 ? "5" : "NaN");
                    }
                    tilec_mem_free(ctx, din);
                    tilec_mem_free(ctx, dout);
                    free(in);
                    free(out);
                }
    tilec_close(ctx);
}

/* The same input gives the same bits, twice in a context and in a new one; plans are
 * reused for the same shape. */
static void test_determinism_and_cache(void **state) {
    (void)state;
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {2, 300007}, .naxes = 1, .axes = {1}};
    tilec_ctx *a = sim_ctx(), *b = sim_ctx();
    void *x = reduce_and_check(a, &d, 5), *y = reduce_and_check(a, &d, 5), *z = reduce_and_check(b, &d, 5);
    assert_memory_equal(x, y, 2 * sizeof(float));
    assert_memory_equal(x, z, 2 * sizeof(float));
    free(x);
    free(y);
    free(z);
    /* [8, 1, 16, 32] over (2, 3) and [8, 512] over (1) are one plan */
    char *t1, *t2;
    tilec_reduce_desc e = {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 4, .shape = {8, 1, 16, 32}, .naxes = 2, .axes = {2, 3}};
    tilec_reduce_desc f = {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {8, 512}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_reduce_explain(a, &e, &t1), TILEC_OK);
    assert_int_equal(tilec_reduce_explain(a, &f, &t2), TILEC_OK);
    assert_non_null(strstr(t1, "view: 8 512 (reduced)\n"));
    assert_string_equal(t1, t2);
    assert_non_null(strstr(t1, "grid.max(B, A, axes=(1))"));
    tilec_free(t1);
    tilec_free(t2);
    tilec_close(a);
    tilec_close(b);
}

/* Zero extents: an empty output does nothing; a sum over an empty axis gives 0 (or
 * leaves the output when accumulating); max / min over one is an error. */
static void test_empty(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    float out[4] = {5, 5, 5, 5}, in[1] = {0};
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {4, 0}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    for (int i = 0; i < 4; i++) assert_true(out[i] == 0.0f);
    out[0] = 7;
    d.accumulate = true;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_true(out[0] == 7.0f);
    d.op = TILEC_OP_MAX;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_INVALID_ARG);
    tilec_diag g;
    tilec_diag_get(ctx, 0, &g);
    assert_string_equal(g.message, "max over an empty axis has no value: a reduced extent is 0");
    d = (tilec_reduce_desc){.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {0, 9}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_reduce(ctx, &d, NULL, NULL), TILEC_OK); /* nothing to write */
    /* a product of nothing is 1, in every dtype (the bits written here, not by the reference) */
    static const struct { tilec_dtype dt; uint64_t one; } ones[] = {
        {TILEC_F16, 0x3c00}, {TILEC_BF16, 0x3f80}, {TILEC_F32, 0x3f800000}, {TILEC_F64, 0x3ff0000000000000ull},
        {TILEC_I32, 1}, {TILEC_U32, 1}, {TILEC_I64, 1}};
    for (size_t t = 0; t < sizeof ones / sizeof ones[0]; t++) {
        size_t es = tilec_dtype_size(ones[t].dt);
        unsigned char dev[4 * 8], host[4 * 8];
        memset(dev, 0x55, sizeof dev);
        d = (tilec_reduce_desc){.op = TILEC_OP_PROD, .dtype = ones[t].dt, .rank = 2, .shape = {3, 0}, .naxes = 1, .axes = {1}};
        assert_int_equal(tilec_reduce(ctx, &d, in, dev), TILEC_OK);
        memcpy(host, dev, sizeof host);
        for (int o = 0; o < 3; o++) {
            uint64_t got = 0;
            memcpy(&got, host + o * es, es); /* little-endian */
            if (got != ones[t].one) fail_msg("prod %s over an empty axis: output %d is %#llx", tilec_dtype_name(ones[t].dt), o, (unsigned long long)got);
        }
        assert_true(host[3 * es] == 0x55); /* nothing past the output */
        tilec_check_result r;
        assert_int_equal(tilec_reduce_check(ctx, &d, in, NULL, host, &r), TILEC_OK);
        assert_true(r.ok);
        host[0] ^= 1; /* the check notices another value */
        assert_int_equal(tilec_reduce_check(ctx, &d, in, NULL, host, &r), TILEC_OK);
        assert_false(r.ok);
    }
    /* the mean of nothing is NaN (0 / 0), a sum of squares and a norm of nothing +0 (the
     * bits written here: each dtype's default quiet NaN) */
    static const struct { tilec_op op; tilec_dtype dt; uint64_t bits; } empties[] = {
        {TILEC_OP_MEAN, TILEC_F16, 0x7e00}, {TILEC_OP_MEAN, TILEC_BF16, 0x7fc0}, {TILEC_OP_MEAN, TILEC_F32, 0x7fc00000},
        {TILEC_OP_MEAN, TILEC_F64, 0x7ff8000000000000ull}, {TILEC_OP_SUMSQ, TILEC_F32, 0}, {TILEC_OP_SUMSQ, TILEC_I64, 0},
        {TILEC_OP_NORM2, TILEC_BF16, 0}, {TILEC_OP_NORM2, TILEC_F64, 0}};
    for (size_t t = 0; t < sizeof empties / sizeof empties[0]; t++) {
        size_t es = tilec_dtype_size(empties[t].dt);
        unsigned char dev[4 * 8];
        memset(dev, 0x55, sizeof dev);
        d = (tilec_reduce_desc){.op = empties[t].op, .dtype = empties[t].dt, .rank = 2, .shape = {3, 0}, .naxes = 1, .axes = {1}};
        assert_int_equal(tilec_reduce(ctx, &d, in, dev), TILEC_OK);
        for (int o = 0; o < 3; o++) {
            uint64_t got = 0;
            memcpy(&got, dev + o * es, es);
            if (got != empties[t].bits)
                fail_msg("%s %s over an empty axis: output %d is %#llx, want %#llx", tilec_op_name(d.op),
                         tilec_dtype_name(d.dtype), o, (unsigned long long)got, (unsigned long long)empties[t].bits);
        }
        assert_true(dev[3 * es] == 0x55);
    }
    tilec_close(ctx);
}

static void expect_bad(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, void *out, const char *message) {
    assert_int_equal(tilec_reduce(ctx, d, in, out), TILEC_ERR_INVALID_ARG);
    tilec_diag g;
    assert_int_equal(tilec_diag_get(ctx, 0, &g), TILEC_OK);
    assert_string_equal(g.message, message);
}

static void test_bad_input(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    float buf[64] = {0}, out[8] = {0};
    tilec_reduce_desc ok = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {8, 8}, .naxes = 1, .axes = {1}};
    tilec_reduce_desc d = ok;
    assert_int_equal(tilec_reduce(NULL, &d, buf, out), TILEC_ERR_INVALID_ARG);
    expect_bad(ctx, NULL, buf, out, "no reduction descriptor");
    expect_bad(ctx, &d, NULL, out, "the input is NULL");
    expect_bad(ctx, &d, buf, NULL, "the output is NULL");
    d.rank = 0;
    expect_bad(ctx, &d, buf, out, "rank 0 is out of range: a tensor has 1 to 8 dimensions");
    d.rank = 9;
    expect_bad(ctx, &d, buf, out, "rank 9 is out of range: a tensor has 1 to 8 dimensions");
    d = ok;
    d.axes[0] = 2;
    expect_bad(ctx, &d, buf, out, "axis 2 is out of range for rank 2 (axes -2 to 1)");
    d = ok;
    d.naxes = 2;
    d.axes[0] = d.axes[1] = -1;
    expect_bad(ctx, &d, buf, out, "axis 1 is given twice");
    d = ok;
    d.naxes = 0;
    expect_bad(ctx, &d, buf, out, "0 axes for a tensor of rank 2: give 1 to 2");
    d = ok;
    d.shape[0] = -3;
    expect_bad(ctx, &d, buf, out, "extent -3 of dimension 0 is negative");
    d = ok;
    d.shape[0] = (int64_t)1 << 40, d.shape[1] = (int64_t)1 << 30;
    expect_bad(ctx, &d, buf, out, "the tensor has more than 2^63-1 elements");
    d.shape[0] = d.shape[1] = INT64_MAX / 2;
    expect_bad(ctx, &d, buf, out, "the extents other than 0 multiply to 4611686018427387903; tilec reduces tensors of up to 2^48 elements");
    d.rank = 3; /* an empty tensor, but its kept extents still overflow (found by tests/fuzz) */
    d.shape[0] = 0, d.shape[1] = 1000, d.shape[2] = INT64_MAX - 31;
    expect_bad(ctx, &d, buf, out, "the extents other than 0 multiply to more than 2^63-1");
    d.shape[0] = 1, d.shape[1] = 1 << 24, d.shape[2] = (1 << 24) + 1;
    expect_bad(ctx, &d, buf, out, "the extents other than 0 multiply to 281474993487872; tilec reduces tensors of up to 2^48 elements");
    d = ok;
    d.dtype = TILEC_DTYPE_COUNT;
    expect_bad(ctx, &d, buf, out, "dtype 7 is not a tilec_dtype");
    d = ok;
    expect_bad(ctx, &d, buf, buf + 60, "the input and the output overlap; reduce into another buffer");
    /* an unaligned input is fine: the kernels make no alignment assumption */
    float big[66];
    for (int i = 0; i < 66; i++) big[i] = (float)i;
    assert_int_equal(tilec_reduce(ctx, &ok, big + 1, out), TILEC_OK);
    float want = 0;
    for (int j = 0; j < 8; j++) want += big[1 + j];
    assert_true(out[0] == want);
    /* a long sum from an unaligned pointer takes the scalar plan, and is right */
    float *many = malloc(sizeof(float) * 100004);
    double exact = 0;
    for (int i = 0; i < 100004; i++) many[i] = (float)(i % 13) - 6.0f;
    for (int i = 1; i < 100004; i++) exact += many[i];
    tilec_reduce_desc longsum = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {100003}, .naxes = 1, .axes = {0}};
    assert_int_equal(tilec_reduce(ctx, &longsum, many + 1, out), TILEC_OK);
    assert_true(out[0] == (float)exact); /* small integers: every order is exact */
    assert_int_equal(tilec_reduce(ctx, &longsum, many, out), TILEC_OK); /* the aligned plan, vector loads */
    free(many);
    /* a second runtime_open is refused */
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_ERR_INVALID_ARG);
    tilec_close(ctx);
}

/* Asking for a GPU where there is none says what was tried; AUTO falls back to sim. */
static void test_backends(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    /* a value that is no backend is refused, not taken for the simulator */
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_COUNT, 0), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_runtime_open(ctx, (tilec_backend)-1, 0), TILEC_ERR_INVALID_ARG);
    tilec_status st = tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0);
    if (st == TILEC_OK) {
        print_message("a CUDA GPU is usable here; the no-GPU messages are not checked\n");
    } else {
        assert_int_equal(st, TILEC_ERR_UNAVAILABLE);
        tilec_diag g;
        tilec_diag_get(ctx, 0, &g);
        assert_true(strstr(g.message, "no CUDA driver") || strstr(g.message, "stub") || strstr(g.message, "no usable GPU"));
        assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_HIP, 0), TILEC_ERR_UNAVAILABLE);
        assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_AUTO, 0), TILEC_OK);
        assert_int_equal(tilec_runtime_backend(ctx), TILEC_BACKEND_SIM);
    }
    tilec_close(ctx);
}

/* ---- scratch per stream -------------------------------------------------------------------------- */

/* What the runtime asked of the backend, in order. */
typedef struct rec_call {
    char op;         /* 'a' alloc, 'z' zero, 'l' launch, 'r' record, 'w' wait, 's' sync, 'f' release, 'e' event free,
                        'q' capturing asked, 'x' relax, 'u' unrelax, 'Z' zero aside, 'L' load */
    void *ptr;       /* alloc, zero, zero aside, release: the memory; record, wait, event free: the event */
    void *stream;    /* zero, launch, record, capturing */
    void *scratch[4];/* launch: the scratch passed */
    int nscratch;
    int relaxed;     /* the relax calls not yet undone when it was asked */
} rec_call;

enum { REC_MAX = 1 << 14 };
static rec_call rec_log[REC_MAX];
static int rec_n;
static rt_backend rec_be; /* the simulator's functions, the ones below in their place */

static int rec_relaxed;         /* relax calls not yet undone */
static void *rec_captured[2];   /* the streams the backend says are being captured */
static bool rec_launch_fails;   /* the next launch fails (as a GPU's may) */

static rec_call *rec_add(char op, void *ptr, void *stream) {
    assert_true(rec_n < REC_MAX);
    rec_log[rec_n] = (rec_call){.op = op, .ptr = ptr, .stream = stream, .relaxed = rec_relaxed};
    return &rec_log[rec_n++];
}
static tilec_status rec_alloc(rt *r, size_t n, void **p) {
    tilec_status st = rt_sim.alloc(r, n, p);
    if (st == TILEC_OK) rec_add('a', *p, NULL);
    return st;
}
static tilec_status rec_zero(rt *r, void *dst, size_t n, void *stream) {
    rec_add('z', dst, stream);
    return rt_sim.zero(r, dst, n, stream);
}
static tilec_status rec_launch(rt *r, rt_plan *p, void *const *args, int nargs, void *const *scratch, void *stream) {
    rec_call *c = rec_add('l', NULL, stream);
    c->nscratch = p->info.nscratch;
    for (int i = 0; i < p->info.nscratch; i++) c->scratch[i] = scratch[i];
    if (rec_launch_fails) {
        rec_launch_fails = false;
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the test's launch failure");
        return TILEC_ERR_UNAVAILABLE;
    }
    return rt_sim.launch(r, p, args, nargs, scratch, stream);
}
static tilec_status rec_capturing(rt *r, void *stream, bool *yes) {
    (void)r;
    rec_add('q', NULL, stream);
    *yes = stream && (stream == rec_captured[0] || stream == rec_captured[1]);
    return TILEC_OK;
}
static tilec_status rec_relax(rt *r, int *saved) {
    (void)r;
    rec_add('x', NULL, NULL);
    *saved = 100 + rec_relaxed++; /* unrelax must get it back */
    return TILEC_OK;
}
static void rec_unrelax(rt *r, int saved) {
    (void)r;
    assert_int_equal(saved, 100 + --rec_relaxed);
    rec_add('u', NULL, NULL);
}
static tilec_status rec_zero_aside(rt *r, void *dst, size_t n) {
    rec_add('Z', dst, NULL);
    return rt_sim.zero_aside(r, dst, n);
}
static tilec_status rec_load(rt *r, rt_plan *p, const void *binary) {
    rec_add('L', NULL, NULL);
    return rt_sim.load(r, p, binary);
}
static tilec_status rec_record(rt *r, void **event, void *stream) {
    (void)r;
    if (!*event) *event = malloc(1); /* an event of its own, so waits can be matched with records */
    assert_non_null(*event);
    rec_add('r', *event, stream);
    return TILEC_OK;
}
static tilec_status rec_wait(rt *r, void *event) {
    (void)r;
    rec_add('w', event, NULL);
    return TILEC_OK;
}
static tilec_status rec_sync(rt *r) {
    rec_add('s', NULL, NULL);
    return rt_sim.sync(r);
}
static tilec_status rec_release(rt *r, void *p) {
    rec_add('f', p, NULL);
    return rt_sim.release(r, p);
}
static void rec_event_free(rt *r, void *event) {
    (void)r;
    rec_add('e', event, NULL);
    free(event);
}

/* A simulator context whose backend logs (the log emptied). */
static tilec_ctx *rec_ctx(void) {
    tilec_ctx *ctx = sim_ctx();
    rec_be = rt_sim;
    rec_be.alloc = rec_alloc, rec_be.zero = rec_zero, rec_be.launch = rec_launch, rec_be.record = rec_record, rec_be.wait = rec_wait;
    rec_be.sync = rec_sync, rec_be.release = rec_release, rec_be.event_free = rec_event_free;
    rec_be.capturing = rec_capturing, rec_be.relax = rec_relax, rec_be.unrelax = rec_unrelax;
    rec_be.zero_aside = rec_zero_aside, rec_be.load = rec_load;
    ((rt *)ctx->runtime)->be = &rec_be;
    rec_n = 0;
    rec_relaxed = 0;
    rec_captured[0] = rec_captured[1] = NULL;
    rec_launch_fails = false;
    return ctx;
}

/* d on the stream, on fresh random data, checked against the reference. */
static void reduce_on(tilec_ctx *ctx, tilec_reduce_desc d, void *stream, uint64_t seed) {
    d.stream = stream;
    free(reduce_and_check(ctx, &d, seed));
}

/* The scratch of the latest launch on the stream (its first pointer). */
static const rec_call *last_launch(void *stream) {
    for (int i = rec_n - 1; i >= 0; i--)
        if (rec_log[i].op == 'l' && rec_log[i].stream == stream) return &rec_log[i];
    fail_msg("no launch on stream %p", stream);
    return NULL;
}

static bool launched_with(const rec_call *c, void *p) {
    for (int j = 0; j < c->nscratch; j++)
        if (c->scratch[j] == p) return true;
    return false;
}

/* For the release at log entry f: the last launch that used the memory as scratch since
 * it was allocated, or NULL when it was no scratch (an input or output of the test). */
static const rec_call *scratch_released(int f) {
    int a = f - 1;
    while (a >= 0 && !(rec_log[a].op == 'a' && rec_log[a].ptr == rec_log[f].ptr)) a--;
    assert_true(a >= 0);
    for (int l = f - 1; l > a; l--)
        if (rec_log[l].op == 'l' && launched_with(&rec_log[l], rec_log[f].ptr)) return &rec_log[l];
    return NULL;
}

/* Every scratch buffer released was released after a wait on the event recorded behind
 * the last launch that used it (or after a device-wide sync), never before. The count. */
static int check_releases(void) {
    int released = 0;
    for (int f = 0; f < rec_n; f++) {
        if (rec_log[f].op != 'f') continue;
        const rec_call *c = scratch_released(f);
        if (!c) continue;
        int l = (int)(c - rec_log);
        released++;
        bool waited = false;
        for (int r = l + 1; r < f && !waited; r++) {
            if (rec_log[r].op == 's') waited = true;
            if (rec_log[r].op != 'r' || rec_log[r].stream != rec_log[l].stream) continue;
            for (int w = r + 1; w < f && !waited; w++) waited = rec_log[w].op == 'w' && rec_log[w].ptr == rec_log[r].ptr;
        }
        if (!waited) fail_msg("scratch %p was released while its last launch (log entry %d) may still run", rec_log[f].ptr, l);
    }
    return released;
}

static const tilec_reduce_desc split_shape = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {16384}, .naxes = 1, .axes = {0}};
static const tilec_reduce_desc cols_shape = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {8192, 64}, .naxes = 1, .axes = {0}};

static void expect_variant(tilec_ctx *ctx, const tilec_reduce_desc *d, const char *want) {
    char *text;
    assert_int_equal(tilec_reduce_explain(ctx, d, &text), TILEC_OK);
    if (!strstr(text, want)) fail_msg("%s not in\n%s", want, text);
    tilec_free(text);
}

/* Rows of 32 f32: the ops whose finish is long (logsumexp, var, std: the op table's
 * long_finish) gather a CTA's outputs in shared memory and finish them a thread each,
 * with 4 outputs a group in flight; a sum finishes in its group's lanes, 8 in flight. */
static void test_long_finish_gathers(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    tilec_reduce_desc d = {.dtype = TILEC_F32, .rank = 2, .shape = {4096, 32}, .naxes = 1, .axes = {1}};
    const tilec_op gathered[] = {TILEC_OP_LOGSUMEXP, TILEC_OP_VAR, TILEC_OP_STD};
    for (size_t i = 0; i < sizeof gathered / sizeof *gathered; i++) {
        d.op = gathered[i];
        expect_variant(ctx, &d, "4 outputs in flight, 16-byte loads; the CTA's outputs gathered and finished a thread each");
    }
    d.op = TILEC_OP_SUM;
    char *text;
    assert_int_equal(tilec_reduce_explain(ctx, &d, &text), TILEC_OK);
    if (strstr(text, "gathered")) fail_msg("a sum's outputs were gathered:\n%s", text);
    tilec_free(text);
    tilec_close(ctx);
}

/* Two streams, each with a grid_rows and a grid_cols shape of partials over CTAs, calls interleaved: each
 * stream's launches get their own scratch, zeroed once on that stream before its first
 * launch there; the results are right every time (the kernel leaves the counters at zero
 * for the next launch on the stream, which the simulator now runs on the same memory). */
static void test_scratch_per_stream(void **state) {
    (void)state;
    tilec_ctx *ctx = rec_ctx();
    expect_variant(ctx, &split_shape, "variant grid_rows, grid 2 x 256 threads, 2 scratch buffers");
    expect_variant(ctx, &cols_shape, "variant grid_cols, grid 8 x 256 threads, 2 scratch buffers");
    void *streams[2] = {(void *)0x1000, (void *)0x2000};
    const tilec_reduce_desc *pair[2] = {&split_shape, &cols_shape};
    for (int sh = 0; sh < 2; sh++) {
        const rec_call *first[2];
        for (int round = 0; round < 3; round++)
            for (int s = 0; s < 2; s++) {
                int before = rec_n;
                reduce_on(ctx, *pair[sh], streams[s], (uint64_t)(round * 2 + s));
                const rec_call *l = last_launch(streams[s]);
                assert_int_equal(l->nscratch, 2);
                if (round == 0) {
                    first[s] = l;
                    /* made now: each buffer zeroed once, on this stream, before the launch */
                    int zeros = 0;
                    for (int i = before; i < rec_n; i++)
                        if (rec_log[i].op == 'z' && launched_with(l, rec_log[i].ptr)) {
                            assert_ptr_equal(rec_log[i].stream, streams[s]);
                            assert_true(&rec_log[i] < l);
                            zeros++;
                        }
                    assert_int_equal(zeros, 2);
                } else {
                    assert_memory_equal(l->scratch, first[s]->scratch, sizeof l->scratch); /* the stream's own set again */
                    for (int i = before; i < rec_n; i++) assert_false(rec_log[i].op == 'z'); /* not zeroed again */
                }
                /* an event follows the launch on its stream */
                assert_true(l + 1 < rec_log + rec_n && l[1].op == 'r' && l[1].stream == streams[s]);
            }
        for (int i = 0; i < 2; i++) /* the two streams' sets share no buffer */
            for (int j = 0; j < 2; j++) assert_ptr_not_equal(first[0]->scratch[i], first[1]->scratch[j]);
    }
    for (int i = 0; i < rec_n; i++) assert_false(rec_log[i].op == 'z' && rec_log[i].stream == NULL); /* never the NULL stream */
    rt *r = ctx->runtime;
    assert_int_equal(r->nscratch, 4); /* two plans × two streams */
    tilec_close(ctx);
    assert_int_equal(check_releases(), 8); /* every buffer freed at close, each after its last launch */
}

/* One plan on more streams than the runtime keeps sets for: never more than
 * RT_SCRATCH_SETS; the least recently used goes, freed after its last launch. */
static void test_scratch_bounded(void **state) {
    (void)state;
    tilec_ctx *ctx = rec_ctx();
    rt *r = ctx->runtime;
    enum { EXTRA = 8 };
#define STREAM(i) ((void *)(uintptr_t)(0x10000 + 16 * (i)))
    for (int i = 0; i < RT_SCRATCH_SETS + EXTRA; i++) {
        reduce_on(ctx, split_shape, STREAM(i), (uint64_t)i);
        assert_int_equal(r->nscratch, i < RT_SCRATCH_SETS ? i + 1 : RT_SCRATCH_SETS);
    }
    assert_int_equal(check_releases(), 2 * EXTRA);
    /* the first EXTRA streams' sets went, in order, both buffers of each */
    for (int f = 0, k = 0; f < rec_n; f++) {
        const rec_call *c = rec_log[f].op == 'f' ? scratch_released(f) : NULL;
        if (c) assert_ptr_equal(c->stream, STREAM(k++ / 2));
    }
    /* a kept stream, used again, becomes the most recent: the next new stream frees the
     * set of STREAM(EXTRA + 1), the least recent now, not that of STREAM(EXTRA) */
    int before = rec_n;
    reduce_on(ctx, split_shape, STREAM(EXTRA), 1);
    for (int i = before; i < rec_n; i++) assert_false(rec_log[i].op == 'z' || (rec_log[i].op == 'f' && scratch_released(i)));
    before = rec_n;
    reduce_on(ctx, split_shape, STREAM(0), 2); /* a new set again for the first stream */
    int freed = 0;
    for (int f = before; f < rec_n; f++) {
        const rec_call *c = rec_log[f].op == 'f' ? scratch_released(f) : NULL;
        if (c) assert_ptr_equal(c->stream, STREAM(EXTRA + 1)), freed++;
    }
    assert_int_equal(freed, 2);
    assert_int_equal(r->nscratch, RT_SCRATCH_SETS);
#undef STREAM
    tilec_close(ctx);
    assert_int_equal(check_releases(), 2 * (EXTRA + 1 + RT_SCRATCH_SETS));
}

/* The per-thread default stream is one handle for a different stream on each thread:
 * each thread gets its own scratch for it. */
typedef struct per_thread_arg {
    tilec_ctx *ctx;
    pthread_mutex_t *lock;
    pthread_cond_t *cond;
    int *turn, me;
    void *scratch;
} per_thread_arg;

static void *per_thread(void *p) {
    per_thread_arg *a = p;
    pthread_mutex_lock(a->lock);
    while (*a->turn != a->me) pthread_cond_wait(a->cond, a->lock);
    reduce_on(a->ctx, split_shape, RT_STREAM_PER_THREAD, (uint64_t)a->me);
    a->scratch = last_launch(RT_STREAM_PER_THREAD)->scratch[0];
    (*a->turn)++; /* the context is the next thread's now; this one stays alive until both are done */
    pthread_cond_broadcast(a->cond);
    while (*a->turn != 2) pthread_cond_wait(a->cond, a->lock);
    pthread_mutex_unlock(a->lock);
    return NULL;
}

static void test_scratch_per_thread_stream(void **state) {
    (void)state;
    tilec_ctx *ctx = rec_ctx();
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    int turn = 0;
    per_thread_arg a[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        a[i] = (per_thread_arg){ctx, &lock, &cond, &turn, i, NULL};
        assert_int_equal(pthread_create(&th[i], NULL, per_thread, &a[i]), 0);
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    reduce_on(ctx, split_shape, RT_STREAM_PER_THREAD, 3);
    void *mine = last_launch(RT_STREAM_PER_THREAD)->scratch[0];
    assert_ptr_not_equal(a[0].scratch, a[1].scratch);
    assert_ptr_not_equal(mine, a[0].scratch);
    assert_ptr_not_equal(mine, a[1].scratch);
    assert_int_equal(((rt *)ctx->runtime)->nscratch, 3);
    reduce_on(ctx, split_shape, RT_STREAM_PER_THREAD, 4); /* this thread's again */
    assert_ptr_equal(last_launch(RT_STREAM_PER_THREAD)->scratch[0], mine);
    tilec_close(ctx);
    assert_int_equal(check_releases(), 6);
}

/* tilec_reduce_prepare: the plan is made and its scratch for the stream allocated and
 * zeroed (waited for) without a launch; the calls after it only launch, with no event
 * after them (they may be captured in a graph); the prepared set is never evicted by other
 * streams' sets, and is freed at close after a device-wide sync. */
static void test_prepare(void **state) {
    (void)state;
    tilec_ctx *ctx = rec_ctx();
    rt *r = ctx->runtime;
    void *mine = (void *)0x7000;
    tilec_reduce_desc d = split_shape;
    d.stream = mine;
    char aligned[16] __attribute__((aligned(16)));
    assert_int_equal(tilec_reduce_prepare(ctx, &d, aligned), TILEC_OK);
    int zeros = 0, launches = 0, waits = 0;
    for (int i = 0; i < rec_n; i++) {
        zeros += rec_log[i].op == 'z' && rec_log[i].stream == mine;
        launches += rec_log[i].op == 'l';
        waits += rec_log[i].op == 'w';
    }
    assert_int_equal(zeros, 2);    /* both scratch buffers, on the call's stream */
    assert_int_equal(launches, 0); /* and nothing launched */
    assert_int_equal(waits, 1);    /* the zeroing waited for */
    int before = rec_n;
    reduce_on(ctx, split_shape, mine, 1); /* only a launch now: no zero, no event */
    for (int i = before; i < rec_n; i++) assert_false(rec_log[i].op == 'z' || rec_log[i].op == 'r');
    void *set = last_launch(mine)->scratch[0];
    for (int i = 0; i < RT_SCRATCH_SETS + 4; i++) /* other streams come and go */
        reduce_on(ctx, split_shape, (void *)(uintptr_t)(0x20000 + 16 * i), (uint64_t)i);
    assert_int_equal(r->nscratch, RT_SCRATCH_SETS);
    before = rec_n;
    reduce_on(ctx, split_shape, mine, 2); /* the prepared set is still there */
    for (int i = before; i < rec_n; i++) assert_false(rec_log[i].op == 'z');
    assert_ptr_equal(last_launch(mine)->scratch[0], set);
    char *text;
    assert_int_equal(tilec_reduce_explain(ctx, &d, &text), TILEC_OK); /* the same plan */
    tilec_free(text);
    tilec_close(ctx);
    assert_int_equal(check_releases(), 2 * (RT_SCRATCH_SETS + 4 + 1));
}

/* ---- graph capture ------------------------------------------------------------------------------ */

/* tilec_reduce of d on the stream, on fresh random data, checked against the reference
 * (the simulator runs it within the call); [*from, *to) of the log is what the call alone
 * asked of the backend (the test's allocations, copies and sync are outside it). */
static void call_logged(tilec_ctx *ctx, tilec_reduce_desc d, void *stream, uint64_t seed, int *from, int *to) {
    d.stream = stream;
    size_t es = tilec_dtype_size(d.dtype);
    int64_t in_n = desc_elems(&d, false), out_n = desc_elems(&d, true);
    size_t ib = (size_t)in_n * es, ob = (size_t)out_n * es;
    void *in = malloc(ib), *after = malloc(ob), *din, *dout;
    assert_non_null(in);
    assert_non_null(after);
    fill_buffer(d.dtype, in, in_n, d.shape[d.rank - 1], true, &seed);
    assert_int_equal(tilec_mem_alloc(ctx, ib, &din), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, ob, &dout), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, din, in, ib), TILEC_OK);
    *from = rec_n;
    tilec_status st = tilec_reduce(ctx, &d, din, dout);
    *to = rec_n;
    if (st != TILEC_OK) fail_msg("tilec_reduce: %s\n%s", tilec_status_name(st), tilec_diag_text(ctx));
    assert_int_equal(rec_relaxed, 0); /* every relax undone */
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, after, dout, ob), TILEC_OK);
    tilec_check_result r;
    assert_int_equal(tilec_reduce_check(ctx, &d, in, NULL, after, &r), TILEC_OK);
    if (!r.ok) fail_msg("%lld mismatches with the reference, first [%lld] got %.9g want %.9g", (long long)r.mismatches,
                        (long long)r.first_bad, r.got, r.want);
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    free(in);
    free(after);
}

/* How many entries of [from, to) are op (on the stream, when stream is not NULL). */
static int rec_count(int from, int to, char op, void *stream) {
    int n = 0;
    for (int i = from; i < to; i++) n += rec_log[i].op == op && (!stream || rec_log[i].stream == stream);
    return n;
}

/* [from, to) is a call on the captured stream that the capture may hold: the launch is
 * all it enqueued there (no zero, no record: nothing else on the stream at all), nothing
 * waited for the whole device, and the driver work it did besides (allocations, zeroing
 * aside, waits, loads) ran relaxed. The launch. */
static const rec_call *expect_capturable(int from, int to, void *captured) {
    const rec_call *launch = NULL;
    for (int i = from; i < to; i++) {
        const rec_call *c = &rec_log[i];
        if (c->stream == captured && c->op != 'l' && c->op != 'q')
            fail_msg("log entry %d: '%c' on the stream being captured", i, c->op);
        if (c->op == 's') fail_msg("log entry %d: a device-wide sync during a capture", i);
        if (c->op == 'z') fail_msg("log entry %d: a zero on stream %p during a capture", i, c->stream);
        if (c->op == 'r') fail_msg("log entry %d: an event recorded during a capture", i);
        if (strchr("aZwL", c->op) && !c->relaxed) fail_msg("log entry %d: '%c' outside the relaxed mode", i, c->op);
        if (c->op == 'l') {
            if (launch) fail_msg("log entry %d: a second launch", i);
            launch = c;
        }
    }
    if (!launch || launch->stream != captured) fail_msg("no launch on the stream being captured");
    assert_int_equal(launch->relaxed, 0); /* the launch in the caller's own mode */
    return launch;
}

static const tilec_reduce_desc rows_shape = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {64, 32}, .naxes = 1, .axes = {1}};

/* A call on a stream being captured into a graph, never prepared nor made on it before:
 * its set is made outside the capture (allocated and zeroed aside, in the relaxed mode)
 * and pinned, and the launch is all the stream gets; the plan's miss loads relaxed. The
 * calls after it, captured or not, launch only and ask nothing (the fast path), and a plan
 * without scratch never asks whether its stream is captured. The results are right each
 * time: the kernels leave the pinned set clean for the next launch, as for a replay. */
static void test_capture_unprepared(void **state) {
    (void)state;
    tilec_ctx *ctx = rec_ctx();
    rt *r = ctx->runtime;
    expect_variant(ctx, &split_shape, "2 scratch buffers");
    expect_variant(ctx, &rows_shape, "0 scratch buffers");
    assert_int_equal(rec_count(0, rec_n, 'L', NULL), 2); /* explain made the plans, each loaded relaxed */
    for (int i = 0; i < rec_n; i++)
        if (rec_log[i].op == 'L') assert_true(rec_log[i].relaxed > 0);
    assert_int_equal(rec_count(0, rec_n, 'q', NULL), 0); /* a miss relaxes without asking */
    void *cap = (void *)0x9000;
    rec_captured[0] = cap;
    int from, to;
    call_logged(ctx, split_shape, cap, 1, &from, &to);
    const rec_call *l = expect_capturable(from, to, cap);
    assert_int_equal(rec_count(from, to, 'q', cap), 1);
    assert_int_equal(rec_count(from, to, 'w', NULL), 0); /* nothing to wait for */
    assert_int_equal(rec_count(from, to, 'Z', NULL), 2);
    for (int i = from; i < to; i++) /* the set launched with is the one zeroed aside, before the launch */
        if (rec_log[i].op == 'Z') assert_true(launched_with(l, rec_log[i].ptr) && &rec_log[i] < l);
    assert_ptr_equal(r->scratch->stream, cap);
    assert_true(r->scratch->pinned);
    void *set = l->scratch[0];
    for (int k = 0; k < 3; k++) { /* more calls in the capture, then after it ended */
        if (k == 2) rec_captured[0] = NULL;
        call_logged(ctx, split_shape, cap, (uint64_t)(2 + k), &from, &to);
        assert_ptr_equal(expect_capturable(from, to, cap)->scratch[0], set);
        assert_int_equal(to - from, 1); /* the launch alone: not even the question */
    }
    /* a plan without scratch, captured from its first call: launches only, never asks */
    rec_captured[0] = cap;
    for (int k = 0; k < 2; k++) {
        call_logged(ctx, rows_shape, cap, (uint64_t)(10 + k), &from, &to);
        expect_capturable(from, to, cap);
        assert_int_equal(to - from, 1);
    }
    /* a plan missed during the capture: compiled and loaded relaxed, the set made aside */
    tilec_reduce_desc fresh = split_shape;
    fresh.shape[0] = 16383;
    call_logged(ctx, fresh, cap, 20, &from, &to);
    expect_capturable(from, to, cap);
    assert_int_equal(rec_count(from, to, 'L', NULL), 1);
    assert_int_equal(rec_count(from, to, 'Z', NULL), 2);
    /* a stream not being captured, meanwhile: as before (zeroed on it, an event after the launch) */
    void *other = (void *)0xa000;
    call_logged(ctx, split_shape, other, 30, &from, &to);
    assert_int_equal(rec_count(from, to, 'q', other), 1);
    assert_int_equal(rec_count(from, to, 'z', other), 2);
    assert_int_equal(rec_count(from, to, 'Z', NULL), 0);
    assert_int_equal(rec_count(from, to, 'x', NULL), 0);
    assert_true(rec_log[to - 1].op == 'r' && rec_log[to - 1].stream == other && rec_log[to - 2].op == 'l');
    assert_false(r->scratch->pinned);
    call_logged(ctx, split_shape, other, 31, &from, &to); /* its set is not pinned: asked again, an event again */
    assert_int_equal(rec_count(from, to, 'q', other), 1);
    assert_int_equal(rec_count(from, to, 'r', other), 1);
    assert_int_equal(rec_count(from, to, 'z', NULL), 0);
    tilec_close(ctx);
    assert_int_equal(check_releases(), 6); /* the pinned sets too, after a sync */
}

/* A set made before the capture, by calls not captured: the first captured call waits for
 * its event (recorded before the capture), zeroes it aside and pins it, enqueuing nothing
 * on the stream. One whose last launch failed (no event: only a device-wide wait would
 * tell it is idle) is set aside until close and replaced. tilec_reduce_prepare on a stream
 * being captured does the same, without the launch. */
static void test_capture_after_calls(void **state) {
    (void)state;
    tilec_ctx *ctx = rec_ctx();
    rt *r = ctx->runtime;
    void *s1 = (void *)0xb000, *s2 = (void *)0xc000, *s3 = (void *)0xd000;
    int from, to;
    call_logged(ctx, split_shape, s1, 1, &from, &to);
    assert_true(rec_log[to - 1].op == 'r');
    void *event = rec_log[to - 1].ptr, *set = last_launch(s1)->scratch[0];
    rec_captured[0] = s1;
    call_logged(ctx, split_shape, s1, 2, &from, &to);
    const rec_call *l = expect_capturable(from, to, s1);
    assert_ptr_equal(l->scratch[0], set); /* the same set */
    assert_int_equal(rec_count(from, to, 'a', NULL), 0);
    assert_int_equal(rec_count(from, to, 'w', NULL), 1);
    for (int i = from; i < to; i++)
        if (rec_log[i].op == 'w') assert_ptr_equal(rec_log[i].ptr, event);
    assert_int_equal(rec_count(from, to, 'Z', NULL), 2);
    assert_true(r->scratch->pinned);
    /* a failed launch leaves a set without an event */
    call_logged(ctx, split_shape, s2, 3, &from, &to);
    void *broken = last_launch(s2)->scratch[0];
    rec_launch_fails = true;
    tilec_reduce_desc d = split_shape;
    d.stream = s2;
    void *din, *dout;
    assert_int_equal(tilec_mem_alloc(ctx, 16384 * 4, &din), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 4, &dout), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_ERR_UNAVAILABLE);
    int kept = r->nscratch;
    rec_captured[1] = s2;
    call_logged(ctx, split_shape, s2, 4, &from, &to);
    l = expect_capturable(from, to, s2);
    assert_false(launched_with(l, broken)); /* a new set */
    assert_int_equal(rec_count(from, to, 'w', NULL), 0);
    assert_int_equal(rec_count(from, to, 'Z', NULL), 2);
    assert_int_equal(r->nscratch, kept);
    assert_non_null(r->retired);
    /* prepare on a stream being captured: the set made aside and pinned, nothing enqueued */
    rec_captured[1] = s3;
    d.stream = s3;
    from = rec_n;
    assert_int_equal(tilec_reduce_prepare(ctx, &d, din), TILEC_OK);
    to = rec_n;
    for (int i = from; i < to; i++) assert_true(strchr("qxaZu", rec_log[i].op) != NULL);
    assert_int_equal(rec_count(from, to, 'Z', NULL), 2);
    assert_true(r->scratch->pinned && r->scratch->stream == s3);
    call_logged(ctx, split_shape, s3, 5, &from, &to);
    expect_capturable(from, to, s3);
    assert_int_equal(to - from, 1);
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    tilec_close(ctx);
    assert_int_equal(check_releases(), 8); /* the set aside too, after a sync */
}

/* With RT_SCRATCH_SETS sets kept, a new one for a capture frees none (freeing may wait
 * for the whole device): one more is kept. */
static void test_capture_keeps_one_more(void **state) {
    (void)state;
    tilec_ctx *ctx = rec_ctx();
    rt *r = ctx->runtime;
    int from, to;
    for (int i = 0; i < RT_SCRATCH_SETS; i++) call_logged(ctx, split_shape, (void *)(uintptr_t)(0x20000 + 16 * i), (uint64_t)i, &from, &to);
    assert_int_equal(r->nscratch, RT_SCRATCH_SETS);
    void *cap = (void *)0x9000;
    rec_captured[0] = cap;
    call_logged(ctx, split_shape, cap, 99, &from, &to);
    expect_capturable(from, to, cap);
    assert_int_equal(rec_count(from, to, 'f', NULL), 0);
    assert_int_equal(rec_count(from, to, 'w', NULL), 0);
    assert_int_equal(r->nscratch, RT_SCRATCH_SETS + 1);
    tilec_close(ctx);
    assert_int_equal(check_releases(), 2 * (RT_SCRATCH_SETS + 1));
}

/* Over an empty axis on a stream being captured: zeros are a memset on the stream, which
 * a capture holds; other values (a prod's 1, a mean's NaN) are written from the host after
 * a wait, which it cannot: refused, with what to do, nothing enqueued nor waited for, the
 * output untouched. Not captured, the same call writes them. */
static void test_capture_empty(void **state) {
    (void)state;
    tilec_ctx *ctx = rec_ctx();
    void *cap = (void *)0x9000;
    rec_captured[0] = cap;
    float in[1] = {0}, out[3] = {5, 5, 5};
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {3, 0}, .naxes = 1, .axes = {1}, .stream = cap};
    int from = rec_n;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_int_equal(rec_count(from, rec_n, 'z', cap), 1);
    for (int i = 0; i < 3; i++) assert_true(out[i] == 0.0f);
    d.op = TILEC_OP_PROD;
    out[0] = out[1] = out[2] = 5;
    from = rec_n;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_INVALID_ARG);
    assert_string_equal(tilec_diag_text(ctx), "tilec: error: prod over an empty axis writes 1 from the host, which a stream being "
                        "captured into a graph cannot order; nothing was captured: fill the output with 1 outside the "
                        "capture (it does not change between replays), and leave this call out of it\n");
    for (int i = from; i < rec_n; i++) assert_true(rec_log[i].op == 'q');
    assert_true(out[0] == 5.0f);
    d.op = TILEC_OP_MEAN;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "mean over an empty axis writes NaN from the host"));
    d.stream = (void *)0xa000; /* not captured */
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_true(isnan(out[0]));
    d.op = TILEC_OP_PROD;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_true(out[2] == 1.0f);
    tilec_close(ctx);
}

/* tilec_reduce on the simulator runs under the context's budget: a low one stops the
 * call with TILEC_ERR_BUDGET and its message, the plan stays, and a raised one lets the
 * same call finish with the right result. */
static void test_sim_budget(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {100000}, .naxes = 1, .axes = {0}};
    static float in[100000];
    float out = 0;
    for (int i = 0; i < 100000; i++) in[i] = (float)(i % 3);
    /* fewer steps than the loop IR must spend on the elements: refused before it runs,
     * with that floor (sim_work_floor) */
    assert_int_equal(tilec_set_sim_budget(ctx, 200000), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, in, &out), TILEC_ERR_BUDGET);
    const char *m = strstr(tilec_diag_text(ctx), "takes more than 200000 thread-steps, its budget: it reads 100000 elements");
    unsigned long long rate = 0, floor = 0;
    if (!m || sscanf(m, "takes more than 200000 thread-steps, its budget: it reads 100000 elements, and its loop IR "
                        "(variant grid_rows) spends %llu thread-steps a read at least, %llu in all", &rate, &floor) != 2)
        fail_msg("no budget message:\n%s", tilec_diag_text(ctx));
    assert_true(rate >= 2 && floor > 200000);
    /* at the floor itself, fewer than the run takes: not refused, stopped on the way */
    assert_int_equal(tilec_set_sim_budget(ctx, floor), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, in, &out), TILEC_ERR_BUDGET);
    char want[128];
    snprintf(want, sizeof want, "the simulation stopped after %llu thread-steps (its budget)", floor);
    if (!strstr(tilec_diag_text(ctx), want)) fail_msg("no budget message:\n%s", tilec_diag_text(ctx));
    assert_int_equal(tilec_set_sim_budget(ctx, 0), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, in, &out), TILEC_OK);
    assert_true(out == 99999.0f); /* 33333 ones and 33333 twos: exact in f32 */
    tilec_close(ctx);
}

/* Runs d on the host data `in` (the input `shift` elements past an aligned address),
 * checks the result against the reference, and returns the output's bytes (malloc'd). */
static void *run_bits(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, int shift) {
    size_t es = tilec_dtype_size(d->dtype), eo = tilec_dtype_size(d->widen ? tilec_dtype_wide(d->dtype) : d->dtype);
    size_t in_bytes = (size_t)desc_elems(d, false) * es, out_bytes = (size_t)desc_elems(d, true) * eo;
    void *din, *dout, *out = malloc(out_bytes);
    assert_int_equal(tilec_mem_alloc(ctx, in_bytes + (size_t)shift * es, &din), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, out_bytes, &dout), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, (char *)din + (size_t)shift * es, in, in_bytes), TILEC_OK);
    void *second;
    tilec_status st = jit_reduce(ctx, d, (char *)din + (size_t)shift * es, dout, &second);
    if (st != TILEC_OK) fail_msg("tilec_reduce: %s\n%s", tilec_status_name(st), tilec_diag_text(ctx));
    assert_int_equal(tilec_mem_download(ctx, out, dout, out_bytes), TILEC_OK);
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    tilec_check_result r;
    assert_int_equal(jit_check(ctx, d, in, NULL, out, second, &r), TILEC_OK);
    free(second);
    if (!r.ok) fail_msg("%s %s: %lld mismatches, first [%lld] got %.9g want %.9g", tilec_op_name(d->op),
                        tilec_dtype_name(d->dtype), (long long)r.mismatches, (long long)r.first_bad, r.got, r.want);
    return out;
}

/* Batch invariance: row r of an M x N reduction has the bits of the same N values reduced
 * alone, as a 1-D array and as a 1 x N tensor, from an aligned address and from one
 * element past it, for every op and dtype and several M and N (pieces of one, several and
 * ragged; blocks in one CTA and over several). Values of mixed signs and magnitudes, so a
 * change of order changes the bits of float sums. */
static void test_batch_invariance(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const struct { int64_t n, m[3]; bool all_dtypes; } cases[] = {
        {7, {1, 3, 1000}, true},      {1000, {2, 37, 300}, true}, {4099, {2, 300, 0}, true},
        {65539, {3, 5, 0}, false},    {1 << 20, {2, 0, 0}, false},
    };
    int compared = 0, differ = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int dt = 0; dt < TILEC_DTYPE_COUNT; dt++) {
            if (!cases[c].all_dtypes && dt != TILEC_F32 && dt != TILEC_BF16) continue;
            for (int op = 0; op < TILEC_OP_COUNT; op++)
                for (int mi = 0; mi < 3 && cases[c].m[mi] && tilec_op_supports((tilec_op)op, (tilec_dtype)dt, false); mi++) {
                    int64_t n = cases[c].n, m = cases[c].m[mi];
                    size_t es = tilec_dtype_size((tilec_dtype)dt);
                    unsigned char *in = malloc((size_t)(m * n) * es);
                    uint64_t seed = (uint64_t)(c * 1000 + dt * 10 + op);
                    fill_buffer((tilec_dtype)dt, in, m * n, n, false, &seed);
                    tilec_reduce_desc batch = {.op = (tilec_op)op, .dtype = (tilec_dtype)dt, .rank = 2,
                                               .shape = {m, n}, .naxes = 1, .axes = {1}};
                    unsigned char *all = run_bits(ctx, &batch, in, 0);
                    int64_t rows[3] = {0, m / 2, m - 1};
                    for (int ri = 0; ri < 3; ri++) {
                        const unsigned char *row = in + (size_t)(rows[ri] * n) * es;
                        tilec_reduce_desc flat = {.op = (tilec_op)op, .dtype = (tilec_dtype)dt, .rank = 1,
                                                  .shape = {n}, .naxes = 1, .axes = {0}};
                        tilec_reduce_desc one = batch;
                        one.shape[0] = 1;
                        void *alone[3] = {run_bits(ctx, &flat, row, 0), run_bits(ctx, &one, row, 0),
                                          run_bits(ctx, &flat, row, 1)};
                        for (int w = 0; w < 3; w++) {
                            if (memcmp(alone[w], all + (size_t)rows[ri] * es, es))
                                fail_msg("%s %s: row %lld of %lld x %lld differs from the row alone (%s)", tilec_op_name(op),
                                         tilec_dtype_name(dt), (long long)rows[ri], (long long)m, (long long)n,
                                         w == 0 ? "1-D" : w == 1 ? "1 x N" : "1-D, one element past alignment");
                            free(alone[w]);
                        }
                        compared++;
                    }
                    /* the rows' sums differ from each other: the data would catch a mix-up */
                    if (m > 1 && memcmp(all, all + (size_t)(m - 1) * es, es)) differ++;
                    free(all);
                    free(in);
                }
        }
    assert_true(compared > 300);
    assert_true(differ > 100);
    tilec_close(ctx);
}

/* On the simulator a view that reaches outside the block tilec_mem_alloc gave for its
 * pointer is refused, with how far it reaches (a GPU would fault; the CPU would read
 * another object); inside the block, or in memory tilec did not allocate, it runs. */
static void test_views_outside_allocation(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    void *in, *out;
    assert_int_equal(tilec_mem_alloc(ctx, 100 * sizeof(float), &in), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 4 * sizeof(float), &out), TILEC_OK);
    float *f = in;
    int64_t rows[2] = {10, 1}, back[1] = {-1};
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {4, 10}, .naxes = 1, .axes = {1}, .strides = rows};
    expect_bad(ctx, &d, f + 65, out,
               "the input view reaches 20 bytes past the end of an allocation of 400 bytes; check its shape, strides and pointer");
    d = (tilec_reduce_desc){.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 1, .shape = {4}, .naxes = 1, .axes = {0}, .strides = back};
    expect_bad(ctx, &d, f + 1, out,
               "the input view reaches 8 bytes before the start of an allocation of 400 bytes; check its shape, strides and pointer");
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {8, 3}, .naxes = 1, .axes = {1}};
    expect_bad(ctx, &d, f, out, "the output reaches 16 bytes past the end of an allocation of 16 bytes; check its shape, strides and pointer");
    /* a pointer one past the end (a reversed view's [0]), or in the block's padding */
    int64_t all_back[1] = {-1};
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {100}, .naxes = 1, .axes = {0}, .strides = all_back};
    expect_bad(ctx, &d, f + 100, out,
               "the input view reaches 4 bytes past the end of an allocation of 400 bytes; check its shape, strides and pointer");
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {10}, .naxes = 1, .axes = {0}};
    expect_bad(ctx, &d, f + 101, out,
               "the input view reaches 44 bytes past the end of an allocation of 400 bytes; check its shape, strides and pointer");
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {4, 3}, .naxes = 1, .axes = {1}};
    expect_bad(ctx, &d, f, (float *)out + 4,
               "the output reaches 16 bytes past the end of an allocation of 16 bytes; check its shape, strides and pointer");
    int64_t wide[1] = {60};
    d = (tilec_reduce_desc){.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 1, .shape = {3}, .naxes = 1, .axes = {0}, .strides = wide};
    expect_bad(ctx, &d, f - 10, out, "the input view reaches 40 bytes before the start and 44 past the end of an allocation of "
                                     "400 bytes; check its shape, strides and pointer");
    /* the last element and the first one are inside: it runs */
    for (int i = 0; i < 100; i++) f[i] = (float)i;
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {4, 10}, .naxes = 1, .axes = {1}, .strides = rows};
    assert_int_equal(tilec_reduce(ctx, &d, f + 60, out), TILEC_OK);
    float got[4];
    assert_int_equal(tilec_mem_download(ctx, got, out, sizeof got), TILEC_OK);
    for (int r = 0; r < 4; r++) assert_true(got[r] == (float)(10 * (60 + 10 * r) + 45));
    d = (tilec_reduce_desc){.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 1, .shape = {4}, .naxes = 1, .axes = {0}, .strides = back};
    assert_int_equal(tilec_reduce(ctx, &d, f + 3, out), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, got, out, sizeof(float)), TILEC_OK);
    assert_true(got[0] == 3.0f);
    /* a freed block is forgotten: memory tilec did not allocate is taken on trust; freeing
     * it again, or freeing through another context, is refused and frees nothing */
    assert_int_equal(tilec_mem_free(ctx, out), TILEC_OK);
    assert_int_equal(tilec_mem_free(ctx, out), TILEC_ERR_INVALID_ARG);
    tilec_diag g;
    assert_int_equal(tilec_diag_get(ctx, 0, &g), TILEC_OK);
    assert_non_null(strstr(g.message, "is not memory this context allocated, or it was freed already; nothing was freed"));
    tilec_ctx *other = sim_ctx();
    assert_int_equal(tilec_mem_free(other, in), TILEC_ERR_INVALID_ARG);
    tilec_close(other);
    float host[8];
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {8, 3}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_reduce(ctx, &d, f, host), TILEC_OK);
    assert_true(host[7] == 21.0f + 22.0f + 23.0f);
    tilec_mem_free(ctx, in);
    tilec_close(ctx);
}

/* Strided views against a plain-loop reduction of the same elements (double for float
 * sums, within 1e-5 of the magnitude; exact for max / min and wrapping integer sums):
 * transposes, slices with steps, negative strides, broadcasts (stride 0), a view whose
 * memory starts below `in`. */
static double load_elem(tilec_dtype dt, const void *base, int64_t off) {
    const unsigned char *b = base;
    switch (dt) {
    case TILEC_F32: { float f; memcpy(&f, b + 4 * off, 4); return f; }
    case TILEC_F64: { double f; memcpy(&f, b + 8 * off, 8); return f; }
    case TILEC_I32: { int32_t v; memcpy(&v, b + 4 * off, 4); return v; }
    case TILEC_U32: { uint32_t v; memcpy(&v, b + 4 * off, 4); return v; }
    case TILEC_F16: { uint16_t h; memcpy(&h, b + 2 * off, 2); return tilec_f16_to_double(h); }
    default: { uint16_t h; memcpy(&h, b + 2 * off, 2); return tilec_bf16_to_double(h); }
    }
}

static void test_strided_views(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const struct { int rank; int64_t shape[4], strides[4]; int naxes; int axes[3]; const char *what; } views[] = {
        {2, {300, 200}, {1, 300}, 1, {1}, "a transpose, reduced over its last dim (columns of the memory)"},
        {2, {300, 200}, {1, 300}, 1, {0}, "a transpose, reduced over its first dim (rows of the memory)"},
        {3, {20, 30, 40}, {40, 800, 1}, 2, {0, 2}, "permuted axes (1, 0, 2)"},
        {2, {100, 70}, {400, 3}, 1, {1}, "a slice with steps [::2, ::3] of 200 x 210"},
        {2, {100, 70}, {-70, 1}, 1, {0}, "rows reversed"},
        {2, {100, 70}, {70, -1}, 1, {1}, "columns reversed, reduced"},
        {2, {100, 70}, {70, -1}, 1, {0}, "columns reversed, kept"},
        {3, {5, 100, 70}, {0, 70, 1}, 1, {0}, "a broadcast dim, reduced"},
        {3, {5, 100, 70}, {0, 70, 1}, 2, {1, 2}, "a broadcast dim, kept"},
        {2, {3000, 7}, {-7, 1}, 1, {0}, "columns, rows reversed, several CTAs"},
        {4, {4, 6, 5, 33}, {1, 4 * 5 * 33, 4 * 33, 4}, 2, {0, 2}, "channels last, two axes"},
    };
    static const tilec_dtype dts[] = {TILEC_F32, TILEC_BF16, TILEC_I32, TILEC_F64};
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
        for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
            for (int op = 0; op < TILEC_OP_COUNT; op++) {
                if (!tilec_op_supports((tilec_op)op, dts[t], false)) continue;
                tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = dts[t], .rank = views[v].rank, .naxes = views[v].naxes,
                                       .strides = views[v].strides};
                memcpy(d.shape, views[v].shape, sizeof views[v].shape);
                memcpy(d.axes, views[v].axes, sizeof views[v].axes);
                /* the memory the view reaches, and element [0, ...]'s offset in it */
                int64_t lo = 0, hi = 0;
                for (int i = 0; i < d.rank; i++) {
                    int64_t r = (d.shape[i] - 1) * views[v].strides[i];
                    if (r < 0) lo += r;
                    else hi += r;
                }
                int64_t span = hi - lo + 1, origin = -lo;
                size_t es = tilec_dtype_size(d.dtype);
                unsigned char *mem = malloc((size_t)span * es);
                uint64_t seed = v * 100 + t * 10 + (uint64_t)op;
                (op == TILEC_OP_PROD ? fill_factors : fill_buffer)(d.dtype, mem, span, span, false, &seed);
                void *dmem, *dout;
                int64_t nout = desc_elems(&d, true);
                assert_int_equal(tilec_mem_alloc(ctx, (size_t)span * es, &dmem), TILEC_OK);
                assert_int_equal(tilec_mem_alloc(ctx, (size_t)nout * es, &dout), TILEC_OK);
                assert_int_equal(tilec_mem_upload(ctx, dmem, mem, (size_t)span * es), TILEC_OK);
                tilec_status st = jit_reduce(ctx, &d, (char *)dmem + origin * (int64_t)es, dout, NULL);
                if (st != TILEC_OK) fail_msg("%s: %s\n%s", views[v].what, tilec_status_name(st), tilec_diag_text(ctx));
                unsigned char *got = malloc((size_t)nout * es);
                assert_int_equal(tilec_mem_download(ctx, got, dout, (size_t)nout * es), TILEC_OK);
                /* plain loops: every element of the view, its output index row-major over the kept dims */
                double *want = malloc((size_t)nout * sizeof *want), *mag = calloc((size_t)nout, sizeof *mag),
                       *sq = calloc((size_t)nout, sizeof *sq);
                uint32_t *wrap = calloc((size_t)nout, sizeof *wrap); /* an i32 sum's or product's bits */
                int64_t *count = calloc((size_t)nout, sizeof *count);
                bool *seen = calloc((size_t)nout, 1);
                int64_t total = desc_elems(&d, false), idx[4] = {0};
                bool red[4] = {0};
                for (int i = 0; i < d.naxes; i++) red[d.axes[i]] = true;
                for (int64_t e = 0; e < total; e++) {
                    int64_t rest = e, off = origin, o = 0;
                    for (int i = d.rank - 1; i >= 0; i--) {
                        idx[i] = rest % d.shape[i];
                        rest /= d.shape[i];
                    }
                    for (int i = 0; i < d.rank; i++) {
                        off += idx[i] * views[v].strides[i];
                        if (!red[i]) o = o * d.shape[i] + idx[i];
                    }
                    double raw = load_elem(d.dtype, mem, off), x = plain_lift(op, raw);
                    uint32_t xi = (uint32_t)(int32_t)raw; /* an i32's bits, or its square's, wrapped */
                    if (op == TILEC_OP_SUMSQ) xi *= xi;
                    want[o] = seen[o] ? plain_op(op, want[o], x) : x;
                    wrap[o] = !seen[o] ? xi : plain_wrap(op, wrap[o], xi);
                    mag[o] += fabs(x);
                    sq[o] += raw * raw;
                    count[o]++;
                    seen[o] = true;
                }
                for (int64_t o = 0; o < nout; o++) {
                    double g = load_elem(d.dtype, got, o);
                    bool ok;
                    double u = d.dtype == TILEC_BF16 ? 0x1p-7 : 0x1p-23; /* a unit of the stored type (bf16), or a rounding of f32 */
                    double tol = d.dtype == TILEC_BF16 ? 1e-2 : 1e-5;
                    want[o] = plain_finish(op, want[o], sq[o], count[o]);
                    if (d.dtype == TILEC_I32 && op != TILEC_OP_MAX && op != TILEC_OP_MIN && ir_op(op)->key == IR_KEY_NONE)
                        ok = (uint32_t)(int32_t)g == wrap[o];
                    else if (op == TILEC_OP_SUM || op == TILEC_OP_SUMSQ) ok = fabs(g - want[o]) <= tol * mag[o] + 1e-30;
                    else if (op == TILEC_OP_MEAN) ok = fabs(g - want[o]) <= tol * mag[o] / (double)count[o] + 1e-30;
                    else if (op == TILEC_OP_NORM2) ok = fabs(g - want[o]) <= (u + tol) * want[o];
                    else if (op == TILEC_OP_PROD) ok = fabs(g - want[o]) <= (u + (double)count[o] * 0x1p-23) * fabs(want[o]);
                    else if (op == TILEC_OP_LOGSUMEXP) ok = fabs(g - want[o]) <= u * fabs(want[o]) + 4.0 * (double)count[o] * 0x1p-24;
                    else if (op == TILEC_OP_VAR || op == TILEC_OP_STD) { /* a unit of the stored type, and what the
                                                                          plain loops' sum of squares cancels: about n roundings of it */
                        double slack = 4.0 * (double)count[o] * 0x1p-53 * sq[o] / (double)(count[o] - 1);
                        ok = isnan(want[o]) ? isnan(g) : fabs(g - want[o]) <= 2 * u * fabs(want[o]) + (op == TILEC_OP_STD ? sqrt(slack) : slack);
                    }
                    else ok = g == want[o];
                    if (!ok)
                        fail_msg("%s, %s %s: output %lld is %.9g, the plain loops give %.9g", views[v].what,
                                 tilec_op_name(op), tilec_dtype_name(d.dtype), (long long)o, g, want[o]);
                }
                free(want), free(mag), free(sq), free(wrap), free(count), free(seen), free(got), free(mem);
                tilec_mem_free(ctx, dmem);
                tilec_mem_free(ctx, dout);
            }
    /* a permuted view reduces as the memory it reads: the transpose over its first dim is
     * the dense rows of that memory, bit for bit */
    tilec_reduce_desc t = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {300, 200}, .naxes = 1, .axes = {0},
                           .strides = (const int64_t[]){1, 300}};
    tilec_reduce_desc rows = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {200, 300}, .naxes = 1, .axes = {1}};
    float *in = malloc(60000 * 4);
    uint64_t seed = 5;
    fill_buffer(TILEC_F32, in, 60000, 300, false, &seed);
    void *a = run_bits(ctx, &t, in, 0), *b = run_bits(ctx, &rows, in, 0);
    assert_memory_equal(a, b, 200 * 4);
    free(a), free(b), free(in);
    tilec_close(ctx);
}

/* widen: the output in the wider dtype, accumulated in it. Expected values written out:
 * an i32 sum past 2^31, u32 sums past 2^32, f16 / bf16 sums of ones past their
 * integers, an f32 sum whose ones f32 would lose; then every dtype and op, rows and
 * columns, against the reference. */
static void test_output_dtypes(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    void *din, *dout;
    assert_int_equal(tilec_mem_alloc(ctx, 1 << 20, &din), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 1 << 16, &dout), TILEC_OK);
    /* i32: 1000 x 2^30 = 2^30 * 1000, and wrapped without widen */
    int32_t i32[1000];
    for (int i = 0; i < 1000; i++) i32[i] = 1 << 30;
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_I32, .rank = 1, .shape = {1000}, .naxes = 1, .axes = {0}, .widen = true};
    int64_t i64 = 0;
    assert_int_equal(tilec_mem_upload(ctx, din, i32, sizeof i32), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &i64, dout, 8), TILEC_OK);
    assert_true(i64 == 1073741824000LL);
    d.widen = false;
    int32_t wrapped = 1;
    assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &wrapped, dout, 4), TILEC_OK);
    assert_int_equal(wrapped, 0); /* 1000 * 2^30 = 250 * 2^32 */
    /* u32: 3 x (2^32 - 1) */
    uint32_t u32[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_U32, .rank = 1, .shape = {3}, .naxes = 1, .axes = {0}, .widen = true};
    assert_int_equal(tilec_mem_upload(ctx, din, u32, sizeof u32), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &i64, dout, 8), TILEC_OK);
    assert_true(i64 == 12884901885LL);
    /* f16: 2049 ones is 2049 in f32 (f16 would store 2048); bf16: 257 ones is 257 */
    static const struct { tilec_dtype dt; int n; uint16_t one; float want; } halves[] = {
        {TILEC_F16, 2049, 0x3c00, 2049.0f}, {TILEC_BF16, 257, 0x3f80, 257.0f}};
    for (int h = 0; h < 2; h++) {
        uint16_t ones[2049];
        for (int i = 0; i < halves[h].n; i++) ones[i] = halves[h].one;
        d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = halves[h].dt, .rank = 2, .shape = {1, halves[h].n}, .naxes = 1,
                                .axes = {1}, .widen = true};
        float f = 0;
        assert_int_equal(tilec_mem_upload(ctx, din, ones, (size_t)halves[h].n * 2), TILEC_OK);
        assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_OK);
        assert_int_equal(tilec_mem_download(ctx, &f, dout, 4), TILEC_OK);
        assert_true(f == halves[h].want);
    }
    /* f32 -> f64: 2^24 and then 4096 ones: f64 keeps them all */
    static float f32[4097];
    f32[0] = 16777216.0f;
    for (int i = 1; i < 4097; i++) f32[i] = 1.0f;
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {4097}, .naxes = 1, .axes = {0}, .widen = true};
    double f64 = 0;
    assert_int_equal(tilec_mem_upload(ctx, din, f32, sizeof f32), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &f64, dout, 8), TILEC_OK);
    assert_true(f64 == 16781312.0);
    /* where the format decides, the bits written out: f16 -> f32 sums of [+inf, 1] = +inf,
     * [-0, -0] = -0; a NaN of any payload and sign, summed or taken by max, is stored as
     * the default quiet NaN 0x7fc00000; i32 -> i64 [INT32_MIN, INT32_MIN] = -2^32 */
    static const struct { tilec_op op; uint16_t a, b; uint32_t want; } specials[] = {
        {TILEC_OP_SUM, 0x7c00, 0x3c00, 0x7f800000u}, {TILEC_OP_SUM, 0x8000, 0x8000, 0x80000000u},
        {TILEC_OP_SUM, 0xfe01, 0x3c00, 0x7fc00000u}, {TILEC_OP_MAX, 0x3c00, 0xfd55, 0x7fc00000u},
        {TILEC_OP_MIN, 0x8000, 0x0000, 0x80000000u}};
    for (int i = 0; i < 5; i++) {
        uint16_t two[2] = {specials[i].a, specials[i].b};
        uint32_t bits = 0;
        d = (tilec_reduce_desc){.op = specials[i].op, .dtype = TILEC_F16, .rank = 1, .shape = {2}, .naxes = 1, .axes = {0},
                                .widen = true};
        assert_int_equal(tilec_mem_upload(ctx, din, two, 4), TILEC_OK);
        assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_OK);
        assert_int_equal(tilec_mem_download(ctx, &bits, dout, 4), TILEC_OK);
        if (bits != specials[i].want) fail_msg("special %d: 0x%08x, want 0x%08x", i, bits, specials[i].want);
    }
    int32_t mins[2] = {INT32_MIN, INT32_MIN};
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_I32, .rank = 1, .shape = {2}, .naxes = 1, .axes = {0}, .widen = true};
    assert_int_equal(tilec_mem_upload(ctx, din, mins, sizeof mins), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &i64, dout, 8), TILEC_OK);
    assert_true(i64 == -4294967296LL);
    /* an f32 sum with a NaN of another payload and the sign set, not widened: 0x7fc00000 */
    uint32_t nanin[3] = {0x3f800000u, 0xffc12345u, 0x40000000u}, got = 0;
    d = (tilec_reduce_desc){.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {3}, .naxes = 1, .axes = {0}};
    assert_int_equal(tilec_mem_upload(ctx, din, nanin, sizeof nanin), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, din, dout), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &got, dout, 4), TILEC_OK);
    assert_int_equal(got, 0x7fc00000u);
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    /* every dtype and op, rows and columns and several CTAs, against the reference */
    static const struct { int64_t shape[2]; int axis; } shp[] = {{{37, 4099}, 1}, {{3, 70001}, 1}, {{4099, 40}, 0}};
    for (int dt = 0; dt < TILEC_DTYPE_COUNT; dt++)
        for (int op = 0; op < TILEC_OP_COUNT; op++)
            for (int i = 0; i < 3 && tilec_op_supports((tilec_op)op, (tilec_dtype)dt, false); i++) {
                tilec_reduce_desc w = {.op = (tilec_op)op, .dtype = (tilec_dtype)dt, .rank = 2, .naxes = 1,
                                       .axes = {shp[i].axis}, .widen = true};
                memcpy(w.shape, shp[i].shape, sizeof shp[i].shape);
                int64_t n = desc_elems(&w, false);
                void *in = malloc((size_t)n * tilec_dtype_size(w.dtype));
                uint64_t seed = (uint64_t)(dt * 10 + op + i);
                fill_buffer(w.dtype, in, n, w.shape[1], true, &seed);
                free(run_bits(ctx, &w, in, i == 2));
                free(in);
            }
    tilec_close(ctx);
}

/* A sum of nothing but -0.0 is -0.0 (IEEE 754; numpy starts from +0.0 and gives +0.0):
 * the identity of a float sum is -0.0, so padding a tree or starting a fold with it
 * changes no bit. The expected bits are written here. Rows, blocks over CTAs, columns. */
static void test_negative_zero(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const struct { int64_t shape[2]; int axis; } cases[] = {{{3, 5000}, 1}, {{1, 70001}, 1}, {{5000, 3}, 0}, {{37, 7}, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .naxes = 1, .axes = {cases[c].axis}};
        memcpy(d.shape, cases[c].shape, sizeof cases[c].shape);
        int64_t n = desc_elems(&d, false), m = desc_elems(&d, true);
        float *in = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) in[i] = -0.0f;
        uint32_t *out = run_bits(ctx, &d, in, (int)c % 2);
        for (int64_t i = 0; i < m; i++)
            if (out[i] != 0x80000000u) fail_msg("case %zu: output %lld is 0x%08x, not -0.0", c, (long long)i, out[i]);
        in[n / 2] = 0.0f; /* one +0.0: the sum of its output is +0.0 */
        free(out);
        out = run_bits(ctx, &d, in, 0);
        int64_t which = cases[c].axis == 1 ? (n / 2) / d.shape[1] : (n / 2) % d.shape[1];
        assert_int_equal(out[which], 0);
        free(out);
        free(in);
    }
    tilec_close(ctx);
}

/* argmax / argmin against plain loops that know only the definition (docs/format.md): for
 * each output the elements in the order of their flat index over the reduced dims
 * (row-major), the first one strictly better than every earlier one. Values from a small
 * alphabet — ties everywhere, -0 and +0, ±inf, integer extremes, NaN in some rows and
 * every element NaN in others — on dense shapes for each grid path and on strided views
 * (reversed, permuted, broadcast), both NaN policies, i64 and i32 indices. */
static bool plain_better(tilec_op op, tilec_nan nan, double x, double best) {
    bool max = op == TILEC_OP_ARGMAX;
    if (isnan(best)) return nan == TILEC_NAN_IGNORE && !isnan(x); /* a number beats an ignored NaN */
    if (isnan(x)) return nan == TILEC_NAN_PROPAGATE;
    if (x == 0 && best == 0) return max ? signbit(best) && !signbit(x) : signbit(x) && !signbit(best);
    return max ? x > best : x < best;
}

static void test_argmax(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const struct { int rank; int64_t shape[3]; int64_t strides[3]; int naxes; int axes[2]; } cases[] = {
        {1, {(1 << 20) + 3}, {0}, 1, {0}},         /* one output, blocks over CTAs */
        {2, {3, 70001}, {0}, 1, {1}},              /* long rows, element loads */
        {2, {37, 8200}, {0}, 1, {1}},              /* rows over several CTAs */
        {2, {1001, 32}, {0}, 1, {1}},              /* short rows in flight */
        {2, {1000, 37}, {0}, 1, {1}},
        {3, {40, 7, 300}, {0}, 2, {0, 2}},         /* two reduced axes around a kept one */
        {2, {4099, 8}, {0}, 1, {0}},               /* columns */
        {3, {70, 3, 9}, {0}, 2, {0, 1}},           /* two reduced axes over columns */
        {2, {3000, 7}, {-7, 1}, 1, {0}},           /* columns, rows reversed */
        {2, {300, 200}, {1, 300}, 1, {1}},         /* a transpose: rows read as columns */
        {3, {6, 50, 40}, {40, 240, 1}, 2, {0, 1}}, /* reduced dims out of memory order */
        {2, {64, 500}, {0, 1}, 1, {0}},            /* a broadcast reduced dim: every index ties */
        {2, {5, 3001}, {3001, -1}, 1, {1}},        /* a reversed row */
    };
    static const tilec_dtype dts[] = {TILEC_F32, TILEC_BF16, TILEC_F16, TILEC_I32, TILEC_U32};
    static const double floats[] = {-2, -0.0, 0.0, 1, 3, INFINITY, -INFINITY};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++)
            for (int v = 0; v < 4; v++) {
                bool flt = tilec_dtype_size(dts[t]) == 2 || dts[t] == TILEC_F32;
                tilec_reduce_desc d = {.op = v & 1 ? TILEC_OP_ARGMIN : TILEC_OP_ARGMAX, .dtype = dts[t], .rank = cases[c].rank,
                                       .naxes = cases[c].naxes, .nan = flt && (v & 2) ? TILEC_NAN_IGNORE : TILEC_NAN_PROPAGATE,
                                       .index_i32 = (v & 2) != 0, .strides = cases[c].strides[0] || cases[c].strides[1] ? cases[c].strides : NULL};
                memcpy(d.shape, cases[c].shape, sizeof cases[c].shape);
                memcpy(d.axes, cases[c].axes, sizeof cases[c].axes);
                int64_t lo = 0, hi = 0, dense = 1;
                for (int i = d.rank - 1; i >= 0; i--) {
                    int64_t st = d.strides ? d.strides[i] : dense, r = (d.shape[i] - 1) * st;
                    dense *= d.shape[i];
                    if (r < 0) lo += r;
                    else hi += r;
                }
                int64_t span = hi - lo + 1, origin = -lo, nout = desc_elems(&d, true);
                size_t es = tilec_dtype_size(d.dtype);
                unsigned char *mem = malloc((size_t)span * es);
                uint64_t seed = c * 1000 + t * 10 + (uint64_t)v;
                int64_t row = d.shape[d.rank - 1];
                for (int64_t e = 0; e < span; e++) {
                    uint64_t r = rng_next(&seed);
                    bool nan_row = (e / row) % 5 == 1, all_nan = (e / row) % 5 == 3 && d.rank > 1;
                    double f = all_nan || (nan_row && r % 97 == 0) ? NAN : floats[r % 7];
                    uint16_t h;
                    float f32;
                    int32_t i32 = (int32_t)((const int32_t[]){INT32_MIN, -1, 0, 5, INT32_MAX})[r % 5];
                    uint32_t u32 = (const uint32_t[]){0, 1, 7, UINT32_MAX, 0x80000000u}[r % 5];
                    switch (d.dtype) {
                    case TILEC_F16: h = tilec_f16_from_double(f); memcpy(mem + 2 * e, &h, 2); break;
                    case TILEC_BF16: h = tilec_bf16_from_double(f); memcpy(mem + 2 * e, &h, 2); break;
                    case TILEC_F32: f32 = (float)f; memcpy(mem + 4 * e, &f32, 4); break;
                    case TILEC_I32: memcpy(mem + 4 * e, &i32, 4); break;
                    default: memcpy(mem + 4 * e, &u32, 4); break;
                    }
                }
                void *dmem, *dout;
                assert_int_equal(tilec_mem_alloc(ctx, (size_t)span * es, &dmem), TILEC_OK);
                assert_int_equal(tilec_mem_alloc(ctx, (size_t)nout * es, &dout), TILEC_OK);
                assert_int_equal(tilec_mem_upload(ctx, dmem, mem, (size_t)span * es), TILEC_OK);
                void *index;
                tilec_status st = jit_reduce(ctx, &d, (char *)dmem + origin * (int64_t)es, dout, &index);
                if (st != TILEC_OK) fail_msg("case %zu: %s\n%s", c, tilec_status_name(st), tilec_diag_text(ctx));
                unsigned char *got = malloc((size_t)nout * es);
                assert_int_equal(tilec_mem_download(ctx, got, dout, (size_t)nout * es), TILEC_OK);
                /* plain loops: outputs row-major over the kept dims, elements row-major over the reduced ones */
                bool red[3] = {0};
                for (int i = 0; i < d.naxes; i++) red[d.axes[i]] = true;
                int64_t rlen = 1;
                for (int i = 0; i < d.rank; i++)
                    if (red[i]) rlen *= d.shape[i];
                for (int64_t o = 0; o < nout; o++) {
                    double best = 0;
                    int64_t at = -1;
                    for (int64_t r = 0; r < rlen; r++) {
                        int64_t ko = o, ro = r, off = origin, stride = 1;
                        for (int i = d.rank - 1; i >= 0; i--) {
                            int64_t n = d.shape[i], ci;
                            if (red[i]) ci = ro % n, ro /= n;
                            else ci = ko % n, ko /= n;
                            off += ci * (d.strides ? d.strides[i] : stride);
                            stride *= n;
                        }
                        double x = load_elem(d.dtype, mem, off);
                        if (at < 0 || plain_better(d.op, d.nan, x, best)) best = x, at = r;
                    }
                    int64_t gi = d.index_i32 ? ((int32_t *)index)[o] : ((int64_t *)index)[o];
                    double g = load_elem(d.dtype, got, o);
                    bool same = isnan(best) ? isnan(g) : g == best && signbit(g) == signbit(best);
                    if (gi != at || !same)
                        fail_msg("case %zu, %s %s nan=%s: output %lld is (%g, %lld), the plain loops give (%g, %lld)", c,
                                 tilec_op_name(d.op), tilec_dtype_name(d.dtype), tilec_nan_name(d.nan), (long long)o, g,
                                 (long long)gi, best, (long long)at);
                }
                free(index), free(got), free(mem);
                tilec_mem_free(ctx, dmem);
                tilec_mem_free(ctx, dout);
            }
    tilec_close(ctx);
}

/* Device invariance: the same reductions planned for simulated GPUs of 1, 4, 7 and 132
 * multiprocessors (TILEC_SIM_SMS) launch different grids and give the same bits. */
static void test_device_invariance(void **state) {
    (void)state;
    static const struct { int rank; int64_t shape[3]; int naxes; int axes[2]; } cases[] = {
        {1, {(1 << 20) + 3}, 1, {0}}, {2, {3, 70001}, 1, {1}}, {2, {64, 8200}, 1, {1}}, {2, {4099, 40}, 1, {0}},
        {3, {64, 30, 900}, 2, {0, 2}}, {2, {20000, 8}, 1, {0}},
        {2, {20000, 128}, 1, {0}}, /* at 132 multiprocessors: partials in two levels */
    };
    static const char *const sms[] = {"4", "1", "7", "132"};
    int launches_differ = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int dt = TILEC_F16; dt <= TILEC_F64; dt++) {
            tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = (tilec_dtype)dt, .rank = cases[c].rank,
                                   .naxes = cases[c].naxes};
            memcpy(d.shape, cases[c].shape, sizeof cases[c].shape);
            memcpy(d.axes, cases[c].axes, sizeof cases[c].axes);
            size_t es = tilec_dtype_size(d.dtype), out_bytes = (size_t)desc_elems(&d, true) * es;
            int64_t n = desc_elems(&d, false);
            void *in = malloc((size_t)n * es), *first = NULL;
            uint64_t seed = c * 7 + (uint64_t)dt;
            fill_buffer(d.dtype, in, n, d.shape[d.rank - 1], false, &seed);
            long long grids[4];
            for (int i = 0; i < 4; i++) {
                setenv("TILEC_SIM_SMS", sms[i], 1);
                tilec_ctx *ctx = sim_ctx();
                char *text;
                assert_int_equal(tilec_reduce_explain(ctx, &d, &text), TILEC_OK);
                const char *g = strstr(text, ", grid ");
                assert_non_null(g);
                grids[i] = atoll(g + 7);
                tilec_free(text);
                void *out = run_bits(ctx, &d, in, i % 2);
                if (!first) first = out;
                else {
                    if (memcmp(first, out, out_bytes))
                        fail_msg("case %zu %s: %s multiprocessors give other bits than 4", c, tilec_dtype_name(d.dtype), sms[i]);
                    free(out);
                }
                tilec_close(ctx);
            }
            unsetenv("TILEC_SIM_SMS");
            if (grids[1] != grids[3]) launches_differ++;
            free(first);
            free(in);
        }
    assert_true(launches_differ >= 8); /* the test compares different launches */
    setenv("TILEC_SIM_SMS", "0", 1);
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "TILEC_SIM_SMS=0 is not a multiprocessor count: give 1 to 1024"));
    tilec_close(ctx);
    unsetenv("TILEC_SIM_SMS");
}

/* The suite runs as three meson tests so that the two long parts (each several minutes on
 * the simulator, several times that under the sanitizers) run beside each other and each
 * has its own time limit: `test_jit strategies`, `test_jit batch`, `test_jit rest`; no
 * argument runs every test. */
int main(int argc, char **argv) {
    const struct CMUnitTest strategies[] = {
        cmocka_unit_test(test_dtypes_and_strategies),
    };
    const struct CMUnitTest batch[] = {
        cmocka_unit_test(test_batch_invariance),
    };
    const struct CMUnitTest rest[] = {
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_long_finish_gathers),
        cmocka_unit_test(test_sim_budget),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_backends),
        cmocka_unit_test(test_determinism_and_cache),
        cmocka_unit_test(test_every_axis_set),
        cmocka_unit_test(test_nan_ignore_all_nan),
        cmocka_unit_test(test_scratch_per_stream),
        cmocka_unit_test(test_scratch_bounded),
        cmocka_unit_test(test_scratch_per_thread_stream),
        cmocka_unit_test(test_prepare),
        cmocka_unit_test(test_capture_unprepared),
        cmocka_unit_test(test_capture_after_calls),
        cmocka_unit_test(test_capture_keeps_one_more),
        cmocka_unit_test(test_capture_empty),
        cmocka_unit_test(test_device_invariance),
        cmocka_unit_test(test_negative_zero),
        cmocka_unit_test(test_argmax),
        cmocka_unit_test(test_strided_views),
        cmocka_unit_test(test_views_outside_allocation),
        cmocka_unit_test(test_output_dtypes),
    };
    const struct { const char *name, *group; const struct CMUnitTest *tests; size_t n; } parts[] = {
        {"strategies", "jit strategies", strategies, sizeof strategies / sizeof strategies[0]},
        {"batch", "jit batch", batch, sizeof batch / sizeof batch[0]},
        {"rest", "jit", rest, sizeof rest / sizeof rest[0]},
    };
    const char *part = argc > 1 ? argv[1] : NULL;
    int failed = 0, ran = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!part || !strcmp(part, parts[i].name)) {
            failed += _cmocka_run_group_tests(parts[i].group, parts[i].tests, parts[i].n, NULL, NULL);
            ran++;
        }
    if (!ran) {
        fprintf(stderr, "test_jit: unknown part '%s': give strategies, batch or rest, or nothing for all\n", part);
        return 2;
    }
    return failed;
}
