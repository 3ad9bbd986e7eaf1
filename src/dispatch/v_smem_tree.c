/*
 * v_smem_tree.c — the `smem_tree` variant (seed 000's first kernel), kept for comparison
 * and chosen only with variant=smem_tree: each thread folds elements tid, tid + size, …
 * into a shared slot, then a halving tree in shared memory with a barrier per level
 * (`if (tid < stride && tid + stride < size) slot[tid] = op(slot[tid], slot[tid + stride])`),
 * thread 0 stores, and a barrier protects the slots before the next output.
 */
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

static bool forced(const dsp_query *q, char *why, size_t n) {
    if (q->st->variant && strcmp(q->st->variant, "smem_tree") == 0) return true;
    snprintf(why, n, "chosen only when forced with variant=smem_tree (it needs a barrier per level)");
    return false;
}

static bool lower_smem_tree(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    tilec_scope scope = q->st->exec.scope;
    lp_type at = dsp_acc_type(q), it = dsp_index_type(q->spatial_len, q->threads);
    lp_buf *slots = lp_buf_scratch(k, "smem_tree_slots", at, (int64_t)q->inst_count * q->inst_size);
    int tid = lp_reg_new(k, LP_I32, "tid"), size = lp_reg_new(k, LP_I32, "size"), base = lp_reg_new(k, LP_I32, "base");
    lp_assign(k, l->into, tid, dsp_inst_tid(l));
    lp_assign(k, l->into, size, dsp_inst_size(l));
    lp_assign(k, l->into, base, lp_binary(k, LO_MUL, dsp_inst_id(l), lp_int(k, LP_I32, q->inst_size)));
    int s = lp_reg_new(k, it, "s"), acc = lp_reg_new(k, at, "acc");
    lp_stmt *loop = lp_for(k, l->into, s, lp_int(k, it, 0), lp_int(k, it, q->spatial_len), lp_int(k, it, 1));
    lp_block *body = &loop->body;
    lp_assign(k, body, acc, dsp_identity(l));
    dsp_accumulate(l, body, acc, lp_reg(k, s), lp_reg(k, tid), lp_reg(k, size));
    lp_expr *mine = lp_binary(k, LO_ADD, lp_reg(k, base), lp_reg(k, tid));
    lp_store(k, body, slots, mine, lp_reg(k, acc));
    lp_barrier(k, body, scope);
    int top = 1;
    while (top < q->inst_size) top <<= 1;
    for (int stride = top / 2; stride >= 1; stride /= 2) {
        lp_expr *c = lp_binary(k, LO_AND,
                               lp_binary(k, LO_LT, lp_reg(k, tid), lp_int(k, LP_I32, stride)),
                               lp_binary(k, LO_LT, lp_binary(k, LO_ADD, lp_reg(k, tid), lp_int(k, LP_I32, stride)), lp_reg(k, size)));
        lp_block *then = &lp_if(k, body, c)->body;
        lp_expr *other = lp_load(k, slots, lp_binary(k, LO_ADD, mine, lp_int(k, LP_I32, stride)));
        lp_store(k, then, slots, mine, dsp_combine(l, then, lp_load(k, slots, mine), other));
        lp_barrier(k, body, scope);
    }
    lp_block *first = &lp_if(k, body, lp_binary(k, LO_EQ, lp_reg(k, tid), lp_int(k, LP_I32, 0)))->body;
    dsp_store_output(l, first, lp_reg(k, s), lp_load(k, slots, lp_reg(k, base)));
    lp_barrier(k, body, scope);
    return true;
}

const dsp_case dsp_case_smem_tree = {
    .variant = "smem_tree",
    .priority = 0,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"forced", forced},
              {"storage", dsp_pred_shared_or_global},
              {"scope", dsp_pred_not_thread_scope},
              {"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_smem_tree,
    .summary = "seed 000's halving tree in shared memory, a barrier per level (only when forced)",
};
