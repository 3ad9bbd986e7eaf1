/*
 * v_cols.c — the `cols` variant: neighbouring threads take neighbouring outputs, each
 * folding its outputs' elements in registers (columns, and any reduction whose reduced
 * axes are not the fastest in memory), with the load width, slices and accumulators the
 * cost model chose (cost.c).
 *
 * Fold order (docs/dispatch.md#cols): outputs are taken V at a time (V neighbouring
 * outputs, one load each element row); with P slices, thread t of the instance takes the
 * output group t mod G (G = outputs / V) and slice t / G, and folds the reduced elements
 * slice, slice + P, slice + 2P, … (row-major order of the reduced axes); the i-th it reads
 * goes to accumulator i mod A, and the A accumulators meet by a halving tree. Slices 1 …
 * P − 1 leave their partial results in shared slots ([slice][output]: neighbouring
 * threads, neighbouring words), a barrier of the scope, and slice 0 folds them in order,
 * 0 ⊕ 1 ⊕ … ⊕ (P − 1), and stores. With one slice a thread takes output groups t, t + T, ….
 */
#include "dispatch.h"

#include <stdio.h>

/* acc[a * V + j] ⊕= the elements first, first + P, … of outputs g * V + j. */
static void fold_group(dsp_lower *l, lp_block *into, const dsp_tile_plan *p, bool scalar, int acc, lp_expr *g,
                       lp_expr *first) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int V = p->vec, A = p->accs, P = p->slices;
    int64_t stride = (int64_t)P * A;
    lp_type it = dsp_index_type(q->red_len, stride);
    lp_type st = dsp_index_type(q->spatial_len, V);
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    lp_expr *s0 = V > 1 ? lp_binary(k, LO_MUL, lp_cast(k, st, g), lp_int(k, st, V)) : lp_cast(k, st, g);
    int out = lp_reg_new(k, st, "o");
    lp_assign(k, into, out, s0);
    lp_expr *shift[8] = {0};
    for (int j = 0; j < V; j++) {
        lp_expr *sj = j ? lp_binary(k, LO_ADD, lp_reg(k, out), lp_int(k, st, j)) : lp_reg(k, out);
        shift[j] = dsp_shift(l, into, dsp_reduce_src_offset(l, sj, lp_int(k, it, 0)));
    }
    if (p->batch > 0) { /* every thread has the same rows: B loads in flight, then their folds */
        int B = p->batch;
        stride = (int64_t)P * B;
        it = dsp_index_type(q->red_len, stride);
        int e = lp_reg_new(k, it, "e"), i = lp_reg_new(k, it, "i");
        int64_t turns = q->red_len / P / B; /* the same for every thread: the compiler unrolls it */
        lp_block *body = &lp_for(k, into, i, lp_int(k, it, 0), lp_int(k, it, turns), lp_int(k, it, 1))->body;
        lp_expr *at0 = lp_cast(k, it, first);
        lp_assign(k, body, e, turns == 1 ? at0 : lp_binary(k, LO_ADD, at0, lp_binary(k, LO_MUL, lp_reg(k, i), lp_int(k, it, stride))));
        int x = lp_reg_new(k, src->type, "x");
        for (int j = 1; j < B * V; j++) lp_reg_new(k, src->type, "x");
        lp_expr *rows[64], *off[64];
        int64_t c[64];
        for (int b = 0; b < B; b++) {
            c[b] = (int64_t)b * P;
            rows[b] = b ? lp_binary(k, LO_ADD, lp_reg(k, e), lp_int(k, it, c[b])) : lp_reg(k, e);
        }
        /* every output group (its first output) and every slice's turns */
        dsp_starts starts = {.s0 = 0, .s_step = V, .ns = q->spatial_len / V, .a_step = 1, .na = P, .i_step = stride, .ni = turns};
        dsp_batch_offsets(l, body, lp_reg(k, out), lp_reg(k, e), c, B, &starts, off);
        for (int b = 0; b < B; b++) dsp_load_run(l, body, src, off[b], x + b * V, V, scalar);
        for (int b = 0; b < B; b++)
            for (int j = 0; j < V; j++) {
                int a = (b % A) * V + j;
                lp_expr *xv = dsp_element(l, lp_reg(k, x + b * V + j), rows[b], shift[j]);
                lp_assign(k, body, acc + a, dsp_combine(l, body, lp_reg(k, acc + a), xv));
            }
    } else {
        int e = lp_reg_new(k, it, "e");
        lp_stmt *loop = lp_for(k, into, e, lp_cast(k, it, first), lp_int(k, it, q->red_len), lp_int(k, it, stride));
        bool exact = q->red_len % stride == 0;
        int x = lp_reg_new(k, src->type, "x");
        for (int j = 1; j < V; j++) lp_reg_new(k, src->type, "x");
        for (int a = 0; a < A; a++) {
            lp_expr *r = a ? lp_binary(k, LO_ADD, lp_reg(k, e), lp_int(k, it, (int64_t)a * P)) : lp_reg(k, e);
            lp_block *b = &loop->body;
            if (a > 0 && !exact) b = &lp_if(k, b, lp_binary(k, LO_LT, r, lp_int(k, it, q->red_len)))->body;
            lp_expr *off = dsp_reduce_src_offset(l, lp_reg(k, out), r);
            dsp_load_run(l, b, src, off, x, V, scalar);
            for (int j = 0; j < V; j++)
                lp_assign(k, b, acc + a * V + j,
                          dsp_combine(l, b, lp_reg(k, acc + a * V + j), dsp_element(l, lp_reg(k, x + j), r, shift[j])));
        }
    }
    dsp_merge_accs(l, into, acc, A, V);
}

static void emit_cols(dsp_lower *l, lp_block *into, const dsp_tile_plan *p, bool scalar) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int V = p->vec, A = p->accs, P = p->slices;
    int64_t S = q->spatial_len, G = S / V;
    lp_type at = dsp_acc_type(q);
    lp_type gt = dsp_index_type(G, q->threads);
    int acc = lp_reg_new(k, at, "acc");
    for (int i = 1; i < V * A; i++) lp_reg_new(k, at, "acc");
    lp_expr *tid = lp_cast(k, gt, dsp_inst_tid(l));
    if (P == 1) { /* output groups t, t + T, … */
        int g = lp_reg_new(k, gt, "g");
        lp_expr *size = dsp_inst_size(l);
        lp_block *body;
        if (size->kind == LX_CONST && G % size->i == 0) { /* the same count for every thread */
            int i = lp_reg_new(k, gt, "i");
            body = &lp_for(k, into, i, lp_int(k, gt, 0), lp_int(k, gt, G / size->i), lp_int(k, gt, 1))->body;
            lp_assign(k, body, g, lp_binary(k, LO_ADD, tid, lp_binary(k, LO_MUL, lp_reg(k, i), lp_int(k, gt, size->i))));
        } else {
            body = &lp_for(k, into, g, tid, lp_int(k, gt, G), lp_cast(k, gt, size))->body;
        }
        for (int i = 0; i < V * A; i++) lp_assign(k, body, acc + i, dsp_identity(l));
        fold_group(l, body, p, scalar, acc, lp_reg(k, g), lp_int(k, gt, 0));
        int o = lp_reg_new(k, dsp_index_type(S, V), "so");
        lp_assign(k, body, o, lp_binary(k, LO_MUL, lp_cast(k, dsp_index_type(S, V), lp_reg(k, g)), lp_int(k, dsp_index_type(S, V), V)));
        for (int j = 0; j < V; j++)
            dsp_store_output(l, body, j ? lp_binary(k, LO_ADD, lp_reg(k, o), lp_int(k, dsp_index_type(S, V), j)) : lp_reg(k, o),
                             lp_reg(k, acc + j));
        return;
    }
    /* P slices: thread t takes group t mod G, slice t / G (G * P <= the instance's threads) */
    lp_buf *slots = lp_buf_scratch(k, "cols_slots", at, (int64_t)q->inst_count * (P - 1) * S);
    int g = lp_reg_new(k, gt, "g"), sl = lp_reg_new(k, gt, "slice");
    lp_assign(k, into, g, lp_binary(k, LO_REM, tid, lp_int(k, gt, G)));
    lp_assign(k, into, sl, lp_binary(k, LO_DIV, tid, lp_int(k, gt, G)));
    lp_type xt = dsp_index_type(q->inst_count * (P - 1) * S, 0);
    int base = lp_reg_new(k, xt, "base");
    lp_assign(k, into, base, lp_binary(k, LO_MUL, lp_cast(k, xt, dsp_inst_id(l)), lp_int(k, xt, (int64_t)(P - 1) * S)));
    for (int i = 0; i < V * A; i++) lp_assign(k, into, acc + i, dsp_identity(l));
    lp_block *work = &lp_if(k, into, lp_binary(k, LO_LT, lp_reg(k, sl), lp_int(k, gt, P)))->body;
    fold_group(l, work, p, scalar, acc, lp_reg(k, g), lp_reg(k, sl));
    /* slot (slice - 1) * S + output, for slices 1 .. P - 1 */
    lp_stmt *keep = lp_if(k, work, lp_binary(k, LO_LT, lp_int(k, gt, 0), lp_reg(k, sl)));
    lp_expr *row = lp_binary(k, LO_ADD, lp_reg(k, base),
                             lp_binary(k, LO_MUL, lp_cast(k, xt, lp_binary(k, LO_SUB, lp_reg(k, sl), lp_int(k, gt, 1))), lp_int(k, xt, S)));
    int rr = lp_reg_new(k, xt, "slot");
    lp_assign(k, &keep->body, rr, lp_binary(k, LO_ADD, row, lp_binary(k, LO_MUL, lp_cast(k, xt, lp_reg(k, g)), lp_int(k, xt, V))));
    for (int j = 0; j < V; j++)
        lp_store(k, &keep->body, slots, j ? lp_binary(k, LO_ADD, lp_reg(k, rr), lp_int(k, xt, j)) : lp_reg(k, rr), lp_reg(k, acc + j));
    lp_barrier(k, into, q->st->exec.scope);
    lp_block *last = &lp_if(k, into, lp_binary(k, LO_EQ, lp_reg(k, sl), lp_int(k, gt, 0)))->body;
    int col = lp_reg_new(k, xt, "col");
    lp_assign(k, last, col, lp_binary(k, LO_ADD, lp_reg(k, base), lp_binary(k, LO_MUL, lp_cast(k, xt, lp_reg(k, g)), lp_int(k, xt, V))));
    for (int s = 1; s < P; s++)
        for (int j = 0; j < V; j++) {
            lp_expr *at_ = lp_binary(k, LO_ADD, lp_reg(k, col), lp_int(k, xt, (int64_t)(s - 1) * S + j));
            lp_assign(k, last, acc + j, dsp_combine(l, last, lp_reg(k, acc + j), lp_load(k, slots, at_)));
        }
    lp_type ot = dsp_index_type(S, V);
    int o = lp_reg_new(k, ot, "so");
    lp_assign(k, last, o, lp_binary(k, LO_MUL, lp_cast(k, ot, lp_reg(k, g)), lp_int(k, ot, V)));
    for (int j = 0; j < V; j++)
        dsp_store_output(l, last, j ? lp_binary(k, LO_ADD, lp_reg(k, o), lp_int(k, ot, j)) : lp_reg(k, o), lp_reg(k, acc + j));
}

static bool lower_cols(dsp_lower *l, char *why, size_t n) {
    dsp_tile_plan p;
    if (!dsp_tile_fit(l, DSP_ALONG_KEPT, &p)) {
        snprintf(why, n, "the cost model has no plan along the kept outputs for this statement");
        return false;
    }
    dsp_emit_checked(l, &p, emit_cols);
    return true;
}

static bool cheapest_cols(const dsp_query *q, char *why, size_t n) { return dsp_pred_cheapest(q, DSP_ALONG_KEPT, why, n); }

const dsp_case dsp_case_cols = {
    .variant = "cols",
    .priority = 24,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"storage", dsp_pred_shared_or_global},
              {"scope", dsp_pred_not_thread_scope},
              {"target_scope", dsp_pred_scope_on_target},
              {"cheapest", cheapest_cols}},
    .lower = lower_cols,
    .summary = "neighbouring threads on neighbouring outputs, each folding in registers; load width, slices and "
               "accumulators from the cost model",
};
