/*
 * test_cluster.c — thread-block clusters below the oracle's reach (tests/oracle/test_clusters.py
 * runs every op and dtype against numpy): the builder and the printer, NVRTC compiling
 * cluster kernels for sm_90 (16 CTAs: sm_90's non-portable size) and hiprtc's target
 * refusing them, the launch info, and the simulator's checks of distributed shared memory
 * on loop IR written by hand: a peer's shared memory read before the cluster barrier, a
 * rank outside the cluster, a cluster barrier one CTA never reaches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "support.h"

#include "../src/runtime/rtc.h"
#include "../src/runtime/sim.h"

static const char *const rows_src =
    "kernel rows(A: f32[8, 3, 40] global, B: f32[2, 3] global, I: i64[2, 3] global) threads=96 grid=8 cluster=(4) {\n"
    "  shared S: f32[3, 40]\n"
    "  shared M: f32[3]\n"
    "  cta.copy(S, A[cta_id])\n"
    "  cluster.sync()\n"
    "  cluster.max(M, S, axes=(1))\n"
    "  cluster.argmax(B[cluster_id], I[cluster_id], S, axes=(1))\n"
    "}\n";

/* The builder makes what the parser makes: the header's cluster, the scope, both ids. */
static void test_builder_and_printer(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
    tilec_kernel *k;
    assert_int_equal(tilec_kernel_new(p, "k", false, 64, 8, &k), TILEC_OK);
    assert_int_equal(tilec_kernel_cluster(k), 0);
    assert_int_equal(tilec_kernel_set_cluster(k, 17), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "cluster 17 is out of range (1 to 16 CTAs, or 0 for none)"));
    assert_int_equal(tilec_kernel_set_cluster(k, 2), TILEC_OK);
    assert_int_equal(tilec_kernel_cluster(k), 2);
    tilec_buffer *A, *W, *B, *S;
    int64_t a[] = {8, 64}, w[] = {2, 64}, b[] = {4}, s[] = {64};
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 2, a, TILEC_SPACE_GLOBAL, &A), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "W", TILEC_F32, 2, w, TILEC_SPACE_GLOBAL, &W), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "B", TILEC_F32, 1, b, TILEC_SPACE_GLOBAL, &B), TILEC_OK);
    assert_int_equal(tilec_kernel_alloc(k, "S", TILEC_SPACE_SHARED, TILEC_F32, 1, s, NULL, &S), TILEC_OK);
    tilec_region rs = tilec_region_whole(S), ra = tilec_region_whole(A), rw = tilec_region_whole(W),
                 rb = tilec_region_whole(B);
    ra.nindex = 1;
    ra.index[0] = (tilec_index){.kind = TILEC_INDEX_ID, .id = TILEC_SCOPE_CTA};
    rw.nindex = 1;
    rw.index[0] = (tilec_index){.kind = TILEC_INDEX_RANK};
    rb.nindex = 1;
    rb.index[0] = (tilec_index){.kind = TILEC_INDEX_ID, .id = TILEC_SCOPE_CLUSTER};
    tilec_exec cta = {TILEC_SCOPE_CTA, -1}, cl = {TILEC_SCOPE_CLUSTER, -1};
    assert_int_equal(tilec_kernel_copy(k, cta, &rs, &ra), TILEC_OK);
    assert_int_equal(tilec_kernel_sync(k, cl), TILEC_OK);
    tilec_reduce_attrs at = tilec_reduce_attrs_default();
    at.axes[0] = 0;
    assert_int_equal(tilec_kernel_reduce(k, cl, TILEC_OP_SUM, &rb, &rs, &at), TILEC_OK);
    assert_int_equal(tilec_kernel_copy(k, cta, &rs, &rw), TILEC_OK);
    assert_int_equal(tilec_verify(p, NULL), TILEC_OK);
    char *text;
    size_t n;
    assert_int_equal(tilec_format(p, &text, &n), TILEC_OK);
    const char *want = "kernel k(A: f32[8, 64] global, W: f32[2, 64] global, B: f32[4] global) threads=64 grid=8 "
                       "cluster=(2) {\n  shared S: f32[64]\n  cta.copy(S, A[cta_id])\n  cluster.sync()\n"
                       "  cluster.sum(B[cluster_id], S, axes=(0))\n  cta.copy(S, W[cta_in_cluster])\n}\n";
    if (strcmp(text, want)) fail_msg("printed:\n%s\nwanted:\n%s", text, want);
    tilec_program *q; /* and the text parses back to the same program */
    assert_int_equal(tilec_parse(ctx, "k.tile", text, n, &q), TILEC_OK);
    assert_int_equal(tilec_kernel_cluster(tilec_program_kernel(q, 0)), 2);
    tilec_program_free(q);
    tilec_free(text);
    /* a func has no cluster */
    tilec_kernel *f;
    assert_int_equal(tilec_kernel_new(p, "f", true, 64, 1, &f), TILEC_OK);
    assert_int_equal(tilec_kernel_set_cluster(f, 2), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "a func has no cluster"));
    tilec_program_free(p);
    tilec_close(ctx);
}

/* NVRTC compiles cluster kernels for sm_90 (16 CTAs too); hiprtc's target refuses them
 * before any compiler runs; the launch info says the cluster. */
static void test_compile_and_refuse(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "rows.tile", rows_src, strlen(rows_src), &p), TILEC_OK);
    tilec_target cuda = {TILEC_BACKEND_CUDA, "sm_90", 32}, hip = {TILEC_BACKEND_HIP, "gfx90a", 0};
    tilec_launch_info info;
    assert_int_equal(tilec_launch_info_get(p, &cuda, NULL, &info), TILEC_OK);
    assert_int_equal(info.cluster, 4);
    assert_int_equal(info.grid, 8);
    char *src;
    size_t n;
    assert_int_equal(tilec_emit(p, &cuda, &src, &n), TILEC_OK);
    assert_non_null(strstr(src, "__cluster_dims__(4, 1, 1)"));
    assert_non_null(strstr(src, "barrier.cluster.arrive.release.aligned"));
    assert_non_null(strstr(src, "mapa.u64"));
    tilec_free(src);
    void *bin = NULL;
    assert_int_equal(tilec_compile(p, &hip, &bin, &n), TILEC_ERR_VERIFY);
    assert_non_null(strstr(tilec_diag_text(ctx), "HIP gfx90a has no thread-block clusters"));
    assert_null(bin);
    tilec_target old = {TILEC_BACKEND_CUDA, "sm_80", 32};
    assert_int_equal(tilec_emit(p, &old, &src, &n), TILEC_ERR_VERIFY);
    assert_non_null(strstr(tilec_diag_text(ctx), "CUDA sm_80 has no thread-block clusters"));
    if (!rtc_version(TILEC_BACKEND_CUDA)) {
        print_message("skipped the compiles: NVRTC is not installed here\n");
    } else {
        if (tilec_compile(p, &cuda, &bin, &n) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
        assert_true(n > 64);
        tilec_free(bin);
        static const char *const sixteen =
            "kernel s(A: bf16[32, 500] global, B: f32[2] global, L: bf16[2] global, V: f32[32] global) threads=64 "
            "grid=32 cluster=(16) {\n  shared S: bf16[500]\n  shared W: f32[1]\n  cta.copy(S, A[cta_id])\n"
            "  cluster.sync()\n  cluster.sum(B[cluster_id], S, axes=(0))\n  cluster.logsumexp(L[cluster_id], S, axes=(0))\n"
            "  cluster.var(W, S, axes=(0))\n  cta.copy(V[cta_id], W[0])\n}\n";
        tilec_program *q;
        assert_int_equal(tilec_parse(ctx, "s.tile", sixteen, strlen(sixteen), &q), TILEC_OK);
        if (tilec_compile(q, &cuda, &bin, &n) != TILEC_OK) fail_msg("16 CTAs: %s", tilec_diag_text(ctx));
        tilec_free(bin);
        tilec_target b = {TILEC_BACKEND_CUDA, "sm_120", 32}; /* 8, the portable size */
        assert_int_equal(tilec_compile(q, &b, &bin, &n), TILEC_ERR_VERIFY);
        assert_non_null(strstr(tilec_diag_text(ctx), "use cluster=(8) or fewer"));
        tilec_program_free(q);
    }
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A loop kernel written by hand for a tile kernel of 2-CTA clusters of 32 threads: each
 * CTA stores its row of A into its shared S, then (per `how`) reads its peer's S into B.
 * The simulator reports what a GPU would not. */
enum { NO_BARRIER, CTA_BARRIER, OUTSIDE, ONE_CTA, GOOD };
static tilec_status run_peer(tilec_ctx *ctx, int how, float *a, float *b) {
    static const char *const src =
        "kernel k(A: f32[4, 32] global, B: f32[4, 32] global) threads=32 grid=4 cluster=(2) {\n"
        "  shared S: f32[32]\n  cta.copy(S, A[cta_id])\n  cta.sync()\n  cta.copy(B[cta_id], S)\n}\n";
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "k.tile", src, strlen(src), &p), TILEC_OK);
    tilec_kernel *tk = tilec_program_kernel(p, 0);
    lp_kernel *k = lp_kernel_new(p, tk, 32);
    lp_buf *A = lp_buf_for(k, tk->params[0]), *B = lp_buf_for(k, tk->params[1]), *S = lp_buf_for(k, tk->stmts[0]->alloc);
    lp_expr *tid = lp_special_expr(k, LP_TID), *cta = lp_special_expr(k, LP_CTA);
    lp_expr *row = lp_binary(k, LO_ADD, lp_binary(k, LO_MUL, cta, lp_int(k, LP_I32, 32)), tid);
    lp_store(k, &k->body, S, tid, lp_load(k, A, row));
    lp_expr *peer = lp_binary(k, LO_BXOR, lp_binary(k, LO_REM, cta, lp_int(k, LP_I32, 2)), lp_int(k, LP_I32, 1));
    if (how == OUTSIDE) peer = lp_int(k, LP_I32, 2);
    if (how == CTA_BARRIER) lp_barrier(k, &k->body, TILEC_SCOPE_CTA);
    if (how != NO_BARRIER && how != CTA_BARRIER) lp_barrier(k, &k->body, TILEC_SCOPE_CLUSTER);
    lp_store(k, &k->body, B, row, lp_load_rank(k, S, tid, peer));
    lp_block *at = &k->body; /* the peer's memory stays until every read is done (ONE_CTA: CTA 0 waits alone) */
    if (how == ONE_CTA) at = &lp_if(k, at, lp_binary(k, LO_EQ, lp_binary(k, LO_REM, cta, lp_int(k, LP_I32, 2)),
                                                   lp_int(k, LP_I32, 0)))->body;
    lp_barrier(k, at, TILEC_SCOPE_CLUSTER);
    assert_false(k->oom);
    void *args[] = {a, b};
    tilec_status st = sim_run(p, k, args);
    tilec_program_free(p);
    return st;
}

static void test_simulator_checks(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    float a[128], b[128];
    for (int i = 0; i < 128; i++) a[i] = (float)i, b[i] = -1;
    static const struct {
        int how;
        const char *msg;
    } bad[] = {
        {NO_BARRIER, "CTA 0, thread 0 (warp 0, lane 0): reads S[0] before anything wrote it"}, /* its peer's, not yet */
        {CTA_BARRIER, "reads S[0], which thread 0 of CTA 1 wrote at a lowering with no barrier between"}, /* a CTA's orders one */
        {OUTSIDE, "reads S[0] of the CTA of rank 2, which is not in its cluster (2 CTAs)"},
        {ONE_CTA, "barrier (cluster) reached by part of its scope: warp 0 of CTA 1 finished without reaching it"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run_peer(ctx, bad[i].how, a, b), TILEC_ERR_SIMULATE);
        if (!strstr(tilec_diag_text(ctx), bad[i].msg))
            fail_msg("case %zu: wanted '%s' in:\n%s", i, bad[i].msg, tilec_diag_text(ctx));
    }
    assert_int_equal(run_peer(ctx, GOOD, a, b), TILEC_OK);
    for (int c = 0; c < 4; c++) /* each CTA has its peer's row: CTAs 0 and 1 swap, 2 and 3 */
        for (int t = 0; t < 32; t++) assert_true(b[c * 32 + t] == a[(c ^ 1) * 32 + t]);
    tilec_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_and_printer),
        cmocka_unit_test(test_compile_and_refuse),
        cmocka_unit_test(test_simulator_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
