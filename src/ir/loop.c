/*
 * loop.c — building and printing loop IR (see loop.h).
 *
 * Constructors never return NULL: on allocation failure they mark the kernel (k->oom)
 * and hand back a shared placeholder, so lowering code stays straight-line and the
 * caller checks k->oom once at the end.
 */
#include "loop.h"
#include "numeric.h"

#include <stdio.h>
#include <string.h>

static const char *const type_names[] = {"bool", "i32", "u32", "i64", "f16", "bf16", "f32", "f64", "f64x2", "i64x2"};
_Static_assert(sizeof type_names / sizeof type_names[0] == LP_TYPE_COUNT, "type names");

const char *lp_type_name(lp_type t) { return (unsigned)t < LP_TYPE_COUNT ? type_names[t] : "?"; }
bool lp_is_float(lp_type t) { return t >= LP_F16 && t <= LP_F64; }

lp_type lp_type_of(tilec_dtype d) {
    switch (d) {
    case TILEC_F16: return LP_F16;
    case TILEC_BF16: return LP_BF16;
    case TILEC_F32: return LP_F32;
    case TILEC_F64: return LP_F64;
    case TILEC_I32: return LP_I32;
    case TILEC_U32: return LP_U32;
    default: return LP_I64;
    }
}

lp_type lp_accum_type(tilec_dtype d) {
    lp_type t = lp_type_of(d);
    return t == LP_F16 || t == LP_BF16 ? LP_F32 : t;
}

/* ---- construction -------------------------------------------------------------------- */

static lp_expr placeholder_expr;
static lp_stmt placeholder_stmt;

static void *alloc(lp_kernel *k, size_t n) {
    void *p = ir_arena_alloc(&k->prog->arena, n);
    if (!p) k->oom = true;
    return p;
}

lp_kernel *lp_kernel_new(tilec_program *p, const tilec_kernel *tile, int warp_size) {
    lp_kernel *k = ir_arena_alloc(&p->arena, sizeof *k);
    if (!k) return NULL;
    k->prog = p;
    k->tile = tile;
    k->warp_size = warp_size;
    k->threads = tile->threads;
    k->grid = tile->grid;
    k->cluster = tile->cluster;
    for (int i = 0; i < tile->nparams; i++) lp_buf_for(k, tile->params[i]);
    return k;
}

static lp_buf *add_buf(lp_kernel *k, const char *name, tilec_space space, lp_type t, int64_t elems) {
    if (!ir_arena_grow(&k->prog->arena, (void **)&k->bufs, &k->cap_bufs, k->nbufs + 1, sizeof *k->bufs)) {
        k->oom = true;
        return NULL;
    }
    lp_buf *b = alloc(k, sizeof *b);
    if (!b) return NULL;
    b->name = name;
    b->space = space;
    b->type = t;
    b->elems = elems;
    b->param = -1;
    b->id = k->nbufs;
    k->bufs[k->nbufs++] = b;
    return b;
}

lp_buf *lp_buf_for(lp_kernel *k, const tilec_buffer *tb) {
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->tile == tb) return k->bufs[i];
    lp_buf *b = add_buf(k, tb->name, tb->space, lp_type_of(tb->dtype), tb->span);
    if (!b) return NULL;
    b->tile = tb;
    for (int i = 0; i < k->tile->nparams; i++)
        if (k->tile->params[i] == tb) b->param = i;
    return b;
}

lp_buf *lp_buf_scratch(lp_kernel *k, const char *name, lp_type t, int64_t elems) {
    return add_buf(k, name, TILEC_SPACE_SHARED, t, elems);
}

lp_buf *lp_buf_scratch_global(lp_kernel *k, const char *name, lp_type t, int64_t elems) {
    return add_buf(k, name, TILEC_SPACE_GLOBAL, t, elems);
}

int lp_reg_new(lp_kernel *k, lp_type t, const char *name) {
    if (!ir_arena_grow(&k->prog->arena, (void **)&k->regs, &k->cap_regs, k->nregs + 1, sizeof *k->regs)) {
        k->oom = true;
        return 0;
    }
    k->regs[k->nregs] = (lp_regdef){t, name};
    return k->nregs++;
}

static lp_expr *expr(lp_kernel *k, lp_expr_kind kind, lp_type t) {
    lp_expr *e = alloc(k, sizeof *e);
    if (!e) return &placeholder_expr;
    e->kind = kind;
    e->type = t;
    return e;
}

lp_expr *lp_int(lp_kernel *k, lp_type t, int64_t v) {
    lp_expr *e = expr(k, LX_CONST, t);
    if (e != &placeholder_expr) e->i = v;
    return e;
}

lp_expr *lp_float(lp_kernel *k, lp_type t, double v) {
    lp_expr *e = expr(k, LX_CONST, t);
    if (e != &placeholder_expr) e->f = num_round(t, v); /* the value the type holds: emitted and simulated alike */
    return e;
}

lp_expr *lp_reg(lp_kernel *k, int reg) {
    lp_expr *e = expr(k, LX_REG, k->nregs > reg ? k->regs[reg].type : LP_I32);
    if (e != &placeholder_expr) e->reg = reg;
    return e;
}

lp_expr *lp_special_expr(lp_kernel *k, lp_special s) {
    lp_expr *e = expr(k, LX_SPECIAL, LP_I32);
    if (e != &placeholder_expr) e->special = s;
    return e;
}

lp_expr *lp_unary(lp_kernel *k, lp_op op, lp_expr *a) {
    lp_expr *e = expr(k, LX_UNARY, op == LO_NOT ? LP_BOOL : a->type);
    if (e != &placeholder_expr) { e->op = op; e->a = a; }
    return e;
}

lp_expr *lp_binary(lp_kernel *k, lp_op op, lp_expr *a, lp_expr *b) {
    bool cmp = op >= LO_LT && op <= LO_OR;
    lp_expr *e = expr(k, LX_BINARY, cmp ? LP_BOOL : a->type);
    if (e != &placeholder_expr) { e->op = op; e->a = a; e->b = b; }
    return e;
}

lp_expr *lp_minmax(lp_kernel *k, lp_op op, tilec_nan nan, lp_expr *a, lp_expr *b) {
    lp_expr *e = lp_binary(k, op, a, b);
    if (e != &placeholder_expr) e->nan = nan;
    return e;
}

lp_expr *lp_wrapping(lp_kernel *k, lp_op op, lp_expr *a, lp_expr *b) {
    lp_expr *e = lp_binary(k, op, a, b);
    if (e != &placeholder_expr) e->wraps = true;
    return e;
}

lp_expr *lp_select(lp_kernel *k, lp_expr *c, lp_expr *a, lp_expr *b) {
    lp_expr *e = expr(k, LX_SELECT, a->type);
    if (e != &placeholder_expr) { e->a = c; e->b = a; e->c = b; }
    return e;
}

lp_expr *lp_fma(lp_kernel *k, lp_expr *a, lp_expr *b, lp_expr *c) {
    lp_expr *e = expr(k, LX_FMA, a->type);
    if (e != &placeholder_expr) { e->a = a; e->b = b; e->c = c; }
    return e;
}

lp_expr *lp_pair(lp_kernel *k, lp_expr *a, lp_expr *b) {
    lp_expr *e = expr(k, LX_PAIR, a->type == LP_I64 ? LP_I64X2 : LP_F64X2);
    if (e != &placeholder_expr) { e->a = a; e->b = b; }
    return e;
}

lp_expr *lp_part(lp_kernel *k, lp_expr *pair, int i) {
    lp_expr *e = expr(k, LX_PART, pair->type == LP_I64X2 ? LP_I64 : LP_F64);
    if (e != &placeholder_expr) { e->a = pair; e->i = i; }
    return e;
}

lp_expr *lp_pack16(lp_kernel *k, lp_type half, lp_expr *a, lp_expr *b) {
    lp_expr *e = expr(k, LX_PACK16, LP_U32);
    if (e != &placeholder_expr) { e->a = a; e->b = b; e->i = half; }
    return e;
}

lp_expr *lp_half(lp_kernel *k, lp_expr *packed, lp_type half, int i) {
    lp_expr *e = expr(k, LX_PART, half);
    if (e != &placeholder_expr) { e->a = packed; e->i = i; }
    return e;
}

lp_expr *lp_aligned(lp_kernel *k, const lp_buf *b, int bytes) {
    lp_expr *e = expr(k, LX_ALIGNED, LP_BOOL);
    if (e != &placeholder_expr) { e->buf = b; e->i = bytes; }
    return e;
}

lp_expr *lp_cast(lp_kernel *k, lp_type t, lp_expr *a) {
    if (a->type == t) return a;
    lp_expr *e = expr(k, LX_CAST, t);
    if (e != &placeholder_expr) e->a = a;
    return e;
}

lp_expr *lp_bits(lp_kernel *k, lp_type t, lp_expr *a) {
    lp_expr *e = expr(k, LX_BITS, t);
    if (e != &placeholder_expr) e->a = a;
    return e;
}

lp_expr *lp_load(lp_kernel *k, const lp_buf *b, lp_expr *index) {
    lp_expr *e = expr(k, LX_LOAD, b ? b->type : LP_F32);
    if (e != &placeholder_expr) { e->buf = b; e->a = index; }
    return e;
}

lp_expr *lp_load_rank(lp_kernel *k, const lp_buf *b, lp_expr *index, lp_expr *rank) {
    lp_expr *e = lp_load(k, b, index);
    if (e != &placeholder_expr) e->c = rank;
    return e;
}

static lp_stmt *stmt(lp_kernel *k, lp_block *into, lp_stmt_kind kind) {
    lp_stmt *st = alloc(k, sizeof *st);
    if (!st || !ir_arena_grow(&k->prog->arena, (void **)&into->items, &into->cap, into->n + 1,
                              sizeof *into->items)) {
        k->oom = true;
        memset(&placeholder_stmt, 0, sizeof placeholder_stmt);
        return &placeholder_stmt;
    }
    st->kind = kind;
    into->items[into->n++] = st;
    return st;
}

lp_stmt *lp_assign(lp_kernel *k, lp_block *into, int reg, lp_expr *a) {
    lp_stmt *st = stmt(k, into, LS_ASSIGN);
    st->reg = reg;
    st->a = a;
    return st;
}

lp_stmt *lp_store(lp_kernel *k, lp_block *into, const lp_buf *b, lp_expr *index, lp_expr *v) {
    lp_stmt *st = stmt(k, into, LS_STORE);
    st->buf = b;
    st->a = index;
    st->b = v;
    return st;
}

lp_stmt *lp_if(lp_kernel *k, lp_block *into, lp_expr *cond) {
    lp_stmt *st = stmt(k, into, LS_IF);
    st->a = cond;
    return st;
}

lp_stmt *lp_for(lp_kernel *k, lp_block *into, int reg, lp_expr *lo, lp_expr *hi, lp_expr *step) {
    lp_stmt *st = stmt(k, into, LS_FOR);
    st->reg = reg;
    st->a = lo;
    st->b = hi;
    st->step = step;
    return st;
}

lp_stmt *lp_shfl(lp_kernel *k, lp_block *into, int dst_reg, int src_reg, int lane_mask, int width) {
    lp_stmt *st = stmt(k, into, LS_SHFL);
    st->reg = dst_reg;
    st->src_reg = src_reg;
    st->lane_mask = lane_mask;
    st->width = width;
    return st;
}

lp_stmt *lp_barrier(lp_kernel *k, lp_block *into, tilec_scope scope) {
    lp_stmt *st = stmt(k, into, LS_BARRIER);
    st->scope = scope;
    return st;
}

lp_stmt *lp_op_marker(lp_kernel *k, lp_block *into, const ir_stmt *origin, const char *variant) {
    lp_stmt *st = stmt(k, into, LS_OP);
    st->origin = origin;
    st->variant = variant;
    return st;
}

lp_stmt *lp_vload(lp_kernel *k, lp_block *into, int first_reg, int vec, const lp_buf *b, lp_expr *index) {
    lp_stmt *st = stmt(k, into, LS_VLOAD);
    st->reg = first_reg;
    st->vec = vec;
    st->buf = b;
    st->a = index;
    return st;
}

lp_stmt *lp_vstore(lp_kernel *k, lp_block *into, const lp_buf *b, lp_expr *index, int first_reg, int vec) {
    lp_stmt *st = stmt(k, into, LS_VSTORE);
    st->src_reg = first_reg;
    st->vec = vec;
    st->buf = b;
    st->a = index;
    return st;
}

lp_stmt *lp_atomic_add(lp_kernel *k, lp_block *into, int old_reg, const lp_buf *b, lp_expr *index, lp_expr *v) {
    lp_stmt *st = stmt(k, into, LS_ATOMIC_ADD);
    st->reg = old_reg;
    st->buf = b;
    st->a = index;
    st->b = v;
    return st;
}

lp_stmt *lp_fence(lp_kernel *k, lp_block *into) { return stmt(k, into, LS_FENCE); }

/* ---- visiting -------------------------------------------------------------------------- */

static void visit(const lp_block *b, int depth, lp_visit_fn fn, void *arg) {
    for (int i = 0; i < b->n; i++) {
        const lp_stmt *st = b->items[i];
        fn(st, depth, arg);
        visit(&st->body, depth + 1, fn, arg);
        visit(&st->orelse, depth + 1, fn, arg);
    }
}

void lp_visit(const lp_block *b, lp_visit_fn fn, void *arg) { visit(b, 0, fn, arg); }

/* ---- printing ---------------------------------------------------------------------------- */

static const char *const op_text[] = {"+", "-", "*", "/", "%", "<", "<=", "==", "!=", "&&", "||",
                                      "max", "min", "&", "|", "^", "<<", ">>", "!", "-", "sqrt", "exp2_approx"};
_Static_assert(sizeof op_text / sizeof op_text[0] == LO_OP_COUNT, "op text");
static const char *const special_text[] = {"tid", "cta", "lane", "warp"};

const char *lp_name_sep(const char *name) {
    size_t len = strlen(name);
    return len && name[len - 1] >= '0' && name[len - 1] <= '9' ? "_" : "";
}

static void print_reg(ir_str *s, const lp_kernel *k, int reg) {
    ir_str_printf(s, "%s%s%d", k->regs[reg].name, lp_name_sep(k->regs[reg].name), reg);
}

/* open a sep b sep2 c close, the operands printed as expressions (b, c: NULL for fewer). */
static void operands(ir_str *s, const lp_kernel *k, const char *open, const lp_expr *a, const char *sep,
                     const lp_expr *b, const char *sep2, const lp_expr *c, const char *close) {
    ir_str_printf(s, "%s", open);
    lp_print_expr(s, k, a);
    if (b) ir_str_printf(s, "%s", sep), lp_print_expr(s, k, b);
    if (c) ir_str_printf(s, "%s", sep2), lp_print_expr(s, k, c);
    ir_str_printf(s, "%s", close);
}

void lp_print_expr(ir_str *s, const lp_kernel *k, const lp_expr *e) {
    char name[48];
    switch (e->kind) {
    case LX_CONST:
        if (lp_is_float(e->type)) {
            ir_print_value(s, (ir_value){.f = e->f, .dtype = TILEC_F64});
            if (e->type != LP_F64) ir_str_printf(s, "%s", lp_type_name(e->type));
        } else if (e->type == LP_BOOL) {
            ir_str_printf(s, e->i ? "true" : "false");
        } else {
            ir_str_printf(s, "%lld", (long long)e->i);
            if (e->type != LP_I32) ir_str_printf(s, "%s", lp_type_name(e->type));
        }
        return;
    case LX_REG: print_reg(s, k, e->reg); return;
    case LX_SPECIAL: ir_str_printf(s, "%s", special_text[e->special]); return;
    case LX_UNARY:
        ir_str_printf(s, "%s%s", op_text[e->op], e->op == LO_SQRT || e->op == LO_EXP2A ? "(" : "");
        lp_print_expr(s, k, e->a);
        ir_str_printf(s, "%s", e->op == LO_SQRT || e->op == LO_EXP2A ? ")" : "");
        return;
    case LX_BINARY:
        if (e->op == LO_MAX || e->op == LO_MIN) {
            bool num = lp_is_float(e->type) && e->nan == TILEC_NAN_IGNORE;
            snprintf(name, sizeof name, "%s%s(", op_text[e->op], num ? "num" : "");
            operands(s, k, name, e->a, ", ", e->b, NULL, NULL, ")");
            return;
        }
        snprintf(name, sizeof name, " %s ", op_text[e->op]);
        operands(s, k, "(", e->a, name, e->b, NULL, NULL, ")");
        return;
    case LX_SELECT: operands(s, k, "(", e->a, " ? ", e->b, " : ", e->c, ")"); return;
    case LX_FMA: operands(s, k, "fma(", e->a, ", ", e->b, ", ", e->c, ")"); return;
    case LX_PAIR: operands(s, k, "pair(", e->a, ", ", e->b, NULL, NULL, ")"); return;
    case LX_PACK16:
        snprintf(name, sizeof name, "pack_%sx2(", lp_type_name((lp_type)e->i));
        operands(s, k, name, e->a, ", ", e->b, NULL, NULL, ")");
        return;
    case LX_PART:
        lp_print_expr(s, k, e->a);
        ir_str_printf(s, ".%lld", (long long)e->i);
        return;
    case LX_CAST:
        ir_str_printf(s, "%s(", lp_type_name(e->type));
        lp_print_expr(s, k, e->a);
        ir_str_printf(s, ")");
        return;
    case LX_LOAD:
        ir_str_printf(s, "%s[", e->buf->name);
        lp_print_expr(s, k, e->a);
        ir_str_printf(s, "]");
        if (e->c) { /* distributed shared memory */
            ir_str_printf(s, "@cta(");
            lp_print_expr(s, k, e->c);
            ir_str_printf(s, ")");
        }
        return;
    case LX_BITS:
        ir_str_printf(s, "bits_%s(", lp_type_name(e->type));
        lp_print_expr(s, k, e->a);
        ir_str_printf(s, ")");
        return;
    case LX_ALIGNED:
        ir_str_printf(s, "aligned(%s, %lld)", e->buf->name, (long long)e->i);
        return;
    }
}

static void print_block(ir_str *s, const lp_kernel *k, const lp_block *b, int depth) {
    for (int i = 0; i < b->n; i++) {
        const lp_stmt *st = b->items[i];
        ir_str_printf(s, "%*s", 2 * depth + 2, "");
        switch (st->kind) {
        case LS_ASSIGN:
            print_reg(s, k, st->reg);
            ir_str_printf(s, " = ");
            lp_print_expr(s, k, st->a);
            break;
        case LS_STORE:
            ir_str_printf(s, "%s[", st->buf->name);
            lp_print_expr(s, k, st->a);
            ir_str_printf(s, "] = ");
            lp_print_expr(s, k, st->b);
            break;
        case LS_IF:
            ir_str_printf(s, "if ");
            lp_print_expr(s, k, st->a);
            ir_str_printf(s, " {\n");
            print_block(s, k, &st->body, depth + 1);
            if (st->orelse.n) {
                ir_str_printf(s, "%*s} else {\n", 2 * depth + 2, "");
                print_block(s, k, &st->orelse, depth + 1);
            }
            ir_str_printf(s, "%*s}", 2 * depth + 2, "");
            break;
        case LS_FOR:
            ir_str_printf(s, "for ");
            print_reg(s, k, st->reg);
            ir_str_printf(s, " in ");
            lp_print_expr(s, k, st->a);
            ir_str_printf(s, " .. ");
            lp_print_expr(s, k, st->b);
            if (st->step->kind != LX_CONST || st->step->i != 1) {
                ir_str_printf(s, " step ");
                lp_print_expr(s, k, st->step);
            }
            ir_str_printf(s, " {\n");
            print_block(s, k, &st->body, depth + 1);
            ir_str_printf(s, "%*s}", 2 * depth + 2, "");
            break;
        case LS_SHFL:
            print_reg(s, k, st->reg);
            ir_str_printf(s, " = shfl_xor(");
            print_reg(s, k, st->src_reg);
            ir_str_printf(s, ", %d, %d)", st->lane_mask, st->width);
            break;
        case LS_BARRIER: ir_str_printf(s, "barrier.%s", tilec_scope_name(st->scope)); break;
        case LS_VLOAD:
            ir_str_printf(s, "(");
            for (int v = 0; v < st->vec; v++) {
                if (v) ir_str_printf(s, ", ");
                print_reg(s, k, st->reg + v);
            }
            ir_str_printf(s, ") = %s[", st->buf->name);
            lp_print_expr(s, k, st->a);
            ir_str_printf(s, " .. +%d]", st->vec);
            break;
        case LS_VSTORE:
            ir_str_printf(s, "%s[", st->buf->name);
            lp_print_expr(s, k, st->a);
            ir_str_printf(s, " .. +%d] = (", st->vec);
            for (int v = 0; v < st->vec; v++) {
                if (v) ir_str_printf(s, ", ");
                print_reg(s, k, st->src_reg + v);
            }
            ir_str_printf(s, ")");
            break;
        case LS_ATOMIC_ADD:
            print_reg(s, k, st->reg);
            ir_str_printf(s, " = atomic_add(%s[", st->buf->name);
            lp_print_expr(s, k, st->a);
            ir_str_printf(s, "], ");
            lp_print_expr(s, k, st->b);
            ir_str_printf(s, ")");
            break;
        case LS_FENCE: ir_str_printf(s, "fence.global"); break;
        case LS_OP: {
            ir_str_printf(s, "# line %d: ", st->origin->pos.line);
            ir_print_stmt(s, st->origin);
            if (st->variant) ir_str_printf(s, "  [%s]", st->variant);
            break;
        }
        }
        ir_str_printf(s, "\n");
    }
}

void lp_print_kernel(ir_str *s, const lp_kernel *k) {
    ir_str_printf(s, "loop %s %s: threads=%d grid=%lld warp_size=%d\n",
                  k->tile->is_func ? "func" : "kernel", k->tile->name, k->threads,
                  (long long)k->grid, k->warp_size);
    for (int i = 0; i < k->nbufs; i++) {
        const lp_buf *b = k->bufs[i];
        ir_str_printf(s, "  %s %s: %s[%lld]%s\n", tilec_space_name(b->space), b->name,
                      lp_type_name(b->type), (long long)b->elems, b->tile ? "" : "  (scratch)");
    }
    print_block(s, k, &k->body, 0);
}
