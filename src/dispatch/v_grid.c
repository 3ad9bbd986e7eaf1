/*
 * v_grid.c — whole-tensor reductions: grid-scope statements, where every CTA of the
 * launch works on one reduction and the variant chooses how many CTAs there are.
 *
 * One planner, one fold order, two executors.
 *
 * The planner (plan_view) reads the source region as dims with element strides, sorts
 * them by stride (memory order, outermost first), drops extent-1 dims and merges
 * neighbours that are both reduced, or both kept and contiguous in the output too. Then
 * the innermost dim decides the layout: reduced, the output reads runs of contiguous
 * elements ("rows"); kept, neighbouring outputs are neighbours in memory ("cols").
 *
 * The fold order of an output depends on the op, the dtype, the reduced extents and the
 * layout only (docs/runtime.md, "Fold order", says it so another implementation can
 * reproduce it):
 *
 *   Pieces. Rows: each run of n elements is cut into pieces of W = 32 * vec * U elements
 *   (vec = 16 / element size, U = 8, or 4 for 16-bit types), the last one shorter. Cols:
 *   a piece is one element. The pieces of an output are numbered o = run * P + piece (P
 *   pieces per run; runs over the other reduced dims in memory order, row-major): M in all.
 *
 *   A piece's value: element i is the leaf k = (i / (32 vec)) * vec + i % vec of lane
 *   (i / vec) % 32; each lane's U * vec leaves are combined by a perfect binary tree over
 *   k (pairs (0,1), (2,3), …, then pairs of those), then the 32 lane values by a perfect
 *   binary tree over the lane (the xor butterfly 1, 2, 4, 8, 16).
 *
 *   Blocks. NB = ceil(M / G) blocks of G = max(ceil(w / min(L, w)), ceil(M / B)) pieces,
 *   for pieces of L elements; w = 16 and B = 4096 for rows, w = 128 and B = 16384 for cols.
 *   Rows: block b folds pieces b, b + NB, b + 2 NB, … (the CTAs of an output sweep it
 *   together); cols: pieces b G, b G + 1, … b G + G - 1 (a thread's rows are neighbours);
 *   left to right. The NB block values are combined by a perfect binary tree over b.
 *
 *   A missing leaf of a tree is the identity, which changes nothing (the identity of a
 *   float sum is -0.0: x + -0.0 is x for every x), so every tree may be cut short where
 *   its leaves end, and any executor that computes the same trees gives the same bits.
 *
 * The executors choose lanes, CTAs, loads and where partial results meet — never the
 * order: so the bits do not depend on the kept extents, the device's multiprocessor count,
 * the warp size or the pointer's alignment.
 *
 * - grid_rows: a group of g lanes per piece (g = 32, fewer for short pieces), 16-byte
 *   loads when the runs start aligned, all of a piece's loads in flight before it is
 *   folded; several short rows in flight per group when a row is one piece.
 * - grid_cols: a thread per (vector of) column(s) and block, 8 to 32 rows in flight: 128
 *   bytes (64 for 16-bit element loads).
 *
 * Both put the block values of a CTA in shared slots and fold them as the tree says; when
 * an output's blocks span several CTAs, each CTA stores its subtree's value in global
 * scratch and the last CTA of the output (a completion counter) folds them.
 */
#include "dispatch.h"

#include <stdio.h>

enum {
    NB_ROWS = 4096,     /* blocks of an output, rows */
    NB_COLS = 16384,    /* blocks of an output, cols */
    WORK_ROWS = 16,     /* elements a block folds at least, rows */
    WORK_COLS = 128,    /* elements a block folds at least, cols */
    SLOTS = 4096,       /* shared slots a CTA folds at once (16 KB of f32) */
    LANES = 32,         /* lanes of a piece (also on 64-wide warps) */
    FIN_GROUP = 32,     /* CTAs of a column block whose partials one of them folds (cols) */
};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t pow2_ceil(int64_t v) {
    int64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}
static int64_t pow2_floor(int64_t v) {
    int64_t p = 1;
    while (p * 2 <= v) p <<= 1;
    return p;
}

/* ---- the plan ---------------------------------------------------------------------- */

typedef struct gdim {
    int64_t n;   /* extent */
    int64_t in;  /* element stride in the source buffer (>= 0: negative ones are flipped) */
    int64_t out; /* stride in the flat output index (kept dims; negative when flipped) */
    int64_t xs;  /* stride in the executors' index of outputs, memory order (kept dims) */
    bool red;
} gdim;

typedef struct gplan {
    int rank;
    gdim d[TILEC_MAX_RANK + 1]; /* memory order, outermost first */
    int64_t base;               /* source offset of element 0 */
    int64_t obase;              /* flat output index of the executors' output 0 */
    bool out_in_order;          /* the executors' output x is output x */
    int64_t S;                  /* outputs */
    bool rows;                  /* the innermost dim is reduced */
    int vec, U;                 /* elements per 16 bytes; loads per lane of a piece */
    int64_t W, n, ns;           /* piece size; run length and its element stride (rows) */
    int64_t P, L, M, G, NB;     /* pieces per run, elements per piece, pieces, per block, blocks */
    bool aligned;               /* 16-byte loads of whole vectors */
} gplan;

/* 16-byte loads a thread keeps in flight: 8 (128 bytes), or 4 for 16-bit elements, which
 * take a register each; either way 32 registers of loaded data. */
static int in_flight(tilec_dtype t) { return tilec_dtype_size(t) == 2 ? 4 : 8; }

/* The source region as dims in memory order, merged; false (with why) when the region
 * is not a strided view of a global parameter. */
static bool plan_view(const dsp_query *q, gplan *g, char *why, size_t wn) {
    const ir_region *r = &q->st->src;
    const tilec_buffer *b = r->buf;
    *g = (gplan){.base = b->origin};
    gdim dims[TILEC_MAX_RANK];
    int nd = 0;
    for (int d = 0; d < b->rank; d++) {
        int64_t lo = 0, hi = b->shape[d];
        if (d < r->nindex) {
            if (r->index[d].kind == TILEC_INDEX_ID) {
                snprintf(why, wn, "the source is indexed by an id");
                return false;
            }
            ir_index_range(&r->index[d], b->shape[d], &lo, &hi);
        }
        g->base += lo * b->strides[d];
        if (d < r->nindex && r->index[d].kind == TILEC_INDEX_AT) continue;
        dims[nd++] = (gdim){.n = hi - lo, .in = b->strides[d]};
    }
    int64_t out = 1;
    for (int d = nd - 1; d >= 0; d--) {
        dims[d].red = q->reduced[d];
        if (!dims[d].red) {
            dims[d].out = out;
            out *= dims[d].n;
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
    for (int i = 0; i < g->rank; i++) {
        gdim c = g->d[i];
        gdim *p = m ? &g->d[m - 1] : NULL;
        if (p && p->red == c.red && p->in == c.n * c.in && (c.red || p->out == c.n * c.out)) {
            p->n *= c.n;
            p->in = c.in;
            p->out = c.out;
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
    bool al = !q->target->unaligned && b->is_param && g->base % g->vec == 0;
    for (int i = 0; i < m; i++)
        if (g->d[i].n > 1 && g->d[i].in % g->vec && !(i == m - 1 && g->d[i].in == 1)) al = false;
    g->aligned = al && g->vec > 1 && (!g->rows || g->ns == 1);
    return true;
}

/* CTAs that fill the device once: about 1024 threads on every multiprocessor. The
 * executors aim for a few such waves; it changes where partial results meet, not the order. */
static int64_t wave(const dsp_query *q) {
    int sms = q->target->sms > 0 ? q->target->sms : DSP_DEFAULT_SMS, per = 1024 / q->threads;
    return (int64_t)sms * (per > 1 ? per : 1);
}

/* ---- expressions --------------------------------------------------------------------- */

static lp_expr *ival(lp_kernel *k, lp_type t, int64_t v) { return lp_int(k, t, v); }
static lp_expr *add(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_ADD, a, b); }
static lp_expr *mul(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_MUL, a, b); }
static lp_expr *lt(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_LT, a, b); }
static lp_expr *eq(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_EQ, a, b); }
static lp_expr *both(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_AND, a, b); }
static lp_expr *divc(lp_kernel *k, lp_expr *a, int64_t c) { return c == 1 ? a : lp_binary(k, LO_DIV, a, ival(k, a->type, c)); }
static lp_expr *remc(lp_kernel *k, lp_expr *a, int64_t c) { return lp_binary(k, LO_REM, a, ival(k, a->type, c)); }
static lp_expr *mulc(lp_kernel *k, lp_expr *a, int64_t c) {
    if (c == 0) return ival(k, a->type, 0);
    return c == 1 ? a : mul(k, a, ival(k, a->type, c));
}

/* n consecutive registers; the first one's number. */
static int regs_new(lp_kernel *k, lp_type t, const char *name, int n) {
    int first = lp_reg_new(k, t, name);
    for (int j = 1; j < n; j++) lp_reg_new(k, t, name);
    return first;
}

/* The one index type of a plan's kernel: offsets, output and piece indices, a turn ahead. */
static lp_type index_type(const dsp_query *q, const gplan *g) {
    int64_t bound = q->st->src.buf->span;
    if (g->S * g->NB > bound) bound = g->S * g->NB;
    if (g->M + g->NB > bound) bound = g->M + g->NB;
    return dsp_index_type(bound, (int64_t)1 << 22);
}

/* base + the sum over the kept dims of the coordinate of the executors' output x (kept
 * dims in memory order) times the dim's stride in the source (out false) or in the
 * flat output index (out true). */
static lp_expr *kept_sum(lp_kernel *k, const gplan *g, lp_expr *x, bool out) {
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
static lp_expr *kept_offset(lp_kernel *k, const gplan *g, lp_expr *x) { return kept_sum(k, g, x, false); }
static lp_expr *out_index(lp_kernel *k, const gplan *g, lp_expr *x) { return g->out_in_order ? x : kept_sum(k, g, x, true); }

/* The source offset of outer index o over the reduced dims (all of them for cols, all but
 * the run for rows). */
static lp_expr *outer_offset(lp_kernel *k, const gplan *g, lp_expr *o) {
    int last = g->rank - (g->rows ? 1 : 0);
    int64_t inner = 1;
    lp_expr *off = NULL;
    int64_t total = g->M / g->P;
    for (int i = last - 1; i >= 0; i--) {
        const gdim *d = &g->d[i];
        if (!d->red) continue;
        lp_expr *c = divc(k, o, inner);
        if (inner * d->n < total) c = remc(k, c, d->n);
        lp_expr *t = mulc(k, c, d->in);
        off = off ? add(k, off, t) : t;
        inner *= d->n;
    }
    return off ? off : ival(k, o->type, 0);
}

/* ---- trees ----------------------------------------------------------------------------- */

/* The register `first` = the perfect binary tree of the n registers first, first + step,
 * … (pairs of neighbours, level by level). */
static void reg_tree(dsp_lower *l, lp_block *b, int first, int n, int step) {
    lp_kernel *k = l->k;
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i + h < n; i += 2 * h)
            lp_assign(k, b, first + i * step, dsp_combine(l, lp_reg(k, first + i * step), lp_reg(k, first + (i + h) * step)));
}

/* Shared slots hold `count` trees of K leaves each, leaf i of tree c at (t0 + i) * width
 * + c... in general: slot (i * width + c) for leaf i (over all K * groups leaves) and column
 * c < width; folds every aligned group of K leaves into its first, level by level, with a
 * barrier after each. Every thread of the CTA runs it. */
static void slot_tree(dsp_lower *l, lp_block *b, lp_buf *slots, int64_t leaves, int64_t K, int64_t width) {
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
        lp_store(k, each, slots, at, dsp_combine(l, lp_load(k, slots, at), lp_load(k, slots, next)));
        lp_barrier(k, b, TILEC_SCOPE_CTA);
    }
}

/* What the last CTA of an output (rows) or a column block (cols) gathers into its slots:
 * slot f = i * width + c holds partial first + i of local column c, read from `from`,
 * which holds `stride` partials per output; the identity from partial `stride` on (up to
 * the tree's power of two) and past the last column. Local column c is output row0 +
 * c * out, and global column col0 + c of ncols (col0 NULL: one column, rows). Every index
 * is clamped, so every slot reads in bounds. */
typedef struct partial_gather {
    lp_buf *from;
    lp_expr *first; /* NULL: 0 */
    lp_expr *row0, *col0;
    int64_t stride, width, ncols, out;
    lp_type it;
} partial_gather;

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
static void slot_gather(dsp_lower *l, lp_block *b, lp_buf *slots, int64_t n, const partial_gather *p) {
    lp_kernel *k = l->k;
    int T = l->q->threads;
    int64_t per = ceil_div(n, T);
    int B = per < 8 ? (int)per : 8;
    int f = lp_reg_new(k, LP_I32, "f"), v = regs_new(k, dsp_acc_type(l->q), "g", B);
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
static lp_block *when_last(dsp_lower *l, lp_block *b, lp_buf *counter, lp_expr *which, lp_expr *total) {
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
static int64_t blocks_per_cta(const dsp_query *q, const gplan *g, int64_t lines, int64_t least, int64_t width,
                              int64_t quarters) {
    int64_t K = least, top = pow2_ceil(g->NB);
    while (K < top && pow2_ceil(ceil_div(g->NB, K)) > SLOTS) K <<= 1;
    while (K < top && 2 * K * width <= SLOTS && 4 * lines * ceil_div(g->NB, 2 * K) >= quarters * wave(q)) K <<= 1;
    return K;
}

/* ---- grid_rows ------------------------------------------------------------------------- */

static bool rows_layout(const dsp_query *q, char *why, size_t n) {
    gplan g;
    if (!plan_view(q, &g, why, n)) return false;
    if (g.rows) return true;
    snprintf(why, n, "the innermost dim in memory is kept (a column layout)");
    return false;
}

static bool cols_layout(const dsp_query *q, char *why, size_t n) {
    gplan g;
    if (!plan_view(q, &g, why, n)) return false;
    if (!g.rows) return true;
    snprintf(why, n, "the innermost dim in memory is reduced (a row layout)");
    return false;
}

/* How a group of lanes folds a piece: `glanes` lanes (a power of two that divides the
 * CTA and fits a warp), each standing for f consecutive logical lanes of the 32 (f > 1 only
 * when a CTA's threads leave fewer lanes than the piece needs), each logical lane with
 * ueff loads of vec leaves. */
typedef struct gshape {
    int glanes, f, ueff;
} gshape;

static bool group_shape(const dsp_query *q, const gplan *g, gshape *gs, char *why, size_t wn) {
    int64_t vecs = ceil_div(g->L, g->vec);
    int need = (int)(vecs >= LANES ? LANES : pow2_ceil(vecs));
    int fit = q->threads & -q->threads;
    if (fit > q->ws) fit = q->ws;
    gs->glanes = need < fit ? need : fit;
    gs->f = need / gs->glanes;
    gs->ueff = (int)ceil_div(g->L, (int64_t)need * g->vec);
    if (gs->f * gs->ueff * g->vec > 256) {
        snprintf(why, wn, "a CTA of %d threads leaves %d lanes for a piece of %lld elements", q->threads, gs->glanes,
                 (long long)g->L);
        return false;
    }
    return true;
}

/* acc[u] = acc[u] ⊕ the value of piece o of output s_regs[u], for `items` outputs at once,
 * folded by the lanes of a group (lane: the thread's lane in it). Each lane loads its
 * leaves — the identity where the piece has none or valid[u] is false — all of them before
 * it folds any; then the trees of the order. Every lane of the warp runs the butterfly. */
static void piece_values(dsp_lower *l, lp_block *b, const gplan *g, const gshape *gs, int items, lp_type it,
                         const int *s_regs, lp_expr *o, lp_expr *lane, const int *acc, lp_expr *const *valid) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    lp_type at = dsp_acc_type(q);
    int vec = g->vec, nleaf = gs->ueff * vec, per = gs->f * nleaf, need = gs->glanes * gs->f;
    int xs = regs_new(k, src->type, "x", items * per), leaf = regs_new(k, at, "leaf", items * per);
    lp_expr *piece = g->P > 1 ? remc(k, o, g->P) : ival(k, it, 0);
    lp_expr *run = g->P > 1 ? divc(k, o, g->P) : o;
    /* the piece's length: L, or less for the last piece of a run */
    bool ragged = g->n % g->W != 0 && g->P > 1;
    lp_expr *len = ragged ? lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, ival(k, it, g->W),
                                      lp_binary(k, LO_SUB, ival(k, it, g->n), mulc(k, piece, g->W)))
                          : ival(k, it, g->L);
    /* a load is whole for every lane when the piece is never short of it */
    bool whole[64];
    for (int bi = 0; bi < gs->ueff; bi++) whole[bi] = !ragged && ((int64_t)bi * LANES + need) * vec <= g->L;
    for (int u = 0; u < items; u++) {
        for (int j = 0; j < per; j++) lp_assign(k, b, leaf + u * per + j, dsp_identity(l));
        lp_block *in = valid[u] ? &lp_if(k, b, valid[u])->body : b;
        lp_expr *start = add(k, add(k, kept_offset(k, g, lp_reg(k, s_regs[u])), outer_offset(k, g, run)),
                             mulc(k, piece, g->W * g->ns));
        for (int j = 0; j < gs->f; j++)
            for (int bi = 0; bi < gs->ueff; bi++) {
                lp_expr *logical = gs->f > 1 ? add(k, mulc(k, lane, gs->f), ival(k, it, j)) : lane;
                lp_expr *e0 = add(k, ival(k, it, (int64_t)bi * LANES * vec), mulc(k, logical, vec));
                int at_ = (u * gs->f + j) * nleaf + bi * vec, x = xs + at_, lf = leaf + at_;
                if (g->aligned && whole[bi]) {
                    lp_vload(k, in, x, vec, src, add(k, start, e0));
                    continue;
                }
                lp_block *part = in;
                if (g->aligned) { /* a whole vector, or element by element at the end */
                    lp_stmt *sel = lp_if(k, in, lp_binary(k, LO_LE, add(k, e0, ival(k, it, vec)), len));
                    part = &sel->orelse;
                    lp_vload(k, &sel->body, x, vec, src, add(k, start, e0));
                    for (int e = 0; e < vec; e++) lp_assign(k, &sel->body, lf + e, lp_cast(k, at, lp_reg(k, x + e)));
                }
                for (int e = 0; e < vec; e++) {
                    lp_expr *i = e ? add(k, e0, ival(k, it, e)) : e0;
                    lp_block *has = &lp_if(k, part, lt(k, i, len))->body;
                    lp_assign(k, has, lf + e, lp_cast(k, at, lp_load(k, src, add(k, start, mulc(k, i, g->ns)))));
                }
            }
    }
    for (int u = 0; u < items; u++) { /* the folds, after every load */
        lp_block *in = valid[u] ? &lp_if(k, b, valid[u])->body : b;
        for (int j = 0; j < gs->f; j++) {
            int lf = leaf + (u * gs->f + j) * nleaf;
            for (int bi = 0; bi < gs->ueff; bi++)
                if (g->aligned && whole[bi])
                    for (int e = 0; e < vec; e++)
                        lp_assign(k, in, lf + bi * vec + e, lp_cast(k, at, lp_reg(k, xs + (lf - leaf) + bi * vec + e)));
            reg_tree(l, in, lf, nleaf, 1); /* a logical lane's leaves */
        }
        reg_tree(l, in, leaf + u * per, gs->f, nleaf); /* its logical lanes */
    }
    for (int u = 0; u < items; u++) { /* the butterfly: every lane of the warp runs it */
        dsp_xor_tree(l, b, leaf + u * per, gs->glanes);
        lp_assign(k, b, acc[u], dsp_combine(l, lp_reg(k, acc[u]), lp_reg(k, leaf + u * per)));
    }
}

static bool lower_rows(dsp_lower *l, char *why, size_t wn) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    gplan g;
    gshape gs;
    if (!plan_view(q, &g, why, wn) || !group_shape(q, &g, &gs, why, wn)) return false;
    int T = q->threads, glanes = gs.glanes;
    int64_t GP = pow2_floor(T / glanes); /* groups of the CTA (a power of two; the rest idle) */
    lp_type it = index_type(q, &g), at = dsp_acc_type(q);
    lp_expr *tid = lp_special_expr(k, LP_TID);
    int lane = lp_reg_new(k, it, "lane"), grp = lp_reg_new(k, it, "grp");
    lp_block *b = l->into;
    lp_assign(k, b, lane, glanes > 1 ? remc(k, lp_cast(k, it, tid), glanes) : ival(k, it, 0));
    lp_assign(k, b, grp, divc(k, lp_cast(k, it, tid), glanes));
    lp_expr *cta = lp_cast(k, it, lp_special_expr(k, LP_CTA));
    lp_expr *used = lt(k, lp_reg(k, grp), ival(k, it, GP));

    if (g.NB == 1) { /* a group per output, all of it; rows of one short piece several at a time */
        int items = g.M == 1 && gs.ueff == 1 && gs.f == 1 ? in_flight(q->st->src.buf->dtype) : 1;
        k->grid = ceil_div(g.S, GP * items);
        snprintf(k->plan, sizeof k->plan,
                 "%lld piece%s of up to %lld elements an output, one block (the fold order); a group of %d lanes an output, "
                 "%d output%s in flight, %s loads",
                 (long long)g.M, g.M == 1 ? "" : "s", (long long)g.L, glanes, items, items == 1 ? "" : "s",
                 g.aligned ? "16-byte" : "element");
        int s = regs_new(k, it, "s", items), acc = regs_new(k, at, "acc", items);
        int sr[64], ar[64];
        lp_expr *ok[64];
        for (int u = 0; u < items; u++) {
            sr[u] = s + u;
            ar[u] = acc + u;
            lp_assign(k, b, s + u, add(k, mulc(k, add(k, mulc(k, cta, items), ival(k, it, u)), GP), lp_reg(k, grp)));
            lp_assign(k, b, acc + u, dsp_identity(l));
            ok[u] = both(k, used, lt(k, lp_reg(k, s + u), ival(k, it, g.S)));
        }
        if (g.M == 1) {
            piece_values(l, b, &g, &gs, items, it, sr, ival(k, it, 0), lp_reg(k, lane), ar, ok);
        } else { /* fewer pieces than a block takes: one after another */
            int o = lp_reg_new(k, it, "o");
            lp_block *each = &lp_for(k, b, o, ival(k, it, 0), ival(k, it, g.M), ival(k, it, 1))->body;
            piece_values(l, each, &g, &gs, 1, it, sr, lp_reg(k, o), lp_reg(k, lane), ar, ok);
        }
        for (int u = 0; u < items; u++)
            dsp_store_output(l, &lp_if(k, b, both(k, ok[u], eq(k, lp_reg(k, lane), ival(k, it, 0))))->body,
                             out_index(k, &g, lp_reg(k, s + u)), lp_reg(k, acc + u));
        return true;
    }

    /* Several blocks: a CTA folds K of them for OPC outputs (K * OPC block values in shared
     * slots, leaf i = round * GP + group), as the block tree says; when an output's blocks
     * span C > 1 CTAs, the last of them folds their C partials. */
    int64_t NBp = pow2_ceil(g.NB), K, OPC = 1;
    if (NBp <= GP) {
        K = NBp;
        OPC = GP / K;
    } else {
        K = blocks_per_cta(q, &g, g.S, GP, 1, tilec_dtype_size(q->st->src.buf->dtype) == 2 ? 8 : 16);
    }
    int64_t rounds = K * OPC / GP, C = ceil_div(g.NB, K), Cp = pow2_ceil(C), lines = ceil_div(g.S, OPC);
    k->grid = lines * C;
    snprintf(k->plan, sizeof k->plan,
             "%lld pieces of up to %lld elements an output in %lld blocks of %lld (the fold order); groups of %d lanes, "
             "%s loads; %lld block%s a CTA, %lld CTA%s an output%s",
             (long long)g.M, (long long)g.L, (long long)g.NB, (long long)g.G, glanes, g.aligned ? "16-byte" : "element",
             (long long)K, K == 1 ? "" : "s", (long long)C, C == 1 ? "" : "s", C > 1 ? " (partials, the last CTA folds them)" : "");
    int64_t nslots = GP * rounds > Cp ? GP * rounds : Cp;
    lp_buf *slots = lp_buf_scratch(k, "slots", at, nslots);
    int line = lp_reg_new(k, it, "line"), chunk = lp_reg_new(k, it, "chunk"), r = lp_reg_new(k, it, "round");
    lp_assign(k, b, line, divc(k, cta, C));
    lp_assign(k, b, chunk, C > 1 ? remc(k, cta, C) : ival(k, it, 0));
    lp_block *each = &lp_for(k, b, r, ival(k, it, 0), ival(k, it, rounds), ival(k, it, 1))->body;
    int i = lp_reg_new(k, it, "i"), s = lp_reg_new(k, it, "s"), blk = lp_reg_new(k, it, "b"), acc = lp_reg_new(k, at, "acc");
    lp_assign(k, each, i, add(k, mulc(k, lp_reg(k, r), GP), lp_reg(k, grp)));
    lp_assign(k, each, s, add(k, mulc(k, lp_reg(k, line), OPC), divc(k, lp_reg(k, i), K)));
    lp_assign(k, each, blk, add(k, mulc(k, lp_reg(k, chunk), K), OPC > 1 ? remc(k, lp_reg(k, i), K) : lp_reg(k, i)));
    lp_assign(k, each, acc, dsp_identity(l));
    /* every group takes the same number of turns (the butterfly needs the whole warp):
     * turn t folds piece blk + t * NB when there is one */
    int t = lp_reg_new(k, it, "t"), o = lp_reg_new(k, it, "o");
    lp_block *turns = &lp_for(k, each, t, ival(k, it, 0), ival(k, it, ceil_div(g.M, g.NB)), ival(k, it, 1))->body;
    lp_assign(k, turns, o, add(k, lp_reg(k, blk), mulc(k, lp_reg(k, t), g.NB)));
    lp_expr *valid = both(k, both(k, both(k, used, lt(k, lp_reg(k, s), ival(k, it, g.S))),
                                  lt(k, lp_reg(k, blk), ival(k, it, g.NB))), lt(k, lp_reg(k, o), ival(k, it, g.M)));
    int sr[1] = {s}, ar[1] = {acc};
    lp_expr *vs[1] = {valid};
    piece_values(l, turns, &g, &gs, 1, it, sr, lp_reg(k, o), lp_reg(k, lane), ar, vs);
    lp_store(k, &lp_if(k, each, both(k, used, eq(k, lp_reg(k, lane), ival(k, it, 0))))->body, slots, lp_cast(k, LP_I32, lp_reg(k, i)),
             lp_reg(k, acc));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    slot_tree(l, b, slots, GP * rounds, K, 1);
    lp_expr *itid = lp_cast(k, it, tid);
    lp_expr *sout = add(k, mulc(k, lp_reg(k, line), OPC), itid);
    lp_block *lead = &lp_if(k, b, both(k, lt(k, itid, ival(k, it, OPC)), lt(k, sout, ival(k, it, g.S))))->body;
    lp_expr *value = lp_load(k, slots, mulc(k, tid, K));
    if (C == 1) {
        dsp_store_output(l, lead, out_index(k, &g, sout), value);
        return true;
    }
    lp_buf *partials = lp_buf_scratch_global(k, "partials", at, g.S * C);
    lp_buf *counters = lp_buf_scratch_global(k, "counters", LP_U32, g.S);
    lp_store(k, lead, partials, add(k, mulc(k, lp_reg(k, line), C), lp_reg(k, chunk)), value);
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *fin = when_last(l, b, counters, lp_reg(k, line), ival(k, LP_U32, C));
    partial_gather pg = {.from = partials, .row0 = lp_reg(k, line), .stride = C, .width = 1, .ncols = 1, .it = it};
    slot_gather(l, fin, slots, Cp, &pg);
    slot_tree(l, fin, slots, Cp, Cp, 1);
    lp_block *t0 = &lp_if(k, fin, eq(k, tid, ival(k, LP_I32, 0)))->body;
    dsp_store_output(l, t0, out_index(k, &g, lp_reg(k, line)), lp_load(k, slots, ival(k, LP_I32, 0)));
    lp_store(k, t0, counters, lp_reg(k, line), ival(k, LP_U32, 0)); /* ready for the next launch */
    return true;
}

/* ---- grid_cols ------------------------------------------------------------------------- */

static bool lower_cols(dsp_lower *l, char *why, size_t wn) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    gplan g;
    if (!plan_view(q, &g, why, wn)) return false;
    int T = q->threads;
    const gdim *inner = &g.d[g.rank - 1];
    int64_t I = inner->n;
    /* vec neighbouring columns per thread when they are contiguous and aligned: 16-byte
     * loads, or narrower ones when that leaves the device too few threads (few columns) */
    int64_t KO = g.S / I, NBp = pow2_ceil(g.NB), want = (int64_t)(q->target->sms > 0 ? q->target->sms : DSP_DEFAULT_SMS) * 1024;
    int vec = 1;
    if (g.aligned && inner->in == 1) {
        int least = 4 / (int)tilec_dtype_size(q->st->src.buf->dtype); /* 4-byte loads at least, where the columns allow */
        if (least < 1) least = 1;
        for (vec = g.vec; vec > least; vec /= 2)
            if (I % vec == 0 && I / vec * KO * g.NB >= want) break;
        while (I % vec) vec /= 2;
    }
    int64_t V = I / vec;
    int64_t cw = V < LANES ? pow2_ceil(V) : LANES;
    if (cw > T) cw = pow2_floor(T);
    int64_t rw = pow2_floor(T / cw);
    if (rw > NBp) { /* more row lanes than blocks: more column lanes instead */
        rw = NBp;
        cw = pow2_floor(T / rw);
        if (cw > pow2_ceil(V)) cw = pow2_ceil(V);
    }
    /* K blocks per CTA; fewer column lanes when K blocks of every column would not fit
     * the slots */
    int64_t nb, K;
    for (;;) {
        nb = ceil_div(V, cw);
        K = blocks_per_cta(q, &g, KO * nb, rw, cw * vec, 2);
        int64_t kg = pow2_floor(SLOTS / (cw * vec)); /* the last CTAs fold kg partials at a time, in two levels */
        if (kg > FIN_GROUP) kg = FIN_GROUP;
        while (K < NBp && ceil_div(g.NB, K) > kg * kg) K <<= 1;
        if (K * cw * vec <= SLOTS) break;
        if (cw == 1) {
            snprintf(why, wn, "%lld blocks of a column do not fit the CTA's slots", (long long)g.NB);
            return false;
        }
        cw >>= 1;
        rw = pow2_floor(T / cw);
        if (rw > NBp) rw = NBp;
    }
    int64_t rounds = K / rw, C = ceil_div(g.NB, K), Cp = pow2_ceil(C), width = cw * vec;
    k->grid = KO * nb * C;
    lp_type it = index_type(q, &g), at = dsp_acc_type(q);
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    /* several CTAs a column block meet in two levels: groups of Kg CTAs, the last of each
     * folding its group's partials; then the last group folds the groups' values */
    int64_t Kg = pow2_floor(SLOTS / width) < FIN_GROUP ? pow2_floor(SLOTS / width) : FIN_GROUP;
    if (Kg > Cp) Kg = Cp;
    int64_t G2 = ceil_div(C, Kg);
    lp_buf *slots = lp_buf_scratch(k, "slots", at, (K > Kg ? K : Kg) * width);
    lp_expr *tid = lp_special_expr(k, LP_TID), *itid = lp_cast(k, it, tid);
    lp_expr *cta = lp_cast(k, it, lp_special_expr(k, LP_CTA));
    int cl = lp_reg_new(k, it, "cl"), rl = lp_reg_new(k, it, "rl"), cb = lp_reg_new(k, it, "cb"),
        chunk = lp_reg_new(k, it, "chunk"), ko = lp_reg_new(k, it, "ko");
    lp_block *b = l->into;
    lp_assign(k, b, cl, remc(k, itid, cw));
    lp_assign(k, b, rl, divc(k, itid, cw));
    lp_assign(k, b, chunk, C > 1 ? remc(k, cta, C) : ival(k, it, 0));
    lp_assign(k, b, cb, remc(k, divc(k, cta, C), nb));
    lp_assign(k, b, ko, divc(k, cta, C * nb));
    /* output s of column c: ko * I + c (the inner kept dim is the fastest of the output
     * only when its output stride is 1; in general through the kept offsets) */
    int col = lp_reg_new(k, it, "col");
    lp_assign(k, b, col, mulc(k, add(k, mulc(k, lp_reg(k, cb), cw), lp_reg(k, cl)), vec));
    int batch = (int)(128 / (vec * (int64_t)tilec_dtype_size(q->st->src.buf->dtype))); /* 128 bytes in flight */
    if (batch > 32) batch = 32; /* 16-bit element loads: 64 bytes */
    snprintf(k->plan, sizeof k->plan,
             "%lld blocks of %lld rows a column (the fold order); %lld column lanes x %lld row lanes, %d-byte loads, "
             "%d in flight; %lld blocks a CTA, %lld CTA%s a column block%s",
             (long long)g.NB, (long long)g.G, (long long)cw, (long long)rw,
             vec * (int)tilec_dtype_size(q->st->src.buf->dtype), batch, (long long)K, (long long)C, C == 1 ? "" : "s",
             C == 1 ? "" : G2 > 1 ? ", partials in two levels" : ", partials in one level");
    int accs = regs_new(k, at, "ca", vec), xs = regs_new(k, src->type, "cx", batch * vec);
    int r = lp_reg_new(k, it, "round"), blk = lp_reg_new(k, it, "b"), o = lp_reg_new(k, it, "o");
    /* column 0 of the outer kept index ko is the executors' output ko * I: its flat output
     * index and its source offset (column c adds c times the inner dim's strides) */
    int sbase = lp_reg_new(k, it, "sb"), ibase = lp_reg_new(k, it, "ib");
    lp_expr *x0 = mulc(k, lp_reg(k, ko), I);
    lp_assign(k, b, sbase, kept_sum(k, &g, x0, true));
    lp_assign(k, b, ibase, kept_sum(k, &g, x0, false));
    lp_expr *active = both(k, lt(k, lp_reg(k, col), ival(k, it, I)), lt(k, lp_reg(k, rl), ival(k, it, rw)));
    lp_block *each = &lp_for(k, b, r, ival(k, it, 0), ival(k, it, rounds), ival(k, it, 1))->body;
    lp_assign(k, each, blk, add(k, add(k, mulc(k, lp_reg(k, chunk), K), mulc(k, lp_reg(k, r), rw)), lp_reg(k, rl)));
    for (int e = 0; e < vec; e++) lp_assign(k, each, accs + e, dsp_identity(l));
    lp_block *work = &lp_if(k, each, both(k, active, lt(k, lp_reg(k, blk), ival(k, it, g.NB))))->body;
    /* block b: pieces b * G .. b * G + G - 1 (fewer in the last), in order */
    int hi = lp_reg_new(k, it, "hi");
    lp_assign(k, work, hi, lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, mulc(k, add(k, lp_reg(k, blk), ival(k, it, 1)), g.G),
                                     ival(k, it, g.M)));
    lp_block *turn = &lp_for(k, work, o, mulc(k, lp_reg(k, blk), g.G), lp_reg(k, hi), ival(k, it, batch))->body;
    lp_expr *cols_at = add(k, lp_reg(k, ibase), mulc(k, lp_reg(k, col), inner->in));
    lp_expr *okv[64];
    bool whole = g.G % batch == 0 && g.M % g.G == 0; /* every turn loads `batch` rows */
    for (int u = 0; u < batch; u++) { /* the loads first */
        lp_expr *ou = u ? add(k, lp_reg(k, o), ival(k, it, u)) : lp_reg(k, o);
        okv[u] = u && !whole ? lt(k, ou, lp_reg(k, hi)) : NULL;
        lp_block *in = okv[u] ? &lp_if(k, turn, okv[u])->body : turn;
        lp_expr *first = add(k, cols_at, outer_offset(k, &g, ou));
        if (vec > 1) lp_vload(k, in, xs + u * vec, vec, src, first);
        else lp_assign(k, in, xs + u * vec, lp_load(k, src, first));
    }
    for (int u = 0; u < batch; u++) {
        lp_block *in = okv[u] ? &lp_if(k, turn, okv[u])->body : turn;
        for (int e = 0; e < vec; e++)
            lp_assign(k, in, accs + e, dsp_combine(l, lp_reg(k, accs + e), lp_cast(k, at, lp_reg(k, xs + u * vec + e))));
    }
    /* leaf i = round * rw + rl of column cl * vec + e */
    lp_block *put = &lp_if(k, each, lt(k, lp_reg(k, rl), ival(k, it, rw)))->body;
    for (int e = 0; e < vec; e++) {
        lp_expr *leaf = add(k, mulc(k, add(k, mulc(k, lp_reg(k, r), rw), lp_reg(k, rl)), width),
                            add(k, mulc(k, lp_reg(k, cl), vec), ival(k, it, e)));
        lp_store(k, put, slots, lp_cast(k, LP_I32, leaf), lp_reg(k, accs + e));
    }
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    slot_tree(l, b, slots, K, K, width);
    /* local column c = tid, tid + T, … (a CTA may hold more columns than threads) */
    int lc = lp_reg_new(k, it, "lc");
    lp_block *cols_b = &lp_for(k, b, lc, itid, ival(k, it, width), ival(k, it, T))->body;
    lp_expr *gcol = add(k, mulc(k, lp_reg(k, cb), width), lp_reg(k, lc));
    lp_expr *sout = add(k, lp_reg(k, sbase), mulc(k, gcol, inner->out));
    lp_block *lead = &lp_if(k, cols_b, lt(k, gcol, ival(k, it, I)))->body;
    lp_expr *value = lp_load(k, slots, lp_cast(k, LP_I32, lp_reg(k, lc)));
    if (C == 1) {
        dsp_store_output(l, lead, sout, value);
        return true;
    }
    lp_buf *partials = lp_buf_scratch_global(k, "partials", at, g.S * C);
    lp_buf *counters = lp_buf_scratch_global(k, "counters", LP_U32, KO * nb * G2);
    lp_store(k, lead, partials, add(k, mulc(k, sout, C), lp_reg(k, chunk)), value);
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_expr *line = add(k, mulc(k, lp_reg(k, ko), nb), lp_reg(k, cb));
    int grp = lp_reg_new(k, it, "grp");
    lp_assign(k, b, grp, divc(k, lp_reg(k, chunk), Kg));
    /* the group's CTAs: Kg, fewer in the last group */
    lp_expr *members = lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, ival(k, it, Kg),
                                 lp_binary(k, LO_SUB, ival(k, it, C), mulc(k, lp_reg(k, grp), Kg)));
    lp_block *fin = when_last(l, b, counters, add(k, mulc(k, line, G2), lp_reg(k, grp)), members);
    /* leaf i of local column c at slot i * width + c: leaves first + i (< total) of each
     * column's row in buf (stride entries per output); then the tree; local column c's
     * value is at slot c for thread c, c + T, … in the block returned */
    lp_buf *level2 = G2 > 1 ? lp_buf_scratch_global(k, "groups", at, g.S * G2) : NULL;
    lp_buf *counters2 = G2 > 1 ? lp_buf_scratch_global(k, "counters2", LP_U32, KO * nb) : NULL;
    for (int lev = 0; lev < (G2 > 1 ? 2 : 1); lev++) {
        lp_buf *from = lev ? level2 : partials;
        int64_t stride = lev ? G2 : C, leaves = lev ? pow2_ceil(G2) : Kg;
        lp_expr *first = lev ? ival(k, it, 0) : mulc(k, lp_reg(k, grp), Kg);
        partial_gather pg = {from, first, lp_reg(k, sbase), mulc(k, lp_reg(k, cb), width), stride, width, I, inner->out, it};
        slot_gather(l, fin, slots, leaves * width, &pg);
        slot_tree(l, fin, slots, leaves, leaves, width);
        int lc2 = lp_reg_new(k, it, "lc");
        lp_block *fcols = &lp_for(k, fin, lc2, itid, ival(k, it, width), ival(k, it, T))->body;
        lp_expr *gcol2 = add(k, mulc(k, lp_reg(k, cb), width), lp_reg(k, lc2));
        lp_block *mine = &lp_if(k, fcols, lt(k, gcol2, ival(k, it, I)))->body;
        lp_expr *s2 = add(k, lp_reg(k, sbase), mulc(k, gcol2, inner->out));
        lp_expr *v2 = lp_load(k, slots, lp_cast(k, LP_I32, lp_reg(k, lc2)));
        lp_block *t0 = &lp_if(k, fin, eq(k, tid, ival(k, LP_I32, 0)))->body;
        if (lev == 0) /* ready for the next launch */
            lp_store(k, t0, counters, add(k, mulc(k, line, G2), lp_reg(k, grp)), ival(k, LP_U32, 0));
        else
            lp_store(k, t0, counters2, line, ival(k, LP_U32, 0));
        if (lev == 1 || G2 == 1) {
            dsp_store_output(l, mine, s2, v2);
            break;
        }
        lp_store(k, mine, level2, add(k, mulc(k, s2, G2), lp_reg(k, grp)), v2);
        lp_barrier(k, fin, TILEC_SCOPE_CTA);
        fin = when_last(l, fin, counters2, line, ival(k, LP_U32, G2));
    }
    return true;
}

const dsp_case dsp_case_grid_rows = {
    .variant = "grid_rows",
    .priority = 20,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"rows_layout", rows_layout}},
    .lower = lower_rows,
    .summary = "runs of contiguous reduced elements: lanes on a piece of a run, blocks of pieces, trees in a fixed order",
};

const dsp_case dsp_case_grid_cols = {
    .variant = "grid_cols",
    .priority = 20,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"cols_layout", cols_layout}},
    .lower = lower_cols,
    .summary = "neighbouring kept elements: a thread per column and block, eight rows in flight, trees in a fixed order",
};
