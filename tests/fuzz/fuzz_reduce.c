/*
 * fuzz_reduce.c — libFuzzer over tilec_reduce's descriptor checks and planner, on the
 * simulator backend: the bytes become a descriptor (op, dtype, NaN policy, rank, extents,
 * axes, accumulate — valid or not) and a choice of pointers (NULL, overlapping,
 * unaligned). Every call must return a status without crashing; a descriptor small enough
 * to run is run, and its result must match the double-precision reference. Built and run
 * by scripts/fuzz.
 */
#include "../support.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_RUN = 1 << 14 }; /* elements: larger tensors are only planned */

typedef struct bytes {
    const uint8_t *p;
    size_t n;
} bytes;

static unsigned take(bytes *b) {
    if (!b->n) return 0;
    b->n--;
    return *b->p++;
}

static int64_t extent(bytes *b) {
    unsigned k = take(b);
    switch (k >> 6) { /* mostly small, sometimes huge or negative */
    case 0: return k & 63;
    case 1: return (int64_t)(k & 63) * 37 + 1;
    case 2: return (int64_t)1 << (k & 63) % 63;
    default: return k & 1 ? INT64_MAX - (k & 31) : -(int64_t)(k & 31);
    }
}

/* Element k of a small alphabet: integers and sixteenths that every dtype holds and whose
 * sums are exact, and for floats ±0, ±inf and NaN. */
static void put(tilec_dtype dt, void *at, unsigned k) {
    static const double special[] = {0.0, -0.0, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0};
    bool flt = dt == TILEC_F16 || dt == TILEC_BF16 || dt == TILEC_F32 || dt == TILEC_F64;
    double v = flt && k < 5 ? special[k] : flt ? ((double)k - 128.0) / 16.0 : (double)k - 128.0;
    switch (dt) {
    case TILEC_F16: { uint16_t h = tilec_f16_from_double(v); memcpy(at, &h, 2); break; }
    case TILEC_BF16: { uint16_t h = tilec_bf16_from_double(v); memcpy(at, &h, 2); break; }
    case TILEC_F32: { float f = (float)v; memcpy(at, &f, 4); break; }
    case TILEC_F64: memcpy(at, &v, 8); break;
    case TILEC_I32: { int32_t x = (int32_t)v; memcpy(at, &x, 4); break; }
    case TILEC_U32: { uint32_t x = (uint32_t)(int32_t)v; memcpy(at, &x, 4); break; }
    default: { int64_t x = (int64_t)v; memcpy(at, &x, 8); break; }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bytes b = {data, size};
    tilec_reduce_desc d = {0};
    d.op = (tilec_op)(take(&b) % 5);       /* some out of range */
    d.dtype = (tilec_dtype)(take(&b) % 9);
    d.nan = (tilec_nan)(take(&b) % 3);
    d.rank = (int)(take(&b) % 11) - 1;     /* -1 to 9 */
    d.accumulate = take(&b) & 1;
    for (int i = 0; i < TILEC_MAX_RANK; i++) d.shape[i] = extent(&b);
    d.naxes = (int)(take(&b) % 11) - 1;
    for (int i = 0; i < TILEC_MAX_RANK; i++) d.axes[i] = (int)(take(&b) % 21) - 10;
    unsigned ptrs = take(&b);
    tilec_ctx *ctx;
    if (tilec_open(&ctx) != TILEC_OK) return 0;
    if (tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0) != TILEC_OK) abort();
    char *text = NULL;
    tilec_status planned = tilec_reduce_explain(ctx, &d, &text);
    tilec_free(text);
    /* runnable: a valid descriptor (it planned) whose extents other than 0 multiply to
     * few elements (a zero extent can leave a large output) */
    bool small = false;
    if (planned == TILEC_OK) {
        int64_t n = 1;
        small = true;
        for (int i = 0; i < d.rank && small; i++)
            small = !__builtin_mul_overflow(n, d.shape[i] ? d.shape[i] : 1, &n) && n <= MAX_RUN;
    }
    if (!small) { /* only the argument checks: an invalid descriptor gets pointers that
                   * overlap or not (it must fail before it touches them), a valid large
                   * one NULL (the library cannot know a buffer's size) */
        unsigned char dummy[64] = {0};
        bool valid = planned == TILEC_OK;
        tilec_reduce(ctx, &d, ptrs & 1 || valid ? NULL : dummy, ptrs & 2 || valid ? NULL : dummy + (ptrs & 8 ? 8 : 32));
        tilec_close(ctx);
        return 0;
    }
    size_t es = tilec_dtype_size(d.dtype);
    int64_t in_n = desc_elems(&d, false), out_n = desc_elems(&d, true);
    size_t shift = ptrs & 4 ? es : 0; /* an unaligned input */
    unsigned char *in = calloc((size_t)in_n * es + 16, 1), *before = calloc((size_t)out_n * es + 16, 1);
    unsigned char *after = calloc((size_t)out_n * es + 16, 1);
    for (int64_t i = 0; i < in_n; i++) put(d.dtype, in + shift + (size_t)i * es, (unsigned char)(take(&b) ^ (unsigned)(i * 151)));
    for (int64_t i = 0; i < out_n; i++) put(d.dtype, before + (size_t)i * es, (unsigned char)(i * 29 + 7));
    memcpy(after, before, (size_t)out_n * es);
    tilec_status st = tilec_reduce(ctx, &d, in + shift, after);
    if (st == TILEC_OK) {
        tilec_check_result r;
        if (tilec_reduce_check(ctx, &d, in + shift, before, after, &r) != TILEC_OK || !r.ok) {
            fprintf(stderr, "fuzz_reduce: %s %s rank %d: the result does not match the reference (first bad %lld)\n",
                    tilec_op_name(d.op), tilec_dtype_name(d.dtype), d.rank, (long long)r.first_bad);
            abort();
        }
    }
    free(in);
    free(before);
    free(after);
    tilec_close(ctx);
    return 0;
}
