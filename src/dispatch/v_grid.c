/*
 * v_grid.c — whole-tensor reductions: grid-scope statements, where every CTA of the
 * launch works on one reduction and the variant chooses how many CTAs there are.
 *
 * - grid_split: few outputs, each very long (a whole-array sum, 64 rows of 4M): every
 *   output's elements are cut into C chunks, one CTA per chunk folds its chunk (warp
 *   butterflies, one shared slot per warp) into a partial in global scratch, then adds 1
 *   to a completion counter; the CTA that sees the count reach the grid folds each
 *   output's C partials in order and resets the counter. One launch, and the same bits on
 *   every run (the order of every fold is fixed; no floating-point atomics).
 * - grid_rows: reduced axes innermost (rows): groups of g lanes per row as in `shared`,
 *   rows spread over the CTAs.
 * - grid_cols: the leading axis reduced, the trailing one kept ([R, I] columns): 32
 *   lanes (or I, when fewer) read 32 neighbouring columns of a row, so loads coalesce; the
 *   rows are cut into chunks, one CTA per (column block, chunk); the lanes of a column fold
 *   their partials through shared slots in order, and when there are several chunks the
 *   last CTA of a column block (a counter per block) folds the chunks' partials in order.
 * - grid_general: any axes: one thread per output, elements folded in order; outputs
 *   spread over the CTAs (consecutive threads take consecutive outputs, so a column
 *   reduction reads coalesced).
 */
#include "dispatch.h"

#include <stdio.h>

enum { MAX_CTAS = 1024, SPLIT_CHUNK = 4096, SPLIT_CTAS = 2048, COLS_CTAS = 1024 };

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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

static int split_chunks(const dsp_query *q) {
    int64_t c = ceil_div(q->red_len, SPLIT_CHUNK), most = SPLIT_CTAS / q->spatial_len;
    if (most < 1) most = 1;
    return (int)(c < most ? c : most);
}

static bool few_long(const dsp_query *q, char *why, size_t n) {
    if (split_chunks(q) >= 2 && q->threads % q->ws == 0) return true;
    if (q->threads % q->ws)
        snprintf(why, n, "threads=%d is not a multiple of the warp size (%d)", q->threads, q->ws);
    else
        snprintf(why, n, "%lld outputs of %lld elements: one CTA per output is enough", (long long)q->spatial_len,
                 (long long)q->red_len);
    return false;
}

/* Elements per 16-byte load of the source when every chunk of every output starts
 * aligned, or 1. */
static int split_vector(const dsp_query *q, int64_t chunk) {
    const ir_region *src = &q->st->src;
    int vec = (int)(16 / tilec_dtype_size(src->buf->dtype));
    if (q->target->unaligned || !src->buf->is_param || !dsp_region_dense(src) || !dsp_region_base_aligned(src, vec))
        return 1;
    if ((q->spatial_len > 1 && q->red_len % vec) || chunk % vec) return 1;
    return vec;
}

/* acc = fold of src[s, r] for r in [lo, hi) step stride. */
static void fold_range(dsp_lower *l, lp_block *into, int acc, lp_expr *s, lp_expr *lo, lp_expr *hi, lp_expr *stride) {
    lp_kernel *k = l->k;
    lp_type it = dsp_index_type(l->q->red_len);
    int r = lp_reg_new(k, it, "r");
    lp_stmt *loop = lp_for(k, into, r, lp_cast(k, it, lo), lp_cast(k, it, hi), lp_cast(k, it, stride));
    lp_buf *src = lp_buf_for(k, l->q->st->src.buf);
    lp_expr *x = lp_cast(k, k->regs[acc].type, lp_load(k, src, dsp_reduce_src_offset(l, s, lp_reg(k, r))));
    lp_assign(k, &loop->body, acc, dsp_combine(l, lp_reg(k, acc), x));
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
    lp_store(k, &lp_if(k, b, lp_binary(k, LO_EQ, lane, lp_int(k, LP_I32, 0)))->body, slots, warp, lp_reg(k, acc));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *first = &lp_if(k, b, lp_binary(k, LO_EQ, warp, lp_int(k, LP_I32, 0)))->body;
    lp_assign(k, first, out, dsp_identity(l));
    lp_assign(k, &lp_if(k, first, lp_binary(k, LO_LT, lane, lp_int(k, LP_I32, nw)))->body, out, lp_load(k, slots, lane));
    int width = 1;
    while (width < nw) width <<= 1;
    dsp_xor_tree(l, first, out, width);
    lp_barrier(k, b, TILEC_SCOPE_CTA);
}

static bool lower_split(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int T = q->threads, nw = T / q->ws, C = split_chunks(q);
    int64_t S = q->spatial_len, R = q->red_len, L = ceil_div(R, C);
    int vec = (int)(16 / tilec_dtype_size(q->st->src.buf->dtype));
    L = ceil_div(L, vec) * vec; /* chunks start on 16-byte boundaries */
    vec = split_vector(q, L);
    lp_type at = dsp_acc_type(q), it = dsp_index_type(R);
    k->grid = S * C;
    lp_buf *partials = lp_buf_scratch_global(k, "partials", at, S * C);
    lp_buf *counter = lp_buf_scratch_global(k, "counter", LP_U32, 1);
    lp_buf *slots = lp_buf_scratch(k, "slots", at, nw);
    lp_buf *last = lp_buf_scratch(k, "last", LP_I32, 1);
    lp_expr *tid = lp_special_expr(k, LP_TID);
    int s = lp_reg_new(k, it, "s"), c = lp_reg_new(k, it, "chunk"), lo = lp_reg_new(k, it, "lo"), hi = lp_reg_new(k, it, "hi");
    lp_block *b = l->into;
    lp_expr *cta = lp_cast(k, it, lp_special_expr(k, LP_CTA));
    lp_assign(k, b, s, lp_binary(k, LO_DIV, cta, lp_int(k, it, C)));
    lp_assign(k, b, c, lp_binary(k, LO_REM, cta, lp_int(k, it, C)));
    lp_assign(k, b, lo, lp_binary(k, LO_MUL, lp_reg(k, c), lp_int(k, it, L)));
    lp_assign(k, b, hi, lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, lp_binary(k, LO_ADD, lp_reg(k, lo), lp_int(k, it, L)),
                                  lp_int(k, it, R)));
    /* this CTA's chunk: threads stride over it, then warps and slots combine */
    int acc = lp_reg_new(k, at, "acc");
    lp_assign(k, b, acc, dsp_identity(l));
    if (vec > 1) {
        /* 16 bytes per load, one accumulator per lane of the vector (folded in order
         * after), then the chunk's tail element by element */
        /* UNROLL loads in flight per thread, each with its own accumulators, then a loop
         * for the vectors left over; the accumulators are folded in a fixed order */
        enum { UNROLL = 4 };
        lp_buf *src = lp_buf_for(k, q->st->src.buf);
        int accs = lp_reg_new(k, at, "va");
        for (int j = 1; j < UNROLL * vec; j++) lp_reg_new(k, at, "va");
        for (int j = 0; j < UNROLL * vec; j++) lp_assign(k, b, accs + j, dsp_identity(l));
        int vlo = lp_reg_new(k, it, "vlo"), vhi = lp_reg_new(k, it, "vhi"), vi = lp_reg_new(k, it, "vi");
        lp_assign(k, b, vlo, lp_binary(k, LO_DIV, lp_reg(k, lo), lp_int(k, it, vec)));
        lp_assign(k, b, vhi, lp_binary(k, LO_DIV, lp_reg(k, hi), lp_int(k, it, vec)));
        int regs = lp_reg_new(k, src->type, "x");
        for (int j = 1; j < UNROLL * vec; j++) lp_reg_new(k, src->type, "x");
        lp_expr *row = lp_binary(k, LO_MUL, lp_reg(k, s), lp_int(k, it, R));
        lp_block *body = &lp_for(k, b, vi, lp_binary(k, LO_ADD, lp_reg(k, vlo), lp_cast(k, it, tid)),
                                 lp_binary(k, LO_SUB, lp_reg(k, vhi), lp_int(k, it, (int64_t)(UNROLL - 1) * T)),
                                 lp_int(k, it, (int64_t)UNROLL * T))->body;
        for (int u = 0; u < UNROLL; u++) {
            lp_expr *at_u = lp_binary(k, LO_MUL, lp_binary(k, LO_ADD, lp_reg(k, vi), lp_int(k, it, (int64_t)u * T)), lp_int(k, it, vec));
            lp_vload(k, body, regs + u * vec, vec, src, lp_binary(k, LO_ADD, row, at_u));
        }
        for (int u = 0; u < UNROLL; u++)
            for (int j = 0; j < vec; j++)
                lp_assign(k, body, accs + u * vec + j,
                          dsp_combine(l, lp_reg(k, accs + u * vec + j), lp_cast(k, at, lp_reg(k, regs + u * vec + j))));
        lp_block *rest = &lp_for(k, b, vi, lp_reg(k, vi), lp_reg(k, vhi), lp_int(k, it, T))->body;
        lp_vload(k, rest, regs, vec, src, lp_binary(k, LO_ADD, row, lp_binary(k, LO_MUL, lp_reg(k, vi), lp_int(k, it, vec))));
        for (int j = 0; j < vec; j++)
            lp_assign(k, rest, accs + j, dsp_combine(l, lp_reg(k, accs + j), lp_cast(k, at, lp_reg(k, regs + j))));
        for (int j = 0; j < UNROLL * vec; j++) lp_assign(k, b, acc, dsp_combine(l, lp_reg(k, acc), lp_reg(k, accs + j)));
        fold_range(l, b, acc, lp_reg(k, s),
                   lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, vhi), lp_int(k, it, vec)), lp_cast(k, it, tid)),
                   lp_reg(k, hi), lp_int(k, it, T));
    } else {
        fold_range(l, b, acc, lp_reg(k, s), lp_binary(k, LO_ADD, lp_reg(k, lo), lp_cast(k, it, tid)), lp_reg(k, hi),
                   lp_int(k, it, T));
    }
    /* the CTA's partial, published by thread 0, which then counts this CTA as done */
    int v = lp_reg_new(k, at, "v");
    block_fold(l, b, acc, slots, v);
    lp_block *t0 = &lp_if(k, b, lp_binary(k, LO_EQ, tid, lp_int(k, LP_I32, 0)))->body;
    lp_store(k, t0, partials, lp_special_expr(k, LP_CTA), lp_reg(k, v));
    lp_fence(k, t0);
    int old = lp_reg_new(k, LP_U32, "done");
    lp_atomic_add(k, t0, old, counter, lp_int(k, LP_I32, 0), lp_int(k, LP_U32, 1));
    lp_store(k, t0, last, lp_int(k, LP_I32, 0),
             lp_cast(k, LP_I32, lp_binary(k, LO_EQ, lp_reg(k, old), lp_int(k, LP_U32, k->grid - 1))));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    /* the last CTA folds every output's partials in chunk order */
    lp_block *fin = &lp_if(k, b, lp_binary(k, LO_NE, lp_load(k, last, lp_int(k, LP_I32, 0)), lp_int(k, LP_I32, 0)))->body;
    lp_fence(k, fin);
    /* every output's C partials: thread t folds partials t, t + T, … in order, then the
     * CTA folds the threads' results (the same order on every run) */
    lp_type pt = dsp_index_type(S * C);
    int o = lp_reg_new(k, pt, "o"), j = lp_reg_new(k, pt, "j"), tot = lp_reg_new(k, at, "total"), res = lp_reg_new(k, at, "res");
    lp_block *each = &lp_for(k, fin, o, lp_int(k, pt, 0), lp_int(k, pt, S), lp_int(k, pt, 1))->body;
    lp_assign(k, each, tot, dsp_identity(l));
    lp_block *inner = &lp_for(k, each, j, lp_cast(k, pt, tid), lp_int(k, pt, C), lp_int(k, pt, T))->body;
    lp_expr *at_j = lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, o), lp_int(k, pt, C)), lp_reg(k, j));
    lp_assign(k, inner, tot, dsp_combine(l, lp_reg(k, tot), lp_load(k, partials, at_j)));
    block_fold(l, each, tot, slots, res);
    dsp_store_output(l, &lp_if(k, each, lp_binary(k, LO_EQ, tid, lp_int(k, LP_I32, 0)))->body, lp_reg(k, o), lp_reg(k, res));
    lp_store(k, &lp_if(k, fin, lp_binary(k, LO_EQ, tid, lp_int(k, LP_I32, 0)))->body, counter, lp_int(k, LP_I32, 0),
             lp_int(k, LP_U32, 0)); /* ready for the next launch */
    return true;
}

static bool lower_rows(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    /* 16-byte loads when every row starts aligned: a lane then takes vec elements at a
     * time, so a row of 32 floats is 8 lanes of one float4 each */
    int vec = split_vector(q, q->red_len);
    int g = q->group;
    if (vec > 1) {
        int64_t lanes = 1;
        while (lanes < q->red_len / vec && lanes < q->ws) lanes <<= 1;
        int divides = q->threads & -q->threads;
        g = (int)(lanes < divides ? lanes : divides);
    }
    int per = q->threads / g;
    int64_t S = q->spatial_len;
    int64_t grid = ceil_div(S, per);
    if (grid > MAX_CTAS) grid = MAX_CTAS;
    k->grid = grid;
    int64_t steps = ceil_div(S, grid * per);
    lp_type it = dsp_index_type(S + grid * per);
    lp_expr *tid = lp_cast(k, it, lp_special_expr(k, LP_TID));
    int lane = lp_reg_new(k, it, "lane"), grp = lp_reg_new(k, it, "grp"), s = lp_reg_new(k, it, "s");
    lp_assign(k, l->into, lane, g > 1 ? lp_binary(k, LO_REM, tid, lp_int(k, it, g)) : lp_int(k, it, 0));
    lp_assign(k, l->into, grp, g > 1 ? lp_binary(k, LO_DIV, tid, lp_int(k, it, g)) : tid);
    int step = lp_reg_new(k, it, "step");
    lp_block *body = &lp_for(k, l->into, step, lp_int(k, it, 0), lp_int(k, it, steps), lp_int(k, it, 1))->body;
    /* consecutive CTAs take consecutive blocks of rows */
    lp_expr *block = lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, step), lp_int(k, it, grid)),
                               lp_cast(k, it, lp_special_expr(k, LP_CTA)));
    lp_assign(k, body, s, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, block, lp_int(k, it, per)), lp_reg(k, grp)));
    lp_type at = dsp_acc_type(q);
    int acc = lp_reg_new(k, at, "acc");
    lp_assign(k, body, acc, dsp_identity(l));
    lp_expr *in_range = lp_binary(k, LO_LT, lp_reg(k, s), lp_int(k, it, S));
    lp_block *gather = &lp_if(k, body, in_range)->body;
    if (vec > 1) { /* one accumulator per vector lane, folded in order */
        lp_buf *src = lp_buf_for(k, q->st->src.buf);
        int64_t R = q->red_len;
        lp_type rt = dsp_index_type(S * R + R);
        int accs = lp_reg_new(k, at, "va"); /* vec consecutive registers each */
        for (int j = 1; j < vec; j++) lp_reg_new(k, at, "va");
        int regs = lp_reg_new(k, src->type, "x");
        for (int j = 1; j < vec; j++) lp_reg_new(k, src->type, "x");
        int rv = lp_reg_new(k, rt, "rv");
        for (int j = 0; j < vec; j++) lp_assign(k, gather, accs + j, dsp_identity(l));
        lp_block *loop = &lp_for(k, gather, rv, lp_cast(k, rt, lp_reg(k, lane)), lp_int(k, rt, R / vec), lp_int(k, rt, g))->body;
        lp_expr *first = lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_cast(k, rt, lp_reg(k, s)), lp_int(k, rt, R)),
                                   lp_binary(k, LO_MUL, lp_reg(k, rv), lp_int(k, rt, vec)));
        lp_vload(k, loop, regs, vec, src, first);
        for (int j = 0; j < vec; j++)
            lp_assign(k, loop, accs + j, dsp_combine(l, lp_reg(k, accs + j), lp_cast(k, at, lp_reg(k, regs + j))));
        for (int j = 0; j < vec; j++) lp_assign(k, gather, acc, dsp_combine(l, lp_reg(k, acc), lp_reg(k, accs + j)));
    } else {
        dsp_accumulate(l, gather, acc, lp_reg(k, s), lp_reg(k, lane), lp_int(k, it, g));
    }
    dsp_xor_tree(l, body, acc, g);
    lp_expr *leader = lp_binary(k, LO_AND, in_range, lp_binary(k, LO_EQ, lp_reg(k, lane), lp_int(k, it, 0)));
    dsp_store_output(l, &lp_if(k, body, leader)->body, lp_reg(k, s), lp_reg(k, acc));
    return true;
}

/* The view is [R, I]: the leading axis reduced, the trailing one kept, dense. */
static bool cols(const dsp_query *q, char *why, size_t n) {
    if (q->src_rank != 2 || !q->reduced[0] || q->reduced[1] || !dsp_region_dense(&q->st->src)) {
        snprintf(why, n, "not a dense [reduced, kept] view");
        return false;
    }
    if (q->src_dims[1] > 8192) { /* enough columns for a thread each (grid_general) */
        snprintf(why, n, "%lld columns keep a thread per column busy", (long long)q->src_dims[1]);
        return false;
    }
    if (q->threads % 32) {
        snprintf(why, n, "threads=%d is not a multiple of 32", q->threads);
        return false;
    }
    return true;
}

static bool lower_cols(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int T = q->threads;
    int64_t R = q->src_dims[0], I = q->src_dims[1];
    int cw = I < 32 ? (int)I : 32, rw = T / cw; /* column lanes, row lanes */
    int64_t nb = ceil_div(I, cw), most = COLS_CTAS / nb;
    int64_t C = ceil_div(R, (int64_t)rw * 16); /* at least 16 rows per row lane */
    if (C > most) C = most;
    if (C < 1) C = 1;
    int64_t L = ceil_div(R, C);
    k->grid = nb * C;
    lp_type at = dsp_acc_type(q), it = dsp_index_type(R * I + (int64_t)T * I);
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    lp_buf *slots = lp_buf_scratch(k, "slots", at, T);
    lp_expr *tid = lp_special_expr(k, LP_TID);
    int blk = lp_reg_new(k, it, "blk"), chunk = lp_reg_new(k, it, "chunk"), cl = lp_reg_new(k, it, "cl"),
        rl = lp_reg_new(k, it, "rl"), j = lp_reg_new(k, it, "j"), r = lp_reg_new(k, it, "r"), hi = lp_reg_new(k, it, "hi");
    lp_block *b = l->into;
    lp_expr *cta = lp_cast(k, it, lp_special_expr(k, LP_CTA));
    lp_assign(k, b, blk, lp_binary(k, LO_REM, cta, lp_int(k, it, nb)));
    lp_assign(k, b, chunk, lp_binary(k, LO_DIV, cta, lp_int(k, it, nb)));
    lp_assign(k, b, cl, lp_binary(k, LO_REM, lp_cast(k, it, tid), lp_int(k, it, cw)));
    lp_assign(k, b, rl, lp_binary(k, LO_DIV, lp_cast(k, it, tid), lp_int(k, it, cw)));
    lp_assign(k, b, j, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, blk), lp_int(k, it, cw)), lp_reg(k, cl)));
    lp_assign(k, b, hi, lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE,
                                  lp_binary(k, LO_MUL, lp_binary(k, LO_ADD, lp_reg(k, chunk), lp_int(k, it, 1)), lp_int(k, it, L)),
                                  lp_int(k, it, R)));
    int acc = lp_reg_new(k, at, "acc");
    lp_assign(k, b, acc, dsp_identity(l));
    lp_expr *col_ok = lp_binary(k, LO_LT, lp_reg(k, j), lp_int(k, it, I));
    lp_block *in_col = &lp_if(k, b, col_ok)->body;
    lp_block *rows_loop = &lp_for(k, in_col, r, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, chunk), lp_int(k, it, L)), lp_reg(k, rl)),
                                  lp_reg(k, hi), lp_int(k, it, rw))->body;
    lp_expr *x = lp_load(k, src, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, r), lp_int(k, it, I)), lp_reg(k, j)));
    lp_assign(k, rows_loop, acc, dsp_combine(l, lp_reg(k, acc), lp_cast(k, at, x)));
    /* the row lanes of each column fold in order: slot[rl * cw + cl] */
    lp_store(k, b, slots, tid, lp_reg(k, acc));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *lead = &lp_if(k, b, lp_binary(k, LO_AND, lp_binary(k, LO_EQ, lp_reg(k, rl), lp_int(k, it, 0)), col_ok))->body;
    int part = lp_reg_new(k, at, "part"), m = lp_reg_new(k, LP_I32, "m");
    lp_assign(k, lead, part, dsp_identity(l));
    lp_block *fold = &lp_for(k, lead, m, lp_int(k, LP_I32, 0), lp_int(k, LP_I32, rw), lp_int(k, LP_I32, 1))->body;
    lp_assign(k, fold, part, dsp_combine(l, lp_reg(k, part),
                                         lp_load(k, slots, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, m), lp_int(k, LP_I32, cw)),
                                                                    lp_cast(k, LP_I32, lp_reg(k, cl))))));
    if (C == 1) {
        dsp_store_output(l, lead, lp_reg(k, j), lp_reg(k, part));
        return true;
    }
    /* several chunks: partials, a counter per column block, the last CTA folds in order */
    lp_buf *partials = lp_buf_scratch_global(k, "partials", at, C * I);
    lp_buf *counters = lp_buf_scratch_global(k, "counters", LP_U32, nb);
    lp_buf *last = lp_buf_scratch(k, "last", LP_I32, 1);
    lp_store(k, lead, partials, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, chunk), lp_int(k, it, I)), lp_reg(k, j)),
             lp_reg(k, part));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *t0 = &lp_if(k, b, lp_binary(k, LO_EQ, tid, lp_int(k, LP_I32, 0)))->body;
    lp_fence(k, t0);
    int old = lp_reg_new(k, LP_U32, "done");
    lp_atomic_add(k, t0, old, counters, lp_reg(k, blk), lp_int(k, LP_U32, 1));
    lp_store(k, t0, last, lp_int(k, LP_I32, 0), lp_cast(k, LP_I32, lp_binary(k, LO_EQ, lp_reg(k, old), lp_int(k, LP_U32, C - 1))));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *fin = &lp_if(k, b, lp_binary(k, LO_NE, lp_load(k, last, lp_int(k, LP_I32, 0)), lp_int(k, LP_I32, 0)))->body;
    lp_fence(k, fin);
    lp_block *mine = &lp_if(k, fin, lp_binary(k, LO_AND, lp_binary(k, LO_EQ, lp_reg(k, rl), lp_int(k, it, 0)), col_ok))->body;
    int tot = lp_reg_new(k, at, "total"), c = lp_reg_new(k, it, "c");
    lp_assign(k, mine, tot, dsp_identity(l));
    lp_block *each = &lp_for(k, mine, c, lp_int(k, it, 0), lp_int(k, it, C), lp_int(k, it, 1))->body;
    lp_assign(k, each, tot, dsp_combine(l, lp_reg(k, tot),
                                        lp_load(k, partials, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, c), lp_int(k, it, I)),
                                                                      lp_reg(k, j)))));
    dsp_store_output(l, mine, lp_reg(k, j), lp_reg(k, tot));
    lp_store(k, &lp_if(k, fin, lp_binary(k, LO_EQ, tid, lp_int(k, LP_I32, 0)))->body, counters, lp_reg(k, blk),
             lp_int(k, LP_U32, 0)); /* ready for the next launch */
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
    lp_type it = dsp_index_type(S + grid * T);
    lp_expr *first = lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_cast(k, it, lp_special_expr(k, LP_CTA)), lp_int(k, it, T)),
                               lp_cast(k, it, lp_special_expr(k, LP_TID)));
    int s = lp_reg_new(k, it, "s"), acc = lp_reg_new(k, dsp_acc_type(q), "acc");
    lp_block *body = &lp_for(k, l->into, s, first, lp_int(k, it, S), lp_int(k, it, grid * T))->body;
    lp_assign(k, body, acc, dsp_identity(l));
    dsp_accumulate(l, body, acc, lp_reg(k, s), lp_int(k, it, 0), lp_int(k, it, 1));
    dsp_store_output(l, body, lp_reg(k, s), lp_reg(k, acc));
    return true;
}

const dsp_case dsp_case_grid_split = {
    .variant = "grid_split",
    .priority = 30,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"rows", rows}, {"few_long", few_long}},
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
    .summary = "columns: 32 lanes on neighbouring columns, rows split over CTAs, partials folded in order",
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
