/*
 * test_faults.c — the compiler failing in every way it can, through a fake NVRTC
 * (tests/fake_nvrtc.c, loaded by TILEC_NVRTC_PATH, which meson sets for this test): each
 * failure is a status and a message that says what happened, nothing leaks (the ASan run
 * of ./test.sh), and the context compiles again once the compiler behaves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

static const char SRC[] = "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                          "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
                          "  cta.sum(Bs, As)\n  cta.sync()\n  cta.copy(B, Bs)\n}\n";

/* Compiles SRC for sm_90 with the fake compiler failing as `mode` says. */
static tilec_status compile_with(tilec_ctx *ctx, const char *mode, char *message, size_t n) {
    setenv("FAKE_NVRTC", mode, 1);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "k.tile", SRC, strlen(SRC), &p), TILEC_OK);
    tilec_target t = {TILEC_BACKEND_CUDA, "sm_90", 32};
    void *bin = NULL;
    size_t size = 0;
    tilec_status st = tilec_compile(p, &t, &bin, &size);
    if (st == TILEC_OK) {
        assert_non_null(bin);
        assert_int_equal(size, 64);
        assert_memory_equal(bin, "\x7f" "ELF", 4);
    } else {
        assert_null(bin);
        tilec_diag d;
        assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_OK);
        snprintf(message, n, "%s", d.message);
    }
    tilec_free(bin);
    tilec_program_free(p);
    return st;
}

static void test_compiler_failures(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    char msg[1024];
    static const struct { const char *mode, *message; } cases[] = {
        {"compile", "NVRTC 13.0 could not compile the generated source for sm_90 (NVRTC_ERROR_COMPILATION):\n"
                    "tilec.cu(12): error: a planted compile error\n"},
        {"create", "NVRTC 13.0 could not compile the generated source for sm_90 (NVRTC_ERROR_PROGRAM_CREATION_FAILURE):\n(no log)"},
        {"empty", "NVRTC 13.0 compiled for sm_90 but returned no binary (0 bytes)"},
        {"size", "NVRTC 13.0 compiled for sm_90 but returned no binary (0 bytes)"},
        {"not-elf", "NVRTC 13.0 returned 64 bytes that are not an ELF binary for sm_90"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(compile_with(ctx, cases[i].mode, msg, sizeof msg), TILEC_ERR_COMPILE);
        assert_string_equal(msg, cases[i].message);
        assert_int_equal(compile_with(ctx, "ok", msg, sizeof msg), TILEC_OK); /* the context is still usable */
    }
    tilec_close(ctx);
}

/* An arch the compiler does not list is refused before anything is compiled. */
static void test_unknown_arch(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    setenv("FAKE_NVRTC", "ok", 1);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "k.tile", SRC, strlen(SRC), &p), TILEC_OK);
    tilec_target t = {TILEC_BACKEND_CUDA, "sm_100", 32};
    void *bin = NULL;
    size_t size = 0;
    assert_int_equal(tilec_compile(p, &t, &bin, &size), TILEC_ERR_UNAVAILABLE);
    tilec_diag d;
    assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_OK);
    assert_string_equal(d.message, "NVRTC 13.0 does not compile for sm_100; it knows: sm_80 sm_90");
    tilec_program_free(p);
    tilec_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compiler_failures),
        cmocka_unit_test(test_unknown_arch),
    };
    return cmocka_run_group_tests_name("faults", tests, NULL, NULL);
}
