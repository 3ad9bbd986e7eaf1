/*
 * grid.c — what the two grid executors share (grid.h): the planner, the index helpers,
 * the trees of the fold order, the gather of partial results and the completion count.
 */
#include "grid.h"

#include <stdio.h>

/* The source region as dims in memory order, merged; false (with why) when the region
 * is not a strided view of a global parameter. */
bool grid_plan_view(const dsp_query *q, gplan *g, char *why, size_t wn) {
    const ir_region *r = &q->st->src;
    const tilec_buffer *b = r->buf;
    *g = (gplan){.base = b->origin};
    gdim dims[TILEC_MAX_RANK];
    int nd = 0;
    for (int d = 0; d < b->rank; d++) {
        int64_t lo = 0, hi = b->shape[d];
        if (d < r->nindex) {
            if (ir_index_is_id(&r->index[d])) {
                snprintf(why, wn, "the source is indexed by an id");
                return false;
            }
            ir_index_range(&r->index[d], b->shape[d], &lo, &hi);
        }
        g->base += lo * b->strides[d];
        if (d < r->nindex && r->index[d].kind == TILEC_INDEX_AT) continue;
        dims[nd++] = (gdim){.n = hi - lo, .in = b->strides[d]};
    }
    int64_t out = 1, ri = 1;
    for (int d = nd - 1; d >= 0; d--) {
        dims[d].red = q->reduced[d];
        if (!dims[d].red) {
            dims[d].out = out;
            out *= dims[d].n;
        } else {
            dims[d].ri = ri;
            ri *= dims[d].n;
        }
    }
    g->S = q->spatial_len;
    /* a negative stride is read from its lowest element up: for a kept dim the output
     * index then runs down */
    for (int i = 0; i < nd; i++)
        if (dims[i].in < 0 && dims[i].n > 1) {
            g->base += (dims[i].n - 1) * dims[i].in;
            dims[i].in = -dims[i].in;
            if (!dims[i].red) {
                g->obase += (dims[i].n - 1) * dims[i].out;
                dims[i].out = -dims[i].out;
            } else {
                g->rbase += (dims[i].n - 1) * dims[i].ri;
                dims[i].ri = -dims[i].ri;
            }
        }
    /* sort by stride, outermost first (stable: equal strides keep their order) */
    for (int i = 0; i < nd; i++) {
        if (dims[i].n == 1) continue;
        int at = g->rank;
        while (at > 0 && g->d[at - 1].in < dims[i].in) {
            g->d[at] = g->d[at - 1];
            at--;
        }
        g->d[at] = dims[i];
        g->rank++;
    }
    int m = 0; /* merge neighbours */
    bool keyed = ir_op(q->st->op)->key == IR_KEY_INDEX; /* its index must stay one stride per dim */
    for (int i = 0; i < g->rank; i++) {
        gdim c = g->d[i];
        gdim *p = m ? &g->d[m - 1] : NULL;
        if (p && p->red == c.red && p->in == c.n * c.in && (c.red ? !keyed || p->ri == c.n * c.ri : p->out == c.n * c.out)) {
            p->n *= c.n;
            p->in = c.in;
            p->out = c.out;
            p->ri = c.ri;
        } else {
            g->d[m++] = c;
        }
    }
    g->rank = m;
    int64_t xs = 1;
    g->out_in_order = g->obase == 0;
    for (int i = m - 1; i >= 0; i--)
        if (!g->d[i].red) {
            g->d[i].xs = xs;
            xs *= g->d[i].n;
            g->out_in_order = g->out_in_order && g->d[i].out == g->d[i].xs;
        }
    bool any = false;
    for (int i = 0; i < m; i++) any = any || g->d[i].red;
    if (!any) { /* every reduced extent is 1: one element per output, outermost */
        for (int i = m; i > 0; i--) g->d[i] = g->d[i - 1];
        g->d[0] = (gdim){.n = 1, .in = 0, .red = true};
        g->rank = ++m;
    }
    /* the order */
    tilec_dtype dt = b->dtype;
    g->vec = (int)(16 / tilec_dtype_size(dt));
    g->U = in_flight(dt);
    g->W = (int64_t)LANES * g->vec * g->U;
    gdim *inner = &g->d[m - 1];
    g->rows = inner->red;
    g->n = g->rows ? inner->n : 1;
    g->ns = g->rows ? inner->in : 0;
    g->P = ceil_div(g->n, g->W);
    g->L = g->n < g->W ? g->n : g->W;
    g->M = g->P;
    for (int i = 0; i < m - (g->rows ? 1 : 0); i++)
        if (g->d[i].red) g->M *= g->d[i].n;
    int64_t work = g->rows ? WORK_ROWS : WORK_COLS, most = g->rows ? NB_ROWS : NB_COLS;
    int64_t G = ceil_div(work, g->L < work ? g->L : work);
    if (G < ceil_div(g->M, most)) G = ceil_div(g->M, most);
    g->NB = ceil_div(g->M, G);
    g->G = G;
    /* 16-byte loads: an aligned parameter, contiguous runs, every run start a multiple of vec */
    bool al = b->is_param && !dsp_address_unknown(q, b) && g->base % g->vec == 0;
    for (int i = 0; i < m; i++)
        if (g->d[i].n > 1 && g->d[i].in % g->vec && !(i == m - 1 && g->d[i].in == 1)) al = false;
    g->aligned = al && g->vec > 1 && (!g->rows || g->ns == 1);
    return true;
}

/* CTAs that fill the device once: about 1024 threads on every multiprocessor. The
 * executors aim for a few such waves; it changes where partial results meet, not the order. */
int64_t grid_wave(const dsp_query *q) {
    int sms = q->target->sms > 0 ? q->target->sms : DSP_DEFAULT_SMS, per = 1024 / q->threads;
    return (int64_t)sms * (per > 1 ? per : 1);
}

/* n consecutive registers; the first one's number. */
int grid_regs_new(lp_kernel *k, lp_type t, const char *name, int n) {
    int first = lp_reg_new(k, t, name);
    for (int j = 1; j < n; j++) lp_reg_new(k, t, name);
    return first;
}

/* The one index type of a plan's kernel: offsets, output and piece indices, a turn ahead. */
lp_type grid_index_type(const dsp_query *q, const gplan *g) {
    int64_t bound = q->st->src.buf->span;
    if (g->S * g->NB > bound) bound = g->S * g->NB;
    if (g->M + g->NB > bound) bound = g->M + g->NB;
    return dsp_index_type(bound, (int64_t)1 << 22);
}

/* base + the sum over the kept dims of the coordinate of the executors' output x (kept
 * dims in memory order) times the dim's stride in the source (out false) or in the
 * flat output index (out true). */
lp_expr *grid_kept_sum(lp_kernel *k, const gplan *g, lp_expr *x, bool out) {
    lp_expr *sum = ival(k, x->type, out ? g->obase : g->base);
    for (int i = 0; i < g->rank; i++) {
        const gdim *d = &g->d[i];
        if (d->red || d->n == 1) continue;
        lp_expr *c = divc(k, x, d->xs);
        if (d->xs * d->n < g->S) c = remc(k, c, d->n);
        sum = add(k, sum, mulc(k, c, out ? d->out : d->in));
    }
    return sum;
}

/* The source offset of output x's first element, and its flat output index. */
lp_expr *grid_kept_offset(lp_kernel *k, const gplan *g, lp_expr *x) { return grid_kept_sum(k, g, x, false); }
lp_expr *grid_out_index(lp_kernel *k, const gplan *g, lp_expr *x) { return g->out_in_order ? x : grid_kept_sum(k, g, x, true); }

/* The source offset of outer index o over the reduced dims (all of them for cols, all but
 * the run for rows). */
static lp_expr *outer_sum(lp_kernel *k, const gplan *g, lp_expr *o, bool index) {
    int last = g->rank - (g->rows ? 1 : 0);
    int64_t inner = 1;
    lp_expr *off = NULL;
    int64_t total = g->M / g->P;
    for (int i = last - 1; i >= 0; i--) {
        const gdim *d = &g->d[i];
        if (!d->red) continue;
        lp_expr *c = divc(k, o, inner);
        if (inner * d->n < total) c = remc(k, c, d->n);
        lp_expr *t = mulc(k, c, index ? d->ri : d->in);
        off = off ? add(k, off, t) : t;
        inner *= d->n;
    }
    return off ? off : ival(k, o->type, 0);
}

lp_expr *grid_outer_offset(lp_kernel *k, const gplan *g, lp_expr *o) { return outer_sum(k, g, o, false); }
lp_expr *grid_outer_index(lp_kernel *k, const gplan *g, lp_expr *o) {
    lp_expr *i = outer_sum(k, g, o, true);
    return g->rbase ? add(k, ival(k, o->type, g->rbase), i) : i;
}

/* ---- trees ----------------------------------------------------------------------------- */

/* The register `first` = the perfect binary tree of the n registers first, first + step,
 * … (pairs of neighbours, level by level). */
static void reg_pair(dsp_lower *l, lp_block *b, int first, int step, int i, int h, bool ordered) {
    lp_kernel *k = l->k;
    lp_expr *x = lp_reg(k, first + i * step), *y = lp_reg(k, first + (i + h) * step);
    lp_assign(k, b, first + i * step, ordered ? dsp_combine_ordered(l, b, x, y) : dsp_combine(l, b, x, y));
}

void grid_reg_tree(dsp_lower *l, lp_block *b, int first, int n, int step, bool ordered) {
    if (dsp_folds_many(l->q)) {
        dsp_fold_regs(l, b, first, n, step);
        return;
    }
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i + h < n; i += 2 * h) reg_pair(l, b, first, step, i, h, ordered);
}

bool grid_tree_by_leaf(const dsp_lower *l) { return !dsp_folds_many(l->q); }

/* The pairs of grid_reg_tree's tree that leaf j (of n, in index order) completes: each
 * whole subtree of 2h leaves whose last leaf is j, smallest first. Called for j = 0, 1, ...
 * as each leaf is ready, then grid_tree_rest once: the same pairs, so the same tree, with
 * a few of its nodes live at a time instead of every leaf. Only the pairs of h in
 * [hlo, hhi): the pairs inside an aligned block of 2^k leaves are those of h < 2^k. */
void grid_tree_leaf(dsp_lower *l, lp_block *b, int first, int j, int step, bool ordered, int hlo, int hhi) {
    for (int h = 1; h < hhi && (j + 1) % (2 * h) == 0; h <<= 1)
        if (h >= hlo) reg_pair(l, b, first, step, j + 1 - 2 * h, h, ordered);
}

/* The pairs left after grid_tree_leaf of every leaf: those whose right subtree is cut
 * short by n, level by level */
void grid_tree_rest(dsp_lower *l, lp_block *b, int first, int n, int step, bool ordered) {
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i + h < n; i += 2 * h)
            if (i + 2 * h > n) reg_pair(l, b, first, step, i, h, ordered);
}

/* Shared slots hold `count` trees of K leaves each, leaf i of tree c at (t0 + i) * width
 * + c... in general: slot (i * width + c) for leaf i (over all K * groups leaves) and column
 * c < width; folds every aligned group of K leaves into its first, level by level, with a
 * barrier after each. Every thread of the CTA runs it. */
void grid_slot_tree(dsp_lower *l, lp_block *b, lp_buf *slots, int64_t leaves, int64_t K, int64_t width) {
    lp_kernel *k = l->k;
    int T = l->q->threads;
    lp_expr *tid = lp_special_expr(k, LP_TID);
    for (int64_t h = 1; h < K; h <<= 1) {
        int64_t pairs = leaves / (2 * h) * width;
        int f = lp_reg_new(k, LP_I32, "f");
        lp_block *each = &lp_for(k, b, f, tid, ival(k, LP_I32, pairs), ival(k, LP_I32, T))->body;
        lp_expr *i = mulc(k, divc(k, lp_reg(k, f), width), 2 * h), *c = width > 1 ? remc(k, lp_reg(k, f), width) : NULL;
        lp_expr *at = mulc(k, i, width), *next = mulc(k, add(k, i, ival(k, LP_I32, h)), width);
        if (c) at = add(k, at, c), next = add(k, next, c);
        lp_store(k, each, slots, at, dsp_combine(l, each, lp_load(k, slots, at), lp_load(k, slots, next)));
        lp_barrier(k, b, TILEC_SCOPE_CTA);
    }
}

static lp_expr *gathered(dsp_lower *l, const partial_gather *p, lp_expr *f) {
    lp_kernel *k = l->k;
    lp_type it = p->it;
    lp_expr *fe = lp_cast(k, it, f);
    lp_expr *leaf = divc(k, fe, p->width);
    if (p->first) leaf = add(k, p->first, leaf);
    lp_expr *ok = lt(k, leaf, ival(k, it, p->stride)), *row = p->row0;
    if (p->col0) {
        lp_expr *gc = add(k, p->col0, p->width > 1 ? remc(k, fe, p->width) : ival(k, it, 0));
        ok = both(k, ok, lt(k, gc, ival(k, it, p->ncols)));
        row = add(k, row, mulc(k, lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, gc, ival(k, it, p->ncols - 1)), p->out));
    }
    lp_expr *at = add(k, mulc(k, row, p->stride), lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, leaf, ival(k, it, p->stride - 1)));
    return lp_select(k, ok, lp_load(k, p->from, at), dsp_identity(l));
}

/* The slots f < n of the gather, the CTA's threads taking f = tid, tid + T, …: up to
 * eight loads in flight per thread before any is stored, so the last CTA's gather of the
 * partials costs one memory latency per eight, not one per value. */
void grid_slot_gather(dsp_lower *l, lp_block *b, lp_buf *slots, int64_t n, const partial_gather *p) {
    lp_kernel *k = l->k;
    int T = l->q->threads;
    int64_t per = ceil_div(n, T);
    int B = per < 8 ? (int)per : 8;
    int f = lp_reg_new(k, LP_I32, "f"), v = grid_regs_new(k, dsp_acc_type(l->q), "g", B);
    lp_expr *tid = lp_special_expr(k, LP_TID);
    lp_block *each = &lp_for(k, b, f, tid, ival(k, LP_I32, n), ival(k, LP_I32, (int64_t)B * T))->body;
    bool whole = n % ((int64_t)B * T) == 0;
    lp_expr *at[8];
    for (int j = 0; j < B; j++) {
        at[j] = j ? add(k, lp_reg(k, f), ival(k, LP_I32, (int64_t)j * T)) : lp_reg(k, f);
        lp_assign(k, each, v + j, gathered(l, p, at[j]));
    }
    for (int j = 0; j < B; j++) {
        lp_block *in = whole || !j ? each : &lp_if(k, each, lt(k, at[j], ival(k, LP_I32, n)))->body;
        lp_store(k, in, slots, at[j], lp_reg(k, v + j));
    }
    lp_barrier(k, b, TILEC_SCOPE_CTA);
}

/* Thread 0 counts the CTA as done on `counter` (after a fence that publishes what the
 * CTA wrote); the block returned runs in the CTA that completes the count of `total`,
 * after a fence, on every thread of it. */
lp_block *grid_when_last(dsp_lower *l, lp_block *b, lp_buf *counter, lp_expr *which, lp_expr *total) {
    lp_kernel *k = l->k;
    lp_buf *last = lp_buf_scratch(k, "last", LP_I32, 1);
    lp_expr *tid = lp_special_expr(k, LP_TID);
    lp_block *t0 = &lp_if(k, b, eq(k, tid, ival(k, LP_I32, 0)))->body;
    lp_fence(k, t0);
    int old = lp_reg_new(k, LP_U32, "done");
    lp_atomic_add(k, t0, old, counter, which, ival(k, LP_U32, 1));
    lp_store(k, t0, last, ival(k, LP_I32, 0),
             lp_cast(k, LP_I32, eq(k, lp_reg(k, old), lp_binary(k, LO_SUB, lp_cast(k, LP_U32, total), ival(k, LP_U32, 1)))));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *fin = &lp_if(k, b, lp_binary(k, LO_NE, lp_load(k, last, ival(k, LP_I32, 0)), ival(k, LP_I32, 0)))->body;
    lp_fence(k, fin);
    return fin;
}

/* How many blocks of an output a CTA folds: K, a power of two from `least`, so that the
 * last CTA's slots hold the C = ceil(NB / K) partials of an output, then larger while the
 * launch keeps `quarters` quarter-waves of CTAs (`lines` CTAs side by side, C each) and K
 * blocks of `width` outputs fit the slots. It changes where partial results meet, not the
 * order. Measured on the H200: rows want four waves (a CTA's blocks are short; two for
 * 16-bit types, whose blocks carry half the bytes: 1-3% faster than four), columns
 * half of one (1024-CTA launches of one block per row lane lost 4-12% to 512-CTA ones of
 * two: the partials and their fold at the end cost more than the extra CTAs hide). */
int64_t grid_blocks_per_cta(const dsp_query *q, const gplan *g, int64_t lines, int64_t least, int64_t width,
                              int64_t quarters) {
    int64_t K = least, top = pow2_ceil(g->NB);
    while (K < top && pow2_ceil(ceil_div(g->NB, K)) > SLOTS) K <<= 1;
    while (K < top && 2 * K * width <= SLOTS && 4 * lines * ceil_div(g->NB, 2 * K) >= quarters * grid_wave(q)) K <<= 1;
    return K;
}
