/*
 * test_nomem.c — every allocation failing, one at a time. The test is linked with
 * -Wl,--wrap for malloc, calloc, realloc and strdup, so each allocation the library makes
 * goes through the wrappers below; for a path (compile: parse → verify → format →
 * explain → emit → NVRTC, here a fake one; simulate and check; the JIT on the simulator,
 * tilec_reduce and tilec_run_kernel)
 * the allocations are counted, then the run is repeated failing the N-th for every N: the
 * status must be TILEC_ERR_NOMEM, nothing may leak (the ASan run of ./test.sh), and the
 * same context must then do the whole path again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static long calls, fail_at; /* fail_at 0: never */

static bool fails(void) {
    if (++calls != fail_at) return false;
    errno = ENOMEM;
    return true;
}
void *__wrap_malloc(size_t n) { return fails() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return fails() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return fails() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fails() ? NULL : __real_strdup(s); }

static const char SRC[] = "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                          "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
                          "  cta.max(Bs, As, axes=(-1), nan=ignore)\n  cta.sync()\n  cta.copy(B, Bs)\n}\n";

typedef tilec_status (*path_fn)(tilec_ctx *ctx);

static tilec_status compile_path(tilec_ctx *ctx) {
    tilec_program *p = NULL;
    tilec_status st = tilec_parse(ctx, "k.tile", SRC, strlen(SRC), &p);
    const tilec_target targets[] = {{TILEC_BACKEND_CUDA, "sm_90", 32}, {TILEC_BACKEND_HIP, "gfx90a", 64}};
    char *out = NULL;
    if (st == TILEC_OK) st = tilec_verify(p, NULL);
    if (st == TILEC_OK) st = tilec_format(p, &out, NULL);
    tilec_free(out);
    for (int i = 0; i < 2 && st == TILEC_OK; i++) {
        out = NULL;
        st = tilec_explain(p, &targets[i], true, &out);
        tilec_free(out);
        out = NULL;
        if (st == TILEC_OK) st = tilec_emit(p, &targets[i], &out, NULL);
        tilec_free(out);
    }
    void *bin = NULL;
    size_t n = 0;
    if (st == TILEC_OK) st = tilec_compile(p, &targets[0], &bin, &n); /* the fake NVRTC */
    tilec_free(bin);
    tilec_program_free(p);
    return st;
}

static tilec_status simulate_path(tilec_ctx *ctx) {
    tilec_program *p = NULL;
    tilec_status st = tilec_parse(ctx, "k.tile", SRC, strlen(SRC), &p);
    float a[32], b[4] = {0}, a0[32], b0[4] = {0};
    for (int i = 0; i < 32; i++) a[i] = a0[i] = (float)(i % 7) - 3.0f;
    void *args[2] = {a, b};
    if (st == TILEC_OK) st = tilec_simulate(p, NULL, NULL, args);
    tilec_check_result r[2];
    size_t n = 0;
    const void *before[2] = {a0, b0}, *after[2] = {a, b};
    if (st == TILEC_OK) st = tilec_check(p, NULL, NULL, before, after, r, &n);
    if (st == TILEC_OK) assert_true(n == 1 && r[0].ok);
    tilec_program_free(p);
    return st;
}

static tilec_status jit_path(tilec_ctx *ctx) {
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {37, 300}, .naxes = 1, .axes = {1}};
    static float in[37 * 300], before[37], out[37];
    for (int i = 0; i < 37 * 300; i++) in[i] = (float)(i % 11) - 5.0f;
    memset(out, 0, sizeof out);
    char *text = NULL;
    tilec_status st = tilec_reduce_explain(ctx, &d, &text);
    tilec_free(text);
    if (st == TILEC_OK) st = tilec_reduce(ctx, &d, in, out);
    tilec_check_result r;
    if (st == TILEC_OK) st = tilec_reduce_check(ctx, &d, in, before, out, &r);
    if (st == TILEC_OK) assert_true(r.ok);
    return st;
}

/* tilec_run_kernel on the simulator's runtime (host memory, which meets no block of the
 * context, is taken on trust there): the launch and its result. */
static tilec_status run_kernel_path(tilec_ctx *ctx) {
    tilec_program *p = NULL;
    tilec_status st = tilec_parse(ctx, "k.tile", SRC, strlen(SRC), &p);
    static float a[32], b[4];
    for (int i = 0; i < 32; i++) a[i] = (float)(i % 7) - 3.0f;
    memset(b, 0, sizeof b);
    void *args[2] = {a, b};
    if (st == TILEC_OK) st = tilec_run_kernel(ctx, p, NULL, args, 2, NULL);
    if (st == TILEC_OK) assert_true(b[0] == 3.0f && b[3] == 3.0f); /* the maxima of rows of (i % 7) - 3 */
    tilec_program_free(p);
    return st;
}

/* A map statement: parsed, built through the API, verified and formatted. */
static tilec_status map_path(tilec_ctx *ctx) {
    static const char text[] = "kernel k(S: f32[4, 8] global, m: f32[4, 1] global, P: f32[4, 8] global) threads=32 {\n"
                               "  cta.map(P, where(gt(index(1), 2), exp(S - m) * 0.5, f32(i32(S))))\n}\n";
    tilec_program *p = NULL;
    tilec_status st = tilec_parse(ctx, "k.tile", text, strlen(text), &p);
    char *out = NULL;
    if (st == TILEC_OK) st = tilec_verify(p, NULL);
    if (st == TILEC_OK) st = tilec_format(p, &out, NULL);
    tilec_free(out);
    if (st == TILEC_OK) {
        tilec_kernel *k = tilec_program_kernel(p, 0);
        tilec_region dst = tilec_region_whole(tilec_kernel_param_at(k, 2));
        st = tilec_kernel_map(k, (tilec_exec){TILEC_SCOPE_CTA, -1}, &dst, "max(S, m) - -1e-6");
    }
    tilec_program_free(p);
    return st;
}

/* Map statements lowered (16-byte vectors, the math, the casts), simulated and checked
 * against the reference. */
static tilec_status map_sim_path(tilec_ctx *ctx) {
    static const char text[] = "kernel k(S: f32[4, 8] global, m: f32[4, 1] global, P: f32[4, 8] global) threads=32 {\n"
                               "  shared T: f32[4, 8]\n"
                               "  cta.map(T, exp(S - m) * 0.5 + f32(i64(S)) + log2(abs(S)))\n  cta.sync()\n"
                               "  cta.map(P, T * m)\n}\n";
    tilec_program *p = NULL;
    tilec_status st = tilec_parse(ctx, "k.tile", text, strlen(text), &p);
    float s[32], m[4] = {0.5f, -1, 2, 0}, out[32] = {0}, before[32] = {0};
    for (int i = 0; i < 32; i++) s[i] = (float)(i % 9) - 4.5f;
    void *args[3] = {s, m, out};
    if (st == TILEC_OK) st = tilec_simulate(p, NULL, NULL, args);
    tilec_check_result r[3];
    size_t n = 0;
    const void *in[3] = {s, m, before}, *after[3] = {s, m, out};
    if (st == TILEC_OK) st = tilec_check(p, NULL, NULL, in, after, r, &n);
    if (st == TILEC_OK) assert_true(n == 1 && r[0].ok);
    tilec_program_free(p);
    return st;
}

static tilec_ctx *fresh(bool jit) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    if (jit) assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    return ctx;
}

/* Fails every allocation of `path` in turn, each time in a new context (with the
 * simulator runtime when `jit`; the context keeps plans, so a second run allocates less):
 * NOMEM each time, then the whole path again in that context with nothing failing. */
static void every_failure(path_fn path, bool jit) {
    tilec_ctx *ctx = fresh(jit);
    calls = 0, fail_at = 0;
    assert_int_equal(path(ctx), TILEC_OK);
    long total = calls;
    assert_true(total > 0);
    tilec_close(ctx);
    for (long n = 1; n <= total; n++) {
        ctx = fresh(jit);
        calls = 0, fail_at = n;
        tilec_status st = path(ctx);
        fail_at = 0;
        if (st != TILEC_ERR_NOMEM)
            fail_msg("allocation %ld of %ld failed, and the path returned %s\n%s", n, total, tilec_status_name(st),
                     tilec_diag_text(ctx));
        for (size_t i = 0; i < tilec_diag_count(ctx); i++) { /* no error claims another cause */
            tilec_diag d;
            assert_int_equal(tilec_diag_get(ctx, i, &d), TILEC_OK);
            if (d.severity == TILEC_SEV_ERROR && !strstr(d.message, "out of memory"))
                fail_msg("allocation %ld of %ld failed, and the error says: %s", n, total, d.message);
        }
        assert_int_equal(path(ctx), TILEC_OK); /* the context is still usable */
        tilec_close(ctx);
    }
}

static void test_compile(void **state) {
    (void)state;
    setenv("FAKE_NVRTC", "ok", 1);
    every_failure(compile_path, false);
}

static void test_simulate(void **state) {
    (void)state;
    every_failure(simulate_path, false);
}

static void test_jit(void **state) {
    (void)state;
    setenv("TILEC_CACHE", "off", 1); /* the disk cache has its own tests */
    every_failure(jit_path, true);
}

static void test_run_kernel(void **state) {
    (void)state;
    setenv("TILEC_CACHE", "off", 1);
    every_failure(run_kernel_path, true);
}

static void test_map(void **state) {
    (void)state;
    every_failure(map_path, false);
}

static void test_map_simulate(void **state) {
    (void)state;
    every_failure(map_sim_path, false);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_kernel),
        cmocka_unit_test(test_compile),
        cmocka_unit_test(test_simulate),
        cmocka_unit_test(test_jit),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_map_simulate),
    };
    return cmocka_run_group_tests_name("out of memory", tests, NULL, NULL);
}
