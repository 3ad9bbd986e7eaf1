/*
 * build.c — the public builder: tile IR made through the C API instead of text.
 *
 * Each call validates its own arguments (NULLs, enum ranges, names, shapes) and returns
 * TILEC_ERR_INVALID_ARG with a diagnostic; rules that relate statements to each other
 * are left to tilec_verify, exactly as for parsed text. Built statements carry no source
 * position, so their diagnostics name the kernel and the statement number instead.
 */
#include "numeric.h"

#include <string.h>

/* Records why an argument is bad; returns TILEC_ERR_INVALID_ARG for `return BAD(...)`. */
static tilec_status BAD(tilec_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tilec_status BAD(tilec_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_diag_vadd(ctx, NULL, TILEC_SEV_ERROR, 0, 0, fmt, ap);
    va_end(ap);
    return TILEC_ERR_INVALID_ARG;
}

tilec_status tilec_program_new(tilec_ctx *ctx, tilec_program **out) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!out) return BAD(ctx, "tilec_program_new: out is NULL; pass where the program goes");
    *out = ir_program_new(ctx, "<api>", NULL, 0);
    return *out ? TILEC_OK : TILEC_ERR_NOMEM;
}

tilec_status tilec_parse(tilec_ctx *ctx, const char *file, const char *text, size_t len,
                         tilec_program **out) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!out) return BAD(ctx, "tilec_parse: out is NULL; pass where the program goes");
    *out = NULL;
    if (!text && len) return BAD(ctx, "tilec_parse: text is NULL with a length of %zu byte%s", len, len == 1 ? "" : "s");
    if (len > TILEC_MAX_SOURCE) {
        *out = NULL;
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s: %zu bytes of .tile text; tilec reads at most %u MiB",
                    file ? file : "<input>", len, TILEC_MAX_SOURCE >> 20);
        return TILEC_ERR_PARSE;
    }
    return ir_parse(ctx, file, text, len, out);
}

static bool name_taken(const tilec_kernel *k, const char *name) {
    return ir_find_buffer(k, name, strlen(name), k->nstmts) != NULL;
}

tilec_status tilec_kernel_new(tilec_program *prog, const char *name, bool is_func, int threads,
                              int64_t grid, tilec_kernel **out) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    tilec_ctx *ctx = prog->ctx;
    ir_begin(ctx);
    if (!out) return BAD(ctx, "tilec_kernel_new: out is NULL; pass where the kernel goes");
    *out = NULL;
    if (!name || !ir_name_ok(name, strlen(name)))
        return BAD(ctx, "kernel name '%.80s' is not a name ([A-Za-z_][A-Za-z0-9_]*, at most %d "
                        "characters)", name ? name : "(null)", TILEC_MAX_NAME);
    for (int i = 0; i < prog->nkernels; i++)
        if (strcmp(prog->kernels[i]->name, name) == 0)
            return BAD(ctx, "duplicate name '%s': the program already has it", name);
    if (threads < 1 || threads > TILEC_MAX_THREADS)
        return BAD(ctx, "threads %d is out of range (1 to %d)", threads, TILEC_MAX_THREADS);
    if (is_func ? grid != 1 : (grid < 1 || grid > INT32_MAX))
        return BAD(ctx, "grid %lld is out of range (%s)", (long long)grid,
                   is_func ? "a func has no grid: pass 1" : "1 to 2147483647");
    if (prog->nkernels >= TILEC_MAX_KERNELS)
        return BAD(ctx, "the program has %d kernels and funcs already, the most a program has", TILEC_MAX_KERNELS);
    tilec_kernel *k = ir_kernel_add(prog, name, strlen(name));
    if (!k) return TILEC_ERR_NOMEM;
    k->is_func = is_func;
    k->threads = threads;
    k->grid = grid;
    *out = k;
    return TILEC_OK;
}

tilec_status tilec_kernel_set_math(tilec_kernel *k, tilec_math math) {
    if (!k) return TILEC_ERR_INVALID_ARG;
    ir_begin(k->prog->ctx);
    if ((unsigned)math >= TILEC_MATH_COUNT)
        return BAD(k->prog->ctx, "math %d is not a tilec_math (TILEC_MATH_EXACT or TILEC_MATH_APPROX)", (int)math);
    k->math = math;
    return TILEC_OK;
}

tilec_status tilec_kernel_set_cluster(tilec_kernel *k, int n) {
    if (!k) return TILEC_ERR_INVALID_ARG;
    ir_begin(k->prog->ctx);
    if (k->is_func && n != 0)
        return BAD(k->prog->ctx, "a func has no cluster; the kernel that calls it declares one (pass 0)");
    if (n < 0 || n > IR_MAX_CLUSTER)
        return BAD(k->prog->ctx, "cluster %d is out of range (1 to %d CTAs, or 0 for none)", n, IR_MAX_CLUSTER);
    k->cluster = n;
    return TILEC_OK;
}

/* A buffer from arguments shared by params and allocs; NULL with *st set on failure. */
static tilec_buffer *new_buffer(tilec_kernel *k, const char *name, tilec_dtype dtype, int rank,
                                const int64_t *shape, const int64_t *strides, tilec_space space,
                                tilec_status *st) {
    tilec_program *p = k->prog;
    tilec_ctx *ctx = p->ctx;
    *st = TILEC_ERR_INVALID_ARG;
    if (!name || !ir_name_ok(name, strlen(name))) {
        BAD(ctx, "buffer name '%.80s' is not a name ([A-Za-z_][A-Za-z0-9_]*, at most %d "
                 "characters)", name ? name : "(null)", TILEC_MAX_NAME);
        return NULL;
    }
    if (name_taken(k, name)) { BAD(ctx, "duplicate name '%s' in kernel '%s'", name, k->name); return NULL; }
    if ((unsigned)dtype >= TILEC_DTYPE_COUNT) { BAD(ctx, "dtype %d is not a tilec_dtype", (int)dtype); return NULL; }
    if ((unsigned)space >= TILEC_SPACE_COUNT) { BAD(ctx, "space %d is not a tilec_space", (int)space); return NULL; }
    if (rank < 1 || rank > TILEC_MAX_RANK || !shape) {
        BAD(ctx, "'%s' needs a shape of 1 to %d extents", name, TILEC_MAX_RANK);
        return NULL;
    }
    tilec_buffer *b = ir_arena_alloc(&p->arena, sizeof *b);
    if (!b || !(b->name = ir_arena_strndup(&p->arena, name, strlen(name)))) {
        *st = TILEC_ERR_NOMEM;
        return NULL;
    }
    b->dtype = dtype;
    b->space = space;
    b->rank = rank;
    b->kernel = k;
    memcpy(b->shape, shape, (size_t)rank * sizeof *shape);
    if (strides) {
        memcpy(b->strides, strides, (size_t)rank * sizeof *strides);
        b->has_strides = true;
    }
    if (!ir_check_decl(p, b, NULL, b->pos)) return NULL;
    *st = TILEC_OK;
    return b;
}

tilec_status tilec_kernel_param(tilec_kernel *k, const char *name, tilec_dtype dtype, int rank,
                                const int64_t *shape, tilec_space space, tilec_buffer **out) {
    if (!k) return TILEC_ERR_INVALID_ARG;
    ir_begin(k->prog->ctx);
    if (!out) return BAD(k->prog->ctx, "tilec_kernel_param: out is NULL; pass where the buffer goes");
    tilec_status st;
    tilec_buffer *b = new_buffer(k, name, dtype, rank, shape, NULL, space, &st);
    if (!b) return st;
    if (!ir_param_add(k, b)) return TILEC_ERR_NOMEM;
    *out = b;
    return TILEC_OK;
}

tilec_status tilec_kernel_alloc(tilec_kernel *k, const char *name, tilec_space space,
                                tilec_dtype dtype, int rank, const int64_t *shape,
                                const int64_t *strides, tilec_buffer **out) {
    if (!k) return TILEC_ERR_INVALID_ARG;
    tilec_ctx *ctx = k->prog->ctx;
    ir_begin(ctx);
    if (!out) return BAD(ctx, "tilec_kernel_alloc: out is NULL; pass where the buffer goes");
    if (space != TILEC_SPACE_SHARED && space != TILEC_SPACE_LOCAL)
        return BAD(ctx, "'%s': only shared and local buffers are allocated; global buffers are "
                        "kernel parameters", name ? name : "(null)");
    if (k->nstmts >= TILEC_MAX_STMTS)
        return BAD(ctx, "'%s' has %d statements already, the most a kernel has", k->name, TILEC_MAX_STMTS);
    tilec_status st;
    tilec_buffer *b = new_buffer(k, name, dtype, rank, shape, strides, space, &st);
    if (!b) return st;
    ir_stmt *s = ir_stmt_add(k, IR_ALLOC);
    if (!s) return TILEC_ERR_NOMEM;
    s->alloc = b;
    *out = b;
    return TILEC_OK;
}

tilec_status tilec_buffer_set_layout(tilec_buffer *b, const tilec_layout *layout) {
    if (!b) return TILEC_ERR_INVALID_ARG;
    tilec_program *p = b->kernel->prog;
    ir_begin(p->ctx);
    tilec_layout old = b->layout;
    memset(&b->layout, 0, sizeof b->layout);
    if (layout && layout->kind == TILEC_LAYOUT_LINEAR) b->layout = *layout;
    else if (layout) b->layout.kind = layout->kind; /* a preset: only its kind is read */
    if ((unsigned)b->layout.nreg > TILEC_LAYOUT_MAX_BITS || (unsigned)b->layout.nlane > TILEC_LAYOUT_MAX_BITS ||
        (unsigned)b->layout.nwarp > TILEC_LAYOUT_MAX_BITS ||
        b->layout.nreg + b->layout.nlane + b->layout.nwarp > TILEC_LAYOUT_MAX_BITS) {
        b->layout = old;
        return BAD(p->ctx, "tilec_buffer_set_layout: '%s': %d register, %d lane and %d warp bits; a layout has at "
                           "most %d bits in all", b->name, layout->nreg, layout->nlane, layout->nwarp,
                   TILEC_LAYOUT_MAX_BITS);
    }
    if (!ir_check_layout(p, b, b->pos)) {
        b->layout = old;
        return TILEC_ERR_VERIFY;
    }
    return TILEC_OK;
}

tilec_status tilec_buffer_set_swizzle(tilec_buffer *b, const tilec_swizzle *swizzle) {
    if (!b) return TILEC_ERR_INVALID_ARG;
    tilec_program *p = b->kernel->prog;
    ir_begin(p->ctx);
    tilec_swizzle old = b->swizzle;
    memset(&b->swizzle, 0, sizeof b->swizzle);
    if (swizzle && swizzle->kind == TILEC_SWIZZLE_XOR) b->swizzle = *swizzle;
    else if (swizzle) b->swizzle.kind = swizzle->kind; /* a preset: only its kind is read */
    if (!ir_check_swizzle(p, b, b->pos)) {
        b->swizzle = old;
        return TILEC_ERR_VERIFY;
    }
    return TILEC_OK;
}

tilec_region tilec_region_whole(const tilec_buffer *b) {
    tilec_region r;
    memset(&r, 0, sizeof r);
    r.buffer = b;
    return r;
}

tilec_reduce_attrs tilec_reduce_attrs_default(void) {
    tilec_reduce_attrs a;
    memset(&a, 0, sizeof a);
    a.naxes = 1;
    a.axes[0] = -1;
    a.nan = TILEC_NAN_PROPAGATE;
    return a;
}

static tilec_status check_exec(tilec_kernel *k, tilec_exec e) {
    if ((unsigned)e.scope >= TILEC_SCOPE_COUNT)
        return BAD(k->prog->ctx, "scope %d is not a tilec_scope", (int)e.scope);
    if (e.instance < -1 || e.instance >= TILEC_MAX_THREADS)
        return BAD(k->prog->ctx, "instance %d is out of range (-1 for every instance, or 0 to %d)",
                   e.instance, TILEC_MAX_THREADS - 1);
    return TILEC_OK;
}

static tilec_status to_region(tilec_kernel *k, const tilec_region *in, ir_region *out, const char *what) {
    tilec_ctx *ctx = k->prog->ctx;
    if (!in || !in->buffer) return BAD(ctx, "%s region has no buffer", what);
    if (in->buffer->kernel != k)
        return BAD(ctx, "%s buffer '%s' belongs to another kernel", what, in->buffer->name);
    if (in->nindex < 0 || in->nindex > in->buffer->rank)
        return BAD(ctx, "%s region has %d indices but '%s' has %d dimensions", what, in->nindex,
                   in->buffer->name, in->buffer->rank);
    memset(out, 0, sizeof *out);
    out->buf = (tilec_buffer *)in->buffer;
    out->nindex = in->nindex;
    out->brackets = in->nindex > 0;
    for (int d = 0; d < in->nindex; d++) {
        const tilec_index *ix = &in->index[d];
        if ((unsigned)ix->kind > TILEC_INDEX_RANK)
            return BAD(ctx, "index %d of the %s region has kind %d", d, what, (int)ix->kind);
        if (ix->kind == TILEC_INDEX_ID && (unsigned)ix->id >= TILEC_SCOPE_COUNT)
            return BAD(ctx, "index %d of the %s region names id %d", d, what, (int)ix->id);
        out->index[d] = (ir_index){ix->kind, ix->start, ix->stop, ix->kind == TILEC_INDEX_AT || ix->has_start,
                                   ix->has_stop, ix->kind == TILEC_INDEX_RANK ? TILEC_SCOPE_CTA : ix->id, {0, 0}};
    }
    return TILEC_OK;
}

/* Adds a statement of `kind` after checking exec and regions. */
static tilec_status add_stmt(tilec_kernel *k, ir_stmt_kind kind, tilec_exec exec,
                             const tilec_region *dst, const tilec_region *src, ir_stmt **out) {
    if (!k) return TILEC_ERR_INVALID_ARG;
    ir_begin(k->prog->ctx);
    if (k->nstmts >= TILEC_MAX_STMTS)
        return BAD(k->prog->ctx, "'%s' has %d statements already, the most a kernel has", k->name, TILEC_MAX_STMTS);
    tilec_status st = check_exec(k, exec);
    ir_region d = {0}, s = {0};
    if (st == TILEC_OK && kind != IR_SYNC) st = to_region(k, dst, &d, "destination");
    if (st == TILEC_OK && src) st = to_region(k, src, &s, "source");
    if (st != TILEC_OK) return st;
    ir_stmt *stmt = ir_stmt_add(k, kind);
    if (!stmt) return TILEC_ERR_NOMEM;
    stmt->exec = exec;
    stmt->dst = d;
    stmt->src = s;
    *out = stmt;
    return TILEC_OK;
}

tilec_status tilec_kernel_copy(tilec_kernel *k, tilec_exec exec, const tilec_region *dst,
                               const tilec_region *src) {
    ir_stmt *st;
    if (k && !src) { ir_begin(k->prog->ctx); return BAD(k->prog->ctx, "copy needs a source region"); }
    return add_stmt(k, IR_COPY, exec, dst, src, &st);
}

tilec_status tilec_kernel_fill(tilec_kernel *k, tilec_exec exec, const tilec_region *dst, double value) {
    ir_stmt *st;
    tilec_status s = add_stmt(k, IR_FILL, exec, dst, NULL, &st);
    if (s == TILEC_OK) {
        st->fill = (ir_value){.f = value};
        num_fill_typed(&st->fill, st->dst.buf->dtype, NULL, 0);
    }
    return s;
}

tilec_status tilec_kernel_fill_int(tilec_kernel *k, tilec_exec exec, const tilec_region *dst, int64_t value) {
    ir_stmt *st;
    tilec_status s = add_stmt(k, IR_FILL, exec, dst, NULL, &st);
    if (s == TILEC_OK) {
        st->fill = (ir_value){.is_int = true, .i = value};
        num_fill_typed(&st->fill, st->dst.buf->dtype, NULL, 0);
    }
    return s;
}

tilec_status tilec_kernel_sync(tilec_kernel *k, tilec_exec exec) {
    ir_stmt *st;
    return add_stmt(k, IR_SYNC, exec, NULL, NULL, &st);
}

tilec_status tilec_kernel_reduce(tilec_kernel *k, tilec_exec exec, tilec_op op,
                                 const tilec_region *dst, const tilec_region *src,
                                 const tilec_reduce_attrs *attrs) {
    if (!k) return TILEC_ERR_INVALID_ARG;
    tilec_ctx *ctx = k->prog->ctx;
    ir_begin(ctx);
    tilec_reduce_attrs a = attrs ? *attrs : tilec_reduce_attrs_default();
    if ((unsigned)op >= TILEC_OP_COUNT) return BAD(ctx, "op %d is not a tilec_op", (int)op);
    if (!src) return BAD(ctx, "%s needs a source region", tilec_op_name(op));
    if (a.naxes < 1 || a.naxes > TILEC_MAX_RANK)
        return BAD(ctx, "%s needs 1 to %d axes, not %d", tilec_op_name(op), TILEC_MAX_RANK, a.naxes);
    if ((unsigned)a.nan >= TILEC_NAN_COUNT) return BAD(ctx, "nan policy %d is not a tilec_nan", (int)a.nan);
    if (a.variant && !ir_name_ok(a.variant, strlen(a.variant)))
        return BAD(ctx, "variant '%.80s' is not a name", a.variant);
    for (int i = 0; i < a.naxes; i++)
        if (a.axes[i] < -TILEC_MAX_RANK || a.axes[i] >= TILEC_MAX_RANK)
            return BAD(ctx, "axis %d is out of range for any region", a.axes[i]);
    const char *second = ir_op(op)->second;
    if (second && !a.dst2)
        return BAD(ctx, "%s has two results: give attrs.dst2, the region of its %s", tilec_op_name(op), second);
    if (!second && a.dst2)
        return BAD(ctx, "%s has one result: attrs.dst2 must be NULL", tilec_op_name(op));
    ir_region d2 = {0};
    tilec_status s = a.dst2 ? to_region(k, a.dst2, &d2, "second destination") : TILEC_OK;
    ir_stmt *st;
    if (s == TILEC_OK) s = add_stmt(k, IR_REDUCE, exec, dst, src, &st);
    if (s != TILEC_OK) return s;
    st->dst2 = d2;
    st->op = op;
    st->naxes = a.naxes;
    memcpy(st->axes, a.axes, sizeof st->axes);
    st->accum = a.accum;
    st->nan = a.nan;
    st->correction = a.correction ? *a.correction : 1;
    st->correction_given = a.correction != NULL;
    if (a.variant && !(st->variant = ir_arena_strndup(&k->prog->arena, a.variant, strlen(a.variant))))
        return TILEC_ERR_NOMEM;
    return TILEC_OK;
}

/* Forgets the positions of a built expression: they are columns of its text, not of a
 * file, so later diagnostics name the statement instead (as for every built statement). */
static void clear_positions(ir_expr *e) {
    e->pos = (ir_pos){0, 0};
    e->region.pos = (ir_pos){0, 0};
    for (int d = 0; d < e->region.nindex; d++) e->region.index[d].pos = (ir_pos){0, 0};
    for (int i = 0; i < ir_expr_nargs(e); i++) clear_positions(e->args[i]);
}

tilec_status tilec_kernel_map(tilec_kernel *k, tilec_exec exec, const tilec_region *dst, const char *expr) {
    if (!k) return TILEC_ERR_INVALID_ARG;
    tilec_ctx *ctx = k->prog->ctx;
    ir_begin(ctx);
    if (!expr) return BAD(ctx, "map needs an expression: its text, as a .tile file writes it (\"exp(S - m)\")");
    if (k->nstmts >= TILEC_MAX_STMTS)
        return BAD(ctx, "'%s' has %d statements already, the most a kernel has", k->name, TILEC_MAX_STMTS);
    size_t len = strlen(expr);
    if (len > TILEC_MAX_SOURCE) return BAD(ctx, "map expression of %zu bytes; tilec reads at most 16 MiB", len);
    ir_stmt st = {.kind = IR_MAP, .index = k->nstmts, .exec = exec};
    tilec_status s = check_exec(k, exec);
    if (s == TILEC_OK) s = to_region(k, dst, &st.dst, "destination");
    if (s == TILEC_OK) s = ir_parse_expr(k->prog, k, expr, k->nstmts, &st.expr);
    if (s != TILEC_OK) return s;
    ir_source src = {"expression", expr, len};
    s = ir_check_map_expr(k->prog, k, &st, &src);
    if (s != TILEC_OK) return s;
    clear_positions(st.expr);
    ir_stmt *added = ir_stmt_add(k, IR_MAP);
    if (!added) return TILEC_ERR_NOMEM;
    *added = st;
    return TILEC_OK;
}
