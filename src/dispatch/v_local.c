/*
 * v_local.c — the `local` variant: reductions with a register (local) operand.
 *
 * At thread scope each thread reduces its own buffers. At warp scope a local operand is
 * one buffer per lane, and the warp's lanes are combined: for each output every lane
 * folds its share (all of its own local source, or elements lane, lane + warp size, … of
 * a shared or global source), a butterfly over the whole warp gives every lane the
 * total, and every lane stores it into its own local destination (lane 0 stores a shared
 * or global one).
 *
 * `local_smem` is for warps with missing lanes (threads=48 leaves a warp of 16 at warp
 * size 32), where a warp-wide butterfly cannot run: each lane writes its share to a
 * shared slot, a warp barrier, and every lane folds the warp's slots in the same order,
 * so all lanes get the same bits.
 */
#include "dispatch.h"

#include <stdio.h>

static bool has_local(const dsp_query *q, char *why, size_t n) {
    if (q->st->src.buf->space == TILEC_SPACE_LOCAL || q->st->dst.buf->space == TILEC_SPACE_LOCAL) return true;
    snprintf(why, n, "neither operand is local");
    return false;
}

static bool whole_warps(const dsp_query *q, char *why, size_t n) {
    tilec_scope s = q->st->exec.scope;
    if (s == TILEC_SCOPE_THREAD) return true;
    if (s != TILEC_SCOPE_WARP) {
        snprintf(why, n, "local operands are per thread; they reduce at thread or warp scope");
        return false;
    }
    int size = dsp_inst_threads(q);
    if (size == q->ws) return true;
    snprintf(why, n, "threads=%d leaves a warp of %d lanes (warp size %d): a warp-wide butterfly "
                     "would read lanes that do not exist", q->threads, size, q->ws);
    return false;
}

static bool lower_local(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    bool warp = q->st->exec.scope == TILEC_SCOPE_WARP;
    bool src_local = q->st->src.buf->space == TILEC_SPACE_LOCAL;
    bool dst_local = q->st->dst.buf->space == TILEC_SPACE_LOCAL;
    lp_type it = dsp_index_type(q->spatial_len, q->threads);
    int s = lp_reg_new(k, it, "s"), acc = lp_reg_new(k, dsp_acc_type(q), "acc");
    lp_stmt *loop = lp_for(k, l->into, s, lp_int(k, it, 0), lp_int(k, it, q->spatial_len), lp_int(k, it, 1));
    lp_block *body = &loop->body;
    lp_assign(k, body, acc, dsp_identity(l));
    if (warp && !src_local) /* the lanes share the elements of a shared or global source */
        dsp_accumulate(l, body, acc, lp_reg(k, s), lp_special_expr(k, LP_LANE), lp_int(k, LP_I32, q->ws));
    else
        dsp_accumulate(l, body, acc, lp_reg(k, s), lp_int(k, it, 0), lp_int(k, it, 1));
    if (warp) dsp_xor_tree(l, body, acc, q->ws);
    lp_block *store = body;
    if (warp && !dst_local)
        store = &lp_if(k, body, lp_binary(k, LO_EQ, lp_special_expr(k, LP_LANE), lp_int(k, LP_I32, 0)))->body;
    dsp_store_output(l, store, lp_reg(k, s), lp_reg(k, acc));
    return true;
}

static bool warp_scope(const dsp_query *q, char *why, size_t n) {
    if (q->st->exec.scope == TILEC_SCOPE_WARP) return true;
    snprintf(why, n, "only for warp scope (thread scope needs no other lane)");
    return false;
}

static bool lower_local_smem(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    bool src_local = q->st->src.buf->space == TILEC_SPACE_LOCAL;
    bool dst_local = q->st->dst.buf->space == TILEC_SPACE_LOCAL;
    lp_type at = dsp_acc_type(q), it = dsp_index_type(q->spatial_len, q->threads);
    lp_buf *slots = lp_buf_scratch(k, "local_slots", at, (int64_t)q->inst_count * q->ws);
    int lanes = lp_reg_new(k, LP_I32, "lanes"), base = lp_reg_new(k, LP_I32, "base");
    lp_assign(k, l->into, lanes, dsp_inst_size(l));
    lp_assign(k, l->into, base, lp_binary(k, LO_MUL, dsp_inst_id(l), lp_int(k, LP_I32, q->ws)));
    lp_expr *lane = lp_special_expr(k, LP_LANE);
    int s = lp_reg_new(k, it, "s"), acc = lp_reg_new(k, at, "acc"), j = lp_reg_new(k, LP_I32, "j");
    lp_block *body = &lp_for(k, l->into, s, lp_int(k, it, 0), lp_int(k, it, q->spatial_len), lp_int(k, it, 1))->body;
    lp_assign(k, body, acc, dsp_identity(l));
    if (src_local) dsp_accumulate(l, body, acc, lp_reg(k, s), lp_int(k, it, 0), lp_int(k, it, 1));
    else dsp_accumulate(l, body, acc, lp_reg(k, s), lane, lp_reg(k, lanes));
    lp_store(k, body, slots, lp_binary(k, LO_ADD, lp_reg(k, base), lane), lp_reg(k, acc));
    lp_barrier(k, body, TILEC_SCOPE_WARP);
    lp_assign(k, body, acc, dsp_identity(l));
    lp_block *fold = &lp_for(k, body, j, lp_int(k, LP_I32, 0), lp_reg(k, lanes), lp_int(k, LP_I32, 1))->body;
    lp_assign(k, fold, acc, dsp_combine(l, fold, lp_reg(k, acc), lp_load(k, slots, lp_binary(k, LO_ADD, lp_reg(k, base), lp_reg(k, j)))));
    lp_block *store = body;
    if (!dst_local) store = &lp_if(k, body, lp_binary(k, LO_EQ, lane, lp_int(k, LP_I32, 0)))->body;
    dsp_store_output(l, store, lp_reg(k, s), lp_reg(k, acc));
    lp_barrier(k, body, TILEC_SCOPE_WARP); /* the slots are read before the next output */
    return true;
}

const dsp_case dsp_case_local_smem = {
    .variant = "local_smem",
    .priority = 25,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"storage", has_local}, {"scope", warp_scope}},
    .lower = lower_local_smem,
    .summary = "register operands at warp scope on any lane count: shared slots, a warp barrier, every lane folds them",
};

const dsp_case dsp_case_local = {
    .variant = "local",
    .priority = 30,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"storage", has_local}, {"scope", whole_warps}},
    .lower = lower_local,
    .summary = "register operands: per-thread loops; at warp scope a butterfly over the warp",
};
