/*
 * program.c — making and inspecting tile IR: programs, kernels, statements, buffer
 * lookup, and the shape of a region as indexed.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

tilec_program *ir_program_new(tilec_ctx *ctx, const char *file, const char *text, size_t len) {
    tilec_program *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->ctx = ctx;
    const char *name = file ? file : "<input>";
    p->src.file = ir_arena_strndup(&p->arena, name, strlen(name));
    if (text) {
        p->src.text = ir_arena_strndup(&p->arena, text, len);
        p->src.len = len;
    }
    if (!p->src.file || (text && !p->src.text)) {
        ir_arena_free(&p->arena);
        free(p);
        return NULL;
    }
    return p;
}

void tilec_program_free(tilec_program *p) {
    if (!p) return;
    ir_arena_free(&p->arena);
    free(p);
}

tilec_ctx *tilec_program_ctx(const tilec_program *p) { return p ? p->ctx : NULL; }

tilec_kernel *ir_kernel_add(tilec_program *p, const char *name, size_t n) {
    if (!ir_arena_grow(&p->arena, (void **)&p->kernels, &p->cap_kernels, p->nkernels + 1,
                       sizeof *p->kernels))
        return NULL;
    tilec_kernel *k = ir_arena_alloc(&p->arena, sizeof *k);
    if (!k || !(k->name = ir_arena_strndup(&p->arena, name, n))) return NULL;
    k->prog = p;
    k->grid = 1;
    p->kernels[p->nkernels++] = k;
    return k;
}

ir_stmt *ir_stmt_add(tilec_kernel *k, ir_stmt_kind kind) {
    ir_arena *a = &k->prog->arena;
    if (!ir_arena_grow(a, (void **)&k->stmts, &k->cap_stmts, k->nstmts + 1, sizeof *k->stmts))
        return NULL;
    ir_stmt *st = ir_arena_alloc(a, sizeof *st);
    if (!st) return NULL;
    st->kind = kind;
    st->index = k->nstmts;
    st->exec.instance = -1;
    st->naxes = 1;
    st->axes[0] = -1;
    k->stmts[k->nstmts++] = st;
    return st;
}

bool ir_param_add(tilec_kernel *k, tilec_buffer *b) {
    if (!ir_arena_grow(&k->prog->arena, (void **)&k->params, &k->cap_params, k->nparams + 1,
                       sizeof *k->params))
        return false;
    k->params[k->nparams++] = b;
    b->kernel = k;
    b->is_param = true;
    return true;
}

static bool name_is(const char *a, const char *s, size_t n) {
    return strlen(a) == n && memcmp(a, s, n) == 0;
}

tilec_buffer *ir_find_buffer(const tilec_kernel *k, const char *name, size_t n, int upto_stmt) {
    for (int i = 0; i < k->nparams; i++)
        if (name_is(k->params[i]->name, name, n)) return k->params[i];
    for (int i = 0; i < upto_stmt && i < k->nstmts; i++) {
        const ir_stmt *st = k->stmts[i];
        if (st->kind == IR_ALLOC && st->alloc && name_is(st->alloc->name, name, n)) return st->alloc;
    }
    return NULL;
}

const tilec_kernel *ir_find_kernel(tilec_program *p, const char *name) {
    if (!name) {
        if (p->nkernels == 1) return p->kernels[0];
        ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the program has %d kernels and funcs; name the one to use",
                    p->nkernels);
        return NULL;
    }
    for (int i = 0; i < p->nkernels; i++)
        if (strcmp(p->kernels[i]->name, name) == 0) return p->kernels[i];
    ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no kernel or func named '%s'", name);
    return NULL;
}

/* ---- regions ------------------------------------------------------------------------ */

bool ir_index_range(const ir_index *ix, int64_t extent, int64_t *lo, int64_t *hi) {
    switch (ix->kind) {
    case TILEC_INDEX_AT:
        *lo = ix->start < 0 ? ix->start + extent : ix->start;
        *hi = *lo + 1;
        return true;
    case TILEC_INDEX_SLICE:
        *lo = !ix->has_start ? 0 : ix->start < 0 ? ix->start + extent : ix->start;
        *hi = !ix->has_stop ? extent : ix->stop < 0 ? ix->stop + extent : ix->stop;
        return true;
    case TILEC_INDEX_ID:
    case TILEC_INDEX_RANK:
        break;
    }
    return false;
}

int ir_region_shape(const ir_region *r, int64_t *dims) {
    int n = 0;
    for (int d = 0; d < r->buf->rank; d++) {
        if (d < r->nindex) {
            const ir_index *ix = &r->index[d];
            if (ix->kind != TILEC_INDEX_SLICE) continue; /* AT and ID drop the dimension */
            int64_t lo, hi;
            ir_index_range(ix, r->buf->shape[d], &lo, &hi);
            dims[n++] = hi - lo;
        } else {
            dims[n++] = r->buf->shape[d];
        }
    }
    return n;
}

int64_t ir_region_elems(const ir_region *r) {
    int64_t dims[TILEC_MAX_RANK], e = 1;
    int n = ir_region_shape(r, dims);
    for (int i = 0; i < n; i++) e *= dims[i]; /* sub-box of a buffer whose product fits */
    return e;
}

/* ---- scopes ------------------------------------------------------------------------- */

int ir_scope_size(tilec_scope s, int threads, int warp_size) {
    switch (s) {
    case TILEC_SCOPE_CTA: return threads;
    case TILEC_SCOPE_WARPGROUP: return 128;
    case TILEC_SCOPE_WARP: return warp_size;
    case TILEC_SCOPE_GRID:
    case TILEC_SCOPE_CLUSTER: return threads; /* per CTA */
    default: return 1;
    }
}

int ir_scope_count(tilec_scope s, int threads, int warp_size) {
    int size = ir_scope_size(s, threads, warp_size);
    return size > 0 ? (threads + size - 1) / size : 0;
}

/* ---- introspection -------------------------------------------------------------------- */

size_t tilec_program_kernel_count(const tilec_program *p) { return p ? (size_t)p->nkernels : 0; }
tilec_kernel *tilec_program_kernel(const tilec_program *p, size_t i) {
    return p && i < (size_t)p->nkernels ? p->kernels[i] : NULL;
}
const char *tilec_kernel_name(const tilec_kernel *k) { return k ? k->name : NULL; }
bool tilec_kernel_is_func(const tilec_kernel *k) { return k && k->is_func; }
int tilec_kernel_threads(const tilec_kernel *k) { return k ? k->threads : 0; }
int64_t tilec_kernel_grid(const tilec_kernel *k) { return k ? k->grid : 0; }
tilec_math tilec_kernel_math(const tilec_kernel *k) { return k ? k->math : TILEC_MATH_EXACT; }
int tilec_kernel_cluster(const tilec_kernel *k) { return k ? k->cluster : 0; }
size_t tilec_kernel_param_count(const tilec_kernel *k) { return k ? (size_t)k->nparams : 0; }
tilec_buffer *tilec_kernel_param_at(const tilec_kernel *k, size_t i) {
    return k && i < (size_t)k->nparams ? k->params[i] : NULL;
}
bool tilec_kernel_param_written(const tilec_kernel *k, size_t i) {
    const tilec_buffer *b = tilec_kernel_param_at(k, i);
    for (int j = 0; b && j < k->nstmts; j++) {
        const ir_stmt *st = k->stmts[j];
        if ((st->kind == IR_COPY || st->kind == IR_FILL || st->kind == IR_REDUCE || st->kind == IR_MAP) &&
            (st->dst.buf == b || st->dst2.buf == b))
            return true;
    }
    return false;
}
const char *tilec_buffer_name(const tilec_buffer *b) { return b ? b->name : NULL; }
tilec_dtype tilec_buffer_dtype(const tilec_buffer *b) { return b ? b->dtype : TILEC_DTYPE_COUNT; }
tilec_space tilec_buffer_space(const tilec_buffer *b) { return b ? b->space : TILEC_SPACE_COUNT; }
int tilec_buffer_rank(const tilec_buffer *b) { return b ? b->rank : 0; }
int64_t tilec_buffer_extent(const tilec_buffer *b, int dim) {
    return b && dim >= 0 && dim < b->rank ? b->shape[dim] : 0;
}

/* ---- declarations ----------------------------------------------------------------------- */

bool ir_name_ok(const char *s, size_t n) {
    if (n == 0 || n > TILEC_MAX_NAME) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

static int cmp_dim_by_stride(const void *a, const void *b, const int64_t *strides) {
    int64_t x = strides[*(const int *)a], y = strides[*(const int *)b];
    return (x > y) - (x < y);
}

/* How many distinct elements the indices of a strided buffer reach: the buffer is valid
 * when that is all of its indices. Ordered by stride, when each stride steps over what the
 * smaller ones reach, every index reaches its own element; otherwise (strides=(2, 3) on
 * [3, 3] still does) the reachable offsets are built as a set, one dimension at a time.
 * -1: out of memory; -2: the buffer spans too much for that (more than 2^26 elements);
 * -3: it does, and has more indices than elements (so some must meet). */
static int64_t distinct_offsets(const tilec_buffer *b, int64_t span) {
    int order[TILEC_MAX_RANK];
    for (int d = 0; d < b->rank; d++) order[d] = d;
    for (int i = 1; i < b->rank; i++) /* insertion sort: rank <= 8 */
        for (int j = i; j > 0 && cmp_dim_by_stride(&order[j - 1], &order[j], b->strides) > 0; j--) {
            int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    int64_t covered = 0; /* largest offset reachable with the smaller strides */
    bool ordered = true;
    for (int i = 0; i < b->rank; i++) {
        int d = order[i];
        if (b->shape[d] == 1) continue;
        ordered = ordered && b->strides[d] > covered;
        covered += (b->shape[d] - 1) * b->strides[d];
    }
    if (ordered) return b->elems;
    if (span > ((int64_t)1 << 26)) return b->elems > span ? -3 : -2;
    size_t words = (size_t)(span + 63) / 64;
    uint64_t *set = calloc(words, sizeof *set);
    if (!set) return -1;
    set[0] = 1; /* offset 0 */
    int64_t count = 1;
    for (int d = 0; d < b->rank && count; d++) {
        /* set + {0, s, ..., (n-1)s}, doubling the multiples covered: m of them, then 2m... */
        for (int64_t m = 1; m < b->shape[d];) {
            int64_t step = m < b->shape[d] - m ? m : b->shape[d] - m;
            int64_t shift = step * b->strides[d]; /* < span */
            size_t ws = (size_t)(shift / 64);
            unsigned bs = (unsigned)(shift % 64);
            for (size_t w = words; w-- > ws;) {
                uint64_t v = set[w - ws] << bs;
                if (bs && w > ws) v |= set[w - ws - 1] >> (64 - bs);
                set[w] |= v;
            }
            m += step;
        }
        int64_t now = 0;
        for (size_t w = 0; w < words; w++) now += __builtin_popcountll(set[w]);
        count = now;
    }
    free(set);
    return count;
}

bool ir_check_decl(tilec_program *p, tilec_buffer *b, const ir_pos *where, ir_pos strides_pos) {
    tilec_ctx *ctx = p->ctx;
    ir_pos at = b->pos;
    if (b->rank < 1 || b->rank > TILEC_MAX_RANK) {
        ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col,
                    "'%s' has rank %d; a buffer has 1 to %d dimensions", b->name, b->rank,
                    TILEC_MAX_RANK);
        return false;
    }
    int64_t elems = 1;
    for (int d = 0; d < b->rank; d++) {
        ir_pos wd = where ? where[d] : at;
        if (b->shape[d] < 1) {
            ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, wd.line, wd.col,
                        "extent %lld of dimension %d of '%s' must be at least 1",
                        (long long)b->shape[d], d, b->name);
            return false;
        }
        if (__builtin_mul_overflow(elems, b->shape[d], &elems)) {
            ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, wd.line, wd.col,
                        "the shape of '%s' has more than 2^63-1 elements", b->name);
            return false;
        }
    }
    b->elems = elems;
    if (elems > TILEC_MAX_ELEMENTS) {
        ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col,
                    "'%s' has %lld elements; a buffer has at most 2^48", b->name, (long long)elems);
        return false;
    }
    if (!b->has_strides) { /* row-major */
        int64_t s = 1;
        for (int d = b->rank - 1; d >= 0; d--) { b->strides[d] = s; s *= b->shape[d]; }
        b->span = elems;
        return true;
    }
    int64_t span = 1;
    for (int d = 0; d < b->rank; d++) {
        int64_t reach;
        if (b->strides[d] < 1) {
            ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, strides_pos.line, strides_pos.col,
                        "stride %lld of dimension %d of '%s' must be at least 1",
                        (long long)b->strides[d], d, b->name);
            return false;
        }
        if (__builtin_mul_overflow(b->shape[d] - 1, b->strides[d], &reach) ||
            __builtin_add_overflow(span, reach, &span)) {
            ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, strides_pos.line, strides_pos.col,
                        "the strides of '%s' reach past 2^63-1 elements", b->name);
            return false;
        }
    }
    if (span > TILEC_MAX_ELEMENTS) {
        ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, strides_pos.line, strides_pos.col,
                    "the strides of '%s' reach %lld elements; a buffer spans at most 2^48", b->name, (long long)span);
        return false;
    }
    int64_t distinct = distinct_offsets(b, span);
    if (distinct == -3) {
        ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, strides_pos.line, strides_pos.col,
                    "the strides of '%s' make different indices reach the same element: its %lld indices reach at "
                    "most %lld elements",
                    b->name, (long long)elems, (long long)span);
        return false;
    }
    if (distinct < 0) {
        ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, strides_pos.line, strides_pos.col,
                    distinct == -1 ? "out of memory checking the strides of '%s'"
                                   : "the strides of '%s' are not ordered so that each is larger than the reach of the "
                                     "smaller ones, and the buffer spans more than 2^26 elements, past what tilec "
                                     "checks element by element; order them so (any GPU's shared memory is far smaller)",
                    b->name);
        return false;
    }
    if (distinct < elems) {
        ir_diag_add(ctx, &p->src, TILEC_SEV_ERROR, strides_pos.line, strides_pos.col,
                    "the strides of '%s' make different indices reach the same element: its %lld indices reach only "
                    "%lld distinct elements",
                    b->name, (long long)elems, (long long)distinct);
        return false;
    }
    b->span = span;
    return true;
}

/* ---- diagnostics about statements ----------------------------------------------------- */

void ir_stmt_diag(tilec_program *p, const tilec_kernel *k, const ir_stmt *st, tilec_severity sev,
                  ir_pos at, const char *fmt, ...) {
    ir_str msg = {0};
    va_list ap;
    va_start(ap, fmt);
    ir_str_vprintf(&msg, fmt, ap);
    va_end(ap);
    if (msg.oom) { ir_str_free(&msg); return; }
    if (at.line > 0 || !st) {
        ir_diag_add(p->ctx, &p->src, sev, at.line, at.col, "%s", msg.data);
    } else {
        ir_str what = {0};
        ir_print_stmt(&what, st);
        ir_diag_add(p->ctx, &p->src, sev, 0, 0, "%s '%s', statement %d (%s): %s",
                    k->is_func ? "func" : "kernel", k->name, st->index + 1,
                    what.data ? what.data : "?", msg.data);
        ir_str_free(&what);
    }
    ir_str_free(&msg);
}

bool ir_buffer_view(tilec_program *p, tilec_buffer *b, const int64_t *strides) {
    int64_t lo = 0, hi = 0; /* the lowest and highest offsets from element [0, ..., 0] */
    for (int d = 0; d < b->rank; d++) {
        int64_t reach;
        if (__builtin_mul_overflow(b->shape[d] - 1, strides[d], &reach) ||
            __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi) || hi - lo >= TILEC_MAX_ELEMENTS) {
            ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, 0, 0,
                        "the strides of '%s' reach more than 2^48 elements; tilec reads views of up to 2^48", b->name);
            return false;
        }
    }
    memcpy(b->strides, strides, (size_t)b->rank * sizeof *strides);
    b->has_strides = b->view = true;
    b->origin = -lo;
    b->span = hi - lo + 1;
    return true;
}
