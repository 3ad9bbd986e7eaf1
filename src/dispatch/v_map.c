/*
 * v_map.c — the map statement (docs/format.md, "Elementwise statements"): exec.map(D, expr).
 *
 * The instance's threads split the destination's elements as copy does (thread t of n:
 * elements t, t + n, …; a thread alone, or a lane writing its own local array, all of
 * them). Each element evaluates the expression tree in loop IR: its operand regions are
 * read at the element's coordinates as broadcast (ir_expr.bcast), the result is converted
 * to the destination's dtype as a cast does and stored (a NaN as the dtype's default quiet
 * NaN: GPUs and CPUs give NaNs of other signs and payloads, and the bits must not differ).
 *
 * Vectors: where the destination is dense and aligned along its last dimension, a thread
 * takes vectors of 16 bytes of it (8 bf16, 4 f32, …) that lie in one row. A vector's
 * coordinates are computed once (a division by each extent); an operand not broadcast
 * along the last dimension is read with vector loads where it is dense and aligned along
 * it too (else element by element at the vector's coordinates, no division), and an
 * operand broadcast along it (a row statistic m: f32[R, 1]) is read once for the vector.
 * A gather reads its elements one by one, at each element's coordinates, inside vectors too
 * (a split row's weight chunk, gather(Wt, 0, Pi[cta_id]), beside x read in vectors).
 *
 * Fragments (a local destination with a layout): each lane computes its own registers; an
 * operand fragment is read at the register that holds, in the same lane, the element each
 * destination register needs (the same layout, or a broadcast whose layout places it so).
 *
 * The math (exp, exp2, log, log2) is written in the loop IR's correctly rounded operations
 * in one fixed sequence, never a library call: the same bits on CUDA, HIP and the simulator
 * (map_exp, map_log below give the algorithms and their errors).
 */
#include "dispatch.h"

#include "../ir/numeric.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { MAXOPS = 32, MAXVEC = 8, MAXREGS = 1 << 8, UNROLL = 4 /* vectors in flight per thread in a long map */ };

typedef struct operand {
    const ir_expr *x; /* the first REGION node that reads it (the others read the same) */
    lp_buf *buf;
    bool row;  /* vector mode: broadcast along the last dimension, one value a vector */
    bool flat; /* of the destination's shape and dense: element e is at base + e */
    int chunk; /* vector mode: elements a vector load reads, 0: one element at a time */
    bool frag; /* a fragment (of a fragment destination) */
    int frag_at[MAXREGS]; /* its register for each destination register */
    lp_expr *val[MAXVEC]; /* the current vector's values, in the compute type */
} operand;

typedef struct mapper {
    dsp_lower *l;
    lp_kernel *k;
    const ir_stmt *st;
    const dsp_query *q;
    lp_block *into;
    int rank; /* the destination's shape */
    int64_t dims[TILEC_MAX_RANK];
    int vec; /* elements a thread computes at once: 1, or a vector's */
    operand ops[MAXOPS];
    int nops;
    bool uses_index;
    lp_expr *coords[TILEC_MAX_RANK]; /* of the current element (a vector's first), held in a
                                        register when first read (coord), NULL before */
    lp_expr *cexpr[TILEC_MAX_RANK];  /* their expressions */
    lp_expr *first;                  /* its flat index */
    int lane;                        /* the element of the vector being computed */
    const ir_expr *gx[MAXOPS];       /* gathers of one value along the row: read at lane 0 of */
    lp_expr *gv[MAXOPS];             /* a vector, their values reused by its other lanes */
    int ngx;
    int reg;                         /* a fragment destination's register being computed */
    bool nan_unseen;                 /* no NaN of the destination can show its bits (dst_nan_unseen) */
} mapper;

static bool is_frag(const tilec_buffer *b) { return b->layout.kind != TILEC_LAYOUT_NONE; }

/* ---- small builders -------------------------------------------------------------------- */

static lp_expr *hold(mapper *m, lp_expr *e, const char *name) {
    if (e->kind == LX_REG || e->kind == LX_CONST) return e;
    int r = lp_reg_new(m->k, e->type, name);
    lp_assign(m->k, m->into, r, e);
    return lp_reg(m->k, r);
}
static lp_expr *bin(mapper *m, lp_op op, lp_expr *a, lp_expr *b) { return lp_binary(m->k, op, a, b); }
static lp_expr *wrapped(mapper *m, lp_op op, lp_expr *a, lp_expr *b) { return lp_wrapping(m->k, op, a, b); }
static lp_expr *fc(mapper *m, lp_type t, double v) { return lp_float(m->k, t, v); }
static lp_expr *ic(mapper *m, lp_type t, int64_t v) { return lp_int(m->k, t, v); }
static lp_expr *sel(mapper *m, lp_expr *c, lp_expr *a, lp_expr *b) { return lp_select(m->k, c, a, b); }
static lp_type ctype(const ir_expr *e) { return lp_accum_type(e->type); }
/* the integer type of a float type's bits */
static lp_type bits_of(lp_type t) { return t == LP_F64 ? LP_I64 : LP_I32; }

/* ---- the math ----------------------------------------------------------------------------- */

/*
 * An argument known to be at most MAP_EXP_BOUND (exp(min(y, c)) with a constant c <= it, as
 * softmax's exp(min(x - max, 0)) is written) takes one scale instead of two: with
 * k <= round(MAP_EXP_BOUND * log2(e)) + 1 and k >= round(lo * log2(e)) - 1, k + C is a
 * normal exponent, so 2^(k + C) is a float made from r's bits in one integer multiply-add
 * and p is computed 2^-C times too large (its coefficients scaled by 2^-C: every Horner
 * step is the same step scaled by a power of two, exact); the product p 2^-C 2^(k + C) is
 * p 2^k rounded once, as the two-step product rounds it: the same bits, where the
 * min was already the upper clamp. A NaN argument makes p NaN, and the product NaN.
 */
enum { MAP_EXP_BOUND = 64 };
static int exp_offset(bool wide) { return wide ? 64 : 32; }

/* An upper bound of e's value that its form shows (a constant; min with one), +inf where
 * none (NaN: compared false) */
static double upper_bound(const ir_expr *e) {
    if (e->kind == IR_X_CONST) { /* the value const_value gives it */
        lp_type t = ctype(e);
        const ir_value *v = &e->value;
        if (!lp_is_float(t)) return (double)v->i;
        return v->dtype == e->type ? v->typed : num_round(t, v->is_int ? (double)v->i : v->f);
    }
    if (e->kind == IR_X_OP && e->op == TILEC_EW_MIN) return fmin(upper_bound(e->args[0]), upper_bound(e->args[1]));
    return INFINITY;
}

/*
 * exp and exp2 of an f32 or f64 x, in its own type:
 *
 *   x clamped to [lo, hi] (NaN stays NaN): below lo the result rounds to +0, above hi it
 *   overflows to +inf, so the clamp changes no result and keeps every exponent below in range;
 *   exp: k = round(x * log2(e)) (f32: of the exact product, in one fused multiply-add with
 *   the rounder below), f = x - k * ln2 (Cody and Waite: ln2 as a hi part with trailing
 *   zeros, k * hi exact, and a lo part, each in a fused multiply-add), |f| <= ln2/2 (plus
 *   the rounding of log2(e): 1.0005 ln2/2), e^f: f32 by 1 + f + f^2 q(f), q of degree 4 a
 *   minimax fit of e^f's relative error on that interval (Remez: 3.1e-9, 0.03 ulp; six
 *   fused multiply-adds; over every f32 argument the result is within 0.89 ulp), f64 by
 *   its Taylor series to degree 13 (truncation below 0.1 ulp);
 *   exp2: k = round(x), f = x - k exact, 2^f = e^(f ln2) by the same series in f;
 *   2^k applied as two exact powers of two 2^(k1) * 2^(k2), k1 = floor(k / 2), each a
 *   normal float made from its bits: the first product is exact, the second rounds once,
 *   which is where a result overflows or becomes subnormal.
 *
 * k comes from r = t + 1.5 * 2^(mant): r's low bits are round(t), read as integer bits, so
 * nothing converts a float to an integer (undefined for NaN in C++). `bounded`: the
 * argument is at most MAP_EXP_BOUND (above): no upper clamp, and 2^k in one scale.
 */
static lp_expr *map_exp(mapper *m, lp_expr *x, bool base2, bool bounded) {
    lp_kernel *k = m->k;
    lp_type t = x->type, bt = bits_of(t);
    /* math=approx: an f32's by the hardware's 2^x (LO_EXP2A), exp's argument times log2(e)
     * in f32 first (as CUDA's __expf): NaN, +-inf and overflow come out as the exact ones do */
    if (t == LP_F32 && k->tile && k->tile->math == TILEC_MATH_APPROX)
        return hold(m, lp_unary(k, LO_EXP2A, base2 ? x : bin(m, LO_MUL, x, fc(m, t, DSP_LOG2E))), "ex");
    bool wide = t == LP_F64;
    int mant = wide ? 52 : 23, bias = wide ? 1023 : 127, degree = wide ? 13 : 7;
    double rounder = wide ? DSP_ROUNDER64 : DSP_ROUNDER32;
    double lo = base2 ? (wide ? -1076 : -151) : (wide ? -746 : -104);
    double hi = base2 ? (wide ? 1025 : 129) : (wide ? 710 : 89);
    /* ln2 = LN2_HI + LN2_LO: LN2_HI with trailing zeros (k * LN2_HI exact for every k here) */
    double ln2_hi = wide ? 0x1.62e42fee00000p-1 : 0x1.62ep-1, ln2_lo = wide ? 0x1.a39ef35793c76p-33 : 0x1.0bfbe8p-15;
    lp_expr *xc = lp_minmax(k, LO_MAX, TILEC_NAN_PROPAGATE, x, fc(m, t, lo));
    if (!bounded) xc = lp_minmax(k, LO_MIN, TILEC_NAN_PROPAGATE, xc, fc(m, t, hi));
    xc = hold(m, xc, "xc");
    /* r = round(t) + rounder: an f32 exp's t = x * log2(e) rounded once, in the sum (a fused
     * multiply-add); f64's as before, the product rounded first */
    lp_expr *r;
    if (base2) r = hold(m, bin(m, LO_ADD, xc, fc(m, t, rounder)), "r");
    else if (!wide) r = hold(m, lp_fma(k, xc, fc(m, t, DSP_LOG2E), fc(m, t, rounder)), "r");
    else r = hold(m, bin(m, LO_ADD, hold(m, bin(m, LO_MUL, xc, fc(m, t, DSP_LOG2E)), "t"), fc(m, t, rounder)), "r");
    lp_expr *j = hold(m, bin(m, LO_SUB, r, fc(m, t, rounder)), "j"); /* round(t), exact */
    lp_expr *f;
    if (base2) {
        f = hold(m, bin(m, LO_SUB, xc, j), "f"); /* exact: |f| <= 1/2 */
    } else {
        f = lp_fma(k, lp_unary(k, LO_NEG, j), fc(m, t, ln2_hi), xc);
        f = hold(m, lp_fma(k, lp_unary(k, LO_NEG, j), fc(m, t, ln2_lo), f), "f");
    }
    double c[14] = {1};
    for (int n = 1; n <= degree; n++) c[n] = c[n - 1] * (base2 ? DSP_LN2 : 1.0) / n;
    if (!base2 && !wide) { /* f32 exp: 1 + f + f^2 (c2 + … + c6 f^4), minimax (above) */
        degree = 6;
        memcpy(c, dsp_exp_minimax, sizeof dsp_exp_minimax);
    }
    int off = bounded ? exp_offset(wide) : 0;
    double scale = ldexp(1, -off); /* bounded: p 2^-C */
    lp_expr *p = fc(m, t, c[degree] * scale);
    for (int n = degree - 1; n >= 0; n--) p = lp_fma(k, p, f, fc(m, t, c[n] * scale));
    p = hold(m, p, "p");
    if (bounded) { /* r's bits shifted by mant are k << mant (the rounder's part leaves the word) */
        lp_expr *sk = bin(m, LO_SHL, lp_bits(k, bt, r), ic(m, bt, mant));
        lp_expr *s = lp_bits(k, t, wrapped(m, LO_ADD, sk, ic(m, bt, (int64_t)(bias + off) << mant)));
        return hold(m, bin(m, LO_MUL, p, s), "ex");
    }
    /* k from r's bits: those of the rounder plus k */
    lp_expr *kk = hold(m, wrapped(m, LO_SUB, lp_bits(k, bt, r), ic(m, bt, wide ? INT64_C(0x4338000000000000) : 0x4b400000)), "k");
    lp_expr *k1 = hold(m, bin(m, LO_SHR, kk, ic(m, bt, 1)), "k1");
    lp_expr *k2 = wrapped(m, LO_SUB, kk, k1);
    lp_expr *s1 = lp_bits(k, t, bin(m, LO_SHL, wrapped(m, LO_ADD, k1, ic(m, bt, bias)), ic(m, bt, mant)));
    lp_expr *s2 = lp_bits(k, t, bin(m, LO_SHL, wrapped(m, LO_ADD, k2, ic(m, bt, bias)), ic(m, bt, mant)));
    return hold(m, bin(m, LO_MUL, hold(m, bin(m, LO_MUL, p, s1), "ps"), s2), "ex");
}

/*
 * log and log2 of x, in f64 (an f32 x is converted exactly, its result rounded once to
 * f32 at the end): a subnormal x is scaled by 2^54 first; then x = 2^e * m with m in
 * [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f), and (as fdlibm's log)
 *
 *   ln(m) = f - hfsq + s * (hfsq + R(s^2)),  hfsq = f^2 / 2,
 *   R(z) = the atanh series' tail 2z/3 + 2z^2/5 + … (10 terms, z <= 0.0295: below 2^-60),
 *
 * so s's rounding only touches a term of f^3's order. log: e * ln2 + ln(m), ln2 in a hi
 * part (e * hi exact) and a lo part; log2: e + ln(m) / ln2, ln(m) split in a hi part of 21
 * bits (exact products by the 32-bit hi part of 1/ln2) and the rest (as fdlibm's log2).
 * Specials by selects at the end: log(+0) = log(-0) = -inf, log(+inf) = +inf, x < 0 and NaN
 * give NaN.
 */
static lp_expr *map_log(mapper *m, lp_expr *x0, bool base2) {
    lp_kernel *k = m->k;
    lp_type out = x0->type;
    lp_expr *x = hold(m, lp_cast(k, LP_F64, x0), "lx");
    lp_expr *xs = x, *eadj = ic(m, LP_I64, 0);
    if (out == LP_F64) { /* an f32's subnormals are normal f64s */
        lp_expr *sub = hold(m, bin(m, LO_LT, x, fc(m, LP_F64, 0x1p-1022)), "sub");
        xs = hold(m, sel(m, sub, bin(m, LO_MUL, x, fc(m, LP_F64, 0x1p54)), x), "xs");
        eadj = sel(m, sub, ic(m, LP_I64, -54), ic(m, LP_I64, 0));
    }
    lp_expr *hx = hold(m, lp_bits(k, LP_I64, xs), "hx");
    lp_expr *mant = lp_bits(k, LP_F64, bin(m, LO_BOR, bin(m, LO_BAND, hx, ic(m, LP_I64, INT64_C(0xfffffffffffff))),
                                             ic(m, LP_I64, INT64_C(0x3ff0000000000000))));
    lp_expr *f1 = hold(m, mant, "m"); /* [1, 2) */
    lp_expr *big = hold(m, bin(m, LO_LT, fc(m, LP_F64, 0x1.6a09e667f3bcdp0), f1), "big");
    /* the biased exponent (x > 0: the sign bit is clear; other x are selected away) */
    lp_expr *e = bin(m, LO_BAND, bin(m, LO_SHR, hx, ic(m, LP_I64, 52)), ic(m, LP_I64, 0x7ff));
    e = wrapped(m, LO_SUB, e, sel(m, big, ic(m, LP_I64, 1022), ic(m, LP_I64, 1023)));
    e = hold(m, wrapped(m, LO_ADD, e, eadj), "e");
    lp_expr *f = hold(m, bin(m, LO_SUB, sel(m, big, bin(m, LO_MUL, f1, fc(m, LP_F64, 0.5)), f1), fc(m, LP_F64, 1)), "f");
    lp_expr *s = hold(m, bin(m, LO_DIV, f, bin(m, LO_ADD, fc(m, LP_F64, 2), f)), "s");
    lp_expr *z = hold(m, bin(m, LO_MUL, s, s), "z");
    enum { TERMS = 10 };
    lp_expr *p = fc(m, LP_F64, 2.0 / (2 * TERMS + 1));
    for (int j = TERMS - 1; j >= 1; j--) p = lp_fma(k, p, z, fc(m, LP_F64, 2.0 / (2 * j + 1)));
    lp_expr *R = hold(m, bin(m, LO_MUL, z, p), "R");
    lp_expr *hfsq = hold(m, bin(m, LO_MUL, fc(m, LP_F64, 0.5), bin(m, LO_MUL, f, f)), "hfsq");
    lp_expr *dk = hold(m, lp_cast(k, LP_F64, e), "dk");
    lp_expr *sr = hold(m, bin(m, LO_MUL, s, bin(m, LO_ADD, hfsq, R)), "sr");
    lp_expr *res;
    if (!base2) {
        /* dk * LN2_HI - ((hfsq - (s * (hfsq + R) + dk * LN2_LO)) - f) */
        lp_expr *in = bin(m, LO_SUB, hfsq, bin(m, LO_ADD, sr, bin(m, LO_MUL, dk, fc(m, LP_F64, 0x1.a39ef35793c76p-33))));
        res = bin(m, LO_SUB, bin(m, LO_MUL, dk, fc(m, LP_F64, 0x1.62e42fee00000p-1)), bin(m, LO_SUB, in, f));
    } else {
        /* hi = f - hfsq with its low 32 bits cleared, lo = (f - hi) - hfsq + s * (hfsq + R) */
        lp_expr *h = lp_bits(k, LP_I64, bin(m, LO_SUB, f, hfsq));
        lp_expr *hi = hold(m, lp_bits(k, LP_F64, bin(m, LO_BAND, h, ic(m, LP_I64, (int64_t)UINT64_C(0xffffffff00000000)))), "hi");
        lp_expr *lo = hold(m, bin(m, LO_ADD, bin(m, LO_SUB, bin(m, LO_SUB, f, hi), hfsq), sr), "lo");
        const double ivhi = 0x1.7154765200000p+0, ivlo = 0x1.705fc2eefa200p-33;
        lp_expr *vhi = hold(m, bin(m, LO_MUL, hi, fc(m, LP_F64, ivhi)), "vhi");
        lp_expr *vlo = bin(m, LO_ADD, bin(m, LO_MUL, bin(m, LO_ADD, lo, hi), fc(m, LP_F64, ivlo)),
                           bin(m, LO_MUL, lo, fc(m, LP_F64, ivhi)));
        lp_expr *w = hold(m, bin(m, LO_ADD, dk, vhi), "w");
        vlo = bin(m, LO_ADD, vlo, bin(m, LO_ADD, bin(m, LO_SUB, dk, w), vhi));
        res = bin(m, LO_ADD, vlo, w);
    }
    res = hold(m, res, "lg");
    /* specials: x in (0, inf) the value; +0 and -0 -inf; +inf +inf; else NaN */
    lp_expr *normal = bin(m, LO_AND, bin(m, LO_LT, fc(m, LP_F64, 0), x), bin(m, LO_LT, x, fc(m, LP_F64, INFINITY)));
    lp_expr *special = sel(m, bin(m, LO_EQ, x, fc(m, LP_F64, 0)), fc(m, LP_F64, -INFINITY),
                           sel(m, bin(m, LO_EQ, x, fc(m, LP_F64, INFINITY)), fc(m, LP_F64, INFINITY), fc(m, LP_F64, NAN)));
    res = hold(m, sel(m, normal, res, special), "log");
    return out == LP_F64 ? res : hold(m, lp_cast(k, out, res), "logf");
}

/* ---- conversions -------------------------------------------------------------------------- */

/* An f64 y rounded to f32 to odd (toward zero, then the last bit set if inexact): rounding
 * that to a narrower format to nearest even is rounding y to it once (f32 keeps more than
 * two bits beyond f16's and bf16's). */
static lp_expr *odd_f32(mapper *m, lp_expr *y) {
    lp_kernel *k = m->k;
    y = hold(m, y, "y");
    lp_expr *r = hold(m, lp_cast(k, LP_F32, y), "r32");
    lp_expr *back = hold(m, lp_cast(k, LP_F64, r), "back");
    lp_expr *inexact = bin(m, LO_AND, bin(m, LO_NE, back, y), bin(m, LO_EQ, y, y));
    lp_expr *b = hold(m, lp_bits(k, LP_I32, r), "rb");
    /* |back| > |y|: the nearest was away from zero, truncation is one below in magnitude */
    lp_expr *away = bin(m, LO_LT, lp_minmax(k, LO_MAX, TILEC_NAN_PROPAGATE, y, lp_unary(k, LO_NEG, y)),
                        lp_minmax(k, LO_MAX, TILEC_NAN_PROPAGATE, back, lp_unary(k, LO_NEG, back)));
    lp_expr *t = sel(m, away, wrapped(m, LO_SUB, b, ic(m, LP_I32, 1)), b);
    return hold(m, sel(m, inexact, lp_bits(k, LP_F32, bin(m, LO_BOR, t, ic(m, LP_I32, 1))), r), "odd");
}

/* An i64 x as f64 rounded to odd: x = hi * 2^32 + lo, both parts exact in f64, summed with
 * the sum's error (Fast2Sum: |hi| >= 2^32 > lo, or hi = 0); an inexact sum is moved toward
 * zero where it went past x, and its last bit set. */
static lp_expr *odd_f64_of_i64(mapper *m, lp_expr *x) {
    lp_kernel *k = m->k;
    x = hold(m, x, "ix");
    lp_expr *hi = hold(m, bin(m, LO_MUL, lp_cast(k, LP_F64, bin(m, LO_SHR, x, ic(m, LP_I64, 32))), fc(m, LP_F64, 0x1p32)), "xh");
    lp_expr *lo = hold(m, lp_cast(k, LP_F64, bin(m, LO_BAND, x, ic(m, LP_I64, INT64_C(0xffffffff)))), "xl");
    lp_expr *s = hold(m, bin(m, LO_ADD, hi, lo), "xs");
    lp_expr *err = hold(m, bin(m, LO_SUB, lo, bin(m, LO_SUB, s, hi)), "xe");
    lp_expr *b = hold(m, lp_bits(k, LP_I64, s), "xb");
    lp_expr *past = bin(m, LO_NE, bin(m, LO_LT, err, fc(m, LP_F64, 0)), bin(m, LO_LT, s, fc(m, LP_F64, 0)));
    lp_expr *t = sel(m, past, wrapped(m, LO_SUB, b, ic(m, LP_I64, 1)), b);
    return hold(m, sel(m, bin(m, LO_NE, err, fc(m, LP_F64, 0)), lp_bits(k, LP_F64, bin(m, LO_BOR, t, ic(m, LP_I64, 1))), s), "xo");
}

/* x (of its compute type) converted to dtype `to`, as the destination stores it (an f16 or
 * bf16 as its 16 bits): floats round to nearest even once; a float to an integer goes
 * toward zero, saturating, NaN to 0 (selects, so the C++ conversion only ever sees a value
 * in range); integers wrap modulo 2^bits. */
static lp_expr *convert_store(mapper *m, lp_expr *x, tilec_dtype to) {
    lp_kernel *k = m->k;
    lp_type from = x->type, st = lp_type_of(to);
    if (from == st) return x;
    if (lp_is_float(st)) {
        if (st == LP_F64) return lp_cast(k, LP_F64, x); /* exact, or an i64's one rounding */
        bool narrow = st == LP_F16 || st == LP_BF16;
        if (from == LP_F32) return lp_cast(k, st, x);
        if (from == LP_I64) x = odd_f64_of_i64(m, x);
        else if (from != LP_F64) x = lp_cast(k, LP_F64, x); /* i32, u32: exact */
        else if (!narrow) return lp_cast(k, LP_F32, x);     /* f64 to f32: one rounding */
        if (!narrow) return lp_cast(k, LP_F32, x);          /* i64: odd, then to nearest */
        return lp_cast(k, st, odd_f32(m, x));
    }
    if (lp_is_float(from)) {
        double hi = st == LP_I32 ? 0x1p31 : st == LP_U32 ? 0x1p32 : 0x1p63;
        double lo = num_round(from, st == LP_I32 ? -0x1p31 - 1 : st == LP_U32 ? -1.0 : -0x1p63);
        int64_t most = st == LP_I32 ? INT32_MAX : st == LP_U32 ? (int64_t)UINT32_MAX : INT64_MAX;
        int64_t least = st == LP_I32 ? INT32_MIN : st == LP_U32 ? 0 : INT64_MIN;
        x = hold(m, x, "fx");
        lp_expr *in = bin(m, LO_AND, bin(m, LO_LT, fc(m, from, lo), x), bin(m, LO_LT, x, fc(m, from, hi)));
        lp_expr *v = hold(m, lp_cast(k, st, sel(m, in, x, fc(m, from, 0))), "iv");
        return hold(m, sel(m, bin(m, LO_LE, fc(m, from, hi), x), ic(m, st, most),
                           sel(m, bin(m, LO_LE, x, fc(m, from, lo)), ic(m, st, least), v)), "sat");
    }
    return lp_cast(k, st, x); /* modulo 2^bits */
}

/* x converted to `to` and read back in to's compute type (a cast inside the expression). */
static lp_expr *convert(mapper *m, lp_expr *x, tilec_dtype to) {
    lp_expr *v = convert_store(m, x, to);
    return lp_cast(m->k, lp_accum_type(to), v);
}

/* ---- the expression ------------------------------------------------------------------------- */

static bool same_index(const ir_index *a, const ir_index *b) {
    return a->kind == b->kind && a->start == b->start && a->stop == b->stop && a->has_start == b->has_start &&
           a->has_stop == b->has_stop && a->id == b->id;
}

static bool same_operand(const ir_expr *a, const ir_expr *b, int rank) {
    if (a->region.buf != b->region.buf || a->region.nindex != b->region.nindex) return false;
    for (int i = 0; i < a->region.nindex; i++)
        if (!same_index(&a->region.index[i], &b->region.index[i])) return false;
    for (int d = 0; d < rank; d++)
        if (a->bcast[d] != b->bcast[d]) return false;
    return true;
}

static operand *operand_of(mapper *m, const ir_expr *x) {
    for (int i = 0; i < m->nops; i++)
        if (same_operand(m->ops[i].x, x, m->rank)) return &m->ops[i];
    return NULL;
}

/* Collects the operand regions (false: more than MAXOPS). */
static bool collect(mapper *m, const ir_expr *e) {
    if (!e) return true;
    if (e->kind == IR_X_INDEX) m->uses_index = true;
    if (e->kind == IR_X_GATHER) m->uses_index = true; /* its element's coordinates */
    if (e->kind == IR_X_REGION && !operand_of(m, e)) {
        if (m->nops == MAXOPS) return false;
        operand *o = &m->ops[m->nops++];
        memset(o, 0, sizeof *o);
        o->x = e;
        o->buf = lp_buf_for(m->k, e->region.buf);
    }
    for (int i = 0; i < 3; i++)
        if (!collect(m, e->args[i])) return false;
    return true;
}

static lp_expr *const_value(mapper *m, const ir_expr *e) {
    lp_type t = ctype(e);
    const ir_value *v = &e->value;
    if (!lp_is_float(t)) return ic(m, t, v->i);
    double f = v->dtype == e->type ? v->typed : num_round(t, v->is_int ? (double)v->i : v->f);
    return fc(m, t, f);
}

static lp_expr *eval(mapper *m, const ir_expr *e);
static lp_expr *coord(mapper *m, int d);

/* operand i of e in the type t its operands join in */
static lp_expr *arg(mapper *m, const ir_expr *e, int i, lp_type t) { return lp_cast(m->k, t, eval(m, e->args[i])); }

static lp_expr *eval_op(mapper *m, const ir_expr *e) {
    lp_kernel *k = m->k;
    lp_type t = ctype(e);
    bool flt = lp_is_float(t);
    const ir_ewop_info *info = ir_ewop(e->op);
    if (info->compares) { /* the operands' joined type is the node's (1 or 0 of it) */
        lp_expr *a = arg(m, e, 0, t), *b = arg(m, e, 1, t), *c;
        switch (e->op) {
        case TILEC_EW_EQ: c = bin(m, LO_EQ, a, b); break;
        case TILEC_EW_NE: c = bin(m, LO_NE, a, b); break;
        case TILEC_EW_LT: c = bin(m, LO_LT, a, b); break;
        case TILEC_EW_LE: c = bin(m, LO_LE, a, b); break;
        case TILEC_EW_GT: c = bin(m, LO_LT, b, a); break;
        default: c = bin(m, LO_LE, b, a); break;
        }
        return hold(m, sel(m, c, flt ? fc(m, t, 1) : ic(m, t, 1), flt ? fc(m, t, 0) : ic(m, t, 0)), "cmp");
    }
    switch (e->op) {
    case TILEC_EW_ADD:
    case TILEC_EW_SUB:
    case TILEC_EW_MUL: {
        lp_op op = e->op == TILEC_EW_ADD ? LO_ADD : e->op == TILEC_EW_SUB ? LO_SUB : LO_MUL;
        lp_expr *a = arg(m, e, 0, t), *b = arg(m, e, 1, t);
        return hold(m, flt ? bin(m, op, a, b) : wrapped(m, op, a, b), "v");
    }
    case TILEC_EW_DIV: return hold(m, bin(m, LO_DIV, arg(m, e, 0, t), arg(m, e, 1, t)), "v");
    case TILEC_EW_MAX:
    case TILEC_EW_MIN: {
        lp_op op = e->op == TILEC_EW_MAX ? LO_MAX : LO_MIN;
        return hold(m, lp_minmax(k, op, TILEC_NAN_PROPAGATE, arg(m, e, 0, t), arg(m, e, 1, t)), "v");
    }
    case TILEC_EW_NEG: {
        lp_expr *a = arg(m, e, 0, t);
        return hold(m, flt ? lp_unary(k, LO_NEG, a) : wrapped(m, LO_SUB, ic(m, t, 0), a), "v");
    }
    case TILEC_EW_ABS: {
        lp_expr *a = hold(m, arg(m, e, 0, t), "a");
        if (flt) { /* the sign bit cleared */
            lp_type bt = bits_of(t);
            int64_t mask = t == LP_F64 ? INT64_MAX : INT32_MAX;
            return hold(m, lp_bits(k, t, bin(m, LO_BAND, lp_bits(k, bt, a), ic(m, bt, mask))), "v");
        }
        if (t == LP_U32) return a;
        return hold(m, sel(m, bin(m, LO_LT, a, ic(m, t, 0)), wrapped(m, LO_SUB, ic(m, t, 0), a), a), "v");
    }
    case TILEC_EW_EXP:
    case TILEC_EW_EXP2:
        return map_exp(m, hold(m, arg(m, e, 0, t), "x"), e->op == TILEC_EW_EXP2, upper_bound(e->args[0]) <= MAP_EXP_BOUND);
    case TILEC_EW_LOG: return map_log(m, arg(m, e, 0, t), false);
    case TILEC_EW_LOG2: return map_log(m, arg(m, e, 0, t), true);
    case TILEC_EW_SQRT: return hold(m, lp_unary(k, LO_SQRT, arg(m, e, 0, t)), "v");
    case TILEC_EW_RSQRT: return hold(m, bin(m, LO_DIV, fc(m, t, 1), lp_unary(k, LO_SQRT, arg(m, e, 0, t))), "v");
    case TILEC_EW_FMA: return hold(m, lp_fma(k, arg(m, e, 0, t), arg(m, e, 1, t), arg(m, e, 2, t)), "v");
    case TILEC_EW_WHERE: {
        lp_expr *c = eval(m, e->args[0]);
        lp_expr *zero = lp_is_float(c->type) ? fc(m, c->type, 0) : ic(m, c->type, 0);
        lp_expr *cond = hold(m, bin(m, LO_NE, c, zero), "c"); /* NaN is nonzero */
        return hold(m, sel(m, cond, arg(m, e, 1, t), arg(m, e, 2, t)), "v");
    }
    default: break;
    }
    return fc(m, t, NAN); /* not reached: every op is above */
}

/* gather(R, axis, i): R's element at the current coordinates (broadcast as an operand's)
 * but at i along `axis`; an i outside the extent reads element 0 instead (the load is
 * always in bounds) and gives NaN, or 0 for integers. */
/* Whether e has one value along the destination's rows: no index of the last axis, and
 * every region (a gather's too) broadcast along it (a gather's bcast is -1 where the
 * gathered dimension meets: gather(X, 1, T), T [R, 1], is one value a row). */
static bool row_uniform(const mapper *m, const ir_expr *e) {
    if (!e) return true;
    if (e->kind == IR_X_INDEX && e->axis == m->rank - 1) return false;
    if ((e->kind == IR_X_REGION || e->kind == IR_X_GATHER) && e->bcast[m->rank - 1] >= 0) return false;
    for (int i = 0; i < 3; i++)
        if (!row_uniform(m, e->args[i])) return false;
    return true;
}

static lp_expr *gather_one(mapper *m, const ir_expr *e);

static lp_expr *gather_value(mapper *m, const ir_expr *e) {
    if (m->vec == 1 || !row_uniform(m, e)) return gather_one(m, e);
    for (int i = 0; i < m->ngx; i++)
        if (m->gx[i] == e) return m->gv[i];
    lp_expr *v = gather_one(m, e);
    if (m->ngx < MAXOPS) m->gx[m->ngx] = e, m->gv[m->ngx++] = v;
    return v;
}

static lp_expr *gather_one(mapper *m, const ir_expr *e) {
    lp_kernel *k = m->k;
    int64_t od[TILEC_MAX_RANK];
    int ro = ir_region_shape(&e->region, od);
    lp_expr *i = hold(m, lp_cast(k, LP_I64, eval(m, e->args[0])), "gi");
    lp_expr *in = hold(m, bin(m, LO_AND, bin(m, LO_LE, ic(m, LP_I64, 0), i), bin(m, LO_LT, i, ic(m, LP_I64, od[e->axis]))),
                       "gin");
    lp_expr *oc[TILEC_MAX_RANK];
    for (int j = 0; j < ro; j++) oc[j] = ic(m, LP_I32, 0);
    for (int d = 0; d < m->rank; d++)
        if (e->bcast[d] >= 0) {
            lp_expr *c = coord(m, d); /* in vectors: the vector's first, plus the element's lane along the row */
            oc[e->bcast[d]] = d == m->rank - 1 && m->lane ? bin(m, LO_ADD, lp_cast(k, LP_I64, c), ic(m, LP_I64, m->lane)) : c;
        }
    oc[e->axis] = sel(m, in, i, ic(m, LP_I64, 0));
    lp_type ct = lp_accum_type(e->region.buf->dtype);
    lp_expr *v = lp_load(k, lp_buf_for(k, e->region.buf), dsp_region_offset_at(m->l, &e->region, oc));
    v = hold(m, lp_cast(k, ct, v), "gx");
    return hold(m, sel(m, in, v, lp_is_float(ct) ? fc(m, ct, NAN) : ic(m, ct, 0)), "g");
}

static lp_expr *eval(mapper *m, const ir_expr *e) {
    switch (e->kind) {
    case IR_X_GATHER: return gather_value(m, e);
    case IR_X_REGION: {
        operand *o = operand_of(m, e);
        if (o->frag) return o->val[0];
        return o->val[o->row ? 0 : m->lane];
    }
    case IR_X_CONST: return const_value(m, e);
    case IR_X_INDEX: {
        lp_expr *c = lp_cast(m->k, LP_I64, coord(m, e->axis));
        if (e->axis == m->rank - 1 && m->lane) c = bin(m, LO_ADD, c, ic(m, LP_I64, m->lane));
        return c;
    }
    case IR_X_CAST: return convert(m, eval(m, e->args[0]), e->to);
    case IR_X_OP: return eval_op(m, e);
    }
    return NULL;
}

/* ---- addressing -------------------------------------------------------------------------- */

/* Whether vectors of vec elements along the region's last dimension are aligned and
 * contiguous in its buffer, for every vector that starts at a multiple of vec there
 * (dsp_region_vector_runs), the buffer's address known aligned: a shared allocation, or a
 * kernel parameter unless the target says its pointers may be unaligned. */
static bool vector_ok(const dsp_query *q, const ir_region *r, int vec) {
    const tilec_buffer *b = r->buf;
    int bytes = vec * (int)tilec_dtype_size(b->dtype);
    if (vec < 2 || (bytes != 4 && bytes != 8 && bytes != 16)) return false;
    if (b->space == TILEC_SPACE_LOCAL || dsp_address_unknown(q, b)) return false;
    return dsp_region_vector_runs(r, vec);
}

/* The flat index's coordinates in the destination's shape (computed where first read). */
static void coordinates(mapper *m, lp_expr *flat) {
    int64_t inner = 1;
    for (int j = m->rank - 1; j >= 0; j--) {
        lp_expr *c = flat;
        if (m->dims[j] == 1) {
            c = ic(m, flat->type, 0);
        } else {
            if (inner > 1) c = bin(m, LO_DIV, c, ic(m, flat->type, inner));
            if (j > 0) c = bin(m, LO_REM, c, ic(m, flat->type, m->dims[j]));
        }
        m->cexpr[j] = c;
        m->coords[j] = NULL;
        inner *= m->dims[j];
    }
}

/* Coordinate d of the current element, in a register from its first read on. */
static lp_expr *coord(mapper *m, int d) {
    if (!m->coords[d]) m->coords[d] = hold(m, m->cexpr[d], "c");
    return m->coords[d];
}

/* The offset of operand o's element for the destination's current coordinates, the last
 * one plus `plus`. */
static lp_expr *operand_offset(mapper *m, const operand *o, int plus) {
    const ir_expr *x = o->x;
    if (o->flat) {
        lp_expr *f = plus ? bin(m, LO_ADD, m->first, ic(m, m->first->type, plus)) : m->first;
        return dsp_region_offset(m->l, &x->region, f);
    }
    int64_t dims[TILEC_MAX_RANK];
    int n = ir_region_shape(&x->region, dims);
    lp_expr *oc[TILEC_MAX_RANK];
    for (int i = 0; i < n; i++) oc[i] = ic(m, LP_I32, 0);
    for (int d = 0; d < m->rank; d++)
        if (x->bcast[d] >= 0) {
            lp_expr *c = coord(m, d);
            if (d == m->rank - 1 && plus) c = bin(m, LO_ADD, c, ic(m, c->type, plus));
            oc[x->bcast[d]] = c;
        }
    return dsp_region_offset_at(m->l, &x->region, oc);
}

/* Loads every operand's values for the current element or vector, in compute types. */
static void load_operands(mapper *m) {
    lp_kernel *k = m->k;
    for (int i = 0; i < m->nops; i++) {
        operand *o = &m->ops[i];
        lp_type ct = lp_accum_type(o->x->region.buf->dtype);
        if (o->frag) {
            o->val[0] = hold(m, lp_cast(k, ct, lp_load(k, o->buf, ic(m, LP_I32, o->frag_at[m->reg]))), "x");
            continue;
        }
        if (m->vec == 1 || o->row) {
            o->val[0] = hold(m, lp_cast(k, ct, lp_load(k, o->buf, operand_offset(m, o, 0))), "x");
            continue;
        }
        if (o->chunk) {
            int regs = lp_reg_new(k, o->buf->type, "xv");
            for (int j = 1; j < m->vec; j++) lp_reg_new(k, o->buf->type, "xv");
            lp_expr *at = hold(m, operand_offset(m, o, 0), "at");
            for (int c = 0; c < m->vec; c += o->chunk)
                lp_vload(k, m->into, regs + c, o->chunk, o->buf, c ? bin(m, LO_ADD, at, ic(m, at->type, c)) : at);
            for (int j = 0; j < m->vec; j++) o->val[j] = hold(m, lp_cast(k, ct, lp_reg(k, regs + j)), "x");
            continue;
        }
        for (int j = 0; j < m->vec; j++)
            o->val[j] = hold(m, lp_cast(k, ct, lp_load(k, o->buf, operand_offset(m, o, j))), "x");
    }
}

/* Whether no NaN the destination holds can show its bits: the destination is a local
 * array or fragment this kernel allocates (not a parameter) and every statement that reads
 * it is a map or an arithmetic reduction (sum, prod, mean, var, logsumexp …), never a copy
 * nor a comparing one (max, min, argmax …, whose selects can pass a NaN's bits on). A map's
 * own store selects the quiet NaN, and an arithmetic reduction's NaN is the one its target's
 * arithmetic makes of any NaN (0x7fffffff on NVIDIA; not part of the contract,
 * docs/codegen.md), so a NaN held here shows its payload nowhere. Then the store keeps the
 * NaN the arithmetic gave and the select (a test and a select an element: two instructions
 * of the ~30 a softmax spends on an element) is left out. */
static bool dst_nan_unseen(const mapper *m) {
    const tilec_buffer *b = m->st->dst.buf;
    const tilec_kernel *tk = m->k->tile;
    if (!tk || b->space != TILEC_SPACE_LOCAL || b->is_param) return false;
    for (int i = 0; i < tk->nstmts; i++) {
        const ir_stmt *s = tk->stmts[i];
        if (s->kind == IR_COPY && s->src.buf == b) return false;
        if (s->kind == IR_REDUCE && s->src.buf == b && ir_op(s->op)->compares) return false;
    }
    return true;
}

/* The value the destination stores for the current element (a NaN as its quiet one, where
 * its bits can show). */
static lp_expr *result(mapper *m, lp_type dt, tilec_dtype dtype) {
    lp_expr *v = eval(m, m->st->expr);
    if (!lp_is_float(v->type) || m->nan_unseen) return convert_store(m, v, dtype);
    v = hold(m, v, "res");
    return sel(m, bin(m, LO_NE, v, v), fc(m, dt, NAN), convert_store(m, v, dtype));
}

/* Whether the destination's stores round f32 results to f16 or bf16: then two go at once
 * (LX_PACK16: on CUDA sm_90 one paired conversion and one minimum for the two, where each
 * store took a conversion, a NaN test and a select). */
static bool pairs16(const mapper *m, tilec_dtype dtype) {
    return (dtype == TILEC_BF16 || dtype == TILEC_F16) && m->st->expr->type == TILEC_F32;
}

/* The value of the current element, held, as pairs16's pack takes it. */
static lp_expr *value16(mapper *m) { return hold(m, eval(m, m->st->expr), "res"); }

/* ---- the lowerings ------------------------------------------------------------------------ */

/* The destination's vector (elements), or 1: dense along its last dimension and aligned,
 * each vector inside one row. */
static int choose_vector(const mapper *m) {
    const ir_region *d = &m->st->dst;
    int size = (int)tilec_dtype_size(d->buf->dtype);
    for (int bytes = 16; bytes >= 4; bytes /= 2) {
        int vec = bytes / size;
        if (vec >= 2 && vec <= MAXVEC && m->dims[m->rank - 1] % vec == 0 && vector_ok(m->q, d, vec)) return vec;
    }
    return 1;
}

static void lane_warp(mapper *m, lp_expr **lane, lp_expr **warp) {
    lp_expr *tid = lp_cast(m->k, LP_I32, dsp_inst_tid(m->l));
    *lane = bin(m, LO_BAND, tid, ic(m, LP_I32, 31));
    *warp = bin(m, LO_SHR, tid, ic(m, LP_I32, 5));
}

/* The XOR of consts[j] over the set bits j of idx (n bits). */
static lp_expr *xor_bits(mapper *m, lp_expr *idx, const int64_t *consts, int n) {
    lp_expr *e = NULL;
    for (int j = 0; j < n; j++)
        if (consts[j]) {
            lp_expr *bit = bin(m, LO_BAND, bin(m, LO_SHR, idx, ic(m, LP_I32, j)), ic(m, LP_I32, 1));
            lp_expr *t = bin(m, LO_MUL, bit, ic(m, LP_I32, consts[j]));
            e = e ? bin(m, LO_BXOR, e, t) : t;
        }
    return e ? e : ic(m, LP_I32, 0);
}

static bool lower_fragment(mapper *m, char *why, size_t wn) {
    lp_kernel *k = m->k;
    const tilec_buffer *F = m->st->dst.buf;
    if (ir_region_elems(&m->st->dst) != F->elems) {
        snprintf(why, wn, "a map writes all of fragment '%s' (each lane its registers); write '%s' whole", F->name, F->name);
        return false;
    }
    if (1 << F->frag_reg > MAXREGS) {
        snprintf(why, wn, "'%s' holds more than %d registers a lane", F->name, MAXREGS);
        return false;
    }
    for (int i = 0; i < m->nops; i++) {
        operand *o = &m->ops[i];
        if (!is_frag(o->x->region.buf)) continue;
        o->frag = true;
        for (int r = 0; r < 1 << F->frag_reg; r++)
            if (!ir_map_frag_source(F, o->x, r, &o->frag_at[r])) { /* the verifier refuses it first */
                snprintf(why, wn, "no register of '%s' holds, in every lane, the element register %d of '%s' needs",
                         o->x->region.buf->name, r, F->name);
                return false;
            }
    }
    lp_expr *lane, *warp;
    lane_warp(m, &lane, &warp);
    lp_expr *lx = xor_bits(m, lane, F->frag + F->frag_reg, F->frag_lane);
    if (F->frag_warp) {
        lp_expr *wx = xor_bits(m, warp, F->frag + F->frag_reg + F->frag_lane, F->frag_warp);
        lx = bin(m, LO_BXOR, lx, wx);
    }
    lp_expr *lw = lx; /* not held: a map of fragments alone reads no coordinate */
    lp_buf *fb = lp_buf_for(k, F);
    bool pair = pairs16(m, F->dtype) && F->frag_reg >= 1;
    lp_expr *v[2];
    for (int r = 0; r < 1 << F->frag_reg; r++) {
        m->reg = r;
        m->first = bin(m, LO_BXOR, ic(m, LP_I32, ir_frag_xor(F->frag, F->frag_reg, r)), lw); /* held where read (coord) */
        coordinates(m, m->first);
        load_operands(m);
        if (!pair) {
            lp_store(k, m->into, fb, ic(m, LP_I32, r), result(m, fb->type, F->dtype));
            continue;
        }
        v[r % 2] = value16(m); /* registers r - 1 and r converted together */
        if (r % 2 == 0) continue;
        lp_expr *w = hold(m, lp_pack16(k, fb->type, v[0], v[1]), "pk");
        lp_store(k, m->into, fb, ic(m, LP_I32, r - 1), lp_half(k, w, fb->type, 0));
        lp_store(k, m->into, fb, ic(m, LP_I32, r), lp_half(k, w, fb->type, 1));
    }
    return true;
}

/* The operands' values and the coordinates of one unit (an element or a vector), loaded
 * before they are used: an unrolled loop loads several units' first. */
typedef struct unit_vals {
    lp_expr *val[MAXOPS][MAXVEC];
    lp_expr *coords[TILEC_MAX_RANK], *cexpr[TILEC_MAX_RANK];
    lp_expr *first;
} unit_vals;

/* Loads unit u's operands (u: an element's flat index, or a vector's number). */
static void load_unit(mapper *m, lp_expr *u, bool coords, unit_vals *save) {
    m->first = m->vec > 1 ? hold(m, bin(m, LO_MUL, u, ic(m, u->type, m->vec)), "e0") : u;
    if (coords) coordinates(m, m->first);
    load_operands(m);
    for (int i = 0; i < m->nops; i++) memcpy(save->val[i], m->ops[i].val, sizeof save->val[i]);
    memcpy(save->coords, m->coords, sizeof save->coords);
    memcpy(save->cexpr, m->cexpr, sizeof save->cexpr);
    save->first = m->first;
}

/* Computes and stores a unit loaded by load_unit. */
static void store_unit(mapper *m, const unit_vals *saved) {
    lp_kernel *k = m->k;
    const ir_stmt *st = m->st;
    for (int i = 0; i < m->nops; i++) memcpy(m->ops[i].val, saved->val[i], sizeof saved->val[i]);
    memcpy(m->coords, saved->coords, sizeof m->coords);
    memcpy(m->cexpr, saved->cexpr, sizeof m->cexpr);
    m->first = saved->first;
    lp_buf *db = lp_buf_for(k, st->dst.buf);
    operand dst = {.flat = dsp_region_dense(&st->dst)};
    ir_expr dx = {.kind = IR_X_REGION, .region = st->dst};
    for (int d = 0; d < m->rank; d++) dx.bcast[d] = d;
    dst.x = &dx;
    if (m->vec == 1) {
        lp_store(k, m->into, db, operand_offset(m, &dst, 0), result(m, db->type, st->dst.buf->dtype));
        return;
    }
    int regs = lp_reg_new(k, db->type, "y");
    for (int j = 1; j < m->vec; j++) lp_reg_new(k, db->type, "y");
    m->ngx = 0; /* this vector's gathers */
    bool pair = pairs16(m, st->dst.buf->dtype); /* vec is even: 16-bit elements in 4 bytes or more */
    lp_expr *v[2];
    for (m->lane = 0; m->lane < m->vec; m->lane++) {
        if (!pair) {
            lp_assign(k, m->into, regs + m->lane, result(m, db->type, st->dst.buf->dtype));
            continue;
        }
        v[m->lane % 2] = value16(m); /* lanes lane - 1 and lane converted together */
        if (m->lane % 2 == 0) continue;
        lp_expr *w = hold(m, lp_pack16(k, db->type, v[0], v[1]), "pk");
        lp_assign(k, m->into, regs + m->lane - 1, lp_half(k, w, db->type, 0));
        lp_assign(k, m->into, regs + m->lane, lp_half(k, w, db->type, 1));
    }
    m->lane = 0;
    lp_vstore(k, m->into, db, hold(m, operand_offset(m, &dst, 0), "at"), regs, m->vec);
}

static bool lower_map(dsp_lower *l, char *why, size_t wn) {
    const ir_stmt *st = l->q->st;
    mapper m = {.l = l, .k = l->k, .st = st, .q = l->q, .into = l->into, .vec = 1};
    m.rank = ir_region_shape(&st->dst, m.dims);
    m.nan_unseen = dst_nan_unseen(&m); /* once a statement: it reads the kernel's statements */
    if (!collect(&m, st->expr)) {
        snprintf(why, wn, "the expression reads more than %d regions; split it into two maps", MAXOPS);
        return false;
    }
    if (is_frag(st->dst.buf)) return lower_fragment(&m, why, wn);
    lp_kernel *k = l->k;
    int64_t n = ir_region_elems(&st->dst);
    bool alone = st->exec.scope == TILEC_SCOPE_THREAD || st->dst.buf->space == TILEC_SPACE_LOCAL;
    m.vec = st->dst.buf->space == TILEC_SPACE_LOCAL ? 1 : choose_vector(&m);
    bool coords = m.uses_index || !dsp_region_dense(&st->dst);
    for (int i = 0; i < m.nops; i++) {
        operand *o = &m.ops[i];
        int64_t od[TILEC_MAX_RANK];
        int orank = ir_region_shape(&o->x->region, od);
        o->flat = orank == m.rank && dsp_region_dense(&o->x->region);
        for (int d = 0; d < m.rank && o->flat; d++) o->flat = o->x->bcast[d] == d && od[d] == m.dims[d];
        o->row = m.vec > 1 && o->x->bcast[m.rank - 1] < 0;
        if (m.vec > 1 && !o->row) {
            int chunk = (int)(16 / tilec_dtype_size(o->x->region.buf->dtype));
            if (chunk > m.vec) chunk = m.vec;
            o->chunk = vector_ok(m.q, &o->x->region, chunk) ? chunk : 0;
        }
        coords = coords || !o->flat;
    }
    int64_t units = n / m.vec; /* elements or vectors */
    lp_type it = dsp_index_type(n, UNROLL * dsp_lane_step(l, NULL) * m.vec);
    lp_expr *first = alone ? ic(&m, it, 0) : lp_cast(k, it, dsp_inst_tid(l));
    lp_expr *stride = alone ? ic(&m, it, 1) : lp_cast(k, it, dsp_inst_size(l));
    int e = lp_reg_new(k, it, "e");
    unit_vals saved[UNROLL];
    if (m.vec > 1 && stride->kind == LX_CONST && units >= UNROLL * stride->i) {
        /* UNROLL vectors in flight per thread (as copy): a turn of the loop loads UNROLL
         * strides before it computes any; the vectors left over go one at a time after */
        int64_t d = stride->i;
        m.into = &lp_for(k, l->into, e, first, ic(&m, it, units - (UNROLL - 1) * d), ic(&m, it, UNROLL * d))->body;
        for (int u = 0; u < UNROLL; u++)
            load_unit(&m, u ? bin(&m, LO_ADD, lp_reg(k, e), ic(&m, it, u * d)) : lp_reg(k, e), coords, &saved[u]);
        for (int u = 0; u < UNROLL; u++) store_unit(&m, &saved[u]);
        first = lp_reg(k, e);
    }
    m.into = &lp_for(k, l->into, e, first, ic(&m, it, units), stride)->body;
    load_unit(&m, lp_reg(k, e), coords, &saved[0]);
    store_unit(&m, &saved[0]);
    return true;
}

/* Appends how each operand region of e is read in vectors of vec, in source order (seen:
 * the ones named already). */
static void describe_operands(ir_str *s, const mapper *m, const ir_expr *e, const ir_expr **seen, int *ns) {
    if (!e) return;
    if (e->kind == IR_X_REGION) {
        for (int i = 0; i < *ns; i++)
            if (same_operand(seen[i], e, m->rank)) return;
        if (*ns == MAXOPS) return;
        seen[(*ns)++] = e;
        int chunk = (int)(16 / tilec_dtype_size(e->region.buf->dtype));
        if (chunk > m->vec) chunk = m->vec;
        ir_str_printf(s, "; '%s' %s", e->region.buf->name,
                      e->bcast[m->rank - 1] < 0         ? "once a vector (broadcast along the row)"
                      : vector_ok(m->q, &e->region, chunk) ? "in vector loads"
                                                     : "element by element");
    }
    for (int i = 0; i < 3; i++) describe_operands(s, m, e->args[i], seen, ns);
}

static bool has_gather(const ir_expr *e) {
    if (!e) return false;
    if (e->kind == IR_X_GATHER) return true;
    for (int i = 0; i < 3; i++)
        if (has_gather(e->args[i])) return true;
    return false;
}

/* What lower_map does, in words: its choices made the same way (vectors: not for a local
 * destination; a gather's element read alone, at its element's coordinates). */
void dsp_map_plan(const dsp_query *q, char *out, size_t n) {
    const ir_stmt *st = q->st;
    mapper m = {.st = st, .q = q, .vec = 1};
    m.rank = ir_region_shape(&st->dst, m.dims);
    ir_str s = {0};
    long long elems = (long long)ir_region_elems(&st->dst);
    bool alone = st->exec.scope == TILEC_SCOPE_THREAD;
    ir_str_printf(&s, "%lld element%s", elems, elems == 1 ? "" : "s");
    if (is_frag(st->dst.buf)) {
        ir_str_printf(&s, "; each lane computes its %d registers of '%s'", 1 << st->dst.buf->frag_reg, st->dst.buf->name);
    } else if (st->dst.buf->space == TILEC_SPACE_LOCAL) {
        ir_str_printf(&s, "; each thread computes all of its own '%s'", st->dst.buf->name);
    } else if ((m.vec = choose_vector(&m)) > 1) {
        ir_str_printf(&s, "; %d-byte vectors of %d, each inside a row, %s (four in flight where each thread has four)",
                      m.vec * (int)tilec_dtype_size(st->dst.buf->dtype), m.vec,
                      alone ? "one thread computes them all" : "spread over the threads");
        const ir_expr *seen[MAXOPS];
        int ns = 0;
        describe_operands(&s, &m, st->expr, seen, &ns);
        if (has_gather(st->expr)) ir_str_printf(&s, "; a gather's elements read one by one (once a vector where one along the row)");
    } else {
        ir_str_printf(&s, "; element by element (the destination is not dense and aligned along its rows in vectors), %s",
                      alone ? "one thread computes them all" : "spread over the threads");
    }
    snprintf(out, n, "%s", s.oom || !s.data ? "" : s.data);
    ir_str_free(&s);
}

/* ---- predicates ----------------------------------------------------------------------------- */

static bool reads_fragment(const ir_expr *e, const char **name) {
    if (!e) return false;
    if (e->kind == IR_X_REGION && is_frag(e->region.buf)) {
        *name = e->region.buf->name;
        return true;
    }
    for (int i = 0; i < 3; i++)
        if (reads_fragment(e->args[i], name)) return true;
    return false;
}

static bool in_cta(const dsp_query *q, char *why, size_t n) {
    if (q->st->exec.scope != TILEC_SCOPE_GRID) return true;
    snprintf(why, n, "a map runs inside a CTA: write cta.map over the CTA's part (regions indexed by cta_id) for a "
                     "grid-wide elementwise pass");
    return false;
}

static bool fragments_in_fragments(const dsp_query *q, char *why, size_t n) {
    const char *name = NULL;
    if (!reads_fragment(q->st->expr, &name)) return true;
    snprintf(why, n, "'%s' is a fragment: a map reads a fragment only into a fragment destination, each lane its own "
                     "registers; copy '%s' to shared memory first", name, name);
    return false;
}

const dsp_case dsp_case_map = {
    .variant = "map",
    .priority = 10,
    .ops = 1u << DSP_MAP,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"in_cta", in_cta}, {"target_scope", dsp_pred_scope_on_target}, {"no_fragments", fragments_in_fragments}},
    .lower = lower_map,
    .summary = "element-wise expression, elements (16-byte vectors where aligned) spread over the instance's threads",
};

const dsp_case dsp_case_fragment_map = {
    .variant = "fragment_map",
    .priority = 10,
    .ops = 1u << DSP_MAP,
    .targets = DSP_ALL_TARGETS,
    .preds = {{"warp32", dsp_pred_frag_warps}, {"target_scope", dsp_pred_scope_on_target}},
    .lower = lower_map,
    .summary = "element-wise expression into a fragment: each lane computes its own registers",
    .fragments = true,
};
