/*
 * v_grid_rows.c — grid_rows, the executor of row layouts (grid.h: the plan and the fold
 * order it computes): a group of lanes per piece, 16-byte loads when the runs start
 * aligned, all of a piece's loads in flight before it is folded.
 */
#include "grid.h"
#include "../ir/numeric.h"

#include <math.h>
#include <stdio.h>

/* ---- grid_rows ------------------------------------------------------------------------- */

static bool rows_layout(const dsp_query *q, char *why, size_t n) {
    gplan g;
    if (!grid_plan_view(q, &g, why, n)) return false;
    if (g.rows) return true;
    snprintf(why, n, "the innermost dim in memory is kept (a column layout)");
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

/*
 * Ranked pieces: argmax / argmin of 32-bit ranks (dsp_ranks) along a rising index fold a
 * logical lane's leaves on their ranks alone and make the lane's one key at the end, where
 * the others fold a key a leaf by the trees of the order.
 *
 * Why the bits are the same: a key is (the rank, the index's complement) as one i64, so
 * the greatest key of leaves in rising index order, which every tree of maxes gives (the
 * trees' dsp_combine_ordered too), is that of the first leaf of the highest rank. A running
 * best (rank, position) that moves only on a strictly greater rank keeps exactly that leaf:
 * a tie keeps the earlier one. A lane's leaves are taken in index order in two runs, the
 * whole aligned vectors' (the head, after every load) and the others' (the tail, element by
 * element as they are loaded), whose elements all come after the head's: the two bests
 * merge by the same strict compare. Missing leaves (the piece's end cuts a lane's elements
 * short, so they come after every present one) are never taken; a lane without a leaf 0
 * has no element and keeps the identity, as a tree of identities gives. A run's best starts
 * at (INT32_MIN, its first position), so a present leaf of the least rank (a NaN under
 * nan=ignore; INT32_MIN itself for i32 argmax) is still found, with its key above the
 * identity as in the tree.
 */

/* Into the running best (rank register r, position register p: the lane's element of the
 * piece): the best `rank` (a register) at `at` of leaves that all come after r's. */
static void rank_merge(lp_kernel *k, lp_block *in, int r, int p, lp_expr *rank, lp_expr *at) {
    /* the position first, from the best rank before these leaves */
    lp_assign(k, in, p, lp_select(k, lt(k, lp_reg(k, r), rank), at, lp_reg(k, p)));
    lp_assign(k, in, r, lp_binary(k, LO_MAX, lp_reg(k, r), rank));
}

/* The same for one leaf of rank `rank` at the constant `at` (tmp: a scratch register). */
static void rank_take(lp_kernel *k, lp_block *in, int r, int p, int tmp, lp_expr *rank, int64_t at) {
    lp_assign(k, in, tmp, rank);
    rank_merge(k, in, r, p, lp_reg(k, tmp), lp_int(k, LP_I32, at));
}

/* acc[u] = acc[u] ⊕ the value of piece o of output s_regs[u], for `items` outputs at once,
 * folded by the lanes of a group (lane: the thread's lane in it); with `fresh`, acc[u]
 * holds the identity, so it takes the value itself (the same bits: e ⊕ v is v). Each lane loads its
 * leaves — the identity where the piece has none or valid[u] is false — issuing every whole
 * vector's load before it folds any; then the trees of the order, each pair folded as soon
 * as its two subtrees are (grid_tree_leaf: the same pairs as grid_reg_tree's level by level,
 * so the same bits, with a few states live instead of one a leaf: a var's f64 pairs took 152
 * registers, 1 CTA of 256 an SM, and take 64). Every lane of the warp runs the butterfly. */
static void piece_values(dsp_lower *l, lp_block *b, const gplan *g, const gshape *gs, int items, lp_type it,
                         const int *s_regs, lp_expr *o, lp_expr *lane, const int *acc, lp_expr *const *valid, bool fresh) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    lp_buf *src = lp_buf_for(k, q->st->src.buf);
    lp_type at = dsp_acc_type(q);
    int vec = g->vec, nleaf = gs->ueff * vec, per = gs->f * nleaf, need = gs->glanes * gs->f;
    /* the vector loads' registers: only a plan aligned for them has any (an element's load
     * goes straight into its leaf), so no kernel declares registers it never uses */
    /* the piece's length: L, or less for the last piece of a run */
    bool ragged = g->n % g->W != 0 && g->P > 1;
    /* a load is whole for every lane when the piece is never short of it */
    bool whole[64];
    for (int bi = 0; bi < gs->ueff; bi++) whole[bi] = !ragged && ((int64_t)bi * LANES + need) * vec <= g->L;
    /* a ragged run's pieces but its last are whole: they take the code of a whole piece (its
     * head of unguarded loads, no per-vector length test), the last one the guarded code;
     * the same leaves, so the same bits */
    bool split = ragged && g->aligned;
    int head = 0; /* the vectors loaded whole for every lane, folded after every load */
    while (g->aligned && head < gs->ueff && whole[head]) head++;
    int xs = g->aligned ? grid_regs_new(k, src->type, "x", items * per) : -1;
    /* a ranked piece (above: argmax / argmin of 32-bit ranks along a rising index) has no
     * leaves: a logical lane's key in keys, the best of its tail in tr, tp, of its head in
     * hr, hp; the others' logical lane's value is its first leaf, nleaf apart */
    int64_t ri = run_index_stride(g);
    bool ranked = dsp_ranks(q) && ri > 0;
    /* a logsumexp's leaves are values (raw), not keys of two floats: the element, or -inf
     * where there is none, with its sum (1 or +0) known from its index at the fold
     * (dsp_lse_fold_values); the loaded vectors' elements are not copied at all */
    bool raw = !ranked && dsp_folds_many(q);
    lp_type vt = raw ? dsp_lse_value_type(q) : LP_F32;
    int leaf = -1, keys, kstep = 1, tr = -1, tp = -1, hr = -1, hp = -1, tmp = -1, lanes = items * gs->f;
    if (raw) {
        leaf = grid_regs_new(k, vt, "leaf", items * per);
        keys = grid_regs_new(k, at, "key", lanes);
    } else if (ranked) {
        keys = grid_regs_new(k, at, "key", lanes);
        tr = grid_regs_new(k, LP_I32, "tr", lanes);
        tp = grid_regs_new(k, LP_I32, "tp", lanes);
        if (head || split) { /* also for a ragged run's whole pieces */
            hr = lp_reg_new(k, LP_I32, "hr");
            hp = lp_reg_new(k, LP_I32, "hp");
        }
        tmp = lp_reg_new(k, LP_I32, "rank");
    } else {
        keys = leaf = grid_regs_new(k, at, "leaf", items * per);
        kstep = nleaf;
    }
    lp_expr *piece = g->P > 1 ? remc(k, o, g->P) : ival(k, it, 0);
    lp_expr *run = g->P > 1 ? divc(k, o, g->P) : o;
    lp_expr *len = ragged ? lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, ival(k, it, g->W),
                                      lp_binary(k, LO_SUB, ival(k, it, g->n), mulc(k, piece, g->W)))
                          : ival(k, it, g->L);
    /* element i of the piece: its index in the reduced space (argmax / argmin) */
    lp_expr *index0 = add(k, grid_outer_index(k, g, run), mulc(k, piece, g->W * ri));
#define INDEX(i) add(k, index0, mulc(k, (i), ri))
    lp_expr *shift[64] = {0}; /* var's: output u's element in memory order 0 */
    /* leaf e of vector bi, register lf + e, from element x of the piece's element i: its
     * value, or in a ranked piece its rank into the best of the lane's tail */
#define PUT(into, e, x, i)                                                                                             \
    do {                                                                                                               \
        if (raw)                                                                                                       \
            lp_assign(k, into, lf + (e), lp_cast(k, vt, x));                                                           \
        else if (ranked)                                                                                               \
            rank_take(k, into, tr + u * gs->f + j, tp + u * gs->f + j, tmp, dsp_element_rank(l, x), (int64_t)bi * LANES * vec + (e)); \
        else                                                                                                           \
            lp_assign(k, into, lf + (e), dsp_element(l, x, INDEX(i), shift[u]));                                       \
    } while (0)
    bool whole_all[64];
    for (int bi = 0; bi < gs->ueff; bi++) whole_all[bi] = ((int64_t)bi * LANES + need) * vec <= g->W;
    lp_block *pbs[2] = {b, NULL};
    if (split) {
        lp_stmt *sp = lp_if(k, b, lt(k, piece, ival(k, it, g->P - 1)));
        pbs[0] = &sp->body;
        pbs[1] = &sp->orelse;
    }
    for (int pass = 0; pass < (split ? 2 : 1); pass++) {
        lp_block *pb = pbs[pass];
        bool fast = split && pass == 0;
        const bool *wh = fast ? whole_all : whole;
        int hd = 0;
        while (g->aligned && hd < gs->ueff && wh[hd]) hd++;
        lp_expr *ln = fast ? ival(k, it, g->W) : len;
        for (int u = 0; u < items; u++) {
            for (int j = 0; j < (ranked || raw ? gs->f : per); j++) lp_assign(k, pb, keys + u * gs->f * kstep + j, dsp_identity(l));
            for (int j = 0; raw && j < per; j++) /* the leaves no whole vector's load fills: none yet */
                if (!(g->aligned && wh[j % nleaf / vec])) lp_assign(k, pb, leaf + u * per + j, lp_float(k, vt, -INFINITY));
            for (int j = 0; ranked && j < gs->f; j++) {
                lp_assign(k, pb, tr + u * gs->f + j, lp_int(k, LP_I32, INT32_MIN));
                lp_assign(k, pb, tp + u * gs->f + j, lp_int(k, LP_I32, (int64_t)hd * LANES * vec));
            }
            lp_block *in = valid[u] ? &lp_if(k, pb, valid[u])->body : pb;
            shift[u] = dsp_shift(l, in, grid_kept_offset(k, g, lp_reg(k, s_regs[u])));
            lp_expr *start = add(k, add(k, grid_kept_offset(k, g, lp_reg(k, s_regs[u])), grid_outer_offset(k, g, run)),
                                 mulc(k, piece, g->W * g->ns));
            for (int j = 0; j < gs->f; j++)
                for (int bi = 0; bi < gs->ueff; bi++) {
                    lp_expr *logical = gs->f > 1 ? add(k, mulc(k, lane, gs->f), ival(k, it, j)) : lane;
                    lp_expr *e0 = add(k, ival(k, it, (int64_t)bi * LANES * vec), mulc(k, logical, vec));
                    int at_ = (u * gs->f + j) * nleaf + bi * vec, x = xs + at_, lf = leaf + at_; /* lf: unranked only */
                    if (g->aligned && wh[bi]) {
                        lp_vload(k, in, x, vec, src, add(k, start, e0));
                        continue;
                    }
                    lp_block *part = in;
                    if (g->aligned) { /* a whole vector, or element by element at the end */
                        lp_stmt *sel = lp_if(k, in, lp_binary(k, LO_LE, add(k, e0, ival(k, it, vec)), ln));
                        part = &sel->orelse;
                        lp_vload(k, &sel->body, x, vec, src, add(k, start, e0));
                        for (int e = 0; e < vec; e++) PUT(&sel->body, e, lp_reg(k, x + e), add(k, e0, ival(k, it, e)));
                    }
                    for (int e = 0; e < vec; e++) {
                        lp_expr *i = e ? add(k, e0, ival(k, it, e)) : e0;
                        lp_block *has = &lp_if(k, part, lt(k, i, ln))->body;
                        PUT(has, e, lp_load(k, src, add(k, start, mulc(k, i, g->ns))), i);
                    }
                    /* the vector's own pairs of the tree, now that its leaves are made */
                    if (grid_tree_by_leaf(l) && !ranked)
                        for (int e = 0; e < vec; e++) grid_tree_leaf(l, in, lf - bi * vec, bi * vec + e, 1, ri > 0, 1, vec);
                }
        }
        for (int u = 0; u < items; u++) { /* the folds, after every load */
            lp_block *in = valid[u] ? &lp_if(k, pb, valid[u])->body : pb;
            for (int j = 0; j < gs->f; j++) {
                int lf = leaf + (u * gs->f + j) * nleaf;
                lp_expr *logical = gs->f > 1 ? add(k, mulc(k, lane, gs->f), ival(k, it, j)) : lane;
                if (ranked) { /* the head's best, merged with the tail's; the lane's key */
                    int c = u * gs->f + j, r = tr + c, p = tp + c, x = xs + c * nleaf;
                    if (hd) {
                        lp_assign(k, in, hr, lp_int(k, LP_I32, INT32_MIN));
                        lp_assign(k, in, hp, lp_int(k, LP_I32, 0));
                        for (int bi = 0; bi < hd; bi++)
                            for (int e = 0; e < vec; e++)
                                rank_take(k, in, hr, hp, tmp, dsp_element_rank(l, lp_reg(k, x + bi * vec + e)), (int64_t)bi * LANES * vec + e);
                        if (hd < gs->ueff) rank_merge(k, in, hr, hp, lp_reg(k, r), lp_reg(k, p));
                        r = hr, p = hp;
                    }
                    lp_expr *first = mulc(k, logical, vec); /* leaf 0's element */
                    lp_block *some = wh[0] ? in : &lp_if(k, in, lt(k, first, ln))->body;
                    lp_expr *i = add(k, lp_cast(k, it, lp_reg(k, p)), first);
                    lp_assign(k, some, keys + c, dsp_rank_key(l, lp_reg(k, r), INDEX(i)));
                    continue;
                }
                if (raw) { /* the values, and each one's sum: 1 where its element is in the piece */
                    lp_expr *ms[64], *ss[64];
                    for (int bi = 0; bi < gs->ueff; bi++)
                        for (int e = 0; e < vec; e++) {
                            int at_ = bi * vec + e;
                            lp_expr *i = add(k, ival(k, it, (int64_t)bi * LANES * vec + e), mulc(k, logical, vec));
                            bool loaded = g->aligned && wh[bi];
                            ms[at_] = loaded ? lp_cast(k, vt, lp_reg(k, xs + (lf - leaf) + at_)) : lp_reg(k, lf + at_);
                            ss[at_] = wh[bi] ? lp_float(k, vt, 1) : lp_select(k, lt(k, i, ln), lp_float(k, vt, 1), lp_float(k, vt, 0));
                        }
                    dsp_lse_fold_values(l, in, keys + u * gs->f + j, nleaf, ms, ss);
                    continue;
                }
                /* each leaf of a whole vector made from its loaded element, and the tree's
                 * pairs it completes folded then (the same tree as grid_reg_tree's: a few
                 * states live at a time, not nleaf of them) */
                bool by_leaf = grid_tree_by_leaf(l);
                for (int bi = 0; bi < gs->ueff; bi++)
                    for (int e = 0; e < vec; e++) {
                        if (g->aligned && wh[bi]) {
                            lp_expr *i = add(k, ival(k, it, (int64_t)bi * LANES * vec + e), mulc(k, logical, vec));
                            lp_assign(k, in, lf + bi * vec + e, dsp_element(l, lp_reg(k, xs + (lf - leaf) + bi * vec + e), INDEX(i), shift[u]));
                        }
                        if (by_leaf) grid_tree_leaf(l, in, lf, bi * vec + e, 1, ri > 0, g->aligned && wh[bi] ? 1 : vec, 1 << 30);
                    }
                /* a logical lane's leaves: in index order when the run's index rises with its
                 * elements (not a reversed dim), the loaded ones first */
                if (by_leaf) grid_tree_rest(l, in, lf, nleaf, 1, ri > 0);
                else grid_reg_tree(l, in, lf, nleaf, 1, ri > 0);
            }
            grid_reg_tree(l, in, keys + u * gs->f * kstep, gs->f, kstep, false); /* its logical lanes */
        }
    }
#undef PUT
#undef INDEX
    for (int u = 0; u < items; u++) { /* the butterfly: every lane of the warp runs it */
        int v = keys + u * gs->f * kstep;
        dsp_xor_tree(l, b, v, gs->glanes);
        lp_assign(k, b, acc[u], fresh ? lp_reg(k, v) : dsp_combine(l, b, lp_reg(k, acc[u]), lp_reg(k, v)));
    }
}

/* Whether a CTA whose groups of `glanes` lanes fold `n` outputs gathers them in shared
 * memory and finishes them a thread each: for an op whose finish is long, which a warp
 * would otherwise run once for every output of a group (32 / glanes outputs at a time). The
 * bits are the same; only the threads that compute the finish change. */
static bool gather_outputs(const dsp_query *q, int glanes, int64_t n) {
    return ir_op(q->st->op)->long_finish && glanes > 1 && n <= q->threads;
}

static bool lower_rows(dsp_lower *l, char *why, size_t wn) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    gplan g;
    gshape gs;
    if (!grid_plan_view(q, &g, why, wn) || !group_shape(q, &g, &gs, why, wn)) return false;
    int T = q->threads, glanes = gs.glanes;
    int64_t GP = pow2_floor(T / glanes); /* groups of the CTA (a power of two; the rest idle) */
    lp_type it = grid_index_type(q, &g), at = dsp_acc_type(q);
    lp_expr *tid = lp_special_expr(k, LP_TID);
    int lane = lp_reg_new(k, it, "lane"), grp = lp_reg_new(k, it, "grp");
    lp_block *b = l->into;
    lp_assign(k, b, lane, glanes > 1 ? remc(k, lp_cast(k, it, tid), glanes) : ival(k, it, 0));
    lp_assign(k, b, grp, divc(k, lp_cast(k, it, tid), glanes));
    lp_expr *cta = lp_cast(k, it, lp_special_expr(k, LP_CTA));
    lp_expr *used = lt(k, lp_reg(k, grp), ival(k, it, GP));
    /* a 16-bit input's ragged runs whose state is one 4-byte register (dsp_small_state):
     * eight CTAs an SM on CUDA, 32 registers a thread, as before the whole pieces took code
     * of their own (piece_values), which took sum of bf16 over (0, 2, 3) of 64 x 256 x 56 x 56
     * from 32 registers to 40 and 3.07 to 2.68 TB/s on the H200; ptxas for sm_90 spills none
     * of these kernels at 32 */
    if (q->target->backend == TILEC_BACKEND_CUDA && T == 256 && tilec_dtype_size(q->st->src.buf->dtype) == 2 &&
        dsp_small_state(q) && g.aligned && g.P > 1 && g.n % g.W != 0)
        k->min_ctas = 8;

    if (g.NB == 1) { /* a group per output, all of it; rows of one short piece several at a time */
        int items = g.M == 1 && gs.ueff == 1 && gs.f == 1 ? in_flight(q->st->src.buf->dtype) : 1;
        /* an f64 accumulator for narrower data (a norm of f32, a widened sum) doubles the
         * leaves' registers and makes each fold an f64 shuffle: on the H200 a norm of
         * 1048576 x 32 f32 ran at 77% of the sum's bytes/s with 8 outputs in flight, 84%
         * with 4, 100% with 2, 89% with 1 (scripts/bench ops). An op whose finish is long
         * gathers its outputs (gather_outputs) and gains from twice as many: logsumexp of
         * those rows ran at 75% with 2 and 84% with 4, std at 87% and 92% (H200). */
        if (items > 1 && num_size(at) > 4 && tilec_dtype_size(q->st->src.buf->dtype) < 8)
            items = ir_op(q->st->op)->long_finish ? items / 2 : items / 4 ? items / 4 : 1;
        k->grid = ceil_div(g.S, GP * items);
        snprintf(k->plan, sizeof k->plan,
                 "%lld piece%s of up to %lld elements an output, one block (the fold order); a group of %d lanes an output, "
                 "%d output%s in flight, %s loads%s",
                 (long long)g.M, g.M == 1 ? "" : "s", (long long)g.L, glanes, items, items == 1 ? "" : "s",
                 g.aligned ? "16-byte" : "element",
                 gather_outputs(q, glanes, GP * items) ? "; the CTA's outputs gathered and finished a thread each" : "");
        int s = grid_regs_new(k, it, "s", items), acc = grid_regs_new(k, at, "acc", items);
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
            piece_values(l, b, &g, &gs, items, it, sr, ival(k, it, 0), lp_reg(k, lane), ar, ok, true);
        } else { /* fewer pieces than a block takes: one after another */
            int o = lp_reg_new(k, it, "o");
            lp_block *each = &lp_for(k, b, o, ival(k, it, 0), ival(k, it, g.M), ival(k, it, 1))->body;
            piece_values(l, each, &g, &gs, 1, it, sr, lp_reg(k, o), lp_reg(k, lane), ar, ok, false);
        }
        if (gather_outputs(q, glanes, GP * items)) { /* the CTA's outputs s0, s0 + 1, …: a thread each */
            lp_buf *outs = lp_buf_scratch(k, "outs", at, GP * items);
            for (int u = 0; u < items; u++)
                lp_store(k, &lp_if(k, b, both(k, used, eq(k, lp_reg(k, lane), ival(k, it, 0))))->body, outs,
                         lp_cast(k, LP_I32, add(k, lp_reg(k, grp), ival(k, it, u * GP))), lp_reg(k, acc + u));
            lp_barrier(k, b, TILEC_SCOPE_CTA);
            lp_expr *itid = lp_cast(k, it, tid), *so = add(k, mulc(k, cta, GP * items), itid);
            lp_block *one = &lp_if(k, b, both(k, lt(k, itid, ival(k, it, GP * items)), lt(k, so, ival(k, it, g.S))))->body;
            dsp_store_output(l, one, grid_out_index(k, &g, so), lp_load(k, outs, tid));
            return true;
        }
        for (int u = 0; u < items; u++)
            dsp_store_output(l, &lp_if(k, b, both(k, ok[u], eq(k, lp_reg(k, lane), ival(k, it, 0))))->body,
                             grid_out_index(k, &g, lp_reg(k, s + u)), lp_reg(k, acc + u));
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
        K = grid_blocks_per_cta(q, &g, g.S, GP, 1, tilec_dtype_size(q->st->src.buf->dtype) == 2 ? 8 : 16);
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
    piece_values(l, turns, &g, &gs, 1, it, sr, lp_reg(k, o), lp_reg(k, lane), ar, vs, false);
    lp_store(k, &lp_if(k, each, both(k, used, eq(k, lp_reg(k, lane), ival(k, it, 0))))->body, slots, lp_cast(k, LP_I32, lp_reg(k, i)),
             lp_reg(k, acc));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    grid_slot_tree(l, b, slots, GP * rounds, K, 1);
    lp_expr *itid = lp_cast(k, it, tid);
    lp_expr *sout = add(k, mulc(k, lp_reg(k, line), OPC), itid);
    lp_block *lead = &lp_if(k, b, both(k, lt(k, itid, ival(k, it, OPC)), lt(k, sout, ival(k, it, g.S))))->body;
    lp_expr *value = lp_load(k, slots, mulc(k, tid, K));
    if (C == 1) {
        dsp_store_output(l, lead, grid_out_index(k, &g, sout), value);
        return true;
    }
    lp_buf *partials = lp_buf_scratch_global(k, "partials", at, g.S * C);
    lp_buf *counters = lp_buf_scratch_global(k, "counters", LP_U32, g.S);
    lp_store(k, lead, partials, add(k, mulc(k, lp_reg(k, line), C), lp_reg(k, chunk)), value);
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    lp_block *fin = grid_when_last(l, b, counters, lp_reg(k, line), ival(k, LP_U32, C));
    partial_gather pg = {.from = partials, .row0 = lp_reg(k, line), .stride = C, .width = 1, .ncols = 1, .it = it};
    grid_slot_gather(l, fin, slots, Cp, &pg);
    grid_slot_tree(l, fin, slots, Cp, Cp, 1);
    lp_block *t0 = &lp_if(k, fin, eq(k, tid, ival(k, LP_I32, 0)))->body;
    dsp_store_output(l, t0, grid_out_index(k, &g, lp_reg(k, line)), lp_load(k, slots, ival(k, LP_I32, 0)));
    lp_store(k, t0, counters, lp_reg(k, line), ival(k, LP_U32, 0)); /* ready for the next launch */
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
