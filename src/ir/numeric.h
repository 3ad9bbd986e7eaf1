/*
 * numeric.h — element formats shared by the simulator and the reference: reading and
 * writing elements of every dtype in host memory, f16 / bf16 conversions with one
 * round-to-nearest-even, and the max / min the format defines (NaN policies, -0 < +0).
 */
#ifndef TILEC_NUMERIC_H
#define TILEC_NUMERIC_H

#include "loop.h"

#include <stdint.h>

/* Rounds x to the nearest value of f16, bf16 or f32 (ties to even; overflow to ±inf). */
double num_round(lp_type t, double x);
uint16_t num_to_f16(double x);
uint16_t num_to_bf16(double x);
double num_from_f16(uint16_t h);
double num_from_bf16(uint16_t h);

/* Elements of type t at index i of host memory p. Floats come back as double, integers
 * as int64 (u32 zero-extended). */
double num_load_float(lp_type t, const void *p, int64_t i);
int64_t num_load_int(lp_type t, const void *p, int64_t i);
/* Stores with one rounding (floats) or wrapping (integers) to the element type. */
void num_store_float(lp_type t, void *p, int64_t i, double v);
void num_store_int(lp_type t, void *p, int64_t i, int64_t v);
size_t num_size(lp_type t);

/* max / min of the format: propagate (any NaN gives NaN) or ignore (IEEE maxNum: a NaN
 * loses to a number); between -0 and +0, max is +0 and min is -0. */
double num_fmax(double a, double b, tilec_nan nan);
double num_fmin(double a, double b, tilec_nan nan);

/* Decimal text, rounded once. `text` is an unsigned number as the .tile format writes one
 * (digits, an optional fraction, an optional exponent: "1.5", ".25", "6.0E+4"), `n` its
 * length and `nearest` its value rounded to f64 (strtod). Returns the text's exact value
 * rounded to nearest-even in t (f16, bf16, f32 or f64), overflowing to inf: never the f64
 * value rounded a second time. */
double num_round_decimal(lp_type t, const char *text, size_t n, double nearest);
/* Whether the text's exact value (negated when neg) is an integer; if so *out is it, or
 * *too_big says it is beyond int64. */
bool num_decimal_integer(const char *text, size_t n, bool neg, int64_t *out, bool *too_big);
/* Whether the text's exact value equals `nearest` (so no rounding happened). */
bool num_decimal_is_exact(const char *text, size_t n, double nearest);
/* Completes a fill constant for a destination of dtype t: sets dtype, typed (one rounding
 * from the number as written) and exact. `text` is the unsigned float as written, or NULL
 * for a value given as a double (the builder API), which is exact as given. */
void num_fill_typed(ir_value *v, tilec_dtype t, const char *text, size_t n);

#endif
