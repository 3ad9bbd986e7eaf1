/*
 * sim_support.h — running a tile program on the simulator and checking it against the
 * CPU reference, with inputs that carry the values reductions get wrong: negatives, ±inf,
 * -0/+0, NaN at the start, middle or end of a row, rows of only NaN or only -inf.
 */
#ifndef TILEC_TEST_SIM_SUPPORT_H
#define TILEC_TEST_SIM_SUPPORT_H

#include "support.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* Row patterns for float sources (a row is the last dimension). */
enum { PAT_RANDOM, PAT_NAN_MIDDLE, PAT_ALL_NEG_INF, PAT_ZEROS, PAT_NAN_START, PAT_NAN_END,
       PAT_ALL_NAN, PAT_INF_BOTH, PAT_POS_INF, PAT_COUNT };

static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double row_value(int pattern, int64_t i, int64_t len, uint64_t *s) {
    double r = (double)(rng_next(s) >> 11) * 0x1p-53 * 4.0 - 2.0; /* [-2, 2): negatives too */
    switch (pattern) {
    case PAT_NAN_MIDDLE: return i == len / 2 ? NAN : r;
    case PAT_ALL_NEG_INF: return -INFINITY;
    case PAT_ZEROS: return (rng_next(s) & 1) ? -0.0 : 0.0;
    case PAT_NAN_START: return i == 0 ? NAN : r;
    case PAT_NAN_END: return i == len - 1 ? NAN : r;
    case PAT_ALL_NAN: return NAN;
    case PAT_INF_BOTH: return i == 0 ? -INFINITY : i == len - 1 ? INFINITY : r;
    case PAT_POS_INF: return i == len / 3 ? INFINITY : r;
    default: return r;
    }
}

/* Fills n elements of dtype dt; rows of length `row` follow the patterns in turn when
 * specials is set (floats), integers get extremes now and then to exercise wrapping. */
static inline void fill_buffer(tilec_dtype dt, void *p, int64_t n, int64_t row, bool specials, uint64_t *s) {
    unsigned char *b = p;
    for (int64_t i = 0; i < n; i++) {
        int pattern = specials ? (int)((i / row) % PAT_COUNT) : PAT_RANDOM;
        double f = row_value(pattern, i % row, row, s);
        uint64_t r = rng_next(s);
        int64_t v = (int64_t)(r % 2001) - 1000;
        if (specials && r % 17 == 0) v = (r & 32) ? INT32_MAX : INT32_MIN;
        uint16_t h;
        float f32;
        int32_t i32;
        uint32_t u32;
        switch (dt) {
        case TILEC_F16: h = tilec_f16_from_double(f); memcpy(b + 2 * i, &h, 2); break;
        case TILEC_BF16: h = tilec_bf16_from_double(f); memcpy(b + 2 * i, &h, 2); break;
        case TILEC_F32: f32 = (float)f; memcpy(b + 4 * i, &f32, 4); break;
        case TILEC_F64: memcpy(b + 8 * i, &f, 8); break;
        case TILEC_I32: i32 = (int32_t)v; memcpy(b + 4 * i, &i32, 4); break;
        case TILEC_U32: u32 = (uint32_t)(r >> 1); memcpy(b + 4 * i, &u32, 4); break;
        default: v = (int64_t)r; memcpy(b + 8 * i, &v, 8); break;
        }
    }
}

/* Data a product can take: fill_buffer's, with every finite non-zero float replaced by
 * ±(1 + u) of its sign (u uniform, |u| <= 2^-10, less on long buffers), about 40 of the n
 * doubled or halved. Every order of the factors then rounds but stays far inside the
 * accumulation type's normal range (on random data in [-2, 2) a long product underflows,
 * and the reference rightly accepts anything), while the NaN, ±inf and ±0 patterns stay.
 * Integers keep fill_buffer's values: their products wrap. */
static inline void fill_factors(tilec_dtype dt, void *p, int64_t n, int64_t row, bool specials, uint64_t *s) {
    fill_buffer(dt, p, n, row, specials, s);
    if (!(dt == TILEC_F16 || dt == TILEC_BF16 || dt == TILEC_F32 || dt == TILEC_F64)) return;
    unsigned char *b = p;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        float f32;
        double f;
        switch (dt) {
        case TILEC_F64: memcpy(&f, b + 8 * i, 8); break;
        case TILEC_F32: memcpy(&f32, b + 4 * i, 4), f = f32; break;
        default: memcpy(&h, b + 2 * i, 2), f = dt == TILEC_F16 ? tilec_f16_to_double(h) : tilec_bf16_to_double(h); break;
        }
        if (!isfinite(f) || f == 0) continue;
        uint64_t r = rng_next(s);
        double u = ((double)(rng_next(s) >> 11) * 0x1p-52 - 1) * 0x1p-10 * (n > 4096 ? 4096.0 / (double)n : 1);
        double v = (r % (uint64_t)(n / 40 + 1) ? 1 : (r >> 32 & 1) ? 2 : 0.5) * (f < 0 ? -1 : 1) * (1 + u);
        switch (dt) {
        case TILEC_F64: memcpy(b + 8 * i, &v, 8); break;
        case TILEC_F32: f32 = (float)v, memcpy(b + 4 * i, &f32, 4); break;
        default: h = dt == TILEC_F16 ? tilec_f16_from_double(v) : tilec_bf16_from_double(v), memcpy(b + 2 * i, &h, 2); break;
        }
    }
}

typedef struct sim_case_result {
    tilec_status status; /* of parse, simulate or check */
    bool ok;             /* every written parameter matched the reference */
    char why[2048];      /* what went wrong */
} sim_case_result;

static inline int64_t buffer_elems(const tilec_buffer *b) {
    int64_t n = 1;
    for (int d = 0; d < tilec_buffer_rank(b); d++) n *= tilec_buffer_extent(b, d);
    return n;
}

/* Parses src, runs its only kernel on the simulator with warp size ws, and compares with
 * the reference. When outs is not NULL, the parameters after the run are kept there
 * (malloc'd, one per parameter) for bitwise comparisons. */
static inline sim_case_result run_on_sim(const char *src, int ws, uint64_t seed, bool specials, void ***outs) {
    sim_case_result res = {TILEC_OK, false, ""};
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p = NULL;
    res.status = tilec_parse(ctx, "case.tile", src, strlen(src), &p);
    if (res.status != TILEC_OK) {
        snprintf(res.why, sizeof res.why, "%s", tilec_diag_text(ctx));
        tilec_close(ctx);
        return res;
    }
    tilec_kernel *k = tilec_program_kernel(p, 0);
    size_t np = tilec_kernel_param_count(k);
    void *in[16] = {0}, *args[16] = {0};
    for (size_t i = 0; i < np; i++) {
        tilec_buffer *b = tilec_kernel_param_at(k, i);
        int64_t n = buffer_elems(b);
        size_t bytes = (size_t)n * tilec_dtype_size(tilec_buffer_dtype(b));
        in[i] = malloc(bytes);
        args[i] = malloc(bytes);
        int64_t row = tilec_buffer_extent(b, tilec_buffer_rank(b) - 1);
        /* a product's data stays in range (fill_factors) */
        (strstr(src, ".prod(") ? fill_factors : fill_buffer)(tilec_buffer_dtype(b), in[i], n, row, specials, &seed);
        memcpy(args[i], in[i], bytes);
    }
    tilec_target t = {TILEC_BACKEND_SIM, NULL, ws};
    res.status = tilec_simulate(p, NULL, &t, args);
    if (res.status != TILEC_OK) {
        snprintf(res.why, sizeof res.why, "%s", tilec_diag_text(ctx));
    } else {
        tilec_check_result cr[16];
        size_t n = 0;
        res.status = tilec_check(p, NULL, &t, (const void *const *)in, (const void *const *)args, cr, &n);
        res.ok = res.status == TILEC_OK && n > 0;
        for (size_t i = 0; i < n; i++)
            if (!cr[i].ok) {
                res.ok = false;
                snprintf(res.why, sizeof res.why, "%s: %" PRId64 " mismatches, first [%" PRId64 "] got %.9g want %.9g (largest error %g)",
                         cr[i].param, cr[i].mismatches, cr[i].first_bad, cr[i].got, cr[i].want, cr[i].max_error);
            }
        if (n == 0 && res.status == TILEC_OK) snprintf(res.why, sizeof res.why, "nothing was compared");
    }
    for (size_t i = 0; i < np; i++) {
        free(in[i]);
        if (outs) (*outs)[i] = args[i];
        else free(args[i]);
    }
    tilec_program_free(p);
    tilec_close(ctx);
    return res;
}

#endif
