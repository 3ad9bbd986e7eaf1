/*
 * v_shared.c — the `shared` variant (seed 004): groups of g lanes, one output per group.
 *
 * g = min(next_pow2(red_len), warp size, the largest power of two dividing the size of
 * every instance that runs), so no group is ever partial: a 48-thread CTA works in groups
 * of 16, never in a group of 32 with 16 missing lanes. Each lane folds reduction elements
 * lane, lane + g, …; log2(g) shuffle-xor steps (masks 1, 2, 4, …, width g) leave the group's
 * result in every lane; lane 0 stores. Groups take outputs group, group + groups, … in
 * steps that every lane of an instance runs the same number of times, so the lanes are
 * converged at every shuffle; with several steps a group takes up to four outputs at
 * once, their butterflies independent of each other. The end barrier is added by lower.c.
 */
#include "dispatch.h"

#include <stdio.h>

enum { ROWS_IN_FLIGHT = 4 }; /* outputs a group works on at once */

static bool lower_shared(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    lp_type it = dsp_index_type(q->spatial_len, (int64_t)q->threads * ROWS_IN_FLIGHT); /* s runs a turn of groups ahead */
    int g = q->group;
    lp_expr *tid = lp_cast(k, it, dsp_inst_tid(l));
    lp_expr *groups = lp_cast(k, it, dsp_inst_size(l));
    lp_expr *grp = tid, *lane = lp_int(k, it, 0);
    if (g > 1) {
        groups = groups->kind == LX_CONST ? lp_int(k, it, groups->i / g) : lp_binary(k, LO_DIV, groups, lp_int(k, it, g));
        grp = lp_binary(k, LO_DIV, tid, lp_int(k, it, g));
        lane = lp_binary(k, LO_REM, tid, lp_int(k, it, g));
    }
    int lane_r = lp_reg_new(k, it, "lane"), grp_r = lp_reg_new(k, it, "grp");
    lp_assign(k, l->into, lane_r, lane);
    lp_assign(k, l->into, grp_r, grp);
    lp_expr *steps = dsp_ceil_div(l, lp_int(k, it, q->spatial_len), groups);
    /* with several steps, a turn of the loop takes `rows` of them, so their butterflies
     * are independent and overlap (a lone butterfly is a chain of dependent shuffles) */
    int rows = 1;
    if (steps->kind == LX_CONST && groups->kind == LX_CONST && steps->i > 1)
        rows = steps->i < ROWS_IN_FLIGHT ? (int)steps->i : ROWS_IN_FLIGHT;
    lp_block *body = l->into;
    int s = lp_reg_new(k, it, "s");
    for (int u = 1; u < rows; u++) lp_reg_new(k, it, "s");
    lp_expr *turn = NULL;
    if (!(steps->kind == LX_CONST && steps->i == 1)) {
        int step = lp_reg_new(k, it, "step");
        lp_expr *turns = rows > 1 ? lp_int(k, it, (steps->i + rows - 1) / rows) : steps;
        body = &lp_for(k, body, step, lp_int(k, it, 0), turns, lp_int(k, it, 1))->body;
        turn = lp_reg(k, step);
    }
    int acc = lp_reg_new(k, dsp_acc_type(q), "acc");
    for (int u = 1; u < rows; u++) lp_reg_new(k, dsp_acc_type(q), "acc");
    bool all_in_range = rows > 1 ? q->spatial_len % (groups->i * rows) == 0
                                 : steps->kind == LX_CONST && groups->kind == LX_CONST && q->spatial_len % groups->i == 0;
    lp_expr *in_range[ROWS_IN_FLIGHT];
    for (int u = 0; u < rows; u++) { /* output s_u = (turn * rows + u) * groups + grp */
        lp_expr *at = turn ? (rows > 1 ? lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, turn, lp_int(k, it, rows)), lp_int(k, it, u)) : turn) : NULL;
        lp_assign(k, body, s + u, at ? lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, at, groups), lp_reg(k, grp_r)) : lp_reg(k, grp_r));
        lp_assign(k, body, acc + u, dsp_identity(l));
        in_range[u] = lp_binary(k, LO_LT, lp_reg(k, s + u), lp_int(k, it, q->spatial_len));
        lp_block *gather = all_in_range ? body : &lp_if(k, body, in_range[u])->body;
        dsp_accumulate(l, gather, acc + u, lp_reg(k, s + u), lp_reg(k, lane_r), lp_int(k, it, g));
    }
    for (int u = 0; u < rows; u++) dsp_xor_tree(l, body, acc + u, g);
    for (int u = 0; u < rows; u++) {
        lp_expr *leader = lp_binary(k, LO_EQ, lp_reg(k, lane_r), lp_int(k, it, 0));
        if (!all_in_range) leader = lp_binary(k, LO_AND, in_range[u], leader);
        dsp_store_output(l, &lp_if(k, body, leader)->body, lp_reg(k, s + u), lp_reg(k, acc + u));
    }
    return true;
}

const dsp_case dsp_case_shared = {
    .variant = "shared",
    .priority = 10,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"storage", dsp_pred_shared_or_global},
              {"scope", dsp_pred_not_thread_scope},
              {"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_shared,
    .summary = "groups of g lanes per output, shuffle-xor butterfly of width g, lane 0 stores",
};
