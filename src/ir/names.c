/*
 * names.c — name tables of the enumerations, generated from the X-macro lists in tilec.h,
 * and the lookups the parser uses (with a "did you mean" for near misses).
 */
#include "ir.h"

#include <stdio.h>

#include <string.h>

static const char *const dtype_names[] = {
#define X(s, n, b, f, w) n,
    TILEC_DTYPE_LIST(X)
#undef X
};
static const size_t dtype_sizes[] = {
#define X(s, n, b, f, w) b,
    TILEC_DTYPE_LIST(X)
#undef X
};
static const bool dtype_float[] = {
#define X(s, n, b, f, w) f,
    TILEC_DTYPE_LIST(X)
#undef X
};
static const tilec_dtype dtype_wide[] = {
#define X(s, n, b, f, w) TILEC_##w,
    TILEC_DTYPE_LIST(X)
#undef X
};
static const char *const space_names[] = {
#define X(s, n) n,
    TILEC_SPACE_LIST(X)
#undef X
};
static const char *const scope_names[] = {
#define X(s, n, id) n,
    TILEC_SCOPE_LIST(X)
#undef X
};
static const char *const id_names[] = {
#define X(s, n, id) id,
    TILEC_SCOPE_LIST(X)
#undef X
};
static const char *const op_names[] = {
#define X(s, n) n,
    TILEC_OP_LIST(X)
#undef X
};
static const char *const ewop_names[] = {
#define X(s, n, a) n,
    TILEC_EWOP_LIST(X)
#undef X
};
static const int ewop_arity[] = {
#define X(s, n, a) a,
    TILEC_EWOP_LIST(X)
#undef X
};
static const char *const fused_names[] = {
#define X(s, n) n,
    TILEC_FUSED_LIST(X)
#undef X
};
static const char *const layout_names[] = {
#define X(s, n) n,
    TILEC_LAYOUT_LIST(X)
#undef X
};
static const char *const swizzle_names[] = {
#define X(s, n, b, m, sh) n,
    TILEC_SWIZZLE_LIST(X)
#undef X
};
static const char *const nan_names[] = {
#define X(s, n) n,
    TILEC_NAN_LIST(X)
#undef X
};
static const char *const math_names[] = {
#define X(s, n) n,
    TILEC_MATH_LIST(X)
#undef X
};

/* Statuses are sparse in principle, so they are looked up rather than indexed. */
static const struct {
    tilec_status status;
    const char *name, *message;
} status_table[] = {
#define X(s, v, d) {TILEC_##s, "TILEC_" #s, d},
    TILEC_STATUS_LIST(X)
#undef X
};

static const char *const backend_names[] = {
#define X(s, n) n,
    TILEC_BACKEND_LIST(X)
#undef X
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

_Static_assert(COUNT(dtype_names) == TILEC_DTYPE_COUNT, "dtype table");
_Static_assert(COUNT(space_names) == TILEC_SPACE_COUNT, "space table");
_Static_assert(COUNT(scope_names) == TILEC_SCOPE_COUNT, "scope table");
_Static_assert(COUNT(op_names) == TILEC_OP_COUNT, "op table");
_Static_assert(COUNT(nan_names) == TILEC_NAN_COUNT, "nan table");
_Static_assert(COUNT(math_names) == TILEC_MATH_COUNT, "math table");
_Static_assert(COUNT(ewop_names) == TILEC_EWOP_COUNT, "elementwise op table");
_Static_assert(COUNT(fused_names) == TILEC_FUSED_COUNT, "fused op table");
_Static_assert(COUNT(layout_names) == TILEC_LAYOUT_COUNT, "layout table");
_Static_assert(COUNT(swizzle_names) == TILEC_SWIZZLE_COUNT, "swizzle table");
_Static_assert(COUNT(backend_names) == TILEC_BACKEND_COUNT, "backend table");

static const char *name_at(const char *const *names, int count, int i) {
    return i >= 0 && i < count ? names[i] : NULL;
}

const char *tilec_dtype_name(tilec_dtype d) { return name_at(dtype_names, COUNT(dtype_names), (int)d); }
const char *tilec_space_name(tilec_space s) { return name_at(space_names, COUNT(space_names), (int)s); }
const char *tilec_scope_name(tilec_scope s) { return name_at(scope_names, COUNT(scope_names), (int)s); }
const char *tilec_op_name(tilec_op o) { return name_at(op_names, COUNT(op_names), (int)o); }
const char *tilec_nan_name(tilec_nan n) { return name_at(nan_names, COUNT(nan_names), (int)n); }
const char *tilec_math_name(tilec_math m) { return name_at(math_names, COUNT(math_names), (int)m); }
const char *tilec_ewop_name(tilec_ewop o) { return name_at(ewop_names, COUNT(ewop_names), (int)o); }
const char *tilec_fused_name(tilec_fused_op o) { return name_at(fused_names, COUNT(fused_names), (int)o); }
const char *tilec_layout_name(tilec_layout_kind l) { return name_at(layout_names, COUNT(layout_names), (int)l); }
const char *tilec_swizzle_name(tilec_swizzle_kind s) { return name_at(swizzle_names, COUNT(swizzle_names), (int)s); }
const char *tilec_backend_name(tilec_backend b) { return name_at(backend_names, COUNT(backend_names), (int)b); }

const char *tilec_backend_file_extension(tilec_backend b, bool binary) {
    const ir_target_info *t = ir_target(b);
    return t && t->gpu ? (binary ? t->binary_ext : t->source_ext) : NULL;
}
const char *ir_id_name(tilec_scope s) { return name_at(id_names, COUNT(id_names), (int)s); }
const char *ir_index_id_word(const ir_index *ix) { return ix->kind == TILEC_INDEX_RANK ? IR_RANK_WORD : ir_id_name(ix->id); }

size_t tilec_dtype_size(tilec_dtype d) {
    return (int)d >= 0 && (int)d < COUNT(dtype_sizes) ? dtype_sizes[d] : 0;
}
tilec_dtype tilec_dtype_wide(tilec_dtype d) { return (int)d >= 0 && (int)d < COUNT(dtype_wide) ? dtype_wide[d] : d; }
bool ir_dtype_is_float(tilec_dtype d) {
    return (int)d >= 0 && (int)d < COUNT(dtype_float) && dtype_float[d];
}

const char *tilec_status_name(tilec_status s) {
    for (int i = 0; i < COUNT(status_table); i++)
        if (status_table[i].status == s) return status_table[i].name;
    return NULL;
}
const char *tilec_status_message(tilec_status s) {
    for (int i = 0; i < COUNT(status_table); i++)
        if (status_table[i].status == s) return status_table[i].message;
    return "unknown status";
}

const char *tilec_version(void) { return TILEC_VERSION_STRING; }

static int lookup(const char *const *names, int count, const char *s, size_t n) {
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) return i;
    return -1;
}

int ir_lookup_dtype(const char *s, size_t n) { return lookup(dtype_names, COUNT(dtype_names), s, n); }
int ir_lookup_space(const char *s, size_t n) { return lookup(space_names, COUNT(space_names), s, n); }
int ir_lookup_layout(const char *s, size_t n) { return lookup(layout_names, COUNT(layout_names), s, n); }
int ir_lookup_swizzle(const char *s, size_t n) { return lookup(swizzle_names, COUNT(swizzle_names), s, n); }
int ir_lookup_scope(const char *s, size_t n) { return lookup(scope_names, COUNT(scope_names), s, n); }
int ir_lookup_op(const char *s, size_t n) { return lookup(op_names, COUNT(op_names), s, n); }
int ir_lookup_fused(const char *s, size_t n) { return lookup(fused_names, COUNT(fused_names), s, n); }
int ir_lookup_ewop(const char *s, size_t n) { return lookup(ewop_names, COUNT(ewop_names), s, n); }
int ir_lookup_math(const char *s, size_t n) { return lookup(math_names, COUNT(math_names), s, n); }
int ir_ewop_arity(tilec_ewop o) { return (unsigned)o < TILEC_EWOP_COUNT ? ewop_arity[o] : 0; }
const char *const *ir_ewop_names(int *count) {
    *count = COUNT(ewop_names);
    return ewop_names;
}

const char *ir_op_names(char *buf, size_t n, const char *last) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < COUNT(op_names) && at < n; i++) {
        int w = snprintf(buf + at, n - at, "%s%s", i == 0 ? "" : i == COUNT(op_names) - 1 ? last : ", ", op_names[i]);
        if (w < 0) break;
        at += (size_t)w;
    }
    return buf;
}
int ir_lookup_id(const char *s, size_t n) { return lookup(id_names, COUNT(id_names), s, n); }

/* Edit distance capped at 3 (enough to rank near misses of short keywords): insertions,
 * deletions, substitutions and swaps of two neighbours (f23 for f32, sme for sum) each
 * count one. */
static int distance(const char *a, size_t na, const char *b, size_t nb) {
    enum { CAP = 3, MAXN = 32 };
    if (na > MAXN || nb > MAXN) return CAP;
    int d[MAXN + 1][MAXN + 1];
    for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb] < CAP ? d[na][nb] : CAP;
}

const char *ir_did_you_mean(const char *word, size_t n, const char *const *names, int count) {
    const char *best = NULL;
    int best_d = n <= 3 ? 2 : 3; /* accept distance 1 for short words, 2 for longer */
    for (int i = 0; i < count; i++) {
        int d = distance(word, n, names[i], strlen(names[i]));
        if (d < best_d && (size_t)d < n) { best_d = d; best = names[i]; } /* keep some of it */
    }
    return best;
}
