/*
 * test_codegen.c — the emitted CUDA and HIP source: real compilers accept it (NVRTC for
 * sm_80 and sm_90, hiprtc for gfx90a at wave64 and gfx1030 at wave32), for every example
 * and a generated matrix of variants × dtypes × ops × shapes; its shape is what
 * docs/dispatch.md promises; it matches the golden files; hostile names cannot break it;
 * and the same input gives the same bytes. A compiler that is not installed skips its part with a message.
 * TILEC_TEST_TARGETS chooses other targets (below): scripts/hip-new-archs compiles for gfx942
 * and gfx1100 with the ROCm 5.7 of scripts/rocm-root.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "../src/codegen/codegen.h"
#include "../src/runtime/rtc.h"
#include "map_programs.h"
#include "support.h"

static const char *const examples[] = {"row_sum", "row_max_batched", "col_sum", "warp_rows", "tile_row_max"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc(1, (size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    return buf;
}

static char *example(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s.tile", TILEC_SOURCE_ROOT, name);
    char *text = slurp(path);
    if (!text) fail_msg("cannot read %s", path);
    return text;
}

typedef struct target_case {
    tilec_backend backend;
    const char *arch;
} target_case;

static const target_case default_targets[] = {
    {TILEC_BACKEND_CUDA, "sm_80"}, {TILEC_BACKEND_CUDA, "sm_90"},
    {TILEC_BACKEND_HIP, "gfx90a"}, {TILEC_BACKEND_HIP, "gfx1030"},
};

/* TILEC_TEST_TARGETS=gfx942,gfx1100 (sm_XX for CUDA) replaces them, and then only the
 * tests that compile for every target run: how scripts/hip-new-archs compiles for the archs
 * of a newer ROCm (scripts/with-rocm-root), without compiling everything else again. */
static target_case targets[8];
static char target_names[8][40];
static size_t ntargets;

static void choose_targets(const char *list) {
    ntargets = 0;
    if (!list || !*list) {
        for (size_t i = 0; i < COUNT(default_targets); i++) targets[ntargets++] = default_targets[i];
        return;
    }
    for (const char *p = list; *p && ntargets < COUNT(targets);) {
        size_t n = strcspn(p, ",");
        if (n && n < sizeof target_names[0]) {
            memcpy(target_names[ntargets], p, n);
            target_names[ntargets][n] = '\0';
            bool hip = strncmp(target_names[ntargets], "gfx", 3) == 0;
            targets[ntargets] = (target_case){hip ? TILEC_BACKEND_HIP : TILEC_BACKEND_CUDA, target_names[ntargets]};
            ntargets++;
        }
        p += n + (p[n] == ',');
    }
}

/* whether a target of the backend is among those chosen */
static bool chosen(tilec_backend b) {
    for (size_t t = 0; t < ntargets; t++)
        if (targets[t].backend == b) return true;
    return false;
}

static bool available(tilec_backend b) {
    if (rtc_version(b)) return true;
    print_message("skipped: %s is not installed here, so nothing is compiled for it\n",
                  b == TILEC_BACKEND_CUDA ? "NVRTC" : "hiprtc");
    return false;
}

/* Emits and compiles text for every target; a failure prints the log and the source. */
static void compile_everywhere(const char *name, const char *text) {
    for (size_t t = 0; t < ntargets; t++) {
        if (!available(targets[t].backend)) continue;
        tilec_ctx *ctx;
        tilec_open(&ctx);
        tilec_program *p;
        assert_int_equal(tilec_parse(ctx, name, text, strlen(text), &p), TILEC_OK);
        tilec_target tg = {targets[t].backend, targets[t].arch, 0};
        void *bin = NULL;
        size_t n = 0;
        tilec_status st = tilec_compile(p, &tg, &bin, &n);
        if (st != TILEC_OK) {
            char *src = NULL;
            tilec_emit(p, &tg, &src, NULL);
            fail_msg("%s for %s: %s\n%s\n--- source ---\n%s", name, targets[t].arch, tilec_status_name(st),
                     tilec_diag_text(ctx), src ? src : "(none)");
        }
        assert_true(n > 64);
        assert_memory_equal(bin, "\x7f" "ELF", 4);
        tilec_free(bin);
        tilec_program_free(p);
        tilec_close(ctx);
    }
}

static void test_examples_compile(void **state) {
    (void)state;
    for (size_t i = 0; i < COUNT(examples); i++) {
        char *text = example(examples[i]);
        compile_everywhere(examples[i], text);
        free(text);
    }
}

/* One program holding a kernel per (variant, dtype, op, shape, scope): one compile per
 * target covers them all. */
static void test_matrix_compiles(void **state) {
    (void)state;
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", "i32", "u32", "i64"};
    static const char *const variants[] = {"", ", variant=shared", ", variant=sequential", ", variant=smem_tree",
                                           ", variant=cta_tree"};
    static const struct { int threads, rows, len; } shapes[] = {{32, 4, 8}, {256, 3, 1000}, {96, 5, 33}};
    size_t cap = 1 << 20, at = 0;
    char *src = malloc(cap);
    int n = 0;
    for (size_t d = 0; d < COUNT(dtypes); d++)
        for (int o = 0; o < TILEC_OP_COUNT; o++)
            for (size_t v = 0; v < COUNT(variants); v++)
                for (size_t s = 0; s < COUNT(shapes); s++) {
                    if (v == 4 && s != 1) continue; /* cta_tree needs few long rows on several warps */
                    const char *dt = dtypes[d];
                    bool flt = dt[0] == 'f' || dt[0] == 'b';
                    if (!tilec_op_supports((tilec_op)o, dtype_named(dt), s == 2)) continue;
                    bool minmax = tilec_op_compares((tilec_op)o);
                    bool two = tilec_op_outputs((tilec_op)o) == 2; /* argmax, argmin: the indices in I */
                    char idx[4][64] = {"", "", "", ""};
                    if (two) {
                        const char *dt2 = tilec_dtype_name(tilec_op_second_dtype((tilec_op)o, dtype_named(dt)));
                        snprintf(idx[0], sizeof idx[0], ", I: %s[%d] global", dt2, shapes[s].rows);
                        snprintf(idx[1], sizeof idx[1], "  shared J: %s[%d]\n", dt2, shapes[s].rows);
                        snprintf(idx[2], sizeof idx[2], "J, ");
                        snprintf(idx[3], sizeof idx[3], "  cta.copy(I, J)\n");
                    }
                    at += (size_t)snprintf(src + at, cap - at,
                        "kernel k%d(A: %s[%d, %d] global, B: %s[%d] global%s) threads=%d {\n"
                        "  shared S: %s[%d, %d]\n  shared R: %s[%d]\n%s  cta.copy(S, A)\n  cta.copy(R, B)\n  cta.sync()\n"
                        "  cta.%s(R, %sS, accum=%s%s%s)\n  cta.copy(B, R)\n%s}\n",
                        n++, dt, shapes[s].rows, shapes[s].len, dt, shapes[s].rows, idx[0], shapes[s].threads, dt,
                        shapes[s].rows, shapes[s].len, dt, shapes[s].rows, idx[1], tilec_op_name((tilec_op)o), idx[2],
                        s == 2 ? "true" : "false", flt && minmax && s == 1 ? ", nan=ignore" : "", variants[v], idx[3]);
                }
    /* scopes and registers, at warp size 32 and 64 alike */
    at += (size_t)snprintf(src + at, cap - at,
        "kernel w(A: f32[3, 6, 45] global, B: f32[3, 6] global) threads=96 {\n"
        "  shared S: f32[3, 6, 45]\n  shared R: f32[3, 6]\n  cta.copy(S, A)\n  cta.fill(R, -inf)\n  cta.sync()\n"
        "  warp.max(R[warp_id], S[warp_id])\n  cta.sync()\n  cta.copy(B, R)\n}\n"
        "kernel l(A: f64[48, 8] global, B: f64[48, 2] global) threads=48 {\n"
        "  local L: f64[2, 4]\n  local M: f64[2]\n  thread.copy(L, A[thread_id])\n  warp.sum(M, L)\n"
        "  thread.copy(B[thread_id], M)\n}\n"
        "kernel t(A: i64[64, 9] global, B: i64[64] global) threads=64 {\n"
        "  thread.min(B[thread_id], A[thread_id])\n}\n");
    compile_everywhere("matrix.tile", src);
    /* warpgroup scope, CUDA only */
    const char *wg = "kernel g(A: f32[2, 4, 300] global, B: f32[2, 4] global) threads=256 {\n"
                     "  shared S: f32[2, 4, 300]\n  shared R: f32[2, 4]\n  cta.copy(S, A)\n  cta.sync()\n"
                     "  warpgroup.sum(R[warpgroup_id], S[warpgroup_id])\n  cta.sync()\n  cta.copy(B, R)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "wg.tile", wg, strlen(wg), &p), TILEC_OK);
    void *bin = NULL;
    size_t size;
    if (chosen(TILEC_BACKEND_CUDA) && available(TILEC_BACKEND_CUDA))
        assert_int_equal(tilec_compile(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &bin, &size), TILEC_OK);
    tilec_free(bin);
    tilec_program_free(p);
    tilec_close(ctx);
    free(src);
}

/* The row-sum example forced to the shared variant: exactly three shuffle-xor steps, masks 1,
 * 2, 4, width 8; and the PTX of a shared-variant kernel uses the butterfly shuffle. Its
 * own choice (rows) reads each row with 16-byte loads and needs no shuffle. */
static void test_row_sum_shared_source_and_ptx(void **state) {
    (void)state;
    char *text = example("row_sum");
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "row_sum.tile", text, strlen(text), &p), TILEC_OK);
    char *own;
    assert_int_equal(tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &own, NULL), TILEC_OK);
    assert_non_null(strstr(own, "[rows]"));
    assert_non_null(strstr(own, CG_P "f32x4 tl_v = *(const " CG_P "f32x4 *)&As["));
    assert_null(strstr(own, "__shfl_xor_sync("));
    tilec_free(own);
    tilec_program_free(p);
    const char *call = "cta.sum(Bs, As, axes=(-1))";
    char *at = strstr(text, call);
    assert_non_null(at);
    size_t n = strlen(text);
    char *forced = malloc(n + 32);
    assert_non_null(forced);
    snprintf(forced, n + 32, "%.*scta.sum(Bs, As, axes=(-1), variant=shared)%s", (int)(at - text), text, at + strlen(call));
    free(text);
    text = forced;
    assert_int_equal(tilec_parse(ctx, "row_sum.tile", text, strlen(text), &p), TILEC_OK);
    char *src;
    assert_int_equal(tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &src, NULL), TILEC_OK);
    int count = 0;
    for (const char *q = src; (q = strstr(q, "__shfl_xor_sync(")); q++) count++;
    assert_int_equal(count, 3);
    assert_non_null(strstr(src, "__shfl_xor_sync(tl_mask, tl_acc8, 1, 8);"));
    assert_non_null(strstr(src, "__shfl_xor_sync(tl_mask, tl_acc8, 2, 8);"));
    assert_non_null(strstr(src, "__shfl_xor_sync(tl_mask, tl_acc8, 4, 8);"));
    assert_null(strstr(src, "__activemask"));
    assert_null(strstr(src, "#include"));
    if (available(TILEC_BACKEND_CUDA)) {
        rtc_result r;
        assert_int_equal(rtc_compile(ctx, TILEC_BACKEND_CUDA, "sm_90", 32, "row_sum.cu", src, RTC_PTX, &r), TILEC_OK);
        assert_non_null(strstr(r.data, "shfl.sync.bfly"));
        assert_non_null(strstr(r.data, ".entry row_sum("));
        rtc_result_free(&r);
    }
    tilec_free(src);
    tilec_program_free(p);
    tilec_close(ctx);
    free(text);
}

static int count_of(const char *text, const char *word) {
    int n = 0;
    for (const char *q = text; (q = strstr(q, word)); q += strlen(word)) n++;
    return n;
}

/* A map's quiet-NaN select (a test and a select an element) is left out where no NaN of
 * its destination can show (v_map.c, nan_unseen): a local fragment that only maps and
 * reductions read. Of the three maps below, the one into E (copied to Y) and the one into
 * F (copied to Z) select; the one into G, read only by F's map, does not: two selects in
 * the CUDA and in the HIP source. test_sim runs the program for the bits. */
static void test_map_nan_select(void **state) {
    (void)state;
    const char *text = map_nan_select_src;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "nan.tile", text, strlen(text), &p), TILEC_OK);
    const tilec_backend backends[] = {TILEC_BACKEND_CUDA, TILEC_BACKEND_HIP};
    const char *archs[] = {"sm_90", "gfx1030"}; /* fragments are of 32 lanes: a wave32 GPU */
    for (int b = 0; b < 2; b++) {
        char *src;
        if (tilec_emit(p, &(tilec_target){backends[b], archs[b], 32}, &src, NULL) != TILEC_OK)
            fail_msg("%s", tilec_diag_text(ctx));
        const char *body = strstr(src, "warp.map(E");
        assert_non_null(body);
        assert_int_equal(count_of(body, "0x7fc00000"), 2);
        const char *g = strstr(body, "warp.map(G"), *f = strstr(body, "warp.map(F");
        assert_non_null(g);
        assert_non_null(f);
        assert_true(g < f);
        const char *q = strstr(g, "0x7fc00000");
        assert_true(q && q > f); /* G's store keeps its NaN: the next select is F's */
        tilec_free(src);
    }
    tilec_program_free(p);
    /* a comparing reduction's selects pass a NaN's bits on (f64's max is selects on every
       target): L, which a max reads, keeps its select; Q, which only a sum reads, does not */
    const char *cmp = "kernel k(X: f64[32, 2] global, M: f64[32] global, S: f64[32] global) threads=32 {\n"
                      "  local L: f64[2]\n  local Q: f64[2]\n"
                      "  thread.map(L, X[thread_id] * 2)\n  thread.max(M[thread_id], L)\n"
                      "  thread.map(Q, X[thread_id] * 3)\n  thread.sum(S[thread_id], Q)\n}\n";
    assert_int_equal(tilec_parse(ctx, "cmp.tile", cmp, strlen(cmp), &p), TILEC_OK);
    char *src;
    assert_int_equal(tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &src, NULL), TILEC_OK);
    const char *l = strstr(src, "thread.map(L"), *qm = strstr(src, "thread.map(Q");
    assert_non_null(l);
    assert_non_null(qm);
    const char *sel = strstr(l, "0x7ff8000000000000");
    assert_true(sel && sel < qm);     /* L's store selects */
    assert_null(strstr(qm, "0x7ff8")); /* Q's does not */
    tilec_free(src);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* A logsumexp whose lanes run along its rows (rows) takes each lane's loaded elements many
 * at once: in the loop over a lane's loads, one exponential an element and one for the
 * state (12582912.0f, the rounder, twice in each: k and its removal) and no select, where
 * one merge an element rescales the state at each, with its compare and selects. */
/* The CUDA of `text`'s logsumexp, its loop over a lane's loads (the second loop of the
 * statement): a copy to free. */
static char *lse_load_loop(tilec_ctx *ctx, const char *text) {
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "lse.tile", text, strlen(text), &p), TILEC_OK);
    char *src;
    if (tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &src, NULL) != TILEC_OK)
        fail_msg("%s", tilec_diag_text(ctx));
    const char *st = strstr(src, "cta.logsumexp(L");
    assert_non_null(st);
    const char *outer = strstr(st, "for (");
    assert_non_null(outer);
    const char *loop = strstr(outer + 1, "for (");
    assert_non_null(loop);
    const char *open = strchr(loop, '{'), *end = open;
    assert_non_null(open);
    for (int depth = 0; *end; end++) {
        depth += *end == '{';
        depth -= *end == '}';
        if (!depth) break;
    }
    size_t n = (size_t)(end - open);
    char *body = malloc(n + 1);
    assert_non_null(body);
    memcpy(body, open, n);
    body[n] = 0;
    tilec_free(src);
    tilec_program_free(p);
    return body;
}

static void test_lse_many_fold(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    char *body = lse_load_loop(ctx, "kernel lse(X: bf16[2, 4096] global, L: f32[2] global) threads=128 {\n"
                                    "  cta.logsumexp(L, X, axes=(-1), variant=rows)\n}\n");
    int loads = count_of(body, "*)&X["), exps = count_of(body, "12582912.0f") / 2, selects = count_of(body, " ? ");
    assert_true(loads >= 1);
    assert_int_equal(selects, 0);
    /* a 16-byte load is 8 elements: at least 8 a load, plus one an accumulator */
    assert_true(exps >= 8 * loads + 1 && exps <= 8 * loads + 4);
    free(body);
    /* an odd row: loads of one element, four accumulators (elements e, e + 1, … to
       accumulators e mod 4): each element merges alone, one exponential, into its own */
    body = lse_load_loop(ctx, "kernel lse(X: f32[1, 4099] global, L: f32[1] global) threads=32 {\n"
                              "  cta.logsumexp(L, X, axes=(-1), variant=rows)\n}\n");
    loads = count_of(body, "X[");
    exps = count_of(body, "12582912.0f") / 2;
    assert_true(loads >= 1);
    assert_int_equal(exps, loads);
    int accs = 0;
    for (int a = 0; a < 64; a++) {
        char name[32];
        snprintf(name, sizeof name, "tl_acc%d = ", a);
        accs += strstr(body, name) != NULL;
    }
    assert_int_equal(accs, loads); /* (a turn is one element an accumulator: U = A / V) */
    free(body);
    tilec_close(ctx);
}

/* A bf16 store: a map's stores convert two at once (pack_bf16x2). From sm_90 on that is one
 * cvt.rn.bf16x2.f32 and one min.s16x2 a pair, no NaN test; on sm_80 the CUDA prelude rounds
 * each with one cvt.rn.bf16.f32 (bit arithmetic before sm_80), and the store's NaN test
 * selects beside the conversion instead of branching around it: in the PTX, every
 * conversion has its select and there are fewer branches than conversions (a branch each,
 * when the conversion sat in one arm of ?:). */
static void test_bf16_store(void **state) {
    (void)state;
    const char *text = "kernel tobf16(X: f32[256] global, Y: bf16[256] global) threads=64 {\n"
                       "  cta.map(Y, X * 2)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "tobf16.tile", text, strlen(text), &p), TILEC_OK);
    char *src;
    assert_int_equal(tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &src, NULL), TILEC_OK);
    assert_non_null(strstr(src, CG_P "pack_bf16x2(")); /* the stores, two at once */
    if (available(TILEC_BACKEND_CUDA)) {
        rtc_result r;
        assert_int_equal(rtc_compile(ctx, TILEC_BACKEND_CUDA, "sm_90", 32, "tobf16.cu", src, RTC_PTX, &r), TILEC_OK);
        int pairs = count_of(r.data, "cvt.rn.bf16x2.f32");
        assert_true(pairs >= 2);
        assert_int_equal(count_of(r.data, "min.s16x2"), pairs);
        assert_int_equal(count_of(r.data, "cvt.rn.bf16.f32"), 0);
        assert_int_equal(count_of(r.data, "selp.b16"), 0);
        rtc_result_free(&r);
        assert_int_equal(rtc_compile(ctx, TILEC_BACKEND_CUDA, "sm_80", 32, "tobf16.cu", src, RTC_PTX, &r), TILEC_OK);
        int cvt = count_of(r.data, "cvt.rn.bf16.f32"), selp = count_of(r.data, "selp.b16"), bra = count_of(r.data, "bra");
        assert_true(cvt >= 4);
        assert_true(selp >= cvt);
        assert_true(bra < cvt);
        assert_int_equal(count_of(r.data, "min.s16x2"), 0);
        rtc_result_free(&r);
        assert_int_equal(rtc_compile(ctx, TILEC_BACKEND_CUDA, "sm_75", 32, "tobf16.cu", src, RTC_PTX, &r), TILEC_OK);
        assert_int_equal(count_of(r.data, "cvt.rn.bf16.f32"), 0); /* sm_75 has no such instruction */
        rtc_result_free(&r);
    }
    tilec_free(src);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* The instructions of a PTX text: lines that start with a tab and an opcode (or a
 * predicate), not a directive or a label. */
static int ptx_instructions(const char *ptx) {
    int n = 0;
    for (const char *q = ptx; (q = strstr(q, "\n\t")); q += 2)
        if ((q[2] >= 'a' && q[2] <= 'z') || q[2] == '@') n++;
    return n;
}

/* A bf16 element of a vector load is widened from the load's 32-bit word — `w << 16` for
 * the low half, `w & 0xffff0000` for the high one, an instruction each — not taken out of
 * the word first and then shifted: the source says so, the PTX has no 16-bit extraction
 * (`cvt.u32.u16`), and at the same plan the bf16 kernel's PTX is within an eighth of the
 * f16 one's (it was a quarter larger: 326 instructions against 262). */
static void test_bf16_widen(void **state) {
    (void)state;
    const char *text = "kernel rows(A: bf16[64, 128] global, B: f32[64] global) threads=256 {\n"
                       "  shared As: bf16[64, 128]\n  shared Bs: f32[64]\n  cta.copy(As, A)\n  cta.sync()\n"
                       "  cta.sum(Bs, As, axes=(-1))\n  cta.sync()\n  cta.copy(B, Bs)\n}\n";
    char *f16_text = strdup(text);
    for (char *q = f16_text; (q = strstr(q, "bf16")); q += 4) memmove(q, q + 1, strlen(q + 1) + 1);
    tilec_ctx *ctx;
    tilec_open(&ctx);
    char *src[2];
    for (int i = 0; i < 2; i++) {
        tilec_program *p;
        const char *t = i ? f16_text : text;
        assert_int_equal(tilec_parse(ctx, "rows.tile", t, strlen(t), &p), TILEC_OK);
        assert_int_equal(tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &src[i], NULL), TILEC_OK);
        tilec_program_free(p);
    }
    const char *body = strstr(src[0], "extern \"C\" __global__");
    assert_non_null(body);
    assert_null(strstr(body, CG_P "bf16_to_f32("));
    assert_true(count_of(body, " & 0xffff0000u)") >= 8 && count_of(body, " << 16)") >= 8);
    assert_non_null(strstr(body, "*(const " CG_P "u16x8 *)&A[")); /* the copy's load stays 16-bit elements */
    assert_null(strstr(body, "u32x4 *)&As[")); /* memory is read as its own type */
    assert_true(count_of(body, " = tl_v.w.e[") >= 8); /* through a union with the loaded 16-bit vector */
    if (available(TILEC_BACKEND_CUDA)) {
        int count[2];
        for (int i = 0; i < 2; i++) {
            rtc_result r;
            assert_int_equal(rtc_compile(ctx, TILEC_BACKEND_CUDA, "sm_90", 32, "rows.cu", src[i], RTC_PTX, &r), TILEC_OK);
            count[i] = ptx_instructions(r.data);
            if (i == 0) assert_int_equal(count_of(r.data, "cvt.u32.u16"), 0);
            rtc_result_free(&r);
        }
        if (count[0] > count[1] + count[1] / 8)
            fail_msg("bf16 rows: %d PTX instructions against f16's %d at the same plan", count[0], count[1]);
    }
    for (int i = 0; i < 2; i++) tilec_free(src[i]);
    free(f16_text);
    tilec_close(ctx);
}

/* A vector load of bf16 whose registers are read both widened and as bits (stored again as
 * bf16): the words and the 16-bit registers are both set, each from the loaded vector;
 * a load whose registers another statement also sets keeps its 16-bit elements. Built as
 * loop IR, since no tile statement lowers to it today; every compiler here accepts it. */
static void test_bf16_widen_mixed(void **state) {
    (void)state;
    const char *text = "kernel mixed(X: bf16[16] global, Y: f32[16] global, Z: bf16[16] global) threads=32 {\n"
                       "  cta.copy(Z, X)\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "mixed.tile", text, strlen(text), &p), TILEC_OK);
    const tilec_kernel *tk = p->kernels[0];
    lp_kernel *k = lp_kernel_new(p, tk, 32);
    lp_buf *x = lp_buf_for(k, tk->params[0]), *y = lp_buf_for(k, tk->params[1]), *z = lp_buf_for(k, tk->params[2]);
    int first = lp_reg_new(k, LP_BF16, "x");
    for (int v = 1; v < 8; v++) lp_reg_new(k, LP_BF16, "x");
    lp_vload(k, &k->body, first, 8, x, lp_int(k, LP_I32, 0));
    for (int v = 0; v < 8; v++) /* every element widened */
        lp_store(k, &k->body, y, lp_int(k, LP_I32, v), lp_cast(k, LP_F32, lp_reg(k, first + v)));
    lp_vstore(k, &k->body, z, lp_int(k, LP_I32, 0), first, 8); /* and stored as bits */
    int pair = lp_reg_new(k, LP_BF16, "pw"); /* a 4-byte load, read only widened: no 16-bit register */
    lp_reg_new(k, LP_BF16, "pw");
    lp_vload(k, &k->body, pair, 2, x, lp_int(k, LP_I32, 12));
    lp_store(k, &k->body, y, lp_int(k, LP_I32, 12), lp_cast(k, LP_F32, lp_reg(k, pair)));
    lp_store(k, &k->body, y, lp_int(k, LP_I32, 13), lp_cast(k, LP_F32, lp_reg(k, pair + 1)));
    int again = lp_reg_new(k, LP_BF16, "y"); /* set twice: stays 16-bit */
    lp_reg_new(k, LP_BF16, "y");
    lp_vload(k, &k->body, again, 2, x, lp_int(k, LP_I32, 8));
    lp_vload(k, &k->body, again, 2, x, lp_int(k, LP_I32, 10));
    lp_store(k, &k->body, y, lp_int(k, LP_I32, 8), lp_cast(k, LP_F32, lp_reg(k, again + 1)));
    assert_false(k->oom);
    static const struct { const cg_target *t; tilec_backend b; const char *arch; } kinds[] = {
        {&cg_cuda, TILEC_BACKEND_CUDA, "sm_90"}, {&cg_hip, TILEC_BACKEND_HIP, "gfx90a"}};
    for (size_t i = 0; i < COUNT(kinds); i++) {
        ir_str s = {0};
        lp_kernel *ks[1] = {k};
        cg_emit_program(&s, kinds[i].t, p, ks);
        assert_false(s.oom);
        const char *body = strstr(s.data, "extern \"C\" __global__");
        assert_non_null(body);
        char want[160];
        /* the vector is loaded as 16-bit elements and its words read through a union with it,
           never from memory through another type (clang took such a read for memory nothing
           had written) */
        assert_null(strstr(body, "u32x4 *)&X["));
        for (int v = 0; v < 8; v++) { /* every element: its word, its half, and its bits */
            snprintf(want, sizeof want, "Y[%d] = __uint_as_float(tl_w%d_%d %s);", v, first, v / 2,
                     v % 2 ? "& 0xffff0000u" : "<< 16");
            if (!strstr(body, want)) fail_msg("no '%s' in\n%s", want, body);
            snprintf(want, sizeof want, "tl_x%d = tl_v.h.e[%d];", first + v, v);
            if (!strstr(body, want)) fail_msg("no '%s' in\n%s", want, body);
            if (v % 2 == 0) {
                snprintf(want, sizeof want, "tl_w%d_%d = tl_v.w.e[%d];", first, v / 2, v / 2);
                if (!strstr(body, want)) fail_msg("no '%s' in\n%s", want, body);
            }
        }
        snprintf(want, sizeof want, "Y[8] = " CG_P "bf16_to_f32(tl_y%d);", again + 1);
        assert_non_null(strstr(body, want));
        snprintf(want, sizeof want, "tl_w%d_0 = tl_v.w[0];", pair);
        assert_non_null(strstr(body, want));
        snprintf(want, sizeof want, "Y[12] = __uint_as_float(tl_w%d_0 << 16);", pair);
        assert_non_null(strstr(body, want));
        snprintf(want, sizeof want, "Y[13] = __uint_as_float(tl_w%d_0 & 0xffff0000u);", pair);
        assert_non_null(strstr(body, want));
        snprintf(want, sizeof want, "tl_pw%d", pair); /* neither declared nor set */
        assert_null(strstr(body, want));
        if (available(kinds[i].b)) {
            rtc_result r;
            tilec_status st = rtc_compile(ctx, kinds[i].b, kinds[i].arch, kinds[i].b == TILEC_BACKEND_HIP ? 64 : 32,
                                          "mixed.cu", s.data, RTC_BINARY, &r);
            if (st != TILEC_OK) fail_msg("%s does not compile:\n%s\n%s", kinds[i].arch, tilec_diag_text(ctx), s.data);
            rtc_result_free(&r);
        }
        ir_str_free(&s);
    }
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Golden files: the emitted bytes of four examples. Regenerate with scripts/regen-golden. */
static void test_golden(void **state) {
    (void)state;
    static const char *const golden[] = {"row_sum", "row_max_batched", "warp_rows", "tile_row_max"};
    static const struct { tilec_backend b; const char *arch, *ext; } kinds[] = {
        {TILEC_BACKEND_CUDA, "sm_90", "cu"}, {TILEC_BACKEND_HIP, "gfx90a", "hip"}};
    for (size_t i = 0; i < COUNT(golden); i++)
        for (size_t k = 0; k < COUNT(kinds); k++) {
            char *text = example(golden[i]);
            char path[512];
            snprintf(path, sizeof path, "%s/tests/golden/%s.%s", TILEC_SOURCE_ROOT, golden[i], kinds[k].ext);
            char *want = slurp(path);
            if (!want) fail_msg("missing golden file %s (run scripts/regen-golden)", path);
            tilec_ctx *ctx;
            tilec_open(&ctx);
            tilec_program *p;
            assert_int_equal(tilec_parse(ctx, "x.tile", text, strlen(text), &p), TILEC_OK);
            char *got;
            assert_int_equal(tilec_emit(p, &(tilec_target){kinds[k].b, kinds[k].arch, 0}, &got, NULL), TILEC_OK);
            if (strcmp(got, want) != 0)
                fail_msg("%s differs from the emitted source; review the change, then run scripts/regen-golden", path);
            /* the same input gives the same bytes */
            char *again;
            assert_int_equal(tilec_emit(p, &(tilec_target){kinds[k].b, kinds[k].arch, 0}, &again, NULL), TILEC_OK);
            assert_string_equal(got, again);
            tilec_free(again);
            tilec_free(got);
            tilec_program_free(p);
            tilec_close(ctx);
            free(want);
            free(text);
        }
}

/* Names that are keywords, builtins, reserved, ours, or 63 characters long. */
/* The prelude of each ABI is one text per target: two tilec versions whose files share
 * the prelude's guard and names must write the same prelude, or the second file would
 * call the first's helpers. So the prelude is held to a digest (FNV-1a, 64 bits) recorded
 * per ABI; a change to it fails here until CG_PRELUDE_ABI (src/codegen/codegen.h) is
 * bumped and the new digests recorded. */
static uint64_t fnv1a(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

/* The digest of the current ABI's prelude in b's emitted row_sum. */
static uint64_t prelude_digest(tilec_program *p, tilec_backend b) {
    char *src;
    assert_int_equal(tilec_emit(p, &(tilec_target){b, NULL, 0}, &src, NULL), TILEC_OK);
    const char *from = strstr(src, "\n#ifndef TL_P" CG_PRELUDE_ABI "_PRELUDE");
    const char *to = strstr(src, "\n#endif  /* TL_P" CG_PRELUDE_ABI "_PRELUDE */\n");
    assert_non_null(from);
    assert_non_null(to);
    uint64_t got = fnv1a(from, (size_t)(to - from));
    tilec_free(src);
    return got;
}

static void test_prelude_abi(void **state) {
    (void)state;
    static const struct { const char *abi; tilec_backend b; uint64_t digest; } known[] = {
        {"1", TILEC_BACKEND_CUDA, 0xe15fd7e46f32c1c7ull},
        {"1", TILEC_BACKEND_HIP, 0x0f9a1f858fc459eaull},
        {"2", TILEC_BACKEND_CUDA, 0x924b65fb1baf2cb4ull},
        {"2", TILEC_BACKEND_HIP, 0xd7c7943426c57172ull},
        {"3", TILEC_BACKEND_CUDA, 0x1dbd6ec94973a0dfull},
        {"3", TILEC_BACKEND_HIP, 0x6eb0b534ac47a28dull},
    };
    static const tilec_backend sources[] = {TILEC_BACKEND_CUDA, TILEC_BACKEND_HIP};
    char *text = example("row_sum");
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "row_sum.tile", text, strlen(text), &p), TILEC_OK);
    /* every target's prelude of the current ABI has its digest recorded, and it matches: a
       bumped ABI without a record fails as a changed prelude does */
    for (size_t t = 0; t < COUNT(sources); t++) {
        uint64_t got = prelude_digest(p, sources[t]);
        size_t i = 0;
        while (i < COUNT(known) && !(strcmp(known[i].abi, CG_PRELUDE_ABI) == 0 && known[i].b == sources[t])) i++;
        if (i == COUNT(known))
            fail_msg("no digest recorded for the %s prelude of ABI %s: add {\"%s\", ..., 0x%016llxull} to known[] here",
                     tilec_backend_name(sources[t]), CG_PRELUDE_ABI, CG_PRELUDE_ABI, (unsigned long long)got);
        if (got != known[i].digest)
            fail_msg("the %s prelude of ABI %s changed (digest 0x%016llxull, recorded 0x%016llxull): bump "
                     "CG_PRELUDE_ABI in src/codegen/codegen.h and record the new ABI's digests here",
                     tilec_backend_name(sources[t]), CG_PRELUDE_ABI, (unsigned long long)got,
                     (unsigned long long)known[i].digest);
    }
    tilec_program_free(p);
    tilec_close(ctx);
    free(text);
}

static void test_hostile_names(void **state) {
    (void)state;
    char long_name[64];
    memset(long_name, 'q', 63);
    long_name[63] = '\0';
    char src[4096];
    snprintf(src, sizeof src,
             "kernel __global__(asm: f32[4, 8] global, int: f32[4] global, threadIdx: f32[4] global, %s: f32[4] global) threads=32 {\n"
             "  shared tl_acc1: f32[4, 8]\n  shared __shared__: f32[4]\n  shared max: f32[4]\n  local float: f32[8]\n"
             "  cta.copy(tl_acc1, asm)\n  cta.sync()\n  cta.sum(__shared__, tl_acc1)\n  cta.max(max, tl_acc1)\n"
             "  cta.copy(int, __shared__)\n  cta.copy(threadIdx, max)\n  thread.copy(float, asm[0])\n"
             "  thread[0].copy(%s, float[0:4])\n}\n"
             "kernel %s(sizeof: f32[2] global) threads=1 {\n  thread.fill(sizeof, nan)\n}\n"
             "func tl_main(void: f32[4] shared, return: f32[1] shared) threads=32 {\n  cta.min(return, void, axes=(0))\n}\n",
             long_name, long_name, long_name + 1);
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "hostile.tile", src, strlen(src), &p), TILEC_OK);
    assert_int_equal(tilec_verify(p, NULL), TILEC_OK);
    char *code;
    assert_int_equal(tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &code, NULL), TILEC_OK);
    assert_non_null(strstr(code, "__launch_bounds__(32) tl_u___global__("));
    assert_non_null(strstr(code, "tl_u_tl_acc1"));
    assert_non_null(strstr(code, "__device__ void tl_u_tl_main("));
    tilec_launch_info info;
    assert_int_equal(tilec_launch_info_get(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, "__global__", &info), TILEC_OK);
    assert_string_equal(info.symbol, "tl_u___global__");
    tilec_free(code);
    tilec_program_free(p);
    tilec_close(ctx);
    compile_everywhere("hostile.tile", src);
}

/* A compiler that does not know the arch says so and what it knows; a bad arch is bad usage. */
static void test_unknown_arch(void **state) {
    (void)state;
    char *text = example("row_sum");
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "row_sum.tile", text, strlen(text), &p), TILEC_OK);
    void *bin = NULL;
    size_t n;
    assert_int_equal(tilec_compile(p, &(tilec_target){TILEC_BACKEND_CUDA, "gfx90a", 0}, &bin, &n), TILEC_ERR_INVALID_ARG);
    if (available(TILEC_BACKEND_CUDA)) {
        assert_int_equal(tilec_compile(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_10", 0}, &bin, &n), TILEC_ERR_UNAVAILABLE);
        assert_non_null(strstr(tilec_diag_text(ctx), "does not compile for sm_10; it knows: "));
    }
    if (available(TILEC_BACKEND_HIP) && !strstr(rtc_version(TILEC_BACKEND_HIP), "hiprtc.so.")) {
        /* ROCm 5 (Debian 12) knows no gfx1100; a newer ROCm compiles it, which is fine too */
        tilec_status st = tilec_compile(p, &(tilec_target){TILEC_BACKEND_HIP, "gfx1100", 0}, &bin, &n);
        if (st == TILEC_ERR_UNAVAILABLE) { /* and where to find one that does */
            assert_non_null(strstr(tilec_diag_text(ctx), "does not know gfx1100; it compiles for: "));
            assert_non_null(strstr(tilec_diag_text(ctx), "A newer ROCm knows more archs: set TILEC_HIPRTC_PATH to its "
                                                         "hiprtc (libhiprtc.so, or ROCm 5's libamdhip64.so.5); on Debian "
                                                         "12, tilec's scripts/with-rocm-root runs a program"));
        } else {
            assert_int_equal(st, TILEC_OK);
        }
        tilec_free(bin);
        bin = NULL;
    }
    tilec_program_free(p);
    tilec_close(ctx);
    free(text);
}

/* argmax, argmin and aminmax of f64 and i64 fold 128-bit keys (i64x2: lower_util.c): the
 * grid variants that split an output over CTAs and fold their partials, columns, and a
 * warp's registers (shuffles of the key's two i64s) compile for every target; the source
 * holds the pairs and shuffles their halves, so the wide path is what was compiled. */
static void test_wide_keys_compile(void **state) {
    (void)state;
    const char *text =
        "kernel gr(A: f64[8, 300000] global, V: f64[8] global, I: i64[8] global) threads=256 {\n"
        "  grid.argmax(V, I, A, axes=(1), nan=ignore)\n}\n"
        "kernel gc(A: i64[300000, 5] global, V: i64[5] global, I: i32[5] global) threads=256 {\n"
        "  grid.argmin(V, I, A, axes=(0))\n}\n"
        "kernel mr(A: i64[4, 200000] global, L: i64[4] global, H: i64[4] global) threads=256 {\n"
        "  grid.aminmax(L, H, A, axes=(1))\n}\n"
        "kernel mc(A: f64[100000, 9] global, L: f64[9] global, H: f64[9] global) threads=256 {\n"
        "  grid.aminmax(L, H, A, axes=(0))\n}\n"
        "kernel wr(A: i64[64, 4] global, B: i64[64] global, C: i64[64] global) threads=64 {\n"
        "  local L: i64[4]\n  local M: i64[1]\n  local X: i64[1]\n  thread.copy(L, A[thread_id])\n"
        "  warp.aminmax(M, X, L)\n  thread.copy(B[thread_id], M)\n  thread.copy(C[thread_id], X)\n}\n";
    compile_everywhere("wide_keys.tile", text);
    for (size_t t = 0; t < ntargets; t++) {
        tilec_ctx *ctx;
        tilec_open(&ctx);
        tilec_program *p;
        assert_int_equal(tilec_parse(ctx, "wide_keys.tile", text, strlen(text), &p), TILEC_OK);
        char *src = NULL;
        tilec_target tg = {targets[t].backend, targets[t].arch, 0};
        assert_int_equal(tilec_emit(p, &tg, &src, NULL), TILEC_OK);
        assert_non_null(strstr(src, CG_P "i64x2{{"));
        assert_non_null(strstr(src, "__double_as_longlong("));
        assert_non_null(strstr(src, ".e[1], 1, ")); /* a shuffle of a key's second half */
        tilec_free(src);
        tilec_program_free(p);
        tilec_close(ctx);
    }
}

/* grid_rows' choices that show in the source (docs/dispatch.md, grid_rows): a 16-bit ragged
 * run of a one-register state asks eight CTAs an SM, a whole one does not; logsumexp's
 * leaves are floats, not 64-bit keys (they held 109 registers a thread in bf16). */
static void test_grid_rows_source(void **state) {
    (void)state;
    const char *src = "kernel rs(A: bf16[4, 5000] global, B: bf16[4] global) threads=256 {\n  grid.sum(B, A, axes=(1))\n}\n"
                      "kernel rw(A: bf16[4, 4096] global, B: bf16[4] global) threads=256 {\n  grid.sum(B, A, axes=(1))\n}\n"
                      "kernel ra(A: bf16[4, 5000] global, B: bf16[4] global, C: i64[4] global) threads=256 {\n"
                      "  grid.argmax(B, C, A, axes=(1))\n}\n"
                      "kernel rl(A: bf16[4, 5000] global, B: bf16[4] global) threads=256 {\n  grid.logsumexp(B, A, axes=(1))\n}\n";
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p;
    assert_int_equal(tilec_parse(ctx, "rows.tile", src, strlen(src), &p), TILEC_OK);
    char *code;
    assert_int_equal(tilec_emit(p, &(tilec_target){TILEC_BACKEND_CUDA, "sm_90", 0}, &code, NULL), TILEC_OK);
    assert_non_null(strstr(code, "__launch_bounds__(256, 8) rs("));
    assert_non_null(strstr(code, "__launch_bounds__(256) rw("));
    assert_non_null(strstr(code, "__launch_bounds__(256) ra(")); /* a key: no bound */
    const char *rl = strstr(code, " rl(");
    assert_non_null(rl);
    assert_non_null(strstr(rl, "float tl_leaf"));
    assert_null(strstr(rl, "long long tl_leaf"));
    tilec_free(code);
    tilec_program_free(p);
    tilec_close(ctx);
    compile_everywhere("rows.tile", src);
}

/* math=approx: exp, exp2 and logsumexp's fold of f32 by the hardware's 2^x, defined once
 * beside the prelude under a guard of its own (two such files in one translation unit
 * compile), and not at all in a file without an approx kernel; every target compiles it. */
static void test_approx_math(void **state) {
    (void)state;
    const char *text = "kernel soft(X: bf16[4, 256] global, Y: bf16[4, 256] global) threads=128 math=approx {\n"
                       "  shared L: f32[4, 1]\n  cta.logsumexp(L, X, axes=(-1))\n"
                       "  cta.map(Y, exp(X - L))\n}\n";
    char *exact = strdup(text), *other = strdup(text);
    memcpy(strstr(exact, " math=approx"), "            ", 12);
    memcpy(strstr(other, "soft("), "sof2(", 5);
    tilec_ctx *ctx;
    tilec_open(&ctx);
    const char *texts[3] = {text, exact, other};
    char *src[3][2];
    const tilec_backend bs[2] = {TILEC_BACKEND_CUDA, TILEC_BACKEND_HIP};
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 2; b++) {
            tilec_program *p;
            assert_int_equal(tilec_parse(ctx, "soft.tile", texts[i], strlen(texts[i]), &p), TILEC_OK);
            assert_int_equal(tilec_kernel_math(tilec_program_kernel(p, 0)), i == 1 ? TILEC_MATH_EXACT : TILEC_MATH_APPROX);
            tilec_target tg = {bs[b], b ? "gfx90a" : "sm_90", 0};
            assert_int_equal(tilec_emit(p, &tg, &src[i][b], NULL), TILEC_OK);
            tilec_program_free(p);
        }
    for (int b = 0; b < 2; b++) {
        const char *body = strstr(src[0][b], "extern \"C\" __global__");
        assert_non_null(body);
        assert_int_equal(count_of(src[0][b], "#ifndef TL_P" CG_PRELUDE_ABI "_EXP2_APPROX"), 1);
        assert_non_null(strstr(src[0][b], b ? "v_exp_f32" : "ex2.approx.ftz.f32"));
        assert_true(count_of(body, CG_P "exp2_approx_f32(") >= 16); /* the map's and the fold's */
        assert_null(strstr(body, "12582912"));                       /* no polynomial exponential */
        assert_null(strstr(src[1][b], "exp2_approx"));                /* exact math: nothing of it */
        assert_non_null(strstr(src[1][b], "12582912"));
    }
    if (available(TILEC_BACKEND_CUDA)) {
        size_t n0 = strlen(src[0][0]), n2 = strlen(src[2][0]);
        char *both = malloc(n0 + n2 + 1);
        memcpy(both, src[0][0], n0);
        memcpy(both + n0, src[2][0], n2 + 1);
        rtc_result r;
        assert_int_equal(rtc_compile(ctx, TILEC_BACKEND_CUDA, "sm_90", 32, "both.cu", both, RTC_PTX, &r), TILEC_OK);
        assert_true(count_of(r.data, "ex2.approx.ftz.f32") >= 32); /* both kernels' */
        rtc_result_free(&r);
        free(both);
    }
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 2; b++) tilec_free(src[i][b]);
    free(exact);
    free(other);
    tilec_close(ctx);
    compile_everywhere("soft.tile", text);
}

int main(void) {
    const char *chosen = getenv("TILEC_TEST_TARGETS");
    choose_targets(chosen);
    if (chosen && *chosen) {
        if (!ntargets) {
            fprintf(stderr, "TILEC_TEST_TARGETS='%s' names no target (gfx942,gfx1100 or sm_90…)\n", chosen);
            return 2;
        }
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_hostile_names),
            cmocka_unit_test(test_grid_rows_source),
            cmocka_unit_test(test_examples_compile),
            cmocka_unit_test(test_matrix_compiles),
            cmocka_unit_test(test_wide_keys_compile),
            cmocka_unit_test(test_approx_math),
        };
        return cmocka_run_group_tests_name("emitted code, chosen targets", tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_sum_shared_source_and_ptx),
        cmocka_unit_test(test_bf16_store),
        cmocka_unit_test(test_bf16_widen),
        cmocka_unit_test(test_bf16_widen_mixed),
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_hostile_names),
        cmocka_unit_test(test_grid_rows_source),
        cmocka_unit_test(test_prelude_abi),
        cmocka_unit_test(test_unknown_arch),
        cmocka_unit_test(test_examples_compile),
        cmocka_unit_test(test_matrix_compiles),
        cmocka_unit_test(test_wide_keys_compile),
        cmocka_unit_test(test_approx_math),
        cmocka_unit_test(test_map_nan_select),
        cmocka_unit_test(test_lse_many_fold),
    };
    return cmocka_run_group_tests_name("emitted code", tests, NULL, NULL);
}
