/*
 * numeric.c — element formats (see numeric.h). Conversions are written out rather than
 * taken from a compiler's _Float16, so results are the same on every host.
 */
#include "numeric.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Rounds x to a binary format with `mant` fraction bits and normal exponents emin..emax. */
static double round_format(double x, int mant, int emin, int emax) {
    if (isnan(x) || isinf(x) || x == 0) return x;
    int e;
    frexp(x, &e); /* |x| = f * 2^e, f in [0.5, 1): the leading bit has exponent e - 1 */
    int lead = e - 1;
    if (lead < emin) lead = emin; /* subnormals share the smallest exponent's spacing */
    double quantum = ldexp(1.0, lead - mant);
    double r = nearbyint(x / quantum) * quantum; /* exact scaling; ties to even */
    if (fabs(r) >= ldexp(1.0, emax + 1)) return copysign(INFINITY, x);
    return r;
}

double num_round(lp_type t, double x) {
    switch (t) {
    case LP_F16: return round_format(x, 10, -14, 15);
    case LP_BF16: return round_format(x, 7, -126, 127);
    case LP_F32: return round_format(x, 23, -126, 127);
    default: return x;
    }
}

/* Bits of a value already representable in a format of `mant` fraction bits, exponent
 * bias `bias` and `ebits` exponent bits. */
static uint16_t encode16(double x, int mant, int ebits, int bias) {
    uint16_t sign = signbit(x) ? (uint16_t)(1u << 15) : 0;
    uint16_t emax_field = (uint16_t)((1u << ebits) - 1);
    if (isnan(x)) return (uint16_t)(sign | emax_field << mant | 1u << (mant - 1));
    if (isinf(x)) return (uint16_t)(sign | emax_field << mant);
    double a = fabs(x);
    if (a == 0) return sign;
    int e;
    frexp(a, &e);
    int lead = e - 1;
    if (lead < 1 - bias) /* subnormal: the fraction counts quanta of 2^(1-bias-mant) */
        return (uint16_t)(sign | (uint16_t)ldexp(a, bias - 1 + mant));
    uint16_t frac = (uint16_t)(ldexp(a, mant - lead) - ldexp(1.0, mant));
    return (uint16_t)(sign | (uint16_t)(lead + bias) << mant | frac);
}

static double decode16(uint16_t h, int mant, int ebits, int bias) {
    int sign = h >> 15, field = (h >> mant) & ((1 << ebits) - 1), frac = h & ((1 << mant) - 1);
    double v;
    if (field == (1 << ebits) - 1) v = frac ? NAN : INFINITY;
    else if (field == 0) v = ldexp(frac, 1 - bias - mant);
    else v = ldexp(frac + (1 << mant), field - bias - mant);
    return sign ? -v : v;
}

uint16_t num_to_f16(double x) { return encode16(num_round(LP_F16, x), 10, 5, 15); }
uint16_t num_to_bf16(double x) { return encode16(num_round(LP_BF16, x), 7, 8, 127); }
double num_from_f16(uint16_t h) { return decode16(h, 10, 5, 15); }
double num_from_bf16(uint16_t h) { return decode16(h, 7, 8, 127); }

size_t num_size(lp_type t) {
    switch (t) {
    case LP_F16: case LP_BF16: return 2;
    case LP_I64: case LP_F64: return 8;
    case LP_BOOL: return 1;
    case LP_F64X2: case LP_I64X2: return 16;
    default: return 4;
    }
}

double num_load_float(lp_type t, const void *p, int64_t i) {
    const unsigned char *b = (const unsigned char *)p + (size_t)i * num_size(t);
    uint16_t h;
    float f;
    double d;
    switch (t) {
    case LP_F16: memcpy(&h, b, 2); return num_from_f16(h);
    case LP_BF16: memcpy(&h, b, 2); return num_from_bf16(h);
    case LP_F32: memcpy(&f, b, 4); return f;
    case LP_F64: memcpy(&d, b, 8); return d;
    default: return (double)num_load_int(t, p, i);
    }
}

int64_t num_load_int(lp_type t, const void *p, int64_t i) {
    const unsigned char *b = (const unsigned char *)p + (size_t)i * num_size(t);
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    switch (t) {
    case LP_I32: memcpy(&i32, b, 4); return i32;
    case LP_U32: memcpy(&u32, b, 4); return u32;
    case LP_I64: memcpy(&i64, b, 8); return i64;
    case LP_BOOL: return *b;
    default: {
        double d = num_load_float(t, p, i);
        return isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)d : 0;
    }
    }
}

void num_store_float(lp_type t, void *p, int64_t i, double v) {
    unsigned char *b = (unsigned char *)p + (size_t)i * num_size(t);
    uint16_t h;
    float f;
    switch (t) {
    case LP_F16: h = num_to_f16(v); memcpy(b, &h, 2); return;
    case LP_BF16: h = num_to_bf16(v); memcpy(b, &h, 2); return;
    case LP_F32: f = (float)num_round(LP_F32, v); memcpy(b, &f, 4); return; /* exact */
    case LP_F64: memcpy(b, &v, 8); return;
    default: num_store_int(t, p, i, isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0); return;
    }
}

void num_store_int(lp_type t, void *p, int64_t i, int64_t v) {
    unsigned char *b = (unsigned char *)p + (size_t)i * num_size(t);
    uint32_t u = (uint32_t)(uint64_t)v;
    switch (t) {
    case LP_I32: case LP_U32: memcpy(b, &u, 4); return;
    case LP_I64: memcpy(b, &v, 8); return;
    case LP_BOOL: *b = v != 0; return;
    default: num_store_float(t, p, i, (double)v); return;
    }
}

double num_fmax(double a, double b, tilec_nan nan) {
    if (isnan(a) || isnan(b)) {
        if (nan == TILEC_NAN_IGNORE) return isnan(a) ? b : a;
        return isnan(a) ? a : b;
    }
    if (a == b) return signbit(a) ? b : a; /* +0 over -0 */
    return a > b ? a : b;
}

double num_fmin(double a, double b, tilec_nan nan) {
    if (isnan(a) || isnan(b)) {
        if (nan == TILEC_NAN_IGNORE) return isnan(a) ? b : a;
        return isnan(a) ? a : b;
    }
    if (a == b) return signbit(a) ? a : b; /* -0 under +0 */
    return a < b ? a : b;
}

uint16_t tilec_f16_from_double(double x) { return num_to_f16(x); }
uint16_t tilec_bf16_from_double(double x) { return num_to_bf16(x); }
double tilec_f16_to_double(uint16_t bits) { return num_from_f16(bits); }
double tilec_bf16_to_double(uint16_t bits) { return num_from_bf16(bits); }

/* ---- decimal text, rounded once ------------------------------------------------------------ */

/* Unsigned integers of up to BIG_LIMBS 32-bit limbs, least significant first: enough for
 * every comparison below (a number token is under 512 characters, and only values within
 * the formats' ranges get here). */
enum { BIG_LIMBS = 320 };
typedef struct big {
    int n;
    uint32_t d[BIG_LIMBS];
    bool overflow;
} big;

static void big_mul_add(big *b, uint32_t m, uint32_t add) {
    uint64_t carry = add;
    for (int i = 0; i < b->n; i++) {
        uint64_t v = (uint64_t)b->d[i] * m + carry;
        b->d[i] = (uint32_t)v;
        carry = v >> 32;
    }
    if (!carry) return;
    if (b->n == BIG_LIMBS) { b->overflow = true; return; }
    b->d[b->n++] = (uint32_t)carry;
}

static void big_mul_pow10(big *b, int64_t e) {
    for (; e >= 9 && !b->overflow; e -= 9) big_mul_add(b, 1000000000u, 0);
    for (; e > 0 && !b->overflow; e--) big_mul_add(b, 10, 0);
}

static void big_shl(big *b, int64_t bits) {
    for (; bits >= 32 && !b->overflow; bits -= 32) {
        if (b->n == BIG_LIMBS) { b->overflow = true; return; }
        memmove(b->d + 1, b->d, (size_t)b->n * sizeof b->d[0]);
        b->d[0] = 0;
        b->n++;
    }
    if (bits > 0 && !b->overflow) big_mul_add(b, 1u << bits, 0);
}

static int big_cmp(const big *a, const big *b) {
    int na = a->n, nb = b->n;
    while (na > 0 && a->d[na - 1] == 0) na--;
    while (nb > 0 && b->d[nb - 1] == 0) nb--;
    if (na != nb) return na < nb ? -1 : 1;
    for (int i = na - 1; i >= 0; i--)
        if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
    return 0;
}

/* The text as digits D and a power of ten E (value = D * 10^E); the exponent saturates,
 * far beyond any value a format holds. */
static void decimal_parts(const char *text, size_t n, big *D, int64_t *E) {
    *D = (big){0};
    int64_t e = 0, ex = 0;
    bool frac = false, neg = false;
    size_t i = 0;
    for (; i < n && text[i] != 'e' && text[i] != 'E'; i++) {
        if (text[i] == '.') { frac = true; continue; }
        if (text[i] < '0' || text[i] > '9') continue;
        if (D->n == 0 && text[i] == '0') { e -= frac; continue; } /* leading zeros */
        if (D->n == 0) D->n = 1, D->d[0] = 0;
        big_mul_add(D, 10, (uint32_t)(text[i] - '0'));
        e -= frac;
    }
    if (i < n) { /* the exponent */
        i++;
        if (i < n && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
        for (; i < n && text[i] >= '0' && text[i] <= '9'; i++)
            if (ex < 100000) ex = ex * 10 + (text[i] - '0');
    }
    *E = e + (neg ? -ex : ex);
}

/* The sign of (text's value - d), d finite and >= 0; 2 when it is out of reach (a value
 * far outside every format, where no rounding question arises). */
static int decimal_cmp(const char *text, size_t n, double d) {
    big L, R = {0};
    int64_t E;
    decimal_parts(text, n, &L, &E);
    if (L.n == 0) return d == 0 ? 0 : -1;
    if (d == 0) return 1;
    if (E > 2000 || E < -2000) return 2;
    int e2;
    double m = frexp(d, &e2); /* d = M * 2^B with M an integer of 53 bits */
    uint64_t M = (uint64_t)ldexp(m, 53);
    int64_t B = (int64_t)e2 - 53;
    R.n = 2;
    R.d[0] = (uint32_t)M;
    R.d[1] = (uint32_t)(M >> 32);
    /* D * 10^E against M * 2^B, both sides made integers */
    if (E > 0) big_mul_pow10(&L, E);
    else big_mul_pow10(&R, -E);
    if (B > 0) big_shl(&R, B);
    else big_shl(&L, -B);
    if (L.overflow || R.overflow) return 2;
    return big_cmp(&L, &R);
}

/* b /= d, returning the remainder. */
static uint32_t big_div_small(big *b, uint32_t d) {
    uint64_t rem = 0;
    for (int i = b->n - 1; i >= 0; i--) {
        uint64_t cur = rem << 32 | b->d[i];
        b->d[i] = (uint32_t)(cur / d);
        rem = cur % d;
    }
    while (b->n > 0 && b->d[b->n - 1] == 0) b->n--;
    return (uint32_t)rem;
}

bool num_decimal_integer(const char *text, size_t n, bool neg, int64_t *out, bool *too_big) {
    big D;
    int64_t E;
    decimal_parts(text, n, &D, &E);
    *too_big = false;
    *out = 0;
    if (D.n == 0) return true; /* zero */
    for (; E < 0; E++) /* the fraction's digits must all be 0 */
        if (big_div_small(&D, 10) != 0) return false;
    if (E > 19) { *too_big = true; return true; }
    big_mul_pow10(&D, E);
    int len = D.n;
    while (len > 0 && D.d[len - 1] == 0) len--;
    uint64_t mag = len > 2 || D.overflow ? UINT64_MAX : (uint64_t)(len > 1 ? D.d[1] : 0) << 32 | (len ? D.d[0] : 0);
    if (len > 2 || D.overflow || mag > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) { *too_big = true; return true; }
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return true;
}

bool num_decimal_is_exact(const char *text, size_t n, double nearest) {
    return isfinite(nearest) && decimal_cmp(text, n, fabs(nearest)) == 0;
}

double num_round_decimal(lp_type t, const char *text, size_t n, double nearest) {
    double d = fabs(nearest), r = num_round(t, d);
    if (t == LP_F64 || !isfinite(d) || r == d) return copysign(r, nearest);
    /* d rounds to r in t; the text's own value does too unless d is exactly halfway
     * between two values of t (the value may then lie on either side of it) */
    int mant = t == LP_F16 ? 10 : t == LP_BF16 ? 7 : 23, emin = t == LP_F16 ? -14 : -126;
    int e;
    frexp(d, &e);
    double quantum = ldexp(1.0, (e - 1 < emin ? emin : e - 1) - mant);
    if (fmod(d, quantum) != quantum / 2) return copysign(r, nearest);
    int c = decimal_cmp(text, n, d);
    if (c == 0 || c == 2) return copysign(r, nearest); /* a true tie: to even */
    return copysign(num_round(t, c > 0 ? d + quantum / 4 : d - quantum / 4), nearest);
}

void num_fill_typed(ir_value *v, tilec_dtype t, const char *text, size_t n) {
    lp_type lt = lp_type_of(t);
    v->dtype = t;
    v->exact = true;
    v->typed = v->f;
    if (v->is_int) { /* an integer into a float buffer: rounded from its digits, not via f64 */
        char digits[24];
        uint64_t mag = v->i < 0 ? (uint64_t)(-(v->i + 1)) + 1 : (uint64_t)v->i;
        int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)mag);
        v->typed = num_round_decimal(lt, digits, (size_t)len, (double)v->i);
    } else if (text && isfinite(v->f) && !ir_dtype_is_float(t)) { /* an integer buffer: the exact integer */
        v->exact = num_decimal_integer(text, n, signbit(v->f), &v->i, &v->too_big);
    } else if (text && isfinite(v->f)) {
        v->typed = num_round_decimal(lt, text, n, v->f);
        v->exact = num_decimal_is_exact(text, n, v->f);
    } else if (!ir_dtype_is_float(t)) { /* a double given for an integer buffer (the builder) */
        v->exact = isfinite(v->f) && v->f == floor(v->f);
        v->too_big = v->exact && fabs(v->f) >= 0x1p63;
        if (v->exact && !v->too_big) v->i = (int64_t)v->f;
    } else {
        v->typed = num_round(lt, v->f);
    }
}
