/*
 * lex.h — the tokenizer of `.tile` text, used only by the parser.
 */
#ifndef TILEC_LEX_H
#define TILEC_LEX_H

#include "ir.h"

typedef enum tok_kind {
    TOK_EOF,
    TOK_NAME,  /* [A-Za-z_][A-Za-z0-9_]* */
    TOK_INT,   /* decimal digits (a leading '-' is its own token) */
    TOK_FLOAT, /* digits with a '.' or an exponent */
    TOK_PUNCT, /* one of ( ) [ ] { } , : = . - + * / */
    TOK_BAD    /* a byte that starts no token */
} tok_kind;

typedef struct tok {
    tok_kind kind;
    const char *s; /* points into the source */
    size_t n;
    int line, col;
} tok;

typedef struct lexer {
    const char *p, *end; /* the rest of the text */
    int line, col;
    tilec_program *prog; /* for comments, allocated in its arena */
    ir_comment *comments;
    int ncomments, cap_comments;
    bool oom;
} lexer;

void lex_init(lexer *lx, tilec_program *prog);
tok lex_next(lexer *lx);
bool tok_is(const tok *t, const char *text);

#endif
