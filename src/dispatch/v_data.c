/*
 * v_data.c — lowerings of copy, fill and sync.
 *
 * copy and fill are cooperative: thread t of an instance of size n handles elements
 * t, t + n, … (elements are numbered row-major over each region as indexed; copy pairs
 * them in that order). One thread at thread scope does all of them, and so does every
 * lane when a warp-scope statement writes a local buffer (each lane has its own). sync is
 * a barrier of its scope; thread scope needs none.
 */
#include "dispatch.h"

#include <stdio.h>

/* for (e = first; e < n; e += stride) body — returns the body and the element register. */
static lp_block *each_element(dsp_lower *l, int64_t n, int *e) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    lp_type it = dsp_index_type(n);
    bool alone = q->st->exec.scope == TILEC_SCOPE_THREAD || q->st->dst.buf->space == TILEC_SPACE_LOCAL;
    lp_expr *first = alone ? lp_int(k, it, 0) : lp_cast(k, it, dsp_inst_tid(l));
    lp_expr *stride = alone ? lp_int(k, it, 1) : lp_cast(k, it, dsp_inst_size(l));
    *e = lp_reg_new(k, it, "e");
    return &lp_for(k, l->into, *e, first, lp_int(k, it, n), stride)->body;
}

static bool lower_copy(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const ir_stmt *st = l->q->st;
    int e;
    lp_block *body = each_element(l, ir_region_elems(&st->dst), &e);
    lp_buf *src = lp_buf_for(k, st->src.buf), *dst = lp_buf_for(k, st->dst.buf);
    lp_expr *v = lp_load(k, src, dsp_region_offset(l, &st->src, lp_reg(k, e)));
    lp_store(k, body, dst, dsp_region_offset(l, &st->dst, lp_reg(k, e)), v);
    return true;
}

static bool lower_fill(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const ir_stmt *st = l->q->st;
    int e;
    lp_block *body = each_element(l, ir_region_elems(&st->dst), &e);
    lp_buf *dst = lp_buf_for(k, st->dst.buf);
    lp_expr *v;
    if (lp_is_float(dst->type)) {
        /* one rounding, from the exact constant to the buffer's type */
        double f = st->fill.is_int ? (double)st->fill.i : st->fill.f;
        v = lp_cast(k, dst->type, lp_float(k, LP_F64, f));
    } else {
        v = lp_int(k, dst->type, st->fill.is_int ? st->fill.i : (int64_t)st->fill.f);
    }
    lp_store(k, body, dst, dsp_region_offset(l, &st->dst, lp_reg(k, e)), v);
    return true;
}

static bool lower_sync(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    if (l->q->st->exec.scope != TILEC_SCOPE_THREAD) lp_barrier(l->k, l->into, l->q->st->exec.scope);
    return true;
}

const dsp_case dsp_case_copy = {
    .variant = "copy",
    .priority = 10,
    .ops = 1u << DSP_COPY,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_copy,
    .summary = "element-wise copy, elements spread over the instance's threads",
};

const dsp_case dsp_case_fill = {
    .variant = "fill",
    .priority = 10,
    .ops = 1u << DSP_FILL,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_fill,
    .summary = "element-wise fill, elements spread over the instance's threads",
};

const dsp_case dsp_case_sync = {
    .variant = "barrier",
    .priority = 10,
    .ops = 1u << DSP_SYNC,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_sync,
    .summary = "a barrier of the statement's scope",
};
