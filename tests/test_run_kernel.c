/*
 * test_run_kernel.c — tilec_run_kernel, a `.tile` kernel launched on the context's runtime:
 * on the simulator backend against values computed here from first principles (sums of
 * small integers, exact in f32; maxima of signed integers, odd lengths and negatives),
 * with a grid statement whose scratch is kept per stream between launches; every error
 * with its status and message; and the GPU path (emit, NVRTC, load, the plan kept) through
 * a backend that stands for a CUDA device and records what it is asked to load and launch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../src/ir/ir.h" /* the context's runtime, for the recording backend */
#include "../src/runtime/runtime.h"
#include "../src/runtime/rtc.h"

/* A CTA's sums of 3 rows of 37 (odd), and a grid statement's maxima of 5 rows of 1001 i32
 * (with scratch over CTAs on the simulator's 4 multiprocessors), and a func. */
static const char *program =
    "kernel rows(A: f32[3, 37] global, B: f32[3] global) threads=64 {\n"
    "  shared As: f32[3, 37]\n"
    "  shared Bs: f32[3]\n"
    "  cta.copy(As, A)\n"
    "  cta.sync()\n"
    "  cta.sum(Bs, As, axes=(-1))\n"
    "  cta.sync()\n"
    "  cta.copy(B, Bs)\n"
    "}\n"
    "kernel peaks(A: i32[5, 100001] global, B: i32[5] global) threads=256 {\n"
    "  grid.max(B, A, axes=(1))\n"
    "}\n"
    "func helper(dst: f32[4] shared, src: f32[4, 8] shared) threads=32 {\n"
    "  cta.sum(dst, src, axes=(-1))\n"
    "}\n";

static tilec_program *parse(tilec_ctx *ctx, const char *text) {
    tilec_program *p = NULL;
    if (tilec_parse(ctx, "t.tile", text, strlen(text), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    return p;
}

static tilec_ctx *sim_ctx(void) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    return ctx;
}

static void *dev_alloc(tilec_ctx *ctx, size_t bytes) {
    void *p = NULL;
    assert_int_equal(tilec_mem_alloc(ctx, bytes, &p), TILEC_OK);
    return p;
}

/* The first diagnostic's message contains want. */
static void expect_diag(tilec_ctx *ctx, const char *want) {
    tilec_diag g;
    assert_true(tilec_diag_count(ctx) > 0);
    assert_int_equal(tilec_diag_get(ctx, 0, &g), TILEC_OK);
    if (!strstr(g.message, want)) fail_msg("'%s' not in '%s'", want, g.message);
}

/* Row sums of small signed integers (exact in f32 in any order), rows of an odd length. */
static void test_sim_row_sums(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    tilec_program *p = parse(ctx, program);
    float a[3 * 37], b[3] = {0};
    double want[3] = {0};
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 37; c++) {
            int v = (r * 37 + c) % 11 - 7; /* -7 .. 3 */
            a[r * 37 + c] = (float)v;
            want[r] += v;
        }
    void *da = dev_alloc(ctx, sizeof a), *db = dev_alloc(ctx, sizeof b);
    assert_int_equal(tilec_mem_upload(ctx, da, a, sizeof a), TILEC_OK);
    void *args[2] = {da, db};
    for (int round = 0; round < 2; round++) { /* the second call finds the plan */
        assert_int_equal(tilec_run_kernel(ctx, p, "rows", args, 2, NULL), TILEC_OK);
        assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
        assert_int_equal(tilec_mem_download(ctx, b, db, sizeof b), TILEC_OK);
        for (int r = 0; r < 3; r++) assert_true((double)b[r] == want[r]);
        assert_true(want[0] < 0); /* the data has negative sums */
    }
    assert_int_equal(((rt *)ctx->runtime)->nplans, 1);
    tilec_target t;
    assert_int_equal(tilec_runtime_target(ctx, &t), TILEC_OK);
    assert_int_equal(t.backend, TILEC_BACKEND_SIM);
    assert_int_equal(t.warp_size, 32);
    assert_string_equal(t.arch, "cpu");
    tilec_mem_free(ctx, da);
    tilec_mem_free(ctx, db);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A grid statement's maxima of i32 rows, over several CTAs (partials and counters in
 * scratch kept per stream): right on every launch, on two streams, new data each time. */
static void test_sim_grid_max_scratch(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    tilec_program *p = parse(ctx, program);
    enum { R = 5, N = 100001 };
    int32_t *a = malloc(sizeof(int32_t) * R * N), b[R];
    assert_non_null(a);
    void *da = dev_alloc(ctx, sizeof(int32_t) * R * N), *db = dev_alloc(ctx, sizeof b);
    void *args[2] = {da, db};
    for (int round = 0; round < 4; round++) {
        int32_t want[R];
        for (int r = 0; r < R; r++) {
            want[r] = INT32_MIN;
            for (int c = 0; c < N; c++) {
                int32_t v = -1000000 - (int32_t)((c * 7919 + r * 31 + round) % 100003); /* all negative */
                if (r == 2 && c == N - 1) v = -5 - round;                              /* the last element */
                a[r * N + c] = v;
                if (v > want[r]) want[r] = v;
            }
        }
        assert_int_equal(tilec_mem_upload(ctx, da, a, sizeof(int32_t) * R * N), TILEC_OK);
        assert_int_equal(tilec_run_kernel(ctx, p, "peaks", args, 2, round % 2 ? (void *)0x10 : NULL), TILEC_OK);
        assert_int_equal(tilec_mem_download(ctx, b, db, sizeof b), TILEC_OK);
        for (int r = 0; r < R; r++) assert_int_equal(b[r], want[r]);
        assert_int_equal(b[2], -5 - round);
    }
    rt *r = ctx->runtime;
    assert_int_equal(r->nplans, 1);
    assert_true(r->plans->info.nscratch > 0 && r->plans->info.grid > 1); /* the path with partials */
    assert_int_equal(r->nscratch, 2);                                   /* one set per stream */
    tilec_mem_free(ctx, da);
    tilec_mem_free(ctx, db);
    free(a);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A changed program is a new plan; a freed one leaves nothing the plan uses. */
static void test_program_changes(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    const char *one = "kernel k(A: i32[7] global, B: i32[1] global) threads=32 {\n"
                      "  shared S: i32[7]\n  shared D: i32[1]\n  cta.copy(S, A)\n  cta.sync()\n"
                      "  cta.%s(D, S, axes=(0))\n  cta.sync()\n  cta.copy(B, D)\n}\n";
    int32_t a[7] = {-3, 9, -12, 4, 0, 7, -1}, b[1];
    void *da = dev_alloc(ctx, sizeof a), *db = dev_alloc(ctx, sizeof b), *args[2] = {da, db};
    assert_int_equal(tilec_mem_upload(ctx, da, a, sizeof a), TILEC_OK);
    const char *ops[] = {"sum", "min", "max", "sum"};
    int32_t want[] = {4, -12, 9, 4};
    for (int i = 0; i < 4; i++) {
        char text[512];
        snprintf(text, sizeof text, one, ops[i]);
        tilec_program *p = parse(ctx, text);
        assert_int_equal(tilec_run_kernel(ctx, p, NULL, args, 2, NULL), TILEC_OK);
        tilec_program_free(p);
        assert_int_equal(tilec_mem_download(ctx, b, db, sizeof b), TILEC_OK);
        assert_int_equal(b[0], want[i]);
    }
    assert_int_equal(((rt *)ctx->runtime)->nplans, 3); /* the second sum found the first's */
    tilec_mem_free(ctx, da);
    tilec_mem_free(ctx, db);
    tilec_close(ctx);
}

static void test_errors(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx(), *other;
    assert_int_equal(tilec_open(&other), TILEC_OK);
    tilec_program *p = parse(ctx, program);
    void *da = dev_alloc(ctx, 3 * 37 * 4), *db = dev_alloc(ctx, 3 * 4), *small = dev_alloc(ctx, 2 * 4);
    static const float zeros[3 * 37];
    assert_int_equal(tilec_mem_upload(ctx, da, zeros, sizeof zeros), TILEC_OK);
    void *args[2] = {da, db};
    assert_int_equal(tilec_run_kernel(NULL, p, "rows", args, 2, NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_run_kernel(ctx, NULL, "rows", args, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "no program");
    assert_int_equal(tilec_run_kernel(other, p, "rows", args, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(other, "belongs to another context");
    assert_int_equal(tilec_run_kernel(ctx, p, "nope", args, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "no kernel or func named 'nope'");
    assert_int_equal(tilec_run_kernel(ctx, p, NULL, args, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "the program has 3 kernels and funcs; name the one to use");
    assert_int_equal(tilec_run_kernel(ctx, p, "helper", args, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "'helper' is a func: a func is called from a kernel's code, not launched");
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", args, 1, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "kernel 'rows' takes 2 parameters, not 1");
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", args, 3, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "kernel 'rows' takes 2 parameters, not 3");
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", NULL, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "args is NULL");
    void *nul[2] = {da, NULL};
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", nul, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "parameter 1 of kernel 'rows', B: f32[3], is NULL; give it device memory of 12 bytes");
    void *short_out[2] = {da, small};
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", short_out, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "parameter 'B' (f32[3]) reaches 4 bytes past the end of an allocation of 8 bytes");
    void *inside[2] = {(char *)da + 4, db}; /* starts inside A's block, runs 4 bytes past it */
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", inside, 2, NULL), TILEC_ERR_INVALID_ARG);
    expect_diag(ctx, "parameter 'A' (f32[3, 37]) reaches 4 bytes past the end");
    /* a program that does not verify: an error of the format, not a launch */
    tilec_program *race = parse(ctx, "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                                     "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n"
                                     "  cta.sum(Bs, As, axes=(-1))\n  cta.sync()\n  cta.copy(B, Bs)\n}\n");
    void *rb = dev_alloc(ctx, 4 * 4), *rargs[2] = {da, rb};
    assert_int_equal(tilec_run_kernel(ctx, race, NULL, rargs, 2, NULL), TILEC_ERR_VERIFY);
    expect_diag(ctx, "missing barrier");
    assert_int_equal(((rt *)ctx->runtime)->nplans, 0); /* nothing was kept */
    tilec_program_free(race);
    tilec_mem_free(ctx, rb);
    /* the simulator's budget: a run past it is TILEC_ERR_BUDGET, and the plan stays */
    assert_int_equal(tilec_set_sim_budget(ctx, 10), TILEC_OK);
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", args, 2, NULL), TILEC_ERR_BUDGET);
    assert_int_equal(tilec_set_sim_budget(ctx, 0), TILEC_OK);
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", args, 2, NULL), TILEC_OK);
    tilec_mem_free(ctx, da);
    tilec_mem_free(ctx, db);
    tilec_mem_free(ctx, small);
    tilec_program_free(p);
    tilec_close(ctx);
    tilec_close(other);
}

/* No GPU here: an explicit GPU backend fails to open with what was tried, and the context
 * keeps no runtime, so a later call opens AUTO (the simulator here). */
static void test_unusable_backend(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    tilec_status st = tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0);
    if (st == TILEC_OK) {
        print_message("a CUDA GPU is usable here; the no-GPU path is not checked\n");
        tilec_close(ctx);
        return;
    }
    assert_int_equal(st, TILEC_ERR_UNAVAILABLE);
    tilec_diag g;
    assert_int_equal(tilec_diag_get(ctx, 0, &g), TILEC_OK);
    assert_true(strstr(g.message, "CUDA") || strstr(g.message, "NVIDIA") || strstr(g.message, "NVRTC"));
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_HIP, 0), TILEC_ERR_UNAVAILABLE);
    assert_true(tilec_diag_count(ctx) > 0);
    tilec_close(ctx);
}

/* ---- the GPU path, through a backend that stands for a CUDA device ------------------------ */

static int fake_loads, fake_launches, fake_nargs;
static tilec_launch_info fake_info;
static void *fake_args[4];
static bool fake_fail_launch;

static tilec_status fake_load(rt *r, rt_plan *p, const void *binary) {
    (void)r;
    assert_non_null(binary);
    assert_null(p->prog); /* a GPU plan keeps nothing of the caller's program */
    fake_loads++;
    return TILEC_OK;
}

static tilec_status fake_launch(rt *r, rt_plan *p, void *const *args, int nargs, void *const *scratch, void *stream) {
    (void)scratch, (void)stream;
    if (fake_fail_launch) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "launching %s failed: the device is gone", p->info.symbol);
        return TILEC_ERR_UNAVAILABLE;
    }
    fake_launches++;
    fake_info = p->info;
    fake_nargs = nargs;
    for (int i = 0; i < nargs && i < 4; i++) fake_args[i] = args[i];
    return TILEC_OK;
}

/* The lowering and launch of a GPU target (NVRTC really compiles: it is installed here),
 * the device's load and launch recorded; the plan is kept and found by the next call. */
static void test_gpu_path(void **state) {
    (void)state;
    if (!rtc_version(TILEC_BACKEND_CUDA)) {
        print_message("no NVRTC here: the GPU path is not checked\n");
        skip();
    }
    tilec_ctx *ctx = sim_ctx();
    rt *r = ctx->runtime;
    static rt_backend fake;
    fake = rt_sim;
    fake.kind = TILEC_BACKEND_CUDA;
    fake.name = "cuda";
    fake.load = fake_load;
    fake.launch = fake_launch;
    fake.extent = NULL; /* as a GPU: nothing knows the blocks */
    r->be = &fake;
    r->target = (dsp_target){.backend = TILEC_BACKEND_CUDA, .arch = "sm_90", .warp_size = 32, .sms = 132};
    tilec_program *p = parse(ctx, program);
    static _Alignas(16) float a[3 * 37], b[4];
    void *args[2] = {a, b};
    fake_loads = fake_launches = 0;
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", args, 2, NULL), TILEC_OK);
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", args, 2, NULL), TILEC_OK);
    assert_int_equal(fake_loads, 1);
    assert_int_equal(fake_launches, 2);
    assert_int_equal(fake_nargs, 2);
    assert_ptr_equal(fake_args[0], a);
    assert_ptr_equal(fake_args[1], b);
    tilec_launch_info want;
    tilec_target t = {TILEC_BACKEND_CUDA, "sm_90", 32};
    assert_int_equal(tilec_launch_info_get(p, &t, "rows", &want), TILEC_OK);
    assert_string_equal(fake_info.symbol, want.symbol);
    assert_int_equal(fake_info.grid, want.grid);
    assert_int_equal(fake_info.threads, want.threads);
    assert_int_equal(fake_info.dynamic_shared, want.dynamic_shared);
    /* a grid statement: sized for the device's 132 multiprocessors, as tilec_launch_info_get does */
    int32_t *big = malloc(sizeof(int32_t) * 5 * 100001), out[5];
    void *gargs[2] = {big, out};
    assert_int_equal(tilec_run_kernel(ctx, p, "peaks", gargs, 2, NULL), TILEC_OK);
    assert_int_equal(tilec_launch_info_get(p, &t, "peaks", &want), TILEC_OK);
    assert_int_equal(fake_info.grid, want.grid);
    assert_int_equal(fake_info.nscratch, want.nscratch);
    assert_int_equal(fake_loads, 2);
    /* an unaligned pointer is another plan, without vector loads */
    void *odd[2] = {(char *)a + 4, b};
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", odd, 2, NULL), TILEC_OK);
    assert_int_equal(fake_loads, 3);
    /* a failed launch is the backend's status and message */
    fake_fail_launch = true;
    assert_int_equal(tilec_run_kernel(ctx, p, "rows", args, 2, NULL), TILEC_ERR_UNAVAILABLE);
    expect_diag(ctx, "the device is gone");
    fake_fail_launch = false;
    free(big);
    tilec_program_free(p);
    r->be = &rt_sim; /* the simulator's memory and scratch are freed by its own functions */
    tilec_close(ctx);
}

/* Pointers that are not 16-byte aligned (a view with a storage offset): the plans made for
 * them use no vector access, which the simulator would refuse at such an address as a GPU
 * faults there, and give the aligned plans' bits. tilec_run_kernel (a map and copies),
 * tilec_fused (every op, rows held in registers and staged) and tilec_simulate. */
static void test_sim_unaligned_pointers(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    enum { R = 9, C = 1024, N = R * C };
    static const char *text =
        "kernel k(X: bf16[9, 1024] global, Y: bf16[9, 1024] global) threads=128 grid=9 {\n"
        "  cta.map(Y[cta_id], X[cta_id] * 2 - 1)\n}\n"
        "kernel c(X: f32[4, 64] global, Y: f32[4, 64] global) threads=64 {\n"
        "  shared S: f32[4, 64]\n  cta.copy(S, X)\n  cta.sync()\n  cta.copy(Y, S)\n}\n";
    tilec_program *p = parse(ctx, text);
    uint16_t *x = malloc(N * 2), *y0 = malloc(N * 2), *y1 = malloc(N * 2);
    for (int i = 0; i < N; i++) x[i] = (uint16_t)(0x3f80 + (i * 37) % 200 - 100 + ((i % 3) ? 0 : 0x8000)); /* about ±1 */
    char *dx = dev_alloc(ctx, N * 2 + 32), *dy = dev_alloc(ctx, N * 2 + 32);
    for (int off = 0; off <= 2; off += 2) { /* aligned, then 2 bytes past */
        assert_int_equal(tilec_mem_upload(ctx, dx + off, x, N * 2), TILEC_OK);
        void *args[2] = {dx + off, dy + off};
        if (tilec_run_kernel(ctx, p, "k", args, 2, NULL) != TILEC_OK) fail_msg("offset %d: %s", off, tilec_diag_text(ctx));
        assert_int_equal(tilec_mem_download(ctx, off ? y1 : y0, dy + off, N * 2), TILEC_OK);
    }
    assert_memory_equal(y0, y1, N * 2);
    float f[256], g[256];
    for (int i = 0; i < 256; i++) f[i] = (float)(i % 17) - 8.5f;
    assert_int_equal(tilec_mem_upload(ctx, dx + 4, f, sizeof f), TILEC_OK);
    void *cargs[2] = {dx + 4, dy + 4};
    if (tilec_run_kernel(ctx, p, "c", cargs, 2, NULL) != TILEC_OK) fail_msg("copy: %s", tilec_diag_text(ctx));
    assert_int_equal(tilec_mem_download(ctx, g, dy + 4, sizeof g), TILEC_OK);
    assert_memory_equal(f, g, sizeof f);
    /* tilec_simulate on host memory: lowered for the pointers given */
    uint16_t *hx = malloc(N * 2 + 16), *hy = malloc(N * 2 + 16);
    memcpy((char *)hx + 2, x, N * 2);
    void *hargs[2] = {(char *)hx + 2, (char *)hy + 2};
    if (tilec_simulate(p, "k", NULL, hargs) != TILEC_OK) fail_msg("tilec_simulate: %s", tilec_diag_text(ctx));
    assert_memory_equal((char *)hy + 2, y0, N * 2);
    /* every fused op, rows held in registers (1024 columns) and staged or in place (1000) */
    for (int op = 0; op < TILEC_FUSED_COUNT; op++)
        for (int cols = 1000; cols <= 1024; cols += 24) {
            tilec_fused_desc d = tilec_fused_desc_default((tilec_fused_op)op, TILEC_BF16, R, cols);
            size_t n = (size_t)R * (size_t)cols;
            int64_t tg[R];
            for (int r = 0; r < R; r++) tg[r] = (r * 101) % cols;
            char *dt = dev_alloc(ctx, sizeof tg + 8), *dr = dev_alloc(ctx, n * 2 + 32);
            uint16_t *out[2] = {malloc(n * 2), malloc(n * 2)};
            for (int off = 0; off <= 2; off += 2) {
                assert_int_equal(tilec_mem_upload(ctx, dx + off, x, n * 2), TILEC_OK);
                assert_int_equal(tilec_mem_upload(ctx, dr + off, x, n * 2), TILEC_OK);
                assert_int_equal(tilec_mem_upload(ctx, dt, tg, sizeof tg), TILEC_OK);
                tilec_fused_args a = {.x = dx + off, .y = dy + off, .residual = dr + off, .target = (int64_t *)dt};
                if (tilec_fused(ctx, &d, &a) != TILEC_OK)
                    fail_msg("%s %d x %d, offset %d: %s", tilec_fused_name((tilec_fused_op)op), R, cols, off, tilec_diag_text(ctx));
                size_t bytes = op == TILEC_FUSED_CROSS_ENTROPY ? R * 2 : n * 2;
                assert_int_equal(tilec_mem_download(ctx, out[off / 2], dy + off, bytes), TILEC_OK);
                if (memcmp(out[0], out[1], bytes) && off) fail_msg("%s %d x %d: other bits for an unaligned pointer", tilec_fused_name((tilec_fused_op)op), R, cols);
            }
            free(out[0]);
            free(out[1]);
            tilec_mem_free(ctx, dt);
            tilec_mem_free(ctx, dr);
        }
    free(x), free(y0), free(y1), free(hx), free(hy);
    tilec_mem_free(ctx, dx);
    tilec_mem_free(ctx, dy);
    tilec_program_free(p);
    tilec_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_row_sums),
        cmocka_unit_test(test_sim_grid_max_scratch),
        cmocka_unit_test(test_sim_unaligned_pointers),
        cmocka_unit_test(test_program_changes),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_unusable_backend),
        cmocka_unit_test(test_gpu_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
