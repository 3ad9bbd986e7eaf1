/*
 * test_verify.c — programs the verifier must accept (no false alarms from the barrier
 * analysis or the instance rules), at warp sizes 32 and 64; and programs with several
 * problems, which must all be reported, with notes pointing at the related line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "../src/ir/ir.h"
#include "support.h"

/* src is valid, and so is its canonical form, which formats to itself. */
static void assert_valid(const char *src, int warp_size) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_status st = check_text(ctx, src, strlen(src), warp_size);
    if (st != TILEC_OK) fail_msg("warp size %d: expected a valid program, got:\n%s", warp_size, tilec_diag_text(ctx));
    char *once = format_text(ctx, src);
    assert_non_null(once);
    assert_int_equal(check_text(ctx, once, strlen(once), warp_size), TILEC_OK);
    char *twice = format_text(ctx, once);
    assert_non_null(twice);
    assert_string_equal(once, twice);
    tilec_free(once);
    tilec_free(twice);
    tilec_close(ctx);
}

static const char *const valid[] = {
    /* a reduction ends with a barrier of its scope: its result may be read right after */
    "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
    "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
    "  cta.sum(Bs, As)\n  cta.copy(B, Bs)\n}\n",
    /* a warp reads back what it wrote itself after its own barrier */
    "kernel k(A: f32[8, 32] global, B: f32[8] global) threads=256 {\n"
    "  shared S: f32[8, 32]\n  shared T: f32[8, 32]\n  shared R: f32[8]\n"
    "  warp.copy(S[warp_id], A[warp_id])\n  warp.sync()\n  warp.copy(T[warp_id], S[warp_id])\n"
    "  warp.sync()\n  warp.max(R[warp_id], T[warp_id], axes=(0))\n  cta.sync()\n  cta.copy(B, R)\n}\n",
    /* thread scope: each thread owns its slot, no barrier needed between its own accesses */
    "kernel k(A: i32[64] global, B: i32[64] global) threads=64 {\n"
    "  shared S: i32[64]\n  thread.copy(S[thread_id], A[thread_id])\n"
    "  thread.copy(B[thread_id], S[thread_id])\n}\n",
    /* disjoint halves written and read without a barrier */
    "kernel k(A: f32[8] global, B: f32[4] global) threads=32 {\n"
    "  shared S: f32[8]\n  cta.copy(S[0:4], A[0:4])\n  cta.sync()\n  cta.copy(S[4:8], A[4:8])\n"
    "  cta.copy(B, S[0:4])\n}\n",
    /* one selected warp does everything itself */
    "kernel k(A: f64[2, 64] global, B: f64[2] global) threads=96 {\n"
    "  shared S: f64[2, 64]\n  shared R: f64[2]\n  warp[2].copy(S, A)\n  warp[2].sync()\n"
    "  warp[2].min(R, S, nan=ignore)\n  warp[2].copy(B, R)\n}\n",
    /* grids: every CTA owns its slice; padded strides; accum; every dtype */
    "kernel k(A: f16[16, 4, 32] global, B: f16[16, 4] global) threads=128 grid=16 {\n"
    "  shared S: f16[4, 32] strides=(33, 1)\n  shared R: f16[4]\n  cta.copy(S, A[cta_id])\n"
    "  cta.copy(R, B[cta_id])\n  cta.sync()\n  cta.sum(R, S, accum=true)\n"
    "  cta.copy(B[cta_id], R)\n}\n",
    "kernel k(A: bf16[4, 4] global, B: u32[4] global, C: i64[2, 2] global) threads=32 {\n"
    "  shared S: bf16[4, 4]\n  shared U: u32[4]\n  shared L: i64[2, 2]\n"
    "  cta.fill(S, -inf)\n  cta.fill(U, 4294967295)\n  cta.fill(L, -9223372036854775808)\n"
    "  cta.sync()\n  cta.copy(A, S)\n  cta.copy(B, U)\n  cta.copy(C, L)\n}\n",
    /* column-major strides; a middle axis; several axes; negative axes */
    "kernel k(A: f32[4, 6, 8] global, B: f32[4, 8] global, C: f32[6] global) threads=64 {\n"
    "  shared S: f32[4, 6, 8] strides=(1, 4, 24)\n  shared R: f32[4, 8]\n  shared Q: f32[6]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  cta.max(R, S, axes=(1))\n  cta.min(Q, S, axes=(0, -1))\n"
    "  cta.copy(B, R)\n  cta.copy(C, Q)\n}\n",
    /* registers: per-thread buffers at thread and warp scope */
    "kernel k(A: f32[32, 4] global, B: f32[32] global) threads=32 {\n"
    "  local L: f32[4]\n  local M: f32[1]\n  thread.copy(L, A[thread_id])\n"
    "  thread.sum(M, L)\n  thread.copy(B[thread_id], M)\n}\n",
    /* a warpgroup barrier orders the warps of one warpgroup */
    "kernel k(A: f32[2, 4, 32] global, B: f32[2, 4] global) threads=256 {\n"
    "  shared S: f32[2, 4, 32]\n  shared R: f32[2, 4]\n"
    "  warpgroup.copy(S[warpgroup_id], A[warpgroup_id])\n  warpgroup.sync()\n"
    "  warpgroup.sum(R[warpgroup_id], S[warpgroup_id])\n  cta.sync()\n  cta.copy(B, R)\n}\n",
    /* a func: shared operands, no grid */
    "func f(dst: f32[64] shared, src: f32[64, 128] shared) threads=128 {\n"
    "  cta.max(dst, src, axes=(-1), nan=ignore)\n}\n",
    /* map: a row statistic broadcast along the columns; bf16 read as f32 with an explicit
     * rounding; a vector broadcast along the rows; numbers of every type; in place */
    "kernel k(S: f32[16, 8] global, m: f32[16, 1] global, P: f32[16, 8] global, X: bf16[4, 8] global,\n"
    "         v: f32[4, 1] global, w: bf16[8] global, Y: bf16[4, 8] global, t: i64[16, 1] global,\n"
    "         I: i32[16, 8] global, U: u32[8] global) threads=128 {\n"
    "  cta.map(P, exp(S - m))\n  cta.map(Y, bf16(f32(X) * rsqrt(v + 1e-6)) * w)\n  cta.sync()\n"
    "  cta.map(P, where(eq(index(1), t), P, 0))\n  cta.sync()\n  cta.map(P, -inf)\n  cta.map(I, I * -2147483648 + 7)\n"
    "  cta.map(U, U + 4294967295)\n  cta.sync()\n  cta.map(P, f32(I) / 3 + max(S, 1e38) - f64(I[0]))\n  cta.sync()\n"
    "  cta.map(I, i32(S) + i32(index(-1)) + where(lt(S, 0), -1, 1))\n  cta.sync()\n  cta.map(P, where(1, 2.5, 3))\n"
    "  cta.sync()\n  cta.map(P[0:8], P[0:8] * 2)\n  cta.sync()\n  cta.map(I, 1 + 2 * 3)\n}\n",
    /* map reading what other threads wrote, after the barrier; a map at warp scope into a
     * per-warp slice; thread scope in registers */
    "kernel k(A: f32[4, 32] global, B: f32[4, 32] global) threads=128 {\n"
    "  shared S: f32[4, 32]\n  shared T: f32[4, 32]\n  local L: f32[32]\n"
    "  cta.copy(S, A)\n  cta.sync()\n  cta.map(T, S * S)\n  cta.sync()\n  warp.map(S[warp_id], T[warp_id] + 1)\n"
    "  cta.sync()\n  thread.map(L, S[0] - 1)\n  thread.map(L, abs(L))\n  cta.sync()\n  warp.map(B[warp_id], S[warp_id])\n}\n",
    /* fragments: a row statistic whose layout puts row r in the lanes of row r of S */
    "func f(S: f32[16, 64] local layout=mma_m16n8k16_c, m: f32[16, 1] local layout=linear(reg=((8, 0)), "
    "lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0))), G: f32[64] shared) threads=32 {\n"
    "  warp.map(S, exp(S - m) * G)\n  warp.map(m, -m)\n}\n",
};

static void test_valid_programs(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        assert_valid(valid[i], 32);
        if (!strstr(valid[i], "warpgroup") && !strstr(valid[i], "warp[2]") && !strstr(valid[i], "warp_id"))
            assert_valid(valid[i], 64);
    }
}

/* At warp size 64 a CTA has half as many warps: warp[2] of 96 threads does not exist. */
static void test_warp_size_changes_counts(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[4] global) threads=96 {\n  warp[2].sync()\n}\n";
    assert_valid(src, 32);
    tilec_ctx *ctx;
    tilec_open(&ctx);
    assert_int_equal(check_text(ctx, src, strlen(src), 64), TILEC_ERR_VERIFY);
    tilec_diag d;
    tilec_diag_get(ctx, 0, &d);
    assert_string_equal(d.message, "warp[2] does not exist: threads=96 gives 2 warps (warp size 64)");
    tilec_verify_options bad = {.warp_size = 48};
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "t", src, strlen(src), &p), TILEC_OK);
    assert_int_equal(tilec_verify(p, &bad), TILEC_ERR_INVALID_ARG);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Independent problems are all reported, in source order. */
static void test_all_errors_reported(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                      "  shared As: f32[4, 8]\n  shared Bs: f32[5]\n  cta.copy(As, A)\n  cta.sync()\n"
                      "  cta.sum(Bs, As)\n  cta.max(B, As, axes=(4))\n  cta.copy(B, As[9])\n}\n"
                      "kernel j(A: f32[4] shared) threads=32 {\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    assert_int_equal(check_text(ctx, src, strlen(src), 32), TILEC_ERR_VERIFY);
    assert_int_equal(tilec_diag_count(ctx), 4);
    int lines[] = {6, 7, 8, 10};
    for (int i = 0; i < 4; i++) {
        tilec_diag d;
        tilec_diag_get(ctx, (size_t)i, &d);
        assert_int_equal(d.line, lines[i]);
        assert_int_equal(d.severity, TILEC_SEV_ERROR);
    }
    tilec_close(ctx);
}

/* A race names both lines: the error at the read, a note at the write. */
static void test_race_has_note(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=64 {\n"
                      "  shared As: f32[4, 8]\n  cta.copy(As, A)\n  cta.sum(B, As)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    assert_int_equal(check_text(ctx, src, strlen(src), 32), TILEC_ERR_VERIFY);
    assert_int_equal(tilec_diag_count(ctx), 2);
    tilec_diag e, n;
    tilec_diag_get(ctx, 0, &e);
    tilec_diag_get(ctx, 1, &n);
    assert_int_equal(e.line, 4);
    assert_int_equal(n.severity, TILEC_SEV_NOTE);
    assert_int_equal(n.line, 3);
    assert_int_equal(n.col, 12);
    assert_string_equal(n.message, "the earlier write of 'As' (cta.copy)");
    assert_non_null(strstr(tilec_diag_text(ctx), "t.tile:3:12: note: the earlier write of 'As' (cta.copy)\n"
                                                 "    3 |   cta.copy(As, A)\n      |            ^\n"));
    tilec_close(ctx);
}

/* More than 64 problems: the rest are counted, not lost silently. */
static void test_many_errors_are_counted(void **state) {
    (void)state;
    char src[16384];
    int n = snprintf(src, sizeof src, "kernel k(A: f32[4] global) threads=32 {\n");
    for (int i = 0; i < 100; i++) n += snprintf(src + n, sizeof src - (size_t)n, "  cta.copy(A, A[9])\n");
    snprintf(src + n, sizeof src - (size_t)n, "}\n");
    tilec_ctx *ctx;
    tilec_open(&ctx);
    assert_int_equal(check_text(ctx, src, strlen(src), 32), TILEC_ERR_VERIFY);
    assert_int_equal(tilec_diag_count(ctx), 64);
    assert_non_null(strstr(tilec_diag_text(ctx), "(36 more diagnostics not shown)"));
    tilec_close(ctx);
}

/* ---- what a target launches: shared memory per CTA, local memory per thread ---------------- */

enum { ANY = -1 }; /* tilec_verify without a target */

/* Verifies src for a target (emits for CUDA and HIP, simulates for the simulator, or
 * tilec_verify for ANY); the status, with the first diagnostic's message in msg. */
static tilec_status verify_for(int backend, const char *arch, const char *src, tilec_diag *first, char *msg, size_t n) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p = NULL;
    assert_int_equal(tilec_parse(ctx, "m.tile", src, strlen(src), &p), TILEC_OK);
    tilec_status st;
    if (backend == ANY) {
        st = tilec_verify(p, NULL);
    } else if (backend == TILEC_BACKEND_SIM) {
        static unsigned char zeros[1 << 20]; /* every parameter below fits */
        void *args[4] = {zeros, zeros + (1 << 18), zeros + (2 << 18), zeros + (3 << 18)};
        st = tilec_simulate(p, NULL, NULL, args);
    } else {
        tilec_target t = {(tilec_backend)backend, arch, 0};
        char *text = NULL;
        st = tilec_emit(p, &t, &text, NULL);
        tilec_free(text);
    }
    *msg = '\0';
    memset(first, 0, sizeof *first);
    if (tilec_diag_count(ctx) > 0) {
        tilec_diag_get(ctx, 0, first);
        snprintf(msg, n, "%s", first->message);
    }
    tilec_program_free(p);
    tilec_close(ctx);
    return st;
}

typedef struct limit_case {
    int backend;
    const char *arch;
    bool ok;
    const char *message; /* expected part of the error */
} limit_case;

static void expect_limits(const char *src, const limit_case *cases, size_t n, int line, int col) {
    for (size_t i = 0; i < n; i++) {
        const limit_case *c = &cases[i];
        tilec_diag d;
        char msg[1024];
        tilec_status st = verify_for(c->backend, c->arch, src, &d, msg, sizeof msg);
        const char *what = c->backend == ANY ? "tilec_verify" : c->arch ? c->arch : "sim";
        if (c->ok && st != TILEC_OK) fail_msg("%s: expected the program to pass, got %s: %s", what, tilec_status_name(st), msg);
        if (c->ok) continue;
        if (st != TILEC_ERR_VERIFY || !strstr(msg, c->message))
            fail_msg("%s: expected TILEC_ERR_VERIFY with '%s', got %s: '%s'", what, c->message, tilec_status_name(st), msg);
        if (d.line != line || d.col != col) fail_msg("%s: the error is at %d:%d, not %d:%d", what, d.line, d.col, line, col);
    }
}

/* 100 KiB of shared memory: within what CUDA sm_90 (227 KiB), sm_80 (163 KiB) and the
 * simulator launch; above sm_86 (99 KiB), sm_75 (64 KiB) and HIP (64 KiB of LDS). */
static void test_shared_per_target(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[100, 256] global, B: f32[100] global) threads=256 {\n"
                      "  shared S: f32[100, 256]\n  cta.copy(S, A)\n  cta.sync()\n  cta.sum(B, S)\n}\n";
    const limit_case cases[] = {
        {ANY, NULL, true, NULL},
        {TILEC_BACKEND_SIM, NULL, true, NULL},
        {TILEC_BACKEND_CUDA, "sm_90", true, NULL},
        {TILEC_BACKEND_CUDA, "sm_80", true, NULL},
        {TILEC_BACKEND_CUDA, "sm_86", false, "'S' takes 102400 bytes of shared memory, more than the 99 KiB a CTA gets on "
                                             "CUDA sm_86; use smaller tiles or fewer shared buffers"},
        {TILEC_BACKEND_CUDA, "sm_75", false, "more than the 64 KiB a CTA gets on CUDA sm_75"},
        {TILEC_BACKEND_HIP, "gfx90a", false, "'S' takes 102400 bytes of shared memory, more than the 64 KiB a CTA gets on "
                                             "HIP gfx90a; use smaller tiles or fewer shared buffers"},
        {TILEC_BACKEND_HIP, "gfx1100", false, "more than the 64 KiB a CTA gets on HIP gfx1100"},
    };
    expect_limits(src, cases, sizeof cases / sizeof cases[0], 2, 10);
}

/* The buffers add up (16 bytes each at least); exactly 227 KiB is the most, 16 bytes more
 * is too much on every target, the simulator included. */
static void test_shared_adds_up_to_the_most(void **state) {
    (void)state;
    const char *exact = "kernel k(A: f32[4] global) threads=32 {\n"
                        "  shared S: f32[58000]\n  shared T: f32[112]\n  cta.fill(S, 0)\n  cta.fill(T, 0)\n}\n";
    const char *over = "kernel k(A: f32[4] global) threads=32 {\n"
                       "  shared S: f32[58000]\n  shared T: f32[112]\n  shared U: f32[1]\n"
                       "  cta.fill(S, 0)\n  cta.fill(T, 0)\n  cta.fill(U, 0)\n}\n";
    const limit_case fits[] = {{ANY, NULL, true, NULL}, {TILEC_BACKEND_SIM, NULL, true, NULL},
                               {TILEC_BACKEND_CUDA, "sm_90", true, NULL}, {TILEC_BACKEND_CUDA, "sm_100", true, NULL}};
    expect_limits(exact, fits, sizeof fits / sizeof fits[0], 0, 0);
    const limit_case too_much[] = {
        {ANY, NULL, false, "'U' takes 16 bytes of shared memory; with the kernel's other shared buffers that is 232464 "
                           "bytes, more than the 227 KiB a CTA gets on any target (CUDA sm_90 and the simulator allow the most)"},
        {TILEC_BACKEND_SIM, NULL, false, "more than the 227 KiB a CTA gets on the simulator (as on the most permissive GPU, CUDA sm_90)"},
        {TILEC_BACKEND_CUDA, "sm_90", false, "that is 232464 bytes, more than the 227 KiB a CTA gets on CUDA sm_90;"},
    };
    expect_limits(over, too_much, sizeof too_much / sizeof too_much[0], 4, 10);
    const limit_case smaller[] = {{TILEC_BACKEND_CUDA, "sm_120", false, "'S' takes 232000 bytes of shared memory, more "
                                                                        "than the 99 KiB a CTA gets on CUDA sm_120"}};
    expect_limits(exact, smaller, 1, 2, 10); /* the first buffer is already too much there */
}

/* A func's shared buffers are static arrays in the emitted code: 48 KiB on CUDA. */
static void test_func_shared(void **state) {
    (void)state;
    const char *src = "func f(X: f32[4] shared) threads=64 {\n"
                      "  shared S: f32[40, 256]\n  shared T: f32[4000]\n  cta.fill(S, 0)\n  cta.fill(T, 0)\n}\n";
    const limit_case cases[] = {
        {ANY, NULL, true, NULL},
        {TILEC_BACKEND_HIP, "gfx90a", true, NULL},
        {TILEC_BACKEND_SIM, NULL, true, NULL},
        {TILEC_BACKEND_CUDA, "sm_90", false, "'T' takes 16000 bytes of shared memory; with the func's other shared "
                                             "buffers that is 56960 bytes, more than the 48 KiB a func gets on CUDA sm_90 "
                                             "(a func's shared buffers are static arrays)"},
    };
    expect_limits(src, cases, sizeof cases / sizeof cases[0], 3, 10);
}

/* Local memory: 64 KiB a thread on every target. */
static void test_local_per_thread(void **state) {
    (void)state;
    const char *fits = "kernel k(A: f64[32, 8192] global) threads=32 {\n"
                       "  local L: f64[8192]\n  thread.copy(L, A[thread_id])\n  thread.copy(A[thread_id], L)\n}\n";
    const char *over = "kernel k(A: f64[32, 8192] global) threads=32 {\n"
                       "  local L: f64[8192]\n  local M: f64[2]\n  thread.copy(L, A[thread_id])\n"
                       "  thread.copy(A[thread_id], L)\n}\n";
    const limit_case ok[] = {{ANY, NULL, true, NULL}, {TILEC_BACKEND_CUDA, "sm_90", true, NULL},
                             {TILEC_BACKEND_HIP, "gfx90a", true, NULL}};
    expect_limits(fits, ok, sizeof ok / sizeof ok[0], 0, 0);
    const limit_case refused[] = {
        {ANY, NULL, false, "'M' takes 16 bytes of local memory; with the kernel's other local buffers that is 65552 bytes, "
                           "more than the 64 KiB tilec gives a thread's local buffers on any target"},
        {TILEC_BACKEND_CUDA, "sm_90", false, "more than the 64 KiB tilec gives a thread's local buffers on CUDA sm_90"},
        {TILEC_BACKEND_HIP, "gfx1100", false, "on HIP gfx1100"},
        {TILEC_BACKEND_SIM, NULL, false, "on the simulator"},
    };
    expect_limits(over, refused, sizeof refused / sizeof refused[0], 3, 9);
}

/* The shared slots a variant adds count too: the buffers fit CUDA sm_75's 64 KiB, the
 * slots of smem_tree do not; on sm_90 they do. */
static void test_variant_slots_count(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[16, 1020] global, B: f32[16] global) threads=1024 {\n"
                      "  shared S: f32[16, 1020]\n  cta.copy(S, A)\n  cta.sync()\n"
                      "  cta.sum(B, S, variant=smem_tree)\n}\n";
    tilec_diag d;
    char msg[1024];
    assert_int_equal(verify_for(TILEC_BACKEND_CUDA, "sm_90", src, &d, msg, sizeof msg), TILEC_OK);
    assert_int_equal(verify_for(TILEC_BACKEND_CUDA, "sm_75", src, &d, msg, sizeof msg), TILEC_ERR_DISPATCH);
    assert_non_null(strstr(msg, "variant=smem_tree cannot lower this sum on cuda sm_75"));
    assert_non_null(strstr(msg, "declined: its shared slots (4096 bytes) bring the kernel's shared memory to 69376 "
                                "bytes, more than the 65536 a CTA gets on CUDA sm_75"));
    assert_int_equal(d.line, 5);
    assert_int_equal(d.col, 7);
    /* not forced: a variant whose slots do not fit declines, and one that fits lowers it */
    const char *tight = "kernel k(A: f32[58112] global, B: f32[1] global) threads=256 {\n"
                        "  shared S: f32[58112]\n  cta.copy(S, A)\n  cta.sync()\n  cta.sum(B, S, axes=(0))\n}\n";
    assert_int_equal(verify_for(TILEC_BACKEND_CUDA, "sm_90", tight, &d, msg, sizeof msg), TILEC_OK);
    assert_int_equal(verify_for(TILEC_BACKEND_SIM, NULL, tight, &d, msg, sizeof msg), TILEC_OK);
}

/* The verifier types every node of a map's expression (f16 and bf16 read as f32, numbers
 * taking the type they meet, rounded once from their text) and records the broadcast. */
static void test_map_types(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    const char *src = "kernel k(S: f32[16, 8] global, m: f32[16, 1] global, P: f32[16, 8] global, w: bf16[8] global,\n"
                      "         I: i32[16, 8] global, D: f64[8] global, Q: f32[8] global, R: f32[2] global) threads=128 {\n"
                      "  cta.map(P, bf16(S - m) * w + 0.1)\n  cta.map(I, where(gt(index(-1), 2), I, 3))\n"
                      "  cta.map(Q, D + 0.1)\n  cta.map(R, 0.1)\n  cta.sync()\n  cta.map(I, where(gt(S, 0), 1, 0))\n}\n";
    tilec_program *p = NULL;
    assert_int_equal(tilec_parse(ctx, "t.tile", src, strlen(src), &p), TILEC_OK);
    tilec_verify_options o = {.warp_size = 32};
    if (tilec_verify(p, &o) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    const tilec_kernel *k = tilec_program_kernel(p, 0);
    const ir_expr *e = k->stmts[0]->expr; /* (bf16(S - m) * w) + 0.1 */
    assert_int_equal(e->type, TILEC_F32);
    const ir_expr *mul = e->args[0], *cast = mul->args[0], *sub = cast->args[0];
    assert_int_equal(cast->type, TILEC_F32); /* rounded to bf16, computed as f32 */
    assert_int_equal(cast->to, TILEC_BF16);
    assert_int_equal(mul->args[1]->type, TILEC_F32); /* w: bf16 read as f32 */
    assert_int_equal(sub->args[1]->bcast[0], 0);
    assert_int_equal(sub->args[1]->bcast[1], -1); /* m: its column broadcast */
    assert_int_equal(mul->args[1]->bcast[0], -1); /* w: a missing leading dimension */
    assert_int_equal(mul->args[1]->bcast[1], 0);
    assert_int_equal(sub->args[0]->bcast[0], 0);
    assert_int_equal(sub->args[0]->bcast[1], 1);
    assert_int_equal(e->args[1]->type, TILEC_F32);
    assert_true(e->args[1]->value.typed == (double)0.1f); /* 0.1 rounded once to f32 */
    e = k->stmts[1]->expr;
    assert_int_equal(e->type, TILEC_I32);
    assert_int_equal(e->args[0]->type, TILEC_I64); /* gt of i64 operands gives an i64 1 or 0 */
    assert_int_equal(e->args[0]->args[0]->axis, 1); /* index(-1), resolved */
    assert_int_equal(e->args[0]->args[1]->type, TILEC_I64);
    assert_int_equal(e->args[2]->type, TILEC_I32);
    assert_true(e->args[2]->value.is_int && e->args[2]->value.i == 3);
    e = k->stmts[2]->expr;
    assert_int_equal(e->type, TILEC_F64);
    assert_true(e->args[1]->value.typed == 0.1); /* f64: the number as written */
    e = k->stmts[3]->expr; /* numbers only: the destination's type */
    assert_int_equal(e->type, TILEC_F32);
    assert_true(e->value.typed == (double)0.1f);
    e = k->stmts[5]->expr; /* a where of numbers: its typed condition keeps its own type */
    assert_int_equal(e->type, TILEC_I32);
    assert_int_equal(e->args[0]->type, TILEC_F32);
    assert_int_equal(e->args[0]->args[0]->type, TILEC_F32);
    assert_int_equal(e->args[0]->args[1]->type, TILEC_F32);
    assert_int_equal(e->args[1]->type, TILEC_I32);
    assert_int_equal(e->args[2]->type, TILEC_I32);
    /* verifying again (each target does) gives the same types */
    assert_int_equal(tilec_verify(p, &o), TILEC_OK);
    assert_int_equal(e->args[0]->args[1]->type, TILEC_F32);
    assert_int_equal(e->args[1]->type, TILEC_I32);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A map is a copy that reads every operand region: reading a shared tile another thread
 * wrote needs a barrier first, and it ends with none (its result needs one to be read). */
static void test_map_races(void **state) {
    (void)state;
    static const struct { const char *src; int line; const char *msg; } cases[] = {
        {"kernel k(A: f32[4, 32] global, B: f32[4, 32] global) threads=64 {\n  shared S: f32[4, 32]\n"
         "  cta.copy(S, A)\n  cta.map(B, S + 1)\n}\n", 4,
         "missing barrier: 'S' is read here but other threads wrote it at line 3 with no barrier between; add cta.sync() "
         "before this statement"},
        {"kernel k(A: f32[4, 32] global, B: f32[4, 32] global) threads=64 {\n  shared S: f32[4, 32]\n  shared m: f32[4, 1]\n"
         "  cta.copy(S, A)\n  cta.sync()\n  cta.max(m, S)\n  cta.map(S, S - m)\n  cta.copy(B, S)\n}\n", 8,
         "missing barrier: 'S' is read here but other threads wrote it at line 7 with no barrier between; add cta.sync() "
         "before this statement"},
        {"kernel k(A: f32[4, 32] global, B: f32[4, 32] global) threads=64 {\n  shared S: f32[4, 32]\n"
         "  cta.copy(S, A)\n  cta.sync()\n  cta.map(B, S)\n  cta.fill(S, 0)\n}\n", 6,
         "missing barrier: 'S' is overwritten here while other threads may still read it at line 5; add cta.sync() "
         "before this statement"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx;
        tilec_open(&ctx);
        assert_int_equal(check_text(ctx, cases[i].src, strlen(cases[i].src), 32), TILEC_ERR_VERIFY);
        tilec_diag d;
        tilec_diag_get(ctx, 0, &d);
        assert_int_equal(d.line, cases[i].line);
        assert_string_equal(d.message, cases[i].msg);
        tilec_close(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_programs),
        cmocka_unit_test(test_warp_size_changes_counts),
        cmocka_unit_test(test_all_errors_reported),
        cmocka_unit_test(test_race_has_note),
        cmocka_unit_test(test_many_errors_are_counted),
        cmocka_unit_test(test_shared_per_target),
        cmocka_unit_test(test_shared_adds_up_to_the_most),
        cmocka_unit_test(test_func_shared),
        cmocka_unit_test(test_local_per_thread),
        cmocka_unit_test(test_variant_slots_count),
        cmocka_unit_test(test_map_types),
        cmocka_unit_test(test_map_races),
    };
    return cmocka_run_group_tests_name("verify", tests, NULL, NULL);
}
