/*
 * v_sequential.c — the `sequential` variant: each thread of an instance takes whole
 * outputs (tid, tid + size, …) and folds their elements in order. No shuffle; the end
 * barrier (lower.c) publishes the results. At thread scope one thread does everything.
 * It is the fallback for shapes the tree variants reject (one thread per output is
 * slower but always correct).
 */
#include "dispatch.h"

#include <stdio.h>

static bool no_local_across_lanes(const dsp_query *q, char *why, size_t n) {
    bool local = q->st->src.buf->space == TILEC_SPACE_LOCAL || q->st->dst.buf->space == TILEC_SPACE_LOCAL;
    if (!local || q->st->exec.scope == TILEC_SCOPE_THREAD) return true;
    snprintf(why, n, "a local operand at %s scope is combined across lanes, which one thread cannot see",
             tilec_scope_name(q->st->exec.scope));
    return false;
}

static bool lower_sequential(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    lp_type it = dsp_index_type(q->spatial_len, q->threads);
    int s = lp_reg_new(k, it, "s"), acc = lp_reg_new(k, dsp_acc_type(q), "acc");
    lp_stmt *loop = lp_for(k, l->into, s, lp_cast(k, it, dsp_inst_tid(l)), lp_int(k, it, q->spatial_len),
                           lp_cast(k, it, dsp_inst_size(l)));
    lp_assign(k, &loop->body, acc, dsp_identity(l));
    dsp_accumulate(l, &loop->body, acc, lp_reg(k, s), lp_int(k, it, 0), lp_int(k, it, 1));
    dsp_store_output(l, &loop->body, lp_reg(k, s), lp_reg(k, acc));
    return true;
}

const dsp_case dsp_case_sequential = {
    .variant = "sequential",
    .priority = 5,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"lanes", no_local_across_lanes}, {"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_sequential,
    .summary = "one thread per output, elements folded in order",
};
