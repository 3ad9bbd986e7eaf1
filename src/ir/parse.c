/*
 * parse.c — a recursive-descent parser for the `.tile` format v1 (docs/format.md).
 *
 * Each function parses one grammar rule, written above it. Names are resolved while
 * parsing (a buffer must be declared before it is used), and declarations are checked
 * where they are written (extents, rank, strides, names), so those errors point at the
 * exact token. Everything between statements is left to the verifier.
 *
 * The first syntax error stops the parse: it longjmps back to ir_parse, which frees the
 * program (all of it lives in the program's arena, so nothing leaks).
 */
#include "lex.h"
#include "numeric.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    tilec_program *prog;
    lexer lx;
    tok t;             /* the current token */
    int prev_line;     /* line of the last token consumed */
    int next_comment;  /* first comment not yet attached */
    int last_end_line; /* where the previous kernel / statement / comment ended */
    tilec_kernel *k;   /* the kernel being parsed */
    const ir_source *src; /* where messages point: the file, or a map expression's text */
    int upto;          /* buffers visible to an expression: declared before this statement */
    int nest;          /* expression rules entered and not yet left (IR_MAX_EXPR_DEPTH) */
    jmp_buf fail;
} parser;

static const char *const statement_words[] = {"shared", "local", "cta", "warpgroup", "warp",
                                              "thread", "grid", "cluster"};
#define OP_WORD(s, n) n,
static const char *const op_words[] = {"copy", "fill", "sync", "map", TILEC_OP_LIST(OP_WORD)};
#undef OP_WORD
static const char *const kwarg_words[] = {"axes", "accum", "nan", "variant", "correction"};
static const char *const dtype_words[] = {"f16", "bf16", "f32", "f64", "i32", "u32", "i64"};
static const char *const space_words[] = {"global", "shared", "local"};
static const char *const id_words[] = {"cta_id", "warpgroup_id", "warp_id", "thread_id", "cluster_id", IR_RANK_WORD};
#define LAYOUT_WORD(s, n) n,
static const char *const layout_words[] = {TILEC_LAYOUT_LIST(LAYOUT_WORD)};
#undef LAYOUT_WORD
#define SWIZZLE_WORD(s, n, b, m, sh) n,
static const char *const swizzle_words[] = {TILEC_SWIZZLE_LIST(SWIZZLE_WORD)};
#undef SWIZZLE_WORD
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- errors and tokens --------------------------------------------------------------- */

static _Noreturn void fail_at(parser *ps, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static _Noreturn void fail_at(parser *ps, int line, int col, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_diag_vadd(ps->prog->ctx, ps->src, TILEC_SEV_ERROR, line, col, fmt, ap);
    va_end(ap);
    longjmp(ps->fail, 1);
}

static _Noreturn void oom(parser *ps) {
    ir_diag_add(ps->prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "out of memory while parsing");
    longjmp(ps->fail, 2);
}

/* How a token reads in a message: 'word', or "end of file". */
static const char *describe(const tok *t, char *buf, size_t size) {
    if (t->kind == TOK_EOF) return "end of file";
    if (t->kind == TOK_BAD && t->n == 1) {
        unsigned char c = (unsigned char)t->s[0];
        if (c < 0x20 || c >= 0x7f) snprintf(buf, size, "byte 0x%02x", c);
        else snprintf(buf, size, "'%c'", c);
        return buf;
    }
    int n = t->n > 40 ? 40 : (int)t->n;
    snprintf(buf, size, "'%.*s%s'", n, t->s, t->n > 40 ? "..." : "");
    return buf;
}

static _Noreturn void fail_expected(parser *ps, const char *what) {
    char buf[80];
    fail_at(ps, ps->t.line, ps->t.col, "expected %s, found %s", what, describe(&ps->t, buf, sizeof buf));
}

static void next(parser *ps) {
    ps->prev_line = ps->t.line;
    ps->t = lex_next(&ps->lx);
    if (ps->lx.oom) oom(ps);
}

static bool accept(parser *ps, const char *text) {
    if (!tok_is(&ps->t, text)) return false;
    next(ps);
    return true;
}

static void expect(parser *ps, const char *text) {
    if (accept(ps, text)) return;
    char what[32];
    snprintf(what, sizeof what, "'%s'", text);
    fail_expected(ps, what);
}

/* NAME, checked for length; returns its position. */
static tok expect_name(parser *ps, const char *what) {
    if (ps->t.kind != TOK_NAME) fail_expected(ps, what);
    tok t = ps->t;
    if (t.n > TILEC_MAX_NAME)
        fail_at(ps, t.line, t.col, "name '%.20s...' is %zu characters long; names have at most %d",
                t.s, t.n, TILEC_MAX_NAME);
    next(ps);
    return t;
}

/* Reports an unknown word, with a suggestion when one is close. */
static _Noreturn void fail_unknown(parser *ps, const tok *t, const char *kind, const char *const *words,
                                   int count, const char *expected) {
    const char *near = ir_did_you_mean(t->s, t->n, words, count);
    char buf[80];
    if (near)
        fail_at(ps, t->line, t->col, "unknown %s %s; did you mean '%s'?", kind,
                describe(t, buf, sizeof buf), near);
    fail_at(ps, t->line, t->col, "unknown %s %s; expected %s", kind, describe(t, buf, sizeof buf),
            expected);
}

/* The digits of an INT whose sign (if any) was already consumed; start is where it began. */
static int64_t int_value(parser *ps, bool neg, tok start, ir_pos *pos) {
    if (ps->t.kind != TOK_INT) fail_expected(ps, "an integer");
    if (pos) *pos = (ir_pos){start.line, start.col};
    uint64_t v = 0;
    for (size_t i = 0; i < ps->t.n; i++) {
        unsigned d = (unsigned)(ps->t.s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) goto range;
        v = v * 10 + d;
    }
    if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) goto range;
    next(ps);
    return neg ? (int64_t)(0 - v) : (int64_t)v;
range:
    fail_at(ps, start.line, start.col, "integer %s%.*s is out of range (beyond 64 bits)",
            neg ? "-" : "", (int)(ps->t.n > 40 ? 40 : ps->t.n), ps->t.s);
}

/* Whether the digits of an INT token (its sign consumed: neg) fit in int64. */
static bool fits_int64(const tok *t, bool neg) {
    uint64_t v = 0;
    for (size_t i = 0; i < t->n; i++) {
        unsigned d = (unsigned)(t->s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    return v <= (uint64_t)INT64_MAX + (neg ? 1u : 0u);
}

/* INT := ['-'] digits, within int64. */
static int64_t parse_int(parser *ps, ir_pos *pos) {
    tok start = ps->t;
    bool neg = accept(ps, "-");
    return int_value(ps, neg, start, pos);
}

static int parse_small_int(parser *ps, int64_t lo, int64_t hi, const char *what, ir_pos *pos) {
    ir_pos p;
    int64_t v = parse_int(ps, &p);
    if (v < lo || v > hi)
        fail_at(ps, p.line, p.col, "%s %lld is out of range (%lld to %lld)", what, (long long)v,
                (long long)lo, (long long)hi);
    if (pos) *pos = p;
    return (int)v;
}

/* ---- comments and blank lines --------------------------------------------------------- */

/* Attaches the comments that stand on lines before the current token. */
static ir_trivia take_leading(parser *ps) {
    ir_trivia tv = {0};
    lexer *lx = &ps->lx;
    int first = ps->next_comment;
    while (ps->next_comment < lx->ncomments && lx->comments[ps->next_comment].line < ps->t.line)
        ps->next_comment++;
    int first_line = ps->t.line;
    if (ps->next_comment > first) {
        tv.leading = lx->comments + first; /* the lexer's array only grows by copying, and the
                                              copied slice stays valid in the arena */
        tv.nleading = ps->next_comment - first;
        first_line = tv.leading[0].line;
    }
    tv.blank_before = ps->last_end_line > 0 && first_line - ps->last_end_line > 1;
    return tv;
}

/* A comment on the same line as the token just consumed. */
static const char *take_trailing(parser *ps) {
    lexer *lx = &ps->lx;
    /* the lexer may already have read comments past this line while peeking */
    if (ps->next_comment < lx->ncomments && lx->comments[ps->next_comment].line == ps->prev_line)
        return lx->comments[ps->next_comment++].text;
    return NULL;
}

/* Comments before the current token, a closing brace or the end of file. */
static int take_until(parser *ps, ir_comment **out) {
    lexer *lx = &ps->lx;
    int first = ps->next_comment;
    while (ps->next_comment < lx->ncomments &&
           (ps->t.kind == TOK_EOF || lx->comments[ps->next_comment].line < ps->t.line))
        ps->next_comment++;
    *out = lx->comments ? lx->comments + first : NULL;
    return ps->next_comment - first;
}

/* ---- declarations --------------------------------------------------------------------- */

static void check_new_name(parser *ps, const tok *name) {
    tilec_kernel *k = ps->k;
    tilec_buffer *b = ir_find_buffer(k, name->s, name->n, k->nstmts);
    if (b)
        fail_at(ps, name->line, name->col, "duplicate name '%.*s': already declared at line %d",
                (int)name->n, name->s, b->pos.line);
}

/* dtype := 'f16' | 'bf16' | 'f32' | 'f64' | 'i32' | 'u32' | 'i64' */
static tilec_dtype parse_dtype(parser *ps) {
    if (ps->t.kind != TOK_NAME) fail_expected(ps, "a dtype (f16, bf16, f32, f64, i32, u32, i64)");
    int d = ir_lookup_dtype(ps->t.s, ps->t.n);
    if (d < 0)
        fail_unknown(ps, &ps->t, "dtype", dtype_words, COUNT(dtype_words),
                     "f16, bf16, f32, f64, i32, u32 or i64");
    next(ps);
    return (tilec_dtype)d;
}

/* shape := '[' INT { ',' INT } ']' */
static void parse_shape(parser *ps, tilec_buffer *b, ir_pos *where) {
    expect(ps, "[");
    do {
        if (b->rank == TILEC_MAX_RANK)
            fail_at(ps, ps->t.line, ps->t.col,
                    "'%s' has more than %d dimensions; a buffer has at most %d", b->name,
                    TILEC_MAX_RANK, TILEC_MAX_RANK);
        b->shape[b->rank] = parse_int(ps, &where[b->rank]);
        b->rank++;
    } while (accept(ps, ","));
    expect(ps, "]");
}

/* ints := '(' INT { ',' INT } [ ',' ] ')'  — returns the count */
static int parse_ints(parser *ps, int64_t *out, int max, const char *what) {
    expect(ps, "(");
    int n = 0;
    if (tok_is(&ps->t, ")")) fail_at(ps, ps->t.line, ps->t.col, "%s=() is empty; give at least one value", what);
    do {
        if (tok_is(&ps->t, ")")) break; /* trailing comma */
        if (n == max)
            fail_at(ps, ps->t.line, ps->t.col, "%s has more than %d values", what, max);
        out[n++] = parse_int(ps, NULL);
    } while (accept(ps, ","));
    expect(ps, ")");
    return n;
}

static tilec_space parse_space(parser *ps) {
    if (ps->t.kind != TOK_NAME) fail_expected(ps, "a memory space (global, shared, local)");
    int s = ir_lookup_space(ps->t.s, ps->t.n);
    if (s < 0)
        fail_unknown(ps, &ps->t, "memory space", space_words, COUNT(space_words),
                     "global, shared or local");
    next(ps);
    return (tilec_space)s;
}

/* The part params and allocs share: NAME ':' dtype shape. Positions of the extents go to
 * where[] for messages about them. */
static tilec_buffer *parse_decl(parser *ps, const char *what, ir_pos *where) {
    tok name = expect_name(ps, what);
    check_new_name(ps, &name);
    tilec_buffer *b = ir_arena_alloc(&ps->prog->arena, sizeof *b);
    if (!b || !(b->name = ir_arena_strndup(&ps->prog->arena, name.s, name.n))) oom(ps);
    b->pos = (ir_pos){name.line, name.col};
    b->kernel = ps->k;
    expect(ps, ":");
    b->dtype = parse_dtype(ps);
    parse_shape(ps, b, where);
    return b;
}

static void parse_placement(parser *ps, tilec_buffer *b, bool *layout, bool *swizzle);
static void check_placement(parser *ps, tilec_buffer *b, bool layout, bool swizzle);

/* param := NAME ':' dtype shape space placement (a func's local fragment, shared swizzled tile) */
static void parse_param(parser *ps) {
    ir_pos where[TILEC_MAX_RANK];
    tilec_buffer *b = parse_decl(ps, "a parameter name", where);
    b->space = parse_space(ps);
    bool layout, swizzle;
    parse_placement(ps, b, &layout, &swizzle);
    if (!ir_check_decl(ps->prog, b, where, b->pos)) longjmp(ps->fail, 1);
    if (!ir_param_add(ps->k, b)) oom(ps);
    check_placement(ps, b, layout, swizzle); /* (a parameter's swizzle is checked as one) */
}

/* bits := '(' [ ints { ',' ints } [ ','] ] ')': the coordinates each bit adds, into
 * L->basis from `first` (and where each is written, into pos); their count */
static int parse_bits(parser *ps, tilec_layout *L, ir_pos *pos, int first, int rank, const char *what) {
    expect(ps, "(");
    int n = 0;
    while (!tok_is(&ps->t, ")")) {
        if (first + n == TILEC_LAYOUT_MAX_BITS)
            fail_at(ps, ps->t.line, ps->t.col,
                    "a layout has at most %d bits in all (register, lane and warp bits: %d elements); split the tile, "
                    "or hold fewer elements a lane",
                    TILEC_LAYOUT_MAX_BITS, 1 << TILEC_LAYOUT_MAX_BITS);
        ir_pos at = {ps->t.line, ps->t.col};
        pos[first + n] = at;
        int64_t c[TILEC_MAX_RANK];
        int got = parse_ints(ps, c, TILEC_MAX_RANK, what);
        if (got != rank)
            fail_at(ps, at.line, at.col, "%s bit %d has %d coordinate%s; the buffer has %d dimensions", what, n, got,
                    got == 1 ? "" : "s", rank);
        memcpy(L->basis[first + n], c, sizeof(int64_t) * (size_t)rank);
        n++;
        if (!accept(ps, ",")) break;
    }
    expect(ps, ")");
    return n;
}

/* layout := NAME | 'linear' '(' 'reg' '=' bits ',' 'lane' '=' bits [ ',' 'warp' '=' bits ] ')' */
static void parse_layout(parser *ps, tilec_buffer *b) {
    if (ps->t.kind != TOK_NAME) fail_expected(ps, "a layout (mma_m16n8k16_c, mma_m16n8k16_a, mma_m16n8k16_b, "
                                                  "wgmma_m64nNk16_d or linear(...))");
    int kind = ir_lookup_layout(ps->t.s, ps->t.n);
    if (kind < 0 || kind == TILEC_LAYOUT_NONE)
        fail_unknown(ps, &ps->t, "layout", layout_words + 1, COUNT(layout_words) - 1, /* not "none" */
                     "mma_m16n8k16_c, mma_m16n8k16_a, mma_m16n8k16_b, wgmma_m64nNk16_d or linear(...)");
    memset(&b->layout, 0, sizeof b->layout);
    b->layout.kind = (tilec_layout_kind)kind;
    next(ps);
    if (kind != TILEC_LAYOUT_LINEAR) return;
    expect(ps, "(");
    int got[3] = {0, 0, 0}, have = 0;
    static const char *const parts[] = {"reg", "lane", "warp"};
    static const char *const wants[] = {"reg=(...), the coordinate each register bit adds",
                                        "lane=(...), the coordinate each of the 5 lane bits adds",
                                        "warp=(...), the coordinate each warp bit adds, or ')'"};
    for (int i = 0; i < 3; i++) {
        if (i == 2 && (!accept(ps, ",") || tok_is(&ps->t, ")"))) break; /* no warp bits: a warp's layout */
        if (i == 1) expect(ps, ",");
        if (!tok_is(&ps->t, parts[i])) fail_expected(ps, wants[i]);
        next(ps);
        expect(ps, "=");
        got[i] = parse_bits(ps, &b->layout, b->layout_bit_pos, have, b->rank, parts[i]);
        have += got[i];
        if (i == 2) accept(ps, ","); /* a trailing comma */
    }
    expect(ps, ")");
    b->layout.nreg = got[0];
    b->layout.nlane = got[1];
    b->layout.nwarp = got[2];
}

/* swizzle := 'sw32' | 'sw64' | 'sw128' | 'none' | 'xor' '(' INT ',' INT ',' INT ')' (bits, base, shift) */
static void parse_swizzle(parser *ps, tilec_buffer *b) {
    static const char *const known = "sw128, sw64, sw32, none or xor(bits, base, shift)";
    if (ps->t.kind != TOK_NAME) fail_expected(ps, "a swizzle (sw128, sw64, sw32, none or xor(bits, base, shift))");
    int kind = ir_lookup_swizzle(ps->t.s, ps->t.n);
    if (kind < 0) fail_unknown(ps, &ps->t, "swizzle", swizzle_words, COUNT(swizzle_words), known);
    memset(&b->swizzle, 0, sizeof b->swizzle);
    b->swizzle.kind = (tilec_swizzle_kind)kind;
    next(ps);
    if (kind != TILEC_SWIZZLE_XOR) return;
    ir_pos at = {ps->t.line, ps->t.col};
    int64_t v[3];
    int got = parse_ints(ps, v, 3, "xor(bits, base, shift)");
    if (got != 3 || v[0] < 0 || v[1] < 0 || v[2] < 0 || v[0] > 64 || v[1] > 64 || v[2] > 64)
        fail_at(ps, at.line, at.col, "xor takes three small integers: xor(bits, base, shift), as CuTe's "
                                     "Swizzle<bits, base, shift> on bytes (sw128 is xor(3, 4, 3))");
    b->swizzle.bits = (int)v[0];
    b->swizzle.base = (int)v[1];
    b->swizzle.shift = (int)v[2];
}

/* placement := { 'layout' '=' layout | 'swizzle' '=' swizzle }, each at most once: which
 * were given (checked by the caller after the shape) */
static void parse_placement(parser *ps, tilec_buffer *b, bool *layout, bool *swizzle) {
    *layout = *swizzle = false;
    for (;;) {
        ir_pos at = {ps->t.line, ps->t.col};
        bool is_layout = tok_is(&ps->t, "layout");
        if (!is_layout && !tok_is(&ps->t, "swizzle")) return;
        bool *seen = is_layout ? layout : swizzle;
        if (*seen) fail_at(ps, at.line, at.col, "'%s' has two %s= options; keep one", b->name, is_layout ? "layout" : "swizzle");
        *seen = true;
        next(ps);
        expect(ps, "=");
        if (is_layout) {
            b->layout_pos = at;
            parse_layout(ps, b);
        } else {
            b->swizzle_pos = at;
            parse_swizzle(ps, b);
        }
    }
}

static void check_placement(parser *ps, tilec_buffer *b, bool layout, bool swizzle) {
    if (layout && !ir_check_layout(ps->prog, b, b->layout_pos)) longjmp(ps->fail, 1);
    if (swizzle && !ir_check_swizzle(ps->prog, b, b->swizzle_pos)) longjmp(ps->fail, 1);
}

/* alloc := ('shared' | 'local') NAME ':' dtype shape [ 'strides' '=' ints ] placement */
static void parse_alloc(parser *ps, ir_stmt *st) {
    tilec_space space = tok_is(&ps->t, "shared") ? TILEC_SPACE_SHARED : TILEC_SPACE_LOCAL;
    next(ps);
    ir_pos where[TILEC_MAX_RANK];
    tilec_buffer *b = parse_decl(ps, "a buffer name", where);
    b->space = space;
    ir_pos spos = {ps->t.line, ps->t.col};
    if (accept(ps, "strides")) {
        expect(ps, "=");
        int n = parse_ints(ps, b->strides, TILEC_MAX_RANK, "strides");
        if (n != b->rank)
            fail_at(ps, spos.line, spos.col, "'%s' has %d dimensions but %d stride%s", b->name,
                    b->rank, n, n == 1 ? "" : "s");
        b->has_strides = true;
    }
    bool layout, swizzle;
    parse_placement(ps, b, &layout, &swizzle);
    if (!ir_check_decl(ps->prog, b, where, spos)) longjmp(ps->fail, 1);
    check_placement(ps, b, layout, swizzle);
    st->alloc = b;
}

/* ---- statements ----------------------------------------------------------------------- */

/* index := INT | [INT] ':' [INT] | 'cta_id' | 'warpgroup_id' | 'warp_id' | 'thread_id'
 *        | 'cluster_id' | 'cta_in_cluster' */
static void parse_index(parser *ps, ir_index *ix) {
    ix->pos = (ir_pos){ps->t.line, ps->t.col};
    if (ps->t.kind == TOK_NAME) {
        if (tok_is(&ps->t, IR_RANK_WORD)) {
            ix->kind = TILEC_INDEX_RANK;
            next(ps);
            return;
        }
        int id = ir_lookup_id(ps->t.s, ps->t.n);
        if (id == TILEC_SCOPE_GRID) id = -1; /* the grid is one instance: it has no id */
        if (id < 0)
            fail_unknown(ps, &ps->t, "index", id_words, COUNT(id_words),
                         "an integer, a slice a:b, cta_id, warpgroup_id, warp_id, thread_id, cluster_id or "
                         "cta_in_cluster");
        ix->kind = TILEC_INDEX_ID;
        ix->id = (tilec_scope)id;
        next(ps);
        return;
    }
    if (!tok_is(&ps->t, ":")) {
        ix->start = parse_int(ps, NULL);
        ix->has_start = true;
        if (!tok_is(&ps->t, ":")) { ix->kind = TILEC_INDEX_AT; return; }
    }
    expect(ps, ":");
    ix->kind = TILEC_INDEX_SLICE;
    if (!tok_is(&ps->t, ",") && !tok_is(&ps->t, "]")) {
        ix->stop = parse_int(ps, NULL);
        ix->has_stop = true;
    }
}

/* region := NAME [ '[' index { ',' index } ']' ] */
static void parse_region(parser *ps, ir_region *r, int stmt_index) {
    tok name = expect_name(ps, "a buffer name");
    r->pos = (ir_pos){name.line, name.col};
    r->buf = ir_find_buffer(ps->k, name.s, name.n, stmt_index);
    if (!r->buf) {
        const char *names[256];
        int n = 0;
        for (int i = 0; i < ps->k->nparams && n < 256; i++) names[n++] = ps->k->params[i]->name;
        for (int i = 0; i < stmt_index && n < 256; i++)
            if (ps->k->stmts[i]->kind == IR_ALLOC && ps->k->stmts[i]->alloc) names[n++] = ps->k->stmts[i]->alloc->name;
        const char *near = ir_did_you_mean(name.s, name.n, names, n);
        if (near)
            fail_at(ps, name.line, name.col, "unknown buffer '%.*s'; did you mean '%s'?",
                    (int)name.n, name.s, near);
        fail_at(ps, name.line, name.col,
                "unknown buffer '%.*s'; declare it as a parameter or with shared/local before "
                "this line", (int)name.n, name.s);
    }
    if (!accept(ps, "[")) return;
    r->brackets = true;
    if (tok_is(&ps->t, "]")) fail_expected(ps, "an index");
    do {
        if (r->nindex == r->buf->rank)
            fail_at(ps, ps->t.line, ps->t.col, "too many indices: '%s' has %d dimensions",
                    r->buf->name, r->buf->rank);
        parse_index(ps, &r->index[r->nindex++]);
    } while (accept(ps, ","));
    expect(ps, "]");
}

/* The current token (an integer or a decimal) as the double nearest it, negated for neg
 * (the '-' at start): strtod follows the C locale's decimal point, the format's is always
 * '.'; a number past the double range is refused, saying to write inf. */
static double decimal_value(parser *ps, bool neg, tok start) {
    char buf[512];
    if (ps->t.n >= sizeof buf)
        fail_at(ps, ps->t.line, ps->t.col, "number is %zu characters long; tilec reads numbers of up to %zu: write it "
                "with an exponent (1.5e-30)", ps->t.n, sizeof buf - 1);
    memcpy(buf, ps->t.s, ps->t.n);
    buf[ps->t.n] = '\0';
    const char *dp = localeconv()->decimal_point;
    char *dot = strchr(buf, '.');
    if (dot && dp && dp[0] && dp[0] != '.' && !dp[1]) *dot = dp[0];
    errno = 0;
    double f = strtod(buf, NULL);
    if (errno == ERANGE && isinf(f))
        fail_at(ps, start.line, start.col, "number %s%.*s is too large; write inf for infinity", neg ? "-" : "",
                (int)ps->t.n, ps->t.s);
    return neg ? -f : f;
}

/* number := INT | decimal or exponent float | 'inf' | '-inf' | 'nan', for a destination of
 * dtype t: rounded once, from the text, to t */
static ir_value parse_number(parser *ps, tilec_dtype t, ir_pos *pos) {
    tok start = ps->t;
    *pos = (ir_pos){start.line, start.col};
    bool neg = tok_is(&ps->t, "-");
    if (neg) next(ps);
    ir_value v = {0};
    if (tok_is(&ps->t, "inf") || tok_is(&ps->t, "nan")) {
        bool inf = ps->t.s[0] == 'i';
        if (!inf && neg) fail_at(ps, start.line, start.col, "'-nan' is not a number; write nan");
        v.f = inf ? (neg ? -INFINITY : INFINITY) : NAN;
        num_fill_typed(&v, t, NULL, 0);
        next(ps);
        return v;
    }
    if (ps->t.kind == TOK_INT && !(ir_dtype_is_float(t) && !fits_int64(&ps->t, neg))) {
        v.is_int = true;
        v.i = int_value(ps, neg, start, NULL);
        num_fill_typed(&v, t, NULL, 0);
        return v;
    }
    /* a float, or an integer too wide for 64 bits that a float buffer takes all the same */
    if (ps->t.kind != TOK_FLOAT && ps->t.kind != TOK_INT)
        fail_expected(ps, "a number (an integer, a decimal, inf, -inf or nan)");
    v.f = decimal_value(ps, neg, start);
    num_fill_typed(&v, t, ps->t.s, ps->t.n);
    next(ps);
    return v;
}

/* ---- expressions (map statements) ------------------------------------------------------ */

static const char *const call_words[] = {
#define CALL_WORD(s, n, a) n,
    TILEC_EWOP_LIST(CALL_WORD)
#undef CALL_WORD
    "f16", "bf16", "f32", "f64", "i32", "u32", "i64", "index", "gather"};

static ir_expr *parse_expr(parser *ps, int *height);

static ir_expr *new_expr(parser *ps, ir_expr_kind kind, int line, int col) {
    ir_expr *e = ir_arena_alloc(&ps->prog->arena, sizeof *e);
    if (!e) oom(ps);
    e->kind = kind;
    e->pos = (ir_pos){line, col};
    for (int d = 0; d < TILEC_MAX_RANK; d++) e->bcast[d] = -1;
    return e;
}

/* Enters an expression rule at token t: a hostile file's nesting is refused before it
 * can exhaust the stack (parentheses and unary minus nest without making nodes). */
static void enter(parser *ps, const tok *t) {
    if (++ps->nest > IR_MAX_EXPR_DEPTH)
        fail_at(ps, t->line, t->col, "expression nests more than %d levels deep; compute part of it into a "
                "local buffer with a map statement of its own", IR_MAX_EXPR_DEPTH);
}

/* A node of children of height h: refused past IR_MAX_EXPR_DEPTH, so every walk of the
 * tree (printer, verifier, lowerings) recurses at most that deep. */
static int grown(parser *ps, const ir_expr *e, int h) {
    if (h + 1 > IR_MAX_EXPR_DEPTH)
        fail_at(ps, e->pos.line, e->pos.col, "expression nests more than %d levels deep; compute part of it into a "
                "local buffer with a map statement of its own", IR_MAX_EXPR_DEPTH);
    return h + 1;
}

/* number := INT | FLOAT | 'inf' | 'nan', its sign (neg) consumed at start. Kept as written
 * (an integer of int64, else a double and its text) for the verifier to round once to the
 * type the number takes. */
static ir_expr *parse_expr_number(parser *ps, bool neg, tok start) {
    ir_expr *e = new_expr(ps, IR_X_CONST, start.line, start.col);
    ir_value *v = &e->value;
    if (tok_is(&ps->t, "inf") || tok_is(&ps->t, "nan")) {
        bool inf = ps->t.s[0] == 'i';
        if (!inf && neg) fail_at(ps, start.line, start.col, "'-nan' is not a number; write nan");
        v->f = inf ? (neg ? -INFINITY : INFINITY) : NAN;
    } else if (ps->t.kind == TOK_INT && fits_int64(&ps->t, neg)) {
        v->is_int = true;
        v->i = int_value(ps, neg, start, NULL);
        num_fill_typed(v, TILEC_F64, NULL, 0);
        return e;
    } else {
        v->f = decimal_value(ps, neg, start);
        if (!(e->text = ir_arena_strndup(&ps->prog->arena, ps->t.s, ps->t.n))) oom(ps);
        e->text_len = ps->t.n;
    }
    num_fill_typed(v, TILEC_F64, e->text, e->text_len);
    next(ps);
    return e;
}

/* The operands of a call, name '(' expr { ',' expr } ')', exactly `arity` of them. */
static int parse_args(parser *ps, const tok *name, ir_expr **args, int arity, const char *what) {
    expect(ps, "(");
    int n = 0, height = 0;
    const char *s = arity == 1 ? "" : "s";
    if (tok_is(&ps->t, ")"))
        fail_at(ps, ps->t.line, ps->t.col, "%.*s() has no operand; %s takes %d operand%s", (int)name->n, name->s, what,
                arity, s);
    for (;;) {
        if (n == arity)
            fail_at(ps, ps->t.line, ps->t.col, "%s takes %d operand%s; found more (remove this one)", what, arity, s);
        int h;
        args[n++] = parse_expr(ps, &h);
        if (h > height) height = h;
        if (!accept(ps, ",")) break;
        if (tok_is(&ps->t, ")"))
            fail_at(ps, ps->t.line, ps->t.col, "expected an operand after ','; %s takes %d operand%s (remove the "
                    "trailing ',' or give the missing operand)", what, arity, s);
    }
    if (!tok_is(&ps->t, ")")) fail_expected(ps, "',' or ')'");
    next(ps);
    if (n < arity)
        fail_at(ps, name->line, name->col, "%s takes %d operand%s; found %d", what, arity, s, n);
    return height;
}

/* primary := number | 'inf' | 'nan' | region | EWOP '(' expr {',' expr} ')' | DTYPE '(' expr ')'
 *          | 'index' '(' INT ')' | 'gather' '(' region ',' INT ',' expr ')' | '(' expr ')' */
static ir_expr *parse_primary(parser *ps, int *height) {
    tok t = ps->t;
    *height = 1;
    if (accept(ps, "(")) {
        ir_expr *e = parse_expr(ps, height);
        e->parens = true;
        expect(ps, ")");
        return e;
    }
    if (t.kind == TOK_INT || t.kind == TOK_FLOAT || tok_is(&t, "inf") || tok_is(&t, "nan"))
        return parse_expr_number(ps, false, t);
    if (t.kind != TOK_NAME)
        fail_expected(ps, "an operand (a buffer, a number, an operator such as exp(x), or '(')");
    lexer save = ps->lx; /* one token of look-ahead: NAME '(' is a call */
    tok after = lex_next(&ps->lx);
    if (ps->lx.oom) oom(ps);
    ps->lx = save;
    if (!tok_is(&after, "(")) {
        bool buffer = ir_find_buffer(ps->k, t.s, t.n, ps->upto) != NULL;
        if (!buffer && (ir_lookup_ewop(t.s, t.n) >= 0 || ir_lookup_dtype(t.s, t.n) >= 0 || tok_is(&t, "index")))
            fail_at(ps, t.line, t.col, "'%.*s' is %s; call it: %.*s(...)", (int)t.n, t.s,
                    ir_lookup_ewop(t.s, t.n) >= 0 ? "an operator" : tok_is(&t, "index") ? "index(d), the element's position"
                    : "a dtype (a cast)", (int)t.n, t.s);
        ir_expr *e = new_expr(ps, IR_X_REGION, t.line, t.col);
        parse_region(ps, &e->region, ps->upto);
        return e;
    }
    int op = ir_lookup_ewop(t.s, t.n), dtype = ir_lookup_dtype(t.s, t.n);
    next(ps);
    if (op >= 0) {
        ir_expr *e = new_expr(ps, IR_X_OP, t.line, t.col);
        e->op = (tilec_ewop)op;
        *height = grown(ps, e, parse_args(ps, &t, e->args, ir_ewop_arity(e->op), tilec_ewop_name(e->op)));
        return e;
    }
    if (dtype >= 0) {
        ir_expr *e = new_expr(ps, IR_X_CAST, t.line, t.col);
        e->to = (tilec_dtype)dtype;
        char what[48];
        snprintf(what, sizeof what, "a cast to %s", tilec_dtype_name(e->to));
        *height = grown(ps, e, parse_args(ps, &t, e->args, 1, what));
        return e;
    }
    if (tok_is(&t, "index")) {
        ir_expr *e = new_expr(ps, IR_X_INDEX, t.line, t.col);
        expect(ps, "(");
        if (tok_is(&ps->t, ")"))
            fail_at(ps, ps->t.line, ps->t.col, "index() has no dimension; write index(d), d a dimension of the "
                    "destination (negative counts from the end)");
        e->axis = parse_small_int(ps, -TILEC_MAX_RANK, TILEC_MAX_RANK - 1, "dimension", NULL);
        if (tok_is(&ps->t, ","))
            fail_at(ps, ps->t.line, ps->t.col, "index takes 1 operand, a dimension of the destination; found more");
        expect(ps, ")");
        return e;
    }
    if (tok_is(&t, "gather")) { /* gather '(' region ',' INT ',' expr ')' */
        ir_expr *e = new_expr(ps, IR_X_GATHER, t.line, t.col);
        expect(ps, "(");
        if (ps->t.kind != TOK_NAME || !ir_find_buffer(ps->k, ps->t.s, ps->t.n, ps->upto))
            fail_expected(ps, "gather's first operand, a region of a buffer: gather(X[cta_id], 1, T[cta_id])");
        parse_region(ps, &e->region, ps->upto);
        expect(ps, ",");
        e->axis = parse_small_int(ps, -TILEC_MAX_RANK, TILEC_MAX_RANK - 1, "dimension", NULL);
        expect(ps, ",");
        int h;
        e->args[0] = parse_expr(ps, &h);
        *height = grown(ps, e, h);
        if (tok_is(&ps->t, ","))
            fail_at(ps, ps->t.line, ps->t.col, "gather takes 3 operands (a region, its dimension, the index); found more");
        expect(ps, ")");
        return e;
    }
    if (ir_find_buffer(ps->k, t.s, t.n, ps->upto))
        fail_at(ps, t.line, t.col, "'%.*s' is a buffer, not an operator; index a region with [ ] (%.*s[0, :])",
                (int)t.n, t.s, (int)t.n, t.s);
    fail_unknown(ps, &t, "operator", call_words, COUNT(call_words),
                 "an elementwise operator (add, exp, where...), a dtype (a cast: f32(x)) or index");
}

/* unary := '-' unary | primary; a '-' before a number is the number's sign */
static ir_expr *parse_unary(parser *ps, int *height) {
    tok minus = ps->t;
    if (!accept(ps, "-")) return parse_primary(ps, height);
    if (ps->t.kind == TOK_INT || ps->t.kind == TOK_FLOAT || tok_is(&ps->t, "inf") || tok_is(&ps->t, "nan")) {
        *height = 1;
        return parse_expr_number(ps, true, minus);
    }
    enter(ps, &minus);
    ir_expr *e = new_expr(ps, IR_X_OP, minus.line, minus.col);
    e->op = TILEC_EW_NEG;
    e->infix = true;
    int h;
    e->args[0] = parse_unary(ps, &h);
    *height = grown(ps, e, h);
    ps->nest--;
    return e;
}

/* A left-associative chain of infix operators of precedence prec (1: + -, 2: * /). */
static ir_expr *parse_infix(parser *ps, int prec, int *height) {
    ir_expr *lhs = prec == 2 ? parse_unary(ps, height) : parse_infix(ps, 2, height);
    for (;;) {
        tok t = ps->t;
        int op = -1;
        if (t.kind == TOK_PUNCT && t.n == 1)
            for (int o = 0; o < TILEC_EWOP_COUNT; o++)
                if (ir_ewop((tilec_ewop)o)->infix == t.s[0] && ir_ewop((tilec_ewop)o)->prec == prec &&
                    ir_ewop_arity((tilec_ewop)o) == 2)
                    op = o;
        if (op < 0) return lhs;
        next(ps);
        ir_expr *e = new_expr(ps, IR_X_OP, t.line, t.col);
        e->op = (tilec_ewop)op;
        e->infix = true;
        e->args[0] = lhs;
        int h;
        e->args[1] = prec == 2 ? parse_unary(ps, &h) : parse_infix(ps, 2, &h);
        *height = grown(ps, e, h > *height ? h : *height);
        lhs = e;
    }
}

/* expr := term { ('+' | '-') term };  term := unary { ('*' | '/') unary } */
static ir_expr *parse_expr(parser *ps, int *height) {
    tok t = ps->t;
    enter(ps, &t);
    ir_expr *e = parse_infix(ps, 1, height);
    ps->nest--;
    return e;
}

/* kwarg := 'axes' '=' (ints | INT) | 'accum' '=' ('true'|'false')
 *        | 'nan' '=' ('propagate'|'ignore') | 'variant' '=' NAME | 'correction' '=' INT */
static void parse_kwarg(parser *ps, ir_stmt *st, unsigned *seen) {
    tok key = ps->t;
    if (key.kind != TOK_NAME) fail_expected(ps, "a keyword argument (axes=, accum=, nan=, variant=, correction=)");
    int which = -1;
    for (int i = 0; i < COUNT(kwarg_words); i++)
        if (tok_is(&key, kwarg_words[i])) which = i;
    if (which < 0 && ir_find_buffer(ps->k, key.s, key.n, st->index)) /* a region where keywords go */
        fail_at(ps, key.line, key.col, "%s takes %s and a source; '%.*s' is one region too many%s",
                tilec_op_name(st->op), ir_op(st->op)->second ? "two destinations" : "one destination", (int)key.n, key.s,
                ir_op(st->op)->second ? "" : " (argmax, argmin and aminmax take two destinations)");
    if (which < 0)
        fail_unknown(ps, &key, "keyword argument", kwarg_words, COUNT(kwarg_words),
                     "axes, accum, nan, variant or correction");
    if (*seen & (1u << which))
        fail_at(ps, key.line, key.col, "%s is given twice", kwarg_words[which]);
    *seen |= 1u << which;
    next(ps);
    expect(ps, "=");
    ir_pos vpos = {ps->t.line, ps->t.col};
    switch (which) {
    case 0: { /* axes */
        int64_t axes[TILEC_MAX_RANK];
        int n;
        if (tok_is(&ps->t, "(")) n = parse_ints(ps, axes, TILEC_MAX_RANK, "axes");
        else { axes[0] = parse_int(ps, NULL); n = 1; }
        for (int i = 0; i < n; i++) {
            if (axes[i] < -TILEC_MAX_RANK || axes[i] >= TILEC_MAX_RANK)
                fail_at(ps, vpos.line, vpos.col, "axis %lld is out of range for any region "
                        "(ranks are at most %d)", (long long)axes[i], TILEC_MAX_RANK);
            st->axes[i] = (int)axes[i];
        }
        st->naxes = n;
        st->axes_pos = vpos;
        break;
    }
    case 1: /* accum */
        if (accept(ps, "true")) st->accum = true;
        else if (accept(ps, "false")) st->accum = false;
        else fail_expected(ps, "true or false");
        break;
    case 2: /* nan */
        if (accept(ps, "propagate")) st->nan = TILEC_NAN_PROPAGATE;
        else if (accept(ps, "ignore")) st->nan = TILEC_NAN_IGNORE;
        else fail_expected(ps, "propagate or ignore");
        st->nan_pos = vpos;
        break;
    case 3: { /* variant */
        tok v = expect_name(ps, "a variant name");
        if (!(st->variant = ir_arena_strndup(&ps->prog->arena, v.s, v.n))) oom(ps);
        st->variant_pos = vpos;
        break;
    }
    default: /* correction (the verifier bounds it) */
        st->correction = parse_int(ps, NULL);
        st->correction_given = true;
        st->correction_pos = vpos;
        break;
    }
}

/* exec '.map' '(' region ',' expr [ ',' 'variant' '=' NAME ] [ ',' ] ')', from the region on */
static void parse_map(parser *ps, ir_stmt *st, int index) {
    parse_region(ps, &st->dst, index);
    expect(ps, ",");
    if (tok_is(&ps->t, ")")) fail_expected(ps, "an expression (the value of each element)");
    ps->upto = index;
    int height;
    st->expr = parse_expr(ps, &height);
    if (!tok_is(&ps->t, ",") && !tok_is(&ps->t, ")")) fail_expected(ps, "an operator (+ - * /), ',' or ')'");
    while (accept(ps, ",")) {
        if (tok_is(&ps->t, ")")) break; /* trailing comma */
        tok key = ps->t;
        if (!tok_is(&key, "variant")) {
            if (key.kind == TOK_NAME && ir_find_buffer(ps->k, key.s, key.n, index))
                fail_at(ps, key.line, key.col, "map takes a destination and one expression; '%.*s' is one operand "
                        "too many (combine the operands in the expression: add(a, b))", (int)key.n, key.s);
            if (key.kind == TOK_NAME)
                fail_unknown(ps, &key, "keyword argument", (const char *const[]){"variant"}, 1,
                             "variant= (map takes no other)");
            fail_expected(ps, "variant= or ')'");
        }
        if (st->variant) fail_at(ps, key.line, key.col, "variant is given twice");
        next(ps);
        expect(ps, "=");
        ir_pos vpos = {ps->t.line, ps->t.col};
        tok v = expect_name(ps, "a variant name");
        if (!(st->variant = ir_arena_strndup(&ps->prog->arena, v.s, v.n))) oom(ps);
        st->variant_pos = vpos;
    }
}

/* stmt := alloc | exec '.copy' '(' region ',' region ')' | exec '.fill' '(' region ',' number ')'
 *       | exec '.sync' '(' ')' | exec '.' OP '(' region ',' [region ','] region {',' kwarg} ')'
 *         (OP: TILEC_OP_LIST; the second destination for an op with two results)
 * exec := ('cta' | 'warpgroup' | 'warp' | 'thread' | 'grid' | 'cluster') [ '[' INT ']' ] */
static void parse_stmt(parser *ps) {
    tok first = ps->t;
    ir_trivia tv = take_leading(ps);
    if (first.kind != TOK_NAME) fail_expected(ps, "a statement or '}'");
    bool is_alloc = tok_is(&first, "shared") || tok_is(&first, "local");
    int scope = ir_lookup_scope(first.s, first.n);
    if (!is_alloc && scope < 0) {
        if (tok_is(&first, "global"))
            fail_at(ps, first.line, first.col,
                    "global buffers are kernel parameters; allocate only shared or local buffers");
        fail_unknown(ps, &first, "statement", statement_words, COUNT(statement_words),
                     "shared, local, or a scope (cta, warpgroup, warp, thread, grid, cluster)");
    }
    int index = ps->k->nstmts;
    ir_stmt *st = ir_stmt_add(ps->k, is_alloc ? IR_ALLOC : IR_SYNC);
    if (!st) oom(ps);
    st->pos = (ir_pos){first.line, first.col};
    st->trivia = tv;
    if (is_alloc) {
        parse_alloc(ps, st);
    } else {
        next(ps);
        st->exec.scope = (tilec_scope)scope;
        if (accept(ps, "[")) {
            st->exec.instance = parse_small_int(ps, 0, TILEC_MAX_THREADS - 1, "instance index", NULL);
            expect(ps, "]");
        }
        expect(ps, ".");
        tok op = ps->t;
        char ops[96], text[128]; /* the messages, only when one is given */
        if (op.kind != TOK_NAME) {
            snprintf(text, sizeof text, "an operation (copy, fill, sync, map, %s)", ir_op_names(ops, sizeof ops, ", "));
            fail_expected(ps, text);
        }
        st->op_pos = (ir_pos){op.line, op.col};
        int red = ir_lookup_op(op.s, op.n);
        if (red >= 0) { st->kind = IR_REDUCE; st->op = (tilec_op)red; st->correction = 1; }
        else if (tok_is(&op, "copy")) st->kind = IR_COPY;
        else if (tok_is(&op, "fill")) st->kind = IR_FILL;
        else if (tok_is(&op, "sync")) st->kind = IR_SYNC;
        else if (tok_is(&op, "map")) st->kind = IR_MAP;
        else {
            /* numpy's nanmax, nanargmin...: a comparing op with nan=ignore */
            int plain = op.n > 3 && strncmp(op.s, "nan", 3) == 0 ? ir_lookup_op(op.s + 3, op.n - 3) : -1;
            if (plain >= 0 && ir_op((tilec_op)plain)->compares)
                fail_at(ps, op.line, op.col, "unknown operation '%.*s'; to skip NaNs, write %.*s.%s(..., nan=ignore)",
                        (int)op.n, op.s, (int)first.n, first.s, tilec_op_name((tilec_op)plain));
            snprintf(text, sizeof text, "copy, fill, sync, map, %s", ir_op_names(ops, sizeof ops, " or "));
            fail_unknown(ps, &op, "operation", op_words, COUNT(op_words), text);
        }
        next(ps);
        expect(ps, "(");
        if (st->kind == IR_MAP) {
            parse_map(ps, st, index);
        } else if (st->kind != IR_SYNC) {
            parse_region(ps, &st->dst, index);
            expect(ps, ",");
            if (st->kind == IR_REDUCE && ir_op(st->op)->second) { /* argmax(values, indices, src) */
                parse_region(ps, &st->dst2, index);
                expect(ps, ",");
            }
            if (st->kind == IR_REDUCE) /* a keyword where the source goes: a destination is missing */
                for (int i = 0; i < COUNT(kwarg_words); i++)
                    if (tok_is(&ps->t, kwarg_words[i]) && !ir_find_buffer(ps->k, ps->t.s, ps->t.n, index))
                        fail_at(ps, ps->t.line, ps->t.col, "%s takes %s and a source, then keyword arguments; "
                                "found '%s' where the source goes", tilec_op_name(st->op),
                                ir_op(st->op)->second ? "two destinations (its results)" : "a destination",
                                kwarg_words[i]);
            if (st->kind == IR_FILL) st->fill = parse_number(ps, st->dst.buf->dtype, &st->value_pos);
            else parse_region(ps, &st->src, index);
        }
        if (st->kind == IR_REDUCE) {
            unsigned seen = 0;
            while (accept(ps, ",")) {
                if (tok_is(&ps->t, ")")) break; /* trailing comma */
                parse_kwarg(ps, st, &seen);
            }
        }
        expect(ps, ")");
    }
    st->trivia.trailing = take_trailing(ps);
    ps->last_end_line = ps->prev_line;
}

/* kernel := 'kernel' NAME '(' params ')' 'threads' '=' INT [ 'grid' '=' INT ] [ 'cluster' '=' '(' INT ')' ]
 *           [ 'math' '=' NAME ] '{' { stmt } '}'
 * func   := 'func'   NAME '(' params ')' 'threads' '=' INT [ 'math' '=' NAME ] '{' { stmt } '}'
 * params := param { ',' param } */
static void parse_kernel(parser *ps) {
    ir_trivia tv = take_leading(ps);
    tok kw = ps->t;
    bool is_func = tok_is(&kw, "func");
    next(ps);
    tok name = expect_name(ps, is_func ? "a func name" : "a kernel name");
    for (int i = 0; i < ps->prog->nkernels; i++) {
        const tilec_kernel *o = ps->prog->kernels[i];
        if (strlen(o->name) == name.n && memcmp(o->name, name.s, name.n) == 0)
            fail_at(ps, name.line, name.col, "duplicate name '%.*s': already declared at line %d",
                    (int)name.n, name.s, o->pos.line);
    }
    tilec_kernel *k = ir_kernel_add(ps->prog, name.s, name.n);
    if (!k) oom(ps);
    ps->k = k;
    k->is_func = is_func;
    k->pos = (ir_pos){kw.line, kw.col};
    k->trivia = tv;
    expect(ps, "(");
    do parse_param(ps);
    while (accept(ps, ","));
    expect(ps, ")");
    if (!tok_is(&ps->t, "threads")) fail_expected(ps, "'threads='");
    next(ps);
    expect(ps, "=");
    k->threads = parse_small_int(ps, 1, TILEC_MAX_THREADS, "threads", &k->threads_pos);
    if (tok_is(&ps->t, "grid")) {
        if (is_func)
            fail_at(ps, ps->t.line, ps->t.col,
                    "a func has no grid; the kernel that calls it sets the grid");
        next(ps);
        expect(ps, "=");
        k->grid = parse_int(ps, &k->grid_pos);
        if (k->grid < 1 || k->grid > INT32_MAX)
            fail_at(ps, k->grid_pos.line, k->grid_pos.col, "grid %lld is out of range (1 to %d)",
                    (long long)k->grid, INT32_MAX);
    }
    if (tok_is(&ps->t, "cluster")) {
        if (is_func)
            fail_at(ps, ps->t.line, ps->t.col,
                    "a func has no cluster; the kernel that calls it declares one");
        next(ps);
        expect(ps, "=");
        if (!tok_is(&ps->t, "("))
            fail_at(ps, ps->t.line, ps->t.col, "expected '(' after 'cluster=': a cluster's shape is written "
                    "cluster=(N), N CTAs");
        next(ps);
        k->cluster = parse_small_int(ps, 1, IR_MAX_CLUSTER, "cluster", &k->cluster_pos);
        if (tok_is(&ps->t, ",")) { /* a trailing comma, as ints take one; not CUDA's (x, y, z) */
            tok comma = ps->t;
            next(ps);
            if (!tok_is(&ps->t, ")"))
                fail_at(ps, comma.line, comma.col, "a cluster is one-dimensional here: write cluster=(%d), %d CTAs",
                        k->cluster, k->cluster);
        }
        expect(ps, ")");
        if (tok_is(&ps->t, "grid"))
            fail_at(ps, ps->t.line, ps->t.col, "grid= goes before cluster=: threads=N grid=G cluster=(%d)", k->cluster);
    }
    if (tok_is(&ps->t, "math")) {
        next(ps);
        expect(ps, "=");
        if (ps->t.kind != TOK_NAME) fail_expected(ps, "exact or approx after 'math='");
        tok v = ps->t;
        int m = ir_lookup_math(v.s, v.n);
        if (m < 0)
            fail_at(ps, v.line, v.col, "unknown math '%.*s': write math=exact (the same bits everywhere, the default) "
                    "or math=approx (the GPU's hardware exponential)", (int)(v.n > 40 ? 40 : v.n), v.s);
        k->math = (tilec_math)m;
        next(ps);
        if (tok_is(&ps->t, "grid"))
            fail_at(ps, ps->t.line, ps->t.col, "grid= goes before math=: threads=N grid=G math=%s", tilec_math_name(k->math));
        if (tok_is(&ps->t, "cluster"))
            fail_at(ps, ps->t.line, ps->t.col, "cluster= goes before math=: threads=N grid=G cluster=(C) math=%s",
                    tilec_math_name(k->math));
    }
    tok open = ps->t;
    expect(ps, "{");
    k->trivia.trailing = take_trailing(ps);
    ps->last_end_line = open.line;
    while (!tok_is(&ps->t, "}")) {
        if (ps->t.kind == TOK_EOF)
            fail_at(ps, ps->t.line, ps->t.col,
                    "expected '}' to close %s '%s' opened at line %d, found end of file",
                    is_func ? "func" : "kernel", k->name, open.line);
        if (k->nstmts >= TILEC_MAX_STMTS)
            fail_at(ps, ps->t.line, ps->t.col, "%s '%s' has more than %d statements; split it", is_func ? "func" : "kernel",
                    k->name, TILEC_MAX_STMTS);
        parse_stmt(ps);
    }
    k->nend_comments = take_until(ps, &k->end_comments);
    next(ps);
    ps->last_end_line = ps->prev_line;
    k->trivia.blank_before = false; /* kernels are always separated by one blank line */
}

/* program := { kernel | func } */
static void parse_program(parser *ps) {
    next(ps);
    while (ps->t.kind != TOK_EOF) {
        if (!tok_is(&ps->t, "kernel") && !tok_is(&ps->t, "func")) {
            if (ps->t.kind == TOK_NAME) {
                static const char *const top[] = {"kernel", "func"};
                fail_unknown(ps, &ps->t, "keyword", top, 2, "'kernel' or 'func'");
            }
            fail_expected(ps, "'kernel' or 'func'");
        }
        if (ps->prog->nkernels >= TILEC_MAX_KERNELS)
            fail_at(ps, ps->t.line, ps->t.col, "more than %d kernels and funcs in one program; split the file",
                    TILEC_MAX_KERNELS);
        parse_kernel(ps);
    }
    if (ps->prog->nkernels == 0)
        fail_at(ps, ps->t.line, ps->t.col, "empty program: expected 'kernel' or 'func'");
    ps->prog->ntail_comments = take_until(ps, &ps->prog->tail_comments);
}

tilec_status ir_parse(tilec_ctx *ctx, const char *file, const char *text, size_t len,
                      tilec_program **out) {
    *out = NULL;
    tilec_program *prog = ir_program_new(ctx, file, text ? text : "", text ? len : 0);
    if (!prog) return TILEC_ERR_NOMEM;
    parser *ps = calloc(1, sizeof *ps);
    if (!ps) { tilec_program_free(prog); return TILEC_ERR_NOMEM; }
    ps->prog = prog;
    ps->src = &prog->src;
    lex_init(&ps->lx, prog);
    int r = setjmp(ps->fail);
    if (r == 0) parse_program(ps);
    free(ps);
    if (r != 0) {
        tilec_program_free(prog);
        return r == 2 ? TILEC_ERR_NOMEM : TILEC_ERR_PARSE;
    }
    *out = prog;
    return TILEC_OK;
}

tilec_status ir_parse_expr(tilec_program *p, tilec_kernel *k, const char *text, int upto_stmt, ir_expr **out) {
    *out = NULL;
    ir_source src = {"expression", text, strlen(text)};
    parser *ps = calloc(1, sizeof *ps);
    if (!ps) return TILEC_ERR_NOMEM;
    ps->prog = p;
    ps->src = &src;
    ps->k = k;
    ps->upto = upto_stmt;
    lex_init(&ps->lx, p);
    ps->lx.p = text;
    ps->lx.end = text + src.len;
    int r = setjmp(ps->fail);
    if (r == 0) {
        int height;
        next(ps);
        if (ps->t.kind == TOK_EOF) fail_expected(ps, "an expression (the value of each element)");
        *out = parse_expr(ps, &height);
        if (ps->t.kind != TOK_EOF) fail_expected(ps, "an operator (+ - * /) or the end of the expression");
    }
    free(ps);
    if (r != 0) {
        *out = NULL;
        return r == 2 ? TILEC_ERR_NOMEM : TILEC_ERR_PARSE;
    }
    return TILEC_OK;
}
