/*
 * test_lower.c — dispatch and lowering checked on the loop IR itself (not on text), the
 * simulator's detectors proven on planted bugs, the exact reasons variants give when they
 * reject a statement, and the element formats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../src/ir/numeric.h"
#include "../src/runtime/sim.h"
#include "sim_support.h"

/* Parses and verifies src; lowers its first kernel for target t. */
static lp_kernel *lower(tilec_ctx *ctx, tilec_program **p, const char *src, tilec_target t, bool verify) {
    assert_int_equal(tilec_parse(ctx, "t.tile", src, strlen(src), p), TILEC_OK);
    dsp_target dt;
    char why[200];
    assert_true(dsp_target_resolve(&t, &dt, why, sizeof why));
    if (verify) assert_int_equal(tilec_verify(*p, &(tilec_verify_options){dt.warp_size}), TILEC_OK);
    lp_kernel *k = dsp_lower_kernel(*p, (*p)->kernels[0], &dt, NULL);
    if (!k) fail_msg("lowering failed:\n%s", tilec_diag_text(ctx));
    return k;
}

typedef struct found {
    const lp_stmt *items[64];
    int n;
    lp_stmt_kind kind;
} found;

static void collect(const lp_stmt *st, int depth, void *arg) {
    (void)depth;
    found *f = arg;
    if (st->kind == f->kind && f->n < 64) f->items[f->n++] = st;
}

static found find(const lp_kernel *k, lp_stmt_kind kind) {
    found f = {.kind = kind};
    lp_visit(&k->body, collect, &f);
    return f;
}

static const char *const row_sum =
    "kernel row_sum(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
    "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
    "  cta.sum(Bs, As, axes=(-1), accum=false)\n  cta.sync()\n  cta.copy(B, Bs)\n}\n";

/* The seed demo: the shared variant, groups of 8 lanes, three xor steps 1, 2, 4 of width 8. */
static void test_seed_demo_shape(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    lp_kernel *k = lower(ctx, &p, row_sum, (tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, true);
    found ops = find(k, LS_OP);
    assert_int_equal(ops.n, 5);
    assert_string_equal(ops.items[2]->variant, "shared");
    found sh = find(k, LS_SHFL);
    assert_int_equal(sh.n, 3);
    int masks[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sh.items[i]->lane_mask, masks[i]);
        assert_int_equal(sh.items[i]->width, 8);
    }
    dsp_query q;
    dsp_target t = {.backend = TILEC_BACKEND_CUDA, .arch = "sm_90", .warp_size = 32};
    dsp_query_init(&q, &t, p->kernels[0], p->kernels[0]->stmts[4]);
    assert_int_equal(q.group, 8);
    assert_int_equal(q.spatial_len, 4);
    assert_int_equal(q.red_len, 8);
    /* lowering is deterministic: the same loop IR twice */
    ir_str a = {0}, b = {0};
    lp_print_kernel(&a, k);
    lp_print_kernel(&b, dsp_lower_kernel(p, p->kernels[0], &t, NULL));
    assert_string_equal(a.data, b.data);
    ir_str_free(&a);
    ir_str_free(&b);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Groups never straddle missing lanes: 48 threads take groups of 16, and it is correct. */
static void test_partial_groups_shrink(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[5, 64] global, B: f32[5] global) threads=48 {\n"
                      "  shared S: f32[5, 64]\n  shared R: f32[5]\n  cta.copy(S, A)\n  cta.sync()\n"
                      "  cta.sum(R, S)\n  cta.copy(B, R)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    lp_kernel *k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    found sh = find(k, LS_SHFL);
    assert_int_equal(sh.n, 8); /* 5 outputs, 3 groups: each takes two at once, 4 xor steps each */
    for (int i = 0; i < 8; i++) assert_int_equal(sh.items[i]->width, 16);
    tilec_program_free(p);
    tilec_close(ctx);
    sim_case_result r = run_on_sim(src, 32, 1, true, NULL);
    assert_true(r.ok);
}

/* ---- planted bugs: each detector must fire ------------------------------------------------ */

static char *simulate_err(tilec_ctx *ctx, tilec_program *p, const lp_kernel *k) {
    static float a[4096], b[4096];
    for (int i = 0; i < 4096; i++) a[i] = (float)(i % 7) - 3.0f;
    void *args[] = {a, b, a, b};
    tilec_status st = sim_run(p, k, args);
    assert_int_equal(st, TILEC_ERR_SIMULATE);
    return (char *)tilec_diag_text(ctx);
}

static void drop_barrier_after_reduce(lp_block *b) {
    for (int i = 0; i < b->n; i++) {
        if (b->items[i]->kind == LS_BARRIER && i > 0 && b->items[i - 1]->kind == LS_IF) {
            memmove(&b->items[i], &b->items[i + 1], (size_t)(b->n - i - 1) * sizeof b->items[0]);
            b->n--;
            return;
        }
        drop_barrier_after_reduce(&b->items[i]->body);
    }
}

static void test_planted_missing_barrier(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    const char *src = "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=64 {\n"
                      "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
                      "  cta.sum(Bs, As)\n  cta.copy(B, Bs)\n}\n";
    lp_kernel *k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    int before = k->body.n;
    drop_barrier_after_reduce(&k->body);
    assert_int_equal(k->body.n, before - 1);
    char *msg = simulate_err(ctx, p, k);
    assert_non_null(strstr(msg, "t.tile:7:7: error: simulator (warp size 32): CTA 0, thread "));
    assert_non_null(strstr(msg, "reads Bs["));
    assert_non_null(strstr(msg, "with no barrier between"));
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_planted_wrong_width(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    lp_kernel *k = lower(ctx, &p, row_sum, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    found sh = find(k, LS_SHFL);
    ((lp_stmt *)sh.items[2])->width = 4; /* mask 4 no longer stays inside its group */
    char *msg = simulate_err(ctx, p, k);
    assert_non_null(strstr(msg, "shuffle mask 4 leaves its group of width 4"));
    assert_non_null(strstr(msg, "t.tile:6:7: error:"));
    tilec_program_free(p);
    tilec_close(ctx);
    /* a width wider than the lanes that exist: 48 threads, widened to 32 */
    const char *src = "kernel k(A: f32[3, 64] global, B: f32[3] global) threads=48 {\n"
                      "  shared S: f32[3, 64]\n  shared R: f32[3]\n  cta.copy(S, A)\n  cta.sync()\n"
                      "  cta.max(R, S)\n  cta.copy(B, R)\n}\n";
    tilec_open(&ctx);
    k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    sh = find(k, LS_SHFL);
    ((lp_stmt *)sh.items[3])->width = 32;
    ((lp_stmt *)sh.items[3])->lane_mask = 16;
    msg = simulate_err(ctx, p, k);
    assert_non_null(strstr(msg, "shuffle reads lane 16, which does not exist (the warp has 16 lanes)"));
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_planted_out_of_bounds(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    lp_kernel *k = lower(ctx, &p, row_sum, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    found st = find(k, LS_VSTORE);
    assert_int_equal(st.n, 2); /* both copies move 16 bytes at a time */
    lp_stmt *last = (lp_stmt *)st.items[1]; /* B[4e .. +4] = Bs[4e .. +4] */
    lp_expr *right = last->a;
    last->a = lp_binary(k, LO_ADD, right, lp_int(k, LP_I32, 4));
    char *msg = simulate_err(ctx, p, k);
    assert_non_null(strstr(msg, "writes B[4], out of bounds (4 elements)"));
    tilec_program_free(p);
    tilec_close(ctx);
    /* and a vector access off its alignment */
    tilec_open(&ctx);
    k = lower(ctx, &p, row_sum, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    st = find(k, LS_VLOAD);
    last = (lp_stmt *)st.items[0];
    last->a = lp_binary(k, LO_ADD, last->a, lp_int(k, LP_I32, 1));
    msg = simulate_err(ctx, p, k);
    assert_non_null(strstr(msg, "vector access A[1 .. +4] is not aligned to 4 elements"));
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Completion counters: every CTA adds one; the CTA that sees grid - 1 knows it is last. */
static void test_atomic_counter(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    const char *src = "kernel k(C: u32[1] global, L: u32[1] global) threads=64 grid=9 {\n}\n";
    lp_kernel *k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    lp_buf *C = k->bufs[0], *L = k->bufs[1];
    int old = lp_reg_new(k, LP_U32, "old");
    lp_block *first = &lp_if(k, &k->body, lp_binary(k, LO_EQ, lp_special_expr(k, LP_TID), lp_int(k, LP_I32, 0)))->body;
    lp_fence(k, first);
    lp_atomic_add(k, first, old, C, lp_int(k, LP_I32, 0), lp_int(k, LP_U32, 1));
    lp_block *last = &lp_if(k, first, lp_binary(k, LO_EQ, lp_reg(k, old), lp_int(k, LP_U32, 8)))->body;
    lp_store(k, last, L, lp_int(k, LP_I32, 0), lp_cast(k, LP_U32, lp_special_expr(k, LP_CTA)));
    uint32_t c = 0, l = 99;
    void *args[] = {&c, &l};
    assert_int_equal(sim_run(p, k, args), TILEC_OK);
    assert_int_equal(c, 9);
    assert_int_equal(l, 8);
    ir_str s = {0};
    lp_print_kernel(&s, k);
    assert_non_null(strstr(s.data, "old0 = atomic_add(C[0], 1u32)"));
    assert_non_null(strstr(s.data, "fence.global"));
    ir_str_free(&s);
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_planted_missing_sync(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    /* the verifier would refuse this; lower it anyway to prove the simulator sees it too */
    const char *src = "kernel k(A: f32[4, 8] global, B: f32[8] global) threads=64 {\n"
                      "  shared As: f32[4, 8]\n  shared Bs: f32[8]\n  cta.copy(As, A)\n"
                      "  cta.sum(Bs, As, axes=(0))\n  cta.copy(B, Bs)\n}\n";
    lp_kernel *k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, false);
    char *msg = simulate_err(ctx, p, k);
    assert_non_null(strstr(msg, "t.tile:5:7: error: simulator (warp size 32): CTA 0, thread "));
    assert_non_null(strstr(msg, "reads As["));
    assert_non_null(strstr(msg, "wrote at line 4 with no barrier between"));
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_planted_divergent_barrier(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    lp_kernel *k = lower(ctx, &p, row_sum, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    /* put the first barrier under `if (tid < 16)` */
    for (int i = 0; i < k->body.n; i++)
        if (k->body.items[i]->kind == LS_BARRIER) {
            lp_stmt *bar = k->body.items[i];
            lp_block tmp = {0};
            lp_stmt *guard = lp_if(k, &tmp, lp_binary(k, LO_LT, lp_special_expr(k, LP_TID), lp_int(k, LP_I32, 16)));
            lp_barrier(k, &guard->body, bar->scope);
            k->body.items[i] = guard;
            break;
        }
    char *msg = simulate_err(ctx, p, k);
    assert_non_null(strstr(msg, "thread 16 (warp 0, lane 16): barrier (cta) reached by part of its scope"));
    tilec_program_free(p);
    tilec_close(ctx);
}

static void test_uninitialised_shared_read(void **state) {
    (void)state;
    const char *src = "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                      "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As[0:2], A[0:2])\n  cta.sync()\n"
                      "  cta.sum(Bs, As)\n  cta.copy(B, Bs)\n}\n";
    sim_case_result r = run_on_sim(src, 32, 1, false, NULL);
    assert_int_equal(r.status, TILEC_ERR_SIMULATE);
    assert_non_null(strstr(r.why, "reads As[16] before anything wrote it"));
    assert_non_null(strstr(r.why, "case.tile:6:7: error:"));
    const char *local = "kernel k(A: f32[32, 4] global, B: f32[32] global) threads=32 {\n"
                        "  local L: f32[4]\n  local M: f32[1]\n  thread.copy(L[0:2], A[thread_id, 0:2])\n"
                        "  thread.sum(M, L)\n  thread.copy(B[thread_id], M)\n}\n";
    r = run_on_sim(local, 32, 1, false, NULL);
    assert_int_equal(r.status, TILEC_ERR_SIMULATE);
    assert_non_null(strstr(r.why, "case.tile:5:10: error: simulator (warp size 32): CTA 0, thread 0 (warp 0, lane 0): "
                                  "reads L[2] (local) before anything wrote it"));
}

/* ---- rejections with their reasons ------------------------------------------------------------- */

/* The explain text of src for target t (its dispatch status in *st). */
static char *explain(const char *src, tilec_target t, tilec_status *st, char **diag) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "t.tile", src, strlen(src), &p), TILEC_OK);
    char *text = NULL;
    *st = tilec_explain(p, &t, false, &text);
    *diag = strdup(tilec_diag_text(ctx));
    tilec_program_free(p);
    tilec_close(ctx);
    return text;
}

static void test_rejection_reasons(void **state) {
    (void)state;
    tilec_status st;
    char *diag;
    tilec_target cuda = {TILEC_BACKEND_CUDA, NULL, 0}, hip = {TILEC_BACKEND_HIP, "gfx90a", 0};
    char *text = explain("kernel k(A: f32[2, 64] global, B: f32[2] global) threads=80 {\n"
                         "  cta.sum(B, A, variant=cta_tree)\n}\n", cuda, &st, &diag);
    assert_int_equal(st, TILEC_ERR_DISPATCH);
    assert_non_null(strstr(diag, "t.tile:2:7: error: variant=cta_tree cannot lower this sum on cuda sm_90, warp size 32 "
                                 "(forced variants never fall back):\n"));
    assert_non_null(strstr(diag, "several_warps    no: threads=80 is not a multiple of the warp size (32): the last "
                                 "warp would shuffle with lanes that do not exist\n"));
    assert_non_null(strstr(diag, "  op: cta.sum(B, A, axes=(-1), variant=cta_tree)"));
    free(text);
    free(diag);
    text = explain("kernel k(A: f32[2, 64] global, B: f32[2] global) threads=32 {\n  cta.sum(B, A, variant=fast)\n}\n",
                   cuda, &st, &diag);
    assert_int_equal(st, TILEC_ERR_DISPATCH);
    assert_non_null(strstr(diag, "no variant named 'fast' is registered for sum on cuda; registered: local, local_smem, "
                                 "cta_tree, shared, sequential, smem_tree"));
    free(text);
    free(diag);
    text = explain("kernel k(A: f32[2, 4, 64] global, B: f32[2, 4] global) threads=256 {\n"
                   "  warpgroup.max(B[warpgroup_id], A[warpgroup_id])\n}\n", hip, &st, &diag);
    assert_int_equal(st, TILEC_ERR_DISPATCH);
    assert_non_null(strstr(diag, "no variant can lower this max on hip gfx90a, warp size 64; every variant was rejected:"));
    assert_non_null(strstr(diag, "target_scope     no: warpgroup scope exists only on CUDA (HIP has no warpgroup barrier)"));
    free(text);
    free(diag);
    /* registers on a partial warp: the butterfly cannot run, shared slots can */
    text = explain("kernel k(A: f32[48, 4] global, B: f32[48] global) threads=48 {\n"
                   "  local L: f32[4]\n  local M: f32[1]\n  thread.copy(L, A[thread_id])\n"
                   "  warp.sum(M, L)\n  thread.copy(B[thread_id], M)\n}\n", cuda, &st, &diag);
    assert_int_equal(st, TILEC_OK);
    assert_non_null(strstr(text, "        scope            no: threads=48 leaves a warp of 16 lanes (warp size 32): a "
                                 "warp-wide butterfly would read lanes that do not exist\n"));
    assert_non_null(strstr(text, "    * local_smem  priority 25  chosen\n"));
    assert_non_null(strstr(text, "        lanes            no: a local operand at warp scope is combined across lanes, "
                                 "which one thread cannot see\n"));
    free(text);
    free(diag);
    /* a successful dispatch shows every verdict and marks the winner */
    text = explain(row_sum, cuda, &st, &diag);
    assert_int_equal(st, TILEC_OK);
    assert_non_null(strstr(text, "  line 6: cta.sum(Bs, As, axes=(-1))\n    4 outputs of 8 elements; groups of 8 lanes\n"));
    assert_non_null(strstr(text, "    * shared      priority 10  chosen\n"));
    assert_non_null(strstr(text, "        forced           no: chosen only when forced with variant=smem_tree (it needs a "
                                 "barrier per level)\n"));
    free(text);
    free(diag);
}

/* ---- element formats ------------------------------------------------------------------------------ */

static void test_numeric(void **state) {
    (void)state;
    /* max and min of the format: +0 over -0, NaN policies */
    assert_false(signbit(num_fmax(-0.0, 0.0, TILEC_NAN_PROPAGATE)));
    assert_false(signbit(num_fmax(0.0, -0.0, TILEC_NAN_PROPAGATE)));
    assert_true(signbit(num_fmin(0.0, -0.0, TILEC_NAN_PROPAGATE)));
    assert_true(signbit(num_fmin(-0.0, 0.0, TILEC_NAN_PROPAGATE)));
    assert_true(isnan(num_fmax(1.0, NAN, TILEC_NAN_PROPAGATE)));
    assert_true(isnan(num_fmin(NAN, 1.0, TILEC_NAN_PROPAGATE)));
    assert_true(num_fmax(1.0, NAN, TILEC_NAN_IGNORE) == 1.0);
    assert_true(num_fmin(NAN, -2.0, TILEC_NAN_IGNORE) == -2.0);
    assert_true(isnan(num_fmax(NAN, NAN, TILEC_NAN_IGNORE)));
    assert_true(num_fmax(-INFINITY, -INFINITY, TILEC_NAN_PROPAGATE) == -INFINITY);
    /* f16: largest finite, the rounding edge to infinity, a third, the smallest subnormal */
    assert_int_equal(num_to_f16(65504.0), 0x7bff);
    assert_int_equal(num_to_f16(65519.0), 0x7bff);
    assert_int_equal(num_to_f16(65520.0), 0x7c00);
    assert_int_equal(num_to_f16(1.0 / 3.0), 0x3555);
    assert_int_equal(num_to_f16(0x1p-24), 0x0001);
    assert_int_equal(num_to_f16(0x1p-25), 0x0000);       /* a tie rounds to even (zero) */
    assert_int_equal(num_to_f16(0x1.8p-24), 0x0002);     /* 1.5 quanta rounds to 2 */
    assert_int_equal(num_to_f16(-2.0), 0xc000);
    assert_int_equal(num_to_f16(-0.0), 0x8000);
    assert_true(num_from_f16(0x7e00) != num_from_f16(0x7e00)); /* NaN */
    assert_true(num_from_f16(0x3c00) == 1.0);
    assert_true(num_from_f16(0x0001) == 0x1p-24);
    /* bf16 */
    assert_int_equal(num_to_bf16(1.0), 0x3f80);
    assert_int_equal(num_to_bf16(1.0 / 3.0), 0x3eab);
    assert_int_equal(num_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(num_to_bf16(3.4e38), 0x7f80); /* above bf16's largest finite */
    assert_true(num_from_bf16(0x3f80) == 1.0);
    /* f32 rounding of a double tie: 1 + 2^-24 rounds to 1 (even) */
    assert_true(num_round(LP_F32, 1.0 + 0x1p-24) == 1.0);
    assert_true(num_round(LP_F32, 1.0 + 0x1.8p-23) == 1.0 + 0x1p-22);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_demo_shape),
        cmocka_unit_test(test_partial_groups_shrink),
        cmocka_unit_test(test_planted_missing_barrier),
        cmocka_unit_test(test_planted_wrong_width),
        cmocka_unit_test(test_planted_out_of_bounds),
        cmocka_unit_test(test_atomic_counter),
        cmocka_unit_test(test_planted_missing_sync),
        cmocka_unit_test(test_planted_divergent_barrier),
        cmocka_unit_test(test_uninitialised_shared_read),
        cmocka_unit_test(test_rejection_reasons),
        cmocka_unit_test(test_numeric),
    };
    return cmocka_run_group_tests_name("lowering and simulator checks", tests, NULL, NULL);
}
