/*
 * v_grid.c — whole-tensor reductions: grid-scope statements, where every CTA of the
 * launch works on one reduction and the variant chooses how many CTAs there are.
 *
 * Reductions read each input byte once, so these kernels are shaped for memory bandwidth:
 * 16-byte loads when the input is aligned, a batch of loads in flight per thread before
 * any is used, and a grid of about one wave of resident CTAs (the device's
 * multiprocessor count, from the target) so no CTA waits for a second wave. Every fold
 * happens in a fixed order, so a given input gives the same bits on every run; there are
 * no floating-point atomics.
 *
 * - grid_split: few outputs, each very long (a whole-array sum, 64 rows of 4M): C CTAs per
 *   output sweep it together, tile by tile (CTA c takes tiles c, c + C, …), each folding
 *   its tiles into a partial in global scratch, then adding 1 to a completion counter;
 *   the CTA that sees the count reach the grid folds the partials (the whole CTA per
 *   output when there are few outputs, else a group of lanes per output) and resets the
 *   counter. One launch.
 * - grid_cta_rows: many long rows (4096 floats and more): a CTA per row, rows spread
 *   evenly over a persistent grid.
 * - grid_rows: shorter rows: groups of g lanes per row as in `shared`; a lane takes 16
 *   bytes at a time, and a group keeps eight rows in flight when a row is one load per lane.
 * - grid_cols: the leading axis reduced, the trailing one kept ([R, I] columns): lanes on
 *   neighbouring columns (16 bytes of columns each when aligned), eight rows in flight,
 *   rows cut into chunks, one CTA per (column block, chunk); the row lanes of a column
 *   fold through shared slots in order, and when there are several chunks the last CTA of
 *   a column block (a counter per block) folds the chunks' partials the same way.
 * - grid_general: any axes: one thread per output, elements folded in order; outputs
 *   spread over the CTAs (consecutive threads take consecutive outputs, so a column
 *   reduction reads coalesced).
 */
#include "dispatch.h"

#include <stdio.h>

enum {
    MAX_CTAS = 1024,    /* grid_general's grid */
    SPLIT_CHUNK = 4096, /* the fewest elements a grid_split CTA takes */
    LOADS_PER_ROW = 4,  /* grid_cta_rows: the fewest 16-byte loads per thread and row */
};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* 16-byte loads a thread keeps in flight: 8 (128 bytes), or 4 for 16-bit elements, which
 * take a register each; either way 32 registers of loaded data. */
static int in_flight(const dsp_query *q) { return tilec_dtype_size(q->st->src.buf->dtype) == 2 ? 4 : 8; }

/* CTAs that fill the device once: about 1024 threads on every multiprocessor, each with
 * in_flight() 16-byte loads under way (128 KB per multiprocessor, what the latency of
 * loaded HBM needs), which leaves registers for 4 such CTAs on every multiprocessor. */
static int64_t grid_cap(const dsp_query *q) {
    int sms = q->target->sms > 0 ? q->target->sms : DSP_DEFAULT_SMS, per = 1024 / q->threads;
    return (int64_t)sms * (per > 1 ? per : 1);
}

/* A grid of at most cap CTAs over `items` equal pieces of work in which every CTA takes
 * the same number of pieces, give or take one in the last round. */
static int64_t balanced_grid(int64_t items, int64_t cap) { return ceil_div(items, ceil_div(items, cap)); }

/* n consecutive registers; the first one's number. */
static int regs_new(lp_kernel *k, lp_type t, const char *name, int n) {
    int first = lp_reg_new(k, t, name);
    for (int j = 1; j < n; j++) lp_reg_new(k, t, name);
    return first;
}

static lp_expr *ival(lp_kernel *k, lp_type t, int64_t v) { return lp_int(k, t, v); }
static lp_expr *add(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_ADD, a, b); }
static lp_expr *mul(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_MUL, a, b); }
static lp_expr *lt(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_LT, a, b); }
static lp_expr *eq(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_EQ, a, b); }
static lp_expr *both(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_AND, a, b); }

static bool any_axes(const dsp_query *q, char *why, size_t n) {
    (void)q, (void)why, (void)n;
    return true;
}

/* The reduced axes are the innermost ones and the source is dense: (outputs, red_len) rows. */
static bool rows(const dsp_query *q, char *why, size_t n) {
    bool seen_reduced = false;
    for (int d = 0; d < q->src_rank; d++) {
        if (q->reduced[d]) seen_reduced = true;
        else if (seen_reduced) {
            snprintf(why, n, "a kept axis (%d) is inside the reduced ones", d);
            return false;
        }
    }
    if (!dsp_region_dense(&q->st->src)) {
        snprintf(why, n, "the source region is not dense");
        return false;
    }
    return true;
}

static bool whole_warps(const dsp_query *q, char *why, size_t n) {
    if (q->threads % q->ws == 0) return true;
    snprintf(why, n, "threads=%d is not a multiple of the warp size (%d)", q->threads, q->ws);
    return false;
}

static int split_chunks(const dsp_query *q) {
    int64_t c = ceil_div(q->red_len, SPLIT_CHUNK), most = grid_cap(q) / q->spatial_len;
    if (most < 1) most = 1;
    return (int)(c < most ? c : most);
}

static bool few_long(const dsp_query *q, char *why, size_t n) {
    if (split_chunks(q) >= 2) return true;
    snprintf(why, n, "%lld outputs of %lld elements: one CTA per output is enough", (long long)q->spatial_len,
             (long long)q->red_len);
    return false;
}

/* Elements per 16-byte load of the source when a load of every `step` elements from the
 * first element of the source is aligned (16-byte aligned parameters, dense, a base and a
 * step that are multiples of the vector), or 1. */
static int src_vector(const dsp_query *q, int64_t step) {
    const ir_region *src = &q->st->src;
    int vec = (int)(16 / tilec_dtype_size(src->buf->dtype));
    if (q->target->unaligned || !src->buf->is_param || !dsp_region_dense(src) || !dsp_region_base_aligned(src, vec))
        return 1;
    return step % vec ? 1 : vec;
}

/* acc = fold of src[s, r] for r in [lo, hi) step stride. */
static void fold_range(dsp_lower *l, lp_block *into, int acc, lp_expr *s, lp_expr *lo, lp_expr *hi, lp_expr *stride) {
    lp_kernel *k = l->k;
    lp_type it = dsp_index_type(l->q->red_len, dsp_lane_step(l, stride));
    int r = lp_reg_new(k, it, "r");
    lp_stmt *loop = lp_for(k, into, r, lp_cast(k, it, lo), lp_cast(k, it, hi), lp_cast(k, it, stride));
    lp_buf *src = lp_buf_for(k, l->q->st->src.buf);
    lp_expr *x = lp_cast(k, k->regs[acc].type, lp_load(k, src, dsp_reduce_src_offset(l, s, lp_reg(k, r))));
    lp_assign(k, &loop->body, acc, dsp_combine(l, lp_reg(k, acc), x));
}

/* acc = fold of the source elements base + v * vec + e for e in [0, vec) and vectors v
 * in [vlo, vhi): a turn of the loop issues `batch` 16-byte loads, v, v + stride, … (those
 * in range), before it uses any, so they are in flight together — the last, partial batch
 * too — then moves v on by `turn` (batch * stride to take every vector); the loads fold
 * into one accumulator per vector lane, in order, and the lanes into acc at the end.
 * base, vlo and vhi have base's index type. */
static void vec_fold(dsp_lower *l, lp_block *b, int acc, lp_expr *base, lp_expr *vlo, lp_expr *vhi, int64_t stride,
                     int vec, int batch, int64_t turn) {
    lp_kernel *k = l->k;
    lp_type at = k->regs[acc].type, it = base->type;
    lp_buf *src = lp_buf_for(k, l->q->st->src.buf);
    int accs = regs_new(k, at, "va", vec), xs = regs_new(k, src->type, "x", batch * vec), vi = lp_reg_new(k, it, "vi");
    for (int e = 0; e < vec; e++) lp_assign(k, b, accs + e, dsp_identity(l));
    lp_block *body = &lp_for(k, b, vi, vlo, vhi, ival(k, it, turn))->body;
    lp_expr *ok[64];
    for (int u = 0; u < batch; u++) { /* the loads first */
        lp_expr *v = u ? add(k, lp_reg(k, vi), ival(k, it, u * stride)) : lp_reg(k, vi);
        ok[u] = u ? lt(k, v, vhi) : NULL; /* the first is in range: the loop says so */
        lp_block *in = ok[u] ? &lp_if(k, body, ok[u])->body : body;
        lp_vload(k, in, xs + u * vec, vec, src, add(k, base, mul(k, v, ival(k, it, vec))));
    }
    for (int u = 0; u < batch; u++) {
        lp_block *in = ok[u] ? &lp_if(k, body, ok[u])->body : body;
        for (int e = 0; e < vec; e++)
            lp_assign(k, in, accs + e, dsp_combine(l, lp_reg(k, accs + e), lp_cast(k, at, lp_reg(k, xs + u * vec + e))));
    }
    for (int e = 0; e < vec; e++) lp_assign(k, b, acc, dsp_combine(l, lp_reg(k, acc), lp_reg(k, accs + e)));
}

/* Folds every thread's acc across the CTA (warp butterflies, one shared slot per warp,
 * warp 0 folds the slots); the result is in thread 0's `out`. Ends with a barrier, so the
 * slots can be used again. */
static void block_fold(dsp_lower *l, lp_block *b, int acc, lp_buf *slots, int out) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int ws = q->ws, nw = q->threads / ws;
    lp_expr *lane = lp_special_expr(k, LP_LANE), *warp = lp_special_expr(k, LP_WARP);
    dsp_xor_tree(l, b, acc, ws);
    lp_store(k, &lp_if(k, b, eq(k, lane, ival(k, LP_I32, 0)))->body, slots, warp, lp_reg(k, acc));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *first = &lp_if(k, b, eq(k, warp, ival(k, LP_I32, 0)))->body;
    lp_assign(k, first, out, dsp_identity(l));
    lp_assign(k, &lp_if(k, first, lt(k, lane, ival(k, LP_I32, nw)))->body, out, lp_load(k, slots, lane));
    int width = 1;
    while (width < nw) width <<= 1;
    dsp_xor_tree(l, first, out, width);
    lp_barrier(k, b, TILEC_SCOPE_CTA);
}

/* Thread 0 counts the CTA as done on `counter` (after a fence that publishes what the
 * CTA wrote); the block returned runs in the CTA that completes the count of `total`,
 * after a fence, on every thread of it. */
static lp_block *when_last(dsp_lower *l, lp_block *b, lp_buf *counter, lp_expr *which, int64_t total) {
    lp_kernel *k = l->k;
    lp_buf *last = lp_buf_scratch(k, "last", LP_I32, 1);
    lp_expr *tid = lp_special_expr(k, LP_TID);
    lp_block *t0 = &lp_if(k, b, eq(k, tid, ival(k, LP_I32, 0)))->body;
    lp_fence(k, t0);
    int old = lp_reg_new(k, LP_U32, "done");
    lp_atomic_add(k, t0, old, counter, which, ival(k, LP_U32, 1));
    lp_store(k, t0, last, ival(k, LP_I32, 0), lp_cast(k, LP_I32, eq(k, lp_reg(k, old), ival(k, LP_U32, total - 1))));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *fin = &lp_if(k, b, lp_binary(k, LO_NE, lp_load(k, last, ival(k, LP_I32, 0)), ival(k, LP_I32, 0)))->body;
    lp_fence(k, fin);
    return fin;
}

static bool lower_split(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int T = q->threads, C = split_chunks(q);
    int64_t S = q->spatial_len, R = q->red_len;
    int vec = src_vector(q, S > 1 ? R : 0); /* one output: only its start must be aligned */
    /* indices reach a turn of vectors past the end (their loads are guarded off) */
    lp_type at = dsp_acc_type(q), it = dsp_index_type(S * R, (int64_t)C * T * in_flight(q) * 16);
    k->grid = S * C;
    lp_buf *partials = lp_buf_scratch_global(k, "partials", at, S * C);
    lp_buf *counter = lp_buf_scratch_global(k, "counter", LP_U32, 1);
    lp_buf *slots = lp_buf_scratch(k, "slots", at, T / q->ws);
    lp_expr *tid = lp_special_expr(k, LP_TID), *itid = lp_cast(k, it, tid);
    int s = lp_reg_new(k, it, "s"), c = lp_reg_new(k, it, "chunk");
    lp_block *b = l->into;
    lp_expr *cta = lp_cast(k, it, lp_special_expr(k, LP_CTA));
    lp_assign(k, b, s, lp_binary(k, LO_DIV, cta, ival(k, it, C)));
    lp_assign(k, b, c, lp_binary(k, LO_REM, cta, ival(k, it, C)));
    int acc = lp_reg_new(k, at, "acc");
    lp_assign(k, b, acc, dsp_identity(l));
    if (vec > 1) {
        /* the output's vectors in tiles of T * batch, CTA c taking tiles c, c + C, …: all
         * the CTAs of an output sweep it together (measured on the H200: 4.67 TB/s for a
         * 2^30 sum, against 4.34 with a contiguous chunk per CTA); the elements after the
         * last whole vector go to the last CTA */
        int batch = in_flight(q);
        lp_expr *row = mul(k, lp_reg(k, s), ival(k, it, R));
        vec_fold(l, b, acc, row, add(k, mul(k, lp_reg(k, c), ival(k, it, (int64_t)T * batch)), itid),
                 ival(k, it, R / vec), T, vec, batch, (int64_t)C * T * batch);
        lp_block *last = &lp_if(k, b, eq(k, lp_reg(k, c), ival(k, it, C - 1)))->body;
        fold_range(l, last, acc, lp_reg(k, s), add(k, ival(k, it, R / vec * vec), itid), ival(k, it, R), ival(k, it, T));
    } else {
        /* element by element: a contiguous chunk per CTA */
        int64_t L = ceil_div(R, C);
        lp_expr *lo = mul(k, lp_reg(k, c), ival(k, it, L));
        lp_expr *hi = lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, add(k, lo, ival(k, it, L)), ival(k, it, R));
        fold_range(l, b, acc, lp_reg(k, s), add(k, lo, itid), hi, ival(k, it, T));
    }
    /* the CTA's partial, published by thread 0, which then counts this CTA as done */
    int v = lp_reg_new(k, at, "v");
    block_fold(l, b, acc, slots, v);
    lp_store(k, &lp_if(k, b, eq(k, tid, ival(k, LP_I32, 0)))->body, partials, lp_special_expr(k, LP_CTA), lp_reg(k, v));
    lp_block *fin = when_last(l, b, counter, ival(k, LP_I32, 0), k->grid);
    /* the last CTA folds every output's C partials, in an order fixed by C and T: with
     * few outputs of many partials, every thread takes partials t, t + T, … of an output
     * and the CTA folds the threads' results (the fewest dependent loads); otherwise a
     * group of gf lanes per output, lane j taking partials j, j + gf, …, then a butterfly */
    lp_type pt = dsp_index_type(S * C, T);
    lp_expr *ptid = lp_cast(k, pt, tid);
    int o = lp_reg_new(k, pt, "o"), j = lp_reg_new(k, pt, "j"), tot = lp_reg_new(k, at, "total");
    if (C > q->ws && S <= T / q->ws) {
        int res = lp_reg_new(k, at, "res");
        lp_block *each = &lp_for(k, fin, o, ival(k, pt, 0), ival(k, pt, S), ival(k, pt, 1))->body;
        lp_assign(k, each, tot, dsp_identity(l));
        lp_block *inner = &lp_for(k, each, j, ptid, ival(k, pt, C), ival(k, pt, T))->body;
        lp_assign(k, inner, tot, dsp_combine(l, lp_reg(k, tot), lp_load(k, partials, add(k, mul(k, lp_reg(k, o), ival(k, pt, C)), lp_reg(k, j)))));
        block_fold(l, each, tot, slots, res);
        dsp_store_output(l, &lp_if(k, each, eq(k, tid, ival(k, LP_I32, 0)))->body, lp_reg(k, o), lp_reg(k, res));
    } else {
        int gf = 1;
        while (gf < C && gf < q->ws) gf <<= 1;
        int64_t per = T / gf;
        int o0 = lp_reg_new(k, pt, "o0");
        lp_block *round = &lp_for(k, fin, o0, ival(k, pt, 0), ival(k, pt, S), ival(k, pt, per))->body;
        lp_assign(k, round, o, add(k, lp_reg(k, o0), lp_binary(k, LO_DIV, ptid, ival(k, pt, gf))));
        lp_assign(k, round, tot, dsp_identity(l));
        lp_expr *mine = lt(k, lp_reg(k, o), ival(k, pt, S));
        lp_block *gather = &lp_if(k, round, mine)->body;
        lp_block *inner = &lp_for(k, gather, j, lp_binary(k, LO_REM, ptid, ival(k, pt, gf)), ival(k, pt, C), ival(k, pt, gf))->body;
        lp_assign(k, inner, tot, dsp_combine(l, lp_reg(k, tot), lp_load(k, partials, add(k, mul(k, lp_reg(k, o), ival(k, pt, C)), lp_reg(k, j)))));
        dsp_xor_tree(l, round, tot, gf);
        lp_expr *leader = both(k, mine, eq(k, lp_binary(k, LO_REM, ptid, ival(k, pt, gf)), ival(k, pt, 0)));
        dsp_store_output(l, &lp_if(k, round, leader)->body, lp_reg(k, o), lp_reg(k, tot));
    }
    lp_store(k, &lp_if(k, fin, eq(k, tid, ival(k, LP_I32, 0)))->body, counter, ival(k, LP_I32, 0),
             ival(k, LP_U32, 0)); /* ready for the next launch */
    return true;
}

/* Rows long enough that a CTA per row gives each thread LOADS_PER_ROW 16-byte loads. */
static bool long_rows(const dsp_query *q, char *why, size_t n) {
    int64_t bytes = q->red_len * (int64_t)tilec_dtype_size(q->st->src.buf->dtype);
    if (bytes >= (int64_t)q->threads * 16 * LOADS_PER_ROW) return true;
    snprintf(why, n, "rows of %lld bytes give %d threads fewer than %d 16-byte loads each", (long long)bytes, q->threads,
             LOADS_PER_ROW);
    return false;
}

static bool lower_cta_rows(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int T = q->threads, vec = src_vector(q, q->red_len);
    int64_t S = q->spatial_len, R = q->red_len, grid = balanced_grid(S, grid_cap(q));
    k->grid = grid;
    lp_type at = dsp_acc_type(q), it = dsp_index_type(S * R + grid * R, (int64_t)T * in_flight(q) * 16);
    lp_buf *slots = lp_buf_scratch(k, "slots", at, T / q->ws);
    lp_expr *tid = lp_special_expr(k, LP_TID), *itid = lp_cast(k, it, tid);
    int step = lp_reg_new(k, it, "step"), s = lp_reg_new(k, it, "s"), acc = lp_reg_new(k, at, "acc"), v = lp_reg_new(k, at, "v");
    lp_block *body = &lp_for(k, l->into, step, ival(k, it, 0), ival(k, it, ceil_div(S, grid)), ival(k, it, 1))->body;
    lp_assign(k, body, s, add(k, mul(k, lp_reg(k, step), ival(k, it, grid)), lp_cast(k, it, lp_special_expr(k, LP_CTA))));
    lp_assign(k, body, acc, dsp_identity(l));
    lp_expr *in_range = lt(k, lp_reg(k, s), ival(k, it, S)); /* the same for the whole CTA */
    lp_block *row = &lp_if(k, body, in_range)->body;
    if (vec > 1)
        vec_fold(l, row, acc, mul(k, lp_reg(k, s), ival(k, it, R)), itid, ival(k, it, R / vec), T, vec, in_flight(q),
                 (int64_t)T * in_flight(q));
    else
        fold_range(l, row, acc, lp_reg(k, s), itid, ival(k, it, R), ival(k, it, T));
    block_fold(l, body, acc, slots, v);
    dsp_store_output(l, &lp_if(k, body, both(k, in_range, eq(k, tid, ival(k, LP_I32, 0))))->body, lp_reg(k, s), lp_reg(k, v));
    return true;
}

static bool lower_rows(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int64_t S = q->spatial_len, R = q->red_len;
    /* 16-byte loads when every row starts aligned: a lane then takes vec elements at a
     * time, so a row of 32 floats is 8 lanes of one float4 each */
    int vec = src_vector(q, R), g = q->group, unroll = 1, rows_per = 1;
    int64_t nv = R / vec, per_lane = 0;
    if (vec > 1) {
        int64_t lanes = 1;
        while (lanes < nv && lanes < q->ws) lanes <<= 1;
        int divides = q->threads & -q->threads;
        g = (int)(lanes < divides ? lanes : divides);
        per_lane = ceil_div(nv, g);
        /* a row of one load per lane: a group keeps in_flight() rows in flight; longer
         * rows: that many loads of one row */
        int most = in_flight(q);
        if (per_lane == 1) rows_per = most;
        else unroll = per_lane < most ? (int)per_lane : most;
    }
    int per = q->threads / g;
    int64_t blocks = ceil_div(S, (int64_t)per * rows_per), grid = balanced_grid(blocks, grid_cap(q));
    k->grid = grid;
    int64_t steps = ceil_div(blocks, grid);
    lp_type it = dsp_index_type(S, grid * per * rows_per), at = dsp_acc_type(q);
    lp_type rt = dsp_index_type(S * R + R * per * rows_per, (int64_t)g * unroll * vec);
    lp_expr *tid = lp_cast(k, it, lp_special_expr(k, LP_TID));
    int lane = lp_reg_new(k, it, "lane"), grp = lp_reg_new(k, it, "grp"), step = lp_reg_new(k, it, "step");
    int s = regs_new(k, it, "s", rows_per), acc = regs_new(k, at, "acc", rows_per);
    lp_assign(k, l->into, lane, g > 1 ? lp_binary(k, LO_REM, tid, ival(k, it, g)) : ival(k, it, 0));
    lp_assign(k, l->into, grp, g > 1 ? lp_binary(k, LO_DIV, tid, ival(k, it, g)) : tid);
    lp_block *body = &lp_for(k, l->into, step, ival(k, it, 0), ival(k, it, steps), ival(k, it, 1))->body;
    /* consecutive CTAs take consecutive blocks of rows; consecutive groups, consecutive rows */
    lp_expr *block = add(k, mul(k, lp_reg(k, step), ival(k, it, grid)), lp_cast(k, it, lp_special_expr(k, LP_CTA)));
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    int xs = rows_per > 1 ? regs_new(k, src->type, "x", rows_per * vec) : 0;
    for (int u = 0; u < rows_per; u++) {
        lp_expr *first = mul(k, add(k, mul(k, block, ival(k, it, rows_per)), ival(k, it, u)), ival(k, it, per));
        lp_assign(k, body, s + u, add(k, first, lp_reg(k, grp)));
        lp_assign(k, body, acc + u, dsp_identity(l));
        lp_block *gather = &lp_if(k, body, lt(k, lp_reg(k, s + u), ival(k, it, S)))->body;
        lp_expr *row = mul(k, lp_cast(k, rt, lp_reg(k, s + u)), ival(k, rt, R));
        if (rows_per > 1) { /* one vector: this lane's, if the row has one for it */
            lp_block *has = &lp_if(k, gather, lt(k, lp_reg(k, lane), ival(k, it, nv)))->body;
            lp_vload(k, has, xs + u * vec, vec, src, add(k, row, mul(k, lp_cast(k, rt, lp_reg(k, lane)), ival(k, rt, vec))));
            for (int j = 0; j < vec; j++)
                lp_assign(k, has, acc + u, dsp_combine(l, lp_reg(k, acc + u), lp_cast(k, at, lp_reg(k, xs + u * vec + j))));
        } else if (vec > 1) {
            vec_fold(l, gather, acc, row, lp_cast(k, rt, lp_reg(k, lane)), ival(k, rt, nv), g, vec, unroll, (int64_t)g * unroll);
        } else {
            dsp_accumulate(l, gather, acc, lp_reg(k, s), lp_reg(k, lane), ival(k, it, g));
        }
    }
    for (int u = 0; u < rows_per; u++) dsp_xor_tree(l, body, acc + u, g);
    for (int u = 0; u < rows_per; u++) {
        lp_expr *leader = both(k, lt(k, lp_reg(k, s + u), ival(k, it, S)), eq(k, lp_reg(k, lane), ival(k, it, 0)));
        dsp_store_output(l, &lp_if(k, body, leader)->body, lp_reg(k, s + u), lp_reg(k, acc + u));
    }
    return true;
}

/* Columns per 16-byte load: the source is an aligned parameter and a row holds whole
 * vectors; else 1. */
static int cols_vector(const dsp_query *q) { return src_vector(q, q->src_dims[1]); }

/* The view is [R, I]: the leading axis reduced, the trailing one kept, dense. */
static bool cols(const dsp_query *q, char *why, size_t n) {
    if (q->src_rank != 2 || !q->reduced[0] || q->reduced[1] || !dsp_region_dense(&q->st->src)) {
        snprintf(why, n, "not a dense [reduced, kept] view");
        return false;
    }
    if (q->src_dims[1] > 8192 && cols_vector(q) == 1) { /* enough columns for a thread each (grid_general) */
        snprintf(why, n, "%lld unaligned columns keep a thread per column busy", (long long)q->src_dims[1]);
        return false;
    }
    if (q->threads % 32) {
        snprintf(why, n, "threads=%d is not a multiple of 32", q->threads);
        return false;
    }
    return true;
}

/* The layout of grid_cols: cw column lanes (each on vec neighbouring columns) by rw row
 * lanes in a CTA; thread tid = rl * cw + cl works on vector column j = blk * cw + cl, and
 * the CTA's block covers cw * vec columns from blk * cw * vec. */
typedef struct cols_plan {
    int vec, cw, rw;
    int64_t R, I;
    lp_type it;
    int blk, cl, rl, j; /* registers */
    lp_buf *slots;      /* threads * vec accumulators: thread tid's column e at tid * vec + e */
} cols_plan;

/* Folds rows [lo, hi) of buf, an [rows, I] buffer, for the CTA's block of columns: each
 * row lane folds rows lo + rl, lo + rl + rw, … of its vec columns into shared slots, a
 * turn of its loop loading in_flight() rows (those in range) before it folds them, with
 * 16-byte loads when `vector`; then the threads fold the cw * vec local columns over the rw
 * row lanes in order into `part`, thread t taking columns t, t + T, … (a CTA may have
 * fewer threads than the block has columns). Every thread of the CTA runs it (it has a
 * barrier); `active` says which threads load. Returns the block where part holds column
 * blk * cw * vec + *local, for the local columns that exist. */
static lp_block *cols_fold(dsp_lower *l, lp_block *b, const cols_plan *c, lp_buf *buf, bool vector, lp_expr *lo,
                           lp_expr *hi, lp_expr *active, int part, int *local) {
    lp_kernel *k = l->k;
    int vec = c->vec, width = c->cw * vec, batch = in_flight(l->q);
    lp_type at = dsp_acc_type(l->q), it = c->it;
    int accs = regs_new(k, at, "ca", vec), xs = regs_new(k, buf->type, "cx", batch * vec), r = lp_reg_new(k, it, "r");
    for (int e = 0; e < vec; e++) lp_assign(k, b, accs + e, dsp_identity(l));
    lp_block *in = &lp_if(k, b, active)->body;
    lp_expr *col = mul(k, lp_reg(k, c->j), ival(k, it, vec));
    lp_block *body = &lp_for(k, in, r, add(k, lo, lp_reg(k, c->rl)), hi, ival(k, it, (int64_t)batch * c->rw))->body;
    lp_expr *ok[64];
    for (int u = 0; u < batch; u++) { /* the loads first */
        lp_expr *row = u ? add(k, lp_reg(k, r), ival(k, it, (int64_t)u * c->rw)) : lp_reg(k, r);
        ok[u] = u ? lt(k, row, hi) : NULL;
        lp_block *at_u = ok[u] ? &lp_if(k, body, ok[u])->body : body;
        lp_expr *first = add(k, mul(k, row, ival(k, it, c->I)), col);
        if (vector && vec > 1) lp_vload(k, at_u, xs + u * vec, vec, buf, first);
        else
            for (int e = 0; e < vec; e++)
                lp_assign(k, at_u, xs + u * vec + e, lp_load(k, buf, e ? add(k, first, ival(k, it, e)) : first));
    }
    for (int u = 0; u < batch; u++) {
        lp_block *at_u = ok[u] ? &lp_if(k, body, ok[u])->body : body;
        for (int e = 0; e < vec; e++)
            lp_assign(k, at_u, accs + e, dsp_combine(l, lp_reg(k, accs + e), lp_cast(k, at, lp_reg(k, xs + u * vec + e))));
    }
    lp_expr *tid = lp_special_expr(k, LP_TID);
    for (int e = 0; e < vec; e++) {
        lp_expr *slot = mul(k, tid, ival(k, LP_I32, vec));
        lp_store(k, b, c->slots, e ? add(k, slot, ival(k, LP_I32, e)) : slot, lp_reg(k, accs + e));
    }
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    /* local column t: slots t, t + width, … (row lane m's at m * width + t), in order */
    int t = lp_reg_new(k, LP_I32, "t");
    lp_block *each = &lp_for(k, b, t, tid, ival(k, LP_I32, width), ival(k, LP_I32, l->q->threads))->body;
    lp_expr *first = mul(k, lp_reg(k, c->blk), ival(k, it, width));
    lp_block *lead = &lp_if(k, each, lt(k, add(k, first, lp_cast(k, it, lp_reg(k, t))), ival(k, it, c->I)))->body;
    int m = lp_reg_new(k, LP_I32, "m");
    lp_assign(k, lead, part, dsp_identity(l));
    lp_block *fold = &lp_for(k, lead, m, ival(k, LP_I32, 0), ival(k, LP_I32, c->rw), ival(k, LP_I32, 1))->body;
    lp_assign(k, fold, part, dsp_combine(l, lp_reg(k, part), lp_load(k, c->slots, add(k, mul(k, lp_reg(k, m), ival(k, LP_I32, width)), lp_reg(k, t)))));
    *local = t;
    return lead;
}

static bool lower_cols(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int T = q->threads;
    cols_plan c = {.vec = cols_vector(q), .R = q->src_dims[0], .I = q->src_dims[1]};
    int64_t V = c.I / c.vec; /* vector columns */
    c.cw = V < 32 ? (int)V : 32;
    c.rw = T / c.cw;
    int64_t nb = ceil_div(V, c.cw), most = grid_cap(q) / nb;
    int64_t C = ceil_div(c.R, (int64_t)c.rw * 16); /* at least 16 rows per row lane */
    if (C > most) C = most;
    if (C < 1) C = 1;
    int64_t L = ceil_div(c.R, C);
    k->grid = nb * C;
    c.it = dsp_index_type((c.R + (int64_t)in_flight(q) * c.rw) * c.I, (int64_t)T * c.I); /* rows past the end: guarded */
    lp_type at = dsp_acc_type(q), it = c.it;
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    c.slots = lp_buf_scratch(k, "slots", at, (int64_t)T * c.vec);
    lp_expr *tid = lp_cast(k, it, lp_special_expr(k, LP_TID));
    int chunk = lp_reg_new(k, it, "chunk"), hi = lp_reg_new(k, it, "hi");
    c.blk = lp_reg_new(k, it, "blk");
    c.cl = lp_reg_new(k, it, "cl");
    c.rl = lp_reg_new(k, it, "rl");
    c.j = lp_reg_new(k, it, "j");
    lp_block *b = l->into;
    lp_expr *cta = lp_cast(k, it, lp_special_expr(k, LP_CTA));
    lp_assign(k, b, c.blk, lp_binary(k, LO_REM, cta, ival(k, it, nb)));
    lp_assign(k, b, chunk, lp_binary(k, LO_DIV, cta, ival(k, it, nb)));
    lp_assign(k, b, c.cl, lp_binary(k, LO_REM, tid, ival(k, it, c.cw)));
    lp_assign(k, b, c.rl, lp_binary(k, LO_DIV, tid, ival(k, it, c.cw)));
    lp_assign(k, b, c.j, add(k, mul(k, lp_reg(k, c.blk), ival(k, it, c.cw)), lp_reg(k, c.cl)));
    lp_expr *lo = mul(k, lp_reg(k, chunk), ival(k, it, L));
    lp_assign(k, b, hi, lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, add(k, lo, ival(k, it, L)), ival(k, it, c.R)));
    /* threads past the last whole row of lanes, or past the last column, load nothing */
    lp_expr *active = both(k, lt(k, lp_reg(k, c.j), ival(k, it, V)), lt(k, lp_reg(k, c.rl), ival(k, it, c.rw)));
    int part = lp_reg_new(k, at, "part");
    int local;
    lp_block *lead = cols_fold(l, b, &c, src, true, lo, lp_reg(k, hi), active, part, &local);
    lp_expr *out = add(k, mul(k, lp_reg(k, c.blk), ival(k, it, (int64_t)c.cw * c.vec)), lp_cast(k, it, lp_reg(k, local)));
    if (C == 1) {
        dsp_store_output(l, lead, out, lp_reg(k, part));
        return true;
    }
    /* several chunks: partials [C, I], a counter per column block, and the last CTA of a
     * block folds the block's partials with every thread, as it folded its rows */
    lp_buf *partials = lp_buf_scratch_global(k, "partials", at, C * c.I);
    lp_buf *counters = lp_buf_scratch_global(k, "counters", LP_U32, nb);
    lp_store(k, lead, partials, add(k, mul(k, lp_reg(k, chunk), ival(k, it, c.I)), out), lp_reg(k, part));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *fin = when_last(l, b, counters, lp_reg(k, c.blk), C);
    int total = lp_reg_new(k, at, "total");
    lp_block *mine = cols_fold(l, fin, &c, partials, false, ival(k, it, 0), ival(k, it, C), active, total, &local);
    out = add(k, mul(k, lp_reg(k, c.blk), ival(k, it, (int64_t)c.cw * c.vec)), lp_cast(k, it, lp_reg(k, local)));
    dsp_store_output(l, mine, out, lp_reg(k, total));
    lp_store(k, &lp_if(k, fin, eq(k, lp_special_expr(k, LP_TID), ival(k, LP_I32, 0)))->body, counters, lp_reg(k, c.blk),
             ival(k, LP_U32, 0)); /* ready for the next launch */
    return true;
}

static bool lower_general(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int T = q->threads;
    int64_t S = q->spatial_len, grid = ceil_div(S, T);
    if (grid > MAX_CTAS) grid = MAX_CTAS;
    k->grid = grid;
    lp_type it = dsp_index_type(S, grid * T);
    lp_expr *first = add(k, mul(k, lp_cast(k, it, lp_special_expr(k, LP_CTA)), ival(k, it, T)),
                         lp_cast(k, it, lp_special_expr(k, LP_TID)));
    int s = lp_reg_new(k, it, "s"), acc = lp_reg_new(k, dsp_acc_type(q), "acc");
    lp_block *body = &lp_for(k, l->into, s, first, ival(k, it, S), ival(k, it, grid * T))->body;
    lp_assign(k, body, acc, dsp_identity(l));
    dsp_accumulate(l, body, acc, lp_reg(k, s), ival(k, it, 0), ival(k, it, 1));
    dsp_store_output(l, body, lp_reg(k, s), lp_reg(k, acc));
    return true;
}

const dsp_case dsp_case_grid_split = {
    .variant = "grid_split",
    .priority = 30,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"rows", rows}, {"whole_warps", whole_warps}, {"few_long", few_long}},
    .lower = lower_split,
    .summary = "each output's elements split over CTAs; partials, a completion counter, the last CTA folds in order",
};

const dsp_case dsp_case_grid_cols = {
    .variant = "grid_cols",
    .priority = 25,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"cols", cols}},
    .lower = lower_cols,
    .summary = "columns: lanes on neighbouring columns, eight rows in flight, rows split over CTAs, partials folded in order",
};

const dsp_case dsp_case_grid_cta_rows = {
    .variant = "grid_cta_rows",
    .priority = 22,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"rows", rows}, {"whole_warps", whole_warps}, {"long_rows", long_rows}},
    .lower = lower_cta_rows,
    .summary = "a CTA per long row, rows spread evenly over one wave of CTAs",
};

const dsp_case dsp_case_grid_rows = {
    .variant = "grid_rows",
    .priority = 20,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"rows", rows}},
    .lower = lower_rows,
    .summary = "groups of g lanes per row, shuffle butterfly, rows spread over the CTAs",
};

const dsp_case dsp_case_grid_general = {
    .variant = "grid_general",
    .priority = 10,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"any_axes", any_axes}},
    .lower = lower_general,
    .summary = "one thread per output, elements in order; outputs spread over the CTAs",
};
