/*
 * v_fragment.c — statements on fragments (docs/format.md#fragment-layouts): copies into and
 * out of them, fills, and reductions of them, lowered from the layout's bits (layout.c).
 *
 * The element that register r of lane l of warp w holds is E(r) ^ L(l) ^ W(w), the XOR of
 * the basis vectors of the set bits (tilec_buffer.frag): E is known when the kernel is
 * generated, L and W are computed once a statement. A reduction sorts the bits by where
 * their coordinate moves: along the reduced axes only (R), the kept ones only (K), nowhere
 * (Z: a replicated lane or warp); a bit that moves along both is refused. Then
 *
 *   - each lane folds, for each value of its K register bits, its registers over the R
 *     register bits by a perfect binary tree (independent chains; leaves in register order);
 *   - a butterfly over the R lane bits, lowest first (XOR shuffles);
 *   - over the R warp bits of a warpgroup or a CTA, through shared memory: each warp's values in
 *     slots, a barrier of the scope, and every lane folds the warps' slots in warp order;
 *
 * and the output, at the kept coordinates E_K(r) ^ L_K(l) ^ W_K(w), is stored once (by the
 * lanes and warps whose R and Z bits are 0) into a shared or global destination, or by
 * every lane into a fragment destination whose layout is the source's with the reduced
 * coordinates dropped (its register j: the j-th value of the K register bits). That is
 * the fold order of a fragment reduction: it depends on the layout and the op only.
 */
#include "grid.h"
#include "../ir/numeric.h"

#include <stdio.h>
#include <string.h>

enum { MAXB = TILEC_LAYOUT_MAX_BITS };

static bool is_frag(const ir_region *r) { return r->buf && r->buf->layout.kind != TILEC_LAYOUT_NONE; }

bool dsp_stmt_has_fragment(const ir_stmt *st) { return is_frag(&st->dst) || is_frag(&st->src) || is_frag(&st->dst2); }

/* A fragment's bits as a reduction sees them. */
typedef struct fbits {
    int nreg, nlane, nwarp, n;
    char cls[MAXB];     /* 'R', 'K' or 'Z' */
    int64_t kept[MAXB]; /* the bit's coordinate as a flat index over the kept dims */
    int64_t red[MAXB];  /* … over the reduced dims (the index argmax reports) */
} fbits;

static const char *bit_kind(const fbits *f, int i, int *which) {
    *which = i < f->nreg ? i : i < f->nreg + f->nlane ? i - f->nreg : i - f->nreg - f->nlane;
    return i < f->nreg ? "register" : i < f->nreg + f->nlane ? "lane" : "warp";
}

static bool classify(const dsp_query *q, const tilec_buffer *F, fbits *f, char *why, size_t wn) {
    f->nreg = F->frag_reg;
    f->nlane = F->frag_lane;
    f->nwarp = F->frag_warp;
    f->n = f->nreg + f->nlane + f->nwarp;
    for (int i = 0; i < f->n; i++) {
        int64_t v = F->frag[i], c[TILEC_MAX_RANK];
        for (int d = F->rank - 1; d >= 0; d--) {
            c[d] = v % F->shape[d];
            v /= F->shape[d];
        }
        int64_t kf = 0, rf = 0;
        bool mk = false, mr = false;
        for (int d = 0; d < F->rank; d++) {
            if (q->reduced[d]) {
                rf = rf * F->shape[d] + c[d];
                mr = mr || c[d];
            } else {
                kf = kf * F->shape[d] + c[d];
                mk = mk || c[d];
            }
        }
        if (mk && mr) {
            int which;
            const char *kind = bit_kind(f, i, &which);
            snprintf(why, wn, "%s bit %d of '%s' moves along both a reduced and a kept dimension; reduce over "
                              "every dimension it moves along, or give the layout bits that each move along "
                              "one dimension",
                     kind, which, F->name);
            return false;
        }
        f->cls[i] = mr ? 'R' : mk ? 'K' : 'Z';
        f->kept[i] = kf;
        f->red[i] = rf;
    }
    return true;
}

/* The XOR of consts[j] over the set bits j of idx (n bits), as an expression: where it is
 * not used (a fragment destination, an op without an index), nothing is left behind. */
static lp_expr *xor_bits(lp_kernel *k, lp_expr *idx, const int64_t *consts, int n) {
    lp_expr *e = NULL;
    for (int j = 0; j < n; j++)
        if (consts[j]) {
            lp_expr *bit = lp_binary(k, LO_BAND, lp_binary(k, LO_SHR, idx, lp_int(k, LP_I32, j)), lp_int(k, LP_I32, 1));
            lp_expr *t = lp_binary(k, LO_MUL, bit, lp_int(k, LP_I32, consts[j]));
            e = e ? lp_binary(k, LO_BXOR, e, t) : t;
        }
    return e ? e : lp_int(k, LP_I32, 0);
}

static lp_expr *xor_of(lp_kernel *k, lp_expr *a, lp_expr *b) {
    if (b->kind == LX_CONST && b->i == 0) return a;
    if (a->kind == LX_CONST && a->i == 0) return b;
    return lp_binary(k, LO_BXOR, a, b);
}

/* The lane and the warp (of the warpgroup or CTA) of the executing thread. */
static void lane_warp(dsp_lower *l, lp_expr **lane, lp_expr **warp) {
    lp_kernel *k = l->k;
    lp_expr *tid = lp_cast(k, LP_I32, dsp_inst_tid(l));
    *lane = lp_binary(k, LO_BAND, tid, lp_int(k, LP_I32, 31));
    *warp = lp_binary(k, LO_SHR, tid, lp_int(k, LP_I32, 5));
}


/* The condition that the thread's bits in `mask` (lane bits j < 5, warp bits 5 + j) are 0. */
static lp_expr *zero_bits(lp_kernel *k, lp_expr *lane, lp_expr *warp, unsigned lanes, unsigned warps) {
    lp_expr *c = NULL;
    if (lanes)
        c = lp_binary(k, LO_EQ, lp_binary(k, LO_BAND, lane, lp_int(k, LP_I32, lanes)), lp_int(k, LP_I32, 0));
    if (warps) {
        lp_expr *w = lp_binary(k, LO_EQ, lp_binary(k, LO_BAND, warp, lp_int(k, LP_I32, warps)), lp_int(k, LP_I32, 0));
        c = c ? lp_binary(k, LO_AND, c, w) : w;
    }
    return c;
}

/* ---- predicates ------------------------------------------------------------------------- */

bool dsp_pred_frag_warps(const dsp_query *q, char *why, size_t n) {
    if (q->ws != 32) {
        snprintf(why, n, "fragment layouts are of warps of 32 lanes (NVIDIA's MMA layouts); this target runs %d", q->ws);
        return false;
    }
    /* every lane of the instance exists: threads=48 leaves a warp of 16, whose shuffles
     * would name lanes that do not (the last instance is the partial one) */
    int size = dsp_inst_threads(q);
    if (size == q->inst_size) return true;
    snprintf(why, n, "threads=%d leaves a %s of %d threads: a fragment needs whole warps (%d threads)", q->threads,
             tilec_scope_name(q->st->exec.scope), size, q->inst_size);
    return false;
}

static bool fragment_copy(const dsp_query *q, char *why, size_t n) {
    const ir_stmt *st = q->st;
    if (is_frag(&st->dst) && is_frag(&st->src)) {
        const tilec_buffer *a = st->dst.buf, *b = st->src.buf;
        if (a->frag_reg == b->frag_reg && a->frag_lane == b->frag_lane && a->frag_warp == b->frag_warp &&
            !memcmp(a->frag, b->frag, sizeof(int64_t) * (size_t)(a->frag_reg + a->frag_lane + a->frag_warp)))
            return true;
        snprintf(why, n, "'%s' and '%s' have different layouts; copy through shared memory", a->name, b->name);
        return false;
    }
    return true;
}

/* The destination of a fragment reduction: shared or global (stored once), or a fragment
 * whose layout is the source's projected (every lane its own copy). */
static bool fragment_reduce(const dsp_query *q, char *why, size_t n) {
    const ir_stmt *st = q->st;
    if (!is_frag(&st->src)) {
        snprintf(why, n, "the source is not a fragment");
        return false;
    }
    fbits f;
    if (!classify(q, st->src.buf, &f, why, n)) return false;
    const ir_region *dsts[2] = {&st->dst, st->dst2.buf ? &st->dst2 : NULL};
    if (dsts[1] && is_frag(dsts[0]) != is_frag(dsts[1])) {
        snprintf(why, n, "one destination is a fragment and the other is not; give both the same kind");
        return false;
    }
    for (int i = 0; i < 2 && dsts[i]; i++) {
        const tilec_buffer *D = dsts[i]->buf;
        if (!is_frag(dsts[i])) {
            if (D->space == TILEC_SPACE_LOCAL) {
                snprintf(why, n, "'%s' is a local array without a layout; give it the source's layout with the "
                                 "reduced coordinates dropped, or reduce into shared or global memory", D->name);
                return false;
            }
            continue;
        }
        /* the projection: D's bits must be the source's K register bits, then its lane and
         * warp bits with every R bit zero (replicated) */
        int64_t want[MAXB];
        int nr = 0, at = 0;
        for (int j = 0; j < f.nreg; j++)
            if (f.cls[j] == 'K') want[nr++] = f.kept[j];
        at = nr;
        for (int j = f.nreg; j < f.n; j++) want[at++] = f.cls[j] == 'K' ? f.kept[j] : 0;
        /* D's flat indices are the kept ones when its shape is the kept shape, extents of 1
         * aside (B[16] or B[16, 1] for the rows of [16, 64]) */
        int64_t ks[TILEC_MAX_RANK], ds[TILEC_MAX_RANK];
        int nks = 0, nds = 0;
        for (int d = 0; d < st->src.buf->rank; d++)
            if (!q->reduced[d] && st->src.buf->shape[d] > 1) ks[nks++] = st->src.buf->shape[d];
        for (int d = 0; d < D->rank; d++)
            if (D->shape[d] > 1) ds[nds++] = D->shape[d];
        bool same_shape = nks == nds;
        for (int d = 0; same_shape && d < nks; d++) same_shape = ks[d] == ds[d];
        if (!same_shape) {
            snprintf(why, n, "'%s' is not of the kept shape of '%s' (its extents of 1 aside)", D->name, st->src.buf->name);
            return false;
        }
        if (D->frag_reg == nr && D->frag_lane == f.nlane && D->frag_warp == f.nwarp &&
            !memcmp(D->frag, want, sizeof(int64_t) * (size_t)at))
            continue;
        /* say the layout that would do, in the format's words, in D's coordinates */
        ir_str t = {0};
        ir_str_printf(&t, "'%s' must have the layout of '%s' with the reduced coordinates dropped: layout=linear(reg=(",
                      D->name, st->src.buf->name);
        for (int j = 0; j < at; j++) {
            if (j == nr) ir_str_printf(&t, "), lane=(");
            else if (j == nr + f.nlane) ir_str_printf(&t, "), warp=(");
            else if (j) ir_str_printf(&t, ", ");
            int64_t v = want[j], c[TILEC_MAX_RANK];
            for (int d = D->rank - 1; d >= 0; d--) {
                c[d] = v % D->shape[d];
                v /= D->shape[d];
            }
            for (int d = 0; d < D->rank; d++) ir_str_printf(&t, "%s%lld", d ? ", " : "(", (long long)c[d]);
            ir_str_printf(&t, ")");
        }
        ir_str_printf(&t, "))");
        snprintf(why, n, "%s", t.oom ? "the destination's layout is not the source's projected" : t.data);
        ir_str_free(&t);
        return false;
    }
    return true;
}

/* ---- lowerings ------------------------------------------------------------------------- */

/* Elements a lane moves in one access when a fragment is copied from or to `other` (a
 * shared or global region whose address is known), or 1: the layout's first register bits
 * are the consecutive elements 1, 2, 4, … (as a row held 8 a lane, 16 bytes of bf16), every
 * other bit keeps vectors whole (a multiple of the vector), the region's runs of the
 * vector are consecutive in memory and aligned (dsp_region_vector_runs: rows at a stride
 * too). 16, 8 or 4 bytes. */
static int frag_vector(const dsp_query *q, const tilec_buffer *F, const ir_region *other) {
    const tilec_buffer *b = other->buf;
    if (b->space == TILEC_SPACE_LOCAL || dsp_address_unknown(q, b)) return 1;
    int size = (int)tilec_dtype_size(F->dtype), v = 0;
    while (v < F->frag_reg && F->frag[v] == (int64_t)1 << v && (2 << v) * size <= 16) v++;
    for (; v > 0; v--) {
        int vec = 1 << v;
        if (vec * size < 4) return 1;
        bool whole = dsp_region_vector_runs(other, vec);
        for (int j = v; whole && j < F->frag_reg + F->frag_lane + F->frag_warp; j++) whole = F->frag[j] % vec == 0;
        if (whole) return vec;
    }
    return 1;
}

static bool lower_frag_copy(dsp_lower *l, char *why, size_t wn) {
    (void)why, (void)wn;
    lp_kernel *k = l->k;
    const ir_stmt *st = l->q->st;
    bool in = is_frag(&st->dst);
    const ir_region *fr = in ? &st->dst : &st->src, *other = in ? &st->src : &st->dst;
    const tilec_buffer *F = fr->buf;
    lp_buf *fb = lp_buf_for(k, F), *ob = lp_buf_for(k, other->buf);
    int R = 1 << F->frag_reg;
    if (is_frag(other)) { /* the same layout: register by register */
        for (int r = 0; r < R; r++) lp_store(k, l->into, fb, lp_int(k, LP_I32, r), lp_load(k, ob, lp_int(k, LP_I32, r)));
        return true;
    }
    lp_expr *lane, *warp;
    lane_warp(l, &lane, &warp);
    int lw = lp_reg_new(k, LP_I32, "fl");
    lp_expr *lx = xor_bits(k, lane, F->frag + F->frag_reg, F->frag_lane);
    if (F->frag_warp) lx = xor_of(k, lx, xor_bits(k, warp, F->frag + F->frag_reg + F->frag_lane, F->frag_warp));
    lp_assign(k, l->into, lw, lx);
    lp_block *b = l->into;
    if (!in) { /* each element written once: by the lanes and warps whose replicated bits are 0 */
        unsigned zl = 0, zw = 0;
        for (int j = 0; j < F->frag_lane; j++)
            if (!F->frag[F->frag_reg + j]) zl |= 1u << j;
        for (int j = 0; j < F->frag_warp; j++)
            if (!F->frag[F->frag_reg + F->frag_lane + j]) zw |= 1u << j;
        lp_expr *c = zero_bits(k, lane, warp, zl, zw);
        if (c) b = &lp_if(k, b, c)->body;
    }
    /* vec registers an access (the first register bits are consecutive elements): every
     * load before any store into the fragment, so that they are all in flight at once */
    int vec = frag_vector(l->q, F, other);
    int regs = vec > 1 ? lp_reg_new(k, ob->type, "fv") : -1;
    for (int i = 1; i < (vec > 1 ? R : 0); i++) lp_reg_new(k, ob->type, "fv");
    for (int r = 0; r < R; r += vec) {
        lp_expr *flat = lp_binary(k, LO_BXOR, lp_int(k, LP_I32, ir_frag_xor(F->frag, F->frag_reg, r)), lp_reg(k, lw));
        lp_expr *at = dsp_region_offset(l, other, flat);
        if (vec > 1 && in) {
            lp_vload(k, b, regs + r, vec, ob, at);
        } else if (vec > 1) {
            for (int i = 0; i < vec; i++) lp_assign(k, b, regs + r + i, lp_load(k, fb, lp_int(k, LP_I32, r + i)));
            lp_vstore(k, b, ob, at, regs + r, vec);
        } else if (in) {
            lp_store(k, b, fb, lp_int(k, LP_I32, r), lp_load(k, ob, at));
        } else {
            lp_store(k, b, ob, at, lp_load(k, fb, lp_int(k, LP_I32, r)));
        }
    }
    for (int r = 0; vec > 1 && in && r < R; r++) lp_store(k, b, fb, lp_int(k, LP_I32, r), lp_reg(k, regs + r));
    return true;
}

static bool lower_frag_fill(dsp_lower *l, char *why, size_t wn) {
    (void)why, (void)wn;
    lp_kernel *k = l->k;
    const ir_stmt *st = l->q->st;
    lp_buf *fb = lp_buf_for(k, st->dst.buf);
    lp_expr *v = dsp_fill_value(l, fb->type);
    for (int r = 0; r < 1 << st->dst.buf->frag_reg; r++) lp_store(k, l->into, fb, lp_int(k, LP_I32, r), v);
    return true;
}

/* The layout's bits sorted for a reduction: the K and R register bits, the R lane bits as
 * shuffle masks (lowest first), the R and Z lane and warp bits as sets, the K lane bits,
 * and how many R lane bits spread the outputs over the lanes (store_spread's halving
 * exchanges: into memory, for the ops whose state is one small value, not a key, var's
 * pair or logsumexp's). */
typedef struct fsort {
    int kb[MAXB], rb[MAXB], nk, nr, masks[8], nm, scatter;
    unsigned rl, zl, rwb, zw, kl;
} fsort;

static void sort_bits(const dsp_query *q, const fbits *f, fsort *s) {
    memset(s, 0, sizeof *s);
    for (int j = 0; j < f->nreg; j++) {
        if (f->cls[j] == 'K') s->kb[s->nk++] = j;
        else s->rb[s->nr++] = j;
    }
    for (int j = 0; j < f->nlane; j++) {
        char c = f->cls[f->nreg + j];
        if (c == 'R') {
            s->masks[s->nm++] = 1 << j;
            s->rl |= 1u << j;
        }
        if (c == 'Z') s->zl |= 1u << j;
    }
    for (int j = 0; j < f->nwarp; j++) {
        char c = f->cls[f->nreg + f->nlane + j];
        if (c == 'R') s->rwb |= 1u << j;
        if (c == 'Z') s->zw |= 1u << j;
    }
    s->kl = 31u & ~(s->rl | s->zl); /* a warp's distinct values are 2^popcount of them */
    s->scatter = !is_frag(&q->st->dst) && dsp_small_state(q) ? (s->nm < s->nk ? s->nm : s->nk) : 0;
}

void dsp_fragment_plan(const dsp_query *q, char *out, size_t n) {
    const tilec_buffer *F = q->st->src.buf;
    fbits f;
    char why[256];
    if (!classify(q, F, &f, why, sizeof why)) {
        snprintf(out, n, "%s", why);
        return;
    }
    fsort so;
    sort_bits(q, &f, &so);
    int nk = so.nk, NR = 1 << so.nr, nm = so.nm, wr = __builtin_popcount(so.rwb), kl = __builtin_popcount(so.kl);
    int NK = 1 << nk;
    bool dfrag = is_frag(&q->st->dst);
    int scatter = so.scatter;
    char lanes[160] = "", warps[160] = "";
    int shuffles = 0;
    for (int i = 0; i < scatter; i++) shuffles += NK >> (i + 1);
    shuffles += (NK >> scatter) * (nm - scatter);
    if (scatter)
        snprintf(lanes, sizeof lanes, "halving exchanges over %d lane bit%s and XOR shuffles over %d (%d shuffles a lane)",
                 scatter, scatter == 1 ? "" : "s", nm - scatter, shuffles);
    else
        snprintf(lanes, sizeof lanes, "XOR shuffles over %d lane bit%s (%d shuffles a lane)", nm, nm == 1 ? "" : "s",
                 shuffles);
    int es = (int)num_size(dsp_acc_type(q));
    if (wr && dfrag)
        snprintf(warps, sizeof warps, ", then the warps' values through %d shared slots (%d bytes), every lane folding its own",
                 (1 << f.nwarp) * NK * (1 << kl), (1 << f.nwarp) * NK * (1 << kl) * es);
    else if (wr)
        snprintf(warps, sizeof warps, ", then the warps' values through %lld shared slots (%lld bytes), each thread folding "
                                      "and storing its outputs",
                 (long long)((1 << wr) * q->spatial_len), (long long)((1 << wr) * q->spatial_len * es));
    snprintf(out, n, "%s: each lane folds %d register%s an output (%d output%s a lane), then %s%s%s",
             tilec_layout_name(F->layout.kind), NR, NR == 1 ? "" : "s", NK, NK == 1 ? "" : "s", lanes, warps,
             ir_op(q->st->op)->lift != IR_LIFT_SHIFT ? ""
             : wr ? "; var and std fold about each output's first element, which XOR shuffles pass to the lanes of its "
                    "output and more slots and a barrier to the other warps"
                  : "; var and std fold about each output's first element, which XOR shuffles pass to the lanes of its output");
}

/* The index of the thread's value among a warp's distinct ones: the lane's K bits (`kept`, a
 * mask of lane bits), packed in order. */
static lp_expr *packed_bits(lp_kernel *k, lp_expr *lane, unsigned kept) {
    lp_expr *e = lp_int(k, LP_I32, 0);
    for (int j = 0, i = 0; j < 5; j++)
        if (kept >> j & 1) {
            lp_expr *bit = lp_binary(k, LO_BAND, lp_binary(k, LO_SHR, lane, lp_int(k, LP_I32, j)), lp_int(k, LP_I32, 1));
            e = lp_binary(k, LO_BOR, e, i ? lp_binary(k, LO_SHL, bit, lp_int(k, LP_I32, i)) : bit);
            i++;
        }
    return e;
}

/* Warp slots of a warpgroup's or a CTA's statement: value kr of warp w's lanes of packed K bits p, at
 * base + (w * nk + kr) * np + p. */
static lp_expr *slot_at(lp_kernel *k, lp_expr *base, lp_expr *w, int kr, int nk, lp_expr *p, int np) {
    lp_expr *row = lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, w, lp_int(k, LP_I32, nk)), lp_int(k, LP_I32, kr));
    return lp_binary(k, LO_ADD, base, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, row, lp_int(k, LP_I32, np)), p));
}

/* A fragment reduction into shared or global memory, from the lanes' register folds
 * accs[kr] (one for each value kr of the nk K register bits):
 *
 *   - the first `scatter` R lane bits (lowest first) halve the outputs a lane holds: at
 *     mask m, a lane keeps the upper half of its live registers when its bit m is set, the
 *     lower half when clear, sends the other half to lane ^ m and folds what it receives
 *     into what it keeps, the lower lane's value first, as the butterfly does (an add or
 *     a multiply, whose bits do not depend on the order, folds them as they are): the same
 *     pairs, the same bits, a shuffle per exchanged value instead of one per value (for
 *     mma_m16n8k16_c's columns 14 instead of 48). Register p then holds output
 *     kr = p + the kept bits the lane's scatter bits chose;
 *   - the other R lane bits: XOR shuffles, as everywhere;
 *   - a warpgroup or CTA whose warp bits are R: each warp's values into slots [warp's R bits][output]
 *     (by the lanes whose remaining R and Z bits are 0), a barrier, then each thread of the
 *     instance folds outputs t, t + n, … over the warps in warp order and stores them;
 *     else the lanes whose remaining R and Z bits are 0 store their outputs. */
static bool store_spread(dsp_lower *l, const fbits *f, lp_expr *lane, lp_expr *warp, lp_expr *keptl, int accs, int NK,
                         const int *kb, int nk, const int *masks, int nm, int scatter, unsigned zl, unsigned rwb,
                         unsigned zw, lp_buf *slots) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    lp_block *b = l->into;
    lp_type at = dsp_acc_type(q);
    int live = NK, nrw = 1 << __builtin_popcount(rwb); /* the warps an output's parts come from */
    lp_expr *chosen = lp_int(k, LP_I32, 0); /* the kept coordinates the scatter bits chose */
    if (scatter) {
        int recv = lp_reg_new(k, at, "recv"), send = lp_reg_new(k, at, "send");
        /* an add or a multiply gives the same bits in either order (a NaN stays a NaN): the
         * kept value and the received one fold as they are, one select fewer an exchange */
        const ir_op_info *op = ir_op(q->st->op);
        bool either = op->key == IR_KEY_NONE && !op->compares && (op->combine == LO_ADD || op->combine == LO_MUL);
        for (int i = 0; i < scatter; i++) {
            int half = live / 2;
            lp_expr *set = lp_binary(k, LO_NE, lp_binary(k, LO_BAND, lane, lp_int(k, LP_I32, masks[i])), lp_int(k, LP_I32, 0));
            for (int p = 0; p < half; p++) {
                int lo = accs + p, hi = accs + p + half;
                lp_assign(k, b, send, lp_select(k, set, lp_reg(k, lo), lp_reg(k, hi)));
                lp_shfl(k, b, recv, send, masks[i], 32);
                if (either) {
                    lp_assign(k, b, lo, dsp_combine(l, b, lp_select(k, set, lp_reg(k, hi), lp_reg(k, lo)), lp_reg(k, recv)));
                    continue;
                }
                /* the lower lane's value first: (recv, hi) where the bit is set, else (lo, recv) */
                lp_expr *first = lp_select(k, set, lp_reg(k, recv), lp_reg(k, lo));
                lp_expr *second = lp_select(k, set, lp_reg(k, hi), lp_reg(k, recv));
                lp_assign(k, b, lo, dsp_combine(l, b, first, second));
            }
            /* kr's bit nk - 1 - i is the lane's bit of masks[i] */
            int64_t v = f->kept[kb[nk - 1 - i]];
            int lb = 0;
            while (1 << lb != masks[i]) lb++;
            lp_expr *bit = lp_binary(k, LO_BAND, lp_binary(k, LO_SHR, lane, lp_int(k, LP_I32, lb)), lp_int(k, LP_I32, 1));
            chosen = xor_of(k, chosen, lp_binary(k, LO_MUL, bit, lp_int(k, LP_I32, v)));
            live = half;
        }
        for (int p = 0; p < live; p++) dsp_xor_masks(l, b, accs + p, masks + scatter, nm - scatter, 32);
    }
    /* a warpgroup's (a CTA's) slots: [instance][the warp's R bits][output] */
    lp_expr *base = lp_binary(k, LO_MUL, lp_cast(k, LP_I32, dsp_inst_id(l)), lp_int(k, LP_I32, (int)(nrw * q->spatial_len)));
    lp_expr *rw = packed_bits(k, warp, rwb);
    unsigned rest = 0; /* the R lane bits whose lanes hold the same outputs */
    for (int i = scatter; i < nm; i++) rest |= (unsigned)masks[i];
    lp_expr *c = zero_bits(k, lane, warp, rest | zl, zw);
    lp_block *mine = c ? &lp_if(k, b, c)->body : b;
    for (int p = 0; p < live; p++) {
        int r = 0;
        for (int i = 0; i < nk; i++)
            if (p >> i & 1) r |= 1 << kb[i];
        lp_expr *o = xor_of(k, xor_of(k, lp_int(k, LP_I32, ir_frag_xor(f->kept, f->nreg, r)), chosen), keptl);
        if (!rwb) {
            dsp_store_output(l, mine, o, lp_reg(k, accs + p));
            continue;
        }
        lp_expr *at_ = lp_binary(k, LO_ADD, base, lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, rw, lp_int(k, LP_I32, (int)q->spatial_len)), o));
        lp_store(k, mine, slots, at_, lp_reg(k, accs + p));
    }
    if (!rwb) return true;
    lp_barrier(k, b, q->st->exec.scope);
    int o = lp_reg_new(k, LP_I32, "o"), v = lp_reg_new(k, at, "w");
    lp_stmt *loop = lp_for(k, b, o, lp_cast(k, LP_I32, dsp_inst_tid(l)), lp_int(k, LP_I32, (int)q->spatial_len),
                           lp_cast(k, LP_I32, dsp_inst_size(l)));
    for (int w = 0; w < nrw; w++) {
        lp_expr *x = lp_load(k, slots, lp_binary(k, LO_ADD, base, lp_binary(k, LO_ADD, lp_int(k, LP_I32, (int)(w * q->spatial_len)), lp_reg(k, o))));
        lp_assign(k, &loop->body, v, w ? dsp_combine(l, &loop->body, lp_reg(k, v), x) : x);
    }
    dsp_store_output(l, &loop->body, lp_reg(k, o), lp_reg(k, v)); /* (the statement's barrier follows) */
    return true;
}

static bool lower_frag_reduce(dsp_lower *l, char *why, size_t wn) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    const ir_stmt *st = q->st;
    const tilec_buffer *F = st->src.buf;
    fbits f;
    if (!classify(q, F, &f, why, wn)) return false;
    lp_buf *fb = lp_buf_for(k, F);
    lp_type at = dsp_acc_type(q);
    bool dfrag = is_frag(&st->dst);
    lp_block *b = l->into;
    lp_expr *lane, *warp;
    lane_warp(l, &lane, &warp);
    /* the thread's parts of the kept and the reduced coordinates */
    int64_t lk[MAXB], lr[MAXB];
    for (int j = f.nreg; j < f.n; j++) {
        lk[j - f.nreg] = f.cls[j] == 'K' ? f.kept[j] : 0;
        lr[j - f.nreg] = f.cls[j] == 'R' ? f.red[j] : 0;
    }
    lp_expr *keptl = xor_bits(k, lane, lk, f.nlane), *redl = xor_bits(k, lane, lr, f.nlane);
    if (f.nwarp) {
        keptl = xor_of(k, keptl, xor_bits(k, warp, lk + f.nlane, f.nwarp));
        redl = xor_of(k, redl, xor_bits(k, warp, lr + f.nlane, f.nwarp));
    }
    fsort so;
    sort_bits(q, &f, &so);
    const int *kb = so.kb, *rb = so.rb, *masks = so.masks;
    int nk = so.nk, nr = so.nr, nm = so.nm;
    unsigned rl = so.rl, zl = so.zl, rwb = so.rwb, zw = so.zw;
    int NK = 1 << nk, NR = 1 << nr;
    unsigned kl = so.kl;
    int NP = 1 << __builtin_popcount(kl);
    bool shifted = ir_op(st->op)->lift == IR_LIFT_SHIFT;
    unsigned wmask = (1u << f.nwarp) - 1; /* the instance's warp bits */
    /* the warps' slots (a warpgroup or CTA whose warps split the reduced axis): a value for each
     * warp, output and K lane bits (the lanes that differ only in R or Z bits hold the same) */
    int scatter = so.scatter;
    lp_buf *slots = NULL, *firsts = NULL;
    lp_expr *wbase = NULL, *packed = NULL, *writer = NULL, *home = NULL;
    if (rwb) {
        int64_t per = ((int64_t)1 << f.nwarp) * NK * NP, sper = dfrag ? per : (1 << __builtin_popcount(rwb)) * q->spatial_len;
        slots = lp_buf_scratch(k, "frag_slots", at, (int64_t)q->inst_count * sper);
        if (shifted) firsts = lp_buf_scratch(k, "frag_first", LP_F64, (int64_t)q->inst_count * per);
        wbase = lp_binary(k, LO_MUL, lp_cast(k, LP_I32, dsp_inst_id(l)), lp_int(k, LP_I32, (int)per));
        packed = packed_bits(k, lane, kl);
        writer = zero_bits(k, lane, warp, rl | zl, 0);
        home = lp_binary(k, LO_BAND, warp, lp_int(k, LP_I32, (int)(~rwb & wmask))); /* the warp whose R bits are 0 */
    }
    /* var and std: each output's first element (reduced coordinates 0), the shift every part
     * of it folds about: register r0 of the lane whose R bits are 0, passed to the lanes that
     * differ from it in R bits (from bit-clear to bit-set, bit by bit), and from the warp
     * whose R bits are 0 through shared memory, every output's at once (one barrier) */
    int x0 = shifted ? grid_regs_new(k, LP_F64, "x0", NK) : -1;
    if (shifted) {
        int xt = lp_reg_new(k, LP_F64, "x0t");
        for (int kr = 0; kr < NK; kr++) {
            int r0 = 0;
            for (int i = 0; i < nk; i++)
                if (kr >> i & 1) r0 |= 1 << kb[i];
            lp_assign(k, b, x0 + kr, lp_cast(k, LP_F64, lp_load(k, fb, lp_int(k, LP_I32, r0))));
            for (int i = 0; i < nm; i++) {
                lp_shfl(k, b, xt, x0 + kr, masks[i], 32);
                lp_expr *set = lp_binary(k, LO_NE, lp_binary(k, LO_BAND, lane, lp_int(k, LP_I32, masks[i])), lp_int(k, LP_I32, 0));
                lp_assign(k, b, x0 + kr, lp_select(k, set, lp_reg(k, xt), lp_reg(k, x0 + kr)));
            }
        }
        if (rwb) {
            lp_block *w = &lp_if(k, b, zero_bits(k, lane, warp, rl | zl, rwb))->body;
            for (int kr = 0; kr < NK; kr++) lp_store(k, w, firsts, slot_at(k, wbase, warp, kr, NK, packed, NP), lp_reg(k, x0 + kr));
            lp_barrier(k, b, st->exec.scope);
            for (int kr = 0; kr < NK; kr++)
                lp_assign(k, b, x0 + kr, lp_load(k, firsts, slot_at(k, wbase, home, kr, NK, packed, NP)));
        }
    }
    int accs = grid_regs_new(k, at, "acc", NK);
    for (int kr = 0; kr < NK; kr++) {
        lp_expr *shift = shifted ? lp_reg(k, x0 + kr) : NULL;
        int leaves = grid_regs_new(k, at, "leaf", NR);
        for (int rr = 0; rr < NR; rr++) {
            int r = 0;
            for (int i = 0; i < nk; i++)
                if (kr >> i & 1) r |= 1 << kb[i];
            for (int i = 0; i < nr; i++)
                if (rr >> i & 1) r |= 1 << rb[i];
            lp_expr *index = xor_of(k, lp_int(k, LP_I32, ir_frag_xor(f.red, f.nreg, r)), redl);
            lp_assign(k, b, leaves + rr, dsp_element(l, lp_load(k, fb, lp_int(k, LP_I32, r)), index, shift));
        }
        grid_reg_tree(l, b, leaves, NR, 1, false);
        if (!scatter) dsp_xor_masks(l, b, leaves, masks, nm, 32);
        lp_assign(k, b, accs + kr, lp_reg(k, leaves));
        if (rwb && dfrag) /* this warp's value, at slot (warp, kr, packed K bits), by one of the lanes that hold it */
            lp_store(k, writer ? &lp_if(k, b, writer)->body : b, slots, slot_at(k, wbase, warp, kr, NK, packed, NP),
                     lp_reg(k, accs + kr));
    }
    if (!dfrag) return store_spread(l, &f, lane, warp, keptl, accs, NK, kb, nk, masks, nm, scatter, zl, rwb, zw, slots);
    if (rwb) { /* every lane folds the warps that differ from its own in R bits, in warp order */
        lp_barrier(k, b, st->exec.scope);
        lp_expr *mine = lp_binary(k, LO_BAND, warp, lp_int(k, LP_I32, (int)(~rwb & wmask)));
        for (int kr = 0; kr < NK; kr++) {
            bool first = true;
            for (int w = 0; w < 1 << f.nwarp; w++) {
                if ((unsigned)w & ~rwb) continue; /* w: the R bits only */
                lp_expr *wi = lp_binary(k, LO_BOR, mine, lp_int(k, LP_I32, w));
                lp_expr *v = lp_load(k, slots, slot_at(k, wbase, wi, kr, NK, packed, NP));
                if (first) lp_assign(k, b, accs + kr, v);
                else lp_assign(k, b, accs + kr, dsp_combine(l, b, lp_reg(k, accs + kr), v));
                first = false;
            }
        }
        lp_barrier(k, b, st->exec.scope); /* the slots are read before anyone writes them again */
    }
    /* the outputs: every lane its registers of the destination fragment */
    for (int kr = 0; kr < NK; kr++) {
        int r = 0;
        for (int i = 0; i < nk; i++)
            if (kr >> i & 1) r |= 1 << kb[i];
        lp_expr *o = xor_of(k, lp_int(k, LP_I32, ir_frag_xor(f.kept, f.nreg, r)), keptl);
        l->frag_at = lp_int(k, LP_I32, kr);
        dsp_store_output(l, b, o, lp_reg(k, accs + kr));
    }
    l->frag_at = NULL;
    return true;
}

const dsp_case dsp_case_fragment = {
    .variant = "fragment",
    .priority = 40,
    .ops = DSP_OPS_REDUCE,
    .targets = DSP_ALL_TARGETS,
    .fragments = true,
    .preds = {{"warp_size", dsp_pred_frag_warps}, {"target_scope", dsp_pred_scope_on_target}, {"layout", fragment_reduce}},
    .lower = lower_frag_reduce,
    .summary = "a fragment: each lane folds its registers, XOR shuffles over the lane bits along the reduced axes",
};

const dsp_case dsp_case_fragment_copy = {
    .variant = "fragment_copy",
    .priority = 40,
    .ops = 1u << DSP_COPY,
    .targets = DSP_ALL_TARGETS,
    .fragments = true,
    .preds = {{"warp_size", dsp_pred_frag_warps}, {"target_scope", dsp_pred_scope_on_target}, {"layout", fragment_copy}},
    .lower = lower_frag_copy,
    .summary = "into or out of a fragment: each lane its elements, each element written once",
};

const dsp_case dsp_case_fragment_fill = {
    .variant = "fragment_fill",
    .priority = 40,
    .ops = 1u << DSP_FILL,
    .targets = DSP_ALL_TARGETS,
    .fragments = true,
    .preds = {{"warp_size", dsp_pred_frag_warps}, {"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_frag_fill,
    .summary = "a fragment: each lane its registers",
};
