/*
 * test_api.c — the public C API: the builder makes the same IR as the text, arguments are
 * checked at the boundary with a status and a message, diagnostics and name tables behave
 * as documented, and nothing prints.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "support.h"

/* Built with AddressSanitizer (gcc and clang): its leak check at exit is the leak test. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif

static const char *first_message(tilec_ctx *ctx) {
    tilec_diag d;
    return tilec_diag_get(ctx, 0, &d) == TILEC_OK ? d.message : "(none)";
}

/* examples/row_sum.tile, built through the API. */
static tilec_program *build_row_sum(tilec_ctx *ctx) {
    tilec_program *p;
    tilec_kernel *k;
    tilec_buffer *A, *B, *As, *Bs;
    const int64_t a_shape[] = {4, 8}, b_shape[] = {4};
    assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
    assert_int_equal(tilec_kernel_new(p, "row_sum", false, 32, 1, &k), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 2, a_shape, TILEC_SPACE_GLOBAL, &A), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "B", TILEC_F32, 1, b_shape, TILEC_SPACE_GLOBAL, &B), TILEC_OK);
    assert_int_equal(tilec_kernel_alloc(k, "As", TILEC_SPACE_SHARED, TILEC_F32, 2, a_shape, NULL, &As), TILEC_OK);
    assert_int_equal(tilec_kernel_alloc(k, "Bs", TILEC_SPACE_SHARED, TILEC_F32, 1, b_shape, NULL, &Bs), TILEC_OK);
    tilec_exec cta = {TILEC_SCOPE_CTA, -1};
    tilec_region rA = tilec_region_whole(A), rB = tilec_region_whole(B);
    tilec_region rAs = tilec_region_whole(As), rBs = tilec_region_whole(Bs);
    assert_int_equal(tilec_kernel_copy(k, cta, &rAs, &rA), TILEC_OK);
    assert_int_equal(tilec_kernel_sync(k, cta), TILEC_OK);
    tilec_reduce_attrs at = tilec_reduce_attrs_default();
    assert_int_equal(tilec_kernel_reduce(k, cta, TILEC_OP_SUM, &rBs, &rAs, &at), TILEC_OK);
    assert_int_equal(tilec_kernel_sync(k, cta), TILEC_OK);
    assert_int_equal(tilec_kernel_copy(k, cta, &rB, &rBs), TILEC_OK);
    return p;
}

static void test_builder_matches_text(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    tilec_program *p = build_row_sum(ctx);
    assert_int_equal(tilec_verify(p, NULL), TILEC_OK);
    char *built;
    size_t n;
    assert_int_equal(tilec_format(p, &built, &n), TILEC_OK);
    char *parsed = format_text(ctx, "kernel row_sum(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                                    "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n"
                                    "  cta.sync()\n  cta.sum(Bs, As, axes=(-1), accum=false)\n  cta.sync()\n"
                                    "  cta.copy(B, Bs)\n}\n");
    assert_non_null(parsed);
    assert_string_equal(built, parsed);
    /* introspection */
    assert_int_equal(tilec_program_kernel_count(p), 1);
    tilec_kernel *k = tilec_program_kernel(p, 0);
    assert_string_equal(tilec_kernel_name(k), "row_sum");
    assert_false(tilec_kernel_is_func(k));
    assert_int_equal(tilec_kernel_threads(k), 32);
    assert_int_equal(tilec_kernel_grid(k), 1);
    assert_int_equal(tilec_kernel_param_count(k), 2);
    tilec_buffer *A = tilec_kernel_param_at(k, 0);
    assert_string_equal(tilec_buffer_name(A), "A");
    assert_int_equal(tilec_buffer_dtype(A), TILEC_F32);
    assert_int_equal(tilec_buffer_space(A), TILEC_SPACE_GLOBAL);
    assert_int_equal(tilec_buffer_rank(A), 2);
    assert_int_equal(tilec_buffer_extent(A, 1), 8);
    assert_int_equal(tilec_buffer_extent(A, 2), 0);
    assert_null(tilec_program_kernel(p, 1));
    assert_null(tilec_kernel_param_at(k, 2));
    assert_ptr_equal(tilec_program_ctx(p), ctx);
    tilec_free(built);
    tilec_free(parsed);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Built IR has no source positions: diagnostics name the kernel and the statement. */
static void test_built_ir_diagnostics(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    tilec_kernel *k;
    tilec_buffer *A, *S;
    const int64_t shape[] = {4, 8};
    tilec_program_new(ctx, &p);
    tilec_kernel_new(p, "k", false, 64, 1, &k);
    tilec_kernel_param(k, "A", TILEC_F32, 2, shape, TILEC_SPACE_GLOBAL, &A);
    tilec_kernel_alloc(k, "S", TILEC_SPACE_SHARED, TILEC_F32, 2, shape, NULL, &S);
    tilec_exec cta = {TILEC_SCOPE_CTA, -1};
    tilec_region rA = tilec_region_whole(A), rS = tilec_region_whole(S);
    tilec_kernel_copy(k, cta, &rS, &rA);
    tilec_region row = tilec_region_whole(A);
    row.nindex = 1;
    row.index[0] = (tilec_index){.kind = TILEC_INDEX_AT, .start = 0};
    tilec_reduce_attrs at = tilec_reduce_attrs_default();
    tilec_kernel_reduce(k, cta, TILEC_OP_MAX, &row, &rS, &at); /* 8 elements for 4 rows */
    assert_int_equal(tilec_verify(p, NULL), TILEC_ERR_VERIFY);
    tilec_diag d;
    tilec_diag_get(ctx, 0, &d);
    assert_int_equal(d.line, 0);
    assert_string_equal(d.file, "<api>");
    assert_string_equal(d.message, "kernel 'k', statement 3 (cta.max(A[0], S, axes=(-1))): max: destination "
                                   "'A' has 8 elements but the source keeps 4 after reducing its axes");
    assert_non_null(strstr(tilec_diag_text(ctx), "<api>: error: kernel 'k', statement 3"));
    tilec_program_free(p);
    tilec_close(ctx);
}

/* tilec_kernel_map parses its expression against the kernel's buffers and checks it at
 * once: an error at its column of the text, and nothing added. */
static void test_builder_map(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    tilec_kernel *k;
    tilec_buffer *S, *m, *P, *t, *Sh;
    const int64_t shape[] = {16, 8}, col[] = {16, 1};
    tilec_program_new(ctx, &p);
    tilec_kernel_new(p, "k", false, 128, 1, &k);
    tilec_kernel_param(k, "S", TILEC_F32, 2, shape, TILEC_SPACE_GLOBAL, &S);
    tilec_kernel_param(k, "m", TILEC_F32, 2, col, TILEC_SPACE_GLOBAL, &m);
    tilec_kernel_param(k, "P", TILEC_F32, 2, shape, TILEC_SPACE_GLOBAL, &P);
    tilec_kernel_param(k, "t", TILEC_I32, 2, shape, TILEC_SPACE_GLOBAL, &t);
    tilec_exec cta = {TILEC_SCOPE_CTA, -1};
    tilec_region rP = tilec_region_whole(P), rt = tilec_region_whole(t), rm = tilec_region_whole(m);
    assert_int_equal(tilec_kernel_map(k, cta, &rP, "exp(S - m) * -1.5e-6"), TILEC_OK);
    char *before;
    assert_int_equal(tilec_format(p, &before, NULL), TILEC_OK);
    static const struct { const char *expr; tilec_status st; int col; const char *msg; } bad[] = {
        {"exp(S - q)", TILEC_ERR_PARSE, 9, "unknown buffer 'q'; declare it as a parameter or with shared/local before this line"},
        {"exq(S)", TILEC_ERR_PARSE, 1, "unknown operator 'exq'; did you mean 'exp'?"},
        {"max(S)", TILEC_ERR_PARSE, 1, "max takes 2 operands; found 1"},
        {"S +", TILEC_ERR_PARSE, 4, "expected an operand (a buffer, a number, an operator such as exp(x), or '('), found end of file"},
        {"S m", TILEC_ERR_PARSE, 3, "expected an operator (+ - * /) or the end of the expression, found 'm'"},
        {"", TILEC_ERR_PARSE, 1, "expected an expression (the value of each element), found end of file"},
        {"S + t", TILEC_ERR_VERIFY, 3, "'+' mixes f32 'S' and i32 't'; cast the integer to compute in f32: f32(t)"},
        {"exp(t)", TILEC_ERR_VERIFY, 1, "exp of i32 't': cast it, exp(f32(t))"},
        {"S[0:4] + 1", TILEC_ERR_VERIFY, 1, "operand 'S[0:4]' is [4, 8] and does not broadcast to the destination 'P', "
                                            "[16, 8]: aligned at the right, its dimension 0 (4) meets 16; each must "
                                            "equal the destination's or be 1"},
        {"S[99]", TILEC_ERR_VERIFY, 3, "index 99 is out of range for dimension 0 of 'S' (extent 16)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tilec_kernel_map(k, cta, &rP, bad[i].expr), bad[i].st);
        tilec_diag d;
        assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_OK);
        if (strcmp(d.message, bad[i].msg) != 0 || d.col != bad[i].col || d.line != 1)
            fail_msg("'%s': got %d:%d %s", bad[i].expr, d.line, d.col, d.message);
        assert_string_equal(d.file, "expression");
        assert_non_null(strstr(tilec_diag_text(ctx), "^")); /* the text is shown with a caret */
    }
    assert_int_equal(tilec_kernel_map(k, cta, &rt, "S"), TILEC_OK); /* f32 into i32: converted as a cast */
    assert_int_equal(tilec_kernel_map(k, cta, NULL, "S"), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_map(k, cta, &rP, NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_map(NULL, cta, &rP, "S"), TILEC_ERR_INVALID_ARG);
    /* a buffer declared later is not visible; a shared one declared before is */
    tilec_kernel_alloc(k, "Sh", TILEC_SPACE_SHARED, TILEC_F32, 2, shape, NULL, &Sh);
    assert_int_equal(tilec_kernel_map(k, cta, &rm, "max(S[:, 0:1], Sh[:, 7:8])"), TILEC_OK);
    char *after;
    assert_int_equal(tilec_format(p, &after, NULL), TILEC_OK);
    assert_true(tilec_kernel_param_written(k, 2)); /* P, m and t: map destinations */
    assert_true(tilec_kernel_param_written(k, 1));
    assert_true(tilec_kernel_param_written(k, 3));
    assert_false(tilec_kernel_param_written(k, 0)); /* S: only read */
    assert_string_equal(before, "kernel k(S: f32[16, 8] global, m: f32[16, 1] global, P: f32[16, 8] global, "
                                "t: i32[16, 8] global) threads=128 {\n  cta.map(P, exp(S - m) * -1.5e-06)\n}\n");
    assert_string_equal(after, "kernel k(S: f32[16, 8] global, m: f32[16, 1] global, P: f32[16, 8] global, "
                               "t: i32[16, 8] global) threads=128 {\n  cta.map(P, exp(S - m) * -1.5e-06)\n"
                               "  cta.map(t, S)\n  shared Sh: f32[16, 8]\n  cta.map(m, max(S[:, 0:1], Sh[:, 7:8]))\n}\n");
    /* the verifier's later messages name the statement: the text's columns are not the file's */
    assert_int_equal(tilec_verify(p, NULL), TILEC_ERR_VERIFY);
    tilec_diag d;
    tilec_diag_get(ctx, 0, &d);
    assert_int_equal(d.line, 0);
    assert_string_equal(d.message, "kernel 'k', statement 4 (cta.map(m, max(S[:, 0:1], Sh[:, 7:8]))): missing barrier: "
                                   "'m' is overwritten here while other threads may still read it at statement 1; add "
                                   "cta.sync() before this statement");
    tilec_free(before);
    tilec_free(after);
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_builder_rejects_bad_arguments(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    tilec_kernel *k, *k2;
    tilec_buffer *b;
    const int64_t shape[] = {4, 8}, zero[] = {4, 0}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(tilec_program_new(NULL, &p), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
    assert_int_equal(tilec_kernel_new(p, "1k", false, 32, 1, &k), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "kernel name '1k' is not a name ([A-Za-z_][A-Za-z0-9_]*, at most 63 characters)");
    assert_int_equal(tilec_kernel_new(p, NULL, false, 32, 1, &k), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_new(p, "k", false, 0, 1, &k), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "threads 0 is out of range (1 to 1024)");
    assert_int_equal(tilec_kernel_new(p, "k", true, 32, 2, &k), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "grid 2 is out of range (a func has no grid: pass 1)");
    assert_int_equal(tilec_kernel_new(p, "k", false, 32, 1, &k), TILEC_OK);
    assert_int_equal(tilec_diag_count(ctx), 0); /* a successful call clears old diagnostics */
    assert_int_equal(tilec_kernel_new(p, "k", false, 32, 1, &k2), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "duplicate name 'k': the program already has it");
    assert_int_equal(tilec_kernel_math(k), TILEC_MATH_EXACT);
    assert_int_equal(tilec_kernel_set_math(k, TILEC_MATH_COUNT), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "math 2 is not a tilec_math (TILEC_MATH_EXACT or TILEC_MATH_APPROX)");
    assert_int_equal(tilec_kernel_set_math(NULL, TILEC_MATH_APPROX), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_set_math(k, TILEC_MATH_APPROX), TILEC_OK);
    assert_int_equal(tilec_kernel_math(k), TILEC_MATH_APPROX);
    assert_string_equal(tilec_math_name(TILEC_MATH_APPROX), "approx");
    assert_null(tilec_math_name(TILEC_MATH_COUNT));
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_DTYPE_COUNT, 2, shape, TILEC_SPACE_GLOBAL, &b), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "dtype 7 is not a tilec_dtype");
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 2, zero, TILEC_SPACE_GLOBAL, &b), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "extent 0 of dimension 1 of 'A' must be at least 1");
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 9, nine, TILEC_SPACE_GLOBAL, &b), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 2, NULL, TILEC_SPACE_GLOBAL, &b), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 2, shape, TILEC_SPACE_GLOBAL, &b), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 2, shape, TILEC_SPACE_GLOBAL, &b), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "duplicate name 'A' in kernel 'k'");
    assert_int_equal(tilec_kernel_alloc(k, "G", TILEC_SPACE_GLOBAL, TILEC_F32, 2, shape, NULL, &b), TILEC_ERR_INVALID_ARG);
    const int64_t overlapping[] = {4, 1};
    assert_int_equal(tilec_kernel_alloc(k, "S", TILEC_SPACE_SHARED, TILEC_F32, 2, shape, overlapping, &b), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "the strides of 'S' make different indices reach the same element: "
                                            "its 32 indices reach only 20 distinct elements");
    tilec_region none = tilec_region_whole(NULL);
    tilec_exec cta = {TILEC_SCOPE_CTA, -1}, bad_scope = {TILEC_SCOPE_COUNT, -1}, bad_inst = {TILEC_SCOPE_WARP, -2};
    tilec_region rb = tilec_region_whole(b);
    assert_int_equal(tilec_kernel_copy(k, cta, &none, &rb), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "destination region has no buffer");
    assert_int_equal(tilec_kernel_copy(k, cta, &rb, NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_sync(k, bad_scope), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_sync(k, bad_inst), TILEC_ERR_INVALID_ARG);
    tilec_region too_many = rb;
    too_many.nindex = 3;
    assert_int_equal(tilec_kernel_fill(k, cta, &too_many, 0.0), TILEC_ERR_INVALID_ARG);
    tilec_reduce_attrs at = tilec_reduce_attrs_default();
    at.naxes = 0;
    assert_int_equal(tilec_kernel_reduce(k, cta, TILEC_OP_SUM, &rb, &rb, &at), TILEC_ERR_INVALID_ARG);
    at = tilec_reduce_attrs_default();
    at.variant = "no spaces";
    assert_int_equal(tilec_kernel_reduce(k, cta, TILEC_OP_SUM, &rb, &rb, &at), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_kernel_reduce(k, cta, TILEC_OP_COUNT, &rb, &rb, NULL), TILEC_ERR_INVALID_ARG);
    /* a buffer of another kernel */
    tilec_kernel *other;
    tilec_buffer *ob;
    assert_int_equal(tilec_kernel_new(p, "other", false, 32, 1, &other), TILEC_OK);
    assert_int_equal(tilec_kernel_param(other, "X", TILEC_F32, 2, shape, TILEC_SPACE_GLOBAL, &ob), TILEC_OK);
    tilec_region rob = tilec_region_whole(ob);
    assert_int_equal(tilec_kernel_copy(k, cta, &rb, &rob), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "source buffer 'X' belongs to another kernel");
    tilec_program_free(p);
    tilec_close(ctx);
}

/* The builder has the parser's limits: statements of a kernel, kernels of a program. */
static void test_builder_limits(void **state) {
    (void)state;
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    tilec_program *p;
    assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
    tilec_kernel *k;
    assert_int_equal(tilec_kernel_new(p, "k", false, 32, 1, &k), TILEC_OK);
    tilec_exec cta = {TILEC_SCOPE_CTA, -1};
    for (int i = 0; i < TILEC_MAX_STMTS; i++) assert_int_equal(tilec_kernel_sync(k, cta), TILEC_OK);
    assert_int_equal(tilec_kernel_sync(k, cta), TILEC_ERR_INVALID_ARG);
    tilec_diag d;
    assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_OK);
    assert_string_equal(d.message, "'k' has 4096 statements already, the most a kernel has");
    for (int i = 1; i < TILEC_MAX_KERNELS; i++) {
        char name[16];
        snprintf(name, sizeof name, "k%d", i);
        assert_int_equal(tilec_kernel_new(p, name, false, 32, 1, &k), TILEC_OK);
    }
    assert_int_equal(tilec_kernel_new(p, "one_more", false, 32, 1, &k), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_OK);
    assert_string_equal(d.message, "the program has 1024 kernels and funcs already, the most a program has");
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_null_arguments(void **state) {
    (void)state;
    tilec_program *p = (tilec_program *)1;
    assert_int_equal(tilec_open(NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_parse(NULL, "f", "", 0, &p), TILEC_ERR_INVALID_ARG);
    tilec_ctx *ctx;
    tilec_open(&ctx);
    assert_int_equal(tilec_parse(ctx, "f", NULL, 5, &p), TILEC_ERR_INVALID_ARG);
    assert_null(p);
    assert_string_equal(first_message(ctx), "tilec_parse: text is NULL with a length of 5 bytes");
    assert_int_equal(tilec_parse(ctx, "f", NULL, 1, &p), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_parse: text is NULL with a length of 1 byte");
    tilec_diag_clear(ctx);
    assert_int_equal(tilec_verify(NULL, NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_lower(NULL, NULL), TILEC_ERR_INVALID_ARG);
    char *text;
    assert_int_equal(tilec_format(NULL, &text, NULL), TILEC_ERR_INVALID_ARG);
    tilec_diag d;
    assert_int_equal(tilec_diag_get(ctx, 0, &d), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_diag_count(NULL), 0);
    assert_string_equal(tilec_diag_text(ctx), "");
    assert_string_equal(tilec_diag_text(NULL), "");
    tilec_program_free(NULL);
    tilec_close(NULL);
    tilec_free(NULL);
    /* text need not be NUL-terminated: only len bytes are read */
    const char src[] = "kernel k(A: f32[4] global) threads=32 {\n}\nGARBAGE";
    assert_int_equal(tilec_parse(ctx, "f", src, sizeof src - 1 - 7, &p), TILEC_OK);
    tilec_program_free(p);
    tilec_diag_clear(ctx);
    tilec_close(ctx);
}

/* tilec_lower gives the dispatcher's verdict for one target, which tilec_verify cannot: a
 * copy between fragments of two layouts verifies, and no variant lowers it. */
static void test_lower_verdict(void **state) {
    (void)state;
    static const char src[] = "kernel k(A: f16[16, 16] global, B: f16[16, 16] global) threads=32 {\n"
                              "  local X: f16[16, 16] layout=mma_m16n8k16_a\n"
                              "  local Y: f16[16, 16] layout=mma_m16n8k16_b\n"
                              "  warp.copy(X, A)\n  warp.copy(Y, X)\n  warp.copy(B, Y)\n}\n";
    static const char ok[] = "kernel k(A: f16[16, 16] global, B: f16[16, 16] global) threads=32 {\n"
                             "  local X: f16[16, 16] layout=mma_m16n8k16_a\n"
                             "  warp.copy(X, A)\n  warp.copy(B, X)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "f.tile", src, strlen(src), &p), TILEC_OK);
    assert_int_equal(tilec_verify(p, NULL), TILEC_OK);
    assert_int_equal(tilec_lower(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}), TILEC_ERR_DISPATCH);
    assert_non_null(strstr(tilec_diag_text(ctx), "f.tile:5:8: error: no variant can lower this copy on cuda sm_90"));
    tilec_program_free(p);
    assert_int_equal(tilec_parse(ctx, "f.tile", ok, strlen(ok), &p), TILEC_OK);
    assert_int_equal(tilec_lower(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}), TILEC_OK);
    assert_string_equal(tilec_diag_text(ctx), "");
    assert_int_equal(tilec_lower(p, &(tilec_target){TILEC_BACKEND_HIP, "gfx90a", 0}), TILEC_ERR_DISPATCH);
    assert_non_null(strstr(tilec_diag_text(ctx), "fragment layouts are of warps of 32 lanes"));
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_names_and_statuses(void **state) {
    (void)state;
    assert_string_equal(tilec_dtype_name(TILEC_BF16), "bf16");
    assert_null(tilec_dtype_name(TILEC_DTYPE_COUNT));
    assert_int_equal(tilec_dtype_size(TILEC_F16), 2);
    assert_int_equal(tilec_dtype_size(TILEC_I64), 8);
    assert_int_equal(tilec_dtype_size(TILEC_DTYPE_COUNT), 0);
    assert_string_equal(tilec_space_name(TILEC_SPACE_LOCAL), "local");
    assert_string_equal(tilec_scope_name(TILEC_SCOPE_WARPGROUP), "warpgroup");
    assert_string_equal(tilec_op_name(TILEC_OP_MIN), "min");
    assert_string_equal(tilec_op_name(TILEC_OP_NORM2), "norm2");
    /* which ops a dtype takes, and which take accumulate (format.md's table) */
    assert_true(tilec_op_supports(TILEC_OP_SUMSQ, TILEC_I64, true));
    assert_true(tilec_op_supports(TILEC_OP_PROD, TILEC_U32, true));
    assert_true(tilec_op_supports(TILEC_OP_MEAN, TILEC_BF16, false));
    assert_false(tilec_op_supports(TILEC_OP_MEAN, TILEC_BF16, true));
    assert_true(tilec_op_supports(TILEC_OP_LOGSUMEXP, TILEC_BF16, true)); /* the old value as one more element */
    assert_false(tilec_op_supports(TILEC_OP_ARGMAX, TILEC_F32, true));
    assert_false(tilec_op_supports(TILEC_OP_MEAN, TILEC_I32, false));
    assert_false(tilec_op_supports(TILEC_OP_NORM2, TILEC_U32, false));
    assert_true(tilec_op_supports(TILEC_OP_NORM2, TILEC_F16, false));
    assert_false(tilec_op_supports(TILEC_OP_COUNT, TILEC_F32, false));
    assert_false(tilec_op_supports(TILEC_OP_SUM, TILEC_DTYPE_COUNT, false));
    assert_string_equal(tilec_nan_name(TILEC_NAN_IGNORE), "ignore");
    assert_string_equal(tilec_backend_name(TILEC_BACKEND_AUTO), "auto");
    assert_string_equal(tilec_backend_name(TILEC_BACKEND_SIM), "sim");
    assert_null(tilec_backend_name(TILEC_BACKEND_COUNT));
    /* what tilec emit / tilec compile write, for the GPU backends only */
    assert_string_equal(tilec_backend_file_extension(TILEC_BACKEND_CUDA, false), ".cu");
    assert_string_equal(tilec_backend_file_extension(TILEC_BACKEND_CUDA, true), ".cubin");
    assert_string_equal(tilec_backend_file_extension(TILEC_BACKEND_HIP, false), ".hip");
    assert_string_equal(tilec_backend_file_extension(TILEC_BACKEND_HIP, true), ".co");
    assert_null(tilec_backend_file_extension(TILEC_BACKEND_SIM, false));
    assert_null(tilec_backend_file_extension(TILEC_BACKEND_AUTO, true));
    assert_null(tilec_backend_file_extension(TILEC_BACKEND_COUNT, false));
    assert_null(tilec_backend_file_extension((tilec_backend)-1, false));
    assert_string_equal(tilec_status_name(TILEC_ERR_VERIFY), "TILEC_ERR_VERIFY");
    assert_string_equal(tilec_status_message(TILEC_ERR_PARSE), "syntax error in tile program");
    assert_null(tilec_status_name((tilec_status)999));
    assert_string_equal(tilec_version(), TILEC_VERSION_STRING);
}

static tilec_ctx *sim_ctx(void) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    return ctx;
}

static void expect_message(tilec_ctx *ctx, const char *want) {
    if (!strstr(first_message(ctx), want)) fail_msg("message '%s' lacks '%s'", first_message(ctx), want);
}

/* The simulator knows every block it gave out: an upload or a download that would copy
 * past a block's end, start before it, or touch memory in no block is refused, as a GPU's
 * copy fails, and nothing is copied. 1 MiB into a 4 KiB block used to overflow the heap. */
static void test_sim_copies_stay_in_blocks(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    size_t big = 1 << 20;
    unsigned char *host = calloc(1, big), *back = malloc(big);
    memset(host, 7, 4096);
    unsigned char *dev;
    assert_int_equal(tilec_mem_alloc(ctx, 4096, (void **)&dev), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, dev, host, big), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_upload: 1048576 bytes from byte 0 of an allocation of 4096 bytes "
                                            "reach 1044480 bytes past its end; copy at most 4096 bytes there; nothing was copied");
    assert_int_equal(tilec_mem_download(ctx, back, dev, big), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_download: 1048576 bytes from byte 0 of an allocation of 4096 bytes "
                                            "reach 1044480 bytes past its end; copy at most 4096 bytes there; nothing was copied");
    /* a pointer inside the block, with a size past its end */
    assert_int_equal(tilec_mem_upload(ctx, dev + 4000, host, 200), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_upload: 200 bytes from byte 4000 of an allocation of 4096 bytes "
                                            "reach 104 bytes past its end; copy at most 96 bytes there; nothing was copied");
    assert_int_equal(tilec_mem_download(ctx, back, dev + 4095, 2), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_download: 2 bytes from byte 4095 of an allocation of 4096 bytes "
                                            "reach 1 byte past its end; copy at most 1 byte there; nothing was copied");
    /* a size whose end passes the address space: past the block, not "in no block" (the
     * end's sum wrapped, and the block was not found) */
    assert_int_equal(tilec_mem_upload(ctx, dev, host, SIZE_MAX), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_upload: 18446744073709551615 bytes from byte 0 of an allocation of "
                                            "4096 bytes reach 18446744073709547519 bytes past its end; copy at most 4096 "
                                            "bytes there; nothing was copied");
    assert_int_equal(tilec_mem_download(ctx, back, dev + 4000, SIZE_MAX - 100), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_download: 18446744073709551515 bytes from byte 4000 of an allocation "
                                            "of 4096 bytes reach 18446744073709551419 bytes past its end; copy at most 96 "
                                            "bytes there; nothing was copied");
    /* one byte is a byte */
    unsigned char *one;
    assert_int_equal(tilec_mem_alloc(ctx, 1, (void **)&one), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, one, host, 2), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_upload: 2 bytes from byte 0 of an allocation of 1 byte reach 1 byte "
                                            "past its end; copy at most 1 byte there; nothing was copied");
    assert_int_equal(tilec_mem_upload(ctx, dev - 1, host, 2), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_upload: the destination starts 1 byte before an allocation of 4096 "
                                            "bytes; nothing was copied");
    assert_int_equal(tilec_mem_upload(ctx, NULL, host, 1), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_upload: the destination is NULL, with 1 byte to copy");
    assert_int_equal(tilec_mem_download(ctx, back, host, 1), TILEC_ERR_INVALID_ARG);
    expect_message(ctx, " (1 byte) is not in memory this context allocated (tilec_mem_alloc), or it was freed; "
                        "nothing was copied");
    assert_int_equal(tilec_mem_download(ctx, one, dev, 2), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_download: the host destination reaches 1 byte past the end of an "
                                            "allocation of 1 byte; check its shape, strides and pointer");
    assert_int_equal(tilec_mem_free(ctx, one), TILEC_OK);
    /* what fits is copied */
    assert_int_equal(tilec_mem_upload(ctx, dev, host, 4096), TILEC_OK);
    assert_int_equal(tilec_diag_count(ctx), 0);
    assert_int_equal(tilec_mem_upload(ctx, dev + 4000, host, 96), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, back, dev, 4096), TILEC_OK);
    assert_memory_equal(back, host, 4096);
    /* an address in no block: the host's own memory given as the device side */
    assert_int_equal(tilec_mem_download(ctx, back, host, 16), TILEC_ERR_INVALID_ARG);
    expect_message(ctx, "tilec_mem_download: the source ");
    expect_message(ctx, " (16 bytes) is not in memory this context allocated (tilec_mem_alloc), or it was freed; "
                        "nothing was copied");
    assert_int_equal(tilec_mem_upload(ctx, host, back, 16), TILEC_ERR_INVALID_ARG);
    expect_message(ctx, "tilec_mem_upload: the destination ");
    /* the host side may be a block too (device memory is host memory here): within it */
    unsigned char *other;
    assert_int_equal(tilec_mem_alloc(ctx, 64, (void **)&other), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, other, dev, 128), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_download: the host destination reaches 64 bytes past the end of an "
                                            "allocation of 64 bytes; check its shape, strides and pointer");
    assert_int_equal(tilec_mem_download(ctx, other, dev, 64), TILEC_OK);
    /* a freed block is no block */
    assert_int_equal(tilec_mem_free(ctx, dev), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, dev, host, 16), TILEC_ERR_INVALID_ARG);
    expect_message(ctx, "is not in memory this context allocated (tilec_mem_alloc), or it was freed");
    /* NULL with bytes to copy; none to copy is no copy */
    assert_int_equal(tilec_mem_upload(ctx, NULL, host, 16), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_upload: the destination is NULL, with 16 bytes to copy");
    assert_int_equal(tilec_mem_download(ctx, back, NULL, 16), TILEC_ERR_INVALID_ARG);
    assert_string_equal(first_message(ctx), "tilec_mem_download: the source is NULL, with 16 bytes to copy");
    assert_int_equal(tilec_mem_upload(ctx, NULL, NULL, 0), TILEC_OK);
    assert_int_equal(tilec_mem_free(ctx, other), TILEC_OK);
    free(host);
    free(back);
    tilec_close(ctx);
}

/* Bytes the C library's allocator has handed out and not had back (its arenas and its
 * mmap'd chunks); -1 where that cannot be read. */
static long long heap_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)) && !defined(ASAN)
    struct mallinfo2 m = mallinfo2();
    return (long long)(m.uordblks + m.hblkhd);
#else
    return -1;
#endif
}

/* tilec_close frees the simulator's blocks the caller left allocated (it used to leak
 * them): the heap is back where it was (glibc's count), and under AddressSanitizer its
 * leak check at exit finds nothing. */
static void test_close_frees_blocks(void **state) {
    (void)state;
    for (int round = 0; round < 2; round++) { /* the first warms the allocator up */
        long long before = heap_in_use();
        tilec_ctx *ctx = sim_ctx();
        void *p;
        for (int i = 0; i < 4; i++) assert_int_equal(tilec_mem_alloc(ctx, (size_t)(1 << 20) + (size_t)i * 4096, &p), TILEC_OK);
        assert_int_equal(tilec_mem_alloc(ctx, 100, &p), TILEC_OK);
        tilec_close(ctx);
        long long after = heap_in_use();
        if (round == 1 && before >= 0 && after - before > 4096)
            fail_msg("%lld bytes still allocated after tilec_close", after - before);
    }
}

/* The budget's message for a reduction refused up front: reads, variant, rate and floor
 * come back through the pointers; false when the message is not that one. */
static bool refused_up_front(tilec_ctx *ctx, unsigned long long budget, unsigned long long *reads,
                             unsigned long long *rate, unsigned long long *floor) {
    const char *m = first_message(ctx), *raise = "; raise the budget (tilec_set_sim_budget, TILEC_SIM_BUDGET=N in the "
                                                 "environment, or --sim-budget N of tilec run and tilec reduce) or run a "
                                                 "smaller program";
    unsigned long long b = 0;
    int end = 0;
    if (sscanf(m, "simulating kernel 'tilec_reduce' takes more than %llu thread-steps, its budget: it reads %llu "
                  "elements, and its loop IR (variant grid_rows) spends %llu thread-steps a read at least, %llu in all%n",
               &b, reads, rate, floor, &end) != 4 || b != budget)
        return false;
    return strcmp(m + end, raise) == 0;
}

/* A reduction on the simulator that must take more thread-steps than the budget cannot
 * finish: refused at once, saying the work, the budget and how to raise it. A broadcast of
 * 2^40 elements used to run for minutes (138 s) before it stopped at the budget; the
 * refusal then counted a step a read, while the loop IR spends 26 to 44 on each, so a
 * broadcast of 2^34 ran 4 to 5 minutes at the default budget before it stopped, and one of
 * 9x10^7 under a budget of 10^8 ran to the budget (the simulation stopped in CTA 3 of 125).
 * The floor counts only steps a run cannot skip: a run within the budget is never refused. */
static void test_budget_refused_up_front(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    float *in, *out;
    assert_int_equal(tilec_mem_alloc(ctx, 4, (void **)&in), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, 4, (void **)&out), TILEC_OK);
    static const int64_t zero[2] = {0, 0};
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {1 << 20, 1 << 20}, .naxes = 2,
                           .axes = {0, 1}, .strides = zero};
    unsigned long long reads, rate, floor;
    assert_int_equal(tilec_set_sim_budget(ctx, 1000000000), TILEC_OK);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_BUDGET);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    if (!refused_up_front(ctx, 1000000000, &reads, &rate, &floor)) fail_msg("not refused up front: %s", first_message(ctx));
    assert_true(reads == 1ull << 40);
    assert_true(rate >= 10 && floor >= rate * reads / 2); /* a load, a bounds check and a fold a read at least */
    /* 2^34 elements at the default budget (3x10^10), and 9x10^7 under 10^8: refused at once */
    assert_int_equal(tilec_set_sim_budget(ctx, 0), TILEC_OK);
    d.rank = 1, d.naxes = 1, d.shape[0] = 1ll << 34;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_BUDGET);
    if (!refused_up_front(ctx, 30000000000ull, &reads, &rate, &floor)) fail_msg("not refused up front: %s", first_message(ctx));
    assert_true(reads == 1ull << 34 && floor > 30000000000ull);
    assert_int_equal(tilec_set_sim_budget(ctx, 100000000), TILEC_OK);
    d.shape[0] = 90000000;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_BUDGET);
    if (!refused_up_front(ctx, 100000000, &reads, &rate, &floor)) fail_msg("not refused up front: %s", first_message(ctx));
    assert_true(reads == 90000000 && floor > 100000000);
    /* A broadcast of 20000 elements: the fewest steps it finishes in (found by bisection,
     * the run stopping at every budget below) is a budget it is not refused at, and runs to
     * the end; twice the elements at that budget are refused up front. */
    float x = 1.5f, y = 0;
    assert_int_equal(tilec_mem_upload(ctx, in, &x, 4), TILEC_OK);
    d.shape[0] = 20000;
    uint64_t lo = 1, hi = 100000000; /* it stops at lo - 1 and finishes at hi */
    assert_int_equal(tilec_set_sim_budget(ctx, hi), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        assert_int_equal(tilec_set_sim_budget(ctx, mid), TILEC_OK);
        tilec_status st = tilec_reduce(ctx, &d, in, out);
        if (st == TILEC_OK) hi = mid;
        else {
            assert_int_equal(st, TILEC_ERR_BUDGET);
            lo = mid + 1;
        }
    }
    assert_int_equal(tilec_set_sim_budget(ctx, hi), TILEC_OK);
    y = 0;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &y, out, 4), TILEC_OK);
    assert_true(y == 30000.0f);
    assert_int_equal(tilec_set_sim_budget(ctx, hi - 1), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_BUDGET); /* stopped in the run, or refused */
    assert_int_equal(tilec_set_sim_budget(ctx, hi), TILEC_OK);
    d.shape[0] = 40000;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_BUDGET);
    if (!refused_up_front(ctx, hi, &reads, &rate, &floor)) fail_msg("not refused up front: %s", first_message(ctx));
    assert_true(floor > hi);
    /* a view within the budget runs: 2^16 broadcast elements of 1.5 */
    assert_int_equal(tilec_set_sim_budget(ctx, 1000000000), TILEC_OK);
    d.rank = 2, d.naxes = 2;
    d.shape[0] = d.shape[1] = 1 << 8;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &y, out, 4), TILEC_OK);
    assert_true(y == 98304.0f);
    /* max drops reduced broadcast dims from its view: one element is read */
    d.op = TILEC_OP_MAX;
    d.shape[0] = d.shape[1] = 1 << 20;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, &y, out, 4), TILEC_OK);
    assert_true(y == 1.5f);
    tilec_mem_free(ctx, in);
    tilec_mem_free(ctx, out);
    tilec_close(ctx);
}

static const char ROW_SUM[] = "kernel row_sum(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                              "  shared As: f32[4, 8]\n  cta.copy(As, A)\n  cta.sync()\n  cta.sum(B, As)\n}\n";

/* A failing call of each kind after another call failed: the diagnostics are the second
 * call's own (tilec.h: cleared when a call starts), never the first's; each says what is
 * wrong with its argument. Argument checks used to return before the clearing. */
static tilec_status second_failure(int i, tilec_ctx *ctx, tilec_program *p, const char **want) {
    static const tilec_target cuda = {TILEC_BACKEND_CUDA, "sm_90", 32};
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {8}, .naxes = 1, .axes = {0}};
    size_t n;
    char *text;
    void *bin;
    void *dev = NULL;
    tilec_program *q;
    tilec_kernel *k;
    tilec_check_result r;
    switch (i) {
    case 0: *want = "tilec_mem_upload: the source is NULL, with 16 bytes to copy";
        assert_int_equal(tilec_mem_alloc(ctx, 16, &dev), TILEC_OK); /* and a successful call in between */
        return tilec_mem_upload(ctx, dev, NULL, 16);
    case 1: *want = "tilec_simulate: args is NULL; give one host buffer per parameter of the kernel";
        return tilec_simulate(p, NULL, NULL, NULL);
    case 2: *want = "tilec_mem_alloc: ptr is NULL; pass where the block's address goes";
        return tilec_mem_alloc(ctx, 16, NULL);
    case 3: *want = "tilec_parse: out is NULL; pass where the program goes";
        return tilec_parse(ctx, "f", "", 0, NULL);
    case 4: *want = "tilec_parse: text is NULL with a length of 5 bytes";
        return tilec_parse(ctx, "f", NULL, 5, &q);
    case 5: *want = "tilec_format: text is NULL; pass where the text goes";
        return tilec_format(p, NULL, &n);
    case 6: *want = "tilec_emit: source is NULL; pass where the source goes";
        return tilec_emit(p, &cuda, NULL, &n);
    case 7: *want = "tilec_compile: size is NULL; pass where the binary and its size go";
        return tilec_compile(p, &cuda, &bin, NULL);
    case 8: *want = "tilec_launch_info_get: info is NULL; pass where the launch info goes";
        return tilec_launch_info_get(p, &cuda, NULL, NULL);
    case 9: *want = "tilec_explain: text is NULL; pass where the text goes";
        return tilec_explain(p, &cuda, false, NULL);
    case 10: *want = "tilec_reduce_check: result is NULL; pass where the result goes";
        return tilec_reduce_check(ctx, &d, NULL, NULL, NULL, NULL);
    case 11: *want = "tilec_reduce_explain: text is NULL; pass where the text goes";
        return tilec_reduce_explain(ctx, &d, NULL);
    case 12: *want = "tilec_runtime_target: out is NULL; pass where the target goes";
        return tilec_runtime_target(ctx, NULL);
    case 13: *want = "device -1 is negative: devices are numbered from 0";
        return tilec_runtime_open(ctx, TILEC_BACKEND_SIM, -1);
    case 14: *want = "tilec_kernel_new: out is NULL; pass where the kernel goes";
        return tilec_kernel_new(p, "other", false, 32, 1, NULL);
    case 15: *want = "tilec_check needs inputs, outputs, results and count";
        return tilec_check(p, NULL, NULL, NULL, NULL, &r, &n);
    case 16: *want = "tilec_program_new: out is NULL; pass where the program goes";
        return tilec_program_new(ctx, NULL);
    case 17: *want = "tilec_kernel_param: out is NULL; pass where the buffer goes";
        k = tilec_program_kernel(p, 0);
        return tilec_kernel_param(k, "C", TILEC_F32, 1, d.shape, TILEC_SPACE_GLOBAL, NULL);
    case 18: *want = "tilec_comm_init: out is NULL; pass where the group goes";
        return tilec_comm_init(ctx, 1, 0, NULL, NULL);
    case 19: *want = "no reduction descriptor";
        return tilec_reduce(ctx, NULL, NULL, NULL);
    case 20: *want = "tilec_mem_download: the destination is NULL, with 8 bytes to copy";
        return tilec_mem_download(ctx, NULL, &d, 8);
    default: *want = NULL;
        (void)text;
        return TILEC_OK;
    }
}

static void test_diagnostics_are_the_calls_own(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "k.tile", ROW_SUM, strlen(ROW_SUM), &p), TILEC_OK);
    tilec_reduce_desc bad = {.op = (tilec_op)99, .dtype = TILEC_F32, .rank = 1, .shape = {8}, .naxes = 1};
    const char *want;
    int cases = 0;
    for (int i = 0;; i++) {
        assert_int_equal(tilec_reduce(ctx, &bad, NULL, NULL), TILEC_ERR_INVALID_ARG); /* the first failure */
        assert_string_equal(first_message(ctx), "op 99 is not a tilec_op");
        tilec_status st = second_failure(i, ctx, p, &want);
        if (!want) break;
        cases++;
        if (st == TILEC_OK) fail_msg("case %d succeeded", i);
        if (tilec_diag_count(ctx) == 0 || strstr(tilec_diag_text(ctx), "op 99"))
            fail_msg("case %d: the diagnostics are not the call's own:\n%s", i, tilec_diag_text(ctx));
        if (strcmp(first_message(ctx), want) != 0) fail_msg("case %d: '%s', not '%s'", i, first_message(ctx), want);
    }
    assert_int_equal(cases, 21);
    /* a call that succeeds after a failure leaves none */
    char *text = NULL;
    tilec_target t;
    assert_int_equal(tilec_reduce(ctx, &bad, NULL, NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_mem_free(ctx, NULL), TILEC_OK);
    assert_int_equal(tilec_diag_count(ctx), 0);
    assert_int_equal(tilec_reduce(ctx, &bad, NULL, NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_runtime_target(ctx, &t), TILEC_OK);
    assert_int_equal(tilec_diag_count(ctx), 0);
    assert_int_equal(tilec_reduce(ctx, &bad, NULL, NULL), TILEC_ERR_INVALID_ARG);
    assert_int_equal(tilec_format(p, &text, NULL), TILEC_OK);
    assert_int_equal(tilec_diag_count(ctx), 0);
    assert_string_equal(tilec_diag_text(ctx), "");
    tilec_free(text);
    tilec_program_free(p);
    tilec_close(ctx); /* the block of case 0 too */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_map),
        cmocka_unit_test(test_sim_copies_stay_in_blocks),
        cmocka_unit_test(test_close_frees_blocks),
        cmocka_unit_test(test_budget_refused_up_front),
        cmocka_unit_test(test_diagnostics_are_the_calls_own),
        cmocka_unit_test(test_builder_matches_text),
        cmocka_unit_test(test_built_ir_diagnostics),
        cmocka_unit_test(test_builder_rejects_bad_arguments),
        cmocka_unit_test(test_builder_limits),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_lower_verdict),
        cmocka_unit_test(test_names_and_statuses),
    };
    return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
