/*
 * test_sim.c — every in-kernel variant run on the simulator against the double-precision
 * reference: the test matrix of docs/testing.md (lengths, thread counts, warp sizes 32 and
 * 64, ops, dtypes, accum, NaN policies, special values, axes, layouts, scopes), plus
 * bitwise agreement between lanes and between runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../src/runtime/sim.h"
#include "map_programs.h"
#include "programs.h"

#include <time.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void expect_ok(const sim_case_result *r, const char *src, int ws) {
    if (r->status != TILEC_OK || !r->ok)
        fail_msg("warp size %d, status %s:\n%s\n--- program ---\n%s", ws, tilec_status_name(r->status), r->why, src);
}

/* Rows of `len` elements reduced at CTA scope by each variant that accepts the shape. */
static void test_lengths_threads_variants(void **state) {
    (void)state;
    int ran[5] = {0};
    char src[1024];
    for (int ws = 32; ws <= 64; ws *= 2)
        for (int i = 0; i < MATRIX_ROWS; i++) {
            const char *variant;
            int len, threads;
            matrix_program(i, src, sizeof src, &variant, &len, &threads);
            sim_case_result r = run_on_sim(src, ws, 7 + (uint64_t)len, true, NULL);
            bool long_rows_many_warps = ws == 32 && threads >= 256 && len >= 65;
            if (r.status == TILEC_ERR_DISPATCH && variant && strcmp(variant, "cta_tree") == 0 && !long_rows_many_warps)
                continue; /* cta_tree takes only few long rows on several whole warps */
            expect_ok(&r, src, ws);
            ran[i % 5]++;
        }
    for (int v = 0; v < 5; v++) assert_true(ran[v] > 0);
}

/* Every dtype, op, accum and NaN policy, on rows carrying every special pattern. */
static void test_dtypes_ops_accum_nan(void **state) {
    (void)state;
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", "i32", "u32", "i64"};
    /* the long rows: 9 of f64[3001] take 211 KiB of shared memory, within the 227 KiB a CTA can have */
    static const struct { int threads, len; } shapes[] = {{96, 33}, {256, 100}, {64, 7}, {128, 3001}};
    char src[1024];
    for (int ws = 32; ws <= 64; ws *= 2)
        for (size_t d = 0; d < COUNT(dtypes); d++)
            for (int o = 0; o < TILEC_OP_COUNT; o++)
                for (int accum = 0; accum < 2; accum++)
                    for (int ignore = 0; ignore < 2; ignore++)
                        for (size_t s = 0; s < COUNT(shapes); s++) {
                            bool flt = dtypes[d][0] == 'f' || dtypes[d][0] == 'b';
                            if (!tilec_op_supports((tilec_op)o, dtype_named(dtypes[d]), accum)) continue;
                            if (ignore && (!flt || !tilec_op_compares((tilec_op)o))) continue;
                            bool two = tilec_op_outputs((tilec_op)o) == 2; /* the indices in I, through Is */
                            char idx[4][64] = {"", "", "", ""};
                            if (two) {
                                const char *dt2 = tilec_dtype_name(tilec_op_second_dtype((tilec_op)o, dtype_named(dtypes[d])));
                                snprintf(idx[0], sizeof idx[0], ", I: %s[%d] global", dt2, PAT_COUNT);
                                snprintf(idx[1], sizeof idx[1], "  shared Is: %s[%d]\n", dt2, PAT_COUNT);
                                snprintf(idx[2], sizeof idx[2], "Is, ");
                                snprintf(idx[3], sizeof idx[3], "  cta.copy(I, Is)\n");
                            }
                            snprintf(src, sizeof src,
                                     "kernel k(A: %s[%d, %d] global, B: %s[%d] global%s) threads=%d {\n"
                                     "  shared As: %s[%d, %d]\n  shared Bs: %s[%d]\n%s"
                                     "  cta.copy(As, A)\n  cta.copy(Bs, B)\n  cta.sync()\n"
                                     "  cta.%s(Bs, %sAs%s%s)\n  cta.copy(B, Bs)\n%s}\n",
                                     dtypes[d], PAT_COUNT, shapes[s].len, dtypes[d], PAT_COUNT, idx[0], shapes[s].threads,
                                     dtypes[d], PAT_COUNT, shapes[s].len, dtypes[d], PAT_COUNT, idx[1], tilec_op_name((tilec_op)o),
                                     idx[2], accum ? ", accum=true" : "", ignore ? ", nan=ignore" : "", idx[3]);
                            sim_case_result r = run_on_sim(src, ws, 100 + s, true, NULL);
                            expect_ok(&r, src, ws);
                        }
}

/* Axes first, middle, last, several and negative; padded and column-major layouts;
 * offset slices; ids; every scope; registers. */
static const char *const shapes_and_scopes[] = {
    /* axis 0 of a 3-D tile, padded rows */
    "kernel k(A: f32[40, 6, 5] global, B: f32[6, 5] global) threads=128 {\n"
    "  shared S: f32[40, 6, 5] strides=(33, 5, 1)\n  shared R: f32[6, 5]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  cta.sum(R, S, axes=(0))\n  cta.copy(B, R)\n}\n",
    /* interleaved strides: 2i + 3j reaches nine distinct offsets on [3, 3], though no
     * stride steps over what the smaller one reaches */
    "kernel k(A: f32[5, 3, 3] global, B: f32[5] global, C: f32[3] global) threads=64 {\n"
    "  shared S: f32[5, 3, 3] strides=(11, 2, 3)\n  shared R: f32[5]\n  shared Q: f32[3]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  cta.sum(R, S, axes=(1, 2))\n  cta.min(Q, S, axes=(0, 2))\n"
    "  cta.copy(B, R)\n  cta.copy(C, Q)\n}\n",
    /* grid_cols on CTAs narrower than a block of columns (32 lanes x 16 bytes): every
     * column folded, with one chunk of rows and with partials of several */
    "kernel k(A: f32[16, 128] global, B: f32[128] global) threads=32 {\n"
    "  grid.sum(B, A, axes=(0), variant=grid_cols)\n}\n",
    "kernel k(A: f16[3000, 256] global, B: f16[256] global) threads=64 {\n"
    "  grid.max(B, A, axes=(0), nan=ignore, variant=grid_cols)\n}\n",
    /* the middle axis, column-major shared layout */
    "kernel k(A: f32[4, 70, 3] global, B: f32[4, 3] global) threads=96 {\n"
    "  shared S: f32[4, 70, 3] strides=(1, 12, 4)\n  shared R: f32[4, 3]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  cta.max(R, S, axes=(1))\n  cta.copy(B, R)\n}\n",
    /* several axes, negative, destination of another shape */
    "kernel k(A: f64[3, 5, 7, 9] global, B: f64[5, 1] global) threads=64 {\n"
    "  shared S: f64[3, 5, 7, 9]\n  shared R: f64[5, 1]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  cta.min(R, S, axes=(0, -1, 2))\n  cta.copy(B, R)\n}\n",
    /* every axis: one output */
    "kernel k(A: f32[33, 31] global, B: f32[1] global) threads=256 {\n"
    "  shared S: f32[33, 31]\n  shared R: f32[1]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  cta.sum(R, S, axes=(0, 1))\n  cta.copy(B, R)\n}\n",
    /* offset slices of source and destination, an integer index */
    "kernel k(A: f32[10, 80] global, B: f32[12] global) threads=64 {\n"
    "  shared S: f32[10, 80]\n  shared R: f32[12]\n"
    "  cta.copy(S, A)\n  cta.copy(R, B)\n  cta.sync()\n"
    "  cta.sum(R[3:9], S[2:8, 5:70])\n  cta.max(R[10], S[9, 1:], axes=(0))\n  cta.copy(B, R)\n}\n",
    /* the source straight from global memory into global memory */
    "kernel k(A: f32[6, 50] global, B: f32[6] global) threads=64 {\n"
    "  cta.sum(B, A)\n}\n",
    /* one CTA per tile, ids on global buffers */
    "kernel k(A: f32[5, 16, 40] global, B: f32[5, 16] global) threads=128 grid=5 {\n"
    "  shared S: f32[16, 40]\n  shared R: f32[16]\n"
    "  cta.copy(S, A[cta_id])\n  cta.sync()\n  cta.max(R, S, nan=ignore)\n  cta.copy(B[cta_id], R)\n}\n",
    /* warp slices with warp_id; a partial last warp (96 threads at warp size 64) */
    "kernel k(A: f32[3, 6, 45] global, B: f32[3, 6] global) threads=96 {\n"
    "  shared S: f32[3, 6, 45]\n  shared R: f32[3, 6]\n"
    "  cta.copy(S, A)\n  cta.fill(R, 0)\n  cta.sync()\n  warp.sum(R[warp_id], S[warp_id])\n"
    "  cta.sync()\n  cta.copy(B, R)\n}\n",
    /* one selected warp */
    "kernel k(A: f32[7, 20] global, B: f32[7] global) threads=96 {\n"
    "  shared S: f32[7, 20]\n  shared R: f32[7]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  warp[1].min(R, S)\n  cta.sync()\n  cta.copy(B, R)\n}\n",
    /* thread scope: each thread its own row */
    "kernel k(A: i32[64, 9] global, B: i32[64] global) threads=64 {\n"
    "  shared S: i32[64, 9]\n  shared R: i32[64]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  thread.sum(R[thread_id], S[thread_id])\n  cta.sync()\n  cta.copy(B, R)\n}\n",
    /* registers at thread scope */
    "kernel k(A: f32[32, 12] global, B: f32[32, 3] global) threads=32 {\n"
    "  local L: f32[3, 4]\n  local M: f32[3]\n  thread.copy(L, A[thread_id])\n"
    "  thread.max(M, L)\n  thread.copy(B[thread_id], M)\n}\n",
    /* registers at warp scope: every lane gets the warp's total */
    "kernel k(A: f32[64, 8] global, B: f32[64, 2] global) threads=64 {\n"
    "  local L: f32[2, 4]\n  local M: f32[2]\n  thread.copy(L, A[thread_id])\n"
    "  warp.sum(M, L)\n  thread.copy(B[thread_id], M)\n}\n",
    /* registers reduced into shared memory at warp scope, then read back per thread */
    "kernel k(A: f32[64, 5] global, B: f32[2] global) threads=64 {\n"
    "  local L: f32[5]\n  shared R: f32[2]\n  thread.copy(L, A[thread_id])\n  cta.fill(R, -1)\n  cta.sync()\n"
    "  warp.max(R[warp_id], L, axes=(0))\n  cta.sync()\n  cta.copy(B, R)\n}\n",
    /* a shared source reduced into registers at warp scope */
    "kernel k(A: f32[3, 70] global, B: f32[64, 3] global) threads=64 {\n"
    "  shared S: f32[3, 70]\n  local M: f32[3]\n  cta.copy(S, A)\n  cta.sync()\n"
    "  warp.sum(M, S)\n  thread.copy(B[thread_id], M)\n}\n",
    /* registers at warp scope on a partial last warp (48 threads): shared slots */
    "kernel k(A: f32[48, 6] global, B: f32[48, 2] global) threads=48 {\n"
    "  local L: f32[2, 3]\n  local M: f32[2]\n  thread.copy(L, A[thread_id])\n"
    "  warp.max(M, L, nan=ignore)\n  thread.copy(B[thread_id], M)\n}\n",
    "kernel k(A: f32[3, 70] global, B: f32[40, 3] global) threads=40 {\n"
    "  shared S: f32[3, 70]\n  local M: f32[3]\n  cta.copy(S, A)\n  cta.sync()\n"
    "  warp.sum(M, S)\n  thread.copy(B[thread_id], M)\n}\n",
    /* accumulate twice into the same destination */
    "kernel k(A: f32[4, 50] global, B: f32[4] global) threads=128 {\n"
    "  shared S: f32[4, 50]\n  shared R: f32[4]\n  cta.copy(S, A)\n  cta.copy(R, B)\n  cta.sync()\n"
    "  cta.sum(R, S, accum=true)\n  cta.sum(R, S, accum=true)\n  cta.copy(B, R)\n}\n",
};

/* warpgroup scope needs 32-lane warps */
static const char *const warpgroup_programs[] = {
    "kernel k(A: f32[2, 4, 300] global, B: f32[2, 4] global) threads=256 {\n"
    "  shared S: f32[2, 4, 300]\n  shared R: f32[2, 4]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  warpgroup.sum(R[warpgroup_id], S[warpgroup_id])\n"
    "  cta.sync()\n  cta.copy(B, R)\n}\n",
    "kernel k(A: f32[2, 2, 999] global, B: f32[2, 2] global) threads=256 {\n"
    "  shared S: f32[2, 2, 999]\n  shared R: f32[2, 2]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  warpgroup.max(R[warpgroup_id], S[warpgroup_id], variant=smem_tree)\n"
    "  cta.sync()\n  cta.copy(B, R)\n}\n",
};

static void test_shapes_and_scopes(void **state) {
    (void)state;
    for (size_t i = 0; i < COUNT(shapes_and_scopes); i++)
        for (int ws = 32; ws <= 64; ws *= 2) {
            sim_case_result r = run_on_sim(shapes_and_scopes[i], ws, 3 + i, true, NULL);
            expect_ok(&r, shapes_and_scopes[i], ws);
        }
    for (size_t i = 0; i < COUNT(warpgroup_programs); i++) {
        sim_case_result r = run_on_sim(warpgroup_programs[i], 32, 11, true, NULL);
        expect_ok(&r, warpgroup_programs[i], 32);
    }
}

/* After a butterfly every lane holds the same bits, and a second run gives the same bits. */
static void test_bitwise(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[64, 37] global, B: f32[64, 1] global) threads=64 {\n"
                      "  local L: f32[37]\n  local M: f32[1]\n  thread.copy(L, A[thread_id])\n"
                      "  warp.sum(M, L)\n  thread.copy(B[thread_id], M)\n}\n";
    for (int ws = 32; ws <= 64; ws *= 2) {
        void *first[4], *second[4], **p1 = first, **p2 = second;
        sim_case_result r1 = run_on_sim(src, ws, 5, false, &p1);
        sim_case_result r2 = run_on_sim(src, ws, 5, false, &p2);
        expect_ok(&r1, src, ws);
        expect_ok(&r2, src, ws);
        const uint32_t *b = first[1];
        for (int t = 0; t < 64; t++) assert_int_equal(b[t], b[(t / ws) * ws]); /* a warp agrees */
        assert_memory_equal(first[1], second[1], 64 * sizeof(float));
        for (int i = 0; i < 2; i++) { free(first[i]); free(second[i]); }
    }
    /* every variant, twice */
    static const char *const variants[] = {"shared", "cta_tree", "sequential", "smem_tree"};
    for (size_t v = 0; v < COUNT(variants); v++) {
        char prog[512];
        snprintf(prog, sizeof prog,
                 "kernel k(A: f32[3, 1000] global, B: f32[3] global) threads=256 {\n"
                 "  shared S: f32[3, 1000]\n  shared R: f32[3]\n  cta.copy(S, A)\n  cta.sync()\n"
                 "  cta.sum(R, S, variant=%s)\n  cta.copy(B, R)\n}\n", variants[v]);
        void *first[2], *second[2], **p1 = first, **p2 = second;
        sim_case_result r1 = run_on_sim(prog, 32, 9, false, &p1);
        sim_case_result r2 = run_on_sim(prog, 32, 9, false, &p2);
        expect_ok(&r1, prog, 32);
        expect_ok(&r2, prog, 32);
        assert_memory_equal(first[1], second[1], 3 * sizeof(float));
        for (int i = 0; i < 2; i++) { free(first[i]); free(second[i]); }
    }
}

/* f16 sums accumulate in f32: 20000 ones sum to 20000, which f16 holds exactly but an f16
 * accumulator would stop at 2048. */
static void test_f16_accumulates_in_f32(void **state) {
    (void)state;
    const char *src = "kernel k(A: f16[20000] global, B: f16[1] global) threads=256 {\n"
                      "  shared S: f16[20000]\n  shared R: f16[1]\n  cta.fill(S, 1)\n  cta.sync()\n"
                      "  cta.sum(R, S, axes=(0))\n  cta.copy(B, R)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "f16.tile", src, strlen(src), &p), TILEC_OK);
    uint16_t a[20000] = {0}, b = 0;
    void *args[] = {a, &b};
    assert_int_equal(tilec_simulate(p, NULL, NULL, args), TILEC_OK);
    assert_true(tilec_f16_to_double(b) == 20000.0);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Element i of a host buffer of dtype dt, as double, and back (one rounding). */
static double get_elem(tilec_dtype dt, const void *p, int64_t i) {
    const unsigned char *b = p;
    uint16_t h;
    float f;
    double d;
    switch (dt) {
    case TILEC_F16: memcpy(&h, b + 2 * i, 2); return tilec_f16_to_double(h);
    case TILEC_BF16: memcpy(&h, b + 2 * i, 2); return tilec_bf16_to_double(h);
    case TILEC_F32: memcpy(&f, b + 4 * i, 4); return f;
    default: memcpy(&d, b + 8 * i, 8); return d;
    }
}

static void set_elem(tilec_dtype dt, void *p, int64_t i, double v) {
    unsigned char *b = p;
    uint16_t h;
    float f = (float)v;
    switch (dt) {
    case TILEC_F16: h = tilec_f16_from_double(v); memcpy(b + 2 * i, &h, 2); return;
    case TILEC_BF16: h = tilec_bf16_from_double(v); memcpy(b + 2 * i, &h, 2); return;
    case TILEC_F32: memcpy(b + 4 * i, &f, 4); return;
    default: memcpy(b + 8 * i, &v, 8); return;
    }
}

/* nan=ignore: an all-NaN slice gives NaN (the format, numpy's nanmax), never the other
 * identity (-inf for max); a slice with one number gives it; accum folds the old value in
 * with the same rule. Expected values are written here, not taken from the reference. */
static void test_nan_ignore_all_nan(void **state) {
    (void)state;
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64"};
    static const tilec_dtype dts[] = {TILEC_F32, TILEC_F16, TILEC_BF16, TILEC_F64};
    static const char *const variants[] = {"shared", "cta_tree", "sequential", "smem_tree", "local"};
    enum { ROWS = 4 };
    int ran[COUNT(variants)] = {0};
    char src[1024];
    for (int ws = 32; ws <= 64; ws *= 2)
        for (size_t d = 0; d < COUNT(dtypes); d++)
            for (int max = 0; max < 2; max++)
                for (int accum = 0; accum < 2; accum++)
                    for (size_t v = 0; v < COUNT(variants); v++)
                        for (int len = 1; len <= 300; len = len * 5 + 2) {
                            const char *dt = dtypes[d], *op = max ? "max" : "min";
                            bool local = strcmp(variants[v], "local") == 0; /* a row per thread, in registers */
                            int threads = local ? 64 : 256, rows = local ? threads : ROWS;
                            if (local)
                                snprintf(src, sizeof src,
                                         "kernel k(A: %s[%d, %d] global, B: %s[%d] global) threads=%d {\n"
                                         "  local L: %s[%d]\n  local R: %s[1]\n"
                                         "  thread.copy(L, A[thread_id])\n  thread.copy(R, B[thread_id])\n"
                                         "  thread.%s(R, L, axes=(0), nan=ignore%s, variant=local)\n"
                                         "  thread.copy(B[thread_id], R)\n}\n",
                                         dt, rows, len, dt, rows, threads, dt, len, dt, op, accum ? ", accum=true" : "");
                            else
                                snprintf(src, sizeof src,
                                         "kernel k(A: %s[%d, %d] global, B: %s[%d] global) threads=%d {\n"
                                         "  shared As: %s[%d, %d]\n  shared Bs: %s[%d]\n"
                                         "  cta.copy(As, A)\n  cta.copy(Bs, B)\n  cta.sync()\n"
                                         "  cta.%s(Bs, As, axes=(-1), nan=ignore%s, variant=%s)\n  cta.copy(B, Bs)\n}\n",
                                         dt, rows, len, dt, rows, threads, dt, rows, len, dt, rows, op,
                                         accum ? ", accum=true" : "", variants[v]);
                            tilec_ctx *ctx;
                            tilec_open(&ctx);
                            tilec_program *p;
                            assert_int_equal(tilec_parse(ctx, "nan.tile", src, strlen(src), &p), TILEC_OK);
                            size_t es = tilec_dtype_size(dts[d]);
                            void *a = malloc((size_t)rows * (size_t)len * es), *b = malloc((size_t)rows * es);
                            double want[256];
                            for (int r = 0; r < rows; r++) {
                                /* rows: all NaN; NaN but one -inf (+inf for min); NaN but one -0 */
                                int kind = r % 3;
                                double number = kind == 1 ? (max ? -INFINITY : INFINITY) : -0.0;
                                for (int i = 0; i < len; i++)
                                    set_elem(dts[d], a, (int64_t)r * len + i, kind && i == (r * 7) % len ? number : NAN);
                                double old = r % 4 == 3 ? 7.0 : NAN;
                                set_elem(dts[d], b, r, old);
                                double red = kind ? number : NAN;
                                want[r] = !accum ? red : isnan(red) ? old : isnan(old) ? red : max ? fmax(red, old) : fmin(red, old);
                            }
                            void *args[] = {a, b};
                            tilec_target t = {TILEC_BACKEND_SIM, NULL, ws};
                            tilec_status st = tilec_simulate(p, NULL, &t, args);
                            if (st == TILEC_ERR_DISPATCH) goto next; /* the variant does not take this shape */
                            if (st != TILEC_OK) fail_msg("%s\n%s", tilec_diag_text(ctx), src);
                            ran[v]++;
                            for (int r = 0; r < rows; r++) {
                                double got = get_elem(dts[d], b, r);
                                bool same = isnan(want[r]) ? isnan(got) : got == want[r] && signbit(got) == signbit(want[r]);
                                if (!same)
                                    fail_msg("ws %d, row %d: got %g, want %g\n%s", ws, r, got, want[r], src);
                            }
                        next:
                            free(a);
                            free(b);
                            tilec_program_free(p);
                            tilec_close(ctx);
                        }
    for (size_t v = 0; v < COUNT(variants); v++)
        if (!ran[v]) fail_msg("variant %s took none of the shapes", variants[v]);
}

/* Runs a parsed program's only kernel on the simulator; its parameters are in args. */
static void simulate_text(const char *src, void **args) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    if (tilec_parse(ctx, "fill.tile", src, strlen(src), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    if (tilec_simulate(p, NULL, NULL, args) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A map's NaN results are stored as the quiet NaN 0x7fc00000 wherever their bits can show:
 * into memory, and into a local fragment that a copy reads (E, copied to Y). A fragment read
 * only by maps and reductions (G) keeps the NaN its arithmetic gives, so its store has no
 * select (test_codegen counts them): what reaches memory from it still goes through a map's
 * store (F = G + 1, copied to Z). Inputs: NaNs of both signs, with payloads, signalling. */
static void test_map_nan_bits(void **state) {
    (void)state;
    static const uint32_t nans[] = {0xffc12345u, 0x7f812345u, 0xff800001u, 0x7fffffffu, 0xffffffffu};
    uint32_t x[32], y[32] = {0}, z[32] = {0};
    for (int i = 0; i < 32; i++) {
        float f = (float)(i - 7) * 0.5f;
        memcpy(&x[i], &f, 4);
    }
    for (size_t j = 0; j < sizeof nans / sizeof *nans; j++) x[3 + 5 * j] = nans[j];
    void *args[] = {x, y, z};
    simulate_text(map_nan_select_src, args);
    for (int i = 0; i < 32; i++) {
        float f, g, h;
        memcpy(&f, &x[i], 4);
        memcpy(&g, &y[i], 4);
        memcpy(&h, &z[i], 4);
        if (f != f) {
            if (y[i] != 0x7fc00000u || z[i] != 0x7fc00000u)
                fail_msg("element %d: NaN 0x%08x gave 0x%08x and 0x%08x, not the quiet NaN 0x7fc00000", i, x[i], y[i], z[i]);
        } else {
            assert_true(g == f * 2);
            assert_true(h == f * 3 + 1);
        }
    }
}

/* 16-bit stores convert in pairs (LX_PACK16): a vector's two lanes at once, each rounded to
 * nearest even, a NaN of any sign or payload as the quiet NaN (0x7fc0, 0x7e00). Values next
 * to halfway points of both formats, ±0, ±inf, overflow and subnormals, in both lanes of a
 * pair; the expected bits are written out. */
static void test_pack16_bits(void **state) {
    (void)state;
    const char *src = "kernel k(X: f32[16] global, B: bf16[16] global, H: f16[16] global) threads=2 {\n"
                      "  cta.map(B, X)\n  cta.map(H, X)\n}\n";
    static const uint32_t x[16] = {0x3f808000u, 0x3f808001u, 0x3f818000u, 0x80000000u, /* ties, above */
                                   0x7f800000u, 0xff800000u, 0xffc12345u, 0x7f812345u, /* inf, NaNs */
                                   0x7f7fffffu, 0x00000001u, 0x477ff000u, 0x33000001u,  /* max, tiny */
                                   0xffffffffu, 0x3f801000u, 0x3f801001u, 0xc0490fdbu};
    static const uint16_t want_b[16] = {0x3f80, 0x3f81, 0x3f82, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7fc0,
                                        0x7f80, 0x0000, 0x4780, 0x3300, 0x7fc0, 0x3f80, 0x3f80, 0xc049};
    static const uint16_t want_h[16] = {0x3c04, 0x3c04, 0x3c0c, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7e00,
                                        0x7c00, 0x0000, 0x7c00, 0x0001, 0x7e00, 0x3c00, 0x3c01, 0xc248};
    uint16_t b[16] = {0}, h[16] = {0};
    void *args[] = {(void *)x, b, h};
    simulate_text(src, args);
    for (int i = 0; i < 16; i++) {
        if (b[i] != want_b[i]) fail_msg("bf16 of 0x%08x: 0x%04x, want 0x%04x", x[i], b[i], want_b[i]);
        if (h[i] != want_h[i]) fail_msg("f16 of 0x%08x: 0x%04x, want 0x%04x", x[i], h[i], want_h[i]);
    }
}

/* exp and exp2 of a NaN are NaN whatever its payload, and so are the maps that read them from
 * a local (whose store keeps the NaN it got): a NaN's bits must never reach the integer steps
 * of the exponential's scale as if they were a number. NVIDIA's arithmetic returns the NaN
 * 0x7fffffff, so the inputs include it: an integer add of 2^k1's exponent to such a NaN's bits
 * gave FLT_MAX on an H100 (scripts/gpu-check fused), where the simulator's 0x7fc00000 hid it. */
static void test_exp_of_nan(void **state) {
    (void)state;
    const char *src =
        "kernel k(X: f32[1, 32] global, Y: f32[1, 32] global, Z: f32[1, 32] global) threads=32 {\n"
        "  local F: f32[1, 32] layout=linear(reg=(), lane=((0, 1), (0, 2), (0, 4), (0, 8), (0, 16)))\n"
        "  local E: f32[1, 32] layout=linear(reg=(), lane=((0, 1), (0, 2), (0, 4), (0, 8), (0, 16)))\n"
        "  warp.copy(F, X)\n  warp.map(E, exp(F))\n  warp.map(F, E * 1)\n  warp.copy(Y, F)\n"
        "  warp.map(E, exp2(F))\n  warp.map(F, E + 0)\n  warp.copy(Z, F)\n}\n";
    static const uint32_t nans[] = {0x7fffffffu, 0xffffffffu, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu};
    uint32_t x[32], y[32] = {0}, z[32] = {0};
    for (int i = 0; i < 32; i++) {
        float f = (float)(i - 16) * 0.25f;
        memcpy(&x[i], &f, 4);
    }
    for (size_t j = 0; j < sizeof nans / sizeof *nans; j++) x[1 + 5 * j] = nans[j];
    void *args[] = {x, y, z};
    simulate_text(src, args);
    for (size_t j = 0; j < sizeof nans / sizeof *nans; j++) {
        int i = 1 + 5 * (int)j;
        if (y[i] != 0x7fc00000u || z[i] != 0x7fc00000u)
            fail_msg("exp and exp2 of the NaN 0x%08x: 0x%08x and 0x%08x, not NaN (0x7fc00000)", x[i], y[i], z[i]);
    }
}

/* Fill constants are rounded once, from the decimal text (or the integer), to the
 * destination's dtype: never to f64 first. Each value below sits just off a halfway point
 * of its dtype, where rounding twice goes the wrong way; the expected bits are written out.
 * Canonical text keeps them (fmt reads back to the same bits). */
static void test_fill_rounds_once(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[6] global, H: f16[3] global, G: bf16[3] global) threads=32 {\n"
                      "  cta.fill(A[0:1], 1.0000000596046447753906250001)\n" /* above 1 + 2^-24 */
                      "  cta.fill(A[1:2], 1.0000000596046447753906249999)\n" /* below it */
                      "  cta.fill(A[2:3], 16777217)\n"                      /* a tie: to even */
                      "  cta.fill(A[3:4], 1152921573326323713)\n"           /* 2^60 + 2^36 + 1 */
                      "  cta.fill(A[4:5], -7.00649232162408535461864791644958065640130970938257885878534141944895541342930300743319094181060791015625000001e-46)\n"
                      "  cta.fill(A[5:6], 3.40282356779733661637539395458142568447999e38)\n" /* under the overflow tie */
                      "  cta.fill(H[0:1], 1.00048828125000000001)\n"        /* above 1 + 2^-11 */
                      "  cta.fill(H[1:2], 65519.99999999999999)\n"          /* just under overflow */
                      "  cta.fill(H[2:3], 2.98023223876953125000001e-8)\n"  /* above half the least subnormal */
                      "  cta.fill(G[0:1], 1.00390625000000000001)\n"        /* above 1 + 2^-8 */
                      "  cta.fill(G[1:2], 9007199254740993)\n"              /* 2^53 + 1 */
                      "  cta.fill(G[2:3], -1.00390625)\n"                   /* a tie: to even */
                      "}\n";
    static const uint32_t want_a[6] = {0x3f800001, 0x3f800000, 0x4b800000, 0x5d800001, 0x80000001, 0x7f7fffff};
    static const uint16_t want_h[3] = {0x3c01, 0x7bff, 0x0001}, want_g[3] = {0x3f81, 0x5a00, 0xbf80};
    for (int pass = 0; pass < 2; pass++) {
        uint32_t a[6] = {0};
        uint16_t h[3] = {0}, g[3] = {0};
        void *args[] = {a, h, g};
        char *text = NULL;
        if (pass == 0) {
            simulate_text(src, args);
        } else { /* the canonical text of the program stores the same bits */
            tilec_ctx *ctx;
            tilec_open(&ctx);
            tilec_program *p;
            assert_int_equal(tilec_parse(ctx, "fill.tile", src, strlen(src), &p), TILEC_OK);
            size_t len;
            assert_int_equal(tilec_format(p, &text, &len), TILEC_OK);
            tilec_program_free(p);
            tilec_close(ctx);
            simulate_text(text, args);
        }
        for (int i = 0; i < 6; i++)
            if (a[i] != want_a[i]) fail_msg("pass %d: A[%d] is 0x%08x, want 0x%08x\n%s", pass, i, a[i], want_a[i], text ? text : src);
        for (int i = 0; i < 3; i++) {
            if (h[i] != want_h[i]) fail_msg("pass %d: H[%d] is 0x%04x, want 0x%04x\n%s", pass, i, h[i], want_h[i], text ? text : src);
            if (g[i] != want_g[i]) fail_msg("pass %d: G[%d] is 0x%04x, want 0x%04x\n%s", pass, i, g[i], want_g[i], text ? text : src);
        }
        tilec_free(text);
    }
    /* the builder: an integer fill is rounded from the integer, a double as given */
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    tilec_kernel *k;
    tilec_buffer *A;
    int64_t shape[1] = {2};
    assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
    assert_int_equal(tilec_kernel_new(p, "k", false, 32, 1, &k), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 1, shape, TILEC_SPACE_GLOBAL, &A), TILEC_OK);
    tilec_region r0 = tilec_region_whole(A), r1 = r0;
    r0.index[0] = (tilec_index){.kind = TILEC_INDEX_AT, .start = 0};
    r1.index[0] = (tilec_index){.kind = TILEC_INDEX_AT, .start = 1};
    r0.nindex = r1.nindex = 1;
    tilec_exec cta = {TILEC_SCOPE_CTA, -1};
    assert_int_equal(tilec_kernel_fill_int(k, cta, &r0, ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1), TILEC_OK);
    assert_int_equal(tilec_kernel_fill(k, cta, &r1, 1.0 + 0x1p-24 + 0x1p-52), TILEC_OK);
    uint32_t a[2] = {0};
    void *args[] = {a};
    assert_int_equal(tilec_simulate(p, NULL, NULL, args), TILEC_OK);
    assert_int_equal(a[0], 0x5d800001);
    assert_int_equal(a[1], 0x3f800001);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Sums that overflow the accumulation type in some order of their additions: the check
 * accepts exactly the results such orders give, besides the value. [3e38, 3e38, -inf] in
 * f32 is NaN when the two 3e38 meet first and -inf otherwise, never +inf; 16-bit floats
 * accumulate in f32, so 60000 + 60000 - 60000 cannot overflow; f64 sums near the top of
 * its range have a finite value the reference must still know. */
static void test_check_overflow_orders(void **state) {
    (void)state;
    static const struct {
        const char *dtype;
        double in[3];
        double got;
        bool ok;
    } cases[] = {
        {"f32", {3e38, 3e38, -INFINITY}, NAN, true},
        {"f32", {3e38, 3e38, -INFINITY}, -INFINITY, true},
        {"f32", {3e38, 3e38, -INFINITY}, INFINITY, false},
        {"f32", {3e38, 3e38, -INFINITY}, 0, false},
        {"f32", {3e38, 3e38, -3e38}, 3e38, true},
        {"f32", {3e38, 3e38, -3e38}, INFINITY, true},
        {"f32", {3e38, 3e38, -3e38}, NAN, false},
        {"f32", {3e38, 3e38, -3e38}, -INFINITY, false},
        {"f32", {3e38, -3e38, 1}, 1, true},
        {"f32", {3e38, -3e38, 1}, INFINITY, false},
        {"f32", {-3e38, -3e38, 3e38}, -INFINITY, true},
        {"f32", {-3e38, 3e38, 3e38}, NAN, false},
        {"f32", {INFINITY, -3e38, -3e38}, NAN, true},
        {"f32", {INFINITY, -3e38, -3e38}, -INFINITY, false},
        {"f16", {60000, 60000, -60000}, 60000, true},
        {"f16", {60000, 60000, -60000}, INFINITY, false},
        {"f16", {60000, 60000, 1}, INFINITY, true}, /* 120001 is past f16's range when stored */
        {"f64", {1.7e308, 1.7e308, -1.7e308}, 1.7e308, true},
        {"f64", {1.7e308, 1.7e308, -1.7e308}, INFINITY, true},
        {"f64", {1.7e308, 1.7e308, -1.7e308}, -INFINITY, false},
        /* 65519.999 accumulates in f32 to 65520, which f16 stores as inf; an order that
         * stays under it gives 65504 */
        {"f16", {65504, 15.9375, 0.0615234375}, INFINITY, true},
        {"f16", {65504, 15.9375, 0.0615234375}, 65504, true},
        {"f16", {65504, 15.9375, 0.0615234375}, -INFINITY, false},
        {"f16", {65504, 15.9375, 0.0615234375}, NAN, false},
        {"f16", {65504, 32, 1}, 65504, true}, /* 65537: within the f16 tolerance of the threshold */
        {"f16", {65504, 16, 8}, INFINITY, true},
    };
    for (size_t c = 0; c < COUNT(cases); c++) {
        char src[256];
        snprintf(src, sizeof src, "kernel k(A: %s[3] global, B: %s[1] global) threads=32 {\n  cta.sum(B, A, axes=(0))\n}\n",
                 cases[c].dtype, cases[c].dtype);
        tilec_dtype dt = cases[c].dtype[1] == '1' ? TILEC_F16 : cases[c].dtype[1] == '3' ? TILEC_F32 : TILEC_F64;
        tilec_ctx *ctx;
        tilec_open(&ctx);
        tilec_program *p;
        assert_int_equal(tilec_parse(ctx, "c.tile", src, strlen(src), &p), TILEC_OK);
        double a[3], b[1], b0[1] = {0};
        for (int i = 0; i < 3; i++) set_elem(dt, a, i, cases[c].in[i]);
        set_elem(dt, b, 0, cases[c].got);
        const void *before[] = {a, b0}, *after[] = {a, b};
        tilec_check_result r;
        size_t n;
        assert_int_equal(tilec_check(p, NULL, NULL, before, after, &r, &n), TILEC_OK);
        if (r.ok != cases[c].ok)
            fail_msg("%s [%g, %g, %g] = %g judged %s", cases[c].dtype, cases[c].in[0], cases[c].in[1], cases[c].in[2],
                     cases[c].got, r.ok ? "right" : "wrong");
        tilec_program_free(p);
        tilec_close(ctx);
    }
    /* accum=true: dst = old + reduce(src); reduce([3e38, -3e38]) is 0 in every order, so
     * with old = 3e38 only 3e38 is right, never the +inf of adding old as one more term */
    const char *src = "kernel k(A: f32[2] global, B: f32[1] global) threads=32 {\n  cta.sum(B, A, axes=(0), accum=true)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "c.tile", src, strlen(src), &p), TILEC_OK);
    float a[2] = {3e38f, -3e38f}, b0[1] = {3e38f}, b[1] = {INFINITY};
    const void *before[] = {a, b0}, *after[] = {a, b};
    tilec_check_result r;
    size_t n;
    assert_int_equal(tilec_check(p, NULL, NULL, before, after, &r, &n), TILEC_OK);
    assert_false(r.ok);
    b[0] = 3e38f;
    assert_int_equal(tilec_check(p, NULL, NULL, before, after, &r, &n), TILEC_OK);
    assert_true(r.ok);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* The reference's memory is counted before it allocates any: 32 bytes an element of every
 * buffer, above TILEC_REF_MAX_MEMORY an error that says so (the buffers are not read). */
static void test_check_memory_bound(void **state) {
    (void)state;
    const char *src = "kernel k(A: f16[200000000] global, B: f16[1] global) threads=1024 {\n  cta.max(B, A, axes=(0))\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "c.tile", src, strlen(src), &p), TILEC_OK);
    char dummy[16];
    const void *bufs[] = {dummy, dummy};
    tilec_check_result r[2];
    size_t n;
    assert_int_equal(tilec_check(p, NULL, NULL, bufs, bufs, r, &n), TILEC_ERR_BUDGET);
    assert_non_null(strstr(tilec_diag_text(ctx), "needs more than 4096 MiB for the reference"));
    tilec_program_free(p);
    tilec_close(ctx);
}

/* tilec_check with a missing buffer in inputs[] or outputs[] is an error that names the
 * parameter, not a crash; an unwritten parameter needs no output. */
static void test_check_missing_buffers(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[4] global, B: f32[1] global) threads=32 {\n  cta.sum(B, A, axes=(0))\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "c.tile", src, strlen(src), &p), TILEC_OK);
    float a[4] = {1, -2, 3.5f, -0.0f}, b[1] = {2.5f};
    tilec_check_result r[2];
    size_t n;
    const void *none_in[] = {NULL, b}, *ins[] = {a, b}, *none_out[] = {a, NULL}, *unwritten[] = {NULL, b};
    assert_int_equal(tilec_check(p, NULL, NULL, none_in, ins, r, &n), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "no buffer for parameter 'A' in inputs[0]"));
    assert_int_equal(tilec_check(p, NULL, NULL, ins, none_out, r, &n), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "no buffer for parameter 'B' in outputs[1]"));
    assert_int_equal(tilec_check(p, NULL, NULL, ins, unwritten, r, &n), TILEC_OK);
    assert_int_equal(n, 1);
    assert_true(r[0].ok);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Integers as fills, exactly: a decimal whose exact value is an integer beyond 2^53 into
 * an i64 buffer is that integer (not the nearest double), and an integer wider than 64
 * bits into a float buffer is rounded from its digits like any number. */
static void test_fill_integers(void **state) {
    (void)state;
    const char *src = "kernel k(I: i64[3] global, F: f32[1] global, D: f64[1] global) threads=1 {\n"
                      "  thread.fill(I[0:1], 9007199254740993.0)\n"
                      "  thread.fill(I[1:2], 9.223372036854775807e18)\n"
                      "  thread.fill(I[2:3], -92233720368547758.08e2)\n"
                      "  thread.fill(F, 100000000000000000000)\n"
                      "  thread.fill(D, 18446744073709551617)\n"
                      "}\n";
    int64_t i[3] = {0};
    uint32_t f = 0;
    double d = 0;
    void *args[] = {i, &f, &d};
    simulate_text(src, args);
    assert_true(i[0] == 9007199254740993ll);
    assert_true(i[1] == INT64_MAX);
    assert_true(i[2] == INT64_MIN);
    assert_int_equal(f, 0x60ad78ec); /* 1e20 in f32 */
    assert_true(d == 0x1p64);        /* 2^64 + 1 rounds to 2^64 */
}

/* Interleaved strides (2i + 3j on [3, 3], accepted by the exact injectivity check): a
 * copy into such a buffer and reductions out of it give what the row-major data gives,
 * computed here by plain loops over A (the layout must not show in any result). */
static void test_interleaved_strides_values(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[2, 3, 3] global, B: f32[2] global, C: f32[3] global, D: f32[2, 3, 3] global) threads=64 {\n"
                      "  shared S: f32[2, 3, 3] strides=(11, 2, 3)\n  shared R: f32[2]\n  shared Q: f32[3]\n"
                      "  cta.copy(S, A)\n  cta.sync()\n  cta.sum(R, S, axes=(1, 2))\n  cta.min(Q, S, axes=(0, 2))\n"
                      "  cta.copy(B, R)\n  cta.copy(C, Q)\n  cta.copy(D, S)\n}\n";
    float a[18], b[2] = {0}, c[3] = {0}, d[18] = {0};
    for (int i = 0; i < 18; i++) a[i] = (float)((i * 7) % 18) - 8.5f; /* distinct, both signs, exact sums */
    void *args[] = {a, b, c, d};
    simulate_text(src, args);
    for (int i = 0; i < 18; i++) assert_true(d[i] == a[i]);
    for (int r = 0; r < 2; r++) {
        float want = 0;
        for (int e = 0; e < 9; e++) want += a[r * 9 + e];
        assert_true(b[r] == want);
    }
    for (int j = 0; j < 3; j++) {
        float want = INFINITY;
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 3; k++) want = fminf(want, a[r * 9 + j * 3 + k]);
        assert_true(c[j] == want);
    }
}

/* The comparison itself: a wrong element, a sum off by more than the tolerance, and a sum
 * off by less, each judged as documented. */
static void test_check_finds_wrong_results(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[3, 100] global, B: f32[3] global, C: f32[3] global) threads=64 {\n"
                      "  cta.sum(B, A)\n  cta.max(C, A)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "c.tile", src, strlen(src), &p), TILEC_OK);
    float a[300], b[3] = {0}, c[3] = {0}, a0[300], b0[3] = {0}, c0[3] = {0};
    double mag = 0;
    for (int i = 0; i < 300; i++) a[i] = a0[i] = (float)((i * 37 % 101) - 50) / 7.0f;
    for (int i = 100; i < 200; i++) mag += fabs(a[i]);
    void *args[] = {a, b, c};
    const void *before[] = {a0, b0, c0}, *after[] = {a, b, c};
    assert_int_equal(tilec_simulate(p, NULL, NULL, args), TILEC_OK);
    tilec_check_result r[3];
    size_t n;
    assert_int_equal(tilec_check(p, NULL, NULL, before, after, r, &n), TILEC_OK);
    assert_int_equal(n, 2);
    assert_true(r[0].ok && r[1].ok);
    assert_string_equal(r[0].param, "B");
    assert_false(r[0].exact);
    assert_true(r[1].exact);
    c[2] = nextafterf(c[2], INFINITY); /* max is exact: one ulp is a mismatch */
    b[1] += (float)(mag * 2e-5);       /* twice the tolerance of a sum */
    assert_int_equal(tilec_check(p, NULL, NULL, before, after, r, &n), TILEC_OK);
    assert_false(r[0].ok);
    assert_int_equal(r[0].mismatches, 1);
    assert_int_equal(r[0].first_bad, 1);
    assert_true(r[0].max_error > 1e-5 && r[0].max_error < 3e-5);
    assert_false(r[1].ok);
    assert_int_equal(r[1].first_bad, 2);
    b[1] -= (float)(mag * 2e-5) - (float)(mag * 2e-6); /* now a tenth of that: within */
    c[2] = nextafterf(c[2], -INFINITY);
    assert_int_equal(tilec_check(p, NULL, NULL, before, after, r, &n), TILEC_OK);
    assert_true(r[0].ok && r[1].ok);
    c[0] = NAN; /* a NaN where a number belongs */
    assert_int_equal(tilec_check(p, NULL, NULL, before, after, r, &n), TILEC_OK);
    assert_false(r[1].ok);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* ---- the work budget and the memory bound ------------------------------------------------ */

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static tilec_program *parse_or_fail(tilec_ctx *ctx, const char *src) {
    tilec_program *p = NULL;
    if (tilec_parse(ctx, "budget.tile", src, strlen(src), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    return p;
}

static void expect_diag(tilec_ctx *ctx, const char *part) {
    const char *text = tilec_diag_text(ctx);
    if (!strstr(text, part)) fail_msg("'%s' not in the diagnostics:\n%s", part, text);
}

/* 64 sums of 1000 floats read straight from global memory: few steps to start (64
 * threads, no shared or local memory), many to run. */
static const char *const small_sum = "kernel k(A: f32[64, 1000] global, B: f32[64] global) threads=64 {\n"
                                     "  cta.sum(B, A)\n}\n";

/* Runs small_sum; the status, and whether B is right when it ran. */
static tilec_status run_small_sum(tilec_ctx *ctx, bool *right) {
    tilec_program *p = parse_or_fail(ctx, small_sum);
    static float a[64 * 1000], b[64];
    for (int i = 0; i < 64 * 1000; i++) a[i] = (float)(i % 7);
    memset(b, 0, sizeof b);
    void *args[] = {a, b};
    tilec_status st = tilec_simulate(p, NULL, NULL, args);
    *right = true;
    for (int r = 0; r < 64; r++) {
        double want = 0; /* small integers: the sum is exact in any order */
        for (int j = 0; j < 1000; j++) want += (double)((r * 1000 + j) % 7);
        *right = *right && b[r] == (float)want;
    }
    tilec_program_free(p);
    return st;
}

/* grid=2147483647 with 1024 threads would run for days: the budget stops it before it
 * starts, with a message that says how to go further; the context runs the next program. */
static void test_budget_stops_a_huge_grid(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[4] global) threads=1024 grid=2147483647 {\n"
                      "  shared S: f32[1024]\n  shared R: f32[1]\n  cta.fill(S, 1)\n  cta.sync()\n"
                      "  cta.sum(R, S, axes=(0))\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p = parse_or_fail(ctx, src);
    float a[4] = {0};
    void *args[] = {a};
    double t0 = seconds();
    assert_int_equal(tilec_simulate(p, NULL, NULL, args), TILEC_ERR_BUDGET);
    assert_true(seconds() - t0 < 5.0);
    tilec_diag d;
    assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_OK);
    assert_int_equal(d.line, 1); /* at the grid's value */
    assert_int_equal(d.col, 46);
    expect_diag(ctx, "simulating kernel 'k' takes more than 30000000000 thread-steps, its budget: starting its "
                     "2147483647 CTAs of 1024 threads takes");
    expect_diag(ctx, "raise the budget (tilec_set_sim_budget, TILEC_SIM_BUDGET=N in the environment, or --sim-budget N");
    assert_string_equal(tilec_status_name(TILEC_ERR_BUDGET), "TILEC_ERR_BUDGET");
    tilec_program_free(p);
    bool right;
    assert_int_equal(run_small_sum(ctx, &right), TILEC_OK); /* the context is still usable */
    assert_true(right);
    tilec_close(ctx);
}

/* A low budget stops a small program while it runs; raised, or back to the default, the
 * same program finishes with the right result. */
static void test_budget_low_and_raised(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    bool right;
    assert_int_equal(tilec_set_sim_budget(ctx, 1000), TILEC_OK);
    assert_int_equal(run_small_sum(ctx, &right), TILEC_ERR_BUDGET);
    expect_diag(ctx, "error: simulator (warp size 32): the simulation stopped after 1000 thread-steps (its budget), "
                     "in CTA 0 of 1; raise the budget");
    assert_int_equal(tilec_set_sim_budget(ctx, 100000000), TILEC_OK);
    assert_int_equal(run_small_sum(ctx, &right), TILEC_OK);
    assert_true(right);
    assert_int_equal(tilec_set_sim_budget(ctx, 0), TILEC_OK); /* the default */
    assert_int_equal(run_small_sum(ctx, &right), TILEC_OK);
    assert_true(right);
    assert_int_equal(tilec_set_sim_budget(ctx, TILEC_SIM_UNLIMITED), TILEC_OK);
    assert_int_equal(run_small_sum(ctx, &right), TILEC_OK);
    assert_true(right);
    assert_int_equal(tilec_set_sim_budget(NULL, 5), TILEC_ERR_INVALID_ARG);
    tilec_close(ctx);
}

/* TILEC_SIM_BUDGET sets the default; tilec_set_sim_budget wins over it; a value that is
 * not a count is refused with a message, not ignored. */
static void test_budget_from_the_environment(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    bool right;
    setenv("TILEC_SIM_BUDGET", "1000", 1);
    assert_int_equal(run_small_sum(ctx, &right), TILEC_ERR_BUDGET);
    expect_diag(ctx, "stopped after 1000 thread-steps");
    assert_int_equal(tilec_set_sim_budget(ctx, 100000000), TILEC_OK);
    assert_int_equal(run_small_sum(ctx, &right), TILEC_OK);
    assert_true(right);
    assert_int_equal(tilec_set_sim_budget(ctx, 0), TILEC_OK);
    setenv("TILEC_SIM_BUDGET", "unlimited", 1);
    assert_int_equal(run_small_sum(ctx, &right), TILEC_OK);
    static const char *const bad[] = {"abc", "-1", "12x", "1e9", "18446744073709551616", " 5"};
    for (size_t i = 0; i < COUNT(bad); i++) {
        setenv("TILEC_SIM_BUDGET", bad[i], 1);
        assert_int_equal(run_small_sum(ctx, &right), TILEC_ERR_INVALID_ARG);
        expect_diag(ctx, "is not a number of thread-steps");
    }
    unsetenv("TILEC_SIM_BUDGET");
    assert_int_equal(run_small_sum(ctx, &right), TILEC_OK);
    tilec_close(ctx);
}

/* The memory a run needs is added up before anything is allocated: 4 GiB of scratch (more
 * than a verified tile program can ask for, so built here as a lowering would) is refused
 * without being allocated. */
static void test_memory_bound(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p = parse_or_fail(ctx, "kernel k(A: f32[4] global) threads=32 {\n}\n");
    lp_kernel *k = lp_kernel_new(p, p->kernels[0], 32);
    assert_non_null(lp_buf_scratch_global(k, "partials", LP_F32, (int64_t)1 << 30));
    float a[4] = {0};
    void *args[] = {a};
    assert_int_equal(sim_run(p, k, args), TILEC_ERR_BUDGET);
    expect_diag(ctx, "simulating kernel 'k' needs 4096.0 MiB of memory");
    expect_diag(ctx, "global scratch 4096.0 MiB), more than the simulator's 1024 MiB (TILEC_SIM_MAX_MEMORY)");
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Walks the registry: every registered reduction case, forced with variant=, on one of
 * these programs (format arguments: the op, then the variant), for every op the case
 * takes, must run on the simulator and match the reference; a case none of them reaches
 * fails here, so a new variant comes with a shape it accepts or this test names it. The
 * data cases (copy, fill, barrier) must be the ones chosen for their statements. */
static const char *const reach_programs[] = {
    /* thread scope, registers */
    "kernel k(A: f32[64, 37] global, B: f32[64] global) threads=64 {\n  local L: f32[37]\n  local R: f32[1]\n"
    "  thread.copy(L, A[thread_id])\n  thread.%s(R, L, axes=(0), variant=%s)\n  thread.copy(B[thread_id], R)\n}\n",
    /* warp scope over registers on a partial warp */
    "kernel k(A: f32[48, 4] global, B: f32[48] global) threads=48 {\n  local L: f32[4]\n  local M: f32[1]\n"
    "  thread.copy(L, A[thread_id])\n  warp.%s(M, L, variant=%s)\n  thread.copy(B[thread_id], M)\n}\n",
    /* warp scope from shared rows into registers, on a partial warp (var and std: their
     * register sources reduce at thread scope only) */
    "kernel k(A: f32[2, 300] global, B: f32[48, 2] global) threads=48 {\n  shared S: f32[2, 300]\n  local M: f32[2]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  warp.%s(M, S, variant=%s)\n  thread.copy(B[thread_id], M)\n}\n",
    /* CTA scope, shared rows */
    "kernel k(A: f32[3, 1000] global, B: f32[3] global) threads=256 {\n  shared S: f32[3, 1000]\n  shared R: f32[3]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  cta.%s(R, S, variant=%s)\n  cta.sync()\n  cta.copy(B, R)\n}\n",
    /* warpgroup scope, shared rows */
    "kernel k(A: f32[2, 2, 999] global, B: f32[2, 2] global) threads=256 {\n  shared S: f32[2, 2, 999]\n"
    "  shared R: f32[2, 2]\n  cta.copy(S, A)\n  cta.sync()\n  warpgroup.%s(R[warpgroup_id], S[warpgroup_id], variant=%s)\n"
    "  cta.sync()\n  cta.copy(B, R)\n}\n",
    /* grid scope: rows, then columns */
    "kernel k(A: f32[64, 1000] global, B: f32[64] global) threads=256 {\n  grid.%s(B, A, axes=(1), variant=%s)\n}\n",
    "kernel k(A: f32[1000, 64] global, B: f32[64] global) threads=256 {\n  grid.%s(B, A, axes=(0), variant=%s)\n}\n",
    /* a warp's fragment (an m16n8k16 accumulator), its rows */
    "kernel k(A: f32[16, 64] global, B: f32[16] global) threads=32 {\n  local F: f32[16, 64] layout=mma_m16n8k16_c\n"
    "  warp.copy(F, A)\n  warp.%s(B, F, axes=(1), variant=%s)\n}\n",
};

/* The same for an op with two results (argmax, argmin: the indices in I; aminmax: the
 * maxima, I and J then of the value's dtype: test_every_registered_case writes it in for
 * "i64"). Registers only at thread scope (a lane's own elements have no index in a warp's
 * reduced space); the warp's local-destination variant from shared rows. */
static const char *const reach_programs_two[] = {
    "kernel k(A: f32[64, 37] global, B: f32[64] global, I: i64[64] global) threads=64 {\n  local L: f32[37]\n"
    "  local R: f32[1]\n  local J: i64[1]\n  thread.copy(L, A[thread_id])\n  thread.%s(R, J, L, axes=(0), variant=%s)\n"
    "  thread.copy(B[thread_id], R)\n  thread.copy(I[thread_id], J)\n}\n",
    "kernel k(A: f32[2, 300] global, B: f32[64, 2] global, I: i64[64, 2] global) threads=64 {\n  shared S: f32[2, 300]\n"
    "  local M: f32[2]\n  local J: i64[2]\n  cta.copy(S, A)\n  cta.sync()\n  warp.%s(M, J, S, variant=%s)\n"
    "  thread.copy(B[thread_id], M)\n  thread.copy(I[thread_id], J)\n}\n",
    "kernel k(A: f32[3, 1000] global, B: f32[3] global, I: i64[3] global) threads=256 {\n  shared S: f32[3, 1000]\n"
    "  shared R: f32[3]\n  shared J: i64[3]\n  cta.copy(S, A)\n  cta.sync()\n  cta.%s(R, J, S, variant=%s)\n  cta.sync()\n"
    "  cta.copy(B, R)\n  cta.copy(I, J)\n}\n",
    "kernel k(A: f32[2, 2, 999] global, B: f32[2, 2] global, I: i64[2, 2] global) threads=256 {\n  shared S: f32[2, 2, 999]\n"
    "  shared R: f32[2, 2]\n  shared J: i64[2, 2]\n  cta.copy(S, A)\n  cta.sync()\n"
    "  warpgroup.%s(R[warpgroup_id], J[warpgroup_id], S[warpgroup_id], variant=%s)\n  cta.sync()\n  cta.copy(B, R)\n"
    "  cta.copy(I, J)\n}\n",
    "kernel k(A: f32[64, 1000] global, B: f32[64] global, I: i64[64] global) threads=256 {\n"
    "  grid.%s(B, I, A, axes=(1), variant=%s)\n}\n",
    "kernel k(A: f32[1000, 64] global, B: f32[64] global, I: i64[64] global) threads=256 {\n"
    "  grid.%s(B, I, A, axes=(0), variant=%s)\n}\n",
    "kernel k(A: f32[16, 64] global, B: f32[64] global, I: i64[64] global) threads=32 {\n"
    "  local F: f32[16, 64] layout=mma_m16n8k16_c\n  warp.copy(F, A)\n  warp.%s(B, I, F, axes=(0), variant=%s)\n}\n",
};

static void test_every_registered_case(void **state) {
    (void)state;
    const dsp_case *const *cases;
    size_t n = dsp_registry(&cases);
    assert_true(n > 0);
    for (size_t c = 0; c < n; c++) {
        const dsp_case *dc = cases[c];
        for (int op = 0; op < TILEC_OP_COUNT; op++) {
            if (!(dc->ops & (DSP_OPS_REDUCE | DSP_OPS_GRID))) continue;
            bool reached = false, two = tilec_op_outputs((tilec_op)op) == 2;
            const char *const *programs = two ? reach_programs_two : reach_programs;
            size_t np = two ? COUNT(reach_programs_two) : COUNT(reach_programs);
            for (size_t p = 0; p < np && !reached; p++) {
                char src[1024];
                snprintf(src, sizeof src, programs[p], tilec_op_name((tilec_op)op), dc->variant);
                if (two && tilec_op_second_dtype((tilec_op)op, TILEC_F32) == TILEC_F32) /* the second result's dtype */
                    for (char *at = strstr(src, "i64["); at; at = strstr(at, "i64[")) memcpy(at, "f32[", 4);
                sim_case_result r = run_on_sim(src, 32, 17 + p, true, NULL);
                if (r.status == TILEC_ERR_DISPATCH) continue; /* the case does not take this shape */
                /* var and std of registers reduce at thread scope only (format.md): the warp's
                 * programs over registers are errors for them, and nothing else may be */
                if (r.status == TILEC_ERR_VERIFY && tilec_op_takes_correction((tilec_op)op) &&
                    strstr(r.why, "of local 'L' at warp scope"))
                    continue;
                reached = true;
                if (!r.ok) fail_msg("variant %s, %s, on\n%s\n%s", dc->variant, tilec_op_name((tilec_op)op), src, r.why);
            }
            if (!reached && dc->fragments && tilec_op_takes_correction((tilec_op)op))
                continue; /* var and std of a fragment are refused, with a message (format.md) */
            if (!reached)
                fail_msg("variant %s (%s) accepts none of test_every_registered_case's programs: add one it takes",
                         dc->variant, tilec_op_name((tilec_op)op));
        }
    }
    /* the data movement cases, each the one chosen for its statement (a fragment's too) */
    const char *data = "kernel k(A: f32[64] global, B: f32[64] global, C: f32[16, 8] global) threads=64 {\n"
                       "  shared S: f32[64]\n  local F: f32[16, 8] layout=mma_m16n8k16_c\n"
                       "  cta.fill(S, 2)\n  cta.sync()\n  cta.copy(S, A)\n  cta.sync()\n  cta.copy(B, S)\n"
                       "  warp[0].fill(F, 1)\n  warp[0].copy(C, F)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *prog;
    assert_int_equal(tilec_parse(ctx, "data.tile", data, strlen(data), &prog), TILEC_OK);
    tilec_target t = {TILEC_BACKEND_SIM, NULL, 32};
    char *text = NULL;
    assert_int_equal(tilec_explain(prog, &t, false, &text), TILEC_OK);
    for (size_t c = 0; c < n; c++) {
        unsigned data_bits = (1u << DSP_COPY) | (1u << DSP_FILL) | (1u << DSP_SYNC);
        if (!(cases[c]->ops & data_bits)) continue;
        char mark[64];
        snprintf(mark, sizeof mark, "* %s ", cases[c]->variant);
        if (!strstr(text, mark)) fail_msg("data case %s is not chosen for its statement in\n%s", cases[c]->variant, text);
    }
    tilec_free(text);
    tilec_program_free(prog);
    tilec_close(ctx);
}

/* ---- rows and cols: every plan shape the cost model makes, forced, against the reference ---- */

/* (scope, source shape, destination shape, axes of the instance's slice, threads, layout,
 * the instance index of source and destination) */
typedef struct rc_shape {
    const char *scope, *shape, *out, *axes;
    int threads;
    const char *strides, *idx;
} rc_shape;

static const rc_shape rc_shapes[] = {
    {"cta", "4, 8", "4", "1", 32, "", ""},               /* a lane a row, 16-byte loads */
    {"cta", "32, 32", "32", "1", 128, "", ""},           /* groups of 8, several rows in flight */
    {"cta", "64, 128", "128", "0", 256, "", ""},         /* columns: 8-byte loads, slices */
    {"cta", "64, 128", "64", "1", 256, "", ""},          /* rows, accumulators */
    {"cta", "64, 128", "64", "1", 256, " strides=(129, 1)", ""}, /* padded: no vector load */
    {"cta", "64, 128", "128", "0", 256, " strides=(129, 1)", ""},
    {"cta", "1, 4096", "1", "1", 256, "", ""},           /* the whole instance on one output */
    {"cta", "3, 1000", "3", "1", 256, "", ""},           /* the tree, rows not a multiple of L*V*A */
    {"cta", "1, 4096", "1", "1", 512, "", ""},           /* the tree at warp size 64 too (8 warps) */
    {"cta", "7, 37", "7", "1", 96, "", ""},              /* tails */
    {"cta", "16, 6", "16", "1", 64, "", ""},             /* 16-bit pairs */
    {"cta", "128, 16", "128", "1", 128, "", ""},         /* many short rows */
    {"cta", "8, 512", "8", "1", 256, "", ""},
    {"cta", "40, 300", "300", "0", 128, "", ""},         /* more columns than threads, not a multiple */
    {"cta", "16, 256", "256", "0", 32, "", ""},          /* 16-bit columns eight at a time */
    {"cta", "33, 20", "20", "0", 48, "", ""},            /* a partial warp */
    {"cta", "5, 64", "5", "1", 48, "", ""},
    {"cta", "5, 3, 40", "5, 40", "1", 128, "", ""},      /* 3-D: the middle axis */
    {"cta", "40, 6, 8", "6, 8", "0", 128, "", ""},       /* 3-D: the leading axis */
    {"cta", "6, 16, 24", "6", "1, 2", 64, "", ""},       /* the two trailing axes, one block */
    {"cta", "12, 8, 3", "8", "0, 2", 64, "", ""},        /* leading and trailing */
    {"warp", "4, 6, 48", "4, 6", "1", 128, "", "[warp_id]"}, /* per-warp slices */
    {"warp", "4, 40, 8", "4, 8", "0", 128, "", "[warp_id]"},
    {"warpgroup", "2, 4, 300", "2, 4", "1", 256, "", "[warpgroup_id]"},
    {"warpgroup", "2, 64, 32", "2, 32", "0", 256, "", "[warpgroup_id]"},
    {"warp[1]", "7, 20", "7", "1", 96, "", ""},          /* one selected warp */
    {"warp[1]", "20, 24", "24", "0", 96, "", ""},
};

/* The program of shape sh reducing with op (its name) on dtype dt, forced to variant v. */
static void rc_program(char *src, size_t n, const rc_shape *sh, const char *dt, tilec_op op, const char *v) {
    bool two = tilec_op_outputs(op) == 2;
    const char *dt2 = two ? tilec_dtype_name(tilec_op_second_dtype(op, dtype_named(dt))) : "";
    char ip[96] = "", idecl[96] = "", icopy_in[40] = "", icopy_out[40] = "", iarg[48] = "";
    if (two) {
        snprintf(ip, sizeof ip, ", I: %s[%s] global", dt2, sh->out);
        snprintf(idecl, sizeof idecl, "  shared J: %s[%s]\n", dt2, sh->out);
        snprintf(icopy_in, sizeof icopy_in, "  cta.copy(J, I)\n");
        snprintf(icopy_out, sizeof icopy_out, "  cta.copy(I, J)\n");
        snprintf(iarg, sizeof iarg, "J%s, ", sh->idx);
    }
    snprintf(src, n,
             "kernel k(A: %s[%s] global, B: %s[%s] global%s) threads=%d {\n"
             "  shared S: %s[%s]%s\n  shared R: %s[%s]\n%s"
             "  cta.copy(S, A)\n  cta.copy(R, B)\n%s  cta.sync()\n"
             "  %s.%s(R%s, %sS%s, axes=(%s), variant=%s)\n"
             "  cta.sync()\n  cta.copy(B, R)\n%s}\n",
             dt, sh->shape, dt, sh->out, ip, sh->threads, dt, sh->shape, sh->strides, dt, sh->out, idecl, icopy_in,
             sh->scope, tilec_op_name(op), sh->idx, iarg, sh->idx, sh->axes, v, icopy_out);
}

/* What the lowering of src at warp size ws did, from its loop IR: bit 0..3 vector loads of
 * S of 2, 4, 8 elements (bit 0: none), bit 4 the tree's slots, bit 5 the slices' slots,
 * bit 6 a shuffle narrower than a warp, bit 7 a warp-wide one, bit 8 several accumulators
 * met by a halving tree. */
static unsigned rc_features(const char *src, int ws) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "rc.tile", src, strlen(src), &p), TILEC_OK);
    tilec_target t = {TILEC_BACKEND_SIM, NULL, ws};
    char *text = NULL;
    if (tilec_explain(p, &t, TILEC_EXPLAIN_LOOP, &text) != TILEC_OK) fail_msg("%s\n%s", tilec_diag_text(ctx), src);
    unsigned f = 0;
    const char *loop = strstr(text, "loop kernel");
    assert_non_null(loop);
    bool vec = false;
    for (const char *line = loop; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char l[512];
        snprintf(l, sizeof l, "%.*s", (int)(len < sizeof l - 1 ? len : sizeof l - 1), line);
        if (strstr(l, "= S[")) {
            if (strstr(l, " .. +2]")) f |= 2u, vec = true;
            if (strstr(l, " .. +4]")) f |= 4u, vec = true;
            if (strstr(l, " .. +8]")) f |= 8u, vec = true;
        }
        if (strstr(l, "rows_slots")) f |= 16u;
        if (strstr(l, "cols_slots")) f |= 32u;
        const char *sh = strstr(l, "shfl_xor(");
        if (sh) {
            int w = atoi(strrchr(l, ',') + 1);
            f |= w < ws ? 64u : 128u;
        }
        /* acc_i = (acc_i + acc_j): accumulators meeting */
        int a1, a2, a3;
        if (sscanf(l, " acc%d = (acc%d + acc%d)", &a1, &a2, &a3) == 3 && a1 == a2) f |= 256u;
    }
    if (!vec) f |= 1u;
    tilec_free(text);
    tilec_program_free(p);
    tilec_close(ctx);
    return f;
}

/* Every shape above forced to rows and to cols, at warp sizes 32 and 64, on f32, f16,
 * bf16 and f64 with the ops in turn (and a sum always); then every op on every dtype it
 * takes on a row tile and a column tile. Each result against the reference; the shapes
 * must have made every feature happen (vector loads of each width, the whole-instance
 * tree, slices, groups under a warp and whole warps, several accumulators), else the
 * matrix has stopped testing what it is for. */
static void test_rows_cols_matrix(void **state) {
    (void)state;
    static const char *const variants[] = {"rows", "cols"};
    static const char *const fdt[] = {"f32", "f16", "bf16", "f64"};
    static const char *const alldt[] = {"f32", "f16", "bf16", "f64", "i32", "u32", "i64"};
    unsigned seen[2][2] = {{0}};
    char src[2048];
    int runs = 0;
    for (int ws = 32; ws <= 64; ws *= 2)
        for (size_t v = 0; v < COUNT(variants); v++) {
            for (size_t i = 0; i < COUNT(rc_shapes); i++) {
                const rc_shape *sh = &rc_shapes[i];
                if (ws == 64 && !strcmp(sh->scope, "warpgroup")) continue; /* warpgroups need 32-lane warps */
                for (size_t d = 0; d <= COUNT(fdt); d++) {
                    const char *dt = d < COUNT(fdt) ? fdt[d] : "f32";
                    tilec_op op = TILEC_OP_SUM;
                    if (d < COUNT(fdt)) /* the ops in turn, skipping those the dtype lacks */
                        for (int k = 0; k < TILEC_OP_COUNT; k++) {
                            op = (tilec_op)((i * 5 + d * 3 + (size_t)k) % TILEC_OP_COUNT);
                            if (tilec_op_supports(op, dtype_named(dt), false)) break;
                        }
                    if (!strcmp(dt, "f64") && !strcmp(sh->shape, "8, 512")) continue; /* fits, but slow */
                    rc_program(src, sizeof src, sh, dt, op, variants[v]);
                    sim_case_result r = run_on_sim(src, ws, 31 + i * 7 + d, true, NULL);
                    expect_ok(&r, src, ws);
                    seen[ws / 64][v] |= rc_features(src, ws);
                    runs++;
                }
            }
            /* every op on every dtype, rows of a 32x32 tile and columns of a 64x128 one */
            for (int o = 0; o < TILEC_OP_COUNT; o++)
                for (size_t d = 0; d < COUNT(alldt); d++) {
                    if (!tilec_op_supports((tilec_op)o, dtype_named(alldt[d]), false)) continue;
                    for (int s = 0; s < 2; s++) {
                        rc_program(src, sizeof src, &rc_shapes[s ? 2 : 1], alldt[d], (tilec_op)o, variants[v]);
                        sim_case_result r = run_on_sim(src, ws, 5 + (uint64_t)o * 11 + d, true, NULL);
                        expect_ok(&r, src, ws);
                        runs++;
                    }
                }
        }
    /* what each variant did, at each warp size */
    for (int w = 0; w < 2; w++) {
        unsigned rows = seen[w][0], cols = seen[w][1];
        unsigned rows_need = 1u | 2u | 4u | 8u | 16u | 64u | 128u | 256u, cols_need = 1u | 2u | 4u | 8u | 32u | 256u;
        if ((rows & rows_need) != rows_need || (cols & cols_need) != cols_need)
            fail_msg("warp size %d: rows showed features 0x%x of 0x%x, cols 0x%x of 0x%x (rc_features)", 32 << w,
                     rows, rows_need, cols, cols_need);
        if (cols & (16u | 64u | 128u)) fail_msg("warp size %d: cols used a tree or shuffles (0x%x)", 32 << w, cols);
    }
    assert_true(runs > 500);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_finds_wrong_results),
        cmocka_unit_test(test_every_registered_case),
        cmocka_unit_test(test_rows_cols_matrix),
        cmocka_unit_test(test_lengths_threads_variants),
        cmocka_unit_test(test_dtypes_ops_accum_nan),
        cmocka_unit_test(test_shapes_and_scopes),
        cmocka_unit_test(test_bitwise),
        cmocka_unit_test(test_f16_accumulates_in_f32),
        cmocka_unit_test(test_nan_ignore_all_nan),
        cmocka_unit_test(test_fill_rounds_once),
        cmocka_unit_test(test_map_nan_bits),
        cmocka_unit_test(test_pack16_bits),
        cmocka_unit_test(test_exp_of_nan),
        cmocka_unit_test(test_fill_integers),
        cmocka_unit_test(test_interleaved_strides_values),
        cmocka_unit_test(test_check_overflow_orders),
        cmocka_unit_test(test_check_missing_buffers),
        cmocka_unit_test(test_check_memory_bound),
        cmocka_unit_test(test_budget_stops_a_huge_grid),
        cmocka_unit_test(test_budget_low_and_raised),
        cmocka_unit_test(test_budget_from_the_environment),
        cmocka_unit_test(test_memory_bound),
    };
    return cmocka_run_group_tests_name("simulator matrix", tests, NULL, NULL);
}
