/*
 * test_parse.c — the `.tile` parser and printer: what is read, that printing is canonical
 * and stable (fmt(fmt(x)) == fmt(x)), that parsing the printed text gives the same IR, and
 * that comments, numbers and positions survive.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>

#include "../src/ir/ir.h"
#include "support.h"

static const char *const examples[] = {"row_sum", "row_max_batched", "col_sum", "warp_rows",
                                       "tile_row_max"};

static char *read_example(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s.tile", TILEC_SOURCE_ROOT, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static tilec_program *parse_ok(tilec_ctx *ctx, const char *text) {
    tilec_program *p = NULL;
    tilec_status st = tilec_parse(ctx, "t.tile", text, strlen(text), &p);
    if (st != TILEC_OK) fail_msg("parse failed:\n%s", tilec_diag_text(ctx));
    return p;
}

/* ---- structural equality of two programs (what "the same IR" means) ------------------ */

static void assert_buffers_equal(const tilec_buffer *a, const tilec_buffer *b) {
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->dtype, b->dtype);
    assert_int_equal(a->space, b->space);
    assert_int_equal(a->rank, b->rank);
    assert_memory_equal(a->shape, b->shape, sizeof a->shape);
    assert_int_equal(a->has_strides, b->has_strides);
    assert_memory_equal(a->strides, b->strides, sizeof a->strides);
}

static void assert_regions_equal(const ir_region *a, const ir_region *b) {
    if (!a->buf || !b->buf) { assert_ptr_equal(a->buf, b->buf); return; }
    assert_string_equal(a->buf->name, b->buf->name);
    assert_int_equal(a->nindex, b->nindex);
    for (int i = 0; i < a->nindex; i++) {
        const ir_index *x = &a->index[i], *y = &b->index[i];
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->has_start, y->has_start);
        assert_int_equal(x->has_stop, y->has_stop);
        if (x->has_start) assert_int_equal(x->start, y->start);
        if (x->has_stop) assert_int_equal(x->stop, y->stop);
        if (x->kind == TILEC_INDEX_ID) assert_int_equal(x->id, y->id);
    }
}

/* Two expression trees are the same: kinds, operators, infix and parentheses as written,
 * operand regions, numbers bit for bit (as written: the sign of -0.0, a NaN). */
static void assert_exprs_equal(const ir_expr *a, const ir_expr *b) {
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->parens, b->parens);
    switch (a->kind) {
    case IR_X_REGION: assert_regions_equal(&a->region, &b->region); break;
    case IR_X_CONST:
        assert_int_equal(a->value.is_int, b->value.is_int);
        if (a->value.is_int) assert_true(a->value.i == b->value.i);
        else if (!(isnan(a->value.f) && isnan(b->value.f))) assert_memory_equal(&a->value.f, &b->value.f, sizeof(double));
        break;
    case IR_X_INDEX: assert_int_equal(a->axis, b->axis); break;
    case IR_X_CAST:
        assert_int_equal(a->to, b->to);
        assert_exprs_equal(a->args[0], b->args[0]);
        break;
    case IR_X_OP:
        assert_int_equal(a->op, b->op);
        assert_int_equal(a->infix, b->infix);
        for (int i = 0; i < ir_ewop_arity(a->op); i++) assert_exprs_equal(a->args[i], b->args[i]);
        break;
    case IR_X_GATHER:
        assert_regions_equal(&a->region, &b->region);
        assert_int_equal(a->axis, b->axis);
        assert_exprs_equal(a->args[0], b->args[0]);
        break;
    }
}

static void assert_programs_equal(const tilec_program *a, const tilec_program *b) {
    assert_int_equal(a->nkernels, b->nkernels);
    for (int i = 0; i < a->nkernels; i++) {
        const tilec_kernel *x = a->kernels[i], *y = b->kernels[i];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->is_func, y->is_func);
        assert_int_equal(x->threads, y->threads);
        assert_int_equal(x->grid, y->grid);
        assert_int_equal(x->math, y->math);
        assert_int_equal(x->nparams, y->nparams);
        for (int j = 0; j < x->nparams; j++) assert_buffers_equal(x->params[j], y->params[j]);
        assert_int_equal(x->nstmts, y->nstmts);
        for (int j = 0; j < x->nstmts; j++) {
            const ir_stmt *s = x->stmts[j], *t = y->stmts[j];
            assert_int_equal(s->kind, t->kind);
            if (s->kind == IR_ALLOC) { assert_buffers_equal(s->alloc, t->alloc); continue; }
            assert_int_equal(s->exec.scope, t->exec.scope);
            assert_int_equal(s->exec.instance, t->exec.instance);
            assert_regions_equal(&s->dst, &t->dst);
            assert_regions_equal(&s->src, &t->src);
            if (s->kind == IR_FILL) {
                assert_int_equal(s->fill.is_int, t->fill.is_int);
                /* the same value stored: the integer, or the float rounded once to the
                 * destination's dtype (the text may differ: fmt prints the shortest) */
                assert_int_equal(s->fill.dtype, t->fill.dtype);
                if (!ir_dtype_is_float(s->fill.dtype)) assert_int_equal(s->fill.exact, t->fill.exact);
                if (s->fill.is_int || !ir_dtype_is_float(s->fill.dtype)) assert_true(s->fill.i == t->fill.i);
                else if (!(isnan(s->fill.typed) && isnan(t->fill.typed)))
                    assert_memory_equal(&s->fill.typed, &t->fill.typed, sizeof(double));
            }
            if (s->kind == IR_MAP) {
                assert_exprs_equal(s->expr, t->expr);
                assert_int_equal(s->variant != NULL, t->variant != NULL);
                if (s->variant) assert_string_equal(s->variant, t->variant);
            }
            if (s->kind == IR_REDUCE) {
                assert_int_equal(s->op, t->op);
                assert_int_equal(s->naxes, t->naxes);
                assert_memory_equal(s->axes, t->axes, (size_t)s->naxes * sizeof(int));
                assert_int_equal(s->accum, t->accum);
                assert_int_equal(s->nan, t->nan);
                if (s->variant || t->variant) {
                    assert_non_null(s->variant);
                    assert_non_null(t->variant);
                    assert_string_equal(s->variant, t->variant);
                }
            }
        }
    }
}

/* fmt(x) parses to the same IR as x, and fmt(fmt(x)) == fmt(x). */
static void assert_round_trip(const char *text) {
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *a = parse_ok(ctx, text);
    char *once = NULL, *twice = NULL;
    size_t n1, n2;
    assert_int_equal(tilec_format(a, &once, &n1), TILEC_OK);
    assert_int_equal(strlen(once), n1);
    tilec_program *b = parse_ok(ctx, once);
    assert_programs_equal(a, b);
    assert_int_equal(tilec_format(b, &twice, &n2), TILEC_OK);
    assert_string_equal(once, twice);
    tilec_free(once);
    tilec_free(twice);
    tilec_program_free(a);
    tilec_program_free(b);
    tilec_close(ctx);
}

static void test_examples_round_trip(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        char *text = read_example(examples[i]);
        assert_round_trip(text);
        free(text);
    }
}

/* Every construct of the grammar, written loosely, round-trips. */
static const char *const loose =
    "# leading comment of the kernel\n"
    "kernel   all(A:f32[8,16,4]global,B:f32[8,4] global ,C: i64[7] global, D: bf16[2] global,\n"
    "           E: f16[3] global, F: u32[5] global, G: i32[1] global, H: f64[9, 2] global)\n"
    "   threads = 256 grid=1 {   # trailing on the header\n"
    "  shared As : f32[8, 16, 4] strides=(80, 5, 1,)\n"
    "\n\n"
    "  # about the copy\n"
    "  cta.copy(As, A)   # trailing\n"
    "  cta . sync ( )\n"
    "  cta.max(B, As, axes=1, nan=ignore, accum=true, variant=shared,)\n"
    "  warp[3].sync()\n"
    "  thread[7].fill(C[-1], -9223372036854775808)\n"
    "  cta.fill(H[:, 1:], -inf)\n"
    "  cta.fill(H[2:5, :1], 1e-3)\n"
    "  cta.sync()\n"
    "  warpgroup.min(B[0:2, :], As[0:2, 3, :] , axes=(-1, 0))\n"
    "  # before the closing brace\n"
    "}\n"
    "func f(S: f32[4, 4] shared, L: f32[4] local) threads=32 {\n"
    "  thread.sum(L, S[0:4, 0:4], axes=(0))\n"
    "}\n"
    "# at the very end\n";

static void test_loose_text_round_trips(void **state) {
    (void)state;
    assert_round_trip(loose);
}

static void test_canonical_text(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    char *out = format_text(ctx, loose);
    assert_non_null(out);
    const char *want =
        "# leading comment of the kernel\n"
        "kernel all(A: f32[8, 16, 4] global, B: f32[8, 4] global, C: i64[7] global, D: bf16[2] "
        "global, E: f16[3] global, F: u32[5] global, G: i32[1] global, H: f64[9, 2] global) "
        "threads=256 {  # trailing on the header\n"
        "  shared As: f32[8, 16, 4] strides=(80, 5, 1)\n"
        "\n"
        "  # about the copy\n"
        "  cta.copy(As, A)  # trailing\n"
        "  cta.sync()\n"
        "  cta.max(B, As, axes=(1), accum=true, nan=ignore, variant=shared)\n"
        "  warp[3].sync()\n"
        "  thread[7].fill(C[-1], -9223372036854775808)\n"
        "  cta.fill(H[:, 1:], -inf)\n"
        "  cta.fill(H[2:5, :1], 0.001)\n"
        "  cta.sync()\n"
        "  warpgroup.min(B[0:2, :], As[0:2, 3, :], axes=(-1, 0))\n"
        "  # before the closing brace\n"
        "}\n"
        "\n"
        "func f(S: f32[4, 4] shared, L: f32[4] local) threads=32 {\n"
        "  thread.sum(L, S[0:4, 0:4], axes=(0))\n"
        "}\n"
        "\n"
        "# at the very end\n";
    assert_string_equal(out, want);
    tilec_free(out);
    tilec_close(ctx);
}

/* Fill constants print in their shortest exact form and read back bit for bit. */
static void test_numbers(void **state) {
    (void)state;
    static const struct {
        const char *in, *out;
    } nums[] = {
        {"0", "0"},          {"-7", "-7"},     {"1.5", "1.5"},         {"2.", "2.0"},
        {"-0.0", "-0.0"},    {"0.1", "0.1"},   {"1e-30", "1e-30"},     {"1E+300", "1e+300"},
        {".25", "0.25"},     {"inf", "inf"},   {"-inf", "-inf"},       {"nan", "nan"},
        {"3.4028234663852886e38", "3.4028234663852886e+38"},           {"5e-324", "5e-324"},
        {"123456789.125", "123456789.125"},    {"9223372036854775807", "9223372036854775807"},
    };
    tilec_ctx *ctx;
    tilec_open(&ctx);
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        char src[256], want[256];
        snprintf(src, sizeof src, "kernel k(A: f64[4] global) threads=32 {\n  cta.fill(A, %s)\n}\n", nums[i].in);
        snprintf(want, sizeof want, "kernel k(A: f64[4] global) threads=32 {\n  cta.fill(A, %s)\n}\n", nums[i].out);
        char *out = format_text(ctx, src);
        if (!out) fail_msg("%s: %s", nums[i].in, tilec_diag_text(ctx));
        assert_string_equal(out, want);
        assert_round_trip(src);
        tilec_free(out);
    }
    tilec_close(ctx);
}

/* The parser records where everything is, for diagnostics. */
static void test_positions(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    const char *text = "kernel k(A: f32[4, 8] global,\n         B: f32[4] global) threads=32 {\n"
                       "  shared As: f32[4, 8]\n  cta.copy(As, A)\n  cta.sync()\n"
                       "\tcta.sum(B, As, axes=(1))\n}\n";
    tilec_program *p = parse_ok(ctx, text);
    const tilec_kernel *k = p->kernels[0];
    assert_int_equal(k->pos.line, 1);
    assert_int_equal(k->params[1]->pos.line, 2);
    assert_int_equal(k->params[1]->pos.col, 10);
    const ir_stmt *sum = k->stmts[3];
    assert_int_equal(sum->kind, IR_REDUCE);
    assert_int_equal(sum->pos.line, 6);
    assert_int_equal(sum->pos.col, 2); /* a tab is one column */
    assert_int_equal(sum->op_pos.col, 6);
    assert_int_equal(sum->dst.pos.col, 10);
    assert_int_equal(sum->src.pos.col, 13);
    assert_int_equal(sum->axes_pos.col, 22);
    assert_int_equal(sum->naxes, 1);
    assert_int_equal(sum->axes[0], 1);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* The defaults the format states: axes (-1), accum false, nan propagate, grid 1. */
static void test_defaults(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    tilec_program *p = parse_ok(ctx, "kernel k(A: f32[4, 8] global, B: f32[4] global) threads=32 {\n"
                                     "  shared As: f32[4, 8]\n  cta.copy(As, A)\n  cta.sync()\n"
                                     "  cta.max(B, As)\n}\n");
    const tilec_kernel *k = p->kernels[0];
    assert_int_equal(k->grid, 1);
    assert_int_equal(k->math, TILEC_MATH_EXACT);
    const ir_stmt *m = k->stmts[3];
    assert_int_equal(m->naxes, 1);
    assert_int_equal(m->axes[0], -1);
    assert_false(m->accum);
    assert_int_equal(m->nan, TILEC_NAN_PROPAGATE);
    assert_null(m->variant);
    assert_int_equal(m->exec.instance, -1);
    /* row-major strides are filled in */
    assert_int_equal(k->stmts[0]->alloc->strides[0], 8);
    assert_int_equal(k->stmts[0]->alloc->strides[1], 1);
    tilec_program_free(p);
    tilec_close(ctx);
}

/* Names that are keywords elsewhere (C, CUDA, this format) are plain names here. */
static void test_keyword_names(void **state) {
    (void)state;
    assert_round_trip("kernel kernel(int: f32[4] global, axes: f32[4] global, shared: f32[1] global) threads=32 {\n"
                      "  shared cta: f32[4]\n  cta.copy(cta, int)\n  cta.sync()\n"
                      "  cta.sum(shared, cta, axes=(0))\n  cta.copy(axes, int)\n}\n");
    char name[64];
    memset(name, 'z', 63);
    name[63] = '\0';
    char src[256];
    snprintf(src, sizeof src, "kernel %s(%s: f32[4] global) threads=32 {\n}\n", name, name);
    assert_round_trip(src);
}

/* Fill values keep their meaning through fmt in every dtype: rounded once (halfway cases
 * of f16, bf16, f32), integral decimals in integer buffers, integers wider than 64 bits
 * in float buffers, and values past a dtype's range (which only the verifier refuses:
 * fmt printed `inf.0` for them once, found by the fuzzer). */
static void test_fill_values_round_trip(void **state) {
    (void)state;
    assert_round_trip("kernel k(A: f32[4] global) threads=32 {\n"
                      "  shared H: f16[4]\n  shared G: bf16[4]\n  shared F: f32[4]\n  shared I: i64[4]\n"
                      "  cta.fill(H, 1e6)\n  cta.fill(H, -70000.5)\n  cta.fill(G, 1e39)\n  cta.fill(F, 1e39)\n"
                      "  cta.fill(H, 1.00048828125000000001)\n  cta.fill(G, 1.00390625)\n"
                      "  cta.fill(F, 1.0000000596046447753906250001)\n  cta.fill(F, 100000000000000000000)\n"
                      "  cta.fill(I, 9007199254740993.0)\n  cta.fill(I, 2.5e1)\n  cta.fill(H, -0.0)\n  cta.fill(H, nan)\n"
                      "}\n");
}

/* Map statements: every operator by name and infix, precedence and parentheses, casts,
 * index, numbers (inf, nan, -0.0, 1e-6, integers past 64 bits); fmt is idempotent and the
 * printed text parses to the same tree. */
#define MAP_HEAD "kernel k(S: f32[16, 8] global, m: f32[16, 1] global, P: f32[16, 8] global, w: bf16[8] global, " \
                 "t: i32[16, 8] global) threads=128 {\n"
/* A kernel's and a func's math=: read, printed only when not the default, kept. */
static void test_math_round_trip(void **state) {
    (void)state;
    assert_round_trip("func f(S: f32[4, 8] shared) threads=32 math=approx {\n  cta.map(S, exp(S))\n}\n\n"
                      "kernel k(A: f32[4, 8] global) threads=32 grid=2 math=approx {\n  cta.map(A, exp2(A))\n}\n\n"
                      "kernel e(A: f32[4, 8] global) threads=32 math=exact {\n  cta.map(A, exp2(A))\n}\n");
    tilec_ctx *ctx;
    tilec_open(&ctx);
    char *out = format_text(ctx, "kernel e(A: f32[4] global) threads=32 math = exact {\n}\n"
                                 "kernel a(A: f32[4] global) threads=32  math=approx{\n}\n");
    assert_string_equal(out, "kernel e(A: f32[4] global) threads=32 {\n}\n\nkernel a(A: f32[4] global) threads=32 math=approx {\n}\n");
    tilec_free(out);
    tilec_close(ctx);
}

static void test_map_round_trip(void **state) {
    (void)state;
    assert_round_trip(MAP_HEAD
                      "  cta.map(P, exp(S - m))  # softmax's numerator\n"
                      "  cta.map(P, -2*S+-1.5e-6 - -S, variant=foo,)\n"
                      "  cta.map(P,bf16(f32(S)*rsqrt(m+1e-6))*w)\n"
                      "  cta.map(P, where(eq(index(1), 3), S, 0))\n"
                      "  cta.map(P, where(eq(index(-1), t), S, -inf))\n"
                      "  cta.map(P[0:4, :], (S[4:8, :] - (m[0:4] * 2)) - (S[0:4] - m[:4]) - - -(1) / 0.1 * -inf + nan)\n"
                      "  cta.map(P, 123456789012345678901234567890 + -0.0 + 0.0 + 5e-324 + 9223372036854775807)\n"
                      "  cta.map(P, -9223372036854775808 + 1e300 + .25 + 2.)\n"
                      "  cta.map(P, add(S, sub(S, mul(S, div(S, max(S, min(S, neg(abs(S)))))))))\n"
                      "  cta.map(P, exp(exp2(log(log2(sqrt(rsqrt(S)))))) + fma(S, m, w))\n"
                      "  cta.map(P, eq(S, 1) + ne(S, 1) + lt(S, 1) + le(S, 1) + gt(S, 1) + ge(S, 1))\n"
                      "  cta.map(t, i32(S) + i32(index(0)) * t - -t)\n"
                      "  cta.map(P, f16(S) + bf16(S) + f32(t) + f64(S) + i32(S) + u32(S) + i64(S))\n"
                      "  cta.map(P, ((S)))\n"
                      "  cta.map(P, S - (S - S) - S * (S / S) / (S * S) + -(S * S) + -(-S) + - -1)\n"
                      "}\n");
}

/* The canonical form: one space around infix operators and after commas, parentheses and
 * infix kept as written, numbers in their shortest exact form. */
static void test_map_canonical(void **state) {
    (void)state;
    tilec_ctx *ctx;
    tilec_open(&ctx);
    char *out = format_text(ctx, MAP_HEAD "  cta . map ( P,-2*S+-1.5e-6-(m)/(S-S) , variant = v , )\n"
                                          "  cta.map(P,add(S,-(1))*(2.50+1E3)-- -inf+-0.0+max(nan,100000000000000000000000))\n"
                                          "  warp[1].map(P [ 1 , : ],where(ge(index( -1 ),4),f32(t[1]),S[1]))\n}\n");
    assert_non_null(out);
    assert_string_equal(out, MAP_HEAD "  cta.map(P, -2 * S + -1.5e-06 - (m) / (S - S), variant=v)\n"
                                      "  cta.map(P, add(S, -(1)) * (2.5 + 1e+03) - - -inf + -0.0 + max(nan, 100000000000000000000000))\n"
                                      "  warp[1].map(P[1, :], where(ge(index(-1), 4), f32(t[1]), S[1]))\n}\n");
    /* the tree: precedence and the sign of a number */
    tilec_program *p = parse_ok(ctx, MAP_HEAD "  cta.map(P, 1 - 2 * -S / 4 - 5)\n}\n");
    const ir_expr *e = p->kernels[0]->stmts[0]->expr; /* (1 - ((2 * -S) / 4)) - 5 */
    assert_int_equal(e->kind, IR_X_OP);
    assert_int_equal(e->op, TILEC_EW_SUB);
    assert_int_equal(e->args[1]->kind, IR_X_CONST);
    assert_int_equal(e->args[0]->op, TILEC_EW_SUB);
    const ir_expr *q = e->args[0]->args[1];
    assert_int_equal(q->op, TILEC_EW_DIV);
    assert_int_equal(q->args[0]->op, TILEC_EW_MUL);
    assert_int_equal(q->args[0]->args[1]->op, TILEC_EW_NEG);
    assert_int_equal(q->args[0]->args[1]->args[0]->kind, IR_X_REGION);
    assert_int_equal(q->pos.col, 25); /* the operator's position */
    tilec_program_free(p);
    p = parse_ok(ctx, MAP_HEAD "  cta.map(P, -0.0 - -inf - -7)\n}\n");
    e = p->kernels[0]->stmts[0]->expr;
    assert_true(signbit(e->args[0]->args[0]->value.f) && e->args[0]->args[0]->value.f == 0);
    assert_true(isinf(e->args[0]->args[1]->value.f) && e->args[0]->args[1]->value.f < 0);
    assert_true(e->args[1]->value.is_int && e->args[1]->value.i == -7);
    tilec_program_free(p);
    tilec_free(out);
    tilec_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples_round_trip),
        cmocka_unit_test(test_fill_values_round_trip),
        cmocka_unit_test(test_loose_text_round_trips),
        cmocka_unit_test(test_canonical_text),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_keyword_names),
        cmocka_unit_test(test_math_round_trip),
        cmocka_unit_test(test_map_round_trip),
        cmocka_unit_test(test_map_canonical),
    };
    return cmocka_run_group_tests_name("parse and print", tests, NULL, NULL);
}
