/*
 * ref.c — the CPU reference: runs a tile kernel statement by statement from the format's
 * definitions, in double precision (integers in 64 bits, wrapped to their type when
 * stored), with no lowering at all, and compares what a run wrote with it (tilec_check).
 *
 * Every element also carries an error scale: 0 for values that must come out exact
 * (inputs, fills, copies, max and min of exact values, integers) and, for a sum, the sum
 * of the magnitudes of what was added. Comparison is exact where the scale is 0 and
 * within tolerance × scale elsewhere.
 *
 * Float sums are carried in long double, so the reference itself never overflows where
 * the format's accumulation type would not. Where that type could overflow in some order
 * of the additions (the positive or the negative terms add up to its overflow threshold),
 * the element also records which non-finite results such an order gives (+inf, -inf, NaN),
 * and the comparison accepts exactly those besides the finite value: a kernel is free to
 * choose its order, and [3e38, 3e38, -inf] in f32 is NaN in one order and -inf in another.
 */
#include "../dispatch/dispatch.h"
#include "../ir/numeric.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Non-finite results that some order of a float sum's additions gives (see above). */
enum { MAY_PINF = 1, MAY_NINF = 2, MAY_NAN = 4,
       MAY_MAX = 8, /* the largest finite value of the dtype, where the value rounds to an infinity */
       MAY_ANY = 16 /* a product some order of whose factors goes below the accumulation type's
                       normal range: orders disagree beyond any relative tolerance, so any value
                       of the product's sign up to the magnitude in mag is right */ };

/* A value of the reference. It goes to and from functions by pointer, never by value: a
 * union holding a long double passed or returned by value makes GCC print an ABI note
 * (-Wpsabi, "the ABI of passing union with 'long double' has changed in GCC 4.4") in
 * every build of this file, a Meson subproject's included. */
typedef struct rval {
    union {
        long double f; /* float dtypes */
        int64_t i;     /* integer dtypes */
    };
    double mag;   /* error scale, 0: exact */
    unsigned may; /* MAY_*: also acceptable, through an overflow in the accumulation type */
} rval;

typedef struct ref {
    tilec_program *p;
    const tilec_kernel *k;
    int ws;
    int64_t cta;
    int nc, rank;      /* a kernel of clusters: its CTAs (else 1), and the rank of the one running */
    int64_t base;      /* the index of the cluster's first CTA (cta = base + rank) */
    rval **mem;        /* per buffer index (see buf_index): global and shared; local per thread; the
                          shared and local ones once for each CTA of a cluster */
    const tilec_buffer **bufs;
    int nbufs;
} ref;

/* The CTA of rank `rank` of the running cluster runs next. */
static void set_rank(ref *R, int rank) {
    R->rank = rank;
    R->cta = R->base + rank;
}

/* A cluster statement reads the copies of its shared source of every CTA of the cluster,
 * in rank order, as a warp's local source is every lane's; its shared destination is every
 * CTA's copy (docs/format.md, "Thread-block clusters"). */
static bool cluster_stmt(const ir_stmt *st) { return st->exec.scope == TILEC_SCOPE_CLUSTER; }
/* The CTAs whose copy of destination b statement st writes: each CTA's own, every CTA's for
 * a cluster statement's shared destination. */
static int dst_ranks(const ref *R, const ir_stmt *st, const tilec_buffer *b) {
    return cluster_stmt(st) && b->space == TILEC_SPACE_SHARED ? R->nc : 1;
}

static int buf_index(const ref *R, const tilec_buffer *b) {
    for (int i = 0; i < R->nbufs; i++)
        if (R->bufs[i] == b) return i;
    return -1;
}

/* Whether every thread has its own copy of b: a local buffer without a layout. A fragment
 * (a layout) is one tile for each instance of its scope, as the format defines it. */
static bool lanes_own(const tilec_buffer *b) { return b->space == TILEC_SPACE_LOCAL && b->layout.kind == TILEC_LAYOUT_NONE; }
static bool is_fragment(const tilec_buffer *b) { return b->layout.kind != TILEC_LAYOUT_NONE; }

/* The reference's copies of b in one CTA, and the elements of each. */
static size_t cta_copies(const tilec_kernel *k, const tilec_buffer *b) {
    if (is_fragment(b)) return (size_t)((k->threads + ir_frag_threads(b) - 1) / ir_frag_threads(b));
    return lanes_own(b) ? (size_t)k->threads : 1;
}
/* Those of the run: a shared or local buffer's for each CTA of a cluster. */
static size_t ref_copies(const tilec_kernel *k, const tilec_buffer *b) {
    size_t nc = k->cluster > 1 && b->space != TILEC_SPACE_GLOBAL ? (size_t)k->cluster : 1;
    return nc * cta_copies(k, b);
}
static size_t ref_elems(const tilec_buffer *b) { return (size_t)(is_fragment(b) ? b->elems : b->span); }

/* Element `off` of buffer b as seen by thread `tid` (locals are per thread, fragments per
 * instance). */
static rval *at(ref *R, const tilec_buffer *b, int64_t off, int tid) {
    int i = buf_index(R, b);
    size_t cta = b->space == TILEC_SPACE_GLOBAL ? 0 : (size_t)R->rank * cta_copies(R->k, b) * ref_elems(b);
    if (is_fragment(b)) return &R->mem[i][cta + (size_t)(tid / ir_frag_threads(b)) * (size_t)b->elems + (size_t)off];
    if (b->space == TILEC_SPACE_LOCAL) return &R->mem[i][cta + (size_t)tid * (size_t)b->span + (size_t)off];
    return &R->mem[i][cta + (size_t)off];
}

/* The value of an id for an instance whose first thread is `first`. */
static int64_t id_value(const ref *R, const ir_index *ix, int first) {
    if (ix->kind == TILEC_INDEX_RANK) return R->rank;
    switch (ix->id) {
    case TILEC_SCOPE_CTA: return R->cta;
    case TILEC_SCOPE_CLUSTER: return R->base / R->nc;
    case TILEC_SCOPE_WARPGROUP: return first / 128;
    case TILEC_SCOPE_WARP: return first / R->ws;
    default: return first;
    }
}

/* Buffer offset of the region element with coordinates c (one per dimension as indexed). */
static int64_t offset(const ref *R, const ir_region *r, const int64_t *c, int first) {
    const tilec_buffer *b = r->buf;
    int64_t off = b->origin;
    int j = 0;
    for (int d = 0; d < b->rank; d++) {
        int64_t pos;
        if (d < r->nindex && ir_index_is_id(&r->index[d])) {
            pos = id_value(R, &r->index[d], first);
        } else {
            int64_t lo = 0, hi = b->shape[d];
            if (d < r->nindex) ir_index_range(&r->index[d], b->shape[d], &lo, &hi);
            pos = d < r->nindex && r->index[d].kind == TILEC_INDEX_AT ? lo : lo + c[j++];
        }
        off += pos * b->strides[d];
    }
    if (b->swizzle.kind != TILEC_SWIZZLE_NONE) { /* format.md: the chunk's index among its group's, XOR the selector */
        int64_t es = (int64_t)tilec_dtype_size(b->dtype), byte = off * es;
        int64_t chunk = (int64_t)1 << b->swizzle.base, nchunks = (int64_t)1 << b->swizzle.bits;
        int64_t line = byte / (chunk << b->swizzle.shift), sel = line % nchunks;
        int64_t in_group = byte / chunk % nchunks, moved = in_group ^ sel;
        off = (byte + (moved - in_group) * chunk) / es;
    }
    return off;
}

static void unflatten(int64_t flat, const int64_t *dims, int n, int64_t *c) {
    for (int j = n - 1; j >= 0; j--) {
        c[j] = flat % dims[j];
        flat /= dims[j];
    }
}

static int64_t flat_offset(const ref *R, const ir_region *r, int64_t flat, int first) {
    int64_t dims[TILEC_MAX_RANK], c[TILEC_MAX_RANK];
    int n = ir_region_shape(r, dims);
    unflatten(flat, dims, n, c);
    return offset(R, r, c, first);
}

static bool is_float(const tilec_buffer *b) { return ir_dtype_is_float(b->dtype); }

/* Stores v into element e of b, rounded or wrapped to its dtype. */
static void put(const tilec_buffer *b, rval *e, const rval *v) {
    lp_type t = lp_type_of(b->dtype);
    rval w = *v; /* v may be e */
    if (is_float(b)) e->f = num_round(t, (double)w.f);
    else {
        uint64_t u = (uint64_t)w.i;
        e->i = t == LP_I32 ? (int32_t)(uint32_t)u : t == LP_U32 ? (int64_t)(uint32_t)u : (int64_t)u;
    }
    e->mag = w.mag;
    e->may = w.may;
}

/* The threads of each instance a statement runs: calls fn(first, count) for each. */
typedef void (*inst_fn)(ref *R, const ir_stmt *st, int first, int count);

static void each_instance(ref *R, const ir_stmt *st, inst_fn fn) {
    int size = ir_scope_size(st->exec.scope, R->k->threads, R->ws);
    if (size > R->k->threads) size = R->k->threads;
    int n = ir_scope_count(st->exec.scope, R->k->threads, R->ws);
    for (int i = 0; i < n; i++) {
        if (st->exec.instance >= 0 && i != st->exec.instance) continue;
        int first = i * size, count = R->k->threads - first < size ? R->k->threads - first : size;
        fn(R, st, first, count);
    }
}

/* copy and fill write each element once per instance, or once per thread for a local
 * destination (every thread has its own). */
static void copy_fill(ref *R, const ir_stmt *st, int first, int count) {
    bool per_thread = lanes_own(st->dst.buf);
    int64_t n = ir_region_elems(&st->dst);
    for (int t = first; t < first + (per_thread ? count : 1); t++)
        for (int64_t e = 0; e < n; e++) {
            rval v = {0};
            if (st->kind == IR_COPY) v = *at(R, st->src.buf, flat_offset(R, &st->src, e, first), t);
            else if (is_float(st->dst.buf)) v.f = st->fill.typed; /* rounded once, from the text */
            else v.i = st->fill.i; /* the exact integer, as verified */
            put(st->dst.buf, at(R, st->dst.buf, flat_offset(R, &st->dst, e, first), t), &v);
        }
}

/* The reference's value of each combine of the op table (src/ir/ops.c), on its wide
 * values: floats in long double (max and min by the format's NaN and ±0 rules), integers
 * in 64 bits (a sum wraps as the accumulation type does once stored). */
static void ref_add(rval *r, const rval *a, const rval *b, bool flt, tilec_nan nan) {
    (void)nan;
    if (flt) r->f = a->f + b->f;
    else r->i = (int64_t)((uint64_t)a->i + (uint64_t)b->i);
}
static void ref_max(rval *r, const rval *a, const rval *b, bool flt, tilec_nan nan) {
    if (flt) r->f = num_fmax((double)a->f, (double)b->f, nan);
    else r->i = a->i > b->i ? a->i : b->i;
}
static void ref_min(rval *r, const rval *a, const rval *b, bool flt, tilec_nan nan) {
    if (flt) r->f = num_fmin((double)a->f, (double)b->f, nan);
    else r->i = a->i < b->i ? a->i : b->i;
}
static void ref_mul(rval *r, const rval *a, const rval *b, bool flt, tilec_nan nan) {
    (void)nan;
    if (flt) r->f = a->f * b->f;
    else r->i = (int64_t)((uint64_t)a->i * (uint64_t)b->i);
}
static void (*const ref_combine[LO_OP_COUNT])(rval *, const rval *, const rval *, bool, tilec_nan) = {
    [LO_ADD] = ref_add, [LO_MUL] = ref_mul, [LO_MAX] = ref_max, [LO_MIN] = ref_min};

/* *out = op(a, b); out may be a or b. */
static void combine(const ir_stmt *st, bool flt, const rval *a, const rval *b, rval *out) {
    rval r = {0};
    const ir_op_info *op = ir_op(st->op);
    ref_combine[op->combine](&r, a, b, flt, st->nan); /* every op runs through here in test_sim and test_jit */
    /* the callers added each operand's own magnitude to a sum's; a product's bound is
     * set once its factors are known (prod_bound) */
    r.mag = op->error == IR_ERROR_SUM ? a->mag + b->mag : a->mag > b->mag ? a->mag : b->mag;
    r.may = a->may | b->may;
    *out = r;
}

/* The op's identity in b's dtype, into *out. */
static void identity(const ir_stmt *st, const tilec_buffer *b, rval *out) {
    rval r = {0};
    bool flt = is_float(b);
    int64_t lowest = b->dtype == TILEC_I32 ? INT32_MIN : b->dtype == TILEC_U32 ? 0 : INT64_MIN;
    int64_t highest = b->dtype == TILEC_I32 ? INT32_MAX : b->dtype == TILEC_U32 ? (int64_t)UINT32_MAX : INT64_MAX;
    switch (ir_op(st->op)->identity) {
    case IR_IDENTITY_ZERO: /* -0.0 for floats: a sum of nothing but -0.0 is -0.0 */
        if (flt) r.f = -0.0L;
        *out = r;
        return;
    case IR_IDENTITY_LOWEST:
        if (flt) r.f = -INFINITY;
        else r.i = lowest;
        break;
    case IR_IDENTITY_HIGHEST:
        if (flt) r.f = INFINITY;
        else r.i = highest;
        break;
    case IR_IDENTITY_ONE:
        if (flt) r.f = 1;
        else r.i = 1;
        *out = r;
        return;
    }
    /* under nan=ignore NaN loses to every number: it is a comparing op's identity */
    if (flt && st->nan == TILEC_NAN_IGNORE) r.f = NAN;
    *out = r;
}

/* A term of a float sum: its magnitude joins the error scale, and its sign's total. */
static void add_term(rval *x, long double *terms) {
    x->mag += (double)fabsl(x->f);
    if (isfinite(x->f)) terms[x->f < 0] += fabsl(x->f);
}

/* The check's tolerance, relative to an error scale: 16-bit results are rounded coarsely. */
static long double tolerance_of(const tilec_buffer *b) {
    return b->dtype == TILEC_F16 || b->dtype == TILEC_BF16 ? 1e-2L : 1e-5L;
}

/* What an order of the additions can give besides the value: the accumulation type acc
 * (f32 for 16-bit floats and f32, f64 for f64 and for the squares of bf16 and f32 in a
 * norm2) overflows once a partial sum reaches its threshold, which the positive (negative)
 * finite terms can, to within the check's tolerance, when they add up to it. With an
 * infinite term every order ends at that infinity, or at NaN where the other sign can
 * overflow; with none, at the value, either infinity whose sign can overflow, or NaN where
 * both can. */
static unsigned sum_overflows(const tilec_buffer *b, lp_type acc, const long double *terms, const rval *sum) {
    /* the halfway points between the largest finite value and 2^(emax+1) */
    long double limit = acc == LP_F64 ? 0x1.fffffffffffff8p1023L : 0x1.ffffffp127L;
    long double slack = tolerance_of(b) * (terms[0] + terms[1]);
    bool up = terms[0] >= limit - slack, down = terms[1] >= limit - slack;
    if (isnan(sum->f)) return 0;
    if (isinf(sum->f)) return (sum->f > 0 ? down : up) ? MAY_NAN : 0;
    return (up ? MAY_PINF : 0) | (down ? MAY_NINF : 0) | (up && down ? MAY_NAN : 0);
}

/* A 16-bit result is stored once rounded: within the tolerance (slack) of its own overflow
 * threshold, the accumulated value may land on either side of it (the largest finite
 * value, or the infinity). */
static unsigned store_edge(const tilec_buffer *b, long double v, long double slack) {
    long double store = b->dtype == TILEC_F16 ? 65520.0L : b->dtype == TILEC_BF16 ? 0x1.ffp127L : 0;
    if (store > 0 && isfinite(v) && fabsl(v) >= store - slack && fabsl(v) < store + slack)
        return MAY_MAX | (v > 0 ? MAY_PINF : MAY_NINF);
    return 0;
}

static unsigned overflows(const tilec_buffer *b, lp_type acc, const long double *terms, const rval *sum) {
    return sum_overflows(b, acc, terms, sum) | store_edge(b, sum->f, tolerance_of(b) * (terms[0] + terms[1]));
}

/* The element as the fold takes it (ops.c's lift). A square is rounded once in the
 * accumulation type, as the format says: the square of a 16- or 32-bit float is exact in
 * double and rounded to f32 (or kept, for a norm's f64), an f64's is a correctly rounded
 * double product; below the type's normal range that rounding is no longer relative, so it
 * is modelled, not bounded. The error scale grows with the element's own. Integer squares
 * wrap as the accumulation type does once stored. */
static void lift(const ir_stmt *st, bool flt, rval *x) {
    switch (ir_op(st->op)->lift) {
    case IR_LIFT_NONE:
    case IR_LIFT_KEY: /* reduce_keyed's */
    case IR_LIFT_SHIFT: return; /* reduce_var's */
    case IR_LIFT_SQUARE:
        if (!flt) {
            x->i = (int64_t)((uint64_t)x->i * (uint64_t)x->i);
            return;
        }
        x->mag = (double)(2 * fabsl(x->f) * x->mag);
        double v = (double)x->f, sq = v * v;
        x->f = num_round(lp_op_accum_type(st->op, st->dst.buf->dtype), sq);
        return;
    }
}

/* The folded value of n elements as the op's result (ops.c's finish): a mean divides it
 * and its error scale by n; a root takes the square root, whose error is the sum's over
 * twice the root (its terms are squares, so the scale is at most the sum's magnitude). The
 * store threshold is then the result's. */
static void finish(const ir_stmt *st, int64_t n, rval *v) {
    const tilec_buffer *b = st->dst.buf;
    switch (ir_op(st->op)->finish) {
    case IR_FINISH_NONE:
    case IR_FINISH_KEY: /* reduce_keyed's */
    case IR_FINISH_VAR: /* reduce_var's */
    case IR_FINISH_STD: return;
    case IR_FINISH_MEAN:
        v->f /= (long double)n;
        v->mag /= (double)n;
        break;
    case IR_FINISH_SQRT: {
        long double root = sqrtl(v->f);
        v->mag = root > 0 && isfinite(root) ? (double)(v->mag / (2 * root)) : (double)sqrtl(v->mag / tolerance_of(b));
        v->f = root;
        break;
    }
    }
    v->may |= store_edge(b, v->f, tolerance_of(b) * v->mag);
}

/* A float product's factors: how many, the products of the magnitudes above and below 1
 * (an order that takes all of one kind first reaches the larger or the smaller), the sum
 * of their own relative error scales (a factor that is itself a result), and whether one
 * is infinite, zero, or an inexact zero. */
typedef struct factors {
    int64_t n;
    long double big, small;
    double rel;
    bool inf, zero, inexact_zero;
} factors;

static void add_factor(factors *f, const rval *x) {
    f->n++;
    long double m = fabsl(x->f);
    if (m > 1 && isfinite(m)) f->big *= m;
    else if (m < 1 && m > 0) f->small *= m;
    f->inf |= isinf(m);
    f->zero |= m == 0;
    f->inexact_zero |= m == 0 && x->mag > 0;
    if (m > 0 && isfinite(m)) f->rel += x->mag / (double)m;
}

/* The product's error scale. Where no order of the factors leaves the accumulation type's
 * normal range: a rounding of that type per factor, a unit of the destination (the value
 * is itself rounded to it) and the factors' own errors, relative to the value, and a
 * subnormal unit of the destination; a zero is exact (its sign is the factors'). Where an
 * order overflows, also the infinity of the product's sign (NaN where it can meet a zero).
 * Where an order's partial product is subnormal or 0, only the sign and a bound on the
 * magnitude hold (MAY_ANY, the bound in mag): the value grown by those roundings, plus
 * what the subnormals lost, grown by the factors above 1. */
static void prod_bound(const tilec_buffer *dst, const factors *f, rval *v) {
    bool wide = dst->dtype == TILEC_F64;
    long double acc_u = wide ? 0x1p-53L : 0x1p-24L, top = wide ? 0x1p1023L : 0x1p127L, low = wide ? 0x1p-1021L : 0x1p-125L;
    long double acc_sub = wide ? 0x1p-1074L : 0x1p-149L;
    long double store_u = dst->dtype == TILEC_F16 ? 0x1p-10L : dst->dtype == TILEC_BF16 ? 0x1p-7L : 0;
    long double unit = dst->dtype == TILEC_F16 ? 0x1p-24L : dst->dtype == TILEC_BF16 ? 0x1p-133L : acc_sub;
    long double store = dst->dtype == TILEC_F16 ? 65520.0L : dst->dtype == TILEC_BF16 ? 0x1.ffp127L : 0;
    double tol = (double)tolerance_of(dst);
    long double rel = store_u + 2 * (long double)f->n * acc_u + tol * f->rel;
    bool ovf = f->big >= top, unf = f->small <= low || f->inexact_zero;
    if ((ovf || f->inf) && (unf || f->zero)) v->may |= MAY_NAN;
    if (!isfinite(v->f)) return;
    if (v->f == 0 && !unf) {
        v->mag = 0;
        return;
    }
    unsigned inf = signbit(v->f) ? MAY_NINF : MAY_PINF;
    if (ovf) v->may |= inf;
    if (unf) {
        v->may |= MAY_ANY;
        v->mag = (double)(fabsl(v->f) * (1 + rel) + 2 * acc_sub * f->big + unit);
        return;
    }
    if (store > 0 && fabsl(v->f) >= store * (1 - rel) && fabsl(v->f) < store * (1 + rel))
        v->may |= MAY_MAX | inf; /* stored to 16 bits, either side of the threshold */
    v->mag = (double)((fabsl(v->f) * rel + unit) / tol);
}

/* accum: dst = op(old, r), r the slice's reduction with what its own additions can give
 * (may_r); the one addition of old can itself overflow, and an infinity r may reach meets
 * old's. */
static unsigned fold_old(const tilec_buffer *b, const rval *old, unsigned may_r, const rval *v) {
    unsigned may = may_r & MAY_NAN;
    if (may_r & MAY_PINF) may |= old->f == -INFINITY ? MAY_NAN : MAY_PINF;
    if (may_r & MAY_NINF) may |= old->f == INFINITY ? MAY_NAN : MAY_NINF;
    long double two[2] = {0, 0};
    two[v->f < 0] = fabsl(v->f); /* the addition's result, near a threshold or not */
    if (isfinite(v->f)) may |= overflows(b, lp_accum_type(b->dtype), two, v);
    return may;
}

/* argmax / argmin, from their definition (docs/format.md), not from the lowering's keys:
 * the elements in index order, and an element replaces the best so far only when it is
 * strictly better (so ties keep the first index). Better is greater (argmax) or less
 * (argmin) in max's and min's order, where -0 is below +0. Under nan=propagate the first
 * NaN is the answer; under nan=ignore a NaN is never better than a number, and the first
 * element stands where every one is NaN. */
static bool ref_better(const ir_stmt *st, bool flt, const rval *x, const rval *best) {
    bool max = ir_op(st->op)->combine == LO_MAX;
    if (!flt) return max ? x->i > best->i : x->i < best->i;
    bool xn = isnan(x->f), bn = isnan(best->f);
    if (st->nan == TILEC_NAN_PROPAGATE && (xn || bn)) return xn && !bn;
    if (xn || bn) return bn && !xn;
    if (x->f == best->f) /* only a zero's sign can tell them apart */
        return max ? signbit(best->f) && !signbit(x->f) : signbit(x->f) && !signbit(best->f);
    return max ? x->f > best->f : x->f < best->f;
}

/* One output's slice for the ops reduced from their definitions (below): its source
 * elements by lane and reduced index, and its destinations. c0 holds the kept
 * coordinates (the reduced ones are filled per element). */
typedef struct slice {
    ref *R;
    const ir_stmt *st;
    int first, count;  /* the instance's threads */
    int64_t s, rlen;   /* the output, the elements a lane contributes */
    const int64_t *c0, *rdims;
    const bool *red;
    int nr, rank;
} slice;

/* The lanes whose elements the slice holds: every lane of the instance for a local
 * source, in lane order, else the first. */
static int slice_lanes(const slice *sl) {
    return cluster_stmt(sl->st) ? sl->R->nc : lanes_own(sl->st->src.buf) ? sl->count : 1;
}

static const rval *slice_elem(const slice *sl, int t, int64_t r) {
    int64_t rc[TILEC_MAX_RANK], c[TILEC_MAX_RANK];
    if (cluster_stmt(sl->st)) set_rank(sl->R, t - sl->first); /* that CTA's copy */
    unflatten(r, sl->rdims, sl->nr, rc);
    for (int d = 0, j = 0; d < sl->rank; d++) c[d] = sl->red[d] ? rc[j++] : sl->c0[d];
    return at(sl->R, sl->st->src.buf, offset(sl->R, &sl->st->src, c, sl->first), t);
}

/* v into the slice's output of region dst, in every lane of a local destination. */
static void slice_put(const slice *sl, const ir_region *dst, const rval *v) {
    for (int rk = 0; rk < dst_ranks(sl->R, sl->st, dst->buf); rk++) {
        if (cluster_stmt(sl->st)) set_rank(sl->R, rk);
        int64_t off = flat_offset(sl->R, dst, sl->s, sl->first);
        for (int t = sl->first; t < sl->first + (lanes_own(dst->buf) ? sl->count : 1); t++)
            put(dst->buf, at(sl->R, dst->buf, off, t), v);
    }
}

/* argmax / argmin (the best and its index), or aminmax (the minimum and the maximum, as
 * min and max fold them), into dst and dst2 (aminmax: argmax's local source is only at
 * thread scope). */
static void reduce_keyed(const slice *sl) {
    const ir_stmt *st = sl->st;
    bool flt = is_float(st->src.buf), pair = ir_op(st->op)->key == IR_KEY_PAIR;
    rval best = {0}, lo = {0}, hi = {0};
    int64_t where = 0;
    for (int t = sl->first; t < sl->first + slice_lanes(sl); t++)
        for (int64_t r = 0; r < sl->rlen; r++) {
            rval x = *slice_elem(sl, t, r);
            bool start = t == sl->first && r == 0;
            if (pair) {
                if (start) lo = hi = x;
                ref_min(&lo, &lo, &x, flt, st->nan);
                ref_max(&hi, &hi, &x, flt, st->nan);
            } else if (start || ref_better(st, flt, &x, &best)) {
                best = x;
                where = (int64_t)(t - sl->first) * sl->rlen + r; /* a cluster's copies in rank order */
            }
        }
    rval index = {.i = where};
    if (pair) {
        best = lo;
        index = hi;
    }
    best.mag = index.mag = 0;
    slice_put(sl, &st->dst, &best);
    slice_put(sl, &st->dst2, &index);
}

/* logsumexp from its definition, ln(sum of exp(x)), in long double with the largest
 * element taken out (m + ln(sum of exp(x - m)), which neither overflows nor loses the small
 * terms): NaN where an element is NaN, +inf where one is +inf, -inf where all are -inf.
 * The fold's sum has a relative error of its own, which the log makes absolute; with the
 * result's rounding the error scale is 1 + |result|. */
static void reduce_lse(const slice *sl) {
    long double m = -INFINITY, sum = 0;
    bool nan = false;
    for (int pass = 0; pass < 2; pass++) /* the maximum, then the sum relative to it */
        for (int t = sl->first; t < sl->first + slice_lanes(sl); t++)
            for (int64_t r = 0; r < sl->rlen; r++) {
                long double x = slice_elem(sl, t, r)->f;
                if (pass == 0) {
                    nan |= isnan(x);
                    if (x > m) m = x;
                } else if (isfinite(m)) {
                    sum += expl(x - m);
                }
            }
    const ir_region *dst = &sl->st->dst;
    const tilec_buffer *b = dst->buf;
    for (int rk = 0; rk < dst_ranks(sl->R, sl->st, b); rk++) {
    if (cluster_stmt(sl->st)) set_rank(sl->R, rk);
    int64_t off = flat_offset(sl->R, dst, sl->s, sl->first);
    for (int t = sl->first; t < sl->first + (lanes_own(b) ? sl->count : 1); t++) {
        long double mm = m, ss = sum;
        bool nn = nan;
        if (sl->st->accum) { /* the old value as one more element: log(exp(old) + sum of exp(x)) */
            long double old = at(sl->R, b, off, t)->f, top = old > mm ? old : mm;
            nn |= isnan(old);
            if (isfinite(top)) ss = (isfinite(mm) ? ss * expl(mm - top) : 0) + (isfinite(old) ? expl(old - top) : 0);
            mm = top;
        }
        rval v = {.f = nn ? NAN : isfinite(mm) ? mm + logl(ss) : mm};
        if (isfinite(v.f)) v.mag = (double)(1 + fabsl(v.f));
        v.may = store_edge(b, v.f, tolerance_of(b) * v.mag);
        put(b, at(sl->R, b, off, t), &v);
    }
    }
}

/* var and std from their definitions, M2 / max(n - c, 0) with M2 the sum of (x - mean)^2,
 * in long double and two passes (the mean, then the squares about it): NaN where an
 * element is NaN or infinite (as numpy's), IEEE's +inf or NaN where n - c <= 0. The fold's
 * shifted f64 sums (lower_util.c, "Variance") are within (n + 64) 2^-50 S2 / (n - c) of
 * it, S2 = M2 + n (x0 - mean)^2 for the element x0 they are shifted by, which is at most
 * the largest such over the slice; a root halves that relative to the result. */
static void reduce_var(const slice *sl) {
    long double sum = 0, m2 = 0, far = 0;
    bool bad = false;
    int64_t n = (int64_t)slice_lanes(sl) * sl->rlen;
    for (int pass = 0; pass < 2; pass++)
        for (int t = sl->first; t < sl->first + slice_lanes(sl); t++)
            for (int64_t r = 0; r < sl->rlen; r++) {
                long double x = slice_elem(sl, t, r)->f;
                if (pass == 0) {
                    bad |= !isfinite(x);
                    sum += x;
                } else {
                    long double d = x - sum / n;
                    m2 += d * d;
                    if (d * d > far) far = d * d;
                }
            }
    long double div = n - sl->st->correction > 0 ? (long double)(n - sl->st->correction) : 0;
    long double v = m2 / div, err = (n + 64) * 0x1p-50L * (m2 + n * far) / (div > 0 ? div : 1);
    if (ir_op(sl->st->op)->finish == IR_FINISH_STD) {
        v = sqrtl(v);
        err = v > 0 ? err / (2 * v) : sqrtl(err);
    }
    const tilec_buffer *b = sl->st->dst.buf;
    rval out = {.f = bad ? NAN : v};
    if (isfinite(out.f)) out.mag = (double)(fabsl(out.f) + err / tolerance_of(b));
    out.may = store_edge(b, out.f, tolerance_of(b) * out.mag);
    slice_put(sl, &sl->st->dst, &out);
}

static void reduce(ref *R, const ir_stmt *st, int first, int count) {
    int64_t dims[TILEC_MAX_RANK];
    int rank = ir_region_shape(&st->src, dims);
    bool red[TILEC_MAX_RANK] = {0};
    for (int i = 0; i < st->naxes; i++) red[st->axes[i] < 0 ? st->axes[i] + rank : st->axes[i]] = true;
    int64_t kept[TILEC_MAX_RANK], rdims[TILEC_MAX_RANK], spatial = 1, rlen = 1;
    int nk = 0, nr = 0;
    for (int d = 0; d < rank; d++) {
        if (red[d]) { rdims[nr++] = dims[d]; rlen *= dims[d]; }
        else { kept[nk++] = dims[d]; spatial *= dims[d]; }
    }
    bool flt = is_float(st->src.buf);
    bool src_lanes = lanes_own(st->src.buf); /* every lane contributes its own */
    bool dst_lanes = lanes_own(st->dst.buf); /* every lane receives */
    /* at thread scope an instance is one thread; a warp with local operands combines lanes,
     * a cluster statement its CTAs' copies */
    bool cl = cluster_stmt(st);
    int contributors = cl ? R->nc : src_lanes ? count : 1;
    for (int64_t s = 0; s < spatial; s++) {
        int64_t kc[TILEC_MAX_RANK], rc[TILEC_MAX_RANK], c[TILEC_MAX_RANK];
        unflatten(s, kept, nk, kc);
        if (ir_op(st->op)->key != IR_KEY_NONE || ir_op(st->op)->lift == IR_LIFT_SHIFT) {
            for (int d = 0, i = 0; d < rank; d++) c[d] = red[d] ? 0 : kc[i++];
            slice sl = {R, st, first, count, s, rlen, c, rdims, red, nr, rank};
            if (ir_op(st->op)->lift == IR_LIFT_SHIFT) reduce_var(&sl);
            else if (ir_op(st->op)->key == IR_KEY_LSE) reduce_lse(&sl);
            else reduce_keyed(&sl);
            continue;
        }
        rval acc;
        identity(st, st->src.buf, &acc);
        long double terms[2] = {0, 0}; /* a float sum's positive and negative finite terms */
        factors fac = {0, 1, 1, 0, false, false, false};        /* a float product's */
        bool prod = ir_op(st->op)->error == IR_ERROR_PROD && flt;
        for (int t = first; t < first + contributors; t++)
            for (int64_t r = 0; r < rlen; r++) {
                unflatten(r, rdims, nr, rc);
                for (int d = 0, i = 0, j = 0; d < rank; d++) c[d] = red[d] ? rc[j++] : kc[i++];
                if (cl) set_rank(R, t - first);
                rval x = *at(R, st->src.buf, offset(R, &st->src, c, first), t);
                lift(st, flt, &x);
                if (ir_op(st->op)->error == IR_ERROR_SUM && flt) add_term(&x, terms);
                if (prod) add_factor(&fac, &x);
                combine(st, flt, &acc, &x, &acc);
            }
        for (int rk = 0; rk < dst_ranks(R, st, st->dst.buf); rk++) {
        if (cl) set_rank(R, rk);
        int64_t off = flat_offset(R, &st->dst, s, first);
        for (int t = first; t < first + (dst_lanes ? count : 1); t++) {
            rval *d = at(R, st->dst.buf, off, t), v = acc;
            /* the destination's dtype: its accumulation type and, 16-bit, its store threshold
             * (a wider destination than the source accumulates in its own type) */
            lp_type acc_t = lp_op_accum_type(st->op, st->dst.buf->dtype);
            bool finishes = ir_op(st->op)->finish != IR_FINISH_NONE; /* its store edge is the result's */
            unsigned may_r = ir_op(st->op)->error != IR_ERROR_SUM || !flt ? 0
                             : finishes ? sum_overflows(st->dst.buf, acc_t, terms, &acc)
                                        : overflows(st->dst.buf, acc_t, terms, &acc);
            factors all = fac;
            if (st->accum) {
                rval old = *d;
                if (prod) add_factor(&all, &old);
                if (ir_op(st->op)->error == IR_ERROR_SUM && flt) old.mag += (double)fabsl(old.f);
                combine(st, flt, &old, &acc, &v);
                if (ir_op(st->op)->error == IR_ERROR_SUM && flt) v.may |= fold_old(st->dst.buf, &old, may_r, &v);
            } else {
                v.may |= may_r;
            }
            if (prod) prod_bound(st->dst.buf, &all, &v);
            if (flt) finish(st, (int64_t)contributors * rlen, &v);
            put(st->dst.buf, d, &v);
        }
        }
    }
}

/* ---- map statements ----------------------------------------------------------------------
 *
 * Each element evaluates the expression from the format's definitions: every node in its
 * compute type (f32 values as doubles rounded to f32 after each operation, which is the
 * f32 operation's result: 53 >= 2 * 24 + 2 bits; f64 in double; integers in 64 bits,
 * wrapped to their type), conversions rounded once, exp, exp2, log and log2 from the C
 * library in long double, rounded to the type. Alongside each value goes a bound on how
 * far a kernel's may be from it (mval.err, absolute): 0 where the format fixes the bits;
 * for exp, exp2, log and log2 the documented 1 ulp (MAP_ULPS) of the result; and what an
 * operation makes of its operands' bounds, plus a rounding where one was inexact. A
 * comparison, a where or an integer conversion whose outcome the bounds leave open takes
 * the difference of its two outcomes as its bound. The stored element's error scale is
 * the bound over the destination's tolerance, so the check's |got - want| <= tolerance *
 * scale is |got - want| <= bound.
 */
enum { MAP_ULPS = 1 }; /* exp, exp2, log, log2: docs/format.md's bound, in ulps of the result */

typedef struct mval {
    double f;  /* float types */
    int64_t i; /* integer types */
    double err;
} mval;

typedef struct map_ctx {
    ref *R;
    const ir_stmt *st;
    int first, tid;
    int64_t c[TILEC_MAX_RANK]; /* the destination element's coordinates */
} map_ctx;

/* One ulp of v in float type t (the smallest subnormal's at least). */
static double ulp_of(lp_type t, double v) {
    int mant = t == LP_F64 ? 52 : t == LP_F32 ? 23 : t == LP_BF16 ? 7 : 10;
    int emin = t == LP_F64 ? -1022 : t == LP_F16 ? -14 : -126;
    int e;
    if (!isfinite(v) || v == 0) return ldexp(1.0, emin - mant);
    frexp(v, &e);
    return ldexp(1.0, (e - 1 < emin ? emin : e - 1) - mant);
}

static int64_t wrap_to(lp_type t, int64_t v) {
    uint64_t u = (uint64_t)v;
    return t == LP_I32 ? (int32_t)(uint32_t)u : t == LP_U32 ? (int64_t)(uint32_t)u : (int64_t)u;
}

/* x rounded to f64 to odd (toward zero, the last bit set when inexact): num_round of it is
 * x rounded once to a narrower format. */
static double odd_double(long double x) {
    double d = (double)x;
    if ((long double)d == x || isnan(d)) return d;
    if (fabsl((long double)d) > fabsl(x)) d = nextafter(d, 0.0);
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    b |= 1;
    memcpy(&d, &b, sizeof d);
    return d;
}

static double map_round(lp_type t, double v) { return t == LP_F64 ? v : num_round(t, v); }

/* v (of type from) converted to dtype `to` (docs/format.md's cast); its compute type's value. */
static mval map_convert(mval v, lp_type from, tilec_dtype to) {
    lp_type st = lp_type_of(to);
    mval r = {0};
    if (lp_is_float(st)) {
        if (lp_is_float(from)) r.f = map_round(st, v.f);
        else if (st == LP_F64) r.f = (double)v.i; /* one rounding */
        else r.f = num_round(st, odd_double((long double)v.i));
        r.err = v.err > 0 ? v.err + ulp_of(st, r.f) : 0;
        return r;
    }
    if (lp_is_float(from)) { /* toward zero, saturating, NaN to 0 */
        int64_t most = st == LP_I32 ? INT32_MAX : st == LP_U32 ? (int64_t)UINT32_MAX : INT64_MAX;
        int64_t least = st == LP_I32 ? INT32_MIN : st == LP_U32 ? 0 : INT64_MIN;
        long double t = truncl((long double)v.f);
        r.i = isnan(v.f) ? 0 : t >= (long double)most ? most : t <= (long double)least ? least : (int64_t)t;
        r.err = v.err > 0 ? v.err + 1 : 0;
        return r;
    }
    r.i = wrap_to(st, v.i);
    r.err = v.err;
    return r;
}

static mval map_eval(map_ctx *M, const ir_expr *e);

/* operand i of e in type t (the operands' joined type: only floats widen) */
static mval map_arg(map_ctx *M, const ir_expr *e, int i, lp_type t) {
    mval v = map_eval(M, e->args[i]);
    if (lp_is_float(t) && !lp_is_float(lp_accum_type(e->args[i]->type))) v.f = (double)v.i; /* not reached: verified */
    return v;
}

/* approx: the kernel's math=approx, whose f32 exp and exp2 are the hardware's: 2^-21 of the
 * result (NVIDIA's 2 ulp, AMD's 1), exp's argument times log2(e) rounded to f32 first
 * (|x| 2^-24 of the result more), and a result below 2^-126 possibly +0 (docs/format.md) */
static mval map_math(tilec_ewop op, lp_type t, mval x, bool approx) {
    long double a = x.f, y;
    switch (op) {
    case TILEC_EW_EXP: y = expl(a); break;
    case TILEC_EW_EXP2: y = exp2l(a); break;
    case TILEC_EW_LOG: y = logl(a); break;
    default: y = log2l(a); break;
    }
    mval r = {.f = map_round(t, (double)y)};
    double d = 0; /* what the operand's bound moves the result by */
    if (x.err > 0)
        d = op == TILEC_EW_EXP    ? 2 * fabs(r.f) * x.err
            : op == TILEC_EW_EXP2 ? 2 * fabs(r.f) * x.err * 0.6931471805599453
            : x.err < fabs(x.f) / 2 ? 2 * x.err / fabs(x.f) / (op == TILEC_EW_LOG ? 1 : 0.6931471805599453)
                                    : INFINITY;
    r.err = MAP_ULPS * ulp_of(t, r.f) + d;
    if (approx && t == LP_F32 && (op == TILEC_EW_EXP || op == TILEC_EW_EXP2))
        r.err += fabs(r.f) * (0x1p-21 + (op == TILEC_EW_EXP ? fabs(x.f) * 0x1p-24 : 0)) + 0x1p-126;
    return r;
}

/* A comparison (or a truth) whose operands' bounds leave it open: its outcomes differ by 1. */
static bool map_open(double a, double b, double err) { return err > 0 && !(fabs(a - b) > err); }

static mval map_op(map_ctx *M, const ir_expr *e) {
    lp_type t = lp_accum_type(e->type);
    bool flt = lp_is_float(t);
    int n = ir_ewop_arity(e->op);
    mval a[3] = {{0}}, r = {0};
    if (e->op != TILEC_EW_WHERE)
        for (int i = 0; i < n; i++) a[i] = map_arg(M, e, i, t);
    double in = a[0].err + a[1].err + a[2].err; /* any operand inexact */
    switch (e->op) {
    case TILEC_EW_ADD:
    case TILEC_EW_SUB:
    case TILEC_EW_MUL:
    case TILEC_EW_DIV:
        if (!flt) {
            uint64_t x = (uint64_t)a[0].i, y = (uint64_t)a[1].i;
            r.i = wrap_to(t, (int64_t)(e->op == TILEC_EW_ADD ? x + y : e->op == TILEC_EW_SUB ? x - y : x * y));
            r.err = e->op == TILEC_EW_MUL ? fabs((double)a[0].i) * a[1].err + fabs((double)a[1].i) * a[0].err + a[0].err * a[1].err
                                          : in;
            break;
        }
        r.f = map_round(t, e->op == TILEC_EW_ADD ? a[0].f + a[1].f : e->op == TILEC_EW_SUB ? a[0].f - a[1].f
                           : e->op == TILEC_EW_MUL ? a[0].f * a[1].f : a[0].f / a[1].f);
        if (in > 0) {
            if (e->op == TILEC_EW_MUL) r.err = fabs(a[0].f) * a[1].err + fabs(a[1].f) * a[0].err + a[0].err * a[1].err;
            else if (e->op == TILEC_EW_DIV) r.err = fabs(a[1].f) > a[1].err ? (a[0].err + fabs(r.f) * a[1].err) / (fabs(a[1].f) - a[1].err) : INFINITY;
            else r.err = in;
            r.err += ulp_of(t, r.f);
        }
        break;
    case TILEC_EW_MAX:
    case TILEC_EW_MIN:
        if (flt) r.f = e->op == TILEC_EW_MAX ? num_fmax(a[0].f, a[1].f, TILEC_NAN_PROPAGATE) : num_fmin(a[0].f, a[1].f, TILEC_NAN_PROPAGATE);
        else r.i = e->op == TILEC_EW_MAX ? (a[0].i > a[1].i ? a[0].i : a[1].i) : (a[0].i < a[1].i ? a[0].i : a[1].i);
        r.err = a[0].err > a[1].err ? a[0].err : a[1].err;
        break;
    case TILEC_EW_NEG:
        if (flt) r.f = -a[0].f;
        else r.i = wrap_to(t, (int64_t)(0 - (uint64_t)a[0].i));
        r.err = a[0].err;
        break;
    case TILEC_EW_ABS:
        if (flt) r.f = fabs(a[0].f);
        else r.i = t == LP_U32 || a[0].i >= 0 ? a[0].i : wrap_to(t, (int64_t)(0 - (uint64_t)a[0].i));
        r.err = a[0].err;
        break;
    case TILEC_EW_EXP:
    case TILEC_EW_EXP2:
    case TILEC_EW_LOG:
    case TILEC_EW_LOG2: r = map_math(e->op, t, a[0], M->R->k->math == TILEC_MATH_APPROX); break;
    case TILEC_EW_SQRT:
    case TILEC_EW_RSQRT:
        r.f = map_round(t, sqrt(a[0].f));
        if (e->op == TILEC_EW_RSQRT) r.f = map_round(t, 1.0 / r.f);
        if (in > 0)
            r.err = e->op == TILEC_EW_SQRT ? sqrt(a[0].err) + ulp_of(t, r.f)
                    : a[0].err < fabs(a[0].f) / 2 ? fabs(r.f) * a[0].err / fabs(a[0].f) + 2 * ulp_of(t, r.f) : INFINITY;
        break;
    case TILEC_EW_FMA:
        r.f = t == LP_F32 ? (double)fmaf((float)a[0].f, (float)a[1].f, (float)a[2].f) : fma(a[0].f, a[1].f, a[2].f);
        if (in > 0)
            r.err = fabs(a[0].f) * a[1].err + fabs(a[1].f) * a[0].err + a[0].err * a[1].err + a[2].err + ulp_of(t, r.f);
        break;
    case TILEC_EW_WHERE: {
        mval c = map_eval(M, e->args[0]), x = map_arg(M, e, 1, t), y = map_arg(M, e, 2, t);
        bool cf = lp_is_float(lp_accum_type(e->args[0]->type));
        bool yes = cf ? c.f != 0 : c.i != 0; /* NaN is nonzero */
        r = yes ? x : y;
        if (map_open(cf ? c.f : (double)c.i, 0, c.err)) {
            double d = flt ? fabs(x.f - y.f) : fabs((double)x.i - (double)y.i);
            r.err = (x.err > y.err ? x.err : y.err) + d;
        }
        break;
    }
    default: { /* the comparisons: 1 or 0 of their type */
        double x = flt ? a[0].f : (double)a[0].i, y = flt ? a[1].f : (double)a[1].i;
        bool v;
        if (!flt) {
            int64_t p = a[0].i, q = a[1].i;
            v = e->op == TILEC_EW_EQ ? p == q : e->op == TILEC_EW_NE ? p != q : e->op == TILEC_EW_LT ? p < q
                : e->op == TILEC_EW_LE ? p <= q : e->op == TILEC_EW_GT ? p > q : p >= q;
        } else {
            v = e->op == TILEC_EW_EQ ? x == y : e->op == TILEC_EW_NE ? x != y : e->op == TILEC_EW_LT ? x < y
                : e->op == TILEC_EW_LE ? x <= y : e->op == TILEC_EW_GT ? x > y : x >= y;
        }
        if (flt) r.f = v;
        else r.i = v;
        r.err = map_open(x, y, in) ? 1 : 0;
        break;
    }
    }
    return r;
}

static mval map_eval(map_ctx *M, const ir_expr *e) {
    mval r = {0};
    lp_type t = lp_accum_type(e->type);
    switch (e->kind) {
    case IR_X_REGION: {
        int64_t oc[TILEC_MAX_RANK] = {0}, dims[TILEC_MAX_RANK];
        int rank = ir_region_shape(&M->st->dst, dims);
        for (int d = 0; d < rank; d++)
            if (e->bcast[d] >= 0) oc[e->bcast[d]] = M->c[d];
        const rval *v = at(M->R, e->region.buf, offset(M->R, &e->region, oc, M->first),
                           lanes_own(e->region.buf) ? M->tid : M->first);
        if (is_float(e->region.buf)) r.f = (double)v->f;
        else r.i = v->i;
        r.err = v->mag * (double)tolerance_of(e->region.buf); /* a bound a map stored before */
        return r;
    }
    case IR_X_CONST:
        if (lp_is_float(t)) r.f = e->value.dtype == e->type ? e->value.typed : map_round(t, e->value.is_int ? (double)e->value.i : e->value.f);
        else r.i = e->value.i;
        return r;
    case IR_X_INDEX: r.i = M->c[e->axis]; return r;
    case IR_X_GATHER: { /* the region's element at the index along its axis; NaN / 0 outside */
        mval ix = map_eval(M, e->args[0]);
        int64_t oc[TILEC_MAX_RANK] = {0}, dims[TILEC_MAX_RANK], od[TILEC_MAX_RANK];
        int rank = ir_region_shape(&M->st->dst, dims);
        ir_region_shape(&e->region, od);
        if (ix.i < 0 || ix.i >= od[e->axis]) {
            if (lp_is_float(t)) r.f = NAN;
            return r;
        }
        for (int d = 0; d < rank; d++)
            if (e->bcast[d] >= 0) oc[e->bcast[d]] = M->c[d];
        oc[e->axis] = ix.i;
        const rval *v = at(M->R, e->region.buf, offset(M->R, &e->region, oc, M->first),
                           lanes_own(e->region.buf) ? M->tid : M->first);
        if (is_float(e->region.buf)) r.f = (double)v->f;
        else r.i = v->i;
        r.err = v->mag * (double)tolerance_of(e->region.buf);
        return r;
    }
    case IR_X_CAST: {
        mval v = map_eval(M, e->args[0]);
        return map_convert(v, lp_accum_type(e->args[0]->type), e->to);
    }
    case IR_X_OP: return map_op(M, e);
    }
    return r;
}

/* A map writes each element once per instance, or once per thread for a local
 * destination (every thread has its own); the whole expression is read before the
 * element is written (an operand may be the destination itself, the same element). */
static void map_stmt(ref *R, const ir_stmt *st, int first, int count) {
    bool per_thread = lanes_own(st->dst.buf);
    int64_t dims[TILEC_MAX_RANK], n = ir_region_elems(&st->dst);
    int rank = ir_region_shape(&st->dst, dims);
    lp_type dt = lp_type_of(st->dst.buf->dtype);
    for (int t = first; t < first + (per_thread ? count : 1); t++)
        for (int64_t e = 0; e < n; e++) {
            map_ctx M = {R, st, first, t, {0}};
            unflatten(e, dims, rank, M.c);
            mval v = map_eval(&M, st->expr);
            v = map_convert(v, lp_accum_type(st->expr->type), st->dst.buf->dtype);
            rval out = {0};
            if (is_float(st->dst.buf)) out.f = v.f;
            else out.i = v.i;
            out.mag = v.err / (double)tolerance_of(st->dst.buf);
            if (v.err > 0 && is_float(st->dst.buf)) { /* an inexact value beside the overflow threshold */
                double top = dt == LP_F16 ? 65504.0 : dt == LP_BF16 ? 0x1.fep127 : dt == LP_F32 ? 0x1.fffffep127 : DBL_MAX;
                if (isinf(v.f)) out.may |= MAY_MAX;
                else if (fabs(v.f) + v.err >= top) out.may |= v.f > 0 ? MAY_PINF : MAY_NINF;
            }
            put(st->dst.buf, at(R, st->dst.buf, flat_offset(R, &st->dst, e, first), t), &out);
        }
}

/* ---- running and comparing ------------------------------------------------------------ */

static void load_param(rval *m, const tilec_buffer *b, const void *src, int copies) {
    lp_type t = lp_type_of(b->dtype);
    int64_t n = (int64_t)ref_elems(b);
    for (int c = 0; c < copies; c++)
        for (int64_t e = 0; e < n; e++) {
            rval *v = &m[(size_t)c * (size_t)n + (size_t)e];
            if (is_float(b)) v->f = num_load_float(t, src, e);
            else v->i = num_load_int(t, src, e);
        }
}

/* Compares a written parameter with its reference values. */
static void compare(const tilec_buffer *b, const rval *want, const void *got_mem, tilec_check_result *res) {
    lp_type t = lp_type_of(b->dtype);
    double tol = (double)tolerance_of(b);
    *res = (tilec_check_result){.param = b->name, .ok = true, .exact = true, .first_bad = -1};
    for (int64_t e = 0; e < (int64_t)ref_elems(b); e++) {
        bool bad;
        double err = 0, g, w;
        if (is_float(b)) {
            g = num_load_float(t, got_mem, e);
            w = (double)want[e].f;
            unsigned may = want[e].may;
            if (want[e].mag != 0) res->exact = false; /* a sum: judged within the tolerance */
            double top = b->dtype == TILEC_F16 ? 65504.0 : b->dtype == TILEC_BF16 ? 0x1.fep127
                         : b->dtype == TILEC_F32 ? 0x1.fffffep127 : DBL_MAX; /* only 16-bit sums and maps mark MAY_MAX */
            if ((may & MAY_ANY) && !isnan(w) && !isnan(g) && signbit(g) == signbit(w) && fabs(g) <= want[e].mag)
                bad = false; /* a product whose orders disagree (MAY_ANY): its sign and bound hold */
            else if ((isnan(g) && (may & MAY_NAN)) || (isinf(g) && (may & (g > 0 ? MAY_PINF : MAY_NINF))) ||
                ((may & MAY_MAX) && fabs(g) == top && isinf(w) && signbit(g) == signbit(w)))
                bad = false; /* an order of the additions that overflows the accumulation type gives this */
            else if (isnan(w) || isnan(g) || isinf(w) || isinf(g)) bad = !(isnan(w) && isnan(g)) && g != w;
            else if (want[e].mag == 0) bad = memcmp(&g, &w, sizeof g) != 0 && !(g == 0 && w == 0 && signbit(g) == signbit(w));
            else {
                res->exact = false;
                res->tolerance = tol;
                err = fabs(g - w) / want[e].mag;
                bad = err > tol;
            }
            if (want[e].mag == 0 && isfinite(g) && isfinite(w)) err = fabs(g - w);
        } else {
            int64_t gi = num_load_int(t, got_mem, e);
            g = (double)gi;
            w = (double)want[e].i;
            bad = gi != want[e].i;
            err = bad ? fabs(g - w) : 0;
            if (want[e].mag != 0) { /* a map's conversion of an inexact float: within its bound */
                res->exact = false;
                res->tolerance = tol;
                err = fabs(g - w) / want[e].mag;
                bad = err > tol;
            }
        }
        if (err > res->max_error || (bad && isnan(err))) res->max_error = err;
        if (bad) {
            res->ok = false;
            if (res->mismatches++ == 0) { res->first_bad = e; res->got = g; res->want = w; }
        }
    }
}

tilec_status tilec_check(tilec_program *prog, const char *name, const tilec_target *target,
                         const void *const *inputs, const void *const *outputs,
                         tilec_check_result *results, size_t *count) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    if (!inputs || !outputs || !results || !count) {
        ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "tilec_check needs inputs, outputs, results and count");
        return TILEC_ERR_INVALID_ARG;
    }
    *count = 0;
    const tilec_kernel *k = ir_find_kernel(prog, name);
    if (!k) return TILEC_ERR_INVALID_ARG; /* it said why */
    for (int i = 0; i < k->nparams; i++) /* every parameter's contents before, the written ones' after */
        if (!inputs[i] || (!outputs[i] && tilec_kernel_param_written(k, (size_t)i))) {
            ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no buffer for parameter '%s' in %s[%d]",
                        k->params[i]->name, inputs[i] ? "outputs" : "inputs", i);
            return TILEC_ERR_INVALID_ARG;
        }
    dsp_target t; /* its warp size only: the reference plans nothing, so no cost model constants */
    char why[200];
    if (!dsp_target_resolve(target, &t, why, sizeof why)) {
        ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s", why);
        return TILEC_ERR_INVALID_ARG;
    }
    ref R = {.p = prog, .k = k, .ws = t.warp_size, .nc = k->cluster > 1 ? k->cluster : 1};
    R.nbufs = k->nparams;
    for (int i = 0; i < k->nstmts; i++) R.nbufs += k->stmts[i]->kind == IR_ALLOC;
    R.bufs = calloc((size_t)R.nbufs, sizeof *R.bufs);
    R.mem = calloc((size_t)R.nbufs, sizeof *R.mem);
    tilec_status st = R.bufs && R.mem ? TILEC_OK : TILEC_ERR_NOMEM;
    int n = 0;
    for (int i = 0; i < k->nparams && st == TILEC_OK; i++) R.bufs[n++] = k->params[i];
    for (int i = 0; i < k->nstmts && st == TILEC_OK; i++)
        if (k->stmts[i]->kind == IR_ALLOC) R.bufs[n++] = k->stmts[i]->alloc;
    uint64_t bytes = 0; /* what the reference will hold, counted before any of it is allocated */
    for (int i = 0; i < R.nbufs && st == TILEC_OK && bytes <= TILEC_REF_MAX_MEMORY; i++)
        bytes += (uint64_t)ref_copies(k, R.bufs[i]) * (uint64_t)ref_elems(R.bufs[i]) * sizeof(rval);
    if (st == TILEC_OK && bytes > TILEC_REF_MAX_MEMORY) {
        ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "checking kernel '%s' needs more than %zu MiB for the reference (%zu bytes an element of every "
                    "buffer), its bound (TILEC_REF_MAX_MEMORY); check a smaller program",
                    k->name, (size_t)TILEC_REF_MAX_MEMORY >> 20, sizeof(rval));
        st = TILEC_ERR_BUDGET;
    }
    for (int i = 0; i < R.nbufs && st == TILEC_OK; i++) {
        const tilec_buffer *b = R.bufs[i];
        size_t copies = ref_copies(k, b);
        R.mem[i] = calloc(copies * ref_elems(b), sizeof(rval));
        if (!R.mem[i]) st = TILEC_ERR_NOMEM;
        else if (i < k->nparams) load_param(R.mem[i], b, inputs[i], (int)copies);
    }
    /* a cluster's CTAs statement by statement (a cluster statement reads all their copies) */
    for (R.base = 0; st == TILEC_OK && R.base < k->grid; R.base += R.nc) {
        for (int i = k->nparams; i < R.nbufs; i++) /* fresh shared and local memory per CTA */
            memset(R.mem[i], 0, ref_copies(k, R.bufs[i]) * ref_elems(R.bufs[i]) * sizeof(rval));
        for (int i = 0; i < k->nstmts; i++) {
            const ir_stmt *s = k->stmts[i];
            for (int rk = 0; rk < (cluster_stmt(s) ? 1 : R.nc); rk++) {
                set_rank(&R, rk);
                if (s->kind == IR_COPY || s->kind == IR_FILL) each_instance(&R, s, copy_fill);
                else if (s->kind == IR_REDUCE) each_instance(&R, s, reduce);
                else if (s->kind == IR_MAP) each_instance(&R, s, map_stmt);
            }
        }
    }
    for (int i = 0; i < k->nparams && st == TILEC_OK; i++)
        if (tilec_kernel_param_written(k, (size_t)i)) compare(k->params[i], R.mem[i], outputs[i], &results[(*count)++]);
    for (int i = 0; R.mem && i < R.nbufs; i++) free(R.mem[i]);
    free(R.mem);
    free(R.bufs);
    if (st == TILEC_ERR_NOMEM) ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "out of memory in the reference");
    return st;
}
