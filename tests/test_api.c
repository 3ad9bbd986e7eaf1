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

#include "support.h"

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
    assert_int_equal(tilec_verify(NULL, NULL), TILEC_ERR_INVALID_ARG);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_matches_text),
        cmocka_unit_test(test_built_ir_diagnostics),
        cmocka_unit_test(test_builder_rejects_bad_arguments),
        cmocka_unit_test(test_builder_limits),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_names_and_statuses),
    };
    return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
