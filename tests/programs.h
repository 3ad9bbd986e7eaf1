/*
 * programs.h — generators of valid .tile programs, shared by the tests and by
 * tools/gpu_check.c (which runs the same programs on a GPU): random kernels, and the rows
 * of the variant matrix.
 */
#ifndef TILEC_TEST_PROGRAMS_H
#define TILEC_TEST_PROGRAMS_H

#include "sim_support.h"

#include <stdarg.h>

static inline int pick(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }

/* Appends printf output to buf at *at. */
static inline void put(char *buf, size_t size, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static inline void put(char *buf, size_t size, size_t *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, size - *at, fmt, ap);
    va_end(ap);
    if (n > 0) *at += (size_t)n;
}

static inline void dims_text(char *out, size_t n, const int *d, int rank) {
    size_t at = 0;
    for (int i = 0; i < rank; i++) at += (size_t)snprintf(out + at, n - at, "%s%d", i ? ", " : "", d[i]);
}

/* Every op of the table defined on dtype dt, at random; nan=ignore takes an op that
 * compares (max where the pick does not); *accum is cleared for an op that does not take it. */
static inline tilec_op random_op(uint64_t *s, bool ignore, const char *dt, bool *accum) {
    tilec_op op;
    do op = (tilec_op)pick(s, TILEC_OP_COUNT);
    while (!tilec_op_supports(op, dtype_named(dt), false));
    if (ignore && !tilec_op_compares(op)) op = TILEC_OP_MAX;
    *accum = *accum && tilec_op_supports(op, dtype_named(dt), true);
    return op;
}

/* One random program. The source tile is S (rank 1..3) per instance; the reduction's
 * instance is the CTA, every warp (slices by warp_id), one chosen warp, or every thread
 * (slices by thread_id). */
static inline void make_program(uint64_t *s, char *buf, size_t size) {
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", "i32", "u32", "i64"};
    static const int threads_choice[] = {1, 17, 32, 48, 64, 96, 100, 128, 160, 256};
    const char *dt = dtypes[pick(s, 7)];
    bool flt = dt[0] == 'f' || dt[0] == 'b';
    int threads = threads_choice[pick(s, 10)], grid = 1 + pick(s, 3);
    int scope = pick(s, 4); /* 0 cta, 1 warp (all, by warp_id), 2 warp[0], 3 thread (by thread_id) */
    int inst = scope == 1 ? (threads + 31) / 32 : scope == 3 ? threads : 1; /* warps counted at 32 lanes */
    int rank = 1 + pick(s, 3), d[3];
    for (int i = 0; i < rank; i++) d[i] = 1 + pick(s, scope == 3 ? 4 : i == rank - 1 ? 70 : 9);
    /* axes: a non-empty subset, sometimes written negative */
    int axes[3], naxes = 0;
    unsigned mask = 0;
    while (!mask) mask = (unsigned)pick(s, 1 << rank);
    int kept[3], nk = 0;
    for (int i = 0; i < rank; i++) {
        if (mask >> i & 1) axes[naxes++] = pick(s, 2) ? i - rank : i;
        else kept[nk++] = d[i];
    }
    if (nk == 0) kept[nk++] = 1;
    bool pad = pick(s, 2) && rank >= 2;
    bool accum = pick(s, 3) == 0, ignore = flt && pick(s, 3) == 0;
    tilec_op o = random_op(s, ignore, dt, &accum);
    const char *op = tilec_op_name(o);
    bool two = tilec_op_outputs(o) == 2; /* argmax, argmin: the indices in I, through Ri; aminmax: the maxima */
    const char *dt2 = two ? tilec_dtype_name(tilec_op_second_dtype(o, dtype_named(dt))) : "";
    char sd[64], kd[64], strides[96] = "";
    dims_text(sd, sizeof sd, d, rank);
    dims_text(kd, sizeof kd, kept, nk);
    if (pad) { /* rows padded by 1 to 3 elements */
        int st[3];
        st[rank - 1] = 1;
        for (int i = rank - 2; i >= 0; i--) st[i] = st[i + 1] * d[i + 1] + (i == rank - 2 ? 1 + pick(s, 3) : 0);
        if (rank == 2) snprintf(strides, sizeof strides, " strides=(%d, %d)", st[0], st[1]);
        else snprintf(strides, sizeof strides, " strides=(%d, %d, %d)", st[0], st[1], st[2]);
    }
    size_t at = 0;
    const char *inst_dim = scope == 1 || scope == 3 ? "" : NULL;
    char lead[32] = "";
    if (inst_dim) snprintf(lead, sizeof lead, "%d, ", inst);
    put(buf, size, &at, "kernel k(A: %s[%d, %s%s] global, B: %s[%d, %s%s] global", dt, grid, lead, sd, dt, grid, lead, kd);
    if (two) put(buf, size, &at, ", I: %s[%d, %s%s] global", dt2, grid, lead, kd);
    put(buf, size, &at, ") threads=%d grid=%d {\n", threads, grid);
    put(buf, size, &at, "  shared S: %s[%s%s]%s\n", dt, lead, sd, inst_dim ? "" : strides);
    put(buf, size, &at, "  shared R: %s[%s%s]\n", dt, lead, kd);
    if (two) put(buf, size, &at, "  shared Ri: %s[%s%s]\n", dt2, lead, kd);
    put(buf, size, &at, "  cta.copy(S, A[cta_id])\n  cta.copy(R, B[cta_id])\n");
    if (two) put(buf, size, &at, "  cta.copy(Ri, I[cta_id])\n"); /* what instances that do not run leave */
    put(buf, size, &at, "  cta.sync()\n");
    const char *scope_text[] = {"cta", "warp", "warp[0]", "thread"};
    const char *id = scope == 1 ? "[warp_id]" : scope == 3 ? "[thread_id]" : "";
    put(buf, size, &at, "  %s.%s(R%s, ", scope_text[scope], op, id);
    if (two) put(buf, size, &at, "Ri%s, ", id);
    put(buf, size, &at, "S%s, axes=(", id);
    for (int i = 0; i < naxes; i++) put(buf, size, &at, "%s%d", i ? ", " : "", axes[i]);
    put(buf, size, &at, ")%s%s)\n", accum ? ", accum=true" : "", ignore ? ", nan=ignore" : "");
    put(buf, size, &at, "  cta.sync()\n  cta.copy(B[cta_id], R)\n");
    if (two) put(buf, size, &at, "  cta.copy(I[cta_id], Ri)\n");
    put(buf, size, &at, "}\n");
}


/* Row i of the variant matrix (sim: every length × threads × op × forced variant):
 * rows of `len` elements reduced at CTA scope. Returns false past the last row. */
static const int matrix_lengths[] = {1, 2, 7, 8, 31, 32, 33, 48, 63, 64, 65, 96, 100, 127, 4096 + 13};
static const int matrix_threads[] = {32, 64, 96, 128, 256, 1024};
static const char *const matrix_variants[] = {NULL, "shared", "cta_tree", "sequential", "smem_tree"};
enum { MATRIX_ROWS = 15 * 6 * TILEC_OP_COUNT * 5 };

static inline bool matrix_program(int i, char *buf, size_t size, const char **variant, int *len, int *threads) {
    if (i < 0 || i >= MATRIX_ROWS) return false;
    int v = i % 5, o = (i / 5) % TILEC_OP_COUNT, t = (i / (5 * TILEC_OP_COUNT)) % 6, l = i / (30 * TILEC_OP_COUNT);
    char forced[64] = "";
    if (matrix_variants[v]) snprintf(forced, sizeof forced, ", variant=%s", matrix_variants[v]);
    bool two = tilec_op_outputs((tilec_op)o) == 2; /* argmax, argmin: the indices in I; aminmax: the maxima */
    char p2[48] = "", s2[48] = "";
    if (two) {
        const char *dt2 = tilec_dtype_name(tilec_op_second_dtype((tilec_op)o, TILEC_F32));
        snprintf(p2, sizeof p2, ", I: %s[5] global", dt2);
        snprintf(s2, sizeof s2, "  shared Is: %s[5]\n", dt2);
    }
    snprintf(buf, size,
             "kernel k(A: f32[5, %d] global, B: f32[5] global%s) threads=%d {\n"
             "  shared As: f32[5, %d]\n  shared Bs: f32[5]\n%s"
             "  cta.copy(As, A)\n  cta.sync()\n"
             "  cta.%s(Bs, %sAs, axes=(-1)%s)\n  cta.copy(B, Bs)\n%s}\n",
             matrix_lengths[l], p2, matrix_threads[t], matrix_lengths[l], s2, tilec_op_name((tilec_op)o),
             two ? "Is, " : "", forced, two ? "  cta.copy(I, Is)\n" : "");
    if (variant) *variant = matrix_variants[v];
    if (len) *len = matrix_lengths[l];
    if (threads) *threads = matrix_threads[t];
    return true;
}

/* A random whole-tensor reduction: rank 1 to 4, extents among 1, small primes and larger
 * sizes, any non-empty set of axes, every dtype and op, accum and NaN policy; `big` makes
 * some tensors large enough for grid_split. */
static inline void make_grid_program(uint64_t *s, char *buf, size_t size, bool big) {
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", "i32", "u32", "i64"};
    static const int extents[] = {1, 2, 3, 5, 7, 13, 31, 32, 33, 64, 100, 127};
    static const int threads_choice[] = {64, 128, 256, 96};
    const char *dt = dtypes[pick(s, 7)];
    bool flt = dt[0] == 'f' || dt[0] == 'b';
    int rank = 1 + pick(s, 4), d[4];
    for (int i = 0; i < rank; i++) d[i] = extents[pick(s, 12)];
    if (big) { /* long rows, split over CTAs; the other extents stay small */
        for (int i = 0; i < rank - 1; i++) d[i] = 1 + pick(s, 3);
        d[rank - 1] = rank == 1 && pick(s, 2) ? (1 << 20) + 3 : (1 << 14) + pick(s, 5000);
    }
    int64_t total = 1;
    for (int i = 0; i < rank; i++) total *= d[i];
    while (total > (1 << 21)) { /* keep every tensor small enough to simulate quickly */
        int i = pick(s, rank);
        total /= d[i];
        d[i] = 1 + d[i] / 8;
        total *= d[i];
    }
    unsigned mask = 0;
    while (!mask) mask = (unsigned)pick(s, 1 << rank);
    int kept[4], nk = 0, axes[4], na = 0;
    for (int i = 0; i < rank; i++) {
        if (mask >> i & 1) axes[na++] = pick(s, 2) ? i - rank : i;
        else kept[nk++] = d[i];
    }
    if (nk == 0) kept[nk++] = 1;
    bool accum = pick(s, 3) == 0, ignore = flt && pick(s, 3) == 0;
    tilec_op o = random_op(s, ignore, dt, &accum);
    bool two = tilec_op_outputs(o) == 2; /* argmax, argmin: the indices in I; aminmax: the maxima */
    char sd[64], kd[64], p2[80] = "";
    dims_text(sd, sizeof sd, d, rank);
    dims_text(kd, sizeof kd, kept, nk);
    size_t at = 0;
    if (two) snprintf(p2, sizeof p2, ", I: %s[%s] global", tilec_dtype_name(tilec_op_second_dtype(o, dtype_named(dt))), kd);
    put(buf, size, &at, "kernel k(A: %s[%s] global, B: %s[%s] global%s) threads=%d {\n  grid.%s(B, %sA, axes=(", dt, sd,
        dt, kd, p2, threads_choice[pick(s, 4)], tilec_op_name(o), two ? "I, " : "");
    for (int i = 0; i < na; i++) put(buf, size, &at, "%s%d", i ? ", " : "", axes[i]);
    put(buf, size, &at, ")%s%s)\n}\n", accum ? ", accum=true" : "", ignore ? ", nan=ignore" : "");
}

#endif
