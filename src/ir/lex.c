/*
 * lex.c — splits `.tile` text into tokens. Comments (`#` to the end of the line) are not
 * tokens; they are kept in order, with their line, so the printer can put them back. A
 * control byte inside a comment ends it and is reported (a comment is text).
 * Columns count bytes from 1, so a caret lines up under the offending byte.
 */
#include "lex.h"

#include <string.h>

void lex_init(lexer *lx, tilec_program *prog) {
    *lx = (lexer){.p = prog->src.text, .end = prog->src.text + prog->src.len, .line = 1,
                  .col = 1, .prog = prog};
}

static void advance(lexer *lx, size_t n) {
    for (size_t i = 0; i < n && lx->p < lx->end; i++, lx->p++) {
        if (*lx->p == '\n') { lx->line++; lx->col = 1; }
        else lx->col++;
    }
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static void keep_comment(lexer *lx, const char *s, size_t n, int line) {
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    ir_arena *a = &lx->prog->arena;
    if (!ir_arena_grow(a, (void **)&lx->comments, &lx->cap_comments, lx->ncomments + 1,
                       sizeof *lx->comments)) { lx->oom = true; return; }
    char *text = ir_arena_strndup(a, s, n);
    if (!text) { lx->oom = true; return; }
    lx->comments[lx->ncomments++] = (ir_comment){text, line};
}

tok lex_next(lexer *lx) {
    for (;;) { /* skip blanks and comments */
        if (lx->p >= lx->end) break;
        char c = *lx->p;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') { advance(lx, 1); continue; }
        if (c == '#') {
            /* to the end of the line; a control byte (NUL and the like: not text) ends it
             * too and is then a bad token, so the parser reports it where it is */
            size_t n = 0, rest = (size_t)(lx->end - lx->p);
            while (n < rest && lx->p[n] != '\n' &&
                   !((unsigned char)lx->p[n] < 0x20 && lx->p[n] != '\t' && lx->p[n] != '\r'))
                n++;
            keep_comment(lx, lx->p, n, lx->line);
            advance(lx, n);
            continue;
        }
        break;
    }
    tok t = {TOK_EOF, lx->p, 0, lx->line, lx->col};
    if (lx->p >= lx->end) return t;
    const char *s = lx->p;
    size_t rest = (size_t)(lx->end - s), n = 1;
    if (is_alpha(*s)) {
        t.kind = TOK_NAME;
        while (n < rest && (is_alpha(s[n]) || is_digit(s[n]))) n++;
    } else if (is_digit(*s) || (*s == '.' && rest > 1 && is_digit(s[1]))) {
        t.kind = TOK_INT;
        n = 0;
        while (n < rest && is_digit(s[n])) n++;
        if (n < rest && s[n] == '.') {
            t.kind = TOK_FLOAT;
            n++;
            while (n < rest && is_digit(s[n])) n++;
        }
        if (n < rest && (s[n] == 'e' || s[n] == 'E')) {
            size_t m = n + 1;
            if (m < rest && (s[m] == '+' || s[m] == '-')) m++;
            if (m < rest && is_digit(s[m])) {
                t.kind = TOK_FLOAT;
                while (m < rest && is_digit(s[m])) m++;
                n = m;
            }
        }
        /* "12abc" is one bad token rather than a number and a name */
        while (n < rest && (is_alpha(s[n]) || is_digit(s[n]))) { n++; t.kind = TOK_BAD; }
    } else if (strchr("()[]{},:=.-+*/", *s) && *s != '\0') {
        t.kind = TOK_PUNCT;
    } else {
        t.kind = TOK_BAD;
    }
    t.n = n;
    advance(lx, n);
    return t;
}

bool tok_is(const tok *t, const char *text) {
    size_t n = strlen(text);
    return (t->kind == TOK_NAME || t->kind == TOK_PUNCT) && t->n == n && memcmp(t->s, text, n) == 0;
}
