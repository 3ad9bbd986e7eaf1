/*
 * v_rows.c — the `rows` variant: the lanes of a group run along the reduced elements of an
 * output, with the group size, load width and accumulators the cost model chose (cost.c).
 *
 * Fold order (docs/dispatch.md#rows): the reduced elements of an output, in row-major order
 * of the reduced axes, are cut into chunks of V (the load width); lane l of a group of L
 * takes chunks l, l + L, l + 2L, … in that order, and the e-th element it reads (counting
 * from 0, chunk by chunk, element by element) goes to its accumulator e mod A. The A
 * accumulators meet by a halving tree (a[i] ⊕= a[i + A/2], then A/4, …); the lanes by a
 * butterfly with masks 1, 2, …, L/2; lane 0 stores. With L the instance's threads (more
 * than a warp: few long outputs) each warp's butterfly leaves its partial result in a
 * shared slot, a barrier, and warp k folds the slots of output k with a butterfly over
 * the next power of two above the warp count (missing warps give the identity).
 *
 * A func's parameter may be at any address its caller passes: a plan with loads wider than
 * an element tests the address once and, when it is not aligned, takes the same elements
 * in the same order one at a time, so the bits do not depend on the pointer.
 */
#include "dispatch.h"

#include <math.h>
#include <stdio.h>

/* logsumexp (dsp_folds_many): the n elements in registers x, x + 1, … (the e-th going to
 * accumulator e mod A, as every op's; n a multiple of A, its first element the first of a
 * turn or of a chunk, so e counts from there) folded into their accumulators, each
 * accumulator's at once (dsp_lse_fold_elements): one exponential an element and one an
 * accumulator, not a rescale of the state at every element. Only where each accumulator
 * takes two or more (lse_many): one element alone merges as every op's does, one
 * exponential, where folding it at once would take two. */
static bool lse_many(const dsp_query *q, int n, int A) { return dsp_folds_many(q) && n / A >= 2; }

static void fold_many(dsp_lower *l, lp_block *into, int acc, int A, int x, int n) {
    lp_expr *xs[LSE_FOLD_MAX];
    for (int ai = 0; ai < A && ai < n; ai++) {
        int m = 0;
        for (int e = ai; e < n; e += A) {
            xs[m++] = lp_reg(l->k, x + e);
            if (m == LSE_FOLD_MAX || e + A >= n) { /* (a batch holds at most 32) */
                dsp_lse_fold_elements(l, into, acc + ai, m, xs);
                m = 0;
            }
        }
    }
}

/* acc[0..A) ⊕= the elements of output s that lane `lane` of its group takes. */
static void fold_output(dsp_lower *l, lp_block *into, const dsp_tile_plan *p, bool scalar, int acc, lp_expr *s,
                        lp_expr *lane) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int L = p->lanes, V = p->vec, A = p->accs;
    if (p->batch > 0) { /* every lane has the same chunks: B loads in flight, then their folds */
        int B = p->batch;
        int64_t stride = (int64_t)L * V * B;
        lp_type it = dsp_index_type(q->red_len, stride);
        lp_buf *src = lp_buf_for(k, q->st->src.buf);
        lp_expr *shift = dsp_shift(l, into, dsp_reduce_src_offset(l, s, lp_int(k, it, 0)));
        int e = lp_reg_new(k, it, "e"), i = lp_reg_new(k, it, "i");
        lp_expr *first = lp_cast(k, it, lane);
        if (V > 1) first = lp_binary(k, LO_MUL, first, lp_int(k, it, V));
        /* a count the same for every lane, so the compiler unrolls it and overlaps the batches */
        int64_t turns = q->red_len / V / L / B;
        lp_block *body = &lp_for(k, into, i, lp_int(k, it, 0), lp_int(k, it, turns), lp_int(k, it, 1))->body;
        lp_assign(k, body, e, turns == 1 ? first : lp_binary(k, LO_ADD, first, lp_binary(k, LO_MUL, lp_reg(k, i), lp_int(k, it, stride))));
        int x = lp_reg_new(k, src->type, "x");
        for (int j = 1; j < B * V; j++) lp_reg_new(k, src->type, "x");
        lp_expr *at[64], *off[64];
        int64_t c[64];
        for (int b = 0; b < B; b++) {
            c[b] = (int64_t)b * L * V;
            at[b] = b ? lp_binary(k, LO_ADD, lp_reg(k, e), lp_int(k, it, c[b])) : lp_reg(k, e);
        }
        /* every output, lane and turn (the groups' outputs cover [0, S)) */
        dsp_starts starts = {.s0 = 0, .s_step = 1, .ns = q->spatial_len, .a_step = V, .na = L, .i_step = stride, .ni = turns};
        dsp_batch_offsets(l, body, s, lp_reg(k, e), c, B, &starts, off);
        for (int b = 0; b < B; b++) dsp_load_run(l, body, src, off[b], x + b * V, V, scalar);
        if (lse_many(q, B * V, A)) { /* logsumexp: an accumulator's elements of the turn at once */
            fold_many(l, body, acc, A, x, B * V);
            dsp_merge_accs(l, into, acc, A, 1);
            return;
        }
        for (int b = 0; b < B; b++)
            for (int j = 0; j < V; j++) {
                int ai = (b * V + j) % A;
                lp_expr *idx = j ? lp_binary(k, LO_ADD, at[b], lp_int(k, it, j)) : at[b];
                lp_expr *xv = dsp_element(l, lp_reg(k, x + b * V + j), idx, shift);
                lp_assign(k, body, acc + ai, dsp_combine(l, body, lp_reg(k, acc + ai), xv));
            }
        dsp_merge_accs(l, into, acc, A, 1);
        return;
    }
    int U = A > V ? A / V : 1; /* chunks a turn of the loop: a multiple of A elements */
    int64_t stride = (int64_t)L * V * U;
    lp_type it = dsp_index_type(q->red_len, stride);
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    lp_type et = src->type;
    lp_expr *shift = dsp_shift(l, into, dsp_reduce_src_offset(l, s, lp_int(k, it, 0)));
    int e = lp_reg_new(k, it, "e");
    lp_expr *first = lp_cast(k, it, lane);
    if (V > 1) first = lp_binary(k, LO_MUL, first, lp_int(k, it, V));
    lp_stmt *loop = lp_for(k, into, e, first, lp_int(k, it, q->red_len), lp_int(k, it, stride));
    bool exact = q->red_len % stride == 0;
    int x = lp_reg_new(k, et, "x");
    for (int j = 1; j < V; j++) lp_reg_new(k, et, "x");
    for (int a = 0; a < U; a++) {
        lp_expr *at = a ? lp_binary(k, LO_ADD, lp_reg(k, e), lp_int(k, it, (int64_t)a * L * V)) : lp_reg(k, e);
        lp_block *b = &loop->body;
        if (a > 0 && !exact) b = &lp_if(k, b, lp_binary(k, LO_LT, at, lp_int(k, it, q->red_len)))->body;
        lp_expr *off = dsp_reduce_src_offset(l, s, at);
        dsp_load_run(l, b, src, off, x, V, scalar);
        if (lse_many(q, V, A)) { /* logsumexp: an accumulator's elements of the chunk at once (A <= V / 2: U = 1) */
            fold_many(l, b, acc, A, x, V);
            continue;
        }
        for (int j = 0; j < V; j++) {
            int ai = (a * V + j) % A;
            lp_expr *idx = j ? lp_binary(k, LO_ADD, at, lp_int(k, it, j)) : at;
            lp_expr *xv = dsp_element(l, lp_reg(k, x + j), idx, shift);
            lp_assign(k, b, acc + ai, dsp_combine(l, b, lp_reg(k, acc + ai), xv));
        }
    }
    dsp_merge_accs(l, into, acc, A, 1);
}

/* Groups of L <= a warp lanes, each on outputs grp, grp + groups, …, `inflight` at a time. */
static void rows_groups(dsp_lower *l, lp_block *into, const dsp_tile_plan *p, bool scalar) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int L = p->lanes, R = p->inflight, A = p->accs;
    int64_t S = q->spatial_len;
    lp_type it = dsp_index_type(S, (int64_t)q->threads * R);
    lp_expr *tid = lp_cast(k, it, dsp_inst_tid(l));
    lp_expr *size = lp_cast(k, it, dsp_inst_size(l));
    lp_expr *groups = size, *grp = tid, *lane = lp_int(k, it, 0);
    if (L > 1) {
        groups = size->kind == LX_CONST ? lp_int(k, it, size->i / L) : lp_binary(k, LO_DIV, size, lp_int(k, it, L));
        grp = lp_binary(k, LO_DIV, tid, lp_int(k, it, L));
        lane = lp_binary(k, LO_REM, tid, lp_int(k, it, L));
    }
    int lane_r = lp_reg_new(k, it, "lane"), grp_r = lp_reg_new(k, it, "grp");
    lp_assign(k, into, lane_r, lane);
    lp_assign(k, into, grp_r, grp);
    /* turns of R outputs a group: output (turn * R + u) * groups + grp */
    lp_expr *span = groups->kind == LX_CONST ? lp_int(k, it, groups->i * R) : lp_binary(k, LO_MUL, groups, lp_int(k, it, R));
    int turn = lp_reg_new(k, it, "turn");
    lp_block *body = &lp_for(k, into, turn, lp_int(k, it, 0), lp_int(k, it, S), span)->body;
    bool all_in = groups->kind == LX_CONST && S % (groups->i * R) == 0;
    int s = lp_reg_new(k, it, "s");
    for (int u = 1; u < R; u++) lp_reg_new(k, it, "s");
    lp_type at = dsp_acc_type(q);
    int acc = lp_reg_new(k, at, "acc");
    for (int i = 1; i < R * A; i++) lp_reg_new(k, at, "acc");
    lp_expr *in_range[8];
    for (int u = 0; u < R; u++) {
        lp_expr *off = u ? lp_binary(k, LO_MUL, groups, lp_int(k, it, u)) : NULL;
        lp_expr *su = lp_binary(k, LO_ADD, lp_reg(k, turn), lp_reg(k, grp_r));
        lp_assign(k, body, s + u, off ? lp_binary(k, LO_ADD, su, off) : su);
        for (int a = 0; a < A; a++) lp_assign(k, body, acc + u * A + a, dsp_identity(l));
        in_range[u] = lp_binary(k, LO_LT, lp_reg(k, s + u), lp_int(k, it, S));
        lp_block *gather = all_in ? body : &lp_if(k, body, in_range[u])->body;
        fold_output(l, gather, p, scalar, acc + u * A, lp_reg(k, s + u), lp_reg(k, lane_r));
    }
    for (int u = 0; u < R; u++) dsp_xor_tree(l, body, acc + u * A, L);
    for (int u = 0; u < R; u++) {
        lp_expr *leader = lp_binary(k, LO_EQ, lp_reg(k, lane_r), lp_int(k, it, 0));
        if (!all_in) leader = lp_binary(k, LO_AND, in_range[u], leader);
        dsp_store_output(l, &lp_if(k, body, leader)->body, lp_reg(k, s + u), lp_reg(k, acc + u * A));
    }
}

/* Every thread of the instance on the same K outputs a round; warp butterflies, a shared
 * slot per warp, one barrier, warp j folds output j's slots. */
static void rows_tree(dsp_lower *l, lp_block *into, const dsp_tile_plan *p, bool scalar) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int ws = q->ws, nw = p->lanes / ws, K = p->inflight, A = p->accs;
    lp_type at = dsp_acc_type(q), it = dsp_index_type(q->spatial_len, K);
    lp_buf *slots = lp_buf_scratch(k, "rows_slots", at, (int64_t)q->inst_count * K * nw);
    lp_expr *tid = dsp_inst_tid(l);
    int wid = lp_reg_new(k, LP_I32, "wid"), base = lp_reg_new(k, LP_I32, "base");
    lp_assign(k, into, wid, lp_binary(k, LO_DIV, tid, lp_int(k, LP_I32, ws)));
    lp_assign(k, into, base, lp_binary(k, LO_MUL, dsp_inst_id(l), lp_int(k, LP_I32, K * nw)));
    int64_t rounds = (q->spatial_len + K - 1) / K;
    int round = lp_reg_new(k, it, "round");
    lp_block *body = &lp_for(k, into, round, lp_int(k, it, 0), lp_int(k, it, rounds), lp_int(k, it, 1))->body;
    if (rounds > 1) /* the slots of the last round are still being read */
        lp_barrier(k, &lp_if(k, body, lp_binary(k, LO_LT, lp_int(k, it, 0), lp_reg(k, round)))->body, q->st->exec.scope);
    lp_expr *lane0 = lp_binary(k, LO_EQ, lp_special_expr(k, LP_LANE), lp_int(k, LP_I32, 0));
    int acc = lp_reg_new(k, at, "acc");
    for (int i = 1; i < K * A; i++) lp_reg_new(k, at, "acc");
    int s = lp_reg_new(k, it, "s");
    for (int j = 1; j < K; j++) lp_reg_new(k, it, "s");
    for (int j = 0; j < K; j++) {
        lp_assign(k, body, s + j, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, round), lp_int(k, it, K)), lp_int(k, it, j)));
        for (int a = 0; a < A; a++) lp_assign(k, body, acc + j * A + a, dsp_identity(l));
        lp_block *gather = body;
        if (q->spatial_len % K)
            gather = &lp_if(k, body, lp_binary(k, LO_LT, lp_reg(k, s + j), lp_int(k, it, q->spatial_len)))->body;
        fold_output(l, gather, p, scalar, acc + j * A, lp_reg(k, s + j), tid);
    }
    for (int j = 0; j < K; j++) {
        dsp_xor_tree(l, body, acc + j * A, ws);
        lp_expr *slot = lp_binary(k, LO_ADD, lp_reg(k, base), lp_binary(k, LO_ADD, lp_int(k, LP_I32, j * nw), lp_reg(k, wid)));
        lp_store(k, &lp_if(k, body, lane0)->body, slots, slot, lp_reg(k, acc + j * A));
    }
    lp_barrier(k, body, q->st->exec.scope);
    lp_block *fold = &lp_if(k, body, lp_binary(k, LO_LT, lp_reg(k, wid), lp_int(k, LP_I32, K)))->body;
    int v = lp_reg_new(k, at, "v"), so = lp_reg_new(k, it, "so");
    lp_expr *lane = lp_special_expr(k, LP_LANE);
    lp_expr *slot = lp_binary(k, LO_ADD, lp_reg(k, base),
                              lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, wid), lp_int(k, LP_I32, nw)), lane));
    lp_assign(k, fold, v, dsp_identity(l));
    lp_assign(k, &lp_if(k, fold, lp_binary(k, LO_LT, lane, lp_int(k, LP_I32, nw)))->body, v, lp_load(k, slots, slot));
    int width = 1;
    while (width < nw) width <<= 1;
    dsp_xor_tree(l, fold, v, width);
    lp_assign(k, fold, so, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, round), lp_int(k, it, K)), lp_cast(k, it, lp_reg(k, wid))));
    lp_expr *store = lane0;
    if (q->spatial_len % K) store = lp_binary(k, LO_AND, store, lp_binary(k, LO_LT, lp_reg(k, so), lp_int(k, it, q->spatial_len)));
    dsp_store_output(l, &lp_if(k, fold, store)->body, lp_reg(k, so), lp_reg(k, v));
}

static void emit_rows(dsp_lower *l, lp_block *into, const dsp_tile_plan *p, bool scalar) {
    if (p->lanes > l->q->ws) rows_tree(l, into, p, scalar);
    else rows_groups(l, into, p, scalar);
}

/* A source whose address is unknown (a func's parameter, or a kernel's on a target whose
 * pointers may be unaligned) read with loads wider than an element: the aligned path, and
 * the same order one element at a time for a pointer that is not. */
void dsp_emit_checked(dsp_lower *l, const dsp_tile_plan *p, void (*emit)(dsp_lower *, lp_block *, const dsp_tile_plan *, bool)) {
    const tilec_buffer *b = l->q->st->src.buf;
    if (p->vec > 1 && dsp_address_unknown(l->q, b)) {
        int bytes = p->vec * (int)tilec_dtype_size(b->dtype);
        lp_stmt *test = lp_if(l->k, l->into, lp_aligned(l->k, lp_buf_for(l->k, b), bytes));
        emit(l, &test->body, p, false);
        emit(l, &test->orelse, p, true);
        return;
    }
    emit(l, l->into, p, false);
}

static bool lower_rows(dsp_lower *l, char *why, size_t n) {
    dsp_tile_plan p;
    if (!dsp_tile_fit(l, DSP_ALONG_REDUCED, &p)) {
        snprintf(why, n, "the cost model has no plan along the reduced elements for this statement");
        return false;
    }
    dsp_emit_checked(l, &p, emit_rows);
    return true;
}

/* Whether the model puts this family first (a forced variant needs only a plan). */
bool dsp_pred_cheapest(const dsp_query *q, dsp_orient o, char *why, size_t n) {
    dsp_orient other = o == DSP_ALONG_REDUCED ? DSP_ALONG_KEPT : DSP_ALONG_REDUCED;
    const char *name[] = {"rows", "cols"};
    if (!q->has_plan[o]) {
        snprintf(why, n, "the cost model has no %s plan: it plans reductions of shared or global operands inside a CTA, "
                         "warpgroup or warp", name[o]);
        return false;
    }
    if (q->st->variant || !q->has_plan[other]) return true;
    double mine = q->plan[o].cycles1 + q->plan[o].cycles4, theirs = q->plan[other].cycles1 + q->plan[other].cycles4;
    if (mine < theirs || (mine == theirs && o == DSP_ALONG_REDUCED)) return true;
    /* the totals are the sums of the parts as printed, so the line adds up */
    double a1 = nearbyint(q->plan[other].cycles1), a4 = nearbyint(q->plan[other].cycles4);
    double b1 = nearbyint(q->plan[o].cycles1), b4 = nearbyint(q->plan[o].cycles4);
    snprintf(why, n, "the cost model puts %s first: %s about %.0f + %.0f = %.0f cycles (alone, and four to a "
                     "multiprocessor), %s %.0f + %.0f = %.0f", name[other], name[other], a1, a4, a1 + a4, name[o], b1, b4,
             b1 + b4);
    return false;
}

static bool cheapest_rows(const dsp_query *q, char *why, size_t n) { return dsp_pred_cheapest(q, DSP_ALONG_REDUCED, why, n); }

const dsp_case dsp_case_rows = {
    .variant = "rows",
    .priority = 24,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"storage", dsp_pred_shared_or_global},
              {"scope", dsp_pred_not_thread_scope},
              {"target_scope", dsp_pred_scope_on_target},
              {"cheapest", cheapest_rows}},
    .lower = lower_rows,
    .summary = "lanes along the reduced elements, group size, load width and accumulators from the cost model",
};
