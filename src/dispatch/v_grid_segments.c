/*
 * v_grid_segments.c — segmented reductions: for each row of the input and each segment
 * [O[s], O[s + 1]) of it (offsets on the device, as CSR's or CUB's d_offsets), the fold of
 * the segment's elements in the order of a dense row of the same length (grid.h, "The fold
 * order"), so a segment's result has the bits of tilec_reduce of that row.
 *
 * The order of a row of n elements depends on n only: P = ceil(n / W) pieces, each folded
 * by 32 lanes (a lane's leaves by a perfect tree, then the butterfly); G = ceil(P / 4096)
 * pieces a block, block b = e ⊕ v(b) ⊕ v(b + NB) ⊕ …; then the perfect binary tree of the
 * NB = ceil(P / G) block values. A missing leaf of any tree is the identity e, which
 * changes no bit, so the kernel may take n from the device: each piece is folded with
 * its length known at run time (the leaves past it are e), and the tree of the blocks is
 * built as they come, by a binary counter (a stack of one subtree a level: pushing block j
 * folds the full subtrees its low set bits close), whose remaining subtrees, folded from
 * the lowest level up, are the tree cut short.
 *
 * Workers: a group of 32 lanes folds an aligned run of `chunk` (a power of two) block
 * values, a complete subtree of the tree; the workers of an output (1; or every group of
 * a CTA, and then `ctas` CTAs) hold chunk * workers >= NB leaves, and their values are
 * folded by the tree over the workers — in shared slots within a CTA, then the CTAs'
 * partials by the last CTA of the output (a completion counter), as grid_rows does.
 * The runtime picks the workers from the mean segment length (docs/runtime.md).
 *
 * Offsets are checked where they are read: a segment with O[s] < 0, O[s + 1] < O[s] or
 * O[s + 1] > extent reads nothing, is not written, and is counted in the status words Z
 * (dispatch.h, DSP_SEG_*), with the first one counted; so is an empty segment of an op
 * that has no value for one (max, min, argmax, argmin, aminmax). Each count is 64 bits (a
 * low word and its carry), so no number of them between two synchronisations reads as
 * none.
 */
#include "grid.h"

#include <stdio.h>
#include <string.h>

enum { LEVELS = 13 }; /* a worker folds at most 4096 = 2^12 block values: a counter of 13 levels */

typedef struct seg_ctx {
    dsp_lower *l;
    const dsp_segmented *sg;
    lp_buf *A, *O, *Z;
    int vec, U;
    int64_t W;
    int lane, n, base, shift_reg; /* registers (shift_reg: -1 unless var / std) */
    int64_t total;                /* elements of the input */
    bool aligned;                 /* A's first element is 16-byte aligned */
    lp_type it;                   /* the type of the arithmetic of positions: i32 where they fit */
} seg_ctx;

static lp_expr *i64c(lp_kernel *k, int64_t v) { return lp_int(k, LP_I64, v); }
static lp_expr *r_(lp_kernel *k, int reg) { return lp_reg(k, reg); }
static lp_expr *sub(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_SUB, a, b); }
static lp_expr *imin(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, a, b); }
static lp_expr *imax(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_minmax(k, LO_MAX, TILEC_NAN_PROPAGATE, a, b); }
static lp_expr *either(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_OR, a, b); }

/* acc = acc ⊕ v(o), the value of piece o of the segment, folded by the 32 lanes of the
 * group: each lane loads its leaves (element i of the piece: leaf (i / (32 vec)) vec +
 * i % vec of lane (i / vec) % 32; the identity past the piece's end), all of them before it
 * folds any, then the lane's tree and the butterfly. Every lane of the group runs it (of
 * the warp, where a warp holds several groups); where `valid` is false, the piece has no
 * element and its value is the identity, which changes no bit of acc. */
static void piece(seg_ctx *c, lp_block *b, lp_expr *o, int acc, lp_expr *valid) {
    dsp_lower *l = c->l;
    lp_kernel *k = l->k;
    int vec = c->vec, nleaf = c->U * vec;
    lp_type at = dsp_acc_type(l->q);
    int xs = grid_regs_new(k, c->A->type, "x", nleaf), leaf = grid_regs_new(k, at, "leaf", nleaf);
    int len = lp_reg_new(k, c->it, "len"), start = lp_reg_new(k, c->it, "start");
    lp_expr *o0 = mulc(k, o, c->W);
    lp_expr *whole = imin(k, ival(k, c->it, c->W), sub(k, r_(k, c->n), o0));
    lp_assign(k, b, len, valid ? lp_select(k, valid, whole, ival(k, c->it, 0)) : whole); /* none: every leaf the identity */
    lp_assign(k, b, start, add(k, r_(k, c->base), o0));
    lp_expr *lanev = mulc(k, r_(k, c->lane), vec);
    /* whole vectors where the segment's piece starts on one; where it does not (4- and
     * 8-byte types), the two aligned vectors a lane's elements straddle, the elements
     * picked from them by the piece's misalignment r (the same for all its lanes) */
    int vok = -1, mis = -1, vs = -1;
    bool straddle = c->aligned && vec > 1 && tilec_dtype_size(c->A->tile->dtype) >= 4;
    if (c->aligned && vec > 1) {
        vok = lp_reg_new(k, LP_BOOL, "vok");
        lp_assign(k, b, vok, eq(k, remc(k, r_(k, start), vec), ival(k, c->it, 0)));
    }
    if (straddle) {
        mis = lp_reg_new(k, c->it, "mis");
        lp_assign(k, b, mis, remc(k, r_(k, start), vec));
        vs = grid_regs_new(k, c->A->type, "v", 2 * vec * c->U);
    }
    for (int bi = 0; bi < c->U; bi++) {
        lp_expr *e0 = add(k, ival(k, c->it, (int64_t)bi * LANES * vec), lanev);
        lp_block *blk = &lp_if(k, b, lt(k, ival(k, c->it, (int64_t)bi * LANES * vec), r_(k, len)))->body; /* the group's */
        lp_block *part = blk;
        if (vok >= 0) {
            lp_stmt *sel = lp_if(k, blk, both(k, r_(k, vok), lp_binary(k, LO_LE, add(k, e0, ival(k, c->it, vec)), r_(k, len))));
            lp_vload(k, &sel->body, xs + bi * vec, vec, c->A, add(k, r_(k, start), e0));
            part = &sel->orelse;
        }
        if (straddle) { /* both vectors inside the input (a neighbour's elements are read, not used) */
            lp_expr *a0 = sub(k, add(k, r_(k, start), e0), r_(k, mis));
            lp_stmt *two = lp_if(k, part, both(k, lp_unary(k, LO_NOT, r_(k, vok)),
                                               lp_binary(k, LO_LE, add(k, a0, ival(k, c->it, 2 * vec)), ival(k, c->it, c->total))));
            int v0 = vs + bi * 2 * vec;
            lp_vload(k, &two->body, v0, vec, c->A, a0);
            lp_vload(k, &two->body, v0 + vec, vec, c->A, add(k, a0, ival(k, c->it, vec)));
            for (int e = 0; e < vec; e++) { /* x[e] = v[mis + e] */
                lp_expr *pick = r_(k, v0 + vec - 1 + e);
                for (int m = vec - 2; m >= 0; m--) pick = lp_select(k, eq(k, r_(k, mis), ival(k, c->it, m)), r_(k, v0 + m + e), pick);
                lp_assign(k, &two->body, xs + bi * vec + e, pick);
            }
            part = &two->orelse;
        }
        for (int e = 0; e < vec; e++) {
            lp_expr *i = e ? add(k, e0, ival(k, c->it, e)) : e0;
            lp_assign(k, &lp_if(k, part, lt(k, i, r_(k, len)))->body, xs + bi * vec + e, lp_load(k, c->A, add(k, r_(k, start), i)));
        }
    }
    lp_expr *shift = c->shift_reg >= 0 ? r_(k, c->shift_reg) : NULL;
    /* each leaf folded into the lane's tree as soon as it completes a subtree (the same
     * pairs as grid_reg_tree's, so the same bits, with a few nodes live instead of every
     * leaf: argmax's keys and var's pairs would hold over a hundred registers) */
    bool by_leaf = grid_tree_by_leaf(l);
    for (int bi = 0; bi < c->U; bi++)
        for (int e = 0; e < vec; e++) {
            lp_expr *i = add(k, ival(k, c->it, (int64_t)bi * LANES * vec + e), lanev);
            int lf = leaf + bi * vec + e;
            lp_assign(k, b, lf, dsp_identity(l));
            lp_assign(k, &lp_if(k, b, lt(k, i, r_(k, len)))->body, lf,
                      dsp_element(l, r_(k, xs + bi * vec + e), add(k, o0, i), shift));
            if (by_leaf) grid_tree_leaf(l, b, leaf, bi * vec + e, 1, true, 1, 1 << 30);
        }
    /* a lane's leaves: in index order, the present ones first */
    if (by_leaf) grid_tree_rest(l, b, leaf, nleaf, 1, true);
    else grid_reg_tree(l, b, leaf, nleaf, 1, true);
    dsp_xor_tree(l, b, leaf, LANES);
    lp_assign(k, b, acc, dsp_combine(l, b, r_(k, acc), r_(k, leaf)));
}

/* The perfect binary tree over registers first .. first + n - 1 (n a power of two), pair
 * by pair, into first. */
static void reg_tree(dsp_lower *l, lp_block *b, int first, int n) {
    lp_kernel *k = l->k;
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i + h < n; i += 2 * h)
            lp_assign(k, b, first + i, dsp_combine(l, b, r_(k, first + i), r_(k, first + i + h)));
}

int64_t dsp_segment_piece(tilec_dtype dt) { return (int64_t)LANES * (16 / tilec_dtype_size(dt)) * in_flight(dt); }

/* Stores 64-bit v into the status words at w, w + 1 (low first). */
/* A count's high word: the one add that takes the low word from 2^32 - 1 round to 0 (old is
 * what it found) adds 1 to word `carry`, so the count is 64 bits and never wraps to "no
 * error" between two synchronisations. */
static void count_carry(lp_kernel *k, lp_block *b, lp_buf *Z, int old, int carry) {
    int dummy = lp_reg_new(k, LP_U32, "carried");
    lp_block *wrap = &lp_if(k, b, eq(k, lp_reg(k, old), ival(k, LP_U32, UINT32_MAX)))->body;
    lp_atomic_add(k, wrap, dummy, Z, ival(k, LP_I32, carry), ival(k, LP_U32, 1));
}

/* The block run by the one reporter that writes the record: of those whose add found the
 * count's low word 0 (the first, and one after each wrap of it), the one whose add finds
 * word `seen` 0. The low word alone is 0 again after 2^32 adds, and the carry, added by
 * another thread, may not be there yet; `seen` is added to at most once for 2^32 counts,
 * so it never wraps, and the first record stays the first. */
static lp_block *first_record(lp_kernel *k, lp_block *b, lp_buf *Z, int old, int seen) {
    int got = lp_reg_new(k, LP_U32, "seen");
    lp_block *zero = &lp_if(k, b, eq(k, lp_reg(k, old), ival(k, LP_U32, 0)))->body;
    lp_atomic_add(k, zero, got, Z, ival(k, LP_I32, seen), ival(k, LP_U32, 1));
    return &lp_if(k, zero, eq(k, lp_reg(k, got), ival(k, LP_U32, 0)))->body;
}

static void store_wide_word(lp_kernel *k, lp_block *b, lp_buf *Z, int w, lp_expr *v) {
    lp_store(k, b, Z, ival(k, LP_I32, w), lp_cast(k, LP_U32, v));
    lp_store(k, b, Z, ival(k, LP_I32, w + 1), lp_cast(k, LP_U32, lp_binary(k, LO_SHR, v, i64c(k, 32))));
}

lp_kernel *dsp_lower_segmented(tilec_program *p, const tilec_kernel *tk, const dsp_target *t, const dsp_segmented *sg,
                               tilec_status *why) {
    *why = TILEC_ERR_NOMEM;
    lp_kernel *k = lp_kernel_new(p, tk, t->warp_size);
    ir_stmt *st = ir_arena_alloc(&p->arena, sizeof *st);
    if (!k || !st) return NULL;
    k->variants = ir_arena_alloc(&p->arena, sizeof *k->variants);
    if (!k->variants) return NULL;
    k->variants[0] = "grid_segments";
    bool two = ir_op(sg->op)->second != NULL;
    if (tk->nparams != (two ? 5 : 4)) {
        *why = TILEC_ERR_INTERNAL;
        return NULL;
    }
    /* the statement the op's helpers read: grid.OP(B, A, axes=(1)), B of the segments */
    st->kind = IR_REDUCE;
    st->op = sg->op;
    st->nan = sg->nan;
    st->accum = sg->accum;
    st->correction = sg->correction;
    st->exec = (tilec_exec){TILEC_SCOPE_GRID, -1};
    st->naxes = 1;
    st->axes[0] = 1;
    st->src.buf = tk->params[0];
    st->dst.buf = tk->params[1];
    if (two) st->dst2.buf = tk->params[2];
    int T = tk->threads, GP = T / LANES;
    dsp_query q = {.target = t, .kernel = tk, .st = st, .opkind = DSP_GRID_REDUCE, .threads = T, .ws = t->warp_size,
                   .inst_size = T, .inst_count = 1, .inst_last = T, .src_rank = 2, .src_dims = {sg->rows, sg->extent},
                   .reduced = {false, true}, .red_len = sg->extent, .spatial_len = sg->rows, .group = LANES};
    dsp_lower l = {k, &k->body, &q, 0, NULL, NULL, NULL};
    tilec_dtype dt = tk->params[0]->dtype;
    seg_ctx c = {.l = &l, .sg = sg, .A = lp_buf_for(k, tk->params[0]), .O = lp_buf_for(k, tk->params[two ? 3 : 2]),
                 .Z = lp_buf_for(k, tk->params[two ? 4 : 3]), .vec = (int)(16 / tilec_dtype_size(dt)),
                 .U = in_flight(dt), .shift_reg = -1, .aligned = !t->unaligned};
    c.W = dsp_segment_piece(dt);
    c.total = sg->rows * sg->extent;
    /* positions (in the input, in a segment, of pieces and blocks) reach the input's size
     * and a few pieces past it: 32-bit arithmetic where they fit, as the dense rows' */
    c.it = sg->index64 ? LP_I64 : dsp_index_type(c.total + 4 * c.W, (int64_t)1 << 22);
    lp_type at = dsp_acc_type(&q);
    const ir_op_info *op = ir_op(sg->op);
    /* a state of one 4-byte register (dsp_small_state): three CTAs an SM on CUDA, so at
     * most 80 registers a thread, where ptxas takes about 96 and fits two (H200,
     * scripts/bench segmented: 10^6 segments of 0-64 elements 153 -> 203 GB/s, 4096 of
     * 1k-100k 1.57 -> 1.80 TB/s); the states of pairs, keys and f64 would spill */
    k->min_ctas = t->backend == TILEC_BACKEND_CUDA && dsp_small_state(&q) && T == 256 ? 3 : 0;
    int workers = sg->workers, C = sg->ctas, nw = workers * C;
    int64_t outs = sg->rows * sg->nsegs;
    lp_block *b = &k->body;
    lp_expr *tid = lp_cast(k, LP_I64, lp_special_expr(k, LP_TID)), *cta = lp_cast(k, LP_I64, lp_special_expr(k, LP_CTA));
    c.lane = lp_reg_new(k, c.it, "lane");
    int grp = lp_reg_new(k, c.it, "grp"), item = lp_reg_new(k, LP_I64, "item"), wk = lp_reg_new(k, c.it, "wk");
    int chunkc = lp_reg_new(k, c.it, "chunkc");
    lp_expr *tidt = lp_cast(k, c.it, lp_special_expr(k, LP_TID)), *ctat = lp_cast(k, c.it, lp_special_expr(k, LP_CTA));
    lp_assign(k, b, c.lane, remc(k, tidt, LANES));
    lp_assign(k, b, grp, divc(k, tidt, LANES));
    if (workers == 1) {
        k->grid = ceil_div(outs, GP);
        lp_assign(k, b, item, add(k, mulc(k, cta, GP), r_(k, grp)));
        lp_assign(k, b, chunkc, ival(k, c.it, 0));
        lp_assign(k, b, wk, ival(k, c.it, 0));
    } else {
        k->grid = outs * C;
        lp_assign(k, b, item, divc(k, cta, C));
        lp_assign(k, b, chunkc, C > 1 ? remc(k, ctat, C) : ival(k, c.it, 0));
        lp_assign(k, b, wk, add(k, mulc(k, r_(k, chunkc), GP), r_(k, grp)));
    }
    snprintf(k->plan, sizeof k->plan,
             "segments of the fold order of a row of their length (pieces of %lld elements); %s; %s loads where a "
             "segment's piece starts on 16 bytes%s",
             (long long)c.W,
             workers == 1 ? "a group of 32 lanes a segment" : C == 1 ? "a CTA a segment, its groups on aligned runs of blocks"
                                                                      : "CTAs a segment, their groups on aligned runs of blocks",
             c.aligned && c.vec > 1 ? "16-byte" : "element",
             c.aligned && c.vec > 1 && tilec_dtype_size(dt) >= 4 ? ", two straddling 16-byte loads where not" : "");
    if (workers > 1 && C > 1) {
        size_t at_ = strlen(k->plan);
        snprintf(k->plan + at_, sizeof k->plan - at_, "; %d CTAs a segment (partials, the last CTA folds them)", C);
    }
    /* the output, its row and segment, and the segment's offsets (an output past the end
     * reads segment 0's, in bounds, and folds nothing) */
    int valid = lp_reg_new(k, LP_BOOL, "valid"), s = lp_reg_new(k, LP_I64, "s"), row = lp_reg_new(k, LP_I64, "row");
    int lo = lp_reg_new(k, LP_I64, "lo"), hi = lp_reg_new(k, LP_I64, "hi"), bad = lp_reg_new(k, LP_BOOL, "bad");
    c.n = lp_reg_new(k, c.it, "n");
    c.base = lp_reg_new(k, c.it, "base");
    lp_assign(k, b, valid, lt(k, r_(k, item), i64c(k, outs)));
    lp_assign(k, b, s, lp_select(k, r_(k, valid), remc(k, r_(k, item), sg->nsegs), i64c(k, 0)));
    lp_assign(k, b, row, lp_select(k, r_(k, valid), divc(k, r_(k, item), sg->nsegs), i64c(k, 0)));
    lp_assign(k, b, lo, lp_cast(k, LP_I64, lp_load(k, c.O, r_(k, s))));
    lp_assign(k, b, hi, lp_cast(k, LP_I64, lp_load(k, c.O, add(k, r_(k, s), i64c(k, 1)))));
    lp_assign(k, b, bad, both(k, r_(k, valid), either(k, either(k, lt(k, r_(k, lo), i64c(k, 0)), lt(k, r_(k, hi), r_(k, lo))),
                                                       lt(k, i64c(k, sg->extent), r_(k, hi)))));
    lp_assign(k, b, c.n, lp_select(k, both(k, r_(k, valid), lp_unary(k, LO_NOT, r_(k, bad))), lp_cast(k, c.it, sub(k, r_(k, hi), r_(k, lo))), ival(k, c.it, 0)));
    lp_assign(k, b, c.base, lp_cast(k, c.it, add(k, mulc(k, r_(k, row), sg->extent), r_(k, lo))));
    lp_expr *reporter = both(k, eq(k, r_(k, wk), ival(k, c.it, 0)), eq(k, r_(k, c.lane), ival(k, c.it, 0)));
    { /* the status: counted once a segment, by its first worker's lane 0 */
        int old = lp_reg_new(k, LP_U32, "old");
        lp_block *rep = &lp_if(k, b, both(k, r_(k, bad), reporter))->body;
        lp_atomic_add(k, rep, old, c.Z, ival(k, LP_I32, DSP_SEG_BAD), ival(k, LP_U32, 1));
        count_carry(k, rep, c.Z, old, DSP_SEG_BAD_CARRY);
        lp_block *first = first_record(k, rep, c.Z, old, DSP_SEG_BAD_SEEN);
        store_wide_word(k, first, c.Z, DSP_SEG_BAD_AT, r_(k, s));
        store_wide_word(k, first, c.Z, DSP_SEG_BAD_LO, r_(k, lo));
        store_wide_word(k, first, c.Z, DSP_SEG_BAD_HI, r_(k, hi));
        store_wide_word(k, first, c.Z, DSP_SEG_EXTENT, i64c(k, sg->extent));
        if (op->empty == IR_EMPTY_ERROR) {
            int old2 = lp_reg_new(k, LP_U32, "old");
            lp_expr *empty = both(k, both(k, r_(k, valid), lp_unary(k, LO_NOT, r_(k, bad))), eq(k, r_(k, c.n), ival(k, c.it, 0)));
            lp_block *rep2 = &lp_if(k, b, both(k, empty, reporter))->body;
            lp_atomic_add(k, rep2, old2, c.Z, ival(k, LP_I32, DSP_SEG_EMPTY), ival(k, LP_U32, 1));
            count_carry(k, rep2, c.Z, old2, DSP_SEG_EMPTY_CARRY);
            lp_block *first2 = first_record(k, rep2, c.Z, old2, DSP_SEG_EMPTY_SEEN);
            store_wide_word(k, first2, c.Z, DSP_SEG_EMPTY_AT, r_(k, s));
            lp_store(k, first2, c.Z, ival(k, LP_I32, DSP_SEG_OP), ival(k, LP_U32, sg->op));
        }
    }
    if (op->lift == IR_LIFT_SHIFT) { /* var's x0: the segment's first element, every worker's */
        lp_block *has = &lp_if(k, b, lt(k, ival(k, c.it, 0), r_(k, c.n)))->body;
        lp_expr *x0 = dsp_shift(&l, has, r_(k, c.base));
        c.shift_reg = x0->reg;
    }
    /* the order's counts, and this worker's run of blocks */
    int P = lp_reg_new(k, c.it, "P"), G = lp_reg_new(k, c.it, "G"), NB = lp_reg_new(k, c.it, "NB");
    int first = lp_reg_new(k, c.it, "first"), cnt = lp_reg_new(k, c.it, "cnt");
    lp_assign(k, b, P, divc(k, add(k, r_(k, c.n), ival(k, c.it, c.W - 1)), c.W));
    lp_assign(k, b, G, imax(k, divc(k, add(k, r_(k, P), ival(k, c.it, NB_ROWS - 1)), NB_ROWS), ival(k, c.it, 1)));
    lp_assign(k, b, NB, lp_binary(k, LO_DIV, add(k, r_(k, P), sub(k, r_(k, G), ival(k, c.it, 1))), r_(k, G)));
    if (nw == 1) {
        lp_assign(k, b, first, ival(k, c.it, 0));
        lp_assign(k, b, cnt, r_(k, NB));
    } else { /* chunk: the least power of two with chunk * nw >= NB */
        int chunk = lp_reg_new(k, c.it, "chunk");
        lp_expr *per = add(k, r_(k, NB), ival(k, c.it, nw - 1));
        lp_assign(k, b, chunk, ival(k, c.it, 1));
        for (int j = 0; j < LEVELS; j++)
            lp_assign(k, b, chunk, lp_select(k, lt(k, mulc(k, r_(k, chunk), nw), per), mulc(k, r_(k, chunk), 2), r_(k, chunk)));
        lp_assign(k, b, first, mul(k, r_(k, wk), r_(k, chunk)));
        lp_assign(k, b, cnt, imax(k, imin(k, sub(k, r_(k, NB), r_(k, first)), r_(k, chunk)), ival(k, c.it, 0)));
    }
    /* the blocks, pushed on the counter: block j closes the subtrees of its low set bits */
    int stack = grid_regs_new(k, at, "lvl", LEVELS), acc = lp_reg_new(k, at, "acc"), carry = lp_reg_new(k, at, "carry");
    int up = lp_reg_new(k, LP_BOOL, "up");
    for (int v = 0; v < LEVELS; v++) lp_assign(k, b, stack + v, dsp_identity(&l));
    int j = lp_reg_new(k, c.it, "j"), tt = lp_reg_new(k, c.it, "t"), o = lp_reg_new(k, c.it, "o");
    /* a warp of several groups (64 lanes: two) runs the most turns any of its groups needs,
     * as one: a shuffle needs every lane of the warp; a group's extra turns fold nothing */
    bool shared_warp = t->warp_size > LANES;
    int cntL = cnt, GL = G;
    if (shared_warp) {
        cntL = lp_reg_new(k, c.it, "cntw");
        GL = lp_reg_new(k, c.it, "Gw");
        int other = lp_reg_new(k, c.it, "t");
        lp_assign(k, b, cntL, r_(k, cnt));
        lp_assign(k, b, GL, r_(k, G));
        for (int m = LANES; m < t->warp_size; m <<= 1) {
            lp_shfl(k, b, other, cntL, m, t->warp_size);
            lp_assign(k, b, cntL, imax(k, r_(k, cntL), r_(k, other)));
            lp_shfl(k, b, other, GL, m, t->warp_size);
            lp_assign(k, b, GL, imax(k, r_(k, GL), r_(k, other)));
        }
    }
    lp_block *each = &lp_for(k, b, j, ival(k, c.it, 0), r_(k, cntL), ival(k, c.it, 1))->body;
    lp_assign(k, each, acc, dsp_identity(&l));
    lp_block *turn = &lp_for(k, each, tt, ival(k, c.it, 0), r_(k, GL), ival(k, c.it, 1))->body;
    lp_expr *oe = add(k, add(k, r_(k, first), r_(k, j)), mul(k, r_(k, tt), r_(k, NB)));
    if (shared_warp) {
        /* a group's extra turns run to its warp-mate's counts, so o would pass P by up to
         * the other segment's pieces, and piece's o * W and start with it: past the input's
         * size, which 32-bit positions must not pass (a signed overflow is undefined in the
         * source); held at P, where o < P is the same test */
        lp_assign(k, turn, o, imin(k, oe, r_(k, P)));
        lp_expr *ok = both(k, both(k, lt(k, r_(k, j), r_(k, cnt)), lt(k, r_(k, tt), r_(k, G))), lt(k, r_(k, o), r_(k, P)));
        piece(&c, turn, r_(k, o), acc, ok);
        each = &lp_if(k, each, lt(k, r_(k, j), r_(k, cnt)))->body; /* the push: this group's blocks only */
    } else {
        lp_assign(k, turn, o, oe);
        piece(&c, &lp_if(k, turn, lt(k, r_(k, o), r_(k, P)))->body, r_(k, o), acc, NULL);
    }
    lp_assign(k, each, carry, r_(k, acc));
    lp_assign(k, each, up, lp_int(k, LP_BOOL, 1));
    for (int v = 0; v < LEVELS; v++) {
        lp_stmt *go = lp_if(k, each, r_(k, up));
        lp_stmt *set = lp_if(k, &go->body, eq(k, lp_binary(k, LO_BAND, lp_binary(k, LO_SHR, r_(k, j), ival(k, c.it, v)), ival(k, c.it, 1)), ival(k, c.it, 1)));
        lp_assign(k, &set->body, carry, dsp_combine(&l, &set->body, r_(k, stack + v), r_(k, carry)));
        lp_assign(k, &set->orelse, stack + v, r_(k, carry));
        lp_assign(k, &set->orelse, up, lp_int(k, LP_BOOL, 0));
    }
    /* the tree cut short: the open subtrees, from the lowest level up, each the left operand */
    int res = lp_reg_new(k, at, "res");
    lp_assign(k, b, res, dsp_identity(&l));
    for (int v = 0; v < LEVELS; v++) {
        lp_block *has = &lp_if(k, b, eq(k, lp_binary(k, LO_BAND, lp_binary(k, LO_SHR, r_(k, cnt), ival(k, c.it, v)), ival(k, c.it, 1)), ival(k, c.it, 1)))->body;
        lp_assign(k, has, res, dsp_combine(&l, has, r_(k, stack + v), r_(k, res)));
    }
    /* the output: an empty segment gives the op's empty value (a zero's +0, not the fold's
     * -0); it is not written when accumulating, for an op with none, or for bad offsets */
    lp_expr *empty = eq(k, r_(k, c.n), ival(k, c.it, 0));
    lp_expr *skip = lp_unary(k, LO_NOT, r_(k, valid));
    skip = either(k, skip, r_(k, bad));
    if (sg->accum || op->empty == IR_EMPTY_ERROR) skip = either(k, skip, empty);
    l.count = r_(k, c.n);
    bool plus0 = op->empty == IR_EMPTY_IDENTITY && op->identity == IR_IDENTITY_ZERO && lp_is_float(at);
    if (workers == 1) {
        lp_block *w = &lp_if(k, b, both(k, lp_unary(k, LO_NOT, skip), eq(k, r_(k, c.lane), ival(k, c.it, 0))))->body;
        lp_expr *v = plus0 ? lp_select(k, empty, lp_float(k, at, 0.0), r_(k, res)) : r_(k, res);
        dsp_store_output(&l, w, r_(k, item), v);
        *why = k->oom ? TILEC_ERR_NOMEM : TILEC_OK;
        return k->oom ? NULL : k;
    }
    /* the CTA's groups: slots, then the tree over them in one thread */
    lp_buf *slots = lp_buf_scratch(k, "slots", at, GP);
    lp_store(k, &lp_if(k, b, eq(k, r_(k, c.lane), ival(k, c.it, 0)))->body, slots, lp_cast(k, LP_I32, r_(k, grp)), r_(k, res));
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    int vals = grid_regs_new(k, at, "v", GP > C ? GP : C);
    lp_expr *t0 = eq(k, tid, i64c(k, 0));
    lp_block *one = &lp_if(k, b, t0)->body;
    for (int i = 0; i < GP; i++) lp_assign(k, one, vals + i, lp_load(k, slots, ival(k, LP_I32, i)));
    reg_tree(&l, one, vals, GP);
    lp_expr *fin_skip = skip;
    if (C == 1) {
        lp_block *w = &lp_if(k, one, lp_unary(k, LO_NOT, fin_skip))->body;
        lp_expr *v = plus0 ? lp_select(k, empty, lp_float(k, at, 0.0), r_(k, vals)) : r_(k, vals);
        dsp_store_output(&l, w, r_(k, item), v);
    } else {
        lp_buf *partials = lp_buf_scratch_global(k, "partials", at, outs * C);
        lp_buf *counters = lp_buf_scratch_global(k, "counters", LP_U32, outs);
        lp_store(k, one, partials, add(k, mulc(k, r_(k, item), C), lp_cast(k, LP_I64, r_(k, chunkc))), r_(k, vals));
        lp_barrier(k, b, TILEC_SCOPE_CTA);
        lp_block *fin = grid_when_last(&l, b, counters, r_(k, item), ival(k, LP_U32, C));
        lp_block *f0 = &lp_if(k, fin, t0)->body;
        for (int i = 0; i < C; i++) lp_assign(k, f0, vals + i, lp_load(k, partials, add(k, mulc(k, r_(k, item), C), i64c(k, i))));
        reg_tree(&l, f0, vals, C);
        lp_block *w = &lp_if(k, f0, lp_unary(k, LO_NOT, fin_skip))->body;
        lp_expr *v = plus0 ? lp_select(k, empty, lp_float(k, at, 0.0), r_(k, vals)) : r_(k, vals);
        dsp_store_output(&l, w, r_(k, item), v);
        lp_store(k, f0, counters, r_(k, item), ival(k, LP_U32, 0)); /* ready for the next launch */
    }
    *why = k->oom ? TILEC_ERR_NOMEM : TILEC_OK;
    return k->oom ? NULL : k;
}
