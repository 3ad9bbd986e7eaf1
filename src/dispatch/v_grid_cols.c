/*
 * v_grid_cols.c — grid_cols, the executor of column layouts (grid.h: the plan and the
 * fold order it computes): a thread per (vector of) column(s) and block, 8 to 32 rows in
 * flight.
 */
#include "grid.h"

#include <stdio.h>

static bool cols_layout(const dsp_query *q, char *why, size_t n) {
    gplan g;
    if (!grid_plan_view(q, &g, why, n)) return false;
    if (!g.rows) return true;
    snprintf(why, n, "the innermost dim in memory is reduced (a row layout)");
    return false;
}

/* ---- grid_cols ------------------------------------------------------------------------- */

static bool lower_cols(dsp_lower *l, char *why, size_t wn) {
    lp_kernel *k = l->k;
    const dsp_query *q = l->q;
    gplan g;
    if (!grid_plan_view(q, &g, why, wn)) return false;
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
        K = grid_blocks_per_cta(q, &g, KO * nb, rw, cw * vec, 2);
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
    lp_type it = grid_index_type(q, &g), at = dsp_acc_type(q);
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
    int accs = grid_regs_new(k, at, "ca", vec), xs = grid_regs_new(k, src->type, "cx", batch * vec);
    int r = lp_reg_new(k, it, "round"), blk = lp_reg_new(k, it, "b"), o = lp_reg_new(k, it, "o");
    /* column 0 of the outer kept index ko is the executors' output ko * I: its flat output
     * index and its source offset (column c adds c times the inner dim's strides) */
    int sbase = lp_reg_new(k, it, "sb"), ibase = lp_reg_new(k, it, "ib");
    lp_expr *x0 = mulc(k, lp_reg(k, ko), I);
    lp_assign(k, b, sbase, grid_kept_sum(k, &g, x0, true));
    lp_assign(k, b, ibase, grid_kept_sum(k, &g, x0, false));
    lp_expr *active = both(k, lt(k, lp_reg(k, col), ival(k, it, I)), lt(k, lp_reg(k, rl), ival(k, it, rw)));
    /* var's: row 0 of each column (clamped, so a lane past the last column reads in bounds) */
    lp_expr *shift[16] = {0};
    for (int e = 0; e < vec; e++) {
        lp_expr *c = lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, add(k, lp_reg(k, col), ival(k, it, e)), ival(k, it, I - 1));
        shift[e] = dsp_shift(l, b, add(k, lp_reg(k, ibase), mulc(k, c, inner->in)));
    }
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
        lp_expr *first = add(k, cols_at, grid_outer_offset(k, &g, ou));
        if (vec > 1) lp_vload(k, in, xs + u * vec, vec, src, first);
        else lp_assign(k, in, xs + u * vec, lp_load(k, src, first));
    }
    if (whole && dsp_folds_many(q)) { /* a whole turn's rows and the column's state at once */
        int keys = grid_regs_new(k, at, "key", batch + 1);
        for (int e = 0; e < vec; e++) {
            lp_assign(k, turn, keys, lp_reg(k, accs + e));
            for (int u = 0; u < batch; u++)
                lp_assign(k, turn, keys + 1 + u, dsp_element(l, lp_reg(k, xs + u * vec + e), grid_outer_index(k, &g, add(k, lp_reg(k, o), ival(k, it, u))), shift[e]));
            dsp_fold_regs(l, turn, keys, batch + 1, 1);
            lp_assign(k, turn, accs + e, lp_reg(k, keys));
        }
    } else {
        for (int u = 0; u < batch; u++) {
            lp_block *in = okv[u] ? &lp_if(k, turn, okv[u])->body : turn;
            lp_expr *index = grid_outer_index(k, &g, u ? add(k, lp_reg(k, o), ival(k, it, u)) : lp_reg(k, o)); /* a piece is an element */
            for (int e = 0; e < vec; e++)
                lp_assign(k, in, accs + e, dsp_combine(l, in, lp_reg(k, accs + e), dsp_element(l, lp_reg(k, xs + u * vec + e), index, shift[e])));
        }
    }
    /* leaf i = round * rw + rl of column cl * vec + e */
    lp_block *put = &lp_if(k, each, lt(k, lp_reg(k, rl), ival(k, it, rw)))->body;
    for (int e = 0; e < vec; e++) {
        lp_expr *leaf = add(k, mulc(k, add(k, mulc(k, lp_reg(k, r), rw), lp_reg(k, rl)), width),
                            add(k, mulc(k, lp_reg(k, cl), vec), ival(k, it, e)));
        lp_store(k, put, slots, lp_cast(k, LP_I32, leaf), lp_reg(k, accs + e));
    }
    lp_barrier(k, b, TILEC_SCOPE_CTA);
    grid_slot_tree(l, b, slots, K, K, width);
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
    lp_block *fin = grid_when_last(l, b, counters, add(k, mulc(k, line, G2), lp_reg(k, grp)), members);
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
        grid_slot_gather(l, fin, slots, leaves * width, &pg);
        grid_slot_tree(l, fin, slots, leaves, leaves, width);
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
        fin = grid_when_last(l, fin, counters2, line, ival(k, LP_U32, G2));
    }
    return true;
}

const dsp_case dsp_case_grid_cols = {
    .variant = "grid_cols",
    .priority = 20,
    .ops = DSP_OPS_GRID,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"cols_layout", cols_layout}},
    .lower = lower_cols,
    .summary = "neighbouring kept elements: a thread per column and block, eight rows in flight, trees in a fixed order",
};
