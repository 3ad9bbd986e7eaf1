/*
 * test_jit.c — tilec_reduce through the public API on the simulator backend: every
 * planner strategy, ranks 1 to 4 with every axis set, extents 0, 1, primes and 2^20 + 3,
 * every dtype and op, NaN and ±inf, accumulate, bitwise determinism, the plan cache, and
 * every kind of bad input with its status and message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim_support.h"

static tilec_ctx *sim_ctx(void) {
    tilec_ctx *ctx;
    assert_int_equal(tilec_open(&ctx), TILEC_OK);
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_OK);
    assert_int_equal(tilec_runtime_backend(ctx), TILEC_BACKEND_SIM);
    return ctx;
}

/* Runs d on random data with special values through device memory, the input `shift`
 * elements past an aligned address; checks the result against the reference; returns
 * the output (malloc'd) for bitwise comparisons. */
static void *reduce_shifted(tilec_ctx *ctx, const tilec_reduce_desc *d, uint64_t seed, int shift) {
    size_t es = tilec_dtype_size(d->dtype);
    int64_t in_n = desc_elems(d, false), out_n = desc_elems(d, true);
    size_t in_bytes = (size_t)in_n * es, out_bytes = (size_t)out_n * es;
    void *in = malloc(in_bytes + 16), *before = malloc(out_bytes + 16), *after = malloc(out_bytes + 16);
    fill_buffer(d->dtype, in, in_n, d->shape[d->rank - 1] ? d->shape[d->rank - 1] : 1, true, &seed);
    fill_buffer(d->dtype, before, out_n, 1, false, &seed);
    void *din, *dout;
    assert_int_equal(tilec_mem_alloc(ctx, in_bytes + (size_t)shift * es, &din), TILEC_OK);
    assert_int_equal(tilec_mem_alloc(ctx, out_bytes, &dout), TILEC_OK);
    void *src = (char *)din + (size_t)shift * es;
    assert_int_equal(tilec_mem_upload(ctx, src, in, in_bytes), TILEC_OK);
    assert_int_equal(tilec_mem_upload(ctx, dout, before, out_bytes), TILEC_OK);
    tilec_status st = tilec_reduce(ctx, d, src, dout);
    if (st != TILEC_OK) fail_msg("tilec_reduce: %s\n%s", tilec_status_name(st), tilec_diag_text(ctx));
    assert_int_equal(tilec_synchronize(ctx), TILEC_OK);
    assert_int_equal(tilec_mem_download(ctx, after, dout, out_bytes), TILEC_OK);
    tilec_check_result r;
    assert_int_equal(tilec_reduce_check(ctx, d, in, before, after, &r), TILEC_OK);
    if (!r.ok) {
        char shape[128] = "";
        for (int i = 0; i < d->rank; i++) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i ? "x" : "", (long long)d->shape[i]);
        fail_msg("%s %s shape %s: %lld mismatches, first [%lld] got %.9g want %.9g", tilec_op_name(d->op),
                 tilec_dtype_name(d->dtype), shape, (long long)r.mismatches, (long long)r.first_bad, r.got, r.want);
    }
    tilec_mem_free(ctx, din);
    tilec_mem_free(ctx, dout);
    free(in);
    free(before);
    return after;
}

static void *reduce_and_check(tilec_ctx *ctx, const tilec_reduce_desc *d, uint64_t seed) {
    return reduce_shifted(ctx, d, seed, 0);
}

/* Ranks 1 to 4, every non-empty axis set, extents 1, 2 and primes. */
static void test_every_axis_set(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const int64_t ext[] = {3, 1, 5, 7};
    for (int rank = 1; rank <= 4; rank++)
        for (unsigned mask = 1; mask < (1u << rank); mask++)
            for (int op = 0; op < TILEC_OP_COUNT; op++) {
                tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = TILEC_F32, .rank = rank};
                for (int i = 0; i < rank; i++) d.shape[i] = ext[i] * (i == rank - 1 ? 13 : 1);
                for (int i = 0; i < rank; i++)
                    if (mask >> i & 1) d.axes[d.naxes++] = (mask & 8) ? i - rank : i;
                free(reduce_and_check(ctx, &d, mask));
            }
    tilec_close(ctx);
}

/* Every dtype and op, accumulate, NaN policies, from aligned and unaligned addresses
 * (16-byte loads or not), on a shape for each grid variant and each of its paths (the
 * simulator plans for a GPU of 4 multiprocessors, so 16 CTAs fill it). */
static void test_dtypes_and_strategies(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    static const struct { int rank; int64_t shape[3]; int naxes; int axes[2]; const char *variant; } shapes[] = {
        {1, {(1 << 20) + 3}, 1, {0}, "grid_split"},      /* one output: split over CTAs, a tail after the vectors */
        {2, {3, 70001}, 1, {-1}, "grid_split"},          /* few long rows: split, element loads */
        {2, {3, 70000}, 1, {-1}, "grid_split"},          /* few long rows: split, 16-byte loads */
        {2, {37, 8200}, 1, {-1}, "grid_cta_rows"},          /* long rows: a CTA per row */
        {2, {1000, 37}, 1, {1}, "grid_rows"},           /* many short rows, element loads */
        {2, {1001, 32}, 1, {1}, "grid_rows"},           /* rows of one 16-byte load per lane: four rows in flight */
        {2, {70, 1024}, 1, {1}, "grid_rows"},           /* rows of several loads per lane */
        {2, {4099, 7}, 1, {0}, "grid_cols"},            /* columns, one at a time */
        {2, {4099, 8}, 1, {0}, "grid_cols"},            /* columns, 16 bytes of them per lane, chunks */
        {2, {37, 9000}, 1, {0}, "grid_cols"},           /* many columns, 16 bytes of them per lane */
        {2, {37, 9001}, 1, {0}, "grid_general"},           /* many columns, a thread each */
        {3, {6, 5, 40}, 2, {0, 2}, "grid_general"},        /* around a kept middle axis */
    };
    for (int dt = 0; dt < TILEC_DTYPE_COUNT; dt++)
        for (int op = 0; op < TILEC_OP_COUNT; op++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int variant = 0; variant < 2; variant++) {
                    bool flt = dt == TILEC_F16 || dt == TILEC_BF16 || dt == TILEC_F32 || dt == TILEC_F64;
                    tilec_reduce_desc d = {.op = (tilec_op)op, .dtype = (tilec_dtype)dt, .rank = shapes[s].rank,
                                           .naxes = shapes[s].naxes, .accumulate = variant == 1,
                                           .nan = flt && op != TILEC_OP_SUM && variant == 1 ? TILEC_NAN_IGNORE : TILEC_NAN_PROPAGATE};
                    memcpy(d.shape, shapes[s].shape, sizeof shapes[s].shape);
                    memcpy(d.axes, shapes[s].axes, sizeof shapes[s].axes);
                    if (s == 0 && dt > TILEC_F32) continue; /* one big tensor per op is enough */
                    if (dt == TILEC_F32 && variant == 0) { /* the shape reaches the variant it is here for */
                        char *text, want[64];
                        assert_int_equal(tilec_reduce_explain(ctx, &d, &text), TILEC_OK);
                        snprintf(want, sizeof want, "variant %s,", shapes[s].variant);
                        if (!strstr(text, want)) fail_msg("shape %zu: %s not in\n%s", s, want, text);
                        tilec_free(text);
                    }
                    free(reduce_shifted(ctx, &d, (uint64_t)(dt * 100 + op * 10 + (int)s), variant));
                }
    tilec_close(ctx);
}

/* The same input gives the same bits, twice in a context and in a new one; plans are
 * reused for the same shape. */
static void test_determinism_and_cache(void **state) {
    (void)state;
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {2, 300007}, .naxes = 1, .axes = {1}};
    tilec_ctx *a = sim_ctx(), *b = sim_ctx();
    void *x = reduce_and_check(a, &d, 5), *y = reduce_and_check(a, &d, 5), *z = reduce_and_check(b, &d, 5);
    assert_memory_equal(x, y, 2 * sizeof(float));
    assert_memory_equal(x, z, 2 * sizeof(float));
    free(x);
    free(y);
    free(z);
    /* [8, 1, 16, 32] over (2, 3) and [8, 512] over (1) are one plan */
    char *t1, *t2;
    tilec_reduce_desc e = {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 4, .shape = {8, 1, 16, 32}, .naxes = 2, .axes = {2, 3}};
    tilec_reduce_desc f = {.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {8, 512}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_reduce_explain(a, &e, &t1), TILEC_OK);
    assert_int_equal(tilec_reduce_explain(a, &f, &t2), TILEC_OK);
    assert_non_null(strstr(t1, "view: 8 512 (reduced)\n"));
    assert_string_equal(t1, t2);
    assert_non_null(strstr(t1, "grid.max(B, A, axes=(1))"));
    tilec_free(t1);
    tilec_free(t2);
    tilec_close(a);
    tilec_close(b);
}

/* Zero extents: an empty output does nothing; a sum over an empty axis gives 0 (or
 * leaves the output when accumulating); max / min over one is an error. */
static void test_empty(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    float out[4] = {5, 5, 5, 5}, in[1] = {0};
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {4, 0}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    for (int i = 0; i < 4; i++) assert_true(out[i] == 0.0f);
    out[0] = 7;
    d.accumulate = true;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_OK);
    assert_true(out[0] == 7.0f);
    d.op = TILEC_OP_MAX;
    assert_int_equal(tilec_reduce(ctx, &d, in, out), TILEC_ERR_INVALID_ARG);
    tilec_diag g;
    tilec_diag_get(ctx, 0, &g);
    assert_string_equal(g.message, "max over an empty axis has no value: a reduced extent is 0");
    d = (tilec_reduce_desc){.op = TILEC_OP_MAX, .dtype = TILEC_F32, .rank = 2, .shape = {0, 9}, .naxes = 1, .axes = {1}};
    assert_int_equal(tilec_reduce(ctx, &d, NULL, NULL), TILEC_OK); /* nothing to write */
    tilec_close(ctx);
}

static void expect_bad(tilec_ctx *ctx, const tilec_reduce_desc *d, const void *in, void *out, const char *message) {
    assert_int_equal(tilec_reduce(ctx, d, in, out), TILEC_ERR_INVALID_ARG);
    tilec_diag g;
    assert_int_equal(tilec_diag_get(ctx, 0, &g), TILEC_OK);
    assert_string_equal(g.message, message);
}

static void test_bad_input(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    float buf[64] = {0}, out[8] = {0};
    tilec_reduce_desc ok = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 2, .shape = {8, 8}, .naxes = 1, .axes = {1}};
    tilec_reduce_desc d = ok;
    assert_int_equal(tilec_reduce(NULL, &d, buf, out), TILEC_ERR_INVALID_ARG);
    expect_bad(ctx, NULL, buf, out, "no reduction descriptor");
    expect_bad(ctx, &d, NULL, out, "the input is NULL");
    expect_bad(ctx, &d, buf, NULL, "the output is NULL");
    d.rank = 0;
    expect_bad(ctx, &d, buf, out, "rank 0 is out of range: a tensor has 1 to 8 dimensions");
    d.rank = 9;
    expect_bad(ctx, &d, buf, out, "rank 9 is out of range: a tensor has 1 to 8 dimensions");
    d = ok;
    d.axes[0] = 2;
    expect_bad(ctx, &d, buf, out, "axis 2 is out of range for rank 2 (axes -2 to 1)");
    d = ok;
    d.naxes = 2;
    d.axes[0] = d.axes[1] = -1;
    expect_bad(ctx, &d, buf, out, "axis 1 is given twice");
    d = ok;
    d.naxes = 0;
    expect_bad(ctx, &d, buf, out, "0 axes for a tensor of rank 2: give 1 to 2");
    d = ok;
    d.shape[0] = -3;
    expect_bad(ctx, &d, buf, out, "extent -3 of dimension 0 is negative");
    d = ok;
    d.shape[0] = (int64_t)1 << 40, d.shape[1] = (int64_t)1 << 30;
    expect_bad(ctx, &d, buf, out, "the tensor has more than 2^63-1 elements");
    d.shape[0] = d.shape[1] = INT64_MAX / 2;
    expect_bad(ctx, &d, buf, out, "the extents other than 0 multiply to 4611686018427387903; tilec reduces tensors of up to 2^48 elements");
    d.rank = 3; /* an empty tensor, but its kept extents still overflow (found by tests/fuzz) */
    d.shape[0] = 0, d.shape[1] = 1000, d.shape[2] = INT64_MAX - 31;
    expect_bad(ctx, &d, buf, out, "the extents other than 0 multiply to more than 2^63-1");
    d.shape[0] = 1, d.shape[1] = 1 << 24, d.shape[2] = (1 << 24) + 1;
    expect_bad(ctx, &d, buf, out, "the extents other than 0 multiply to 281474993487872; tilec reduces tensors of up to 2^48 elements");
    d = ok;
    d.dtype = TILEC_DTYPE_COUNT;
    expect_bad(ctx, &d, buf, out, "dtype 7 is not a tilec_dtype");
    d = ok;
    expect_bad(ctx, &d, buf, buf + 60, "the input and the output overlap; reduce into another buffer");
    /* an unaligned input is fine: the kernels make no alignment assumption */
    float big[66];
    for (int i = 0; i < 66; i++) big[i] = (float)i;
    assert_int_equal(tilec_reduce(ctx, &ok, big + 1, out), TILEC_OK);
    float want = 0;
    for (int j = 0; j < 8; j++) want += big[1 + j];
    assert_true(out[0] == want);
    /* a long sum from an unaligned pointer takes the scalar plan, and is right */
    float *many = malloc(sizeof(float) * 100004);
    double exact = 0;
    for (int i = 0; i < 100004; i++) many[i] = (float)(i % 13) - 6.0f;
    for (int i = 1; i < 100004; i++) exact += many[i];
    tilec_reduce_desc longsum = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {100003}, .naxes = 1, .axes = {0}};
    assert_int_equal(tilec_reduce(ctx, &longsum, many + 1, out), TILEC_OK);
    assert_true(out[0] == (float)exact); /* small integers: every order is exact */
    assert_int_equal(tilec_reduce(ctx, &longsum, many, out), TILEC_OK); /* the aligned plan, vector loads */
    free(many);
    /* a second runtime_open is refused */
    assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_SIM, 0), TILEC_ERR_INVALID_ARG);
    tilec_close(ctx);
}

/* Asking for a GPU where there is none says what was tried; AUTO falls back to sim. */
static void test_backends(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_status st = tilec_runtime_open(ctx, TILEC_BACKEND_CUDA, 0);
    if (st == TILEC_OK) {
        print_message("a CUDA GPU is usable here; the no-GPU messages are not checked\n");
    } else {
        assert_int_equal(st, TILEC_ERR_UNAVAILABLE);
        tilec_diag g;
        tilec_diag_get(ctx, 0, &g);
        assert_true(strstr(g.message, "no CUDA driver") || strstr(g.message, "stub") || strstr(g.message, "no usable GPU"));
        assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_HIP, 0), TILEC_ERR_UNAVAILABLE);
        assert_int_equal(tilec_runtime_open(ctx, TILEC_BACKEND_AUTO, 0), TILEC_OK);
        assert_int_equal(tilec_runtime_backend(ctx), TILEC_BACKEND_SIM);
    }
    tilec_close(ctx);
}

/* tilec_reduce on the simulator runs under the context's budget: a low one stops the
 * call with TILEC_ERR_BUDGET and its message, the plan stays, and a raised one lets the
 * same call finish with the right result. */
static void test_sim_budget(void **state) {
    (void)state;
    tilec_ctx *ctx = sim_ctx();
    tilec_reduce_desc d = {.op = TILEC_OP_SUM, .dtype = TILEC_F32, .rank = 1, .shape = {100000}, .naxes = 1, .axes = {0}};
    static float in[100000];
    float out = 0;
    for (int i = 0; i < 100000; i++) in[i] = (float)(i % 3);
    assert_int_equal(tilec_set_sim_budget(ctx, 10000), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, in, &out), TILEC_ERR_BUDGET);
    if (!strstr(tilec_diag_text(ctx), "the simulation stopped after 10000 thread-steps (its budget)"))
        fail_msg("no budget message:\n%s", tilec_diag_text(ctx));
    assert_int_equal(tilec_set_sim_budget(ctx, 0), TILEC_OK);
    assert_int_equal(tilec_reduce(ctx, &d, in, &out), TILEC_OK);
    assert_true(out == 99999.0f); /* 33333 ones and 33333 twos: exact in f32 */
    tilec_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_sim_budget),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_backends),
        cmocka_unit_test(test_determinism_and_cache),
        cmocka_unit_test(test_every_axis_set),
        cmocka_unit_test(test_dtypes_and_strategies),
    };
    return cmocka_run_group_tests_name("jit", tests, NULL, NULL);
}
