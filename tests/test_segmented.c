/*
 * test_segmented.c — tilec_reduce_segmented on the simulator (which runs the lowered loop
 * IR, so every worker layout is proven without a GPU), and its CUDA and HIP source
 * compiled by NVRTC / hiprtc where they are installed.
 *
 * The oracles: each segment against tilec_reduce of a dense [1, len] tensor of its
 * elements, bit for bit (the documented promise: the fold order depends on the length
 * only); and, independently of tilec, exact values computed here for the ops whose result
 * is exact on the data used (max, min, argmax, argmin, aminmax of anything, integer sums
 * and products, float sums of small integers), and double-precision values with a
 * tolerance for the others. Every op, f32 / f64 / i32 / bf16 (and f16, u32, i64 where the
 * op takes them), NaN, ±inf and ±0, random offsets with empty segments, one segment
 * covering all, offsets equal to the dense rows, int32 offsets, rows of several segments,
 * the three worker layouts (a group a segment, a CTA a segment, CTAs a segment), bad
 * offsets (falling, negative, past the end) and empty segments of max reported by
 * tilec_synchronize, and bad arguments.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../src/runtime/rtc.h"
#include "../src/codegen/codegen.h"
#include "../src/dispatch/dispatch.h"
#include "../src/runtime/runtime.h"
#include "../src/runtime/sim.h"

static tilec_ctx *sim_ctx(void) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    return ctx;
}

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Element i of a buffer of dtype t as a double (16-bit floats decoded independently of
 * tilec's converters: the bits shifted into an f32 for bf16). */
static double get(tilec_dtype t, const void *b, int64_t i) {
    switch (t) {
    case TILEC_F32: return ((const float *)b)[i];
    case TILEC_F64: return ((const double *)b)[i];
    case TILEC_I32: return ((const int32_t *)b)[i];
    case TILEC_U32: return ((const uint32_t *)b)[i];
    case TILEC_I64: return (double)((const int64_t *)b)[i];
    case TILEC_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)b)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case TILEC_F16: return tilec_f16_to_double(((const uint16_t *)b)[i]);
    default: return 0;
    }
}

/* Sets element i to x (exactly representable in t: the test's values are). */
static void put(tilec_dtype t, void *b, int64_t i, double x) {
    switch (t) {
    case TILEC_F32: ((float *)b)[i] = (float)x; break;
    case TILEC_F64: ((double *)b)[i] = x; break;
    case TILEC_I32: ((int32_t *)b)[i] = (int32_t)x; break;
    case TILEC_U32: ((uint32_t *)b)[i] = (uint32_t)x; break;
    case TILEC_I64: ((int64_t *)b)[i] = (int64_t)x; break;
    case TILEC_BF16: {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, 4);
        ((uint16_t *)b)[i] = (uint16_t)(u >> 16); /* exact for the values used */
        break;
    }
    case TILEC_F16: ((uint16_t *)b)[i] = tilec_f16_from_double(x); break;
    default: break;
    }
}

static bool is_float(tilec_dtype t) { return t == TILEC_F32 || t == TILEC_F64 || t == TILEC_BF16 || t == TILEC_F16; }

/* Fills n elements: small integers (sums of them are exact in every float type used, up
 * to 2^8 elements of bf16); with specials & 2, real values of many magnitudes instead (the
 * float sums round: the fold order shows in their bits); with specials & 1, NaN, ±inf and
 * ±0 mixed in (floats). prod gets ±1, ±2 and 1s, so products stay exact. */
static void fill(tilec_dtype t, tilec_op op, void *b, int64_t n, int specials, uint64_t *s) {
    for (int64_t i = 0; i < n; i++) {
        double x = (double)(int)(rnd(s) % 9) - 4;
        if (op == TILEC_OP_PROD) x = (rnd(s) % 4 == 0) ? ((rnd(s) & 1) ? -2.0 : 2.0) : ((rnd(s) % 5 == 0) ? -1.0 : 1.0);
        if (op == TILEC_OP_LOGSUMEXP) x = x / 4;
        if (t == TILEC_U32 && x < 0) x = -x;
        if ((specials & 2) && is_float(t) && op != TILEC_OP_PROD) /* real values: float sums round */
            x = ldexp((double)(rnd(s) >> 11) / 9007199254740992.0 - 0.5, (int)(rnd(s) % 12) - 4);
        if ((specials & 1) && is_float(t)) {
            unsigned r = (unsigned)(rnd(s) % 97);
            if (r == 0) x = NAN;
            else if (r == 1) x = INFINITY;
            else if (r == 2) x = -INFINITY;
            else if (r == 3) x = -0.0;
            else if (r == 4) x = 0.0;
        }
        put(t, b, i, x);
    }
}

typedef struct run {
    tilec_op op;
    tilec_dtype dtype;
    tilec_nan nan;
    int64_t rows, extent, nsegs;
    const int64_t *offsets;
    bool i32;
    bool accumulate;
} run;

static tilec_dtype out_dt(const run *r) { return r->dtype; }
static tilec_dtype out2_dt(const run *r) { return tilec_op_second_dtype(r->op, r->dtype); }

static char sync_msg[2048]; /* tilec_synchronize's diagnostics in seg_run */

/* The segmented reduction of host data `in` on the simulator; out (and out2) host
 * buffers of rows * nsegs elements; before: the outputs' contents before the call (for
 * accumulate and to see what is left unwritten). Returns tilec_synchronize's status; the
 * call's own must be OK. */
static tilec_status seg_run(tilec_ctx *ctx, const run *r, const void *in, void *out, void *out2, const void *before) {
    size_t es = tilec_dtype_size(r->dtype), eo = tilec_dtype_size(out_dt(r));
    bool two = tilec_op_outputs(r->op) == 2;
    size_t e2 = two ? tilec_dtype_size(out2_dt(r)) : 0;
    int64_t outs = r->rows * r->nsegs;
    void *din, *dout, *dout2 = NULL, *doff;
    assert_int_equal(tilec_mem_alloc(ctx, (size_t)(r->rows * r->extent) * es + 1, &din), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, (size_t)outs * eo + 1, &dout), TILEC_OK);
    if (two) assert_int_equal(tilec_mem_alloc(ctx, (size_t)outs * e2 + 1, &dout2), TILEC_OK);
    size_t ob = (size_t)(r->nsegs + 1) * (r->i32 ? 4 : 8);
    assert_int_equal(tilec_mem_alloc(ctx, ob, &doff), TILEC_OK);
    void *off = malloc(ob);
    for (int64_t s = 0; s <= r->nsegs; s++) {
        if (r->i32) ((int32_t *)off)[s] = (int32_t)r->offsets[s];
        else ((int64_t *)off)[s] = r->offsets[s];
    }
    assert_int_equal(tilec_mem_upload(ctx, doff, off, ob), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, din, in, (size_t)(r->rows * r->extent) * es), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, dout, before, (size_t)outs * eo), TILEC_OK);
    if (two) assert_int_equal(tilec_mem_upload(ctx, dout2, before, (size_t)outs * e2 < (size_t)outs * eo ? (size_t)outs * e2 : (size_t)outs * eo), TILEC_OK);
    tilec_reduce_desc d = {.op = r->op, .dtype = r->dtype, .rank = 2, .shape = {r->rows, r->extent}, .naxes = 1,
                           .axes = {1}, .nan = r->nan, .accumulate = r->accumulate, .out2 = dout2};
    tilec_status st = tilec_reduce_segmented(ctx, &d, doff, r->i32, r->nsegs, din, dout);
    if (st != TILEC_OK) fail_msg("tilec_reduce_segmented: %s\n%s", tilec_status_name(st), tilec_diag_text(ctx));
    tilec_status sync = tilec_synchronize(ctx);
    snprintf(sync_msg, sizeof sync_msg, "%s", tilec_diag_text(ctx)); /* the calls below clear it */
    assert_int_equal(tilec_mem_download(ctx, out, dout, (size_t)outs * eo), TILEC_OK);
    if (two) assert_int_equal(tilec_mem_download(ctx, out2, dout2, (size_t)outs * e2), TILEC_OK);
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    tilec_mem_free(ctx, dout2);
    tilec_mem_free(ctx, doff);
    free(off);
    return sync;
}

/* tilec_reduce of the dense [1, n] tensor `in` (n may be 0): out, out2 (one element). */
static tilec_status dense_run(tilec_ctx *ctx, const run *r, const void *in, int64_t n, void *out, void *out2) {
    size_t es = tilec_dtype_size(r->dtype), eo = tilec_dtype_size(out_dt(r));
    bool two = tilec_op_outputs(r->op) == 2;
    void *din, *dout, *dout2 = NULL;
    assert_int_equal(tilec_mem_alloc(ctx, (size_t)n * es + 1, &din), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 8, &dout), TILEC_OK);
    if (two) assert_int_equal(tilec_mem_alloc(ctx, 8, &dout2), TILEC_OK);
    if (n) assert_int_equal(tilec_mem_upload(ctx, din, in, (size_t)n * es), TILEC_OK);
    tilec_reduce_desc d = {.op = r->op, .dtype = r->dtype, .rank = 2, .shape = {1, n}, .naxes = 1, .axes = {1},
                           .nan = r->nan, .out2 = dout2};
    tilec_status st = tilec_reduce(ctx, &d, din, dout);
    if (st == TILEC_OK) {
        assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
        assert_int_equal(tilec_mem_download(ctx, out, dout, eo), TILEC_OK);
        if (two) assert_int_equal(tilec_mem_download(ctx, out2, dout2, tilec_dtype_size(out2_dt(r))), TILEC_OK);
    }
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    tilec_mem_free(ctx, dout2);
    return st;
}

static bool errs_on_empty(tilec_op op) {
    return op == TILEC_OP_MAX || op == TILEC_OP_MIN || op == TILEC_OP_ARGMAX || op == TILEC_OP_ARGMIN || op == TILEC_OP_AMINMAX;
}

/* The value and index an independent oracle expects of segment [lo, hi) of x (doubles),
 * exact for max, min, arg*, aminmax and sums and products of the test's data; *exact says
 * whether the op's result is compared exactly (else within tol of the double value). */
static double oracle(const run *r, const double *x, int64_t n, double *second, bool *exact, double *tol) {
    tilec_op op = r->op;
    bool ign = r->nan == TILEC_NAN_IGNORE;
    *exact = true;
    *tol = 0;
    *second = 0;
    double acc = 0;
    if (tilec_op_compares(op)) { /* the first best under the order -inf < ... < -0 < +0 < ... < inf */
        int64_t imx = -1, imn = -1;
        double mx = 0, mn = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = x[i];
            if (isnan(v)) {
                if (ign) continue;
                *second = op == TILEC_OP_AMINMAX ? NAN : (double)i; /* the first NaN */
                return NAN;
            }
            bool gt = imx < 0 || v > mx || (v == 0 && mx == 0 && !signbit(v) && signbit(mx));
            bool lt_ = imn < 0 || v < mn || (v == 0 && mn == 0 && signbit(v) && !signbit(mn));
            if (gt) { mx = v; imx = i; }
            if (lt_) { mn = v; imn = i; }
        }
        if (imx < 0) { /* all NaN (ignore) */
            *second = op == TILEC_OP_AMINMAX ? NAN : 0;
            return NAN;
        }
        switch (op) {
        case TILEC_OP_MAX: return mx;
        case TILEC_OP_MIN: return mn;
        case TILEC_OP_ARGMAX: *second = (double)imx; return mx;
        case TILEC_OP_ARGMIN: *second = (double)imn; return mn;
        default: *second = mx; return mn; /* aminmax */
        }
    }
    double s = 0, ss = 0, p = 1, ax = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
        ss += x[i] * x[i];
        p *= x[i];
        if (x[i] > ax) ax = x[i];
    }
    switch (op) {
    case TILEC_OP_SUM: acc = s; break;
    case TILEC_OP_PROD: acc = p; break;
    case TILEC_OP_SUMSQ: acc = ss; break;
    case TILEC_OP_NORM2: acc = sqrt(ss); *exact = false; *tol = 1e-6 * (acc + 1); break;
    case TILEC_OP_MEAN: acc = n ? s / (double)n : NAN; *exact = false; *tol = 1e-6 * (fabs(acc) + 1); break;
    case TILEC_OP_VAR:
    case TILEC_OP_STD: {
        double m = n ? s / (double)n : 0, v = 0;
        for (int64_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
        acc = n > 1 ? v / (double)(n - 1) : NAN;
        if (op == TILEC_OP_STD) acc = sqrt(acc);
        *exact = false;
        *tol = 1e-5 * (fabs(acc) + 1);
        break;
    }
    case TILEC_OP_LOGSUMEXP: {
        double e = 0;
        for (int64_t i = 0; i < n; i++) e += exp(x[i] - ax);
        acc = n ? ax + log(e) : -INFINITY;
        if (isinf(ax)) acc = ax;
        *exact = false;
        *tol = 1e-5 * (fabs(acc) + 1);
        break;
    }
    default: break;
    }
    if (r->dtype == TILEC_BF16 && !*exact) *tol *= 1e4;
    return acc;
}

/* v rounded to nearest even in dtype t's float type (exact ops' results, stored). */
static double rounded(tilec_dtype t, double v) {
    if (isnan(v) || !is_float(t) || t == TILEC_F64) return v;
    float f = (float)v;
    if (t == TILEC_BF16 && isfinite(f)) {
        uint32_t u;
        memcpy(&u, &f, 4);
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
        memcpy(&f, &u, 4);
    }
    return f;
}

static bool same_value(double got, double want, bool exact, double tol) {
    if (isnan(want)) return isnan(got);
    if (exact) return got == want && (got != 0 || signbit(got) == signbit(want));
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol;
}

/* Runs r on random data (with specials when asked) and checks every segment against the
 * dense reduction of its elements (bitwise) and against the oracle (specials off, or ops
 * whose oracle follows the NaN rules: the comparing ones). */
static void check_run(tilec_ctx *ctx, const run *r, uint64_t seed, int specials) {
    size_t es = tilec_dtype_size(r->dtype), eo = tilec_dtype_size(out_dt(r));
    bool two = tilec_op_outputs(r->op) == 2;
    size_t e2 = two ? tilec_dtype_size(out2_dt(r)) : 0;
    int64_t outs = r->rows * r->nsegs;
    unsigned char *in = malloc((size_t)(r->rows * r->extent) * es + 1);
    unsigned char *out = malloc((size_t)outs * eo + 1), *out2 = malloc((size_t)outs * (e2 ? e2 : 1) + 1);
    unsigned char *before = malloc((size_t)outs * 8 + 1);
    memset(before, 0x5a, (size_t)outs * 8 + 1); /* a pattern a result never has: unwritten outputs show */
    fill(r->dtype, r->op, in, r->rows * r->extent, specials, &seed);
    bool any_empty_err = false;
    for (int64_t s = 0; s < r->nsegs; s++) any_empty_err = any_empty_err || (r->offsets[s] == r->offsets[s + 1] && errs_on_empty(r->op));
    tilec_status sync = seg_run(ctx, r, in, out, out2, before);
    if (any_empty_err) {
        assert_int_equal(sync, TILEC_ERR_INVALID_ARG);
        assert_non_null(strstr(sync_msg, "of an empty segment"));
    } else if (sync != TILEC_OK) {
        fail_msg("tilec_synchronize: %s\n%s", tilec_status_name(sync), tilec_diag_text(ctx));
    }
    double *xs = malloc((size_t)(r->extent + 1) * sizeof *xs);
    for (int64_t row = 0; row < r->rows; row++)
        for (int64_t s = 0; s < r->nsegs; s++) {
            int64_t lo = r->offsets[s], n = r->offsets[s + 1] - lo, o = row * r->nsegs + s;
            const unsigned char *seg = in + (size_t)(row * r->extent + lo) * es;
            if (n == 0 && errs_on_empty(r->op)) { /* not written */
                assert_memory_equal(out + (size_t)o * eo, before, eo);
                continue;
            }
            unsigned char want[8], want2[8];
            assert_int_equal(dense_run(ctx, r, seg, n, want, want2), TILEC_OK);
            if (memcmp(out + (size_t)o * eo, want, eo) || (two && memcmp(out2 + (size_t)o * e2, want2, e2)))
                fail_msg("%s %s: row %lld segment %lld [%lld, +%lld) differs from the dense row's bits: %.17g vs %.17g",
                         tilec_op_name(r->op), tilec_dtype_name(r->dtype), (long long)row, (long long)s, (long long)lo,
                         (long long)n, get(out_dt(r), out, o), get(out_dt(r), want, 0));
            bool oracle_ok = !(specials & 1) || tilec_op_compares(r->op);
            if ((specials & 2) && is_float(r->dtype)) { /* real values: the rounded ops within a tolerance */
                for (int64_t i = 0; i < n; i++) xs[i] = get(r->dtype, seg, i);
                bool ex, finite = true;
                double tol, sec, v = oracle(r, xs, n, &sec, &ex, &tol), got = get(out_dt(r), out, o), mag = 0;
                for (int64_t i = 0; i < n; i++) {
                    mag += fabs(xs[i]) * (r->op == TILEC_OP_SUMSQ ? fabs(xs[i]) : 1);
                    finite = finite && isfinite(xs[i]);
                }
                if (r->op == TILEC_OP_SUM || r->op == TILEC_OP_SUMSQ) tol = (r->dtype == TILEC_BF16 ? 1e-2 : 1e-5) * (mag + 1);
                if (finite && !tilec_op_compares(r->op) && !same_value(got, rounded(out_dt(r), v), false, tol))
                    fail_msg("%s %s segment %lld of %lld real values: %.17g, the oracle %.17g", tilec_op_name(r->op),
                             tilec_dtype_name(r->dtype), (long long)s, (long long)n, got, v);
                continue;
            }
            if (!oracle_ok) continue;
            for (int64_t i = 0; i < n; i++) xs[i] = get(r->dtype, seg, i);
            bool exact;
            double tol, second, v = oracle(r, xs, n, &second, &exact, &tol);
            double got = get(out_dt(r), out, o);
            if (r->dtype == TILEC_I32 && r->op == TILEC_OP_PROD) v = (double)(int32_t)(int64_t)v;
            if (exact) v = rounded(out_dt(r), v);
            if (!same_value(got, v, exact, tol))
                fail_msg("%s %s segment %lld of %lld elements: %.17g, the oracle %.17g", tilec_op_name(r->op),
                         tilec_dtype_name(r->dtype), (long long)s, (long long)n, got, v);
            if (two) {
                double g2 = get(out2_dt(r), out2, o);
                if (!same_value(g2, second, true, 0))
                    fail_msg("%s %s segment %lld: second output %.17g, the oracle %.17g", tilec_op_name(r->op),
                             tilec_dtype_name(r->dtype), (long long)s, g2, second);
            }
        }
    free(xs);
    free(in);
    free(out);
    free(out2);
    free(before);
}

/* Random offsets over extent: lengths 0 to maxlen (a third of them 0), the rest past the
 * last segment unread. */
static int64_t *random_offsets(int64_t extent, int64_t nsegs, int64_t maxlen, uint64_t *s) {
    int64_t *o = malloc((size_t)(nsegs + 1) * sizeof *o);
    o[0] = (int64_t)(rnd(s) % 3);
    for (int64_t i = 0; i < nsegs; i++) {
        int64_t len = rnd(s) % 3 == 0 ? 0 : (int64_t)(rnd(s) % (uint64_t)(maxlen + 1));
        o[i + 1] = o[i] + len > extent ? extent : o[i] + len;
    }
    return o;
}

static const tilec_dtype dtypes[] = {TILEC_F32, TILEC_F64, TILEC_I32, TILEC_BF16};

/* Every op and dtype: random offsets with empty segments, two rows, with and without
 * specials; every segment the dense row's bits and the oracle's value. */
static void every_op(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    uint64_t seed = 12345;
    for (int o = 0; o < TILEC_OP_COUNT; o++)
        for (size_t t = 0; t < sizeof dtypes / sizeof *dtypes; t++) {
            if (!tilec_op_supports((tilec_op)o, dtypes[t], false)) continue;
            int64_t *off = random_offsets(300, 12, 70, &seed);
            run r = {.op = (tilec_op)o, .dtype = dtypes[t], .rows = 2, .extent = 300, .nsegs = 12, .offsets = off};
            for (int sp = 0; sp < 4; sp++) check_run(ctx, &r, seed + (uint64_t)sp, sp);
            if (tilec_op_compares((tilec_op)o) && (dtypes[t] == TILEC_F32 || dtypes[t] == TILEC_BF16)) {
                r.nan = TILEC_NAN_IGNORE;
                check_run(ctx, &r, seed, 1);
            }
            free(off);
        }
    tilec_close(ctx);
}

/* Lengths around the piece boundaries (W = 1024 for 4- and 2-byte types, 512 for 8-byte
 * ones) and offsets equal to the dense rows: a [R, n] tensor reduced by segments of n is
 * tilec_reduce's [R, n] bit for bit. */
static void dense_rows(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const int64_t lens[] = {1, 2, 31, 33, 512, 513, 1024, 1025, 2049, 3000};
    static const tilec_op ops[] = {TILEC_OP_SUM, TILEC_OP_MAX, TILEC_OP_ARGMAX, TILEC_OP_LOGSUMEXP, TILEC_OP_VAR,
                                   TILEC_OP_MEAN, TILEC_OP_NORM2, TILEC_OP_AMINMAX};
    uint64_t seed = 99;
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++)
            for (size_t t = 0; t < 2; t++) {
                tilec_dtype dt = t ? TILEC_F64 : TILEC_F32;
                if (!tilec_op_supports(ops[oi], dt, false)) continue;
                int64_t n = lens[li], R = 3, off[2] = {0, n};
                /* R rows of one segment each: the segment's bits are the row's (checked in
                 * check_run against [1, n]; the batch does not change a row's bits) */
                run r = {.op = ops[oi], .dtype = dt, .rows = R, .extent = n, .nsegs = 1, .offsets = off};
                check_run(ctx, &r, seed++, 3);
                /* and one row cut into segments of n */
                int64_t offs[4] = {0, n, 2 * n, 3 * n};
                run r3 = {.op = ops[oi], .dtype = dt, .rows = 1, .extent = 3 * n, .nsegs = 3, .offsets = offs,
                          .i32 = true};
                check_run(ctx, &r3, seed++, 2);
            }
    tilec_close(ctx);
}

/* The worker layouts: short segments (a group each), long ones (a CTA each), few long ones
 * (CTAs each, partials folded by the last), with a single segment covering all. */
static void layouts(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    uint64_t seed = 7;
    static const tilec_op ops[] = {TILEC_OP_SUM, TILEC_OP_ARGMIN, TILEC_OP_LOGSUMEXP, TILEC_OP_STD, TILEC_OP_PROD};
    for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++) {
        /* a CTA a segment: mean length above two pieces */
        int64_t off[4] = {0, 5000, 5000, 9000};
        run r = {.op = ops[oi], .dtype = TILEC_F32, .rows = 1, .extent = 9001, .nsegs = 3, .offsets = off};
        if (ops[oi] == TILEC_OP_ARGMIN) off[2] = 5001; /* no empty segment for an op that has no value for one */
        check_run(ctx, &r, seed++, 3);
        /* one segment covering all */
        int64_t all[2] = {0, 9001};
        run r1 = {.op = ops[oi], .dtype = TILEC_F32, .rows = 1, .extent = 9001, .nsegs = 1, .offsets = all};
        check_run(ctx, &r1, seed++, 0);
        check_run(ctx, &r1, seed++, 2);
    }
    /* CTAs a segment: f64 (pieces of 512: 8 CTAs a segment), two segments of 70000 and 60000 */
    int64_t big[3] = {0, 70000, 130000};
    run r2 = {.op = TILEC_OP_SUM, .dtype = TILEC_F64, .rows = 1, .extent = 130000, .nsegs = 2, .offsets = big};
    check_run(ctx, &r2, seed++, 2);
    r2.op = TILEC_OP_ARGMAX;
    r2.dtype = TILEC_F32; /* f32, pieces of 1024: 4 CTAs a segment */
    check_run(ctx, &r2, seed++, 1);
    tilec_close(ctx);
}

/* The order shows: real values, whose float sums round, in segments of many pieces (up to
 * 24), each segment's bits the dense row's: a group a segment (mean length two pieces or
 * less) and a CTA a segment. (An order that folds the pieces in sequence instead of the
 * tree fails this test.) */
static void fold_order(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    uint64_t seed = 2024;
    static const tilec_dtype dts[] = {TILEC_F32, TILEC_F64, TILEC_BF16};
    for (size_t t = 0; t < sizeof dts / sizeof *dts; t++)
        for (int layout = 0; layout < 2; layout++) {
            int64_t nsegs = layout ? 12 : 40, extent = 60000, off[41];
            off[0] = 0;
            for (int64_t s = 0; s < nsegs; s++) {
                int64_t len = (int64_t)(rnd(&seed) % 12000);
                off[s + 1] = off[s] + len > extent ? extent : off[s] + len;
            }
            run r = {.op = TILEC_OP_SUM, .dtype = dts[t], .rows = 1, .extent = extent, .nsegs = nsegs, .offsets = off};
            check_run(ctx, &r, seed++, 2);
            r.op = TILEC_OP_LOGSUMEXP;
            if (dts[t] != TILEC_F64) check_run(ctx, &r, seed++, 2);
        }
    tilec_close(ctx);
}

/* A segment of more than 4096 pieces (2^21 + 5 f64, pieces of 512): blocks of G = 2
 * pieces, b and b + NB, then the tree of NB = 2051 blocks; its bits are the dense row's. */
static void long_segment(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    int64_t n = 2100005, off[3] = {0, 5, n};
    run r = {.op = TILEC_OP_SUM, .dtype = TILEC_F64, .rows = 1, .extent = n, .nsegs = 2, .offsets = off};
    check_run(ctx, &r, 77, 2);
    tilec_close(ctx);
}

/* Offsets that fall, start below 0 or end past the extent: the call succeeds, the next
 * tilec_synchronize says which, the good segments are right, the bad ones unwritten, and
 * the status is cleared. */
static void bad_offsets(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const struct {
        int64_t off[5];
        const char *what;
        int bad;
    } cases[] = {
        {{0, 10, 5, 20, 30}, "falls", 1},
        {{-3, 10, 12, 20, 30}, "starts below 0", 1},
        {{0, 10, 12, 20, 41}, "ends past the extent", 1},
        {{0, 10, 5, 20, 41}, "falls", 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int i32 = 0; i32 < 2; i32++) {
            float in[40];
            for (int i = 0; i < 40; i++) in[i] = (float)i;
            float out[4], before[4] = {-7, -7, -7, -7};
            run r = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rows = 1, .extent = 40, .nsegs = 4, .offsets = cases[c].off,
                     .i32 = i32};
            tilec_status st = seg_run(ctx, &r, in, out, NULL, before);
            assert_int_equal(st, TILEC_ERR_INVALID_ARG);
            const char *msg = sync_msg;
            if (!strstr(msg, cases[c].what)) fail_msg("case %zu: %s", c, msg);
            char count[64];
            snprintf(count, sizeof count, "%d output%s (a segment of a row each) had bad offsets", cases[c].bad,
                     cases[c].bad == 1 ? "" : "s");
            if (!strstr(msg, count)) fail_msg("case %zu: %s", c, msg);
            for (int s = 0; s < 4; s++) {
                int64_t lo = cases[c].off[s], hi = cases[c].off[s + 1];
                if (lo < 0 || hi < lo || hi > 40) {
                    assert_true(out[s] == -7);
                    continue;
                }
                float want = 0; /* independent: the integers lo .. hi - 1 */
                for (int64_t i = lo; i < hi; i++) want += (float)i;
                assert_true(out[s] == want);
            }
            assert_int_equal(tilec_synchronize(ctx), TILEC_OK); /* reported once, then cleared */
        }
    /* an empty segment of max: reported; the others right */
    float in[8] = {1, 5, 2, 8, 3, 9, 4, 0}, out[3], before[3] = {-7, -7, -7};
    int64_t off[4] = {0, 3, 3, 8};
    run r = {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rows = 1, .extent = 8, .nsegs = 3, .offsets = off};
    assert_int_equal(seg_run(ctx, &r, in, out, NULL, before), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(sync_msg, "1 output of an empty segment (a segment of a row each; the first counted: segment 1)"));
    assert_true(out[0] == 5 && out[1] == -7 && out[2] == 9);
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    tilec_close(ctx);
}

/* The context's segmented status words (the simulator's memory is the host's), made by
 * running r, which must succeed: the tests below preset them as after 2^32 - 1 counts. */
static uint32_t *status_words(tilec_ctx *ctx, run *r, float *in, float *out, float *before) {
    assert_int_equal(seg_run(ctx, r, in, out, NULL, before), TILEC_OK);
    rt *rt_;
    assert_int_equal(rt_get(ctx, &rt_), TILEC_OK);
    assert_non_null(rt_->seg_status);
    return rt_->seg_status;
}

/* 2^32 bad or empty outputs between two synchronisations: the counts go on past 32 bits and
 * the error is reported (a 32-bit count wraps to 0, which reads as "no error"). The status
 * words are set as if 2^32 - 1 had been counted already (the simulator's memory is the
 * host's); the next one counted makes 2^32. */
static void counts_past_32_bits(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    float in[40] = {0}, out[4], before[4] = {-7, -7, -7, -7};
    int64_t good[5] = {0, 10, 12, 20, 30}, bad[5] = {0, 10, 5, 20, 30}, empty[5] = {0, 10, 10, 20, 30};
    run r = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rows = 1, .extent = 40, .nsegs = 4, .offsets = good};
    uint32_t *z = status_words(ctx, &r, in, out, before);
    z[DSP_SEG_BAD] = UINT32_MAX;
    r.offsets = bad;
    assert_int_equal(seg_run(ctx, &r, in, out, NULL, before), TILEC_ERR_INVALID_ARG);
    if (!strstr(sync_msg, "4294967296 outputs (a segment of a row each) had bad offsets")) fail_msg("%s", sync_msg);
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK); /* reported once, then cleared */
    z[DSP_SEG_EMPTY] = UINT32_MAX;
    z[DSP_SEG_OP] = TILEC_OP_MAX; /* written by the first of the 2^32 - 1 */
    r.op = TILEC_OP_MAX;
    r.offsets = empty;
    assert_int_equal(seg_run(ctx, &r, in, out, NULL, before), TILEC_ERR_INVALID_ARG);
    if (!strstr(sync_msg, "a segmented max had 4294967296 outputs of an empty segment")) fail_msg("%s", sync_msg);
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    tilec_close(ctx);
}

/* The record of the first bad (or empty) segment counted stays the first when the count's
 * low word wraps round to 0 after 2^32: a later segment's add finds 0 again, and must not
 * write its record over the first. The words are preset as after 2^32 - 1 counted, with
 * their record (segment 7, from 9 to 8; segment 5 empty); two more bad segments, 1 and 2,
 * wrap the low word: the second's add finds it 0. */
static void first_record_survives_wrap(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    float in[40] = {0}, out[4], before[4] = {-7, -7, -7, -7};
    int64_t good[5] = {0, 10, 12, 20, 30}, bad[5] = {0, 10, 5, 3, 30}, empty[5] = {0, 10, 10, 10, 30};
    run r = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rows = 1, .extent = 40, .nsegs = 4, .offsets = good};
    uint32_t *z = status_words(ctx, &r, in, out, before);
    z[DSP_SEG_BAD] = UINT32_MAX;
    z[DSP_SEG_BAD_AT] = 7, z[DSP_SEG_BAD_LO] = 9, z[DSP_SEG_BAD_HI] = 8, z[DSP_SEG_EXTENT] = 40;
    z[DSP_SEG_BAD_SEEN] = 1;
    r.offsets = bad;
    assert_int_equal(seg_run(ctx, &r, in, out, NULL, before), TILEC_ERR_INVALID_ARG);
    if (!strstr(sync_msg, "segment 7 runs from 9 to 8, which falls") ||
        !strstr(sync_msg, "4294967297 outputs (a segment of a row each) had bad offsets"))
        fail_msg("%s", sync_msg);
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK); /* reported once, then cleared */
    z[DSP_SEG_EMPTY] = UINT32_MAX;
    z[DSP_SEG_EMPTY_AT] = 5, z[DSP_SEG_OP] = TILEC_OP_MAX;
    z[DSP_SEG_EMPTY_SEEN] = 1;
    r.op = TILEC_OP_MAX;
    r.offsets = empty; /* segments 1 and 2 are empty */
    assert_int_equal(seg_run(ctx, &r, in, out, NULL, before), TILEC_ERR_INVALID_ARG);
    if (!strstr(sync_msg, "a segmented max had 4294967297 outputs of an empty segment (a segment of a row each; the "
                          "first counted: segment 5)"))
        fail_msg("%s", sync_msg);
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    /* cleared with the counts: the next first is recorded */
    r.op = TILEC_OP_SUM;
    r.offsets = bad;
    assert_int_equal(seg_run(ctx, &r, in, out, NULL, before), TILEC_ERR_INVALID_ARG);
    if (!(strstr(sync_msg, "segment 1 runs from 10 to 5, which falls") || strstr(sync_msg, "segment 2 runs from 5 to 3")) ||
        !strstr(sync_msg, "2 outputs (a segment of a row each) had bad offsets"))
        fail_msg("%s", sync_msg);
    tilec_close(ctx);
}

/* The verdict does not depend on the number of rows: bad offsets are refused with no rows
 * (checked on the host, as no kernel runs) as with one (found on the device); zero
 * segments of max over an empty axis are zero outputs, nothing to refuse, while one
 * segment of it is an empty output. */
static void verdict_without_rows(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    void *in, *out, *off;
    assert_int_equal(tilec_mem_alloc(ctx, 64, &in), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 64, &out), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 64, &off), TILEC_OK);
    const int64_t bad[3] = {0, 5, 3}, good[3] = {0, 1, 4}, none[2] = {0, 0};
    assert_int_equal(tilec_mem_upload(ctx, off, bad, sizeof bad), TILEC_OK);
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {0, 4}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 2, in, out), TILEC_ERR_INVALID_ARG);
    if (!strstr(tilec_diag_text(ctx), "segment 0 runs from 0 to 5, which ends past the extent")) fail_msg("%s", tilec_diag_text(ctx));
    d.shape[0] = 1;
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 2, in, out), TILEC_OK);
    assert_int_equal(tilec_synchronize(ctx), TILEC_ERR_INVALID_ARG);
    if (!strstr(tilec_diag_text(ctx), "segment 0 runs from 0 to 5, which ends past the extent")) fail_msg("%s", tilec_diag_text(ctx));
    int32_t bad32[3] = {0, 2, 1};
    assert_int_equal(tilec_mem_upload(ctx, off, bad32, sizeof bad32), TILEC_OK);
    d.shape[0] = 0;
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, true, 2, in, out), TILEC_ERR_INVALID_ARG);
    if (!strstr(tilec_diag_text(ctx), "segment 1 runs from 2 to 1, which falls")) fail_msg("%s", tilec_diag_text(ctx));
    assert_int_equal(tilec_mem_upload(ctx, off, good, sizeof good), TILEC_OK);
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 2, in, out), TILEC_OK);
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    /* max over an empty axis: no segments, nothing refused; one (empty) segment, refused */
    d = (tilec_reduce_desc){.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {3, 0}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_mem_upload(ctx, off, none, sizeof none), TILEC_OK);
    if (tilec_reduce_segmented(ctx, &d, off, false, 0, in, out) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 1, in, out), TILEC_OK);
    assert_int_equal(tilec_synchronize(ctx), TILEC_ERR_INVALID_ARG);
    if (!strstr(tilec_diag_text(ctx), "a segmented max had 3 outputs of an empty segment")) fail_msg("%s", tilec_diag_text(ctx));
    tilec_mem_free(ctx, in);
    tilec_mem_free(ctx, out);
    tilec_mem_free(ctx, off);
    tilec_close(ctx);
}

/* Empty segments of the ops that have a value for them; accumulate leaves them. */
static void empty_values(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    float in[4] = {1, 2, 3, 4};
    int64_t off[3] = {0, 0, 4};
    static const struct {
        tilec_op op;
        float want;
    } cases[] = {{TILEC_OP_SUM, 0.0f}, {TILEC_OP_SUMSQ, 0.0f}, {TILEC_OP_NORM2, 0.0f}, {TILEC_OP_PROD, 1.0f},
                 {TILEC_OP_MEAN, NAN}, {TILEC_OP_VAR, NAN}, {TILEC_OP_STD, NAN}, {TILEC_OP_LOGSUMEXP, -INFINITY}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        float out[2], before[2] = {-7, -7};
        run r = {.op = cases[c].op, .dtype = TILEC_F32, .rows = 1, .extent = 4, .nsegs = 2, .offsets = off};
        assert_int_equal(seg_run(ctx, &r, in, out, NULL, before), TILEC_OK);
        if (isnan(cases[c].want) ? !isnan(out[0]) : out[0] != cases[c].want || (out[0] == 0 && signbit(out[0])))
            fail_msg("%s of an empty segment: %g", tilec_op_name(cases[c].op), out[0]);
        if (tilec_op_supports(cases[c].op, TILEC_F32, true)) { /* accumulate: the empty one is left */
            r.accumulate = true;
            assert_int_equal(seg_run(ctx, &r, in, out, NULL, before), TILEC_OK);
            assert_true(out[0] == -7);
            if (cases[c].op == TILEC_OP_LOGSUMEXP) { /* the old value is one more element */
                double lse = log(exp(-7.0) + exp(1.0) + exp(2.0) + exp(3.0) + exp(4.0));
                if (!(fabs(out[1] - lse) <= 1e-6 * fabs(lse))) fail_msg("logsumexp accumulated: %.9g, want %.9g", out[1], lse);
                continue;
            }
            float want = cases[c].op == TILEC_OP_SUM ? -7 + 10.0f : cases[c].op == TILEC_OP_PROD ? -7 * 24.0f : -7 + 30.0f;
            assert_true(out[1] == want);
        }
    }
    tilec_close(ctx);
}

/* Bad arguments: statuses and messages, nothing launched. */
static void bad_args(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    void *in, *out, *off;
    assert_int_equal(tilec_mem_alloc(ctx, 400, &in), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 400, &out), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 80, &off), TILEC_OK);
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {10, 10}, .naxes = 1, .axes = {0}};
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 3, in, out), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "is not the innermost"));
    d.axes[0] = 1;
    d.naxes = 2;
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 3, in, out), TILEC_ERR_INVALID_ARG);
    d.naxes = 1;
    assert_int_equal(tilec_reduce_segmented(ctx, &d, NULL, false, 3, in, out), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "offsets is NULL"));
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, -1, in, out), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 3, in, in), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "overlap"));
    d.shape[0] = 1;
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 10, in, out), TILEC_ERR_INVALID_ARG); /* 80 bytes of offsets */
    assert_non_null(strstr(tilec_diag_text(ctx), "the offsets"));
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 0, in, out), TILEC_OK); /* nothing to do */
    d.op = TILEC_OP_MEAN;
    d.dtype = TILEC_I32;
    assert_int_equal(tilec_reduce_segmented(ctx, &d, off, false, 3, in, out), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_reduce_segmented(NULL, &d, off, false, 3, in, out), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_reduce_segmented(ctx, NULL, off, false, 3, in, out), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    tilec_close(ctx);
}

/* The tile kernel a segmented lowering takes (dsp_lower_segmented): its parameters only,
 * A [rows, extent] of dt, B [rows, nsegs], C (an op with two outputs), O (nsegs + 1
 * offsets of odt) and Z, the status words. */
static tilec_kernel *seg_kernel(tilec_program *p, const char *name, tilec_op op, tilec_dtype dt, int64_t rows,
                                int64_t extent, int64_t nsegs, tilec_dtype odt) {
    tilec_kernel *k;
    tilec_buffer *b;
    int64_t a[2] = {rows, extent}, o[2] = {rows, nsegs}, n1 = nsegs + 1, z = DSP_SEG_WORDS;
    assert_int_equal(tilec_kernel_new(p, name, false, 256, 1, &k), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "A", dt, 2, a, TILEC_SPACE_GLOBAL, &b), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "B", dt, 2, o, TILEC_SPACE_GLOBAL, &b), TILEC_OK);
    if (tilec_op_outputs(op) == 2)
        assert_int_equal(tilec_kernel_param(k, "C", tilec_op_second_dtype(op, dt), 2, o, TILEC_SPACE_GLOBAL, &b), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "O", odt, 1, &n1, TILEC_SPACE_GLOBAL, &b), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "Z", TILEC_U32, 1, &z, TILEC_SPACE_GLOBAL, &b), TILEC_OK);
    return k;
}

/* Wave64 (HIP's CDNA): two groups of 32 lanes share a warp, and each runs its own
 * segment's loops, so the warp diverges around the groups' butterflies. The simulator
 * runs the lowered kernels at warp size 64 (reporting any shuffle that reads an inactive
 * lane, any barrier under divergence) and gives the bits of warp size 32, in every
 * layout. So does the kernel of 64-bit positions (index64: what an input of 2^31
 * elements or more gets) on these small inputs, which take 32-bit ones. */
static void wave64(void **state) {
    (void)state;
    static const tilec_op ops[] = {TILEC_OP_SUM, TILEC_OP_ARGMAX, TILEC_OP_LOGSUMEXP, TILEC_OP_VAR};
    uint64_t seed = 64;
    for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++)
        for (int layout = 0; layout < 3; layout++) {
            int64_t rows = 2, extent = 14000, nsegs = 9, off[10];
            off[0] = 0;
            for (int i = 0; i < nsegs; i++) off[i + 1] = off[i] + 1 + (int64_t)(rnd(&seed) % 1500); /* 1 or 2 pieces */
            bool two = tilec_op_outputs(ops[oi]) == 2;
            float *in = malloc((size_t)(rows * extent) * 4);
            fill(TILEC_F32, ops[oi], in, rows * extent, 3, &seed);
            unsigned char got[3][2][64 * 8];
            for (int w = 0; w < 3; w++) {
                tilec_ctx *ctx;
                tilec_program *p;
                assert_int_equal(tilec_open(&ctx), TILEC_OK);
                assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
                tilec_kernel *k = seg_kernel(p, "seg", ops[oi], TILEC_F32, rows, extent, nsegs, TILEC_I64);
                dsp_target tg = {.backend = TILEC_BACKEND_SIM, .arch = "cpu", .warp_size = w == 1 ? 64 : 32};
                dsp_segmented sg = {.op = ops[oi], .correction = 1, .rows = rows, .extent = extent, .nsegs = nsegs,
                                    .workers = layout ? 8 : 1, .ctas = layout == 2 ? 4 : 1, .index64 = w == 2};
                tilec_status why;
                lp_kernel *lk = dsp_lower_segmented(p, k, &tg, &sg, &why);
                assert_int_equal(why, TILEC_OK);
                for (int i = 0; i < lk->nregs; i++) /* a segment's start: 64-bit only where asked */
                    if (!strcmp(lk->regs[i].name, "start")) assert_int_equal(lk->regs[i].type, w == 2 ? LP_I64 : LP_I32);
                uint32_t status[DSP_SEG_WORDS] = {0};
                memset(got[w], 0, sizeof got[w]);
                void *args[5] = {in, got[w][0], two ? (void *)got[w][1] : (void *)off, two ? (void *)off : (void *)status,
                                 status};
                tilec_status st = sim_run(p, lk, args);
                if (st != TILEC_OK) fail_msg("%s layout %d warp size %d: %s", tilec_op_name(ops[oi]), layout, tg.warp_size,
                                             tilec_diag_text(ctx));
                assert_int_equal(status[DSP_SEG_BAD] + status[DSP_SEG_EMPTY], 0);
                tilec_program_free(p);
                tilec_close(ctx);
            }
            if (memcmp(got[0], got[1], sizeof got[0]))
                fail_msg("%s layout %d: warp size 64 gives other bits than 32", tilec_op_name(ops[oi]), layout);
            if (memcmp(got[0], got[2], sizeof got[0]))
                fail_msg("%s layout %d: 64-bit positions give other bits than 32-bit ones", tilec_op_name(ops[oi]), layout);
            free(in);
        }
}

/* Rewrites block b of k so that each assignment to register reg is followed by a read of
 * A[reg] where reg > limit: the simulator reports that read (out of bounds), so a
 * position past what the kernel's 32-bit positions allow fails the run, on inputs far too
 * small to overflow. */
static void probe_positions(lp_kernel *k, lp_block *b, int reg, int64_t limit, const lp_buf *A) {
    lp_block nb = {0};
    for (int i = 0; i < b->n; i++) {
        lp_stmt *s = b->items[i];
        probe_positions(k, &s->body, reg, limit, A);
        probe_positions(k, &s->orelse, reg, limit, A);
        lp_if(k, &nb, NULL);
        nb.items[nb.n - 1] = s;
        if (s->kind == LS_ASSIGN && s->reg == reg) {
            lp_expr *r = lp_reg(k, reg);
            lp_stmt *g = lp_if(k, &nb, lp_binary(k, LO_LT, lp_int(k, k->regs[reg].type, limit), r));
            lp_assign(k, &g->body, lp_reg_new(k, A->type, "probe"), lp_load(k, A, r));
        }
    }
    *b = nb;
}

/* Wave64's extra turns: a group whose warp-mate folds a long segment runs that segment's
 * turns too, folding nothing; the positions it computes on them must stay within the
 * input and a few pieces (the bound the 32-bit positions are chosen by: total + 4 W), or
 * the HIP source's int arithmetic overflows on inputs near 2^31 elements. Segment 0 of
 * 16 pieces, then one element at the input's end, in the same warp. */
static void wave64_positions(void **state) {
    (void)state;
    enum { L = 16 * 1024 };
    for (int layout = 0; layout < 2; layout++) {
        int64_t extent = L + 1, nsegs = 2, off[3] = {0, L, L + 1};
        float *in = calloc(extent, 4);
        float out[2] = {0};
        tilec_ctx *ctx;
        tilec_program *p;
        assert_int_equal(tilec_open(&ctx), TILEC_OK);
        assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
        tilec_kernel *k = seg_kernel(p, "seg", TILEC_OP_SUM, TILEC_F32, 1, extent, nsegs, TILEC_I64);
        dsp_target tg = {.backend = TILEC_BACKEND_SIM, .arch = "cpu", .warp_size = 64};
        dsp_segmented sg = {.op = TILEC_OP_SUM, .rows = 1, .extent = extent, .nsegs = nsegs, .workers = layout ? 8 : 1, .ctas = 1};
        tilec_status why;
        lp_kernel *lk = dsp_lower_segmented(p, k, &tg, &sg, &why);
        assert_int_equal(why, TILEC_OK);
        int probed = 0;
        for (int i = 0; i < lk->nregs; i++)
            if (!strcmp(lk->regs[i].name, "start")) {
                probe_positions(lk, &lk->body, i, extent + 4 * 1024, lk->bufs[0]);
                probed++;
            }
        assert_int_equal(probed, 1);
        assert_false(lk->oom);
        uint32_t status[DSP_SEG_WORDS] = {0};
        void *args[4] = {in, out, off, status};
        if (sim_run(p, lk, args) != TILEC_OK) fail_msg("layout %d: %s", layout, tilec_diag_text(ctx));
        assert_int_equal(status[DSP_SEG_BAD] + status[DSP_SEG_EMPTY], 0);
        tilec_program_free(p);
        tilec_close(ctx);
        free(in);
    }
}

/* The CUDA and HIP source of the segmented kernels compiles with NVRTC (sm_80, sm_90) and
 * hiprtc (gfx90a at wave64, gfx1030 at wave32) where they are installed: every op on f32
 * in the three worker layouts, the other dtypes in one, int32 and int64 offsets, aligned
 * and not; one program of all of them, one compile a target. */
static void gpu_source_compiles(void **state) {
    (void)state;
    static const struct {
        tilec_backend b;
        const char *arch;
        int ws;
    } targets[] = {{TILEC_BACKEND_CUDA, "sm_80", 32}, {TILEC_BACKEND_CUDA, "sm_90", 32},
                   {TILEC_BACKEND_HIP, "gfx90a", 64}, {TILEC_BACKEND_HIP, "gfx1030", 32}};
    static const tilec_dtype all[] = {TILEC_F16, TILEC_BF16, TILEC_F32, TILEC_F64, TILEC_I32, TILEC_U32, TILEC_I64};
    for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
        if (!rtc_version(targets[t].b)) {
            print_message("skipped: %s is not installed here\n", targets[t].b == TILEC_BACKEND_CUDA ? "NVRTC" : "hiprtc");
            continue;
        }
        tilec_ctx *ctx;
        tilec_program *p;
        assert_int_equal(tilec_open(&ctx), TILEC_OK);
        assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
        lp_kernel *ks[256];
        int nk = 0;
        dsp_target tg = {.backend = targets[t].b, .arch = targets[t].arch, .warp_size = targets[t].ws};
        for (int o = 0; o < TILEC_OP_COUNT; o++)
            for (size_t d = 0; d < sizeof all / sizeof *all; d++)
                for (int layout = 0; layout < 3; layout++) {
                    tilec_dtype dt = all[d];
                    if (!tilec_op_supports((tilec_op)o, dt, false) || (layout > 0 && dt != TILEC_F32)) continue;
                    char name[32];
                    snprintf(name, sizeof name, "seg%d", nk);
                    tilec_kernel *k = seg_kernel(p, name, (tilec_op)o, dt, 3, 5000, 7, nk % 2 ? TILEC_I32 : TILEC_I64);
                    dsp_segmented sg = {.op = (tilec_op)o, .correction = 1, .rows = 3, .extent = 5000, .nsegs = 7,
                                        .workers = layout ? 8 : 1, .ctas = layout == 2 ? 4 : 1};
                    tg.unaligned = nk % 3 == 0;
                    tilec_status why;
                    ks[nk] = dsp_lower_segmented(p, k, &tg, &sg, &why);
                    assert_int_equal(why, TILEC_OK);
                    nk++;
                }
        ir_str src = {0};
        cg_emit_program(&src, cg_target_for(targets[t].b), p, ks);
        assert_false(src.oom);
        rtc_result res = {0};
        tilec_status st = rtc_compile(ctx, targets[t].b, targets[t].arch, targets[t].ws, "segmented", src.data, RTC_BINARY, &res);
        if (st != TILEC_OK) fail_msg("%s: %s\n%s", targets[t].arch, tilec_status_name(st), tilec_diag_text(ctx));
        assert_true(res.size > 64);
        print_message("%s: %d segmented kernels compiled\n", targets[t].arch, nk);
        rtc_result_free(&res);
        ir_str_free(&src);
        tilec_program_free(p);
        tilec_close(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_args),     cmocka_unit_test(empty_values), cmocka_unit_test(bad_offsets),
        cmocka_unit_test(counts_past_32_bits), cmocka_unit_test(first_record_survives_wrap),
        cmocka_unit_test(verdict_without_rows),
        cmocka_unit_test(every_op),     cmocka_unit_test(dense_rows),   cmocka_unit_test(layouts),
        cmocka_unit_test(fold_order),   cmocka_unit_test(long_segment),
        cmocka_unit_test(wave64),       cmocka_unit_test(wave64_positions),       cmocka_unit_test(gpu_source_compiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
