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

/* The same with the shared variant forced: the cost model now picks `rows` for it
 * (test_model_choices), and the shape of the shared variant is still what these check. */
static const char *const row_sum_shared =
    "kernel row_sum(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
    "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
    "  cta.sum(Bs, As, axes=(-1), accum=false, variant=shared)\n  cta.sync()\n  cta.copy(B, Bs)\n}\n";

/* The row-sum example forced to the shared variant: groups of 8 lanes, three xor steps 1, 2, 4
 * of width 8. */
static void test_row_sum_shared_shape(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    lp_kernel *k = lower(ctx, &p, row_sum_shared, (tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, true);
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

/* A reduction's own barrier and the program's cta.sync() right after it are one barrier;
 * one with something between them, another scope's, or inside a selected instance's test
 * stay. Counted on the top-level block (the variant's own barriers are in its blocks). */
static int top_barriers(const lp_kernel *k, tilec_scope scope) {
    int n = 0;
    for (int i = 0; i < k->body.n; i++) n += k->body.items[i]->kind == LS_BARRIER && k->body.items[i]->scope == scope;
    return n;
}

static void test_repeated_barriers_dropped(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    /* copy, sync, sum (+ its barrier), sync: the sync after the sum goes */
    lp_kernel *k = lower(ctx, &p, row_sum, (tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, true);
    assert_int_equal(top_barriers(k, TILEC_SCOPE_CTA), 2);
    for (int i = 1; i < k->body.n; i++) { /* and no two in a row, markers aside */
        int j = i - 1;
        while (j > 0 && k->body.items[j]->kind == LS_OP) j--;
        assert_false(k->body.items[i]->kind == LS_BARRIER && k->body.items[j]->kind == LS_BARRIER);
    }
    tilec_program_free(p);
    /* a fill between them keeps both; two syncs in a row are one; a warp barrier after a cta
     * one stays */
    static const char *const src =
        "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=64 {\n"
        "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  shared Cs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
        "  cta.sum(Bs, As, axes=(-1))\n  cta.fill(Cs, 0)\n  cta.sync()\n  cta.sync()\n  warp.sync()\n  cta.copy(B, Bs)\n}\n";
    k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, true);
    assert_int_equal(top_barriers(k, TILEC_SCOPE_CTA), 3); /* after the copy, the sum's, one of the two syncs */
    assert_int_equal(top_barriers(k, TILEC_SCOPE_WARP), 1);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Groups never straddle missing lanes: 48 threads take groups of 16 in the shared variant
 * (forced), and of at most 16 in `rows` (the model's choice), and both are correct. */
static void test_partial_groups_shrink(void **state) {
    (void)state;
    for (int forced = 1; forced >= 0; forced--) {
        char src[512];
        snprintf(src, sizeof src,
                 "kernel k(A: f32[5, 64] global, B: f32[5] global) threads=48 {\n"
                 "  shared S: f32[5, 64]\n  shared R: f32[5]\n  cta.copy(S, A)\n  cta.sync()\n"
                 "  cta.sum(R, S%s)\n  cta.copy(B, R)\n}\n", forced ? ", variant=shared" : "");
        tilec_ctx *ctx;
        tilec_open(&ctx);
        tilec_program *p;
        lp_kernel *k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
        found ops = find(k, LS_OP);
        assert_string_equal(ops.items[2]->variant, forced ? "shared" : "rows");
        found sh = find(k, LS_SHFL);
        if (forced) {
            assert_int_equal(sh.n, 8); /* 5 outputs, 3 groups: each takes two at once, 4 xor steps each */
            for (int i = 0; i < 8; i++) assert_int_equal(sh.items[i]->width, 16);
        } else {
            assert_true(sh.n > 0);
            for (int i = 0; i < sh.n; i++) {
                assert_true(sh.items[i]->width >= 2 && sh.items[i]->width <= 16);
                assert_true(sh.items[i]->lane_mask < sh.items[i]->width);
            }
        }
        tilec_program_free(p);
        tilec_close(ctx);
        for (int ws = 32; ws <= 64; ws *= 2) {
            sim_case_result r = run_on_sim(src, ws, 1, true, NULL);
            if (!r.ok) fail_msg("warp size %d: %s\n%s", ws, r.why, src);
        }
    }
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

/* Drops the barrier a reduction ends with: the last one at the kernel's top level, after
 * the statement's loops (the one before the final copy of the programs below). */
static void drop_barrier_after_reduce(lp_block *b) {
    for (int i = b->n - 1; i > 0; i--)
        if (b->items[i]->kind == LS_BARRIER && b->items[i - 1]->kind != LS_OP) {
            memmove(&b->items[i], &b->items[i + 1], (size_t)(b->n - i - 1) * sizeof b->items[0]);
            b->n--;
            return;
        }
}

/* The missing barrier between a reduction's stores and the copy that reads them, in the
 * lowering the model picks (rows) and in the shared variant forced. */
static void test_planted_missing_barrier(void **state) {
    (void)state;
    for (int forced = 0; forced < 2; forced++) {
        tilec_ctx *ctx;
        tilec_open(&ctx);
        tilec_program *p;
        char src[512];
        snprintf(src, sizeof src,
                 "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=64 {\n"
                 "  shared As: f32[4, 8]\n  shared Bs: f32[4]\n  cta.copy(As, A)\n  cta.sync()\n"
                 "  cta.sum(Bs, As%s)\n  cta.copy(B, Bs)\n}\n", forced ? ", variant=shared" : "");
        lp_kernel *k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
        assert_string_equal(find(k, LS_OP).items[2]->variant, forced ? "shared" : "rows");
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
}

static void test_planted_wrong_width(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    lp_kernel *k = lower(ctx, &p, row_sum_shared, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
    found sh = find(k, LS_SHFL);
    assert_int_equal(sh.n, 3); /* (the model's rows plan has no shuffle here: a lane a row) */
    ((lp_stmt *)sh.items[2])->width = 4; /* mask 4 no longer stays inside its group */
    char *msg = simulate_err(ctx, p, k);
    assert_non_null(strstr(msg, "shuffle mask 4 leaves its group of width 4"));
    assert_non_null(strstr(msg, "t.tile:6:7: error:"));
    tilec_program_free(p);
    tilec_close(ctx);
    /* a width wider than the lanes that exist: 48 threads, widened to 32, in the shared
     * variant (forced) and in the rows plan the model picks (its last xor step) */
    for (int forced = 1; forced >= 0; forced--) {
        char src[512];
        snprintf(src, sizeof src,
                 "kernel k(A: f32[3, 64] global, B: f32[3] global) threads=48 {\n"
                 "  shared S: f32[3, 64]\n  shared R: f32[3]\n  cta.copy(S, A)\n  cta.sync()\n"
                 "  cta.max(R, S%s)\n  cta.copy(B, R)\n}\n", forced ? ", variant=shared" : "");
        tilec_open(&ctx);
        k = lower(ctx, &p, src, (tilec_target){TILEC_BACKEND_SIM, NULL, 32}, true);
        assert_string_equal(find(k, LS_OP).items[2]->variant, forced ? "shared" : "rows");
        sh = find(k, LS_SHFL);
        assert_true(sh.n >= (forced ? 4 : 1));
        lp_stmt *bad = (lp_stmt *)sh.items[forced ? 3 : sh.n - 1];
        bad->width = 32;
        bad->lane_mask = 16;
        msg = simulate_err(ctx, p, k);
        if (!strstr(msg, "shuffle reads lane 16, which does not exist (the warp has 16 lanes)"))
            fail_msg("%s: %s", forced ? "shared" : "rows", msg);
        tilec_program_free(p);
        tilec_close(ctx);
    }
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
                                 "cols, rows, cta_tree, shared, sequential, smem_tree"));
    free(text);
    free(diag);
    text = explain("kernel k(A: f32[2, 4, 64] global, B: f32[2, 4] global) threads=256 {\n"
                   "  warpgroup.max(B[warpgroup_id], A[warpgroup_id])\n}\n", hip, &st, &diag);
    assert_int_equal(st, TILEC_ERR_DISPATCH);
    assert_non_null(strstr(diag, "no variant can lower this max on hip gfx90a, warp size 64; every variant was rejected:"));
    assert_non_null(strstr(diag, "target_scope     no: warpgroup scope needs a barrier of 128 threads, which HIP does not have"));
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
    assert_non_null(strstr(text, "  line 6: cta.sum(Bs, As, axes=(-1))\n    4 outputs of 8 elements; the shared variant's groups of 8 lanes\n"));
    assert_non_null(strstr(text, "    * rows        priority 24  chosen\n"));
    assert_non_null(strstr(text, "      cols        priority 24  rejected\n"));
    assert_non_null(strstr(text, "        cheapest         no: the cost model puts rows first: rows about "));
    assert_non_null(strstr(text, "    cost model (cycles alone / four to a multiprocessor; counts for one instance):\n    * rows "));
    assert_non_null(strstr(text, "      shared      priority 10  applies (a higher one won)\n"));
    assert_non_null(strstr(text, "        forced           no: chosen only when forced with variant=smem_tree (it needs a "
                                 "barrier per level)\n"));
    free(text);
    free(diag);
}

/* ---- the cost model: its choices and its counts -------------------------------------------- */

/* A program that copies A to a shared tile S (its layout given), reduces it over `axes` into
 * R and copies R out; with ws 0 the CUDA default (32). */
static void tile_prog(char *src, size_t n, const char *shape, const char *out, int threads, const char *strides,
                      const char *op_args) {
    snprintf(src, n,
             "kernel k(A: f32[%s] global, B: f32[%s] global) threads=%d {\n"
             "  shared S: f32[%s]%s\n  shared R: f32[%s]\n  cta.copy(S, A)\n  cta.sync()\n"
             "  cta.sum(R, S, %s)\n  cta.sync()\n  cta.copy(B, R)\n}\n",
             shape, out, threads, shape, strides, out, op_args);
}

/* What a lowering did with the reduction (the kernel's third statement). */
typedef struct shape_seen {
    char variant[32];
    int src_vloads, src_vec; /* vector loads of S, and the widest */
    int src_loads;           /* scalar loads of S */
    int shfl, widest_shfl;
    int barriers;
} shape_seen;

static void count_src_loads(const lp_expr *e, int *n) {
    if (!e) return;
    if (e->kind == LX_LOAD && strcmp(e->buf->name, "S") == 0) (*n)++;
    count_src_loads(e->a, n);
    count_src_loads(e->b, n);
    count_src_loads(e->c, n);
}

static void see(const lp_stmt *st, int depth, void *arg) {
    (void)depth;
    shape_seen *v = arg;
    if (st->kind == LS_VLOAD && strcmp(st->buf->name, "S") == 0) {
        v->src_vloads++;
        if (st->vec > v->src_vec) v->src_vec = st->vec;
    }
    if (st->kind == LS_ASSIGN) count_src_loads(st->a, &v->src_loads);
    if (st->kind == LS_SHFL) {
        v->shfl++;
        if (st->width > v->widest_shfl) v->widest_shfl = st->width;
    }
    if (st->kind == LS_BARRIER) v->barriers++;
}

static shape_seen lowered_shape(const char *src, int ws) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    tilec_target t = {ws == 64 ? TILEC_BACKEND_HIP : TILEC_BACKEND_CUDA, ws == 64 ? "gfx90a" : "sm_90", 0};
    lp_kernel *k = lower(ctx, &p, src, t, true);
    shape_seen v = {0};
    found ops = find(k, LS_OP);
    assert_true(ops.n >= 3);
    snprintf(v.variant, sizeof v.variant, "%s", ops.items[2]->variant);
    /* only the statement's own part: between its marker and the next one */
    const lp_block *b = &k->body;
    int i = 0;
    while (i < b->n && b->items[i] != ops.items[2]) i++;
    for (i++; i < b->n && b->items[i]->kind != LS_OP; i++) {
        see(b->items[i], 0, &v);
        lp_visit(&b->items[i]->body, see, &v);
        lp_visit(&b->items[i]->orelse, see, &v);
    }
    tilec_program_free(p);
    tilec_close(ctx);
    return v;
}

/* The lowering the model picks for the benchmark's target tiles (f32; docs/performance.md,
 * "Tile results"), from the loop IR: a regression of the model's choice shows here before
 * any benchmark runs. */
static void test_model_choices(void **state) {
    (void)state;
    char src[1024];
    for (int ws = 32; ws <= 64; ws *= 2) {
        /* 32x32 rows at 128 threads: groups of fewer lanes than a warp (CUB's WarpReduce<4>
         * class), 16-byte loads, a shorter butterfly */
        tile_prog(src, sizeof src, "32, 32", "32", 128, "", "axes=(1)");
        shape_seen v = lowered_shape(src, ws);
        if (strcmp(v.variant, "rows") || v.src_vec != 4 || v.src_loads || v.shfl == 0 || v.widest_shfl >= 32)
            fail_msg("ws %d: %s, vec %d, %d scalar loads, %d shuffles of width <= %d\n%s", ws, v.variant, v.src_vec,
                     v.src_loads, v.shfl, v.widest_shfl, src);
        /* 64x128 columns at 256 threads: at warp size 32 a thread a column group, 8-byte
         * loads, slices meeting in shared slots (a barrier of the statement's own, besides
         * the one after it). At 64 both families reach the shared-memory floor (32 KiB,
         * 256 wavefronts) and the tie goes to rows with a lane an output: the same thread
         * a column, no lanes down a column (no shuffle) */
        tile_prog(src, sizeof src, "64, 128", "128", 256, "", "axes=(0)");
        v = lowered_shape(src, ws);
        bool cols_ok = ws == 32 ? !strcmp(v.variant, "cols") && v.src_vloads > 0 && v.barriers >= 2
                                : !strcmp(v.variant, "cols") || !strcmp(v.variant, "rows");
        if (!cols_ok || v.shfl)
            fail_msg("ws %d: %s, %d vector loads, %d shuffles, %d barriers\n%s", ws, v.variant, v.src_vloads, v.shfl,
                     v.barriers, src);
        /* 32x32 columns at 128 threads: a thread a column, never lanes down a column */
        tile_prog(src, sizeof src, "32, 32", "32", 128, "", "axes=(0)");
        v = lowered_shape(src, ws);
        if (strcmp(v.variant, "cols") || v.shfl) fail_msg("ws %d: %s, %d shuffles\n%s", ws, v.variant, v.shfl, src);
        /* the padded 64x128 (strides=(129, 1)): rows start 129 floats apart, so no 8- or
         * 16-byte load is aligned; whatever the choice, and forced either way, S is read
         * an element at a time */
        static const char *const forced[] = {"axes=(1)", "axes=(1), variant=rows", "axes=(1), variant=cols"};
        for (size_t f = 0; f < 3; f++) {
            tile_prog(src, sizeof src, "64, 128", "64", 256, " strides=(129, 1)", forced[f]);
            v = lowered_shape(src, ws);
            if (v.src_vloads || v.src_loads == 0 || !strcmp(v.variant, "shared"))
                fail_msg("ws %d: %s, %d vector loads of S\n%s", ws, v.variant, v.src_vloads, src);
        }
        /* the same tile dense: rows with 16-byte loads */
        tile_prog(src, sizeof src, "64, 128", "64", 256, "", "axes=(1)");
        v = lowered_shape(src, ws);
        if (strcmp(v.variant, "rows") || v.src_vec != 4 || v.src_loads)
            fail_msg("ws %d: %s, vec %d\n%s", ws, v.variant, v.src_vec, src);
        /* the row-sum example's 4x8 tile at 32 threads: a lane a row, 16-byte loads, no shuffle */
        tile_prog(src, sizeof src, "4, 8", "4", 32, "", "axes=(1)");
        v = lowered_shape(src, ws);
        if (strcmp(v.variant, "rows") || v.src_vec != 4 || v.shfl)
            fail_msg("ws %d: %s, vec %d, %d shuffles\n%s", ws, v.variant, v.src_vec, v.shfl, src);
    }
}

/* The query and every candidate of the reduction (statement 4, after two declarations) of src, at warp size ws. */
static int plans_of(const char *src, int ws, int orient, dsp_tile_plan *out, tilec_program **pp, tilec_ctx **cp,
                    dsp_query *q) {
    tilec_open(cp);
    assert_int_equal(tilec_parse(*cp, "t.tile", src, strlen(src), pp), TILEC_OK);
    static dsp_target t;
    char why[200];
    tilec_target in = {ws == 64 ? TILEC_BACKEND_HIP : TILEC_BACKEND_CUDA, ws == 64 ? "gfx90a" : "sm_90", 0};
    assert_true(dsp_target_resolve(&in, &t, why, sizeof why));
    dsp_query_init(q, &t, (*pp)->kernels[0], (*pp)->kernels[0]->stmts[4]);
    return dsp_tile_plans(q, orient, out, DSP_MAX_PLANS);
}

static const dsp_tile_plan *plan_with(const dsp_tile_plan *ps, int n, int lanes, int vec, int accs, int slices) {
    for (int i = 0; i < n; i++)
        if (ps[i].lanes == lanes && ps[i].vec == vec && ps[i].accs == accs && ps[i].slices == slices) return &ps[i];
    fail_msg("no plan of %d lanes, vec %d, %d accumulators, %d slices among %d", lanes, vec, accs, slices, n);
    return NULL;
}

/* The wavefronts the model counts, against counts worked out by hand from the layout
 * (32 banks of 4 bytes; a 16-byte request served 8 lanes at a time): a dense f32 tile of
 * 4 KiB read without conflicts is 32 wavefronts at either warp size; 32 lanes down one
 * column of a 32-wide tile are 32 words of one bank each load; the padding of
 * strides=(129, 1) turns that 32-way conflict into none. */
static void test_model_wavefronts(void **state) {
    (void)state;
    static dsp_tile_plan ps[DSP_MAX_PLANS];
    char src[1024];
    tilec_program *p;
    tilec_ctx *ctx;
    dsp_query q;
    for (int ws = 32; ws <= 64; ws *= 2) {
        /* 32x32 rows, 128 threads, 8 lanes a row, 16-byte loads: a load of a warp is ws/8
         * rows of 128 bytes, one wavefront each; 4 KiB in all */
        tile_prog(src, sizeof src, "32, 32", "32", 128, "", "axes=(1)");
        int n = plans_of(src, ws, DSP_ALONG_REDUCED, ps, &p, &ctx, &q);
        const dsp_tile_plan *r = plan_with(ps, n, 8, 4, 1, 1);
        assert_int_equal(r->wavefronts, 32);
        assert_int_equal(r->loads, 32 * 32 / (ws * 4)); /* every lane loads once */
        assert_int_equal(r->shuffles, (128 / ws) * 2 * 3); /* 2 turns of 3 xor steps per warp */
        assert_true(r->cycles1 > 0 && r->cycles4 >= r->cycles1);
        /* a lane a row, 4-byte loads: 32 lanes (the rest have no row) 32 words apart, all
         * in one bank: each of the 1024 words a wavefront of its own */
        r = plan_with(ps, n, 1, 1, 1, 1);
        assert_int_equal(r->wavefronts, 32 * 32);
        /* a padded row adds a word: the same plan is conflict-free, 32 words a wavefront */
        tilec_program_free(p);
        tilec_close(ctx);
        tile_prog(src, sizeof src, "32, 32", "32", 128, " strides=(33, 1)", "axes=(1)");
        n = plans_of(src, ws, DSP_ALONG_REDUCED, ps, &p, &ctx, &q);
        r = plan_with(ps, n, 1, 1, 1, 1);
        assert_int_equal(r->wavefronts, 32 * 32 / 32); /* 1024 words, 32 a wavefront */
        assert_false(dsp_vec_ok(&q, DSP_ALONG_REDUCED, 2)); /* 33 floats a row: no 8-byte loads */
        assert_true(dsp_vec_ok(&q, DSP_ALONG_REDUCED, 1));
        tilec_program_free(p);
        tilec_close(ctx);
        /* 32x32 columns walked down by 32 lanes (the old lowering's order): each load is 32
         * words of one bank */
        tile_prog(src, sizeof src, "32, 32", "32", 128, "", "axes=(0)");
        n = plans_of(src, ws, DSP_ALONG_REDUCED, ps, &p, &ctx, &q);
        r = plan_with(ps, n, 32, 1, 1, 1);
        assert_int_equal(r->wavefronts, r->loads * 32 * (ws / 32));
        assert_false(dsp_vec_ok(&q, DSP_ALONG_REDUCED, 2)); /* the reduced axis is not contiguous */
        tilec_program_free(p);
        tilec_close(ctx);
        n = plans_of(src, ws, DSP_ALONG_KEPT, ps, &p, &ctx, &q);
        r = plan_with(ps, n, 1, 1, 1, 1); /* a thread a column: each load a row of 128 bytes */
        assert_int_equal(r->wavefronts, 32 * 32 / 32);
        assert_true(dsp_vec_ok(&q, DSP_ALONG_KEPT, 4));
        tilec_program_free(p);
        tilec_close(ctx);
        /* 64x128 rows, cols plan with 4 slices (256 threads, every one busy): thread t reads
         * output t mod 64 at rows t / 64, + 4, …: dense, 32 words of one bank a load;
         * padded to 129, 32 banks */
        for (int pad = 0; pad < 2; pad++) {
            tile_prog(src, sizeof src, "64, 128", "64", 256, pad ? " strides=(129, 1)" : "", "axes=(1)");
            n = plans_of(src, ws, DSP_ALONG_KEPT, ps, &p, &ctx, &q);
            r = plan_with(ps, n, 1, 1, 1, 4);
            assert_int_equal(r->loads, (256 / ws) * 32);
            assert_int_equal(r->wavefronts, pad ? 64 * 128 / 32 : 64 * 128);
            assert_int_equal(r->barriers, 1);
            tilec_program_free(p);
            tilec_close(ctx);
        }
    }
    /* f16, 8 to a 16-byte load; f64, 2: the same 4 KiB of rows, 32 wavefronts */
    static const char *const wide[] = {
        "kernel k(A: f16[32, 64] global, B: f16[32] global) threads=128 {\n  shared S: f16[32, 64]\n"
        "  shared R: f16[32]\n  cta.copy(S, A)\n  cta.sync()\n  cta.sum(R, S, axes=(1))\n  cta.copy(B, R)\n}\n",
        "kernel k(A: f64[32, 16] global, B: f64[32] global) threads=128 {\n  shared S: f64[32, 16]\n"
        "  shared R: f64[32]\n  cta.copy(S, A)\n  cta.sync()\n  cta.sum(R, S, axes=(1))\n  cta.copy(B, R)\n}\n",
    };
    for (int w = 0; w < 2; w++) {
        int n = plans_of(wide[w], 32, DSP_ALONG_REDUCED, ps, &p, &ctx, &q);
        const dsp_tile_plan *r = plan_with(ps, n, 8, w ? 2 : 8, 1, 1);
        assert_int_equal(r->wavefronts, 32);
        assert_false(dsp_vec_ok(&q, DSP_ALONG_REDUCED, w ? 4 : 16));
        tilec_program_free(p);
        tilec_close(ctx);
    }
}

/* `tilec explain` gives the model's estimate: the short form's reason names the cycles of
 * both families, and so does the verbose table's verdict of the one that lost. */
/* The model's cheapest cols plan (512 slices, 8 KB of slots) does not fit beside 231 KB of
 * the kernel's own shared memory on sm_90: cols lowers the cheapest plan without slots
 * instead of declining (which fell to cta_tree, and left the declined plan's registers
 * declared and unused: nvcc -Werror), also when forced. */
static void test_slots_that_do_not_fit(void **state) {
    (void)state;
    for (int forced = 0; forced < 2; forced++) {
        char src[1024];
        snprintf(src, sizeof src,
                 "kernel k(A: f32[13000, 4] global, B: f32[4] global) threads=1024 {\n  shared S: f32[13000, 4]\n"
                 "  shared R: f32[4]\n  shared P: f32[5900]\n  cta.copy(S, A)\n  cta.fill(P, 0)\n  cta.sync()\n"
                 "  cta.sum(R, S, axes=(0)%s)\n  cta.sync()\n  cta.copy(B, R)\n}\n", forced ? ", variant=cols" : "");
        tilec_ctx *ctx;
        tilec_open(&ctx);
        tilec_program *p;
        assert_int_equal(tilec_parse(ctx, "fit.tile", src, strlen(src), &p), TILEC_OK);
        char *cu = NULL;
        assert_int_equal(tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &cu, NULL), TILEC_OK);
        if (!strstr(cu, "[cols]") || strstr(cu, "cols_slots")) fail_msg("forced=%d:\n%s", forced, cu);
        tilec_free(cu);
        tilec_program_free(p);
        tilec_close(ctx);
    }
}

static void test_explain_shows_cycles(void **state) {
    (void)state;
    char src[1024];
    tile_prog(src, sizeof src, "32, 32", "32", 128, "", "axes=(1)");
    tilec_target cuda = {TILEC_BACKEND_CUDA, NULL, 0};
    for (unsigned flags = 0; flags <= TILEC_EXPLAIN_SHORT; flags += TILEC_EXPLAIN_SHORT) {
        tilec_ctx *ctx;
        tilec_open(&ctx);
        tilec_program *p;
        assert_int_equal(tilec_parse(ctx, "t.tile", src, strlen(src), &p), TILEC_OK);
        char *text = NULL;
        assert_int_equal(tilec_explain(p, &cuda, flags, &text), TILEC_OK);
        const char *need = flags ? "line 6: cta.sum(R, S, axes=(1)) -> rows\n" : "    * rows        priority 24  chosen\n";
        if (!strstr(text, need) || !strstr(text, "the cost model puts rows first: rows about ") ||
            !strstr(text, " cycles (alone, and four to a multiprocessor), cols ") ||
            (flags && !strstr(text, "; the cost model's estimate: ")))
            fail_msg("flags %u:\n%s", flags, text);
        tilec_free(text);
        tilec_program_free(p);
        tilec_close(ctx);
    }
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

/* ---- 32-bit indices: an interval check of the loop IR, written here -------------------- */

/* The values an integer expression can take, or unknown (a load, an atomic's result). */
__extension__ typedef __int128 i128; /* room for every product of two 64-bit bounds */

typedef struct span_t {
    bool known;
    i128 lo, hi;
} span_t;

typedef struct ranges {
    const lp_kernel *k;
    span_t reg[4096];
    char where[256]; /* the first 32-bit value found that can overflow */
} ranges;

static span_t sp(i128 lo, i128 hi) { return (span_t){true, lo, hi}; }

static i128 min4(i128 a, i128 b, i128 c, i128 d) {
    i128 m = a < b ? a : b;
    m = m < c ? m : c;
    return m < d ? m : d;
}

static i128 max4(i128 a, i128 b, i128 c, i128 d) {
    i128 m = a > b ? a : b;
    m = m > c ? m : c;
    return m > d ? m : d;
}

static span_t eval_span(ranges *R, const lp_expr *e);

static void note_overflow(ranges *R, const lp_expr *e, span_t v) {
    if (R->where[0] || !v.known || (e->type != LP_I32 && e->type != LP_U32)) return;
    i128 lo = e->type == LP_I32 ? INT32_MIN : 0, hi = e->type == LP_I32 ? INT32_MAX : UINT32_MAX;
    if (v.lo < lo || v.hi > hi)
        snprintf(R->where, sizeof R->where, "a %s expression (kind %d, op %d) reaches [%lld, %lld]",
                 lp_type_name(e->type), (int)e->kind, (int)e->op, (long long)v.lo, (long long)v.hi);
}

static span_t eval_span(ranges *R, const lp_expr *e) {
    const lp_kernel *k = R->k;
    if (lp_is_float(e->type)) return (span_t){0};
    span_t a = e->a ? eval_span(R, e->a) : (span_t){0}, b = e->b ? eval_span(R, e->b) : (span_t){0}, v = {0};
    switch (e->kind) {
    case LX_CONST: return sp(e->i, e->i);
    case LX_SPECIAL:
        switch (e->special) {
        case LP_TID: return sp(0, k->threads - 1);
        case LP_CTA: return sp(0, k->grid - 1);
        case LP_LANE: return sp(0, k->warp_size - 1);
        default: return sp(0, (k->threads + k->warp_size - 1) / k->warp_size - 1);
        }
    case LX_REG: return e->reg < 4096 ? R->reg[e->reg] : (span_t){0};
    case LX_CAST: v = a; break;
    case LX_SELECT: {
        span_t c = eval_span(R, e->c);
        if (b.known && c.known) v = sp(b.lo < c.lo ? b.lo : c.lo, b.hi > c.hi ? b.hi : c.hi);
        break;
    }
    case LX_UNARY: v = e->op == LO_NOT ? sp(0, 1) : a.known ? sp(-a.hi, -a.lo) : v; break;
    case LX_BINARY:
        if (e->op >= LO_LT && e->op <= LO_OR) return sp(0, 1);
        if (!a.known || !b.known) break;
        switch (e->op) {
        case LO_ADD: v = sp(a.lo + b.lo, a.hi + b.hi); break;
        case LO_SUB: v = sp(a.lo - b.hi, a.hi - b.lo); break;
        case LO_MUL: v = sp(min4(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi),
                            max4(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)); break;
        case LO_DIV: v = b.lo > 0 && a.lo >= 0 ? sp(a.lo / b.hi, a.hi / b.lo) : (span_t){0}; break;
        case LO_REM: v = b.lo > 0 && a.lo >= 0 ? sp(0, b.hi - 1) : (span_t){0}; break;
        case LO_MAX: v = sp(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi); break;
        case LO_MIN: v = sp(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi); break;
        default: break;
        }
        break;
    default: break; /* loads */
    }
    note_overflow(R, e, v);
    return v;
}

static void widen(span_t *r, span_t v) {
    if (!v.known) { *r = (span_t){0}; return; }
    if (!r->known) { *r = v; return; }
    if (v.lo < r->lo) r->lo = v.lo;
    if (v.hi > r->hi) r->hi = v.hi;
}

static void refine(ranges *R, const lp_expr *c) {
    if (c->kind != LX_BINARY) return;
    if (c->op == LO_AND) {
        refine(R, c->a);
        refine(R, c->b);
    } else if (c->op == LO_LT && c->a->kind == LX_REG && c->a->reg < 4096 && R->reg[c->a->reg].known) {
        span_t b = eval_span(R, c->b);
        span_t *r = &R->reg[c->a->reg];
        if (b.known && b.hi - 1 < r->hi) r->hi = b.hi - 1;
    }
}

static void walk_spans(ranges *R, const lp_block *b) {
    for (int i = 0; i < b->n; i++) {
        const lp_stmt *st = b->items[i];
        switch (st->kind) {
        case LS_FOR: {
            span_t lo = eval_span(R, st->a), hi = eval_span(R, st->b), step = eval_span(R, st->step);
            if (lo.known && hi.known && step.known) {
                /* inside: [lo, hi - 1]; the last increment takes it to hi - 1 + step */
                i128 last = hi.hi - 1 + step.hi > lo.hi ? hi.hi - 1 + step.hi : lo.hi;
                lp_type t = R->k->regs[st->reg].type;
                if (!R->where[0] && (t == LP_I32 || t == LP_U32) && last > (t == LP_I32 ? INT32_MAX : UINT32_MAX))
                    snprintf(R->where, sizeof R->where, "%s loop register %s%d reaches %lld after its last step",
                             lp_type_name(t), R->k->regs[st->reg].name, st->reg, (long long)last);
                R->reg[st->reg] = sp(lo.lo, hi.hi - 1 > lo.lo ? hi.hi - 1 : lo.lo);
            } else {
                R->reg[st->reg] = (span_t){0};
            }
            walk_spans(R, &st->body);
            break;
        }
        case LS_ASSIGN:
            if (!lp_is_float(R->k->regs[st->reg].type)) widen(&R->reg[st->reg], eval_span(R, st->a));
            break;
        case LS_IF: { /* under `reg < bound` (and conjunctions of those) the register is below it */
            eval_span(R, st->a);
            span_t saved[4096];
            memcpy(saved, R->reg, sizeof saved);
            refine(R, st->a);
            walk_spans(R, &st->body);
            memcpy(R->reg, saved, sizeof saved);
            walk_spans(R, &st->orelse);
            break;
        }
        case LS_STORE: case LS_VLOAD: case LS_VSTORE: case LS_ATOMIC_ADD:
            if (st->a) eval_span(R, st->a);
            if (st->b) eval_span(R, st->b);
            if (st->kind == LS_ATOMIC_ADD || st->kind == LS_VLOAD) /* what memory holds */
                for (int v = 0; v < (st->vec > 1 ? st->vec : 1); v++) R->reg[st->reg + v] = (span_t){0};
            break;
        default: break;
        }
    }
}

/* Rows of 2^31 - 256 ... 2^31 - 1 elements, and tensors around them, through every variant
 * that takes them: no 32-bit index or offset of the loop IR can pass INT32_MAX, the last
 * increment of a loop included. (The intervals are this test's own; registers assigned
 * in loops are widened by each assignment, a sound bound for the increasing indices the
 * lowerings use.) */
static void test_index_types_fit(void **state) {
    (void)state;
    static const int64_t lens[] = {2147483647, 2147483646, 2147483392, 2147483391, 2147483648, 1073741824};
    static const struct { const char *shape, *out, *stmt, *dtype; } cases[] = {
        {"%lld", "1", "  cta.sum(B, A, axes=(0), variant=shared)\n", "f16"},
        {"%lld", "1", "  cta.max(B, A, axes=(0), variant=sequential)\n", "f32"},
        {"%lld", "1", "  cta.sum(B, A, axes=(0), variant=cta_tree)\n", "f16"},
        {"%lld", "1", "  cta.min(B, A, axes=(0), variant=smem_tree)\n", "f32"},
        {"%lld", "1", "  cta.copy(C, A)\n", "f16"},
        {"%lld", "1", "  cta.copy(C, A)\n", "f32"},
        {"%lld", "1", "  grid.sum(B, A, axes=(0), variant=grid_rows)\n", "f16"},
        {"%lld", "1", "  grid.max(B, A, axes=(0), variant=grid_rows)\n", "f32"},
        {"%lld", "1", "  grid.sum(B, A, axes=(0), variant=grid_rows)\n", "f64"},
        {"2, %lld", "2", "  grid.sum(B, A, axes=(1), variant=grid_rows)\n", "f16"},
        {"2, %lld", "2", "  grid.sum(B, A, axes=(1), variant=grid_rows)\n", "f32"},
        {"%lld, 2", "2", "  grid.sum(B, A, axes=(0), variant=grid_cols)\n", "f32"},
        {"%lld, 2", "2", "  grid.sum(B, A, axes=(0), variant=grid_cols)\n", "f16"},
        {"%lld, 2", "%lld", "  grid.sum(B, A, axes=(1), variant=grid_rows)\n", "f32"},
        {"%lld, 2", "%lld", "  grid.max(B, A, axes=(1), variant=grid_rows)\n", "f16"},
        {"2, %lld", "%lld", "  grid.max(B, A, axes=(0), variant=grid_cols)\n", "f32"},
        {"%lld, 2", "%lld", "  cta.max(B, A, axes=(1), variant=shared)\n", "f16"},
    };
    int lowered = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t n = 0; n < sizeof lens / sizeof lens[0]; n++)
            for (int ws = 32; ws <= 64; ws *= 2) {
                char shape[64], outs[64], src[512];
                snprintf(shape, sizeof shape, cases[c].shape, (long long)lens[n]);
                snprintf(outs, sizeof outs, cases[c].out, (long long)lens[n]);
                snprintf(src, sizeof src,
                         "kernel k(A: %s[%s] global, B: %s[%s] global, C: %s[%s] global) threads=256 {\n%s}\n",
                         cases[c].dtype, shape, cases[c].dtype, outs, cases[c].dtype, shape, cases[c].stmt);
                tilec_ctx *ctx;
                tilec_open(&ctx);
                tilec_program *p;
                assert_int_equal(tilec_parse(ctx, "t.tile", src, strlen(src), &p), TILEC_OK);
                dsp_target dt;
                char why[200];
                assert_true(dsp_target_resolve(&(tilec_target){ws == 64 ? TILEC_BACKEND_HIP : TILEC_BACKEND_CUDA, ws == 64 ? "gfx90a" : "sm_90", 0}, &dt, why, sizeof why));
                tilec_status st = TILEC_OK;
                lp_kernel *k = tilec_verify(p, &(tilec_verify_options){dt.warp_size}) == TILEC_OK
                                   ? dsp_lower_kernel(p, p->kernels[0], &dt, &st) : NULL;
                if (!k) { /* a variant that does not take the shape */
                    tilec_program_free(p);
                    tilec_close(ctx);
                    continue;
                }
                lowered++;
                ranges *R = calloc(1, sizeof *R);
                R->k = k;
                walk_spans(R, &k->body);
                if (R->where[0]) fail_msg("warp size %d: %s in\n%s", ws, R->where, src);
                free(R);
                tilec_program_free(p);
                tilec_close(ctx);
            }
    assert_true(lowered >= 100);
}

/* Wide global accesses (LS_VLOAD / LS_VSTORE) in a block tree: counted apart when they sit
 * under a run-time alignment test (an LS_IF on LX_ALIGNED), the checked path. */
typedef struct wide_seen {
    int unchecked, checked, loads, stores;
} wide_seen;

static void count_wide(const lp_block *b, bool under_test, wide_seen *w) {
    for (int i = 0; i < b->n; i++) {
        const lp_stmt *st = b->items[i];
        if ((st->kind == LS_VLOAD || st->kind == LS_VSTORE) && st->buf->space == TILEC_SPACE_GLOBAL) {
            if (under_test) w->checked++;
            else w->unchecked++;
            if (st->kind == LS_VLOAD) w->loads++;
            else w->stores++;
        }
        bool test = st->kind == LS_IF && st->a && st->a->kind == LX_ALIGNED;
        count_wide(&st->body, under_test || test, w);
        count_wide(&st->orelse, under_test, w);
    }
}

/* A target told that its pointers may not be 16-byte aligned (the JIT's and
 * tilec_run_kernel's plans for such pointers: a torch view with a storage offset, say)
 * gets no wide access to a global parameter outside a run-time alignment test, in every
 * statement that reads or writes global memory in vectors: copy, map (its destination and
 * its operands), the rows and cols reductions, and a fragment's copies. The same kernels
 * for aligned pointers do use vectors (else this would prove nothing). */
static void test_unaligned_pointers(void **state) {
    (void)state;
    /* each kernel's wide accesses for aligned pointers: loads, and stores where it writes
     * global memory from registers in vectors (the reductions store one value a row) */
    static const bool stores[] = {true, true, false, false, true, true};
    static const char *const srcs[] = {
        "kernel k(X: bf16[64, 1024] global, Y: bf16[64, 1024] global) threads=128 grid=64 {\n"
        "  cta.map(Y[cta_id], X[cta_id] * 2)\n}\n",
        "kernel k(X: f32[8, 256] global, Y: f32[8, 256] global) threads=128 {\n"
        "  shared S: f32[8, 256]\n  cta.copy(S, X)\n  cta.sync()\n  cta.copy(Y, S)\n}\n",
        "kernel k(X: bf16[64, 1024] global, Y: f32[64] global) threads=256 {\n"
        "  cta.sum(Y, X, axes=(-1))\n}\n",
        "kernel k(X: f32[256, 64] global, Y: f32[64] global) threads=256 {\n"
        "  cta.max(Y, X, axes=(0))\n}\n",
        "kernel k(X: bf16[4, 1024] global, Y: bf16[4, 1024] global) threads=32 {\n"
        "  local F: bf16[1024] layout=linear(reg=((1), (2), (4), (256), (512)), lane=((8), (16), (32), (64), (128)))\n"
        "  warp.copy(F, X[0])\n  warp.copy(Y[1], F)\n}\n",
        /* a fragment's copies from and to rows at a stride: each run of 8 is consecutive */
        "kernel k(X: bf16[4, 1024] global, Y: bf16[4, 1024] global) threads=32 {\n"
        "  local F: bf16[2, 256] layout=linear(reg=((0, 1), (0, 2), (0, 4), (1, 0)), lane=((0, 8), (0, 16), (0, 32), (0, 64), (0, 128)))\n"
        "  warp.copy(F, X[1:3, 256:512])\n  warp.copy(Y[0:2, 8:264], F)\n}\n",
    };
    for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
        for (int unaligned = 0; unaligned < 2; unaligned++) {
            tilec_ctx *ctx;
            tilec_open(&ctx);
            tilec_program *p;
            assert_int_equal(tilec_parse(ctx, "t.tile", srcs[i], strlen(srcs[i]), &p), TILEC_OK);
            dsp_target dt;
            char why[200];
            assert_true(dsp_target_resolve(&(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &dt, why, sizeof why));
            dt.unaligned = unaligned;
            assert_int_equal(tilec_verify(p, &(tilec_verify_options){dt.warp_size}), TILEC_OK);
            lp_kernel *k = dsp_lower_kernel(p, p->kernels[0], &dt, NULL);
            if (!k) fail_msg("kernel %zu: lowering failed:\n%s", i, tilec_diag_text(ctx));
            wide_seen w = {0};
            count_wide(&k->body, false, &w);
            if (unaligned && w.unchecked) fail_msg("kernel %zu: %d wide global accesses for unaligned pointers", i, w.unchecked);
            if (!unaligned && (w.loads == 0 || (stores[i] && w.stores == 0)))
                fail_msg("kernel %zu: %d wide global loads and %d stores for aligned pointers", i, w.loads, w.stores);
            tilec_program_free(p);
            tilec_close(ctx);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_sum_shared_shape),
        cmocka_unit_test(test_index_types_fit),
        cmocka_unit_test(test_partial_groups_shrink),
        cmocka_unit_test(test_planted_missing_barrier),
        cmocka_unit_test(test_planted_wrong_width),
        cmocka_unit_test(test_planted_out_of_bounds),
        cmocka_unit_test(test_atomic_counter),
        cmocka_unit_test(test_planted_missing_sync),
        cmocka_unit_test(test_planted_divergent_barrier),
        cmocka_unit_test(test_uninitialised_shared_read),
        cmocka_unit_test(test_rejection_reasons),
        cmocka_unit_test(test_model_choices),
        cmocka_unit_test(test_model_wavefronts),
        cmocka_unit_test(test_explain_shows_cycles),
        cmocka_unit_test(test_slots_that_do_not_fit),
        cmocka_unit_test(test_numeric),
        cmocka_unit_test(test_unaligned_pointers),
        cmocka_unit_test(test_repeated_barriers_dropped),
    };
    return cmocka_run_group_tests_name("lowering and simulator checks", tests, NULL, NULL);
}
