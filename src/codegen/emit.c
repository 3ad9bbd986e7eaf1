/*
 * emit.c — prints loop IR as CUDA / HIP C++ (see codegen.h).
 *
 * Layout of a generated file: a header comment, the prelude (fixed-width types, 16-bit
 * float conversions, the format's max / min, 16-byte vector types; guarded, its names
 * versioned by CG_PRELUDE_ABI, so many files combine in one translation unit), then one
 * `extern "C" __global__` function per kernel and one `extern "C" __device__` function
 * per func. Inside a function: shared and local arrays, the thread's position, every
 * register a statement sets or reads declared once, then the statements, each tile
 * statement introduced by a comment with its line. Generated names start with tl_; user
 * names keep their spelling unless they could clash (cg_name).
 */
#include "codegen.h"

#include "../ir/numeric.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names (a user's name: cg_name, names.c) -------------------------------------------- */

/* A register's or scratch buffer's C name: tl_ NAME ID (lp_name_sep between them). */
static void buf_name(ir_str *s, const lp_buf *b) {
    if (b->tile) cg_name(s, b->name);
    else ir_str_printf(s, "tl_%s%s%d", b->name, lp_name_sep(b->name), b->id);
}

static void reg_name(ir_str *s, const lp_kernel *k, int r) {
    ir_str_printf(s, "tl_%s%s%d", k->regs[r].name, lp_name_sep(k->regs[r].name), r);
}

/* A kernel being printed. A bf16 register that only one vector load sets (an element of
 * its 16, 8 or 4 bytes) is widened from the load's 32-bit word: `w << 16` for the
 * element in the low half, `w & 0xffff0000` for the high one, an instruction each, where
 * taking the element out of the word first costs another (a byte permute and then a
 * shift). word[r] is that load's first register (the word's name: tl_w<first>_<r - first
 * over 2>), -1 for any other register; use[r] says how r is read: USE_WIDE converted (to
 * f32, or through it to another type: from the word), USE_BITS otherwise (stored,
 * shuffled, selected: the 16-bit register is kept). A register read only widened is
 * neither declared nor set, nor is a word neither of whose halves is read widened. The
 * load reads memory as its own 16-bit vector type, into a union that also holds the
 * words: never through another type (see the VLOAD case of stmt). */
enum { USE_BITS = 1, USE_WIDE = 2 };
typedef struct fn {
    const lp_kernel *k;
    int *word;
    unsigned char *use;
    int *sets; /* per register: statements that set it */
} fn;

static bool widened_reg(const fn *f, const lp_expr *a) {
    return f->word && a->kind == LX_REG && f->word[a->reg] >= 0;
}
/* the word holding register r's element, as its name */
static void word_name(ir_str *s, const fn *f, int r) {
    ir_str_printf(s, "tl_w%d_%d", f->word[r], (r - f->word[r]) / 2);
}
/* whether word j of the load whose first register is first has a half read widened */
static bool word_read(const fn *f, int first, int j) {
    return (f->use[first + 2 * j] | f->use[first + 2 * j + 1]) & USE_WIDE;
}

/* ---- types and constants ------------------------------------------------------------------ */

static const char *c_type(lp_type t) {
    switch (t) {
    case LP_BOOL: return "bool";
    case LP_I32: return "int";
    case LP_U32: return "unsigned";
    case LP_I64: return "long long";
    case LP_F16: case LP_BF16: return CG_P "u16";
    case LP_F32: return "float";
    case LP_F64X2: return CG_P "f64x2";
    case LP_I64X2: return CG_P "i64x2";
    default: return "double";
    }
}

static const char *type_tag(lp_type t) { return lp_type_name(t); }

/* A float literal, the same in every locale; ±inf and NaN as bit patterns. */
static void float_literal(ir_str *s, lp_type t, double v) {
    if (t == LP_F16 || t == LP_BF16) { /* stored as bits */
        ir_str_printf(s, "((" CG_P "u16)0x%04x)", t == LP_F16 ? num_to_f16(v) : num_to_bf16(v));
        return;
    }
    bool f32 = t == LP_F32;
    if (f32) v = num_round(LP_F32, v);
    if (isnan(v)) { ir_str_printf(s, f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)"); return; }
    if (isinf(v)) {
        if (f32) ir_str_printf(s, "__int_as_float((int)0x%08xu)", v > 0 ? 0x7f800000u : 0xff800000u);
        else ir_str_printf(s, "__longlong_as_double((long long)0x%016llxull)", v > 0 ? 0x7ff0000000000000ull : 0xfff0000000000000ull);
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && !dp[1]) {
        char *c = strchr(buf, dp[0]);
        if (c) *c = '.';
    }
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    ir_str_printf(s, "%s%s", buf, f32 ? "f" : "");
}

static void int_literal(ir_str *s, lp_type t, int64_t v) {
    switch (t) {
    case LP_BOOL: ir_str_printf(s, v ? "true" : "false"); return;
    case LP_U32: ir_str_printf(s, "%lluu", (unsigned long long)(uint32_t)v); return;
    case LP_I64:
        if (v == INT64_MIN) ir_str_printf(s, "(-9223372036854775807LL - 1)");
        else ir_str_printf(s, "%lldLL", (long long)v);
        return;
    default:
        if (v == INT32_MIN) ir_str_printf(s, "(-2147483647 - 1)");
        else ir_str_printf(s, "%lld", (long long)v);
        return;
    }
}

/* ---- expressions ---------------------------------------------------------------------------- */

static const char *const special_names[] = {"tl_tid", "tl_cta", "tl_lane", "tl_warp"};
static const char *const binary_text[LO_OP_COUNT] = {
    [LO_ADD] = "+", [LO_SUB] = "-", [LO_MUL] = "*", [LO_DIV] = "/", [LO_REM] = "%", [LO_LT] = "<", [LO_LE] = "<=",
    [LO_EQ] = "==", [LO_NE] = "!=", [LO_AND] = "&&", [LO_OR] = "||", [LO_BAND] = "&", [LO_BOR] = "|", [LO_BXOR] = "^",
    [LO_SHL] = "<<", [LO_SHR] = ">>"};
/* the binary ops printed as helpers of the prelude (tl_<name>_<type>): max and min of the
 * format, and float products and quotients, correctly rounded and never fused */
static const char *const helper_name[LO_OP_COUNT] = {[LO_MAX] = "max", [LO_MIN] = "min", [LO_MUL] = "mul", [LO_DIV] = "div"};

static void expr(ir_str *s, const fn *f, const lp_expr *e);

static void cast(ir_str *s, const fn *f, lp_type to, const lp_expr *a) {
    lp_type from = a->type;
    if (a->kind == LX_CONST && (lp_is_float(to) || lp_is_float(from))) { /* fold: one exact rounding */
        double v = lp_is_float(from) ? a->f : (double)a->i;
        if (lp_is_float(to)) float_literal(s, to, v);
        else int_literal(s, to, v >= -0x1p63 && v < 0x1p63 ? (int64_t)v : 0); /* as the simulator's cast */
        return;
    }
    if (from == LP_F16 || from == LP_BF16) { /* 16-bit floats widen through f32 */
        if (to != LP_F32) ir_str_printf(s, "((%s)", c_type(to));
        if (from == LP_BF16 && widened_reg(f, a)) { /* from the vector load's word (struct fn) */
            ir_str_printf(s, "__uint_as_float(");
            word_name(s, f, a->reg);
            ir_str_printf(s, "%s)", (a->reg - f->word[a->reg]) % 2 ? " & 0xffff0000u" : " << 16");
        } else {
            ir_str_printf(s, "%s(", from == LP_F16 ? CG_P "f16_to_f32" : CG_P "bf16_to_f32");
            expr(s, f, a);
            ir_str_printf(s, ")");
        }
        ir_str_printf(s, "%s", to != LP_F32 ? ")" : "");
        return;
    }
    if (to == LP_F16 || to == LP_BF16) { /* lowerings narrow only from f32 (or fold constants) */
        ir_str_printf(s, "%s(%s", to == LP_F16 ? CG_P "f32_to_f16" : CG_P "f32_to_bf16", from != LP_F32 ? "(float)(" : "");
        expr(s, f, a);
        ir_str_printf(s, "%s)", from != LP_F32 ? ")" : "");
        return;
    }
    ir_str_printf(s, "((%s)(", c_type(to));
    expr(s, f, a);
    ir_str_printf(s, "))");
}

/* open a sep b sep2 c close, the operands printed as expressions (b, c: NULL for fewer). */
static void operands(ir_str *s, const fn *f, const char *open, const lp_expr *a, const char *sep,
                     const lp_expr *b, const char *sep2, const lp_expr *c, const char *close) {
    ir_str_printf(s, "%s", open);
    expr(s, f, a);
    if (b) ir_str_printf(s, "%s", sep), expr(s, f, b);
    if (c) ir_str_printf(s, "%s", sep2), expr(s, f, c);
    ir_str_printf(s, "%s", close);
}

/* Whether e prints as "(a OP b)" with C's own operator: not a pair's addition, a max or
 * min, a rounded float product or quotient (helpers), nor a wrapping integer operation
 * (casts through unsigned). */
static bool plain_binary(const lp_expr *e) {
    if (e->kind != LX_BINARY || e->type == LP_F64X2) return false;
    bool rn = lp_is_float(e->type) && (e->op == LO_MUL || e->op == LO_DIV);
    if (e->op == LO_MAX || e->op == LO_MIN || rn) return false;
    return !((e->wraps || e->op == LO_SHL) && (e->type == LP_I32 || e->type == LP_I64));
}

/* The condition of an if: a plain binary operation without its outer parentheses, so the
 * statement reads `if (a == b)`, not `if ((a == b))`, which clang (hipcc) warns about
 * (-Wparentheses-equality). */
static void condition(ir_str *s, const fn *f, const lp_expr *e) {
    if (!plain_binary(e)) {
        expr(s, f, e);
        return;
    }
    expr(s, f, e->a);
    ir_str_printf(s, " %s ", binary_text[e->op]);
    expr(s, f, e->b);
}

static void expr(ir_str *s, const fn *f, const lp_expr *e) {
    const lp_kernel *k = f->k;
    char name[48];
    switch (e->kind) {
    case LX_CONST:
        if (lp_is_float(e->type)) float_literal(s, e->type, e->f);
        else int_literal(s, e->type, e->i);
        return;
    case LX_REG: reg_name(s, k, e->reg); return;
    case LX_SPECIAL: ir_str_printf(s, "%s", special_names[e->special]); return;
    case LX_UNARY:
        if (e->op == LO_SQRT) ir_str_printf(s, CG_P "sqrt_%s(", type_tag(e->type));
        else if (e->op == LO_EXP2A) ir_str_printf(s, CG_P "exp2_approx_f32(");
        else ir_str_printf(s, e->op == LO_NOT ? "(!" : "(-");
        expr(s, f, e->a);
        ir_str_printf(s, ")");
        return;
    case LX_BINARY: {
        if (e->type == LP_F64X2) { /* the one operation on pairs: an addition, part by part */
            operands(s, f, CG_P "add_f64x2(", e->a, ", ", e->b, NULL, NULL, ")");
            return;
        }
        /* float products and quotients through the target's correctly rounded helpers: never
         * fused into an add (x * x + acc stays two roundings), whatever the compiler's flags */
        bool rn = lp_is_float(e->type) && (e->op == LO_MUL || e->op == LO_DIV);
        if (e->op == LO_MAX || e->op == LO_MIN || rn) {
            bool num = lp_is_float(e->type) && e->nan == TILEC_NAN_IGNORE && !rn;
            snprintf(name, sizeof name, CG_P "%s%s_%s(", helper_name[e->op], num ? "num" : "", type_tag(e->type));
            operands(s, f, name, e->a, ", ", e->b, NULL, NULL, ")");
            return;
        }
        if ((e->wraps || e->op == LO_SHL) && (e->type == LP_I32 || e->type == LP_I64)) { /* modulo 2^bits, defined in C++ */
            const char *u = e->type == LP_I32 ? "unsigned" : "unsigned long long";
            ir_str_printf(s, "((%s)((%s)", c_type(e->type), u);
            expr(s, f, e->a);
            ir_str_printf(s, " %s (%s)", binary_text[e->op], u);
            expr(s, f, e->b);
            ir_str_printf(s, "))");
            return;
        }
        snprintf(name, sizeof name, " %s ", binary_text[e->op]);
        operands(s, f, "(", e->a, name, e->b, NULL, NULL, ")");
        return;
    }
    case LX_SELECT:
        /* a NaN stored as a 16-bit float's quiet one (lower_util's quieted): both arms as
           arguments, so the conversion (an asm statement on CUDA, which the compiler does
           not speculate) runs unconditionally and the choice is a select, not a branch */
        if (e->b->kind == LX_CONST && e->c->kind == LX_CAST && (e->c->type == LP_F16 || e->c->type == LP_BF16) &&
            (e->c->a->kind == LX_REG || e->c->a->kind == LX_CONST)) {
            operands(s, f, CG_P "select_u16(", e->a, ", ", e->b, ", ", e->c, ")");
            return;
        }
        operands(s, f, "(", e->a, " ? ", e->b, " : ", e->c, ")");
        return;
    case LX_FMA:
        snprintf(name, sizeof name, CG_P "fma_%s(", type_tag(e->type));
        operands(s, f, name, e->a, ", ", e->b, ", ", e->c, ")");
        return;
    case LX_PAIR: /* an i64x2 as an aggregate of the prelude's vector type (no helper: the prelude stays) */
        operands(s, f, e->type == LP_I64X2 ? CG_P "i64x2{{" : CG_P "pair(", e->a, ", ", e->b, NULL, NULL,
                 e->type == LP_I64X2 ? "}}" : ")");
        return;
    case LX_PACK16:
        operands(s, f, (lp_type)e->i == LP_F16 ? CG_P "pack_f16x2(" : CG_P "pack_bf16x2(", e->a, ", ", e->b, NULL, NULL, ")");
        return;
    case LX_PART:
        if (e->a->type == LP_U32) { /* a pack16's half */
            operands(s, f, "((" CG_P "u16)(", e->a, NULL, NULL, NULL, NULL, e->i ? " >> 16))" : "))");
            return;
        }
        operands(s, f, "(", e->a, NULL, NULL, NULL, NULL, ")");
        ir_str_printf(s, ".e[%d]", (int)e->i);
        return;
    case LX_CAST: cast(s, f, e->type, e->a); return;
    case LX_LOAD: /* with c, distributed shared memory: the element in the copy of the cluster's CTA of rank c */
        if (e->c) ir_str_printf(s, CG_P "peer(&");
        buf_name(s, e->buf);
        ir_str_printf(s, "[");
        expr(s, f, e->a);
        ir_str_printf(s, "]");
        if (e->c) {
            ir_str_printf(s, ", (unsigned)(");
            expr(s, f, e->c);
            ir_str_printf(s, "))");
        }
        return;
    case LX_BITS: /* CUDA's and HIP's intrinsics alike */
        ir_str_printf(s, "%s(", e->type == LP_I32   ? "__float_as_int"
                                : e->type == LP_F32 ? "__int_as_float"
                                : e->type == LP_I64 ? "__double_as_longlong"
                                                    : "__longlong_as_double");
        expr(s, f, e->a);
        ir_str_printf(s, ")");
        return;
    case LX_ALIGNED: /* a uniform test of a pointer the caller passed */
        ir_str_printf(s, "((unsigned long long)(const void *)");
        buf_name(s, e->buf);
        ir_str_printf(s, " %% %lldull == 0)", (long long)e->i);
        return;
    }
}

/* ---- statements ------------------------------------------------------------------------------ */

/* The 16-byte vector type of element type t. */
/* The vector type of vec elements of type t (16, 8 or 4 bytes; the prelude declares them). */
static const char *vec_type(lp_type t, int vec) {
    static const char *const u16[] = {CG_P "u16x2", CG_P "u16x4", CG_P "u16x8"}, *const w32[][2] = {
        {CG_P "f32x2", CG_P "f32x4"}, {CG_P "i32x2", CG_P "i32x4"}, {CG_P "u32x2", CG_P "u32x4"}};
    switch (t) {
    case LP_F16: case LP_BF16: return u16[vec == 2 ? 0 : vec == 4 ? 1 : 2];
    case LP_F32: return w32[0][vec == 4];
    case LP_I32: return w32[1][vec == 4];
    case LP_U32: return w32[2][vec == 4];
    case LP_F64: return CG_P "f64x2";
    default: return CG_P "i64x2";
    }
}

static void block(ir_str *s, const cg_target *t, const fn *f, const lp_block *b, int depth);

static void stmt(ir_str *s, const cg_target *t, const fn *f, const lp_stmt *st, int depth) {
    const lp_kernel *k = f->k;
    int pad = 2 * depth + 2;
    ir_str_printf(s, "%*s", pad, "");
    char dst[96], src[96];
    switch (st->kind) {
    case LS_ASSIGN:
        reg_name(s, k, st->reg);
        ir_str_printf(s, " = ");
        expr(s, f, st->a);
        ir_str_printf(s, ";\n");
        return;
    case LS_STORE:
        buf_name(s, st->buf);
        ir_str_printf(s, "[");
        expr(s, f, st->a);
        ir_str_printf(s, "] = ");
        expr(s, f, st->b);
        ir_str_printf(s, ";\n");
        return;
    case LS_IF:
        ir_str_printf(s, "if (");
        condition(s, f, st->a);
        ir_str_printf(s, ") {\n");
        block(s, t, f, &st->body, depth + 1);
        if (st->orelse.n) {
            ir_str_printf(s, "%*s} else {\n", pad, "");
            block(s, t, f, &st->orelse, depth + 1);
        }
        ir_str_printf(s, "%*s}\n", pad, "");
        return;
    case LS_FOR:
        ir_str_printf(s, "for (");
        /* a loop that goes on from where its register is starts `for (;`: `i = i` is clang's
         * -Wself-assign */
        if (st->a->kind != LX_REG || st->a->reg != st->reg) {
            reg_name(s, k, st->reg);
            ir_str_printf(s, " = ");
            expr(s, f, st->a);
        }
        ir_str_printf(s, "; ");
        reg_name(s, k, st->reg);
        ir_str_printf(s, " < ");
        expr(s, f, st->b);
        ir_str_printf(s, "; ");
        reg_name(s, k, st->reg);
        ir_str_printf(s, " += ");
        expr(s, f, st->step);
        ir_str_printf(s, ") {\n");
        block(s, t, f, &st->body, depth + 1);
        ir_str_printf(s, "%*s}\n", pad, "");
        return;
    case LS_SHFL:
        for (int part = 0, parts = k->regs[st->reg].type == LP_F64X2 || k->regs[st->reg].type == LP_I64X2 ? 2 : 1;
             part < parts; part++) { /* a pair as its two f64s or i64s */
            const char *sub = parts == 1 ? "" : part ? ".e[1]" : ".e[0]";
            if (part) ir_str_printf(s, "%*s", pad, "");
            const char *dn = k->regs[st->reg].name, *sn = k->regs[st->src_reg].name;
            snprintf(dst, sizeof dst, "tl_%s%s%d%s", dn, lp_name_sep(dn), st->reg, sub);
            snprintf(src, sizeof src, "tl_%s%s%d%s", sn, lp_name_sep(sn), st->src_reg, sub);
            t->shfl(s, dst, src, st->lane_mask, st->width);
        }
        return;
    case LS_BARRIER:
        t->barrier(s, st->scope, k->threads);
        return;
    case LS_VLOAD: case LS_VSTORE: {
        bool load = st->kind == LS_VLOAD;
        int first = load ? st->reg : st->src_reg;
        const char *vt = vec_type(st->buf->type, st->vec);
        /* a bf16 load whose elements are widened from its 32-bit words (struct fn): loaded as
           the 16-bit vector it is, into a union that also holds the words, never read from
           memory through another type (C++'s aliasing rules forbid it, and clang took an
           unsigned read of 16-bit stores for memory nothing had written and read it from
           AMD's scalar cache) */
        bool words = load && f->word && f->word[first] >= 0;
        /* a 16-bit store writes its 32-bit words, each (unsigned)lo | (unsigned)hi << 16, into
           the union and stores the 16-bit vector: halves of one paired conversion (LX_PACK16)
           then fold back into its word, where the vector's 16-bit elements took a shift and a
           PRMT a pair */
        bool pack_store = !load && (st->buf->type == LP_F16 || st->buf->type == LP_BF16);
        const char *elem = words ? "tl_v.h.e" : "tl_v.e";
        if (words || pack_store)
            ir_str_printf(s, "{\n%*s  union { %s h; %s; } tl_v;\n%*s%s", pad, "", vt,
                          st->vec == 8 ? CG_P "u32x4 w" : st->vec == 4 ? CG_P "u32x2 w" : "unsigned w[1]", load ? pad : 0, "",
                          load ? "  tl_v.h" : "");
        else
            ir_str_printf(s, "{\n%*s  %s tl_v", pad, "", vt);
        if (load) {
            ir_str_printf(s, " = *(const %s *)&", vt);
            buf_name(s, st->buf);
            ir_str_printf(s, "[");
            expr(s, f, st->a);
            ir_str_printf(s, "];\n");
        } else if (!pack_store) {
            ir_str_printf(s, ";\n");
        }
        for (int v = 0; pack_store && v < st->vec; v += 2) {
            ir_str_printf(s, st->vec == 2 ? "%*s  tl_v.w[0] = (unsigned)" : "%*s  tl_v.w.e[%d] = (unsigned)", pad, "", v / 2);
            reg_name(s, k, first + v);
            ir_str_printf(s, " | (unsigned)");
            reg_name(s, k, first + v + 1);
            ir_str_printf(s, " << 16;\n");
        }
        for (int v = 0; !pack_store && v < st->vec; v++) {
            if (words && v % 2 == 0 && word_read(f, first, v / 2)) {
                ir_str_printf(s, "%*s  ", pad, "");
                word_name(s, f, first + v);
                ir_str_printf(s, st->vec == 2 ? " = tl_v.w[0];\n" : " = tl_v.w.e[%d];\n", v / 2);
            }
            if (words && !(f->use[first + v] & USE_BITS)) continue; /* read only widened: no register */
            ir_str_printf(s, "%*s  ", pad, "");
            if (load) { reg_name(s, k, first + v); ir_str_printf(s, " = %s[%d];\n", elem, v); }
            else { ir_str_printf(s, "tl_v.e[%d] = ", v); reg_name(s, k, first + v); ir_str_printf(s, ";\n"); }
        }
        if (!load) {
            ir_str_printf(s, "%*s  *(%s *)&", pad, "", vt);
            buf_name(s, st->buf);
            ir_str_printf(s, "[");
            expr(s, f, st->a);
            ir_str_printf(s, pack_store ? "] = tl_v.h;\n" : "] = tl_v;\n");
        }
        ir_str_printf(s, "%*s}\n", pad, "");
        return;
    }
    case LS_ATOMIC_ADD:
        reg_name(s, k, st->reg);
        ir_str_printf(s, " = atomicAdd(&");
        buf_name(s, st->buf);
        ir_str_printf(s, "[");
        expr(s, f, st->a);
        ir_str_printf(s, "], ");
        expr(s, f, st->b);
        ir_str_printf(s, ");\n");
        return;
    case LS_FENCE: ir_str_printf(s, "__threadfence();\n"); return;
    case LS_OP:
        if (st->origin->pos.line) ir_str_printf(s, "// line %d: ", st->origin->pos.line);
        else ir_str_printf(s, "// statement %d: ", st->origin->index + 1);
        ir_print_stmt(s, st->origin);
        if (st->variant) ir_str_printf(s, "  [%s]", st->variant);
        ir_str_printf(s, "\n");
        return;
    }
}

static void block(ir_str *s, const cg_target *t, const fn *f, const lp_block *b, int depth) {
    for (int i = 0; i < b->n; i++) stmt(s, t, f, b->items[i], depth);
}

/* ---- functions ---------------------------------------------------------------------------------- */

typedef struct writes_arg {
    const lp_buf *buf;
    bool written;
} writes_arg;

static void find_write(const lp_stmt *st, int depth, void *arg) {
    (void)depth;
    writes_arg *w = arg;
    if ((st->kind == LS_STORE || st->kind == LS_VSTORE || st->kind == LS_ATOMIC_ADD) && st->buf == w->buf) w->written = true;
}

static bool written(const lp_kernel *k, const lp_buf *b) {
    writes_arg w = {b, false};
    lp_visit(&k->body, find_write, &w);
    return w.written;
}

/* The alignment of a shared allocation: 16 bytes, or a swizzled tile's atom (the bytes its
 * pattern repeats over: TMA and wgmma place a tile's swizzle by its address). */
static size_t shared_align(const lp_buf *b) {
    size_t atom = b->tile ? (size_t)ir_swizzle_atom(b->tile) : 0;
    return atom > 16 ? atom : 16;
}

/* Where each shared allocation starts in the kernel's shared memory, in order (each
 * aligned, each rounded up to 16 bytes), and the end: the bytes a CTA needs. */
static size_t shared_place(const lp_kernel *k, int upto) {
    size_t total = 0;
    for (int i = 0; i < k->nbufs && i < upto; i++) {
        const lp_buf *b = k->bufs[i];
        if (b->space != TILEC_SPACE_SHARED || b->param >= 0) continue;
        size_t a = shared_align(b);
        total = (total + a - 1) / a * a;
        total += ((size_t)b->elems * num_size(b->type) + 15) & ~(size_t)15;
    }
    return total;
}

size_t cg_shared_bytes(const lp_kernel *k) { return shared_place(k, k->nbufs); }

/* ---- bf16 registers widened from their load's words (struct fn) ------------------------ */

static void note_reads(fn *f, const lp_expr *e) {
    if (!e) return;
    if (e->kind == LX_CAST && e->a->kind == LX_REG && e->a->type == LP_BF16) {
        f->use[e->a->reg] |= USE_WIDE;
        return;
    }
    if (e->kind == LX_REG) f->use[e->reg] |= USE_BITS;
    note_reads(f, e->a);
    note_reads(f, e->b);
    note_reads(f, e->c);
}

static void note_stmt(const lp_stmt *st, int depth, void *arg) {
    (void)depth;
    fn *f = arg;
    note_reads(f, st->a);
    note_reads(f, st->b);
    note_reads(f, st->step);
    switch (st->kind) {
    case LS_ASSIGN: case LS_FOR: case LS_ATOMIC_ADD: f->sets[st->reg]++; break;
    case LS_SHFL: f->sets[st->reg]++; f->use[st->src_reg] |= USE_BITS; break;
    case LS_VLOAD: for (int v = 0; v < st->vec; v++) f->sets[st->reg + v]++; break;
    case LS_VSTORE: for (int v = 0; v < st->vec; v++) f->use[st->src_reg + v] |= USE_BITS; break;
    default: break;
    }
}

static void mark_words(const lp_stmt *st, int depth, void *arg) {
    (void)depth;
    fn *f = arg;
    if (st->kind != LS_VLOAD || st->buf->type != LP_BF16 || st->vec % 2) return;
    bool wide = false; /* a load only moved (a copy's) stays a vector of 16-bit elements */
    for (int v = 0; v < st->vec; v++) {
        if (f->sets[st->reg + v] != 1) return;
        wide |= f->use[st->reg + v] & USE_WIDE;
    }
    for (int v = 0; v < st->vec && wide; v++) f->word[st->reg + v] = st->reg;
}

/* Fills f->word, f->use and f->sets; with no memory for them, all three stay NULL
 * (registers are then all declared, and widened one by one) and s is marked out of
 * memory. */
static void find_words(ir_str *s, fn *f) {
    const lp_kernel *k = f->k;
    size_t n = k->nregs ? (size_t)k->nregs : 1;
    f->word = malloc(n * sizeof(int));
    f->use = calloc(n, 1);
    f->sets = calloc(n, sizeof(int));
    if (!f->word || !f->use || !f->sets) {
        s->oom = true;
        free(f->word), free(f->use), free(f->sets);
        f->word = NULL, f->use = NULL, f->sets = NULL;
        return;
    }
    for (int r = 0; r < k->nregs; r++) f->word[r] = -1;
    lp_visit(&k->body, note_stmt, f);
    lp_visit(&k->body, mark_words, f);
}

static void kernel(ir_str *s, const cg_target *t, const lp_kernel *k) {
    const tilec_kernel *tk = k->tile;
    size_t shared = cg_shared_bytes(k);
    bool dynamic = !tk->is_func && shared > CG_STATIC_SHARED_LIMIT;
    ir_str_printf(s, "\n// %s %s: threads=%d", tk->is_func ? "func" : "kernel", tk->name, k->threads);
    if (!tk->is_func) ir_str_printf(s, " grid=%lld", (long long)k->grid);
    ir_str_printf(s, " warp_size=%d shared_bytes=%zu%s\n", k->warp_size, shared, dynamic ? " (dynamic)" : "");
    if (tk->is_func)
        ir_str_printf(s, "// Call it from every one of %d threads of a 1-D block (threadIdx.x); its shared\n"
                         "// operands are pointers to your __shared__ arrays.\n", k->threads);
    ir_str_printf(s, "extern \"C\" %s ", tk->is_func ? "__device__ void" : "__global__ void");
    if (k->cluster) ir_str_printf(s, "__cluster_dims__(%d, 1, 1) ", k->cluster);
    if (!tk->is_func && k->min_ctas > 0 && t == &cg_cuda) /* HIP's second bound means another thing */
        ir_str_printf(s, "__launch_bounds__(%d, %d) ", k->threads, k->min_ctas);
    else if (!tk->is_func)
        ir_str_printf(s, "__launch_bounds__(%d) ", k->threads);
    cg_name(s, tk->name);
    ir_str_printf(s, "(");
    for (int i = 0; i < tk->nparams; i++) {
        const lp_buf *b = NULL;
        for (int j = 0; j < k->nbufs; j++)
            if (k->bufs[j]->param == i) b = k->bufs[j];
        if (i) ir_str_printf(s, ", ");
        bool ro = b && !written(k, b);
        ir_str_printf(s, "%s%s *%s", ro ? "const " : "", c_type(lp_type_of(tk->params[i]->dtype)),
                      tk->params[i]->space == TILEC_SPACE_GLOBAL && !tk->is_func ? "__restrict__ " : "");
        cg_name(s, tk->params[i]->name);
    }
    for (int i = 0; i < k->nbufs; i++) /* global scratch, after the parameters */
        if (k->bufs[i]->space == TILEC_SPACE_GLOBAL && k->bufs[i]->param < 0) {
            ir_str_printf(s, "%s%s *__restrict__ ", tk->nparams ? ", " : "", c_type(k->bufs[i]->type));
            buf_name(s, k->bufs[i]);
        }
    ir_str_printf(s, ") {\n");
    size_t most = 16; /* the largest alignment a shared allocation asks for */
    for (int i = 0; i < k->nbufs; i++)
        if (k->bufs[i]->space == TILEC_SPACE_SHARED && k->bufs[i]->param < 0 && shared_align(k->bufs[i]) > most)
            most = shared_align(k->bufs[i]);
    if (dynamic) ir_str_printf(s, "  extern __shared__ __attribute__((aligned(%zu))) unsigned char tl_smem[];\n", most);
    for (int i = 0; i < k->nbufs; i++) {
        const lp_buf *b = k->bufs[i];
        if (b->param >= 0 || b->space == TILEC_SPACE_GLOBAL) continue;
        if (b->space == TILEC_SPACE_SHARED && dynamic) {
            size_t a = shared_align(b), offset = (shared_place(k, i) + a - 1) / a * a;
            ir_str_printf(s, "  %s *const ", c_type(b->type));
            buf_name(s, b);
            ir_str_printf(s, " = (%s *)(tl_smem + %zu);\n", c_type(b->type), offset);
            continue;
        }
        if (b->space == TILEC_SPACE_SHARED) ir_str_printf(s, "  __shared__ __attribute__((aligned(%zu))) %s ", shared_align(b), c_type(b->type));
        else ir_str_printf(s, "  %s ", c_type(b->type));
        buf_name(s, b);
        ir_str_printf(s, "[%lld];\n", (long long)b->elems);
    }
    ir_str_printf(s, "  const int tl_tid = (int)threadIdx.x;\n  const int tl_cta = (int)blockIdx.x;\n"
                     "  const int tl_lane = tl_tid %% %d;\n  const int tl_warp = tl_tid / %d;\n",
                  k->warp_size, k->warp_size);
    t->kernel_setup(s, k);
    fn f = {.k = k};
    find_words(s, &f);
    for (int r = 0; r < k->nregs; r++) {
        if (f.word && f.word[r] >= 0 && !(f.use[r] & USE_BITS)) continue; /* read only widened, from its word */
        if (f.sets && !f.sets[r] && !f.use[r]) continue; /* a register nothing sets or reads: a declaration would
                                                            be a compiler's "declared but never referenced" */
        ir_str_printf(s, "  %s ", c_type(k->regs[r].type));
        reg_name(s, k, r);
        ir_str_printf(s, ";\n");
    }
    for (int r = 0; f.word && r < k->nregs; r++) /* a word each even element of a load, when read */
        if (f.word[r] >= 0 && (r - f.word[r]) % 2 == 0 && word_read(&f, f.word[r], (r - f.word[r]) / 2)) {
            ir_str_printf(s, "  unsigned ");
            word_name(s, &f, r);
            ir_str_printf(s, ";\n");
        }
    ir_str_printf(s, "  (void)tl_cta; (void)tl_lane; (void)tl_warp;\n");
    block(s, t, &f, &k->body, 0);
    ir_str_printf(s, "}\n");
    free(f.word);
    free(f.use);
    free(f.sets);
}

/* The helpers every target shares; the target's prelude has defined tl_f16_to_f32 and
 * tl_f32_to_f16 before. Every helper is __attribute__((unused)): a kernel calls only some,
 * and nvcc (#177-D, "declared but never referenced") and clang (-Wunused-function) would
 * warn about the rest in the user's own builds (tests/codegen_warnings.sh). */
static const char common_prelude[] =
    "static __device__ __forceinline__ __attribute__((unused)) float tl_bf16_to_f32(tl_u16 h) { return __uint_as_float((unsigned)h << 16); }\n"
    "#ifndef TL_BF16_CVT  /* the target's prelude may convert in hardware */\n"
    "static __device__ __forceinline__ __attribute__((unused)) tl_u16 tl_f32_to_bf16(float x) {  /* round to nearest even */\n"
    "  unsigned u = __float_as_uint(x);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (tl_u16)((u >> 16) | 0x40u);  /* NaN stays NaN */\n"
    "  return (tl_u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "#endif\n"
    "/* c ? a : b with both evaluated: a store's NaN test beside its conversion */\n"
    "static __device__ __forceinline__ __attribute__((unused)) tl_u16 tl_select_u16(bool c, tl_u16 a, tl_u16 b) { return c ? a : b; }\n"
    "/* two stores' conversions at once: a in the low half, b in the high, a NaN as the quiet NaN */\n"
    "#ifndef TL_PACK_BF16X2  /* the target's prelude may pair them in hardware */\n"
    "static __device__ __forceinline__ __attribute__((unused)) unsigned tl_pack_bf16x2(float a, float b) {\n"
    "  return (unsigned)tl_select_u16(a != a, 0x7fc0, tl_f32_to_bf16(a)) | (unsigned)tl_select_u16(b != b, 0x7fc0, tl_f32_to_bf16(b)) << 16;\n"
    "}\n"
    "#endif\n"
    "static __device__ __forceinline__ __attribute__((unused)) unsigned tl_pack_f16x2(float a, float b) {\n"
    "  return (unsigned)tl_select_u16(a != a, 0x7e00, tl_f32_to_f16(a)) | (unsigned)tl_select_u16(b != b, 0x7e00, tl_f32_to_f16(b)) << 16;\n"
    "}\n"
    "/* max and min of the format: propagate (a NaN wins) or num (a NaN loses to a number);\n"
    "   +0 is above -0: of two equal values max takes the AND of their bits and min the OR\n"
    "   (+0 and -0 differ only in the sign bit). Written out so no library's NaN rule\n"
    "   decides, and as selects, not branches, so a loop of them stays straight-line code\n"
    "   (CUDA from sm_80 on has f32 max and min with these rules in hardware). */\n"
    "#define TL_MINMAX(T, tag, band, bor)                                                        \\\n"
    "  static __device__ __forceinline__ __attribute__((unused)) T tl_max_##tag(T a, T b) { \\\n"
    "    T r = a > b ? a : b; r = a == b ? band(a, b) : r; r = b != b ? b : r; return a != a ? a : r; } \\\n"
    "  static __device__ __forceinline__ __attribute__((unused)) T tl_maxnum_##tag(T a, T b) { \\\n"
    "    T r = a > b ? a : b; r = a == b ? band(a, b) : r; r = b != b ? a : r; return a != a ? b : r; } \\\n"
    "  static __device__ __forceinline__ __attribute__((unused)) T tl_min_##tag(T a, T b) { \\\n"
    "    T r = a < b ? a : b; r = a == b ? bor(a, b) : r; r = b != b ? b : r; return a != a ? a : r; } \\\n"
    "  static __device__ __forceinline__ __attribute__((unused)) T tl_minnum_##tag(T a, T b) { \\\n"
    "    T r = a < b ? a : b; r = a == b ? bor(a, b) : r; r = b != b ? a : r; return a != a ? b : r; }\n"
    "#define TL_AND_F32(a, b) __uint_as_float(__float_as_uint(a) & __float_as_uint(b))\n"
    "#define TL_OR_F32(a, b) __uint_as_float(__float_as_uint(a) | __float_as_uint(b))\n"
    "#define TL_AND_F64(a, b) __longlong_as_double(__double_as_longlong(a) & __double_as_longlong(b))\n"
    "#define TL_OR_F64(a, b) __longlong_as_double(__double_as_longlong(a) | __double_as_longlong(b))\n"
    "#ifndef TL_F32_MINMAX  /* the target's prelude may have f32 max and min in hardware */\n"
    "TL_MINMAX(float, f32, TL_AND_F32, TL_OR_F32)\n"
    "#endif\n"
    "TL_MINMAX(double, f64, TL_AND_F64, TL_OR_F64)\n"
    "#define TL_MINMAX_INT(T, tag)                                                               \\\n"
    "  static __device__ __forceinline__ __attribute__((unused)) T tl_max_##tag(T a, T b) { return a > b ? a : b; } \\\n"
    "  static __device__ __forceinline__ __attribute__((unused)) T tl_min_##tag(T a, T b) { return a < b ? a : b; }\n"
    "TL_MINMAX_INT(int, i32)\n"
    "TL_MINMAX_INT(unsigned, u32)\n"
    "TL_MINMAX_INT(long long, i64)\n"
    "/* 16-, 8- and 4-byte vectors for aligned loads and copies */\n"
    "typedef struct __attribute__((aligned(16))) { float e[4]; } tl_f32x4;\n"
    "typedef struct __attribute__((aligned(8))) { float e[2]; } tl_f32x2;\n"
    "typedef struct __attribute__((aligned(8))) { int e[2]; } tl_i32x2;\n"
    "typedef struct __attribute__((aligned(8))) { unsigned e[2]; } tl_u32x2;\n"
    "typedef struct __attribute__((aligned(8))) { tl_u16 e[4]; } tl_u16x4;\n"
    "typedef struct __attribute__((aligned(4))) { tl_u16 e[2]; } tl_u16x2;\n"
    "typedef struct __attribute__((aligned(16))) { double e[2]; } tl_f64x2;\n"
    "typedef struct __attribute__((aligned(16))) { int e[4]; } tl_i32x4;\n"
    "typedef struct __attribute__((aligned(16))) { unsigned e[4]; } tl_u32x4;\n"
    "typedef struct __attribute__((aligned(16))) { long long e[2]; } tl_i64x2;\n"
    "typedef struct __attribute__((aligned(16))) { tl_u16 e[8]; } tl_u16x8;\n"
    "/* a pair of f64s (var's two sums), added part by part */\n"
    "static __device__ __forceinline__ __attribute__((unused)) tl_f64x2 tl_pair(double a, double b) { tl_f64x2 r; r.e[0] = a; r.e[1] = b; return r; }\n"
    "static __device__ __forceinline__ __attribute__((unused)) tl_f64x2 tl_add_f64x2(tl_f64x2 a, tl_f64x2 b) {\n"
    "  return tl_pair(a.e[0] + b.e[0], a.e[1] + b.e[1]);\n}\n";

static const cg_target *const targets[TILEC_BACKEND_COUNT] = {[TILEC_BACKEND_CUDA] = &cg_cuda, [TILEC_BACKEND_HIP] = &cg_hip};

const cg_target *cg_target_for(tilec_backend b) { return (unsigned)b < TILEC_BACKEND_COUNT ? targets[b] : NULL; }

static bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* Appends the prelude text to s with its names versioned: each identifier that starts with
 * tl_ becomes CG_P + the rest, and each that starts with TL_ "TL_P<ABI>_" + the rest. The
 * prelude is written with the plain prefixes, for its reader; what the kernels call is
 * spelt with CG_P (emit.c's expressions and types). */
static void put_versioned(ir_str *s, const char *text, size_t n) {
    size_t from = 0, i = 0;
    while (i + 3 <= n) {
        bool lower = strncmp(text + i, "tl_", 3) == 0, upper = strncmp(text + i, "TL_", 3) == 0;
        if ((lower || upper) && (i == 0 || !ident_char(text[i - 1]))) {
            ir_str_put(s, text + from, i - from);
            ir_str_printf(s, "%s", lower ? CG_P : "TL_P" CG_PRELUDE_ABI "_");
            from = i += 3;
        } else {
            i++;
        }
    }
    ir_str_put(s, text + from, n - from);
}

void cg_prelude(ir_str *s, const cg_target *t) {
    ir_str pre = {0};
    ir_str_printf(&pre, "#ifndef TL_PRELUDE  /* one prelude of this ABI per translation unit */\n"
                        "#define TL_PRELUDE\n"
                        "typedef unsigned short tl_u16;  /* f16 and bf16 are stored as their bits */\n");
    t->prelude(&pre);
    ir_str_printf(&pre, "%s#endif  /* TL_PRELUDE */\n", common_prelude);
    if (pre.oom) s->oom = true;
    else put_versioned(s, pre.data, pre.len);
    ir_str_free(&pre);
}

/* A helper only some files need, beside the prelude under a guard of its own (TL_<GUARD>,
 * versioned as the prelude's names are): a file of this ABI without it stays as it was, and
 * files with it share a translation unit. */
static void beside_prelude(ir_str *s, const char *guard, const char *what, const char *decl, const char *body) {
    ir_str pre = {0};
    ir_str_printf(&pre, "#ifndef TL_%s  /* %s */\n#define TL_%s\n%s { %s }\n#endif\n", guard, what, guard, decl, body);
    if (pre.oom) s->oom = true;
    else put_versioned(s, pre.data, pre.len);
    ir_str_free(&pre);
}

void cg_emit_program(ir_str *s, const cg_target *t, const tilec_program *p, lp_kernel *const *kernels) {
    ir_str_printf(s, "// Generated by tilec %s for %s. Do not edit: change the .tile program instead.\n"
                     "// Self-contained: no include directives. Kernels are extern \"C\". Any number of\n"
                     "// emitted files may be included in one translation unit: the prelude below is\n"
                     "// guarded, and its names (" CG_P "*, TL_P" CG_PRELUDE_ABI "_*) carry its ABI version.\n\n",
                  TILEC_VERSION_STRING, t->name);
    cg_prelude(s, t);
    bool approx = false, cluster = false;
    for (int i = 0; i < p->nkernels; i++) {
        approx |= kernels[i] && p->kernels[i]->math == TILEC_MATH_APPROX;
        cluster |= kernels[i] && kernels[i]->cluster;
    }
    if (approx)
        beside_prelude(s, "EXP2_APPROX", "a kernel's math=approx: the hardware's 2^x, within 1-2 ulp",
                       "static __device__ __forceinline__ __attribute__((unused)) float tl_exp2_approx_f32(float x)",
                       t->exp2_approx);
    if (cluster && t->peer_load)
        beside_prelude(s, "PEER", "a kernel of thread-block clusters: another CTA's shared memory",
                       "template <class T> static __device__ __forceinline__ __attribute__((unused)) T tl_peer(const T *p, "
                       "unsigned rank)", t->peer_load);
    for (int i = 0; i < p->nkernels; i++)
        if (kernels[i]) kernel(s, t, kernels[i]);
}
