/*
 * v_cta_tree.c — the `cta_tree` variant (seed 000's second kernel, for many outputs):
 * when there are fewer outputs than the `shared` variant has groups, every thread of the
 * instance works on the same K outputs (K = min(outputs, warps, 4)). Each thread folds
 * elements tid, tid + size, …; a warp butterfly gives each warp's partial; lane 0 writes
 * it to a shared slot; one barrier; warp k folds the slots of output k with another
 * butterfly and stores. A barrier before the next round protects the slots.
 */
#include "dispatch.h"

#include <stdio.h>

static bool several_whole_warps(const dsp_query *q, char *why, size_t n) {
    if (q->inst_size < 2 * q->ws) {
        snprintf(why, n, "an instance has %d threads, fewer than two warps of %d", q->inst_size, q->ws);
        return false;
    }
    if (q->inst_size % q->ws || q->inst_last % q->ws) {
        snprintf(why, n, "threads=%d is not a multiple of the warp size (%d): the last warp would "
                         "shuffle with lanes that do not exist", q->threads, q->ws);
        return false;
    }
    return true;
}

static bool few_outputs(const dsp_query *q, char *why, size_t n) {
    if (q->st->kind != IR_REDUCE) return false;
    int64_t groups = q->inst_size / q->group;
    if (q->spatial_len < groups && q->red_len > q->group) return true;
    snprintf(why, n, "%lld outputs of %lld elements keep all %lld groups of the shared variant busy",
             (long long)q->spatial_len, (long long)q->red_len, (long long)groups);
    return false;
}

static bool lower_cta_tree(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    int ws = q->ws, nw = q->inst_size / ws;
    int K = (int)(q->spatial_len < nw ? q->spatial_len : nw);
    if (K > 4) K = 4;
    lp_type at = dsp_acc_type(q), it = dsp_index_type(q->spatial_len, q->threads);
    lp_buf *slots = lp_buf_scratch(k, "cta_tree_slots", at, (int64_t)q->inst_count * K * nw);
    lp_expr *tid = dsp_inst_tid(l);
    int wid = lp_reg_new(k, LP_I32, "wid"), base = lp_reg_new(k, LP_I32, "base");
    lp_assign(k, l->into, wid, lp_binary(k, LO_DIV, tid, lp_int(k, LP_I32, ws)));
    lp_assign(k, l->into, base, lp_binary(k, LO_MUL, dsp_inst_id(l), lp_int(k, LP_I32, K * nw)));
    int64_t rounds = (q->spatial_len + K - 1) / K;
    int round = lp_reg_new(k, it, "round");
    lp_stmt *loop = lp_for(k, l->into, round, lp_int(k, it, 0), lp_int(k, it, rounds), lp_int(k, it, 1));
    lp_block *body = &loop->body;
    if (rounds > 1) /* the slots of the last round are still being read */
        lp_barrier(k, &lp_if(k, body, lp_binary(k, LO_LT, lp_int(k, it, 0), lp_reg(k, round)))->body,
                   q->st->exec.scope);
    lp_expr *lane0 = lp_binary(k, LO_EQ, lp_special_expr(k, LP_LANE), lp_int(k, LP_I32, 0));
    for (int j = 0; j < K; j++) {
        int s = lp_reg_new(k, it, "s"), acc = lp_reg_new(k, at, "acc");
        lp_assign(k, body, s, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, round), lp_int(k, it, K)), lp_int(k, it, j)));
        lp_assign(k, body, acc, dsp_identity(l));
        lp_block *gather = body;
        if (q->spatial_len % K) gather = &lp_if(k, body, lp_binary(k, LO_LT, lp_reg(k, s), lp_int(k, it, q->spatial_len)))->body;
        dsp_accumulate(l, gather, acc, lp_reg(k, s), tid, dsp_inst_size(l));
        dsp_xor_tree(l, body, acc, ws);
        lp_expr *slot = lp_binary(k, LO_ADD, lp_reg(k, base), lp_binary(k, LO_ADD, lp_int(k, LP_I32, j * nw), lp_reg(k, wid)));
        lp_store(k, &lp_if(k, body, lane0)->body, slots, slot, lp_reg(k, acc));
    }
    lp_barrier(k, body, q->st->exec.scope);
    /* warp j folds output j of the round */
    lp_block *fold = &lp_if(k, body, lp_binary(k, LO_LT, lp_reg(k, wid), lp_int(k, LP_I32, K)))->body;
    int v = lp_reg_new(k, at, "v"), s = lp_reg_new(k, it, "s");
    lp_expr *lane = lp_special_expr(k, LP_LANE);
    lp_expr *slot = lp_binary(k, LO_ADD, lp_reg(k, base), lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, wid), lp_int(k, LP_I32, nw)), lane));
    lp_assign(k, fold, v, dsp_identity(l));
    lp_assign(k, &lp_if(k, fold, lp_binary(k, LO_LT, lane, lp_int(k, LP_I32, nw)))->body, v, lp_load(k, slots, slot));
    int width = 1;
    while (width < nw) width <<= 1;
    dsp_xor_tree(l, fold, v, width);
    lp_assign(k, fold, s, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, lp_reg(k, round), lp_int(k, it, K)), lp_cast(k, it, lp_reg(k, wid))));
    lp_expr *store = lp_binary(k, LO_EQ, lp_special_expr(k, LP_LANE), lp_int(k, LP_I32, 0));
    if (q->spatial_len % K) store = lp_binary(k, LO_AND, store, lp_binary(k, LO_LT, lp_reg(k, s), lp_int(k, it, q->spatial_len)));
    dsp_store_output(l, &lp_if(k, fold, store)->body, lp_reg(k, s), lp_reg(k, v));
    return true;
}

const dsp_case dsp_case_cta_tree = {
    .variant = "cta_tree",
    .priority = 20,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"storage", dsp_pred_shared_or_global},
              {"several_warps", several_whole_warps},
              {"few_outputs", few_outputs},
              {"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_cta_tree,
    .summary = "all warps on the same outputs: warp butterflies, one shared slot per warp, one barrier, a warp folds the slots",
};
