/*
 * numeric.c — element formats (see numeric.h). Conversions are written out rather than
 * taken from a compiler's _Float16, so results are the same on every host.
 */
#include "numeric.h"

#include <math.h>
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
