/*
 * v_data.c — lowerings of copy, fill and sync.
 *
 * copy and fill are cooperative: thread t of an instance of size n handles elements
 * t, t + n, … (elements are numbered row-major over each region as indexed; copy pairs
 * them in that order). A copy between dense, aligned regions moves 16 bytes at a time
 * (4 f32, 8 f16…), thread t taking vectors t, t + n, …. One thread at thread scope does all of them, and so does every
 * lane when a warp-scope statement writes a local buffer (each lane has its own). sync is
 * a barrier of its scope; thread scope needs none.
 */
#include "dispatch.h"

#include <stdio.h>

enum { UNROLL = 4 }; /* 16-byte loads in flight per thread in a long vector copy */

/* Elements per 16-byte vector move for a copy between these regions, or 1 when the
 * copy must go element by element: both regions dense and aligned to the vector, the
 * count a multiple of it, and both buffers of known alignment (kernel parameters, which
 * the runtime allocates, and shared allocations, which the emitters align; not a func's
 * parameters, nor registers). */
static int copy_vector(const dsp_query *q, int64_t n) {
    const ir_stmt *st = q->st;
    const ir_region *r[2] = {&st->dst, &st->src};
    int vec = (int)(16 / tilec_dtype_size(st->dst.buf->dtype));
    if (n % vec) return 1;
    for (int i = 0; i < 2; i++) {
        const tilec_buffer *b = r[i]->buf;
        if (b->space == TILEC_SPACE_LOCAL || dsp_address_unknown(q, b)) return 1;
        if (!dsp_region_dense(r[i]) || !dsp_region_base_aligned(r[i], vec)) return 1;
    }
    return vec;
}

/* Where thread t's elements start and how far apart they are: t, t + n, … of an
 * instance of n threads, or all of them from 0 for a thread alone. */
static void element_range(dsp_lower *l, lp_type it, lp_expr **first, lp_expr **stride) {
    const dsp_query *q = l->q;
    bool alone = q->st->exec.scope == TILEC_SCOPE_THREAD || q->st->dst.buf->space == TILEC_SPACE_LOCAL;
    *first = alone ? lp_int(l->k, it, 0) : lp_cast(l->k, it, dsp_inst_tid(l));
    *stride = alone ? lp_int(l->k, it, 1) : lp_cast(l->k, it, dsp_inst_size(l));
}

/* for (e = first; e < n; e += stride) body — returns the body and the element register. */
static lp_block *each_element(dsp_lower *l, int64_t n, int *e) {
    lp_type it = dsp_index_type(n, dsp_lane_step(l, NULL));
    lp_expr *first, *stride;
    element_range(l, it, &first, &stride);
    *e = lp_reg_new(l->k, it, "e");
    return &lp_for(l->k, l->into, *e, first, lp_int(l->k, it, n), stride)->body;
}

static bool lower_copy(dsp_lower *l, char *why, size_t n) {
    (void)why, (void)n;
    lp_kernel *k = l->k;
    const ir_stmt *st = l->q->st;
    int64_t elems = ir_region_elems(&st->dst);
    int vec = copy_vector(l->q, elems);
    int e;
    lp_buf *src = lp_buf_for(k, st->src.buf), *dst = lp_buf_for(k, st->dst.buf);
    if (vec > 1) { /* 16 bytes at a time */
        int64_t nv = elems / vec;
        lp_type it = dsp_index_type(elems, UNROLL * dsp_lane_step(l, NULL) * vec); /* e * vec too */
        lp_expr *first, *stride;
        element_range(l, it, &first, &stride);
        e = lp_reg_new(k, it, "e");
        bool unroll = stride->kind == LX_CONST && nv >= UNROLL * stride->i;
        int regs = lp_reg_new(k, src->type, "v");
        for (int i = 1; i < (unroll ? UNROLL : 1) * vec; i++) lp_reg_new(k, src->type, "v");
        if (unroll) {
            /* UNROLL vectors in flight per thread: a turn of the loop loads UNROLL strides
             * before it stores any; the vectors left over go one at a time after */
            int64_t d = stride->i;
            lp_block *body = &lp_for(k, l->into, e, first, lp_int(k, it, nv - (UNROLL - 1) * d), lp_int(k, it, UNROLL * d))->body;
            lp_expr *at[UNROLL];
            for (int u = 0; u < UNROLL; u++) {
                at[u] = lp_binary(k, LO_MUL, lp_binary(k, LO_ADD, lp_reg(k, e), lp_int(k, it, u * d)), lp_int(k, it, vec));
                lp_vload(k, body, regs + u * vec, vec, src, dsp_region_offset(l, &st->src, at[u]));
            }
            for (int u = 0; u < UNROLL; u++)
                lp_vstore(k, body, dst, dsp_region_offset(l, &st->dst, at[u]), regs + u * vec, vec);
            first = lp_reg(k, e);
        }
        lp_block *body = &lp_for(k, l->into, e, first, lp_int(k, it, nv), stride)->body;
        lp_expr *at = lp_binary(k, LO_MUL, lp_reg(k, e), lp_int(k, it, vec));
        lp_vload(k, body, regs, vec, src, dsp_region_offset(l, &st->src, at));
        lp_vstore(k, body, dst, dsp_region_offset(l, &st->dst, at), regs, vec);
        return true;
    }
    lp_block *body = each_element(l, elems, &e);
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
    lp_store(k, body, dst, dsp_region_offset(l, &st->dst, lp_reg(k, e)), dsp_fill_value(l, dst->type));
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
