/*
 * ir.h — the internal header of src/ir: the context and its diagnostics, the arena, and
 * the tile IR (buffers, regions, statements, kernels, programs) with its parser, printer
 * and verifier.
 *
 * Ownership: a program owns one arena; every IR node, name and array of the program is
 * allocated from it and freed with the program. The context owns diagnostics only.
 */
#ifndef TILEC_IR_H
#define TILEC_IR_H

#include "tilec.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arena ----------------------------------------------------------------------- */

typedef struct ir_chunk ir_chunk;
typedef struct ir_arena {
    ir_chunk *head; /* newest chunk first */
    size_t total;   /* bytes handed out, for limits */
} ir_arena;

void *ir_arena_alloc(ir_arena *a, size_t size); /* zeroed, 16-byte aligned; NULL on OOM */
char *ir_arena_strndup(ir_arena *a, const char *s, size_t n);
void ir_arena_free(ir_arena *a);
/* Grows *arr (of *cap elements of elem bytes) to hold at least need elements. */
bool ir_arena_grow(ir_arena *a, void **arr, int *cap, int need, size_t elem);

/* ---- context and diagnostics ------------------------------------------------------ */

/* A diagnostic's source, so the renderer can show the line. */
typedef struct ir_source {
    const char *file; /* name shown in messages */
    const char *text; /* the whole text, may be NULL (IR built through the API) */
    size_t len;
} ir_source;

typedef struct ir_diag {
    tilec_severity severity;
    char *file;
    int line, col;
    char *message;
    char *excerpt; /* rendered source line and caret, or NULL */
} ir_diag;

#define IR_MAX_DIAGS 64

struct tilec_ctx {
    void *runtime;                 /* the JIT runtime's state (src/runtime), or NULL */
    void (*runtime_free)(void *);  /* set with it; called by tilec_close */
    ir_diag diags[IR_MAX_DIAGS];
    size_t ndiags;
    size_t dropped;   /* diagnostics past IR_MAX_DIAGS */
    char *text;       /* tilec_diag_text's rendering, rebuilt on demand */
    bool text_stale;
    uint64_t sim_budget; /* tilec_set_sim_budget; 0: the default (src/runtime/sim.c) */
    /* tilec_costs_load: the cost model's constants for every lowering of this context, in
       place of the defaults and of a device's file; for targets of costs_arch and
       costs_warp only. costs_what says where they come from (for explain). */
    bool costs_set;
    tilec_costs costs;
    char costs_arch[24];
    int costs_warp;
    char costs_what[320];
};

/* Adds a diagnostic at a position of src (line 0: no position). Never fails visibly: when
 * memory runs out the diagnostic is dropped and counted. */
void ir_diag_add(tilec_ctx *ctx, const ir_source *src, tilec_severity sev, int line, int col,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void ir_diag_vadd(tilec_ctx *ctx, const ir_source *src, tilec_severity sev, int line, int col,
                  const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));
size_t ir_error_count(const tilec_ctx *ctx);

/* A growable NUL-terminated string built with printf. On allocation failure it stays
 * failed (oom) and later appends do nothing. */
typedef struct ir_str {
    char *data;
    size_t len, cap;
    bool oom;
} ir_str;
void ir_str_printf(ir_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ir_str_vprintf(ir_str *s, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void ir_str_put(ir_str *s, const char *text, size_t n);
void ir_str_free(ir_str *s);

/* Name tables (from the X-macro lists in tilec.h). Lookups return -1 when not found. */
int ir_lookup_dtype(const char *s, size_t n);
int ir_lookup_space(const char *s, size_t n);
int ir_lookup_layout(const char *s, size_t n); /* "mma_m16n8k16_c" -> TILEC_LAYOUT_MMA_C */
int ir_lookup_swizzle(const char *s, size_t n); /* "sw128" -> TILEC_SWIZZLE_SW128 */
int ir_lookup_scope(const char *s, size_t n);
int ir_lookup_op(const char *s, size_t n);
/* The op names joined for a message: "sum, max or min" with last " or ", "sum, max, min"
 * with ", "; buf (n bytes) is returned. */
const char *ir_op_names(char *buf, size_t n, const char *last);
int ir_lookup_ewop(const char *s, size_t n);       /* "exp" -> TILEC_EW_EXP */
int ir_lookup_math(const char *s, size_t n);      /* "approx" -> TILEC_MATH_APPROX */
int ir_lookup_fused(const char *s, size_t n);      /* "softmax" -> TILEC_FUSED_SOFTMAX */
int ir_ewop_arity(tilec_ewop o);                    /* operands: 1, 2 or 3; 0 out of range */
const char *const *ir_ewop_names(int *count);       /* the table's names, for did-you-mean */
int ir_lookup_id(const char *s, size_t n); /* "warp_id" -> TILEC_SCOPE_WARP */
const char *ir_id_name(tilec_scope s);
/* The word of the CTA's rank in its cluster (TILEC_INDEX_RANK). */
#define IR_RANK_WORD "cta_in_cluster"

bool ir_dtype_is_float(tilec_dtype d);
/* The closest of names[] to word within an edit distance of 2, or NULL. */
const char *ir_did_you_mean(const char *word, size_t n, const char *const *names, int count);

/* ---- tile IR ---------------------------------------------------------------------- */

typedef struct ir_pos {
    int line, col; /* 1-based; 0 when built through the API */
} ir_pos;

/* A comment kept for the printer: its text from '#' to the end of the line. */
typedef struct ir_comment {
    const char *text;
    int line;
} ir_comment;

/* Comments and spacing attached to a kernel or statement. */
typedef struct ir_trivia {
    ir_comment *leading; /* full-line comments above */
    int nleading;
    const char *trailing; /* comment on the same line, or NULL */
    bool blank_before;    /* a blank line separated it from what came before */
} ir_trivia;

struct tilec_buffer {
    const char *name;
    ir_pos pos;
    tilec_dtype dtype;
    tilec_space space;
    int rank;
    int64_t shape[TILEC_MAX_RANK];
    int64_t strides[TILEC_MAX_RANK]; /* element strides; row-major unless has_strides */
    bool has_strides;
    /* a register-fragment layout as given (kind NONE: none; layout.c), and as checked:
     * frag_reg + frag_lane + frag_warp basis vectors as flat row-major indices */
    tilec_layout layout;
    ir_pos layout_pos;
    ir_pos layout_bit_pos[TILEC_LAYOUT_MAX_BITS]; /* each linear bit as written (line 0: built) */
    int frag_reg, frag_lane, frag_warp;
    int64_t frag[TILEC_LAYOUT_MAX_BITS];
    /* a shared tile's swizzle as given (kind NONE: none; swizzle.c), with its bits, base
     * and shift resolved when checked */
    tilec_swizzle swizzle;
    ir_pos swizzle_pos;
    bool is_param;
    struct tilec_kernel *kernel;
    int64_t elems; /* product of the shape (checked for overflow) */
    int64_t span;  /* elements the layout occupies: 1 + sum((extent-1) * |stride|); of a
                      fragment, what one thread holds (its registers) */
    int64_t origin; /* offset of element [0, ..., 0] past the lowest element the layout
                       reaches: 0 unless a stride is negative (views only) */
    bool view;     /* a read-only strided view (tilec_reduce's input): strides of any sign,
                      0 for a broadcast; indices may meet */
};

typedef struct ir_index {
    tilec_index_kind kind;
    int64_t start, stop;
    bool has_start, has_stop;
    tilec_scope id;
    ir_pos pos;
} ir_index;
/* Whether an index is an id of the executing instance (cta_id … cluster_id, or
 * cta_in_cluster), and its word. */
static inline bool ir_index_is_id(const ir_index *ix) {
    return ix->kind == TILEC_INDEX_ID || ix->kind == TILEC_INDEX_RANK;
}
const char *ir_index_id_word(const ir_index *ix);

typedef struct ir_region {
    tilec_buffer *buf;
    int nindex;
    bool brackets; /* written with [ ] (printer keeps `A[]`-less form otherwise) */
    ir_index index[TILEC_MAX_RANK];
    ir_pos pos;
} ir_region;

typedef enum ir_stmt_kind { IR_ALLOC, IR_COPY, IR_FILL, IR_SYNC, IR_REDUCE, IR_MAP } ir_stmt_kind;

/* A fill constant: an integer or a floating value (incl. inf, nan) as written, and what a
 * destination of `dtype` stores (see num_fill_typed). */
typedef struct ir_value {
    bool is_int;
    int64_t i;
    double f;          /* a float as written, rounded once to f64 */
    tilec_dtype dtype; /* the destination's */
    double typed;      /* float dtypes: the number as written rounded once to dtype */
    bool exact;        /* float dtypes: f is exactly the number as written; integer dtypes: the
                          number as written is an integer, i (unless too_big) */
    bool too_big;      /* integer dtypes: that integer is beyond int64 */
} ir_value;

/* A map statement's expression (docs/format.md, "Elementwise statements"): a tree of
 * operands (regions of the kernel's buffers, numbers, an element's position) and
 * elementwise operators (the TILEC_EWOP_LIST table) and casts. */
typedef enum ir_expr_kind {
    IR_X_REGION, /* an operand region, broadcast to the destination's shape */
    IR_X_CONST,  /* a number as written (value), of the type the expression gives it */
    IR_X_INDEX,  /* index(d): the element's position along dimension d of the destination */
    IR_X_OP,     /* op(args[0 .. arity)) */
    IR_X_CAST,   /* dtype(args[0]): converted to `to` */
    IR_X_GATHER, /* gather(region, axis, args[0]): the region's element at the destination's
                    position (broadcast as a REGION's) but along dimension `axis` of the
                    region, at the integer args[0]; NaN (0 for integers) outside the extent */
} ir_expr_kind;

typedef struct ir_expr {
    ir_expr_kind kind;
    ir_pos pos;          /* the operand, the number, the operator's name or symbol */
    bool infix;          /* OP written a + b, a - b, a * b, a / b or -a (the printer keeps it) */
    bool parens;         /* written inside ( ) (the printer keeps them) */
    tilec_ewop op;       /* OP */
    struct ir_expr *args[3];
    ir_region region;    /* REGION, GATHER */
    int bcast[TILEC_MAX_RANK]; /* REGION, set by the verifier: the region's dimension that
                                  dimension d of the destination reads, -1 where it is
                                  broadcast (a missing or extent-1 dimension); GATHER:
                                  the same, -1 where the gathered dimension meets */
    ir_value value;      /* CONST: rounded to value.dtype, the node's type once verified */
    const char *text;    /* CONST: the unsigned number as written when it is not an int64
                            integer ("1e-6", a 30-digit integer), NULL otherwise; the
                            verifier rounds it once to the type the number takes */
    size_t text_len;
    int axis;            /* INDEX: the destination's dimension, >= 0 once checked; GATHER: the
                            region's dimension (as indexed), >= 0 once checked */
    tilec_dtype to;      /* CAST */
    tilec_dtype type;    /* set by the verifier: the type it computes in (a region of f16 or
                            bf16 is read as f32; docs/format.md gives the rules) */
} ir_expr;

/* What the front end and the lowerings need to know of an elementwise operator beyond its
 * name and arity (ops.c: one row per tilec_ewop). */
typedef struct ir_ewop_info {
    bool floats_only; /* div, exp … rsqrt: an integer operand is refused (cast it) */
    bool compares;    /* eq … ge: 1 or 0, of the operands' common type */
    char infix;       /* '+', '-', '*', '/' where it is also written infix, else 0 */
    int prec;         /* that infix form's precedence: 1 for + and -, 2 for * and / */
} ir_ewop_info;
const ir_ewop_info *ir_ewop(tilec_ewop op); /* the add row for a value out of range */

typedef struct ir_stmt {
    ir_stmt_kind kind;
    int index;        /* position in its kernel, from 0 */
    ir_pos pos;       /* the scope keyword, or `shared`/`local` of an alloc */
    ir_pos op_pos;    /* the operation name after the dot */
    tilec_exec exec;  /* COPY, FILL, SYNC, REDUCE */
    tilec_buffer *alloc; /* ALLOC */
    ir_region dst;    /* COPY, FILL, REDUCE */
    ir_region src;    /* COPY, REDUCE */
    ir_region dst2;   /* REDUCE of an op with a second result (ir_op_info.second); buf NULL otherwise */
    ir_value fill;    /* FILL */
    ir_pos value_pos; /* FILL */
    tilec_op op;      /* REDUCE */
    int naxes;
    int axes[TILEC_MAX_RANK];
    ir_pos axes_pos;
    bool accum;
    tilec_nan nan;
    ir_pos nan_pos;
    int64_t correction;   /* var / std: subtracted from the count in the divisor (1 unless given) */
    bool correction_given;
    ir_pos correction_pos;
    ir_expr *expr;       /* MAP */
    const char *variant; /* NULL: chosen by dispatch */
    ir_pos variant_pos;
    ir_trivia trivia;
} ir_stmt;

struct tilec_kernel {
    struct tilec_program *prog;
    const char *name;
    ir_pos pos;
    bool is_func;
    int threads;
    int64_t grid;
    tilec_math math; /* math=: how exp and exp2 of f32 are computed (TILEC_MATH_LIST) */
    int cluster;     /* cluster=(N): CTAs of a thread-block cluster; 0: none */
    ir_pos threads_pos, grid_pos, cluster_pos;
    tilec_buffer **params;
    int nparams, cap_params;
    ir_stmt **stmts;
    int nstmts, cap_stmts;
    ir_trivia trivia;
    ir_comment *end_comments; /* comments before the closing brace */
    int nend_comments;
};

struct tilec_program {
    tilec_ctx *ctx;
    ir_arena arena;
    ir_source src;
    struct tilec_kernel **kernels;
    int nkernels, cap_kernels;
    ir_comment *tail_comments; /* comments after the last kernel */
    int ntail_comments;
};

tilec_program *ir_program_new(tilec_ctx *ctx, const char *file, const char *text, size_t len);
tilec_kernel *ir_kernel_add(tilec_program *p, const char *name, size_t n);
ir_stmt *ir_stmt_add(tilec_kernel *k, ir_stmt_kind kind);
bool ir_param_add(tilec_kernel *k, tilec_buffer *b);
tilec_buffer *ir_find_buffer(const tilec_kernel *k, const char *name, size_t n, int upto_stmt);
/* The kernel or func called name (NULL: the program's only one), or NULL with a
 * diagnostic saying why. */
const tilec_kernel *ir_find_kernel(tilec_program *p, const char *name);

/* Checks a declared buffer at the boundary (parser and builder): rank 1..8, extents >= 1,
 * a shape product that fits in 64 bits, strides (if any) one per dimension, >= 1 and not
 * overlapping. Sets elems and span. Reports at where[d] for dimension d (where may be
 * NULL: then at the buffer's position); stride problems at strides_pos. */
bool ir_check_decl(tilec_program *p, tilec_buffer *b, const ir_pos *where, ir_pos strides_pos);
/* Checks b->layout on the checked buffer b (layout.c: local, no strides, extents powers of
 * two, a preset's shape and dtype, a bijection onto the elements up to replicated lanes)
 * and resolves it into b->frag; errors at `at`. */
bool ir_check_layout(tilec_program *p, tilec_buffer *b, ir_pos at);
/* The flat row-major index of the element that register reg of lane `lane` of warp `warp`
 * holds in b's checked layout: only the layout's warp bits of `warp` are read (a CTA's
 * thread t >> 5 is its warp in every instance). */
int64_t ir_frag_element(const tilec_buffer *b, int warp, int lane, int reg);
/* The XOR of vals[i] over the set bits i of `bits` (n of them): a fragment's part for a
 * register, lane or warp index, of its basis or of a projection of it. */
int64_t ir_frag_xor(const int64_t *vals, int n, int64_t bits);
/* A map statement whose destination dst is a fragment reads fragment operand `operand`
 * (a checked REGION node, bcast set) lane-locally: register reg of every lane of dst needs
 * the element that register *src_reg of the same lane of the operand holds, the same
 * register for every lane (map.c). False where no such register exists (the verifier
 * refuses the statement then). */
/* The subexpressions of e: an operator's arity, 1 for a cast and a gather (its index), 0 for
 * a leaf. */
int ir_expr_nargs(const ir_expr *e);
bool ir_map_frag_source(const tilec_buffer *dst, const ir_expr *operand, int reg, int *src_reg);
/* The same question, for a message: true when no register serves, with *lane and *warp a
 * lane whose operand register does not hold the element (*src_reg -1: not even lane 0's). */
bool ir_map_frag_mismatch(const tilec_buffer *dst, const ir_expr *operand, int reg, int *src_reg, int *lane,
                          int *warp);
/* Whether reduction st ends with a barrier of its scope (format.md, "Barriers"): every one
 * but a fragment's into fragments, which touches registers only. */
bool ir_reduce_has_barrier(const struct ir_stmt *st);
/* The scope of the barrier a reduction ends with: its own, but a cluster reduction's is the
 * CTA's when its destinations are shared (each CTA's copy, written by its own threads) and
 * the cluster's when one is global (written once a cluster). */
tilec_scope ir_reduce_end_scope(const struct ir_stmt *st);
/* The threads that hold a fragment together: 32 (a warp), 128 (a warpgroup), or a CTA's
 * 64, 256, 512 or 1024: 32 << its warp bits. */
int ir_frag_threads(const tilec_buffer *b);
/* The scope a fragment is used at: a warp's (no warp bits), a warpgroup's (2), else a
 * CTA's of ir_frag_threads threads (1, 3, 4 or 5 warp bits) */
tilec_scope ir_frag_scope(const tilec_buffer *b);
/* Checks b->swizzle on the checked buffer b (swizzle.c: shared, the preset's or the given
 * bits in range, an element whole in a chunk, every element's place inside the tile) and
 * resolves a preset's bits, base and shift; errors at `at`. */
bool ir_check_swizzle(tilec_program *p, tilec_buffer *b, ir_pos at);
/* The element offset where b's element at (unswizzled) element offset `off` is stored:
 * off itself without a swizzle. */
int64_t ir_swizzle_offset(const tilec_buffer *b, int64_t off);
/* The bytes the swizzle's pattern repeats over (its atom, 2^(base + shift + bits)), which a
 * tile must start at a multiple of to match TMA's and wgmma's placement; 0 without one. */
int64_t ir_swizzle_atom(const tilec_buffer *b);
/* Makes a checked parameter a read-only view of `strides` (one per dim, any sign, 0 for a
 * broadcast; element [0, ..., 0] at `origin` past the lowest element): sets span and origin.
 * False, with a diagnostic, when the view spans more than 2^48 elements. */
bool ir_buffer_view(tilec_program *p, tilec_buffer *b, const int64_t *strides);
/* A valid name: [A-Za-z_][A-Za-z0-9_]*, at most TILEC_MAX_NAME characters. */
bool ir_name_ok(const char *s, size_t n);

/* Region helpers: the shape of a region as indexed (ids and integer indices drop their
 * dimension). Valid only for regions whose indices are in range (after verification, or
 * checked with ir_region_check). */
int ir_region_shape(const ir_region *r, int64_t *dims);
int64_t ir_region_elems(const ir_region *r);
/* Resolves negative positions: the [lo, hi) range index i selects in dimension i of the
 * buffer, for an id index the range of one instance is not known here (returns false). */
bool ir_index_range(const ir_index *ix, int64_t extent, int64_t *lo, int64_t *hi);

/* ---- front end -------------------------------------------------------------------- */

tilec_status ir_parse(tilec_ctx *ctx, const char *file, const char *text, size_t len,
                      tilec_program **out);
/* Parses the text of a map statement's expression (tilec_kernel_map) against kernel k's
 * buffers declared before statement `upto_stmt`; errors at their column of `text`. */
#define IR_MAX_EXPR_DEPTH 64 /* an expression's nesting (operators, casts, parentheses) */
#define IR_MAX_CLUSTER 16      /* CTAs of a thread-block cluster (more than 8: the non-portable size) */
#define IR_PORTABLE_CLUSTER 8  /* the most every target with clusters launches */
tilec_status ir_parse_expr(tilec_program *p, tilec_kernel *k, const char *text, int upto_stmt,
                           ir_expr **out);
void ir_print_expr(ir_str *s, const ir_expr *e);
/* Appends the canonical text of one region / statement / program. */
void ir_print_region(ir_str *s, const ir_region *r);
void ir_print_stmt(ir_str *s, const ir_stmt *st);
/* The operation's word as written after the dot: "copy", "fill", "sync", an op's name
 * ("sum"), or "alloc" for a shared / local declaration. */
const char *ir_stmt_word(const ir_stmt *st);
void ir_print_program(ir_str *s, const tilec_program *p);
/* A number as canonical `.tile` text, independent of the C locale. */
void ir_print_value(ir_str *s, ir_value v);

/* A diagnostic about statement st of kernel k at `at`; IR built through the API has no
 * positions, so the message then starts with "kernel 'K', statement N (scope.op): ". */
void ir_stmt_diag(tilec_program *p, const tilec_kernel *k, const ir_stmt *st, tilec_severity sev,
                  ir_pos at, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* What a target launches, for the verifier: its warp size and the memory a kernel's or
 * func's allocations may take (each rounded up to 16 bytes, over the layout's span). */
typedef struct ir_limits {
    int warp_size;
    int64_t shared_bytes;      /* a kernel's shared allocations, per CTA */
    int64_t func_shared_bytes; /* a func's shared allocations */
    int64_t local_bytes;       /* local allocations, per thread */
    const char *target;        /* "CUDA sm_75", "any target", for messages */
    const char *kernel_why;    /* a note on the kernels' bound, or NULL */
    const char *func_why;      /* a note on the funcs' bound, or NULL */
    int cluster_max;           /* CTAs a thread-block cluster may have (0: the target has none) */
    int cluster_max32;         /* the same at warp size 32 (clusters are CUDA's: at 64, none) */
} ir_limits;
/* The format's own bounds (TILEC_MAX_SHARED_BYTES…): what the most permissive target allows. */
ir_limits ir_limits_any(int warp_size);
/* Bytes an allocation takes in those bounds. */
int64_t ir_alloc_bytes(const tilec_buffer *b);

/* A target (targets.c): what the layers ask of a backend below its codegen and runtime
 * hooks. */
enum { IR_WARP_32 = 1, IR_WARP_64 = 2 }; /* warp sizes a target runs */
typedef struct ir_target_info {
    const char *label;          /* "CUDA", for messages */
    const char *default_arch;
    const char *arch_prefix;    /* the arch is the prefix, 2 to 4 digits, at most one suffix */
    const char *arch_digits, *arch_suffix;
    const char *arch_form;      /* "sm_XX (sm_80, sm_90…)"; NULL: any arch (the simulator) */
    int (*natural_warp)(const char *arch); /* the warp size of an arch when none is given */
    unsigned warp_sizes;        /* IR_WARP_* */
    bool wave64_only;           /* an arch whose natural size is 64 runs only 64 */
    bool warpgroup;             /* has a barrier of 128 threads (warpgroup scope) */
    int64_t (*shared_bytes)(const char *arch); /* of a kernel's CTA; NULL: the format's bound */
    int64_t func_shared_bytes;  /* 0: the format's bound */
    int (*cluster_max)(const char *arch); /* CTAs of a thread-block cluster; NULL: none */
    const char *kernel_why, *func_why; /* notes on those bounds in messages, or NULL */
    const char *source_ext, *binary_ext; /* what `tilec emit` and `tilec compile` write */
    uint32_t cache_kind;        /* the disk cache's tag of its binaries; 0: none */
    bool gpu;
} ir_target_info;
/* The row of a backend; NULL for AUTO or a value out of range. */
const ir_target_info *ir_target(tilec_backend b);

/* The checks of map statement st (not yet in kernel k) that its own text decides, as
 * tilec_kernel_map makes them at once: types, and shapes where no region is indexed by an
 * id; diagnostics point into src, the expression's text. TILEC_ERR_VERIFY when one failed. */
tilec_status ir_check_map_expr(tilec_program *p, tilec_kernel *k, ir_stmt *st, const ir_source *src);
/* The verifier; race.c is its barrier analysis. */
tilec_status ir_verify(tilec_program *p, const ir_limits *lim);
bool ir_check_races(tilec_program *p, tilec_kernel *k, int warp_size); /* false: out of memory */

/* Threads in one instance of a scope, and the number of instances in a CTA. */
int ir_scope_size(tilec_scope s, int threads, int warp_size);
int ir_scope_count(tilec_scope s, int threads, int warp_size);

/* Clears the diagnostics at the start of a public call: every entry point calls it as
 * soon as it has found its context, before checking any other argument, so that a call
 * never reports the previous call's messages (tilec.h). */
void ir_begin(tilec_ctx *ctx);
/* An error diagnostic (no position) of a call's bad argument, saying what is wrong and how
 * to call it; returns TILEC_ERR_INVALID_ARG, for `return ir_bad(...)`. */
tilec_status ir_bad(tilec_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* TILEC_IR_H */
