/*
 * context.c — the tilec context, its diagnostics and the string builder.
 *
 * The library never prints: every problem becomes a diagnostic stored here, rendered on
 * demand by tilec_diag_text as "FILE:LINE:COL: error: MESSAGE" with the source line and a
 * caret under the column. Allocation failures inside diagnostics are counted, never fatal.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- string builder ---------------------------------------------------------------- */

static bool str_reserve(ir_str *s, size_t extra) {
    if (s->oom) return false;
    if (s->len + extra + 1 <= s->cap) return true;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + extra + 1) {
        if (cap > SIZE_MAX / 2) { s->oom = true; return false; }
        cap *= 2;
    }
    char *p = realloc(s->data, cap);
    if (!p) { s->oom = true; return false; }
    s->data = p;
    s->cap = cap;
    return true;
}

void ir_str_put(ir_str *s, const char *text, size_t n) {
    if (!str_reserve(s, n)) return;
    memcpy(s->data + s->len, text, n);
    s->len += n;
    s->data[s->len] = '\0';
}

void ir_str_vprintf(ir_str *s, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) { s->oom = true; return; }
    if (!str_reserve(s, (size_t)n)) return;
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
    s->len += (size_t)n;
}

void ir_str_printf(ir_str *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_str_vprintf(s, fmt, ap);
    va_end(ap);
}

void ir_str_free(ir_str *s) {
    free(s->data);
    *s = (ir_str){0};
}

/* ---- context ------------------------------------------------------------------------ */

tilec_status tilec_open(tilec_ctx **out) {
    if (!out) return TILEC_ERR_INVALID_ARG;
    *out = calloc(1, sizeof(tilec_ctx));
    return *out ? TILEC_OK : TILEC_ERR_NOMEM;
}

void tilec_diag_clear(tilec_ctx *ctx) {
    if (!ctx) return;
    for (size_t i = 0; i < ctx->ndiags; i++) {
        free(ctx->diags[i].file);
        free(ctx->diags[i].message);
        free(ctx->diags[i].excerpt);
    }
    ctx->ndiags = 0;
    ctx->dropped = 0;
    free(ctx->text);
    ctx->text = NULL;
    ctx->text_stale = false;
}

void ir_begin(tilec_ctx *ctx) { tilec_diag_clear(ctx); }

tilec_status ir_bad(tilec_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_diag_vadd(ctx, NULL, TILEC_SEV_ERROR, 0, 0, fmt, ap);
    va_end(ap);
    return TILEC_ERR_INVALID_ARG;
}

void tilec_close(tilec_ctx *ctx) {
    if (!ctx) return;
    if (ctx->runtime && ctx->runtime_free) ctx->runtime_free(ctx->runtime);
    tilec_diag_clear(ctx);
    free(ctx);
}

void tilec_free(void *p) { free(p); }

/* ---- diagnostics --------------------------------------------------------------------- */

/* Renders the line `line` of src with a caret under `col`. Non-printable bytes show as
 * '?', and a very long line is cut to a window around the column. */
static char *render_excerpt(const ir_source *src, int line, int col) {
    if (!src || !src->text || line <= 0) return NULL;
    const char *p = src->text, *end = src->text + src->len;
    for (int l = 1; l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return NULL;
        p = nl + 1;
    }
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    size_t n = (size_t)(eol - p);
    if (n > 0 && p[n - 1] == '\r') n--;
    size_t c = col > 0 ? (size_t)col - 1 : 0;
    if (c > n) c = n;
    enum { WINDOW = 100 };
    size_t from = c > WINDOW ? c - WINDOW : 0;
    size_t to = n - c > WINDOW ? c + WINDOW : n;
    ir_str s = {0};
    char gutter[32];
    snprintf(gutter, sizeof gutter, "%5d | ", line);
    ir_str_printf(&s, "%s%s", gutter, from > 0 ? "..." : "");
    for (size_t i = from; i < to; i++) {
        unsigned char ch = (unsigned char)p[i];
        char out = (ch == '\t' || (ch >= 0x20 && ch < 0x7f)) ? (char)ch : '?';
        ir_str_put(&s, &out, 1);
    }
    ir_str_printf(&s, "%s\n      | %s", to < n ? "..." : "", from > 0 ? "   " : "");
    for (size_t i = from; i < c; i++) ir_str_put(&s, p[i] == '\t' ? "\t" : " ", 1);
    ir_str_put(&s, "^", 1);
    if (s.oom) { ir_str_free(&s); return NULL; }
    return s.data;
}

void ir_diag_vadd(tilec_ctx *ctx, const ir_source *src, tilec_severity sev, int line, int col,
                  const char *fmt, va_list ap) {
    if (!ctx) return;
    ctx->text_stale = true;
    if (ctx->ndiags >= IR_MAX_DIAGS) { ctx->dropped++; return; }
    ir_str msg = {0};
    ir_str_vprintf(&msg, fmt, ap);
    /* no source: a problem of the call itself (a missing compiler, a bad target) */
    const char *file = src && src->file ? src->file : "tilec";
    char *f = strdup(file);
    if (msg.oom || !f) {
        ir_str_free(&msg);
        free(f);
        ctx->dropped++;
        return;
    }
    ir_diag *d = &ctx->diags[ctx->ndiags++];
    d->severity = sev;
    d->file = f;
    d->line = line;
    d->col = col;
    d->message = msg.data;
    d->excerpt = render_excerpt(src, line, col);
}

void ir_diag_add(tilec_ctx *ctx, const ir_source *src, tilec_severity sev, int line, int col,
                 const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_diag_vadd(ctx, src, sev, line, col, fmt, ap);
    va_end(ap);
}

size_t ir_error_count(const tilec_ctx *ctx) {
    size_t n = ctx->dropped;
    for (size_t i = 0; i < ctx->ndiags; i++) n += ctx->diags[i].severity == TILEC_SEV_ERROR;
    return n;
}

size_t tilec_diag_count(const tilec_ctx *ctx) { return ctx ? ctx->ndiags : 0; }

tilec_status tilec_diag_get(const tilec_ctx *ctx, size_t i, tilec_diag *out) {
    if (!ctx || !out || i >= ctx->ndiags) return TILEC_ERR_INVALID_ARG;
    const ir_diag *d = &ctx->diags[i];
    *out = (tilec_diag){d->severity, d->file, d->line, d->col, d->message};
    return TILEC_OK;
}

const char *tilec_diag_text(const tilec_ctx *ctx_const) {
    if (!ctx_const) return "";
    tilec_ctx *ctx = (tilec_ctx *)ctx_const; /* the rendering is a cache */
    if (!ctx->text_stale && ctx->text) return ctx->text;
    ir_str s = {0};
    ir_str_put(&s, "", 0);
    for (size_t i = 0; i < ctx->ndiags; i++) {
        const ir_diag *d = &ctx->diags[i];
        const char *sev = d->severity == TILEC_SEV_ERROR ? "error" : d->severity == TILEC_SEV_WARNING ? "warning" : "note";
        if (d->line > 0)
            ir_str_printf(&s, "%s:%d:%d: %s: %s\n", d->file, d->line, d->col, sev, d->message);
        else
            ir_str_printf(&s, "%s: %s: %s\n", d->file, sev, d->message);
        if (d->excerpt) ir_str_printf(&s, "%s\n", d->excerpt);
    }
    if (ctx->dropped)
        ir_str_printf(&s, "(%zu more diagnostics not shown)\n", ctx->dropped);
    if (s.oom) { ir_str_free(&s); return "out of memory while rendering diagnostics\n"; }
    free(ctx->text);
    ctx->text = s.data;
    ctx->text_stale = false;
    return ctx->text;
}
