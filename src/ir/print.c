/*
 * print.c — writes tile IR as canonical `.tile` text.
 *
 * Canonical means: two-space indentation, one space after commas, kernels separated by
 * one blank line, at most one blank line between statements (kept where the source had
 * one), keyword arguments in the order axes, accum, nan, correction, variant with defaults left out
 * (axes is always written), numbers in their shortest form that keeps the value their
 * destination stores (exact in f64; rounded once in a narrower dtype). Comments are kept.
 * Parsing the output gives the same IR, so printing it again gives the same bytes.
 */
#include "numeric.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shortest "%g" text of v that reads back to v: exactly in f64, or, for a narrower
 * float dtype, rounded once to the same value of that dtype (so `fmt` keeps what a fill
 * stores). The decimal point is '.', whatever the locale. */
void ir_print_value(ir_str *s, ir_value v) {
    if (v.is_int) { ir_str_printf(s, "%lld", (long long)v.i); return; }
    if (isnan(v.f)) { ir_str_printf(s, "nan"); return; }
    if (isinf(v.f)) { ir_str_printf(s, v.f < 0 ? "-inf" : "inf"); return; }
    if (!ir_dtype_is_float(v.dtype) && v.exact && !v.too_big) { /* an integral decimal: the exact integer */
        ir_str_printf(s, "%lld.0", (long long)v.i);
        return;
    }
    /* a value past the dtype's range (an error the verifier reports) prints as written */
    bool narrow = ir_dtype_is_float(v.dtype) && v.dtype != TILEC_F64 && isfinite(v.typed);
    double want = narrow ? v.typed : v.f;
    const char *dp = localeconv()->decimal_point; /* printf and strtod agree on it */
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, want);
        double back = strtod(buf, NULL);
        if (dp && dp[0] && dp[0] != '.' && !dp[1]) {
            char *c = strchr(buf, dp[0]);
            if (c) *c = '.';
        }
        if (narrow ? num_round_decimal(lp_type_of(v.dtype), buf, strlen(buf), back) == want : back == want) break;
    }
    /* keep it a float when read back: "2" -> "2.0", "-0" -> "-0.0" */
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    ir_str_printf(s, "%s", buf);
}

void ir_print_region(ir_str *s, const ir_region *r) {
    ir_str_printf(s, "%s", r->buf->name);
    if (r->nindex == 0) return;
    ir_str_printf(s, "[");
    for (int i = 0; i < r->nindex; i++) {
        const ir_index *ix = &r->index[i];
        if (i) ir_str_printf(s, ", ");
        switch (ix->kind) {
        case TILEC_INDEX_AT: ir_str_printf(s, "%lld", (long long)ix->start); break;
        case TILEC_INDEX_ID:
        case TILEC_INDEX_RANK: ir_str_printf(s, "%s", ir_index_id_word(ix)); break;
        case TILEC_INDEX_SLICE:
            if (ix->has_start) ir_str_printf(s, "%lld", (long long)ix->start);
            ir_str_printf(s, ":");
            if (ix->has_stop) ir_str_printf(s, "%lld", (long long)ix->stop);
            break;
        }
    }
    ir_str_printf(s, "]");
}

/* The precedence an expression shows outside: 1 for a + b and a - b, 2 for a * b and
 * a / b, 3 for -a, 4 for what binds as one (an operand, a call, parentheses). */
static int shown_prec(const ir_expr *e) {
    if (e->parens || e->kind != IR_X_OP || !e->infix) return 4;
    return ir_ewop_arity(e->op) == 1 ? 3 : ir_ewop(e->op)->prec;
}

/* Whether e starts with a '-' as printed (a negative number, -a): after another '-' it
 * takes a space, so "- -1" does not read as one token pair of another meaning. */
static bool starts_minus(const ir_expr *e) {
    while (!e->parens) {
        if (e->kind == IR_X_CONST) return e->value.is_int ? e->value.i < 0 : !isnan(e->value.f) && signbit(e->value.f);
        if (e->kind != IR_X_OP || !e->infix) return false;
        if (ir_ewop_arity(e->op) == 1) return true;
        e = e->args[0];
    }
    return false;
}

/* e where an operand of precedence `need` goes: in parentheses when written so, or when
 * the tree would otherwise read differently. */
static void print_operand(ir_str *s, const ir_expr *e, int need) {
    bool wrap = !e->parens && shown_prec(e) < need;
    if (wrap) ir_str_printf(s, "(");
    ir_print_expr(s, e);
    if (wrap) ir_str_printf(s, ")");
}

/* An expression as written: infix operators as infix, parentheses kept, numbers as
 * ir_print_value writes them (locale-independent, read back to the same value). */
void ir_print_expr(ir_str *s, const ir_expr *e) {
    if (e->parens) ir_str_printf(s, "(");
    switch (e->kind) {
    case IR_X_REGION: ir_print_region(s, &e->region); break;
    case IR_X_CONST: {
        ir_value v = e->value;
        if (e->text && !memchr(e->text, '.', e->text_len) && !memchr(e->text, 'e', e->text_len) &&
            !memchr(e->text, 'E', e->text_len)) { /* an integer past 64 bits: its digits as written */
            ir_str_printf(s, "%s%.*s", signbit(v.f) ? "-" : "", (int)e->text_len, e->text);
            break;
        }
        if (!v.is_int && !ir_dtype_is_float(v.dtype)) v.dtype = TILEC_F64; /* the value as written */
        ir_print_value(s, v);
        break;
    }
    case IR_X_INDEX: ir_str_printf(s, "index(%d)", e->axis); break;
    case IR_X_GATHER:
        ir_str_printf(s, "gather(");
        ir_print_region(s, &e->region);
        ir_str_printf(s, ", %d, ", e->axis);
        ir_print_expr(s, e->args[0]);
        ir_str_printf(s, ")");
        break;
    case IR_X_CAST:
        ir_str_printf(s, "%s(", tilec_dtype_name(e->to));
        ir_print_expr(s, e->args[0]);
        ir_str_printf(s, ")");
        break;
    case IR_X_OP: {
        int arity = ir_ewop_arity(e->op);
        const ir_ewop_info *info = ir_ewop(e->op);
        if (e->infix && arity == 1) { /* -a */
            ir_str_printf(s, "-");
            if (starts_minus(e->args[0])) ir_str_printf(s, " ");
            print_operand(s, e->args[0], 3);
            /* a bare number after '-' would read as the number's sign: print_operand kept
               its parentheses, and the parser never makes -(number) without them */
        } else if (e->infix && arity == 2 && info->infix) {
            /* left-associative: the right operand of equal precedence needs parentheses */
            print_operand(s, e->args[0], info->prec);
            ir_str_printf(s, " %c ", info->infix);
            print_operand(s, e->args[1], info->prec + 1);
        } else {
            ir_str_printf(s, "%s(", tilec_ewop_name(e->op));
            for (int i = 0; i < arity; i++) {
                if (i) ir_str_printf(s, ", ");
                ir_print_expr(s, e->args[i]);
            }
            ir_str_printf(s, ")");
        }
        break;
    }
    }
    if (e->parens) ir_str_printf(s, ")");
}

static void print_shape(ir_str *s, int rank, const int64_t *v, const char *open, const char *close) {
    ir_str_printf(s, "%s", open);
    for (int d = 0; d < rank; d++) ir_str_printf(s, "%s%lld", d ? ", " : "", (long long)v[d]);
    ir_str_printf(s, "%s", close);
}

static void print_exec(ir_str *s, tilec_exec e) {
    ir_str_printf(s, "%s", tilec_scope_name(e.scope));
    if (e.instance >= 0) ir_str_printf(s, "[%d]", e.instance);
}

/* " layout=..." of a fragment, nothing for another buffer */
static void print_layout(ir_str *s, const tilec_buffer *b) {
    const tilec_layout *L = &b->layout;
    if (L->kind == TILEC_LAYOUT_NONE) return;
    ir_str_printf(s, " layout=%s", tilec_layout_name(L->kind));
    if (L->kind != TILEC_LAYOUT_LINEAR) return;
    static const char *const parts[] = {"reg", "lane", "warp"};
    int n[3] = {L->nreg, L->nlane, L->nwarp}, at = 0;
    ir_str_printf(s, "(");
    for (int i = 0; i < (L->nwarp ? 3 : 2); i++) {
        ir_str_printf(s, "%s%s=(", i ? ", " : "", parts[i]);
        for (int j = 0; j < n[i]; j++, at++) {
            if (j) ir_str_printf(s, ", ");
            print_shape(s, b->rank, L->basis[at], "(", ")");
        }
        ir_str_printf(s, ")");
    }
    ir_str_printf(s, ")");
}

/* " swizzle=..." of a swizzled shared tile, nothing for another buffer */
static void print_swizzle(ir_str *s, const tilec_buffer *b) {
    const tilec_swizzle *w = &b->swizzle;
    if (w->kind == TILEC_SWIZZLE_NONE) return;
    ir_str_printf(s, " swizzle=%s", tilec_swizzle_name(w->kind));
    if (w->kind == TILEC_SWIZZLE_XOR) ir_str_printf(s, "(%d, %d, %d)", w->bits, w->base, w->shift);
}

/* One statement without indentation or newline. */
void ir_print_stmt(ir_str *s, const ir_stmt *st) {
    switch (st->kind) {
    case IR_ALLOC: {
        const tilec_buffer *b = st->alloc;
        ir_str_printf(s, "%s %s: %s", tilec_space_name(b->space), b->name, tilec_dtype_name(b->dtype));
        print_shape(s, b->rank, b->shape, "[", "]");
        if (b->has_strides) {
            ir_str_printf(s, " strides=");
            print_shape(s, b->rank, b->strides, "(", ")");
        }
        print_layout(s, b);
        print_swizzle(s, b);
        return;
    }
    case IR_SYNC:
        print_exec(s, st->exec);
        ir_str_printf(s, ".sync()");
        return;
    case IR_MAP:
        print_exec(s, st->exec);
        ir_str_printf(s, ".map(");
        ir_print_region(s, &st->dst);
        ir_str_printf(s, ", ");
        ir_print_expr(s, st->expr);
        if (st->variant) ir_str_printf(s, ", variant=%s", st->variant);
        ir_str_printf(s, ")");
        return;
    case IR_COPY:
    case IR_FILL:
    case IR_REDUCE:
        break;
    }
    print_exec(s, st->exec);
    ir_str_printf(s, ".%s(", ir_stmt_word(st));
    ir_print_region(s, &st->dst);
    ir_str_printf(s, ", ");
    if (st->dst2.buf) {
        ir_print_region(s, &st->dst2);
        ir_str_printf(s, ", ");
    }
    if (st->kind == IR_FILL) ir_print_value(s, st->fill);
    else ir_print_region(s, &st->src);
    if (st->kind == IR_REDUCE) {
        ir_str_printf(s, ", axes=(");
        for (int i = 0; i < st->naxes; i++) ir_str_printf(s, "%s%d", i ? ", " : "", st->axes[i]);
        ir_str_printf(s, ")");
        if (st->accum) ir_str_printf(s, ", accum=true");
        if (st->nan != TILEC_NAN_PROPAGATE) ir_str_printf(s, ", nan=%s", tilec_nan_name(st->nan));
        if (st->correction != 1) ir_str_printf(s, ", correction=%lld", (long long)st->correction);
        if (st->variant) ir_str_printf(s, ", variant=%s", st->variant);
    }
    ir_str_printf(s, ")");
}

static void print_comments(ir_str *s, const ir_comment *c, int n, const char *indent) {
    for (int i = 0; i < n; i++) ir_str_printf(s, "%s%s\n", indent, c[i].text);
}

static void print_kernel(ir_str *s, const tilec_kernel *k) {
    print_comments(s, k->trivia.leading, k->trivia.nleading, "");
    ir_str_printf(s, "%s %s(", k->is_func ? "func" : "kernel", k->name);
    for (int i = 0; i < k->nparams; i++) {
        const tilec_buffer *b = k->params[i];
        ir_str_printf(s, "%s%s: %s", i ? ", " : "", b->name, tilec_dtype_name(b->dtype));
        print_shape(s, b->rank, b->shape, "[", "]");
        ir_str_printf(s, " %s", tilec_space_name(b->space));
        print_layout(s, b);
        print_swizzle(s, b);
    }
    ir_str_printf(s, ") threads=%d", k->threads);
    if (k->grid != 1) ir_str_printf(s, " grid=%lld", (long long)k->grid);
    if (k->cluster) ir_str_printf(s, " cluster=(%d)", k->cluster);
    if (k->math != TILEC_MATH_EXACT) ir_str_printf(s, " math=%s", tilec_math_name(k->math));
    ir_str_printf(s, " {");
    if (k->trivia.trailing) ir_str_printf(s, "  %s", k->trivia.trailing);
    ir_str_printf(s, "\n");
    for (int i = 0; i < k->nstmts; i++) {
        const ir_stmt *st = k->stmts[i];
        if (st->trivia.blank_before && i > 0) ir_str_printf(s, "\n");
        print_comments(s, st->trivia.leading, st->trivia.nleading, "  ");
        ir_str_printf(s, "  ");
        ir_print_stmt(s, st);
        if (st->trivia.trailing) ir_str_printf(s, "  %s", st->trivia.trailing);
        ir_str_printf(s, "\n");
    }
    print_comments(s, k->end_comments, k->nend_comments, "  ");
    ir_str_printf(s, "}\n");
}

void ir_print_program(ir_str *s, const tilec_program *p) {
    for (int i = 0; i < p->nkernels; i++) {
        if (i) ir_str_printf(s, "\n");
        print_kernel(s, p->kernels[i]);
    }
    if (p->ntail_comments) {
        ir_str_printf(s, "\n");
        print_comments(s, p->tail_comments, p->ntail_comments, "");
    }
}

tilec_status tilec_format(tilec_program *prog, char **text, size_t *len) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    if (!text) return ir_bad(prog->ctx, "tilec_format: text is NULL; pass where the text goes");
    *text = NULL;
    ir_str s = {0};
    ir_print_program(&s, prog);
    ir_str_put(&s, "", 0); /* an empty program still gives "" */
    if (s.oom) {
        ir_str_free(&s);
        return TILEC_ERR_NOMEM;
    }
    *text = s.data;
    if (len) *len = s.len;
    return TILEC_OK;
}

const char *ir_stmt_word(const ir_stmt *st) {
    switch (st->kind) {
    case IR_ALLOC: return "alloc";
    case IR_COPY: return "copy";
    case IR_FILL: return "fill";
    case IR_SYNC: return "sync";
    case IR_MAP: return "map";
    case IR_REDUCE: return tilec_op_name(st->op);
    }
    return "?"; /* not reached: the switch covers ir_stmt_kind (-Wswitch) */
}
