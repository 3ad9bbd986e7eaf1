/*
 * support.h — helpers shared by the cmocka suites: parse (and verify) a source text,
 * and fetch the first diagnostic. Test sources may mark the expected error position with
 * '@' (removed before parsing), so a case states where its error is without counting.
 */
#ifndef TILEC_TEST_SUPPORT_H
#define TILEC_TEST_SUPPORT_H

#include "tilec.h"

#include <stdlib.h>
#include <string.h>

/* The dtype of a name ("f32"), TILEC_DTYPE_COUNT for none. */
static inline tilec_dtype dtype_named(const char *name) {
    for (int d = 0; d < TILEC_DTYPE_COUNT; d++)
        if (!strcmp(name, tilec_dtype_name((tilec_dtype)d))) return (tilec_dtype)d;
    return TILEC_DTYPE_COUNT;
}

/* Elements of a reduction's input (or, kept_only, of its output): the product of the
 * extents, of the kept ones only. Counted here, not asked of the library under test. */
static inline int64_t desc_elems(const tilec_reduce_desc *d, bool kept_only) {
    bool red[TILEC_MAX_RANK] = {0};
    for (int i = 0; i < d->naxes; i++) red[d->axes[i] < 0 ? d->axes[i] + d->rank : d->axes[i]] = true;
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++)
        if (!kept_only || !red[i]) n *= d->shape[i];
    return n;
}

/* Copies src without its '@' marker into out (malloc'd); *line and *col get the marker's
 * position (0 when there is none). */
static inline char *strip_marker(const char *src, size_t len, int *line, int *col) {
    char *out = malloc(len + 1);
    size_t n = 0;
    int l = 1, c = 1;
    *line = *col = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '@' && *line == 0) { *line = l; *col = c; continue; }
        out[n++] = src[i];
        if (src[i] == '\n') { l++; c = 1; } else c++;
    }
    out[n] = '\0';
    return out;
}

/* Parses and, if that works, verifies text with the given warp size. */
static inline tilec_status check_text(tilec_ctx *ctx, const char *text, size_t len, int warp_size) {
    tilec_program *p = NULL;
    tilec_status st = tilec_parse(ctx, "t.tile", text, len, &p);
    if (st == TILEC_OK) {
        tilec_verify_options o = {.warp_size = warp_size};
        st = tilec_verify(p, &o);
    }
    tilec_program_free(p);
    return st;
}

/* Parses text and formats it; returns malloc'd canonical text or NULL. */
static inline char *format_text(tilec_ctx *ctx, const char *text) {
    tilec_program *p = NULL;
    if (tilec_parse(ctx, "t.tile", text, strlen(text), &p) != TILEC_OK) return NULL;
    char *out = NULL;
    size_t n;
    if (tilec_format(p, &out, &n) != TILEC_OK) out = NULL;
    tilec_program_free(p);
    return out;
}

#endif
