/*
 * v_cluster.c — the `cluster` variant: a reduction at cluster scope, whose shared source is
 * every CTA's copy of a tile (docs/format.md, "Thread-block clusters").
 *
 * Each CTA folds its own copy into one partial state per output, in shared slots; a
 * cluster barrier publishes them; then the CTAs read the states through distributed shared
 * memory and fold them in rank order. A shared destination is each CTA's own copy, so every
 * CTA gathers every state and stores its result; a global one is written once, by the CTA
 * of rank 0, the only one that gathers. The end barrier (lower.c, the statement's scope)
 * is a cluster barrier: no CTA leaves or reuses its slots while a peer still reads them.
 *
 * The fold order, which the simulator and every GPU share: T threads make groups of g =
 * min(32, the largest power of two up to T) lanes, T / g of them; an output takes K groups,
 * K the largest power of two with K * outputs <= T / g (1 when there are more outputs than
 * groups). Lane j of an output's g K lanes folds the copy's reduced elements j, j + g K,
 * j + 2 g K, … left to right; the lanes' values meet by a perfect binary tree over the lane
 * index (the butterfly over g lanes, then a tree over the K groups); then the CTAs' states
 * left to right in rank order, ((p0 ⊕ p1) ⊕ p2) ⊕ …. An output of n < g K elements takes
 * only the lanes of the smallest power of two at least n (g and K shrink, the threads make
 * more groups): the leaves it leaves out are identities, which change no bit. The reduced index of argmax and argmin counts the copies in rank
 * order (element i of rank r's copy is r n + i); the shift of var and std is rank 0's first
 * element of the output.
 */
#include "dispatch.h"
#include "grid.h"

#include <stdio.h>

/* Lanes of a group, groups of an output, and groups that work at once (outputs in turn). */
typedef struct cshape {
    int g, K, groups, workers;
} cshape;

static cshape shape_of(const dsp_query *q) {
    cshape c;
    int full = q->threads / 32, lanes = full ? full * 32 : q->threads; /* whole warps, else each thread alone */
    int g = full ? 32 : 1, groups = lanes / g;
    int K = q->spatial_len >= groups ? 1 : (int)pow2_floor(groups / q->spatial_len);
    /* no more lanes than elements: the missing leaves of the lanes' tree are identities, so
       the bits are those of the g K lanes */
    int64_t L = pow2_ceil(q->red_len) < (int64_t)g * K ? pow2_ceil(q->red_len) : (int64_t)g * K;
    c.g = L < g ? (int)L : g;
    c.K = (int)(L / c.g);
    c.groups = lanes / c.g;
    c.workers = c.groups / c.K;
    return c;
}

void dsp_cluster_plan(const dsp_query *q, char *out, size_t n) {
    cshape c = shape_of(q);
    snprintf(out, n, "each CTA folds its copy, %d lane%s an output, into shared slots; then %s the %d CTAs' states "
                     "through distributed shared memory, in rank order",
             c.g * c.K, c.g * c.K == 1 ? "" : "s",
             q->st->dst.buf->space == TILEC_SPACE_GLOBAL ? "the CTA of rank 0 folds" : "every CTA folds",
             q->kernel->cluster);
}

static bool cluster_source(const dsp_query *q, char *why, size_t n) {
    if (q->st->src.buf->space == TILEC_SPACE_SHARED && q->st->src.buf->layout.kind == TILEC_LAYOUT_NONE &&
        q->kernel->cluster > 0)
        return true;
    snprintf(why, n, "the source is not a shared tile of a kernel of clusters");
    return false;
}

static bool lower_cluster(dsp_lower *l, char *why, size_t wn) {
    (void)why, (void)wn;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    const int N = q->kernel->cluster;
    const cshape c = shape_of(q);
    const int64_t S = q->spatial_len, n = q->red_len;
    const lp_type at = dsp_acc_type(q);
    lp_block *b = l->into;
    l->count = lp_int(k, LP_I64, (int64_t)N * n); /* a mean's and a variance's count: every copy's */
    lp_buf *part = lp_buf_scratch(k, "part", at, S * c.K);
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    lp_expr *tid = lp_special_expr(k, LP_TID), *rank = dsp_cluster_rank(l);

    /* each CTA's state of each output, from its own copy: the groups of whole warps (of a CTA
       of fewer than 32 threads, each thread) take outputs w, w + workers, … in as many turns
       each, so a warp's lanes shuffle together; a turn past the outputs folds nothing */
    bool shifted = ir_op(q->st->op)->lift == IR_LIFT_SHIFT;
    if (shifted) lp_barrier(k, b, TILEC_SCOPE_CLUSTER); /* rank 0's copy, written, before any CTA reads it */
    lp_type st = dsp_index_type(S + c.workers, c.workers), it = dsp_index_type(n, (int64_t)c.g * c.K);
    lp_block *act = b;
    if (c.groups * c.g < q->threads) /* a partial last warp takes no part */
        act = &lp_if(k, b, lp_binary(k, LO_LT, tid, dsp_i32(l, (int64_t)c.groups * c.g)))->body;
    lp_expr *grp = lp_binary(k, LO_DIV, tid, dsp_i32(l, c.g)), *lane = lp_binary(k, LO_REM, tid, dsp_i32(l, c.g));
    lp_expr *w = c.K > 1 ? lp_binary(k, LO_DIV, grp, dsp_i32(l, c.K)) : grp;
    lp_expr *kk = c.K > 1 ? lp_binary(k, LO_REM, grp, dsp_i32(l, c.K)) : NULL;
    lp_expr *j = kk ? lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, kk, dsp_i32(l, c.g)), lane) : lane;
    int s = lp_reg_new(k, st, "s"), acc = lp_reg_new(k, at, "acc"), r = lp_reg_new(k, it, "r");
    int64_t turns = (S + c.workers - 1) / c.workers;
    lp_block *each = &lp_for(k, act, s, lp_cast(k, st, w), lp_int(k, st, turns * c.workers), lp_int(k, st, c.workers))->body;
    lp_expr *valid = lp_binary(k, LO_LT, lp_reg(k, s), lp_int(k, st, S));
    lp_expr *sc = lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, lp_reg(k, s), lp_int(k, st, S - 1)); /* an address for every turn */
    lp_assign(k, each, acc, dsp_identity(l));
    lp_expr *shift = NULL;
    if (shifted) { /* every copy shifts by rank 0's first element */
        int x0 = lp_reg_new(k, LP_F64, "x0");
        lp_assign(k, each, x0, lp_cast(k, LP_F64, lp_load_rank(k, src, dsp_reduce_src_offset(l, sc, lp_int(k, it, 0)),
                                                               dsp_i32(l, 0))));
        shift = lp_reg(k, x0);
    }
    lp_block *fold = &lp_for(k, each, r, lp_cast(k, it, j), lp_select(k, valid, lp_int(k, it, n), lp_int(k, it, 0)),
                             lp_int(k, it, (int64_t)c.g * c.K))->body;
    lp_type xt = dsp_index_type((int64_t)N * n, 0);
    lp_expr *index = lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_cast(k, xt, rank), lp_int(k, xt, n)), lp_cast(k, xt, lp_reg(k, r)));
    lp_expr *x = dsp_element(l, lp_load(k, src, dsp_reduce_src_offset(l, lp_reg(k, s), lp_reg(k, r))), index, shift);
    lp_assign(k, fold, acc, dsp_combine(l, fold, lp_reg(k, acc), x));
    if (c.g > 1) dsp_xor_tree(l, each, acc, c.g);
    lp_expr *slot = lp_cast(k, LP_I32, lp_reg(k, s));
    if (c.K > 1) slot = lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, slot, dsp_i32(l, c.K)), kk);
    lp_store(k, &lp_if(k, each, lp_binary(k, LO_AND, lp_binary(k, LO_EQ, lane, dsp_i32(l, 0)), valid))->body, part, slot,
             lp_reg(k, acc));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    if (c.K > 1) grid_slot_tree(l, b, part, S * c.K, c.K, 1); /* each output's K group values into its first slot */
    lp_barrier(k, b, TILEC_SCOPE_CLUSTER);

    /* the states of every CTA, in rank order */
    lp_block *gather = b;
    if (q->st->dst.buf->space == TILEC_SPACE_GLOBAL)
        gather = &lp_if(k, b, lp_binary(k, LO_EQ, rank, dsp_i32(l, 0)))->body;
    lp_type ot = dsp_index_type(S, q->threads);
    int o = lp_reg_new(k, ot, "o"), v = lp_reg_new(k, at, "v");
    lp_block *out = &lp_for(k, gather, o, lp_cast(k, ot, tid), lp_int(k, ot, S), lp_int(k, ot, q->threads))->body;
    lp_expr *from = lp_cast(k, LP_I32, lp_reg(k, o));
    if (c.K > 1) from = lp_binary(k, LO_MUL, from, dsp_i32(l, c.K));
    for (int p = 0; p < N; p++) {
        lp_expr *state = lp_load_rank(k, part, from, dsp_i32(l, p));
        lp_assign(k, out, v, p ? dsp_combine(l, out, lp_reg(k, v), state) : state);
    }
    dsp_store_output(l, out, lp_reg(k, o), lp_reg(k, v));
    return true;
}

const dsp_case dsp_case_cluster = {
    .variant = "cluster",
    .priority = 10,
    .ops = DSP_OPS_CLUSTER,
    .targets = (1u << TILEC_BACKEND_CUDA) | (1u << TILEC_BACKEND_SIM),
    .preds = {{"source", cluster_source}},
    .lower = lower_cluster,
    .summary = "each CTA folds its copy into shared slots; the states meet through distributed shared memory",
};
