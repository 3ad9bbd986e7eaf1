/*
 * test_layout.c — register-fragment layouts (docs/format.md#fragment-layouts): each preset
 * places every element where the PTX ISA's formula says (written here from the ISA's
 * figures, not from layout.c's bases), every layout is a bijection onto its elements up to
 * replicated lanes, a linear layout gives the same places as the preset it spells out, the
 * text round-trips through fmt, and every broken layout is refused with its place and a fix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "support.h"

#include "../src/ir/ir.h"
#include "../src/runtime/rtc.h"

/* A program with one kernel that allocates `local` buffer L: dtype [rows, cols]. */
static tilec_buffer *alloc2(tilec_ctx *ctx, tilec_program **p, tilec_dtype dt, int64_t rows, int64_t cols) {
    tilec_kernel *k;
    tilec_buffer *b;
    assert_int_equal(tilec_program_new(ctx, p), TILEC_OK);
    assert_int_equal(tilec_kernel_new(*p, "k", false, 128, 1, &k), TILEC_OK);
    int64_t shape[2] = {rows, cols};
    assert_int_equal(tilec_kernel_alloc(k, "L", TILEC_SPACE_LOCAL, dt, 2, shape, NULL, &b), TILEC_OK);
    return b;
}

/* The PTX ISA's place (row, column) of register `reg` of lane `lane` of warp `w`. */
typedef void place_fn(int w, int lane, int reg, int64_t *row, int64_t *col);

/* mma.sync m16n8k16, f32 C/D ("mma-16816-c"): c0, c1 at (g, 2t + i), c2, c3 at (g + 8, 2t + i);
 * fragment f = reg / 4 of the n8 tiles side by side */
static void place_c(int w, int lane, int reg, int64_t *row, int64_t *col) {
    (void)w;
    int g = lane >> 2, t = lane & 3, i = reg & 3, f = reg >> 2;
    *row = g + (i >= 2 ? 8 : 0);
    *col = 8 * f + 2 * t + (i & 1);
}

/* its A operand, 16-bit ("mma-16816-a"): a0, a1 (g, 2t + i), a2, a3 (g + 8, …), a4, a5 (g, 2t + 8 + …),
 * a6, a7 (g + 8, 2t + 8 + …); fragment f = reg / 8 of the k16 tiles side by side */
static void place_a(int w, int lane, int reg, int64_t *row, int64_t *col) {
    (void)w;
    int g = lane >> 2, t = lane & 3, i = reg & 7, f = reg >> 3;
    *row = g + ((i == 2 || i == 3 || i == 6 || i == 7) ? 8 : 0);
    *col = 16 * f + 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
}

/* its B operand, 16-bit, k x n ("mma-16816-b"): b0, b1 at (k = 2t + i, n = g), b2, b3 at (2t + 8 + …, g);
 * fragment f = reg / 4 of the n8 tiles side by side */
static void place_b(int w, int lane, int reg, int64_t *row, int64_t *col) {
    (void)w;
    int g = lane >> 2, t = lane & 3, i = reg & 3, f = reg >> 2;
    *row = 2 * t + (i & 1) + (i >= 2 ? 8 : 0);
    *col = 8 * f + g;
}

/* wgmma m64nNk16, f32 D: register i of warp w at row 16w + g + 8((i >> 1) & 1), column
 * 8(i >> 2) + 2t + (i & 1) */
static void place_d(int w, int lane, int reg, int64_t *row, int64_t *col) {
    int g = lane >> 2, t = lane & 3;
    *row = 16 * w + g + 8 * ((reg >> 1) & 1);
    *col = 8 * (reg >> 2) + 2 * t + (reg & 1);
}

/* Every register of every lane of every warp holds the formula's element, and no element
 * is held twice. */
static void check_places(const tilec_buffer *b, int warps, int regs, place_fn *place) {
    char *seen = calloc((size_t)b->elems, 1);
    assert_non_null(seen);
    assert_int_equal((int64_t)warps * 32 * regs, b->elems);
    assert_int_equal(1 << b->frag_reg, regs);
    assert_int_equal(1 << b->frag_warp, warps);
    for (int w = 0; w < warps; w++)
        for (int lane = 0; lane < 32; lane++)
            for (int reg = 0; reg < regs; reg++) {
                int64_t row, col;
                place(w, lane, reg, &row, &col);
                int64_t want = row * b->shape[1] + col, got = ir_frag_element(b, w, lane, reg);
                if (got != want)
                    fail_msg("%s [%lld, %lld]: warp %d lane %d register %d holds element %lld, the ISA says (%lld, %lld)",
                             tilec_layout_name(b->layout.kind), (long long)b->shape[0], (long long)b->shape[1], w, lane,
                             reg, (long long)got, (long long)row, (long long)col);
                assert_false(seen[got]);
                seen[got] = 1;
            }
    free(seen);
}

static void test_presets_follow_the_isa(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    static const struct {
        tilec_layout_kind kind;
        tilec_dtype dt;
        int64_t rows, cols;
        int warps, regs;
        place_fn *place;
    } cases[] = {
        {TILEC_LAYOUT_MMA_C, TILEC_F32, 16, 8, 1, 4, place_c},    {TILEC_LAYOUT_MMA_C, TILEC_F32, 16, 64, 1, 32, place_c},
        {TILEC_LAYOUT_MMA_C, TILEC_F32, 16, 256, 1, 128, place_c}, {TILEC_LAYOUT_MMA_A, TILEC_F16, 16, 16, 1, 8, place_a},
        {TILEC_LAYOUT_MMA_A, TILEC_BF16, 16, 64, 1, 32, place_a}, {TILEC_LAYOUT_MMA_B, TILEC_F16, 16, 8, 1, 4, place_b},
        {TILEC_LAYOUT_MMA_B, TILEC_BF16, 16, 32, 1, 16, place_b}, {TILEC_LAYOUT_WGMMA_D, TILEC_F32, 64, 8, 4, 4, place_d},
        {TILEC_LAYOUT_WGMMA_D, TILEC_F32, 64, 128, 4, 64, place_d}, {TILEC_LAYOUT_WGMMA_D, TILEC_F32, 64, 256, 4, 128, place_d},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_program *p;
        tilec_buffer *b = alloc2(ctx, &p, cases[i].dt, cases[i].rows, cases[i].cols);
        tilec_layout L = {.kind = cases[i].kind};
        if (tilec_buffer_set_layout(b, &L) != TILEC_OK) fail_msg("case %zu: %s", i, tilec_diag_text(ctx));
        check_places(b, cases[i].warps, cases[i].regs, cases[i].place);
        tilec_program_free(p);
    }
    tilec_close(ctx);
}

/* The general form spelling out mma_m16n8k16_c of [16, 16] places every element as the preset. */
static void test_linear_spells_a_preset(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    const char *src = "kernel k(A: f32[4] global) threads=32 {\n"
                      "  local P: f32[16, 16] layout=mma_m16n8k16_c\n"
                      "  local Q: f32[16, 16] layout=linear(reg=((0, 1), (8, 0), (0, 8)), lane=((0, 2), (0, 4), (1, 0), "
                      "(2, 0), (4, 0)))\n"
                      "}\n";
    tilec_program *p;
    if (tilec_parse(ctx, "t.tile", src, strlen(src), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    const tilec_kernel *k = p->kernels[0];
    const tilec_buffer *P = k->stmts[0]->alloc, *Q = k->stmts[1]->alloc;
    for (int lane = 0; lane < 32; lane++)
        for (int reg = 0; reg < 8; reg++) assert_int_equal(ir_frag_element(P, 0, lane, reg), ir_frag_element(Q, 0, lane, reg));
    check_places(Q, 1, 8, place_c);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A lane bit of (0, 0) replicates: the four lanes of a quad hold the same row (a row's
 * result after its reduction over the quad), and the layout is accepted. */
static void test_replicated_lanes(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    const char *src = "kernel k(A: f32[4] global) threads=32 {\n"
                      "  local R: f32[16, 1] layout=linear(reg=((8, 0)), lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)))\n"
                      "}\n";
    tilec_program *p;
    if (tilec_parse(ctx, "t.tile", src, strlen(src), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    const tilec_buffer *R = p->kernels[0]->stmts[0]->alloc;
    for (int lane = 0; lane < 32; lane++)
        for (int reg = 0; reg < 2; reg++) assert_int_equal(ir_frag_element(R, 0, lane, reg), (lane >> 2) + 8 * reg);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Layouts format to themselves and verify. */
static void test_format_round_trip(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    const char *src = "kernel k(A: f32[4] global) threads=128 {\n"
                      "  local C: f32[16, 64] layout=mma_m16n8k16_c\n"
                      "  local D: f32[64, 128] layout=wgmma_m64nNk16_d\n"
                      "  local A2: f16[16, 32] layout=mma_m16n8k16_a\n"
                      "  local B2: bf16[16, 16] layout=mma_m16n8k16_b\n"
                      "  local R: f32[16, 1] layout=linear(reg=((8, 0)), lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)))\n"
                      "  local W: f32[32, 4] layout=linear(reg=(), lane=((1, 0), (2, 0), (4, 0), (8, 0), (0, 1)), "
                      "warp=((16, 0), (0, 2)))\n"
                      "}\n"
                      "\n"
                      "func f(S: f32[16, 64] local layout=mma_m16n8k16_c, m: f32[16, 1] local layout=linear(reg=((8, 0)), "
                      "lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0))), s: f32[16] shared) threads=32 {\n"
                      "  warp.max(m, S, axes=(1), accum=true)\n"
                      "  warp.sum(s, S, axes=(1))\n"
                      "}\n";
    char *once = format_text(ctx, src);
    if (!once) fail_msg("%s", tilec_diag_text(ctx));
    assert_string_equal(once, src);
    assert_int_equal(check_text(ctx, once, strlen(once), 32), TILEC_OK);
    tilec_free(once);
    tilec_close(ctx);
}

/* Each broken layout: the message and where it points (@ marks the place). */
/* Declaration `decl` (an @ marks where the error is) in a kernel: refused there with msg. */
static void expect_decl_error(size_t i, const char *decl, const char *msg) {
    char src[512];
    snprintf(src, sizeof src, "kernel k(A: f32[4] global) threads=32 {\n  %s\n}\n", decl);
    int line, col;
    char *text = strip_marker(src, strlen(src), &line, &col);
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_status st = check_text(ctx, text, strlen(text), 32);
    const char *d = tilec_diag_text(ctx);
    char where[64];
    snprintf(where, sizeof where, "t.tile:%d:%d: error: ", line, col);
    if (st == TILEC_OK || !strstr(d, msg) || !strstr(d, where))
        fail_msg("case %zu (%s): want %s%s, got:\n%s", i, decl, where, msg, d);
    free(text);
    tilec_close(ctx);
}

static void test_errors(void **state) {
    (void)state;
    static const struct {
        const char *alloc, *msg;
    } cases[] = {
        {"local L: f32[16, 64] layout=@mma_m16n8k16_d", "unknown layout 'mma_m16n8k16_d'; did you mean 'mma_m16n8k16_c'?"},
        {"local L: f32[16, 64] layout=@none", "unknown layout 'none'"},
        {"local L: f32[16, 48] @layout=mma_m16n8k16_c", "extent 48 of dimension 1 is not a power of two"},
        {"local L: f32[32, 64] @layout=mma_m16n8k16_c", "the mma_m16n8k16_c layout is [16, 8n]"},
        {"local L: f32[64, 512] @layout=wgmma_m64nNk16_d", "the wgmma_m64nNk16_d layout is [64, N]"},
        {"local L: f16[16, 64] @layout=mma_m16n8k16_c", "is f16; the mma_m16n8k16_c layout is of f32 accumulators"},
        {"local L: f32[16, 16] @layout=mma_m16n8k16_a", "is f32; the mma_m16n8k16_a layout is of f16 or bf16 operands"},
        {"local L: f32[16] @layout=mma_m16n8k16_c", "which is two-dimensional"},
        {"shared L: f32[16, 64] @layout=mma_m16n8k16_c", "'L' is a shared buffer; a fragment layout places a local buffer"},
        {"local L: f32[16, 64] strides=(65, 1) @layout=mma_m16n8k16_c", "so leave strides= out"},
        {"local L: f32[16, 8] layout=linear(reg=((0, 1), (8, 0)), lane=((0, 2), (0, 4), (1, 0), (2, 0), @(0, 2)))",
         "lane bit 4 reaches only elements the bits before it reach"},
        {"local L: f32[16, 8] @layout=linear(reg=((0, 1), (8, 0)), lane=((0, 2), (0, 4), (1, 0), (2, 0)))",
         "a linear layout has 5 lane bits (a warp of 32 lanes), not 4"},
        {"local L: f32[16, 8] layout=linear(reg=((0, 1), @(0, 0)), lane=((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)))",
         "register bit 1 of the layout adds no coordinate"},
        {"local L: f32[16, 8] @layout=linear(reg=((0, 1)), lane=((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)))",
         "has 128 elements, and the layout places 64 of them"},
        {"local L: f32[16, 8] layout=linear(reg=((0, 1), @(16, 0)), lane=((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)))",
         "coordinate 0 of the layout's register bit 1 is 16, outside extent 16"},
        {"local L: f32[16, 8] layout=linear(reg=((0, 1), (8, 0)), lane=((0, 2), (0, 4), (1, 0), (2, 0), @(4)))",
         "lane bit 4 has 1 coordinate; the buffer has 2 dimensions"},
        {"local L: f32[16, 8] layout=linear(@lane=((0, 2)))", "expected reg=(...)"},
        {"local L: f32[16, 8] @layout=linear(reg=((0, 1), (8, 0)), lane=((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), "
         "warp=((0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0)))",
         "no warp bits (a warp's), 2 (a warpgroup's) or 1, 3, 4 or 5 (a CTA's of 64, 256, 512 or 1024 threads), not 6"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_decl_error(i, cases[i].alloc, cases[i].msg);
}

/* The builder: a global parameter takes no layout, bad bit counts are refused, and a refused
 * layout leaves the one before. */
static void test_builder(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    tilec_buffer *b = alloc2(ctx, &p, TILEC_F32, 16, 64);
    tilec_layout c = {.kind = TILEC_LAYOUT_MMA_C};
    assert_int_equal(tilec_buffer_set_layout(b, &c), TILEC_OK);
    tilec_layout bad = {.kind = TILEC_LAYOUT_LINEAR, .nreg = 9, .nlane = 5, .nwarp = 3};
    assert_int_equal(tilec_buffer_set_layout(b, &bad), TILEC_ERR_INVALID_ARG);
    assert_non_null(strstr(tilec_diag_text(ctx), "at most 16 bits in all"));
    tilec_layout a = {.kind = TILEC_LAYOUT_MMA_A};
    assert_int_equal(tilec_buffer_set_layout(b, &a), TILEC_ERR_VERIFY);
    assert_int_equal(b->layout.kind, TILEC_LAYOUT_MMA_C);
    check_places(b, 1, 32, place_c);
    assert_int_equal(tilec_buffer_set_layout(b, NULL), TILEC_OK);
    assert_int_equal(b->layout.kind, TILEC_LAYOUT_NONE);
    tilec_kernel *k;
    tilec_buffer *param;
    int64_t n = 4;
    assert_int_equal(tilec_kernel_new(p, "k2", false, 32, 1, &k), TILEC_OK);
    assert_int_equal(tilec_kernel_param(k, "A", TILEC_F32, 1, &n, TILEC_SPACE_GLOBAL, &param), TILEC_OK);
    assert_int_equal(tilec_buffer_set_layout(param, &c), TILEC_ERR_VERIFY);
    assert_non_null(strstr(tilec_diag_text(ctx), "'A' is a global buffer; a fragment layout places a local buffer"));
    assert_int_equal(tilec_buffer_set_layout(NULL, &c), TILEC_ERR_INVALID_ARG);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Fragment statements compile with NVRTC for sm_90 and with hiprtc for gfx1030 (wave32),
 * where those are installed: every layout, copies both ways, a fill, and reductions over
 * rows and columns into global memory and into a replicated fragment. */
static void test_gpu_source_compiles(void **state) {
    (void)state;
    static const char *src =
        "kernel k(A: f32[16, 64] global, B: f32[16] global, C: f32[64] global, I: i64[64] global, D: f32[16, 64] "
        "global, M: f32[16, 1] global, W: f32[64, 32] global, R: f32[32] global, H: f16[16, 32] global, "
        "Hs: f16[32] global) threads=128 {\n"
        "  local S: f32[16, 64] layout=mma_m16n8k16_c\n"
        "  local m: f32[16, 1] layout=linear(reg=((8, 0)), lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)))\n"
        "  local G: f32[64, 32] layout=wgmma_m64nNk16_d\n"
        "  local X: f16[16, 32] layout=mma_m16n8k16_a\n"
        "  warp[0].copy(S, A)\n  warp[0].fill(m, -inf)\n  warp[0].max(m, S, axes=(1), accum=true)\n"
        "  warp[0].copy(M, m)\n  warp[0].sum(B, S, axes=(1))\n  warp[0].argmax(C, I, S, axes=(0))\n"
        "  warp[0].logsumexp(B, S, axes=(1))\n  warp[0].copy(D, S)\n"
        "  warp[0].copy(X, H)\n  warp[0].min(Hs, X, axes=(0))\n"
        "%s}\n";
    /* a warpgroup's statements: CUDA only (HIP has no barrier of 128 threads: refused) */
    static const char *wg = "  warpgroup.copy(G, W)\n  warpgroup.sum(R, G, axes=(0))\n";
    /* and a CTA's fragment of 8 warps (2 warp bits along the rows, 1 along the columns): its
     * reductions meet through shared slots at the CTA's barriers, on both targets */
    static const char *cta_src =
        "kernel c(A: f32[16, 64] global, B: f32[16] global, C: f32[64] global, D: f32[16, 64] global) threads=256 {\n"
        "  local S: f32[16, 64] layout=linear(reg=((0, 1), (0, 2)), lane=((0, 4), (0, 8), (0, 16), (1, 0), (2, 0)), "
        "warp=((4, 0), (0, 32), (8, 0)))\n"
        "  local m: f32[16, 1] layout=linear(reg=(), lane=((0, 0), (0, 0), (0, 0), (1, 0), (2, 0)), warp=((4, 0), "
        "(0, 0), (8, 0)))\n"
        "  cta.copy(S, A)\n  cta.max(m, S, axes=(1))\n  cta.map(S, exp(min(S - m, 0)))\n  cta.sum(B, S, axes=(1))\n"
        "  cta.var(C, S, axes=(0))\n  cta.copy(D, S)\n}\n";
    static const struct {
        tilec_backend b;
        const char *arch;
    } targets[] = {{TILEC_BACKEND_CUDA, "sm_90"}, {TILEC_BACKEND_HIP, "gfx1030"}};
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        if (!rtc_version(targets[t].b)) {
            print_message("skipped: %s is not installed here\n", targets[t].b == TILEC_BACKEND_CUDA ? "NVRTC" : "hiprtc");
            continue;
        }
        tilec_ctx *ctx;
        tilec_open(&ctx);
        bool hip = targets[t].b == TILEC_BACKEND_HIP;
        char text[2048];
        snprintf(text, sizeof text, src, hip ? "" : wg);
        tilec_program *p;
        if (tilec_parse(ctx, "frag.tile", text, strlen(text), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
        tilec_target tg = {targets[t].b, targets[t].arch, 32};
        void *bin = NULL;
        size_t n = 0;
        if (tilec_compile(p, &tg, &bin, &n) != TILEC_OK) fail_msg("%s: %s", targets[t].arch, tilec_diag_text(ctx));
        assert_true(n > 64);
        tilec_free(bin);
        tilec_program_free(p);
        if (tilec_parse(ctx, "cta.tile", cta_src, strlen(cta_src), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
        if (tilec_compile(p, &tg, &bin, &n) != TILEC_OK) fail_msg("%s (a CTA's fragment): %s", targets[t].arch, tilec_diag_text(ctx));
        assert_true(n > 64);
        tilec_free(bin);
        tilec_program_free(p);
        if (hip) { /* and the warpgroup's refused, with the reason */
            snprintf(text, sizeof text, src, wg);
            assert_int_equal(tilec_parse(ctx, "frag.tile", text, strlen(text), &p), TILEC_OK);
            assert_int_equal(tilec_compile(p, &tg, &bin, &n), TILEC_ERR_DISPATCH);
            assert_non_null(strstr(tilec_diag_text(ctx), "warpgroup scope needs a barrier of 128 threads"));
            tilec_program_free(p);
        }
        tilec_close(ctx);
    }
}

/* Statements a fragment cannot take, each refused with its reason (review r9): a copy between
 * a fragment and a thread's own array (the verifier), a fragment in a partial warp, a
 * warpgroup's fragment on HIP and a forced variant of the other kind (the dispatcher, at
 * emit). */
static void test_refused_statements(void **state) {
    (void)state;
    static const struct {
        const char *src, *msg;
        tilec_backend b;
    } cases[] = {
        {"kernel k(A: f32[16, 8] global) threads=32 {\n  local S: f32[16, 8] layout=mma_m16n8k16_c\n  local L: f32[128]\n"
         "  warp.copy(S, A)\n  warp.copy(L, S)\n}\n",
         "copy: 'S' is a fragment (a tile the lanes share) and 'L' each thread's own array", TILEC_BACKEND_SIM},
        {"kernel k(A: f32[16, 8] global) threads=32 {\n  local S: f32[16, 8] layout=mma_m16n8k16_c\n  local L: f32[128]\n"
         "  warp.copy(S, L)\n}\n",
         "copy: 'S' is a fragment (a tile the lanes share) and 'L' each thread's own array", TILEC_BACKEND_SIM},
        {"kernel k(A: f32[16, 8] global, B: f32[16] global) threads=48 {\n  local S: f32[16, 8] layout=mma_m16n8k16_c\n"
         "  warp[1].copy(S, A)\n  warp[1].sum(B, S, axes=(1))\n}\n",
         "threads=48 leaves a warp of 16 threads: a fragment needs whole warps (32 threads)", TILEC_BACKEND_CUDA},
        {"kernel k(A: f32[64, 8] global, B: f32[8] global) threads=128 {\n  local S: f32[64, 8] layout=wgmma_m64nNk16_d\n"
         "  warpgroup.copy(S, A)\n  warpgroup.max(B, S, axes=(0))\n}\n",
         "warpgroup scope needs a barrier of 128 threads, which HIP does not have", TILEC_BACKEND_HIP},
        /* a CTA's fragment (3 warp bits: 256 threads) is used at cta scope, in a CTA of its threads */
        {"kernel k(A: f32[16, 64] global, B: f32[16] global) threads=256 {\n"
         "  local S: f32[16, 64] layout=linear(reg=((0, 1), (0, 2)), lane=((0, 4), (0, 8), (0, 16), (0, 32), (1, 0)), "
         "warp=((2, 0), (4, 0), (8, 0)))\n  warpgroup.copy(S, A)\n}\n",
         "'S' is a fragment of a cta (layout=linear); use it at cta scope", TILEC_BACKEND_SIM},
        {"kernel k(A: f32[16, 64] global, B: f32[16] global) threads=512 {\n"
         "  local S: f32[16, 64] layout=linear(reg=((0, 1), (0, 2)), lane=((0, 4), (0, 8), (0, 16), (0, 32), (1, 0)), "
         "warp=((2, 0), (4, 0), (8, 0)))\n  cta.copy(S, A)\n}\n",
         "'S' is a fragment of a CTA of 256 threads (its layout has 3 warp bits), but 'k' has threads=512; write "
         "threads=256, or give the layout the warp bits of 512 threads",
         TILEC_BACKEND_SIM},
        /* a fragment reduced into a fragment ends with no barrier (registers only), so it does
         * not order a warp's shared memory: the verifier asks for the sync */
        {"kernel k(A: f32[16, 64] global, B: f32[4, 32] global) threads=128 {\n  shared Sh: f32[4, 32]\n"
         "  local S: f32[16, 64] layout=mma_m16n8k16_c\n"
         "  local m: f32[16, 1] layout=linear(reg=((8, 0)), lane=((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)))\n"
         "  warp.copy(Sh[warp_id], A[warp_id, 0:32])\n  warp.copy(S, A)\n  warp.max(m, S, axes=(1))\n"
         "  warp.copy(B[warp_id], Sh[warp_id])\n}\n",
         "missing barrier: 'Sh' is read here but other threads wrote it at line 5 with no barrier between; add "
         "warp.sync() before this statement",
         TILEC_BACKEND_SIM},
        /* a swizzled tile counts with the most its alignment can add (review r10: 16 bytes
         * under sm_90's limit plain, 1008 over it aligned) */
        {"kernel k(A: f16[8, 14520] global, O: f16[8, 14520] global) threads=128 {\n  shared a: f32[4]\n"
         "  shared t: f16[8, 14520] swizzle=sw128\n  cta.fill(a, 0)\n  cta.copy(t, A)\n  cta.sync()\n  cta.copy(O, t)\n}\n",
         "'t' takes 233328 bytes of shared memory; with the kernel's other shared buffers that is 233344 bytes, more "
         "than the 227 KiB a CTA gets on CUDA sm_90",
         TILEC_BACKEND_CUDA},
        /* a forced variant of the other kind says which kind it is, and the ones that apply */
        {"kernel k(A: f32[16, 64] global, B: f32[16] global) threads=32 {\n  local S: f32[16, 64] layout=mma_m16n8k16_c\n"
         "  warp.copy(S, A)\n  warp.sum(B, S, axes=(1), variant=rows)\n}\n",
         "variant 'rows' does not lower a statement on a fragment ('S' has a layout); the ones that do: fragment",
         TILEC_BACKEND_CUDA},
        {"kernel k(A: f32[16, 64] global, B: f32[16] global) threads=32 {\n  warp.sum(B, A, axes=(1), variant=fragment)\n}\n",
         "variant 'fragment' lowers statements on fragments only (local buffers with a layout=); the ones for sum on cuda:",
         TILEC_BACKEND_CUDA},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx;
        tilec_open(&ctx);
        tilec_status st;
        if (cases[i].b == TILEC_BACKEND_SIM) {
            st = check_text(ctx, cases[i].src, strlen(cases[i].src), 32);
        } else {
            tilec_program *p;
            assert_int_equal(tilec_parse(ctx, "t.tile", cases[i].src, strlen(cases[i].src), &p), TILEC_OK);
            tilec_target tg = {cases[i].b, cases[i].b == TILEC_BACKEND_HIP ? "gfx1030" : "sm_90", 32};
            char *out = NULL;
            st = tilec_emit(p, &tg, &out, NULL);
            tilec_free(out);
            tilec_program_free(p);
        }
        if (st == TILEC_OK || !strstr(tilec_diag_text(ctx), cases[i].msg))
            fail_msg("case %zu: want an error saying \"%s\", got %s:\n%s", i, cases[i].msg, tilec_status_name(st),
                     tilec_diag_text(ctx));
        tilec_close(ctx);
    }
}

/* ---- swizzled shared tiles ---------------------------------------------------------------- */

/* TMA's 128-byte swizzle as the CUDA programming guide draws it: in each 1024-byte block of
 * eight 128-byte rows, row r's 16-byte chunk c is stored as chunk c XOR r; 64 and 32 bytes:
 * within each group of 4 (2) chunks, XOR the row's index mod 4 (2) (its
 * block 512 and 256 bytes) */
static int64_t tma_place(int64_t byte, int chunks) {
    int64_t row = byte / 128, chunk = byte % 128 / 16, in = byte % 16;
    int64_t xr = (row % 8) % chunks;
    int64_t c2 = (chunk / chunks) * chunks + ((chunk % chunks) ^ xr);
    return row * 128 + c2 * 16 + in;
}

static void test_swizzle_places(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int chunks;
        int64_t atom;
    } presets[] = {{"sw128", 8, 1024}, {"sw64", 4, 512}, {"sw32", 2, 256}};
    static const char *dts[] = {"f32", "f16", "f64"};
    for (size_t i = 0; i < 3; i++)
        for (size_t d = 0; d < 3; d++) {
            char text[256];
            snprintf(text, sizeof text, "func f(T: %s[32, 64] shared swizzle=%s) threads=32 {\n}\n", dts[d], presets[i].name);
            tilec_ctx *ctx;
            tilec_open(&ctx);
            tilec_program *p;
            if (tilec_parse(ctx, "s.tile", text, strlen(text), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
            const tilec_buffer *b = p->kernels[0]->params[0];
            int64_t es = (int64_t)tilec_dtype_size(b->dtype);
            char *seen = calloc((size_t)b->elems, 1);
            assert_non_null(seen);
            for (int64_t e = 0; e < b->elems; e++) {
                int64_t got = ir_swizzle_offset(b, e), want = tma_place(e * es, presets[i].chunks) / es;
                if (got != want)
                    fail_msg("%s %s: element %lld is stored at %lld, TMA's swizzle says %lld", presets[i].name, dts[d],
                             (long long)e, (long long)got, (long long)want);
                assert_false(seen[got]);
                seen[got] = 1;
            }
            free(seen);
            assert_int_equal(ir_swizzle_atom(b), presets[i].atom);
            tilec_program_free(p);
            tilec_close(ctx);
        }
}

static void test_swizzle_errors(void **state) {
    (void)state;
    static const struct {
        const char *decl, *msg;
    } cases[] = {
        {"local L: f32[16, 64] @swizzle=sw128", "'L' is local: a swizzle places the elements of a shared tile"},
        {"shared L: f32[16, 64] swizzle=@sw256", "unknown swizzle 'sw256'; expected sw128, sw64, sw32, none or xor(bits, base, shift)"},
        {"shared L: f32[16, 64] @swizzle=xor(0, 4, 3)", "a swizzle of 0 bits; bits must be 1 to 5"},
        {"shared L: f64[16, 64] @swizzle=xor(3, 2, 3)", "but a f64 element is 8 bytes; the base must be 3 to 10"},
        {"shared L: f32[16, 64] @swizzle=xor(3, 4, 2)", "a swizzle shift of 2 with 3 bits and base 4"},
        {"shared L: f32[16, 64] @swizzle=xor(3, 4, 4)", "base + shift + bits at most 10"},
        {"shared L: f32[16, 64] swizzle=xor@(-4294967295, 4, 3)", "xor takes three small integers"},
        {"shared L: f32[16, 64] swizzle=sw32 @swizzle=sw64", "'L' has two swizzle= options; keep one"},
        {"shared L: f32[16, 64] swizzle=xor@(3, 4)", "xor takes three small integers"},
        {"shared L: f32[16, 64] @layout=mma_m16n8k16_c swizzle=sw128", "'L' is a shared buffer; a fragment layout"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_decl_error(i, cases[i].decl, cases[i].msg);

    /* a global parameter of a func takes none either */
    tilec_ctx *ctx;
    tilec_open(&ctx);
    const char *g = "func f(G: f32[8, 32] global swizzle=sw32) threads=32 {\n}\n";
    assert_int_not_equal(check_text(ctx, g, strlen(g), 32), TILEC_OK);
    assert_non_null(strstr(tilec_diag_text(ctx), "'G' is global: a swizzle places"));
    /* a func's tile that ends inside a group (the caller's array is what it is); an
     * allocation of the same shape grows to whole groups */
    const char *cut = "func f(G: f32[5, 7] shared swizzle=sw128) threads=32 {\n}\n";
    assert_int_not_equal(check_text(ctx, cut, strlen(cut), 32), TILEC_OK);
    assert_non_null(strstr(tilec_diag_text(ctx), "the tile's 140 bytes end inside a group: byte 128 would be stored at 144"));
    const char *grown = "kernel k(A: f32[5, 7] global) threads=32 {\n  shared G: f32[5, 7] swizzle=sw128\n  cta.copy(G, A)\n}\n";
    assert_int_equal(check_text(ctx, grown, strlen(grown), 32), TILEC_OK);
    tilec_close(ctx);
}

/* fmt keeps a swizzle, a preset by name and the general form by its numbers; the builder
 * sets one, refuses a local buffer and a bad one (keeping the old), and clears it. */
static void test_swizzle_round_trip_and_builder(void **state) {
    (void)state;
    const char *text = "kernel k(A: f32[64, 32] global) threads=64 {\n"
                       "  shared S: f32[64, 32] swizzle=sw64\n"
                       "  shared T: f32[64, 33] strides=(33, 1) swizzle=xor(2, 5, 3)\n"
                       "  cta.copy(S, A)\n"
                       "}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    if (tilec_parse(ctx, "s.tile", text, strlen(text), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    char *out = NULL;
    size_t n = 0;
    assert_int_equal(tilec_format(p, &out, &n), TILEC_OK);
    assert_non_null(strstr(out, "shared S: f32[64, 32] swizzle=sw64\n"));
    assert_non_null(strstr(out, "shared T: f32[64, 33] strides=(33, 1) swizzle=xor(2, 5, 3)\n"));
    tilec_free(out);
    tilec_program_free(p);

    tilec_kernel *k;
    tilec_buffer *b, *l;
    int64_t shape[2] = {64, 32};
    assert_int_equal(tilec_program_new(ctx, &p), TILEC_OK);
    assert_int_equal(tilec_kernel_new(p, "k", false, 64, 1, &k), TILEC_OK);
    assert_int_equal(tilec_kernel_alloc(k, "S", TILEC_SPACE_SHARED, TILEC_F32, 2, shape, NULL, &b), TILEC_OK);
    assert_int_equal(tilec_kernel_alloc(k, "L", TILEC_SPACE_LOCAL, TILEC_F32, 2, shape, NULL, &l), TILEC_OK);
    tilec_swizzle sw = {.kind = TILEC_SWIZZLE_SW128, .bits = 99}; /* a preset: its numbers are not read */
    assert_int_equal(tilec_buffer_set_swizzle(b, &sw), TILEC_OK);
    assert_int_equal(b->swizzle.bits, 3);
    tilec_swizzle bad = {.kind = TILEC_SWIZZLE_XOR, .bits = 2, .base = 1, .shift = 3};
    assert_int_equal(tilec_buffer_set_swizzle(b, &bad), TILEC_ERR_VERIFY);
    assert_non_null(strstr(tilec_diag_text(ctx), "the base must be 2 to 10"));
    assert_int_equal(b->swizzle.kind, TILEC_SWIZZLE_SW128);
    assert_int_equal(tilec_buffer_set_swizzle(l, &sw), TILEC_ERR_VERIFY);
    assert_int_equal(l->swizzle.kind, TILEC_SWIZZLE_NONE);
    tilec_swizzle odd = {.kind = (tilec_swizzle_kind)77};
    assert_int_equal(tilec_buffer_set_swizzle(b, &odd), TILEC_ERR_VERIFY);
    assert_int_equal(tilec_buffer_set_swizzle(b, NULL), TILEC_OK);
    assert_int_equal(b->swizzle.kind, TILEC_SWIZZLE_NONE);
    /* an allocation grows to whole groups, and back when the swizzle goes (review r10) */
    tilec_buffer *odd5;
    int64_t s57[2] = {5, 7};
    assert_int_equal(tilec_kernel_alloc(k, "O", TILEC_SPACE_SHARED, TILEC_F32, 2, s57, NULL, &odd5), TILEC_OK);
    assert_int_equal(odd5->span, 35);
    assert_int_equal(tilec_buffer_set_swizzle(odd5, &sw), TILEC_OK);
    assert_int_equal(odd5->span, 64); /* 140 bytes -> 256: whole groups of 128 */
    assert_int_equal(tilec_buffer_set_swizzle(odd5, NULL), TILEC_OK);
    assert_int_equal(odd5->span, 35);
    assert_int_equal(tilec_buffer_set_swizzle(NULL, &sw), TILEC_ERR_INVALID_ARG);
    assert_string_equal(tilec_swizzle_name(TILEC_SWIZZLE_SW32), "sw32");
    assert_null(tilec_swizzle_name(TILEC_SWIZZLE_COUNT));
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A new context and the program `text` parsed in it; a parse error fails the test. */
static tilec_program *parse_ok(tilec_ctx **ctx, const char *name, const char *text) {
    tilec_open(ctx);
    tilec_program *p = NULL;
    if (tilec_parse(*ctx, name, text, strlen(text), &p) != TILEC_OK) fail_msg("%s", tilec_diag_text(*ctx));
    return p;
}

/* The cost model reads the swizzle: rows of 128 bytes, one lane a row, are 8-way bank
 * conflicts plain (eight rows' first chunks in one bank group) and none under sw128 (each
 * row's chunk moved to its own banks), so the model takes one lane a row for the swizzled
 * tile and not for the plain one. */
static void test_swizzle_cost_model(void **state) {
    (void)state;
    const char *text = "func plain(dst: f32[64] shared, src: f32[64, 32] shared) threads=64 {\n"
                       "  cta.sum(dst, src, axes=(1))\n}\n"
                       "func swz(dst: f32[64] shared, src: f32[64, 32] shared swizzle=sw128) threads=64 {\n"
                       "  cta.sum(dst, src, axes=(1))\n}\n";
    tilec_ctx *ctx;
    tilec_program *p = parse_ok(&ctx, "s.tile", text);
    tilec_target t = {TILEC_BACKEND_CUDA, "sm_90", 32};
    char *out = NULL;
    assert_int_equal(tilec_explain(p, &t, TILEC_EXPLAIN_SHORT, &out), TILEC_OK);
    const char *sw = strstr(out, "func swz");
    assert_non_null(sw);
    const char *plain_one = strstr(out, "1 lane an output");
    if (!plain_one || plain_one < sw) fail_msg("the swizzled tile is not read a lane a row:\n%s", out);
    const char *p8 = strstr(out, " lanes an output");
    if (!p8 || p8 > sw) fail_msg("the plain tile is read a lane a row (8-way conflicts):\n%s", out);
    tilec_free(out);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A batch of loads computes its first offset once and the others from it: the TMA panels
 * [4][64][32] under sw128, reduced over (0, 2), need a division, a remainder and the
 * swizzle's shift for element e; e + 4k is that offset XOR a constant (the step moves a
 * chunk inside a 128-byte row) plus 2048 once the next panel starts. A load that computes
 * its own offset again (what the emitted code did before) shows a '/' or '>>' in its index. */
static void test_batch_offsets_hoisted(void **state) {
    (void)state;
    const char *text = "func f(dst: f32[64] shared, src: f32[4, 64, 32] shared swizzle=sw128) threads=128 {\n"
                       "  cta.sum(dst, src, axes=(0, 2))\n}\n"
                       "func g(dst: f32[128] shared, src: f32[64, 128] shared swizzle=sw128) threads=128 {\n"
                       "  cta.sum(dst, src, axes=(0))\n}\n";
    tilec_ctx *ctx;
    tilec_program *p = parse_ok(&ctx, "h.tile", text);
    tilec_target t = {TILEC_BACKEND_CUDA, "sm_90", 32};
    char *out = NULL;
    if (tilec_emit(p, &t, &out, NULL) != TILEC_OK) fail_msg("%s", tilec_diag_text(ctx));
    int loads = 0, hoisted = 0;
    for (const char *line = out; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)n, line);
        const char *at = strstr(buf, "src[");
        if (at) {
            loads++;
            if (strchr(at, '/') || strstr(at, ">>")) fail_msg("a load computes its own offset:\n%s", buf);
            at += strlen("src[");
            while (*at == '(') at++;
            if (!strncmp(at, "tl_p", 4)) hoisted++;
        }
        line = end ? end + 1 : NULL;
    }
    if (loads < 32 || hoisted != loads) fail_msg("%d of %d loads use a hoisted offset:\n%s", hoisted, loads, out);
    tilec_free(out);
    tilec_program_free(p);
    tilec_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_follow_the_isa), cmocka_unit_test(test_linear_spells_a_preset),
        cmocka_unit_test(test_replicated_lanes),       cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_errors),                 cmocka_unit_test(test_builder),
        cmocka_unit_test(test_gpu_source_compiles),    cmocka_unit_test(test_refused_statements),
        cmocka_unit_test(test_swizzle_places),         cmocka_unit_test(test_swizzle_errors),
        cmocka_unit_test(test_swizzle_round_trip_and_builder), cmocka_unit_test(test_swizzle_cost_model),
        cmocka_unit_test(test_batch_offsets_hoisted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
