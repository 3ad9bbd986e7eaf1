/*
 * lower_util.c — what every lowering needs: facts about a statement (dsp_query), the
 * executing instance as expressions, region addressing, and the reduction's identity,
 * combine, accumulation loop, shuffle butterfly and final store.
 */
#include "dispatch.h"

#include "../ir/numeric.h"

#include <math.h>
#include <stdio.h>

static int64_t next_pow2(int64_t v) {
    int64_t p = 1;
    while (p < v && p < ((int64_t)1 << 62)) p <<= 1;
    return p;
}

/* The largest power of two dividing v (v >= 1). */
static int pow2_dividing(int v) { return v & -v; }

void dsp_query_init(dsp_query *q, const dsp_target *t, const tilec_kernel *k, const ir_stmt *st) {
    *q = (dsp_query){.target = t, .kernel = k, .st = st, .opkind = dsp_opkind_of(st),
                     .threads = k->threads, .ws = t->warp_size};
    tilec_scope s = st->exec.scope;
    q->inst_size = ir_scope_size(s, k->threads, t->warp_size); /* grid: per CTA */
    if (q->inst_size > k->threads) q->inst_size = k->threads; /* one partial warp */
    q->inst_count = s == TILEC_SCOPE_GRID ? 1 : ir_scope_count(s, k->threads, t->warp_size);
    q->inst_last = k->threads - (q->inst_count - 1) * q->inst_size;
    q->selected = st->exec.instance >= 0;
    if (st->kind != IR_REDUCE) return;
    q->src_rank = ir_region_shape(&st->src, q->src_dims);
    for (int i = 0; i < st->naxes; i++) {
        int a = st->axes[i] < 0 ? st->axes[i] + q->src_rank : st->axes[i];
        if (a >= 0 && a < q->src_rank) q->reduced[a] = true;
    }
    q->red_len = q->spatial_len = 1;
    for (int d = 0; d < q->src_rank; d++) {
        if (q->reduced[d]) q->red_len *= q->src_dims[d];
        else q->spatial_len *= q->src_dims[d];
    }
    /* Lanes per output: no more than the reduction needs, a warp, or what divides every
     * instance that runs (so no group is partial). */
    int sizes = q->selected ? (st->exec.instance == q->inst_count - 1 ? q->inst_last : q->inst_size)
                            : (q->inst_size | q->inst_last);
    int64_t g = next_pow2(q->red_len);
    if (g > q->ws) g = q->ws;
    if (g > pow2_dividing(sizes)) g = pow2_dividing(sizes);
    q->group = (int)g;
    /* the cost model's cheapest plan of each family */
    dsp_tile_plan plans[DSP_MAX_PLANS];
    int n = dsp_tile_plans(q, -1, plans, DSP_MAX_PLANS);
    for (int i = n - 1; i >= 0; i--) {
        q->has_plan[plans[i].orient] = true;
        q->plan[plans[i].orient] = plans[i];
    }
}

/* ---- shared memory ---- */

/* Shared bytes of the kernel's CTA so far (its buffers and the variants' slots, 16-byte
 * aligned each, as the emitters lay them out; a swizzled tile with the most its alignment
 * can add, as the verifier counts it: ir_alloc_bytes). */
int64_t dsp_shared_bytes(const lp_kernel *k) {
    int64_t total = 0;
    for (int i = 0; i < k->nbufs; i++) {
        const lp_buf *b = k->bufs[i];
        if (b->space == TILEC_SPACE_SHARED && b->param < 0)
            total += b->tile ? ir_alloc_bytes(b->tile) : (b->elems * (int64_t)num_size(b->type) + 15) & ~(int64_t)15;
    }
    return total;
}

/* ---- expressions -------------------------------------------------------------------------- */

lp_expr *dsp_i32(dsp_lower *l, int64_t v) { return lp_int(l->k, LP_I32, v); }

/* A register holding e (e itself when it is one): for a value read more than once. */
static lp_expr *held(dsp_lower *l, lp_block *into, lp_expr *e, const char *name) {
    if (e->kind == LX_REG || e->kind == LX_CONST) return e;
    int r = lp_reg_new(l->k, e->type, name);
    lp_assign(l->k, into, r, e);
    return lp_reg(l->k, r);
}

/* out (v converted to out's type), but a NaN v as the type's default quiet NaN, not
 * converted: which NaN an operation or conversion gives differs between GPUs and CPUs
 * (payload, sign), and the bits must not. v is read twice: a register or a constant. */
static lp_expr *quieted(dsp_lower *l, lp_expr *v, lp_expr *out) {
    return lp_select(l->k, lp_binary(l->k, LO_NE, v, v), lp_float(l->k, out->type, NAN), out);
}

lp_type dsp_index_type(int64_t bound, int64_t step) { return bound > INT32_MAX - step ? LP_I64 : LP_I32; }

int64_t dsp_lane_step(const dsp_lower *l, const lp_expr *stride) {
    if (stride && stride->kind == LX_CONST) return stride->i;
    return l->q->threads > l->q->ws ? l->q->threads : l->q->ws;
}

lp_expr *dsp_ceil_div(dsp_lower *l, lp_expr *a, lp_expr *b) {
    if (a->kind == LX_CONST && b->kind == LX_CONST && b->i > 0)
        return lp_int(l->k, a->type, (a->i + b->i - 1) / b->i);
    lp_expr *one = lp_int(l->k, a->type, 1);
    return lp_binary(l->k, LO_DIV, lp_binary(l->k, LO_SUB, lp_binary(l->k, LO_ADD, a, b), one), b);
}

static lp_expr *special(dsp_lower *l, lp_special s) { return lp_special_expr(l->k, s); }

/* The value of an id for the executing thread. */
static lp_expr *id_value(dsp_lower *l, tilec_scope id) {
    switch (id) {
    case TILEC_SCOPE_CTA: return special(l, LP_CTA);
    case TILEC_SCOPE_CLUSTER: return lp_binary(l->k, LO_DIV, special(l, LP_CTA), dsp_i32(l, l->k->cluster));
    case TILEC_SCOPE_WARPGROUP: return lp_binary(l->k, LO_DIV, special(l, LP_TID), dsp_i32(l, 128));
    case TILEC_SCOPE_WARP: return special(l, LP_WARP);
    default: return special(l, LP_TID);
    }
}

lp_expr *dsp_cluster_rank(dsp_lower *l) { return lp_binary(l->k, LO_REM, special(l, LP_CTA), dsp_i32(l, l->k->cluster)); }

/* The value of an index by an id (ir_index_is_id). */
static lp_expr *index_value(dsp_lower *l, const ir_index *ix) {
    return ix->kind == TILEC_INDEX_RANK ? dsp_cluster_rank(l) : id_value(l, ix->id);
}

lp_expr *dsp_inst_id(dsp_lower *l) {
    const dsp_query *q = l->q;
    if (q->selected) return dsp_i32(l, q->st->exec.instance);
    if (q->st->exec.scope == TILEC_SCOPE_CTA) return dsp_i32(l, 0);
    return id_value(l, q->st->exec.scope);
}

lp_expr *dsp_inst_tid(dsp_lower *l) {
    const dsp_query *q = l->q;
    switch (q->st->exec.scope) {
    case TILEC_SCOPE_CTA: return special(l, LP_TID);
    case TILEC_SCOPE_WARP: return special(l, LP_LANE);
    case TILEC_SCOPE_THREAD: return dsp_i32(l, 0);
    default: return lp_binary(l->k, LO_REM, special(l, LP_TID), dsp_i32(l, 128));
    }
}

int dsp_inst_threads(const dsp_query *q) {
    return q->selected && q->st->exec.instance != q->inst_count - 1 ? q->inst_size : q->inst_last;
}

lp_expr *dsp_inst_size(dsp_lower *l) {
    const dsp_query *q = l->q;
    if (q->selected)
        return dsp_i32(l, q->st->exec.instance == q->inst_count - 1 ? q->inst_last : q->inst_size);
    if (q->inst_last == q->inst_size) return dsp_i32(l, q->inst_size);
    /* a partial last warp: min(ws, threads - warp * ws) */
    lp_expr *left = lp_binary(l->k, LO_SUB, dsp_i32(l, q->threads),
                              lp_binary(l->k, LO_MUL, special(l, LP_WARP), dsp_i32(l, q->ws)));
    return lp_minmax(l->k, LO_MIN, TILEC_NAN_PROPAGATE, dsp_i32(l, q->ws), left);
}

/* ---- addressing ------------------------------------------------------------------------------ */

/* coords[j] = the j-th coordinate of `flat` in row-major order over dims[0..n). */
static void unflatten(dsp_lower *l, lp_expr *flat, const int64_t *dims, int n, lp_expr **coords) {
    int64_t inner = 1;
    for (int j = n - 1; j >= 0; j--) {
        lp_expr *c = flat;
        if (dims[j] == 1) {
            c = lp_int(l->k, flat->type, 0);
        } else {
            if (inner > 1) c = lp_binary(l->k, LO_DIV, c, lp_int(l->k, flat->type, inner));
            if (j > 0) c = lp_binary(l->k, LO_REM, c, lp_int(l->k, flat->type, dims[j]));
        }
        coords[j] = c;
        inner *= dims[j];
    }
}

/* The buffer offset of the region element at coords (one per dimension as indexed). */
static lp_expr *offset_of(dsp_lower *l, const ir_region *r, lp_expr **coords, lp_type it) {
    const tilec_buffer *b = r->buf;
    lp_expr *off = b->origin ? lp_int(l->k, it, b->origin) : NULL;
    int j = 0;
    for (int d = 0; d < b->rank; d++) {
        lp_expr *pos;
        if (d < r->nindex && ir_index_is_id(&r->index[d])) {
            pos = lp_cast(l->k, it, index_value(l, &r->index[d]));
        } else {
            int64_t lo = 0, hi = b->shape[d];
            if (d < r->nindex) ir_index_range(&r->index[d], b->shape[d], &lo, &hi);
            if (d < r->nindex && r->index[d].kind == TILEC_INDEX_AT) {
                pos = lp_int(l->k, it, lo);
            } else {
                pos = lp_cast(l->k, it, coords[j++]);
                if (lo) pos = lp_binary(l->k, LO_ADD, pos, lp_int(l->k, it, lo));
            }
        }
        if (pos->kind == LX_CONST && pos->i == 0) continue;
        lp_expr *term = b->strides[d] == 1 ? pos : lp_binary(l->k, LO_MUL, pos, lp_int(l->k, it, b->strides[d]));
        off = off ? lp_binary(l->k, LO_ADD, off, term) : term;
    }
    return off ? off : lp_int(l->k, it, 0);
}

/* Whether the region's kept dimensions are laid out row-major without gaps (each stride
 * is the product of the inner kept extents): then element `flat` is at base + flat. */
static bool dense(const ir_region *r) {
    const tilec_buffer *b = r->buf;
    int64_t inner = 1;
    for (int d = b->rank - 1; d >= 0; d--) {
        if (d < r->nindex && r->index[d].kind != TILEC_INDEX_SLICE) continue; /* dropped */
        int64_t lo = 0, hi = b->shape[d];
        if (d < r->nindex) ir_index_range(&r->index[d], b->shape[d], &lo, &hi);
        if (hi - lo > 1 && b->strides[d] != inner) return false;
        inner *= hi - lo;
    }
    return true;
}

bool dsp_region_dense(const ir_region *r) { return dense(r); }

bool dsp_region_base_aligned(const ir_region *r, int vec) {
    const tilec_buffer *b = r->buf;
    if (b->origin % vec) return false;
    /* a swizzle keeps chunks of 2^base bytes whole: a vector must fit in one */
    if (b->swizzle.kind != TILEC_SWIZZLE_NONE && (int64_t)vec * (int64_t)tilec_dtype_size(b->dtype) > ((int64_t)1 << b->swizzle.base))
        return false;
    for (int d = 0; d < b->rank && d < r->nindex; d++) {
        const ir_index *ix = &r->index[d];
        if (ir_index_is_id(ix)) {
            if (b->strides[d] % vec) return false;
            continue;
        }
        int64_t lo, hi;
        ir_index_range(ix, b->shape[d], &lo, &hi);
        if ((lo * b->strides[d]) % vec) return false;
    }
    return true;
}

bool dsp_region_vector_runs(const ir_region *r, int vec) {
    const tilec_buffer *b = r->buf;
    bool last = true;
    for (int d = b->rank - 1; d >= 0; d--) {
        if (d < r->nindex && r->index[d].kind != TILEC_INDEX_SLICE) continue; /* dropped */
        int64_t lo = 0, hi = b->shape[d];
        if (d < r->nindex) ir_index_range(&r->index[d], b->shape[d], &lo, &hi);
        if (last) {
            if (b->strides[d] != 1 || (hi - lo) % vec) return false;
            last = false;
        } else if (hi - lo > 1 && (b->strides[d] <= 0 || b->strides[d] % vec)) {
            return false;
        }
    }
    return !last && dsp_region_base_aligned(r, vec);
}

bool dsp_address_unknown(const dsp_query *q, const tilec_buffer *b) {
    return b->is_param && (b->kernel->is_func || (b->space == TILEC_SPACE_GLOBAL && q->target && q->target->unaligned));
}

/* base + flat for a dense region: the base is the offset of its first element. */
static lp_expr *dense_offset(dsp_lower *l, const ir_region *r, lp_expr *flat, lp_type it) {
    lp_expr *zero[TILEC_MAX_RANK];
    for (int d = 0; d < TILEC_MAX_RANK; d++) zero[d] = lp_int(l->k, it, 0);
    lp_expr *base = offset_of(l, r, zero, it);
    if (base->kind == LX_CONST && base->i == 0) return flat;
    return lp_binary(l->k, LO_ADD, base, flat);
}

lp_expr *dsp_fill_value(dsp_lower *l, lp_type t) {
    const ir_stmt *st = l->q->st;
    if (lp_is_float(t)) /* the constant as rounded once to the buffer's type (exact in f64, so the cast is too) */
        return lp_cast(l->k, t, lp_float(l->k, LP_F64, st->fill.typed));
    return lp_int(l->k, t, st->fill.i); /* the exact integer, as verified */
}

/* Where a swizzled tile stores the element at offset `off` (swizzle.c):
 * off ^ (((off >> (base' + shift)) & mask) << base') in elements, base' = base - log2(size);
 * the offset itself without a swizzle. */
static lp_expr *swizzled(dsp_lower *l, const tilec_buffer *b, lp_expr *off) {
    const tilec_swizzle *s = &b->swizzle;
    if (s->kind == TILEC_SWIZZLE_NONE) return off;
    if (off->kind == LX_CONST) return lp_int(l->k, off->type, ir_swizzle_offset(b, off->i));
    int base = s->base;
    for (size_t es = tilec_dtype_size(b->dtype); es > 1; es >>= 1) base--; /* the verifier keeps it >= 0 */
    lp_kernel *k = l->k;
    lp_type t = off->type;
    lp_expr *sel = lp_binary(k, LO_BAND, lp_binary(k, LO_SHR, off, lp_int(k, t, base + s->shift)),
                             lp_int(k, t, ((int64_t)1 << s->bits) - 1));
    return lp_binary(k, LO_BXOR, off, base ? lp_binary(k, LO_SHL, sel, lp_int(k, t, base)) : sel);
}

lp_expr *dsp_region_offset(dsp_lower *l, const ir_region *r, lp_expr *flat) {
    if (r->buf->layout.kind != TILEC_LAYOUT_NONE && l->frag_at) return l->frag_at; /* a fragment: its register */
    int64_t dims[TILEC_MAX_RANK];
    lp_expr *coords[TILEC_MAX_RANK];
    int n = ir_region_shape(r, dims);
    lp_type it = dsp_index_type(r->buf->span, 0);
    if (dense(r)) return swizzled(l, r->buf, dense_offset(l, r, lp_cast(l->k, it, flat), it));
    unflatten(l, lp_cast(l->k, it, flat), dims, n, coords);
    return swizzled(l, r->buf, offset_of(l, r, coords, it));
}

lp_expr *dsp_region_offset_at(dsp_lower *l, const ir_region *r, lp_expr *const *coords) {
    lp_type it = dsp_index_type(r->buf->span, 0);
    lp_expr *c[TILEC_MAX_RANK];
    int64_t dims[TILEC_MAX_RANK];
    int n = ir_region_shape(r, dims);
    for (int d = 0; d < n; d++) c[d] = lp_cast(l->k, it, coords[d]);
    return swizzled(l, r->buf, offset_of(l, r, c, it));
}

lp_expr *dsp_reduce_src_offset(dsp_lower *l, lp_expr *s, lp_expr *r) {
    const dsp_query *q = l->q;
    const ir_region *src = &q->st->src;
    lp_type it = dsp_index_type(src->buf->span, 0);
    int64_t kept[TILEC_MAX_RANK], red[TILEC_MAX_RANK];
    int nk = 0, nr = 0;
    for (int d = 0; d < q->src_rank; d++) {
        if (q->reduced[d]) red[nr++] = q->src_dims[d];
        else kept[nk++] = q->src_dims[d];
    }
    bool trailing = true; /* the reduced axes are the innermost ones */
    for (int d = 0; d < q->src_rank; d++)
        if (!q->reduced[d] && d >= q->src_rank - nr) trailing = false;
    if (trailing && dense(src)) { /* element (s, r) is at base + s * red_len + r */
        lp_expr *flat = lp_cast(l->k, it, r);
        if (!(s->kind == LX_CONST && s->i == 0))
            flat = lp_binary(l->k, LO_ADD, lp_binary(l->k, LO_MUL, lp_cast(l->k, it, s), lp_int(l->k, it, q->red_len)), flat);
        return swizzled(l, src->buf, dense_offset(l, src, flat, it));
    }
    lp_expr *kc[TILEC_MAX_RANK], *rc[TILEC_MAX_RANK], *coords[TILEC_MAX_RANK];
    unflatten(l, lp_cast(l->k, it, s), kept, nk, kc);
    unflatten(l, lp_cast(l->k, it, r), red, nr, rc);
    for (int d = 0, i = 0, j = 0; d < q->src_rank; d++) coords[d] = q->reduced[d] ? rc[j++] : kc[i++];
    return swizzled(l, src->buf, offset_of(l, src, coords, it));
}

void dsp_batch_offsets(dsp_lower *l, lp_block *into, lp_expr *s, lp_expr *e, const int64_t *c, int B,
                       const dsp_starts *st, lp_expr **off) {
    int64_t x[64], a[64];
    bool hoist = B > 1 && B <= 64;
    for (int b = 1; b < B && hoist; b++) hoist = dsp_load_step(l->q, st, c[b], &x[b], &a[b]);
    lp_kernel *k = l->k;
    if (!hoist) {
        for (int b = 0; b < B; b++)
            off[b] = dsp_reduce_src_offset(l, s, c[b] ? lp_binary(k, LO_ADD, e, lp_int(k, e->type, c[b])) : e);
        return;
    }
    lp_expr *first = dsp_reduce_src_offset(l, s, e);
    lp_type t = first->type;
    int p = lp_reg_new(k, t, "p");
    lp_assign(k, into, p, first);
    off[0] = lp_reg(k, p);
    for (int b = 1; b < B; b++) {
        lp_expr *o = x[b] ? lp_binary(k, LO_BXOR, lp_reg(k, p), lp_int(k, t, x[b])) : lp_reg(k, p);
        off[b] = a[b] ? lp_binary(k, LO_ADD, o, lp_int(k, t, a[b])) : o;
    }
}

/* ---- reductions -------------------------------------------------------------------------------- */

/* The destination's accumulation type: the source's, or the wider one a grid reduction
 * that writes tilec_dtype_wide of its source accumulates in (the verifier allows no other). */
lp_type dsp_acc_type(const dsp_query *q) {
    if (ir_op(q->st->op)->key != IR_KEY_NONE) /* a key's is the source's (f32 logsumexp into f64 keeps f32 state) */
        return lp_op_accum_type(q->st->op, q->st->src.buf->dtype);
    return lp_op_accum_type(q->st->op, q->st->dst.buf ? q->st->dst.buf->dtype : q->st->src.buf->dtype);
}

bool dsp_small_state(const dsp_query *q) {
    lp_type at = dsp_acc_type(q);
    return ir_op(q->st->op)->key == IR_KEY_NONE && (at == LP_F32 || at == LP_I32 || at == LP_U32);
}

lp_expr *dsp_identity(dsp_lower *l) {
    lp_type t = dsp_acc_type(l->q);
    if (t == LP_F64X2 && ir_op(l->q->st->op)->key == IR_KEY_LSE) /* an f64 logsumexp's: the maximum -inf, the sum +0 */
        return lp_pair(l->k, lp_float(l->k, LP_F64, -INFINITY), lp_float(l->k, LP_F64, 0.0));
    if (t == LP_F64X2) /* var's sums: -0 and -0 (the zero identity's, below) */
        return lp_pair(l->k, lp_float(l->k, LP_F64, -0.0), lp_float(l->k, LP_F64, -0.0));
    if (t == LP_I64X2) /* a wide key's: the least i64 in both halves (the wide key comment, below) */
        return lp_pair(l->k, lp_int(l->k, LP_I64, INT64_MIN), lp_int(l->k, LP_I64, INT64_MIN));
    if (ir_op(l->q->st->op)->key == IR_KEY_PAIR) /* the bottom rank in both halves (the key comment, below) */
        return lp_int(l->k, LP_I64, INT64_MIN + ((int64_t)1 << 31));
    if (ir_op(l->q->st->op)->key == IR_KEY_LSE) /* the maximum -inf (0xff800000), the sum +0 */
        return lp_int(l->k, LP_I64, (int64_t)(UINT64_C(0xff800000) << 32));
    bool flt = lp_is_float(t);
    int64_t lowest = t == LP_I32 ? INT32_MIN : t == LP_U32 ? 0 : INT64_MIN;
    int64_t highest = t == LP_I32 ? INT32_MAX : t == LP_U32 ? (int64_t)UINT32_MAX : INT64_MAX;
    /* Under nan=ignore a NaN loses to every number, so NaN is a comparing op's identity: an
     * all-NaN slice stays NaN (as the format says), and a slice with a number gives it. */
    bool nan = flt && l->q->st->nan == TILEC_NAN_IGNORE;
    switch (ir_op(l->q->st->op)->identity) {
    case IR_IDENTITY_ZERO:
        /* -0.0, not +0.0: x + -0.0 is x for every x (-0.0 + +0.0 would be +0.0), so a fold
         * may start from the identity, or pad a tree with it, without changing a bit */
        return flt ? lp_float(l->k, t, -0.0) : lp_int(l->k, t, 0);
    case IR_IDENTITY_LOWEST: return nan ? lp_float(l->k, t, NAN) : flt ? lp_float(l->k, t, -INFINITY) : lp_int(l->k, t, lowest);
    case IR_IDENTITY_HIGHEST: return nan ? lp_float(l->k, t, NAN) : flt ? lp_float(l->k, t, INFINITY) : lp_int(l->k, t, highest);
    case IR_IDENTITY_ONE: return flt ? lp_float(l->k, t, 1.0) : lp_int(l->k, t, 1);
    }
    return NULL; /* not reached: the switch covers ir_identity (-Wswitch) */
}

/*
 * Keys (ir_key): an element folds as one i64 of two signed 32-bit halves.
 *
 * A rank orders values as max and min do (-0 below +0): an f32's bits with the others
 * flipped when the sign is set, an i32 itself, a u32 with its top bit flipped; a NaN takes
 * the top rank (nan=propagate) or the bottom one (nan=ignore), both NaN patterns, so
 * decoding needs no case for them.
 *
 * argmax / argmin (IR_KEY_INDEX): the rank (complemented for argmin) high, the index's
 * complement (2^32 - 1 - index) low, folded by an integer max: the better value, then the
 * smaller index — the first NaN under nan=propagate, index 0 of an all-NaN slice under
 * nan=ignore. No real key is the identity, the least i64.
 *
 * aminmax (IR_KEY_PAIR): the rank high and its complement low, each half folded by its own
 * max: the maximum's rank and the minimum's complemented one. The identity is the bottom
 * rank in both halves (an all-NaN slice under nan=ignore decodes from it to NaN, NaN).
 *
 * logsumexp (IR_KEY_LSE): the f32 bits of the running maximum m high, of the sum s of
 * exp(x - m) over the elements folded low (lse_merge, below).
 *
 * All in 32-bit operations but the pairing and the fold.
 *
 * Wide keys (ir_key_wide): argmax, argmin and aminmax of a 64-bit value (f64, i64) fold the
 * i64x2 of the same two halves, each 64 bits wide: the rank (an f64's bits with the others
 * flipped when the sign is set, an i64 itself; a NaN INT64_MAX or INT64_MIN as above) and,
 * for argmax / argmin, the index's complement (-1 - index) — ordered as the 128-bit
 * integer hi * 2^64 + lo, compared half by half (the better key is the one with the
 * higher rank, or the same rank and the higher complement: the smaller index); aminmax's
 * halves each by its own max. The identity is the least i64 in both halves, below every
 * real key (an index's complement is at least -2^31). A register pair, not one integer of
 * 128 bits: shuffles move its four 32-bit words, and a fold is two 64-bit compares and
 * selects, where a packed (value, index) would need 96 bits anyway.
 */
static lp_expr *i32c(dsp_lower *l, int64_t v) { return lp_int(l->k, LP_I32, v); }
static lp_expr *bin(dsp_lower *l, lp_op op, lp_expr *a, lp_expr *b) { return lp_binary(l->k, op, a, b); }
static lp_expr *key_hi(dsp_lower *l, lp_expr *key) { return lp_cast(l->k, LP_I32, bin(l, LO_SHR, key, lp_int(l->k, LP_I64, 32))); }
static lp_expr *key_lo(dsp_lower *l, lp_expr *key) { return lp_cast(l->k, LP_I32, key); } /* modulo 2^32 */
static lp_expr *key_pair(dsp_lower *l, lp_expr *hi, lp_expr *lo) {
    lp_kernel *k = l->k;
    lp_expr *high = bin(l, LO_SHL, lp_cast(k, LP_I64, hi), lp_int(k, LP_I64, 32));
    return bin(l, LO_BOR, high, lp_cast(k, LP_I64, lp_cast(k, LP_U32, lo)));
}
/* f32 bits <-> their rank (its own inverse): b ^ ((b >> 31) & 0x7fffffff) */
static lp_expr *float_order(dsp_lower *l, lp_expr *b) {
    return bin(l, LO_BXOR, b, bin(l, LO_BAND, bin(l, LO_SHR, b, i32c(l, 31)), i32c(l, INT32_MAX)));
}
static lp_type value_type(const dsp_query *q) { return lp_accum_type(q->st->src.buf->dtype); } /* f32, i32, u32 */
static lp_expr *value_rank(dsp_lower *l, lp_expr *v) {
    switch (v->type) {
    case LP_F32: return float_order(l, lp_bits(l->k, LP_I32, v));
    case LP_I32: return v;
    default: return lp_cast(l->k, LP_I32, bin(l, LO_BXOR, v, lp_int(l->k, LP_U32, (int64_t)1 << 31)));
    }
}
static lp_expr *rank_value(dsp_lower *l, lp_expr *rank, lp_type vt) {
    switch (vt) {
    case LP_F32: return lp_bits(l->k, LP_F32, float_order(l, rank));
    case LP_I32: return rank;
    default: return bin(l, LO_BXOR, lp_cast(l->k, LP_U32, rank), lp_int(l->k, LP_U32, (int64_t)1 << 31));
    }
}
static lp_expr *nan_rank(dsp_lower *l, lp_expr *v, lp_expr *rank) {
    if (v->type != LP_F32) return rank;
    return lp_select(l->k, bin(l, LO_NE, v, v), i32c(l, l->q->st->nan == TILEC_NAN_IGNORE ? INT32_MIN : INT32_MAX), rank);
}
static lp_expr *complement(dsp_lower *l, lp_expr *rank) { return bin(l, LO_BXOR, rank, i32c(l, -1)); }

static lp_expr *i64c(dsp_lower *l, int64_t v) { return lp_int(l->k, LP_I64, v); }
static bool wide(const dsp_lower *l) { return dsp_acc_type(l->q) == LP_I64X2; }
static lp_expr *wide_hi(dsp_lower *l, lp_expr *key) { return lp_part(l->k, key, 0); }
static lp_expr *wide_lo(dsp_lower *l, lp_expr *key) { return lp_part(l->k, key, 1); }
/* f64 bits <-> their rank (its own inverse), and an i64's rank (itself) */
static lp_expr *wide_order(dsp_lower *l, lp_expr *b) {
    return bin(l, LO_BXOR, b, bin(l, LO_BAND, bin(l, LO_SHR, b, i64c(l, 63)), i64c(l, INT64_MAX)));
}
static lp_expr *wide_rank(dsp_lower *l, lp_expr *v) { return v->type == LP_F64 ? wide_order(l, lp_bits(l->k, LP_I64, v)) : v; }
static lp_expr *wide_value(dsp_lower *l, lp_expr *rank, lp_type vt) {
    return vt == LP_F64 ? lp_bits(l->k, LP_F64, wide_order(l, rank)) : rank;
}
static lp_expr *wide_nan_rank(dsp_lower *l, lp_expr *v, lp_expr *rank) {
    if (v->type != LP_F64) return rank;
    return lp_select(l->k, bin(l, LO_NE, v, v), i64c(l, l->q->st->nan == TILEC_NAN_IGNORE ? INT64_MIN : INT64_MAX), rank);
}
static lp_expr *wide_complement(dsp_lower *l, lp_expr *rank) { return bin(l, LO_BXOR, rank, i64c(l, -1)); }

static lp_expr *wide_element(dsp_lower *l, lp_expr *x, lp_expr *index) {
    lp_expr *v = lp_cast(l->k, value_type(l->q), x), *rank = wide_rank(l, v);
    if (ir_op(l->q->st->op)->key == IR_KEY_PAIR)
        return lp_pair(l->k, wide_nan_rank(l, v, rank), wide_nan_rank(l, v, wide_complement(l, rank)));
    if (ir_op(l->q->st->op)->combine == LO_MIN) rank = wide_complement(l, rank); /* argmin */
    return lp_pair(l->k, wide_nan_rank(l, v, rank), wide_complement(l, lp_cast(l->k, LP_I64, index)));
}

/* The better of two wide index keys: b where it is greater as a 128-bit integer, else a. */
static lp_expr *wide_better(dsp_lower *l, lp_block *into, lp_expr *a, lp_expr *b) {
    a = held(l, into, a, "ka");
    b = held(l, into, b, "kb");
    lp_expr *ah = held(l, into, wide_hi(l, a), "ah"), *bh = held(l, into, wide_hi(l, b), "bh");
    lp_expr *up = bin(l, LO_OR, bin(l, LO_LT, ah, bh),
                      bin(l, LO_AND, bin(l, LO_EQ, ah, bh), bin(l, LO_LT, wide_lo(l, a), wide_lo(l, b))));
    return lp_select(l->k, up, b, a);
}

static lp_expr *wide_combine(dsp_lower *l, lp_block *into, lp_expr *a, lp_expr *b) {
    if (ir_op(l->q->st->op)->key == IR_KEY_INDEX) return wide_better(l, into, a, b);
    a = held(l, into, a, "ka"); /* aminmax: each half its own max */
    b = held(l, into, b, "kb");
    return lp_pair(l->k, bin(l, LO_MAX, wide_hi(l, a), wide_hi(l, b)), bin(l, LO_MAX, wide_lo(l, a), wide_lo(l, b)));
}

/*
 * logsumexp's fold: the state (m, s) stands for s * exp(m). Two merge as
 *
 *     m = max(m1, m2),  s = s_hi + s_lo * exp(m_lo - m_hi)
 *
 * where hi is the state of the larger maximum: one exponential per merge, of an argument
 * <= 0, so nothing overflows for any finite input; many merge as m = max(m_i), s = the sum
 * of s_i * exp(m_i - m) (lse_fold). An element x is the state (x, 1), the identity
 * (-inf, +0). A state's sum only matters while its maximum is finite (the result is an
 * infinite or NaN maximum itself, and a -inf one's sum is scaled by exp(-inf) = 0), and
 * then it is >= 1: its maximum's own term is exp(0) = 1 exactly.
 *
 * The exponential is written here in the loop IR's correctly rounded operations, not left
 * to a math library: CUDA's expf, HIP's and the C library's differ in their last bits, and
 * the results must not.
 *
 *     exp(d) = 2^t, t = d * log2(e), clamped to t >= -125 (NaN too: its state's maximum is
 *     NaN already), t = k + f with k = round(t) and |f| <= 1/2: 2^f by its Taylor series to
 *     degree 7 in fused multiply-adds (error below 2^-27), 2^k as a float's exponent
 *
 * A term below 2^-125 thus counts as about 2^-125, which changes no f32 sum that holds 1,
 * and nothing on the way is subnormal (where GPUs may flush).
 */
enum { LSE_DEGREE = 7 };
static const double LN2 = DSP_LN2, LOG2E = DSP_LOG2E, SQRT2 = 0x1.6a09e667f3bcdp0;
static const double ROUNDER = DSP_ROUNDER32;
static lp_expr *f32c(dsp_lower *l, double v) { return lp_float(l->k, LP_F32, v); }
static lp_expr *f64c(dsp_lower *l, double v) { return lp_float(l->k, LP_F64, v); }
/* An f64 logsumexp's state is the f64x2 (m, s) itself (lse_wide); the others' two f32s in
 * an i64. fc: a constant of the state's float type. */
static bool lse_wide(dsp_lower *l) { return dsp_acc_type(l->q) == LP_F64X2; }
static lp_expr *fc(dsp_lower *l, double v) { return lse_wide(l) ? f64c(l, v) : f32c(l, v); }
static lp_expr *lse_m(dsp_lower *l, lp_expr *key) {
    return lse_wide(l) ? lp_part(l->k, key, 0) : lp_bits(l->k, LP_F32, key_hi(l, key));
}
static lp_expr *lse_s(dsp_lower *l, lp_expr *key) {
    return lse_wide(l) ? lp_part(l->k, key, 1) : lp_bits(l->k, LP_F32, key_lo(l, key));
}
static lp_expr *lse_key(dsp_lower *l, lp_expr *m, lp_expr *s) {
    if (lse_wide(l)) return lp_pair(l->k, m, s);
    return key_pair(l, lp_bits(l->k, LP_I32, m), lp_bits(l->k, LP_I32, s));
}

/* exp(d) for d <= 0 (above), in the state's float type. An f64 logsumexp's (lse_wide) has
 * f64's constants: t clamped to >= -1021 (2^-1021 changes no f64 sum that holds 1, and
 * nothing on the way is subnormal), 2^f to degree 13 (error below 2^-57), k from the bits
 * of r = t + 1.5 * 2^52, 0x4338000000000000 + k: bits << 52 modulo 2^64 is k << 52; an
 * f32's, t >= -125, degree 7, r's bits 0x4b400000 + k: bits << 23 modulo 2^32 is k << 23.
 * 2^f * 2^k is that added to 2^f's bits (below). */
enum { LSE64_DEGREE = 13 };

/* e^f = 1 + f + f^2 (c2 + … + c6 f^4) on |f| <= 1.0005 ln2 / 2, a minimax fit of the
 * relative error by Remez's algorithm (3.1e-9): f32 exp maps (v_map.c) and, scaled by
 * ln2^n into 2^f, an f32 logsumexp state's exponential (lse_exp32). */
const double dsp_exp_minimax[7] = {1, 1, 0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558f2p-5, 0x1.123a2p-7, 0x1.6a23dp-10};

/* An f32 state's exact exponential, e^d for d <= 0: d clamped at LSE_DMIN (NaN too: its
 * state's maximum is NaN already), so k >= -125; k = round(d * log2(e)) from the bits of
 * r = fma(d, log2(e), 1.5 * 2^23) (the exact product rounded once, in the sum); the rest
 * f = fma(d, log2(e), -k), |f| <= 1/2, rounded once; 2^f = 1 + f (a1 + f (a2 + … a6 f^5)),
 * the minimax fit of e^g's relative error on |g| <= 1.0005 ln2 / 2 that maps use (v_map.c),
 * its coefficients times ln2^n: relative error 4.2e-9 in exact arithmetic (the degree-7
 * Taylor series, seven fused multiply-adds, was within 7.5e-9); 2^k added to p's exponent
 * field. Fourteen operations from d. Against the exact e^d: within 1 ulp for d in [-1, 0],
 * and further out |d| * 1.3e-8 more (log2(e) rounded to f32), 2.7 ulp at d = -9.7 and
 * about 20 near the clamp, where e^d is below 2^-124 of the state's largest term (the old
 * sequence, t = d * log2(e) rounded first, reached 63): at most about 5e-9 of the largest
 * term in any sum. */
static const float LSE_DMIN = -86.64f; /* LSE_DMIN * log2(e) = -124.99…: k >= -125 */
static lp_expr *lse_exp32(dsp_lower *l, lp_block *into, lp_expr *d) {
    double a[7], ln2n = 1; /* dsp_exp_minimax[n] * ln2^n, rounded to f32 */
    for (int n = 0; n < 7; n++, ln2n *= LN2) a[n] = (float)(dsp_exp_minimax[n] * ln2n);
    lp_kernel *k = l->k;
    lp_expr *dc = held(l, into, lp_minmax(k, LO_MAX, TILEC_NAN_IGNORE, d, f32c(l, LSE_DMIN)), "dc");
    lp_expr *r = held(l, into, lp_fma(k, dc, f32c(l, LOG2E), f32c(l, ROUNDER)), "r");
    lp_expr *j = held(l, into, bin(l, LO_SUB, r, f32c(l, ROUNDER)), "j"); /* k, exact */
    lp_expr *f = held(l, into, lp_fma(k, dc, f32c(l, LOG2E), lp_unary(k, LO_NEG, j)), "f");
    lp_expr *p = f32c(l, a[6]);
    for (int n = 5; n >= 0; n--) p = lp_fma(k, p, f, f32c(l, a[n]));
    /* p * 2^k: p is in [0.7, 1.42] and -125 <= k <= 0, so adding k << 23 (r's bits shifted:
     * the rounder's part leaves the word) to p's bits gives the exact product */
    lp_expr *shifted = bin(l, LO_SHL, lp_bits(k, LP_I32, r), lp_int(k, LP_I32, 23));
    return held(l, into, lp_bits(k, LP_F32, lp_wrapping(k, LO_ADD, lp_bits(k, LP_I32, held(l, into, p, "p2f")), shifted)), "e");
}

static lp_expr *lse_exp(dsp_lower *l, lp_block *into, lp_expr *d) {
    lp_kernel *k = l->k;
    bool wide = lse_wide(l);
    lp_type bits = wide ? LP_I64 : LP_I32, fl = wide ? LP_F64 : LP_F32;
    const double rounder = wide ? DSP_ROUNDER64 : ROUNDER;
    const int degree = wide ? LSE64_DEGREE : LSE_DEGREE, mant = wide ? 52 : 23;
    if (!wide && !(k->tile && k->tile->math == TILEC_MATH_APPROX)) return lse_exp32(l, into, d);
    lp_expr *t = held(l, into, lp_minmax(k, LO_MAX, TILEC_NAN_IGNORE, bin(l, LO_MUL, d, fc(l, LOG2E)), fc(l, wide ? -1021 : -125)), "t");
    if (!wide) /* math=approx: the hardware's 2^t; t >= -125 keeps it normal */
        return held(l, into, lp_unary(k, LO_EXP2A, t), "e");
    lp_expr *r = held(l, into, bin(l, LO_ADD, t, fc(l, rounder)), "r");
    lp_expr *f = held(l, into, bin(l, LO_SUB, t, bin(l, LO_SUB, r, fc(l, rounder))), "f"); /* exact */
    double c[LSE64_DEGREE + 1] = {1};
    for (int n = 1; n <= degree; n++) c[n] = c[n - 1] * LN2 / n; /* ln(2)^n / n! */
    lp_expr *p = fc(l, c[degree]);
    for (int n = degree - 1; n >= 0; n--) p = lp_fma(k, p, f, fc(l, c[n]));
    /* p * 2^k as an integer add of k to p's exponent field: r's bits are those of the
     * rounder's plus k, and shifted by mant the rounder's part leaves the word, so
     * bits(r) << mant is k << mant; p is in [0.7, 1.42] and -125 <= k <= 0 (-1021 for f64),
     * so the result is normal and equals the product p * 2^k exactly: the bits a multiply
     * by 2^k gives, one instruction fewer */
    lp_expr *shifted = bin(l, LO_SHL, lp_bits(k, bits, r), lp_int(k, bits, mant));
    return held(l, into, lp_bits(k, fl, lp_wrapping(k, LO_ADD, lp_bits(k, bits, held(l, into, p, "p2f")), shifted)), "e");
}

/* The merge of two states (above), as statements into `into`; the merged key. */
static lp_expr *lse_merge(dsp_lower *l, lp_block *into, lp_expr *a, lp_expr *b) {
    lp_kernel *k = l->k;
    a = held(l, into, a, "ka");
    b = held(l, into, b, "kb");
    lp_expr *ma = held(l, into, lse_m(l, a), "m"), *mb = held(l, into, lse_m(l, b), "m");
    lp_expr *sa = lse_s(l, a), *sb = lse_s(l, b);
    lp_expr *hi = held(l, into, bin(l, LO_LE, mb, ma), "hi"); /* a's maximum is the larger */
    lp_expr *d = bin(l, LO_SUB, lp_select(k, hi, mb, ma), lp_select(k, hi, ma, mb));
    lp_expr *e = lse_exp(l, into, held(l, into, d, "d"));
    lp_expr *s = lp_fma(k, lp_select(k, hi, sb, sa), e, lp_select(k, hi, sa, sb));
    return lse_key(l, lp_minmax(k, LO_MAX, TILEC_NAN_PROPAGATE, ma, mb), s);
}

/* n states merged into one, many at once: the maximum, then the sum of s_i * exp(m_i - m)
 * in index order — one exponential a state and no rescaling of a running sum. State i is
 * the register first + i * step (m NULL), or the values m[i], s[i] (dsp_lse_fold_values). */
static void lse_fold_states(dsp_lower *l, lp_block *into, int first, int step, lp_expr *const *ms, lp_expr *const *ss,
                            int n, int dst) {
    lp_kernel *k = l->k;
#define M_(i) (ms ? ms[i] : lse_m(l, lp_reg(k, first + (i) * step)))
#define S_(i) (ss ? ss[i] : lse_s(l, lp_reg(k, first + (i) * step)))
    lp_expr *m = M_(0);
    for (int i = 1; i < n; i++) m = lp_minmax(k, LO_MAX, TILEC_NAN_PROPAGATE, m, M_(i));
    m = held(l, into, m, "m");
    lp_expr *s = fc(l, 0);
    for (int i = 0; i < n; i++) {
        lp_expr *e = lse_exp(l, into, held(l, into, bin(l, LO_SUB, M_(i), m), "d"));
        s = held(l, into, lp_fma(k, S_(i), e, s), "s");
    }
#undef M_
#undef S_
    lp_assign(k, into, dst, lse_key(l, m, s));
}

/* The registers first, first + step, … (n of them) merged into first. */
static void lse_fold(dsp_lower *l, lp_block *into, int first, int n, int step) {
    lse_fold_states(l, into, first, step, NULL, NULL, n, first);
}

lp_type dsp_lse_value_type(const dsp_query *q) { return dsp_acc_type(q) == LP_F64X2 ? LP_F64 : LP_F32; }

void dsp_lse_fold_values(dsp_lower *l, lp_block *into, int dst, int n, lp_expr *const *m, lp_expr *const *s) {
    lse_fold_states(l, into, 0, 0, m, s, n, dst);
}

void dsp_lse_fold_elements(dsp_lower *l, lp_block *into, int acc, int n, lp_expr *const *x) {
    lp_expr *ms[LSE_FOLD_MAX + 1], *ss[LSE_FOLD_MAX + 1];
    lp_expr *state = lp_reg(l->k, acc);
    ms[0] = lse_m(l, state);
    ss[0] = lse_s(l, state);
    for (int i = 0; i < n; i++) {
        ms[i + 1] = lp_cast(l->k, dsp_lse_value_type(l->q), x[i]);
        ss[i + 1] = fc(l, 1);
    }
    lse_fold_states(l, into, 0, 0, ms, ss, n + 1, acc);
}

bool dsp_folds_many(const dsp_query *q) { return ir_op(q->st->op)->key == IR_KEY_LSE; }

void dsp_fold_regs(dsp_lower *l, lp_block *into, int first, int n, int step) {
    if (n > 1) lse_fold(l, into, first, n, step); /* the one op with such a fold (dsp_folds_many) */
}

/* ln(s) for s >= 1 (a state's sum with an element in it), in f64: s = 2^e * f with f in
 * [sqrt(1/2), sqrt(2)), ln(f) = 2 atanh(u), u = (f - 1) / (f + 1), |u| < 0.172, by its
 * series to u^21 (error below 2^-60). */
enum { LSE_LOG_TERMS = 11 };
static lp_expr *lse_log(dsp_lower *l, lp_block *into, lp_expr *s) {
    lp_kernel *k = l->k;
    lp_expr *ex, *fd;
    if (lse_wide(l)) { /* an f64 sum: its 52 bits of fraction and 11 of exponent */
        lp_expr *bits = held(l, into, lp_bits(k, LP_I64, s), "sb");
        lp_expr *mant = lp_bits(k, LP_F64, bin(l, LO_BOR, bin(l, LO_BAND, bits, lp_int(k, LP_I64, INT64_C(0xfffffffffffff))),
                                               lp_int(k, LP_I64, INT64_C(0x3ff0000000000000))));
        lp_expr *f = held(l, into, mant, "fm"); /* [1, 2) */
        lp_expr *big = held(l, into, bin(l, LO_LT, f64c(l, SQRT2), f), "big");
        ex = bin(l, LO_SUB, bin(l, LO_SHR, bits, lp_int(k, LP_I64, 52)),
                 lp_select(k, big, lp_int(k, LP_I64, 1022), lp_int(k, LP_I64, 1023)));
        fd = held(l, into, lp_select(k, big, bin(l, LO_MUL, f, f64c(l, 0.5)), f), "fd");
    } else {
        lp_expr *bits = held(l, into, lp_bits(k, LP_I32, s), "sb");
        lp_expr *mant = lp_bits(k, LP_F32, bin(l, LO_BOR, bin(l, LO_BAND, bits, i32c(l, 0x7fffff)), i32c(l, 0x3f800000)));
        lp_expr *f = held(l, into, mant, "fm"); /* [1, 2) */
        lp_expr *big = held(l, into, bin(l, LO_LT, f32c(l, SQRT2), f), "big");
        ex = bin(l, LO_SUB, bin(l, LO_SHR, bits, i32c(l, 23)), lp_select(k, big, i32c(l, 126), i32c(l, 127)));
        fd = held(l, into, lp_cast(k, LP_F64, lp_select(k, big, bin(l, LO_MUL, f, f32c(l, 0.5)), f)), "fd");
    }
    lp_expr *u = held(l, into, bin(l, LO_DIV, bin(l, LO_SUB, fd, f64c(l, 1)), bin(l, LO_ADD, fd, f64c(l, 1))), "u");
    lp_expr *w = held(l, into, bin(l, LO_MUL, u, u), "w");
    lp_expr *p = f64c(l, 1.0 / (2 * LSE_LOG_TERMS - 1));
    for (int j = LSE_LOG_TERMS - 2; j >= 0; j--) p = bin(l, LO_ADD, bin(l, LO_MUL, p, w), f64c(l, 1.0 / (2 * j + 1)));
    lp_expr *lnf = bin(l, LO_MUL, bin(l, LO_MUL, f64c(l, 2), u), p);
    return bin(l, LO_ADD, bin(l, LO_MUL, lp_cast(k, LP_F64, ex), f64c(l, LN2)), lnf);
}

/* logsumexp's result, m + ln(s), in f64 (an infinite or NaN maximum is the result). */
static lp_expr *lse_result(dsp_lower *l, lp_block *into, lp_expr *key) {
    lp_kernel *k = l->k;
    lp_expr *m = held(l, into, lp_cast(k, LP_F64, lse_m(l, key)), "mx");
    lp_expr *finite = bin(l, LO_LT, lp_unary(k, LO_NEG, f64c(l, INFINITY)), m);
    finite = held(l, into, bin(l, LO_AND, finite, bin(l, LO_LT, m, f64c(l, INFINITY))), "fin");
    lp_expr *s = held(l, into, lp_select(k, finite, lse_s(l, key), fc(l, 1)), "sum");
    return lp_select(k, finite, bin(l, LO_ADD, m, lse_log(l, into, s)), m);
}

bool dsp_ranks(const dsp_query *q) { return ir_op(q->st->op)->key == IR_KEY_INDEX && dsp_acc_type(q) != LP_I64X2; }

lp_expr *dsp_element_rank(dsp_lower *l, lp_expr *x) {
    lp_expr *v = lp_cast(l->k, value_type(l->q), x), *rank = value_rank(l, v);
    if (ir_op(l->q->st->op)->combine == LO_MIN) rank = complement(l, rank); /* argmin */
    return nan_rank(l, v, rank);
}

lp_expr *dsp_rank_key(dsp_lower *l, lp_expr *rank, lp_expr *index) {
    return key_pair(l, rank, bin(l, LO_BXOR, lp_cast(l->k, LP_U32, index), lp_int(l->k, LP_U32, UINT32_MAX)));
}

static lp_expr *element_key(dsp_lower *l, lp_expr *x, lp_expr *index) {
    const dsp_query *q = l->q;
    if (wide(l)) return wide_element(l, x, index);
    if (ir_op(q->st->op)->key == IR_KEY_LSE) return lse_key(l, lp_cast(l->k, lse_wide(l) ? LP_F64 : LP_F32, x), fc(l, 1));
    if (ir_op(q->st->op)->key == IR_KEY_INDEX) return dsp_rank_key(l, dsp_element_rank(l, x), index);
    lp_expr *v = lp_cast(l->k, value_type(q), x), *rank = value_rank(l, v); /* aminmax */
    return key_pair(l, nan_rank(l, v, rank), nan_rank(l, v, complement(l, rank)));
}

lp_expr *dsp_combine(dsp_lower *l, lp_block *into, lp_expr *a, lp_expr *b) {
    const ir_stmt *st = l->q->st;
    const ir_op_info *op = ir_op(st->op);
    if (op->key != IR_KEY_NONE && wide(l)) return wide_combine(l, into, a, b);
    switch (op->key) {
    case IR_KEY_LSE: return lse_merge(l, into, a, b);
    case IR_KEY_INDEX: return lp_binary(l->k, LO_MAX, a, b); /* the better key: a plain integer max */
    case IR_KEY_PAIR: /* each half its own max */
        return key_pair(l, lp_minmax(l->k, LO_MAX, TILEC_NAN_PROPAGATE, key_hi(l, a), key_hi(l, b)),
                        lp_minmax(l->k, LO_MAX, TILEC_NAN_PROPAGATE, key_lo(l, a), key_lo(l, b)));
    case IR_KEY_NONE: break;
    }
    return op->compares ? lp_minmax(l->k, op->combine, st->nan, a, b) : lp_wrapping(l->k, op->combine, a, b);
}

/* combine(a, b) where every element folded into a comes before every one folded into b
 * in index order, and b holds a real element wherever a does (a's are a prefix): for an
 * index key, b is better only with a higher rank, which the high halves say alone. */
lp_expr *dsp_combine_ordered(dsp_lower *l, lp_block *into, lp_expr *a, lp_expr *b) {
    if (ir_op(l->q->st->op)->key != IR_KEY_INDEX) return dsp_combine(l, into, a, b);
    if (wide(l)) {
        a = held(l, into, a, "ka");
        b = held(l, into, b, "kb");
        return lp_select(l->k, lp_binary(l->k, LO_LT, wide_hi(l, a), wide_hi(l, b)), b, a);
    }
    return lp_select(l->k, lp_binary(l->k, LO_LT, key_hi(l, a), key_hi(l, b)), b, a);
}

/*
 * Variance (var, std: IR_LIFT_SHIFT). Each element x of a slice folds as the f64x2
 * (d, d * d), d = x - x0, where x0 is one element of the slice that every partial result
 * of its output shares (dsp_shift: the first one a lowering can name, loaded once); the
 * fold adds them part by part, so the state is the shifted sums S1 = sum d and
 * S2 = sum d^2, in f64, and any order or tree of additions merges them. The result is
 *
 *     M2 = max(S2 - S1 * q, +0), q = S1 * (1/n)  (one fused multiply-add),
 *     var = M2 * (1 / max(n - c, 0))
 *
 * and std its root. Since x0 is one of the elements, S2 = M2 + n (mean - x0)^2 is at most
 * (n + 1) M2: the cancellation costs at most log2(n + 1) of f64's 53 bits, and f16, bf16
 * and f32 data of any spread (1e6 plus noise of 1, say) keep far more than their own
 * precision. A NaN or an infinity anywhere makes a sum NaN or infinite and M2 NaN.
 */
lp_expr *dsp_shift(dsp_lower *l, lp_block *into, lp_expr *offset) {
    if (ir_op(l->q->st->op)->lift != IR_LIFT_SHIFT) return NULL;
    lp_buf *src = lp_buf_for(l->k, l->q->st->src.buf);
    int r = lp_reg_new(l->k, LP_F64, "x0");
    lp_assign(l->k, into, r, lp_cast(l->k, LP_F64, lp_load(l->k, src, offset)));
    return lp_reg(l->k, r);
}

lp_expr *dsp_element(dsp_lower *l, lp_expr *x, lp_expr *index, lp_expr *shift) {
    if (ir_op(l->q->st->op)->lift == IR_LIFT_KEY) return element_key(l, x, index);
    if (ir_op(l->q->st->op)->lift == IR_LIFT_SHIFT) { /* (d, d * d), the square rounded on its own */
        lp_expr *d = bin(l, LO_SUB, lp_cast(l->k, LP_F64, x), shift);
        return lp_pair(l->k, d, bin(l, LO_MUL, d, d));
    }
    lp_expr *v = lp_cast(l->k, dsp_acc_type(l->q), x);
    switch (ir_op(l->q->st->op)->lift) {
    case IR_LIFT_NONE:
    case IR_LIFT_KEY:
    case IR_LIFT_SHIFT: return v;
    case IR_LIFT_SQUARE: return lp_wrapping(l->k, LO_MUL, v, v);
    }
    return v; /* not reached: the switch covers ir_lift (-Wswitch) */
}

/* Stores the value of rank to region r at output s (a NaN as the type's default quiet one,
 * not converted: GPUs and CPUs convert NaNs differently). */
static void store_rank(dsp_lower *l, lp_block *into, const ir_region *r, lp_expr *s, lp_expr *rank) {
    lp_kernel *k = l->k;
    lp_buf *b = lp_buf_for(k, r->buf);
    lp_type vt = value_type(l->q);
    lp_expr *out;
    if (vt == LP_F64 || vt == LP_I64) { /* a wide key's rank */
        lp_expr *v = held(l, into, wide_value(l, rank, vt), "val");
        out = vt == LP_F64 ? quieted(l, v, v) : v;
    } else if (vt == LP_F32) {
        lp_expr *v = held(l, into, rank_value(l, rank, vt), "val");
        out = quieted(l, v, lp_cast(k, b->type, v));
    } else {
        out = lp_cast(k, b->type, rank_value(l, rank, vt));
    }
    lp_store(k, into, b, dsp_region_offset(l, r, s), out);
}

/* Stores a result computed in f64 from a state of another type (logsumexp's, var's) to
 * dst at output s: rounded once to f32 or f64, through f32 to f16 and bf16, as the
 * emitters narrow. */
static void store_wide(dsp_lower *l, lp_block *into, lp_expr *s, lp_expr *result) {
    lp_kernel *k = l->k;
    const ir_stmt *st = l->q->st;
    lp_buf *b = lp_buf_for(k, st->dst.buf);
    lp_expr *v = held(l, into, result, "res");
    lp_store(k, into, b, dsp_region_offset(l, &st->dst, s),
             quieted(l, v, b->type == LP_F64 ? v : lp_cast(k, b->type, lp_cast(k, LP_F32, v))));
}

/* Stores a key's two results at output s: argmax / argmin's value to dst and index to
 * dst2, aminmax's minimum to dst and maximum to dst2. */
static void store_key(dsp_lower *l, lp_block *into, lp_expr *s, lp_expr *key) {
    lp_kernel *k = l->k;
    const ir_stmt *st = l->q->st;
    key = held(l, into, key, "key"); /* read twice */
    if (ir_op(st->op)->key == IR_KEY_LSE) {
        if (st->accum) { /* the old value folded first, as one more element (ops.c, accum_element) */
            lp_buf *b = lp_buf_for(k, st->dst.buf);
            lp_expr *old = lp_load(k, b, dsp_region_offset(l, &st->dst, s));
            key = held(l, into, lse_merge(l, into, element_key(l, old, NULL), key), "key");
        }
        store_wide(l, into, s, lse_result(l, into, key));
        return;
    }
    if (wide(l)) {
        if (ir_op(st->op)->key == IR_KEY_PAIR) {
            store_rank(l, into, &st->dst, s, wide_complement(l, wide_lo(l, key)));
            store_rank(l, into, &st->dst2, s, wide_hi(l, key));
            return;
        }
        lp_expr *rank = wide_hi(l, key);
        if (ir_op(st->op)->combine == LO_MIN) rank = wide_complement(l, rank); /* argmin */
        store_rank(l, into, &st->dst, s, rank);
        lp_buf *b2 = lp_buf_for(k, st->dst2.buf);
        lp_store(k, into, b2, dsp_region_offset(l, &st->dst2, s), lp_cast(k, b2->type, wide_complement(l, wide_lo(l, key))));
        return;
    }
    if (ir_op(st->op)->key == IR_KEY_PAIR) {
        store_rank(l, into, &st->dst, s, complement(l, key_lo(l, key)));
        store_rank(l, into, &st->dst2, s, key_hi(l, key));
        return;
    }
    lp_expr *rank = key_hi(l, key), *index = bin(l, LO_BXOR, lp_cast(k, LP_U32, key), lp_int(k, LP_U32, UINT32_MAX));
    if (ir_op(st->op)->combine == LO_MIN) rank = complement(l, rank); /* argmin */
    store_rank(l, into, &st->dst, s, rank);
    lp_buf *b2 = lp_buf_for(k, st->dst2.buf);
    lp_store(k, into, b2, dsp_region_offset(l, &st->dst2, s), lp_cast(k, b2->type, index));
}

/* The count of elements folded into an output: red_len of each lane's own, times the
 * lanes, for a local source (a fragment's: red_len, its one tile's). */
static lp_expr *count(dsp_lower *l) {
    const dsp_query *q = l->q;
    if (l->count) return l->count;
    bool lanes = q->st->src.buf->space == TILEC_SPACE_LOCAL && q->st->src.buf->layout.kind == TILEC_LAYOUT_NONE &&
                 q->st->exec.scope != TILEC_SCOPE_THREAD;
    return lanes ? lp_binary(l->k, LO_MUL, dsp_inst_size(l), dsp_i32(l, q->red_len)) : lp_int(l->k, LP_I64, q->red_len);
}

/* var's (or std's) result from the shifted sums, in f64 ("Variance", above). The count n
 * is the slice's (its source is never a warp's registers: the verifier), so both divisions
 * are products by reciprocals rounded here once, 1/n and 1/max(n - c, 0) (+inf for 0: then
 * +inf or NaN, as a quotient by 0): two f64 products where divisions would cost each
 * output a long sequence (on the H200 the bytes/s of either are within a run's noise). */
static lp_expr *var_result(dsp_lower *l, lp_block *into, lp_expr *sums) {
    lp_kernel *k = l->k;
    double n = (double)l->q->red_len, div = n - (double)l->q->st->correction;
    lp_expr *inv_n = f64c(l, 1 / n), *inv_div = f64c(l, div > 0 ? 1 / div : INFINITY);
    if (l->count) { /* a count known on the device: the same reciprocals, rounded there */
        lp_expr *nf = held(l, into, lp_cast(k, LP_F64, l->count), "n");
        lp_expr *d = held(l, into, bin(l, LO_SUB, nf, f64c(l, (double)l->q->st->correction)), "dv");
        inv_n = bin(l, LO_DIV, f64c(l, 1), nf);
        inv_div = lp_select(k, bin(l, LO_LT, f64c(l, 0), d), bin(l, LO_DIV, f64c(l, 1), d), f64c(l, INFINITY));
    }
    sums = held(l, into, sums, "sums");
    lp_expr *s1 = lp_part(k, sums, 0), *s2 = lp_part(k, sums, 1);
    lp_expr *q = held(l, into, bin(l, LO_MUL, s1, inv_n), "q"); /* the mean's offset from x0 */
    lp_expr *m2 = lp_minmax(k, LO_MAX, TILEC_NAN_PROPAGATE, lp_fma(k, lp_unary(k, LO_NEG, s1), q, s2), f64c(l, 0));
    lp_expr *v = held(l, into, bin(l, LO_MUL, held(l, into, m2, "m2"), inv_div), "var");
    return ir_op(l->q->st->op)->finish == IR_FINISH_STD ? lp_unary(k, LO_SQRT, v) : v;
}

/* The folded value as the op's result, in the accumulation type. */
static lp_expr *finish(dsp_lower *l, lp_expr *v) {
    switch (ir_op(l->q->st->op)->finish) {
    case IR_FINISH_NONE: return v;
    case IR_FINISH_MEAN: return lp_binary(l->k, LO_DIV, v, lp_cast(l->k, v->type, count(l)));
    case IR_FINISH_SQRT: return lp_unary(l->k, LO_SQRT, v);
    case IR_FINISH_KEY: /* store_key's */
    case IR_FINISH_VAR: /* store_wide's */
    case IR_FINISH_STD: return v;
    }
    return v; /* not reached: the switch covers ir_finish (-Wswitch) */
}

void dsp_store_output(dsp_lower *l, lp_block *into, lp_expr *s, lp_expr *acc) {
    if (ir_op(l->q->st->op)->finish == IR_FINISH_KEY) {
        store_key(l, into, s, acc);
        return;
    }
    if (ir_op(l->q->st->op)->lift == IR_LIFT_SHIFT) { /* (the verifier refuses accum) */
        store_wide(l, into, s, var_result(l, into, acc));
        return;
    }
    const ir_region *dst = &l->q->st->dst;
    lp_buf *b = lp_buf_for(l->k, dst->buf);
    lp_expr *off = dsp_region_offset(l, dst, s);
    lp_expr *v = acc;
    if (l->q->st->accum) v = dsp_combine(l, into, lp_cast(l->k, acc->type, lp_load(l->k, b, off)), acc);
    v = finish(l, v); /* (the verifier refuses accum for an op with a finish) */
    lp_type t = b ? b->type : acc->type;
    /* a NaN is stored as the type's default quiet NaN (quieted) */
    bool quiet = lp_is_float(acc->type) && l->q->st->exec.scope == TILEC_SCOPE_GRID;
    if (quiet) v = held(l, into, v, "res");
    lp_expr *out = lp_cast(l->k, t, v);
    lp_store(l->k, into, b, off, quiet ? quieted(l, v, out) : out);
}

void dsp_accumulate(dsp_lower *l, lp_block *into, int acc, lp_expr *s, lp_expr *first, lp_expr *stride) {
    lp_kernel *k = l->k;
    lp_type it = dsp_index_type(l->q->red_len, dsp_lane_step(l, stride));
    lp_expr *shift = dsp_shift(l, into, dsp_reduce_src_offset(l, s, lp_int(k, it, 0))); /* before the loop */
    int r = lp_reg_new(k, it, "r");
    lp_stmt *loop = lp_for(k, into, r, lp_cast(k, it, first), lp_int(k, it, l->q->red_len), lp_cast(k, it, stride));
    lp_buf *src = lp_buf_for(k, l->q->st->src.buf);
    lp_expr *x = dsp_element(l, lp_load(k, src, dsp_reduce_src_offset(l, s, lp_reg(k, r))), lp_reg(k, r), shift);
    lp_assign(k, &loop->body, acc, dsp_combine(l, &loop->body, lp_reg(k, acc), x));
}

/* logsumexp's butterfly: the lanes' maximum first, then each lane's sum rescaled to it
 * (one exponential), then the sums: the same bits in every lane, as a sum's butterfly. */
static void lse_xor_tree(dsp_lower *l, lp_block *into, int acc, const int *masks, int n, int width) {
    lp_kernel *k = l->k;
    lp_type ft = lse_wide(l) ? LP_F64 : LP_F32;
    int m = lp_reg_new(k, ft, "m"), s = lp_reg_new(k, ft, "s"), other = lp_reg_new(k, ft, "t");
    lp_assign(k, into, m, lse_m(l, lp_reg(k, acc)));
    for (int i = 0; i < n; i++) {
        lp_shfl(k, into, other, m, masks[i], width);
        lp_assign(k, into, m, lp_minmax(k, LO_MAX, TILEC_NAN_PROPAGATE, lp_reg(k, m), lp_reg(k, other)));
    }
    lp_expr *e = lse_exp(l, into, held(l, into, bin(l, LO_SUB, lse_m(l, lp_reg(k, acc)), lp_reg(k, m)), "d"));
    lp_assign(k, into, s, bin(l, LO_MUL, lse_s(l, lp_reg(k, acc)), e));
    for (int i = 0; i < n; i++) {
        lp_shfl(k, into, other, s, masks[i], width);
        lp_assign(k, into, s, bin(l, LO_ADD, lp_reg(k, s), lp_reg(k, other)));
    }
    lp_assign(k, into, acc, lse_key(l, lp_reg(k, m), lp_reg(k, s)));
}

void dsp_load_run(dsp_lower *l, lp_block *into, const lp_buf *src, lp_expr *off, int first, int vec, bool scalar) {
    lp_kernel *k = l->k;
    if (vec > 1 && !scalar) {
        lp_vload(k, into, first, vec, src, off);
        return;
    }
    for (int j = 0; j < vec; j++)
        lp_assign(k, into, first + j, lp_load(k, src, j ? lp_binary(k, LO_ADD, off, lp_int(k, off->type, j)) : off));
}

void dsp_merge_accs(dsp_lower *l, lp_block *into, int acc, int n, int width) {
    lp_kernel *k = l->k;
    for (int h = n / 2; h >= 1; h /= 2)
        for (int i = 0; i < h; i++)
            for (int j = 0; j < width; j++) {
                int a = acc + i * width + j, b = acc + (i + h) * width + j;
                lp_assign(k, into, a, dsp_combine(l, into, lp_reg(k, a), lp_reg(k, b)));
            }
}

void dsp_xor_masks(dsp_lower *l, lp_block *into, int acc, const int *masks, int n, int width) {
    lp_kernel *k = l->k;
    if (n < 1) return; /* nothing to exchange (and no register left unused) */
    if (ir_op(l->q->st->op)->key == IR_KEY_LSE) {
        lse_xor_tree(l, into, acc, masks, n, width);
        return;
    }
    int other = lp_reg_new(k, k->regs[acc].type, "t");
    for (int i = 0; i < n; i++) {
        lp_shfl(k, into, other, acc, masks[i], width);
        lp_assign(k, into, acc, dsp_combine(l, into, lp_reg(k, acc), lp_reg(k, other)));
    }
}

void dsp_xor_tree(dsp_lower *l, lp_block *into, int acc, int width) {
    int masks[8], n = 0;
    for (int m = 1; m < width && n < 8; m <<= 1) masks[n++] = m;
    dsp_xor_masks(l, into, acc, masks, n, width);
}

/* ---- shared predicates ------------------------------------------------------------------------ */

bool dsp_pred_shared_or_global(const dsp_query *q, char *why, size_t n) {
    const ir_region *r[2] = {&q->st->dst, &q->st->src};
    for (int i = 0; i < 2; i++)
        if (r[i]->buf && r[i]->buf->space == TILEC_SPACE_LOCAL) {
            snprintf(why, n, "%s '%s' is local; this variant reads and writes shared or global memory",
                     i ? "source" : "destination", r[i]->buf->name);
            return false;
        }
    return true;
}

bool dsp_pred_not_thread_scope(const dsp_query *q, char *why, size_t n) {
    if (q->st->exec.scope != TILEC_SCOPE_THREAD) return true;
    snprintf(why, n, "thread scope has one thread: there is nothing to share the work with");
    return false;
}

bool dsp_pred_scope_on_target(const dsp_query *q, char *why, size_t n) {
    if (q->st->exec.scope == TILEC_SCOPE_WARPGROUP && !ir_target(q->target->backend)->warpgroup) {
        snprintf(why, n, "warpgroup scope needs a barrier of 128 threads, which %s does not have",
                 ir_target(q->target->backend)->label);
        return false;
    }
    if (q->st->exec.scope == TILEC_SCOPE_WARPGROUP && q->ws != 32) {
        snprintf(why, n, "warpgroup scope needs warps of 32 threads (this target's are %d)", q->ws);
        return false;
    }
    return true;
}
