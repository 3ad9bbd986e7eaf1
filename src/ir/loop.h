/*
 * loop.h — the loop IR: the lowered per-thread program that variants produce, that the
 * CUDA / HIP printers emit and that the simulator runs.
 *
 * A loop kernel is one thread's program, written for every thread of a CTA at once:
 * typed registers, expressions over them and over the thread's position (thread index,
 * CTA index, lane, warp), loads and stores of buffer elements, structured `for` and `if`,
 * `shfl_xor` between the lanes of a warp, and barriers. It is target-neutral except for
 * the warp size, which the lowering bakes in.
 *
 * Everything lives in the tile program's arena.
 */
#ifndef TILEC_LOOP_H
#define TILEC_LOOP_H

#include "ir.h"

/* Value types. f16 and bf16 exist only as loads and stores: arithmetic converts them.
 * f64x2 is a pair of f64s (var's two sums): made by LX_PAIR, read by LX_PART, added part
 * by part (LO_ADD, each rounded in f64); registers, shuffles, selects, loads and stores
 * move it whole. It is not a float type (lp_is_float): nothing else applies to it.
 * i64x2 is a pair of i64s (the 128-bit key of a 64-bit value, lower_util.c): made by
 * LX_PAIR, read by LX_PART; registers, shuffles, selects, loads and stores move it whole,
 * and no arithmetic applies to it. */
typedef enum lp_type {
    LP_BOOL,
    LP_I32,
    LP_U32,
    LP_I64,
    LP_F16,
    LP_BF16,
    LP_F32,
    LP_F64,
    LP_F64X2,
    LP_I64X2,
    LP_TYPE_COUNT
} lp_type;

lp_type lp_type_of(tilec_dtype d);      /* storage type of a dtype */
lp_type lp_accum_type(tilec_dtype d);   /* f16/bf16 -> f32, else the same */
const char *lp_type_name(lp_type t);
bool lp_is_float(lp_type t);

/* Positions the hardware gives a thread. All i32. */
typedef enum lp_special {
    LP_TID,      /* thread index in the CTA */
    LP_CTA,      /* CTA index in the grid */
    LP_LANE,     /* tid % warp size */
    LP_WARP,     /* tid / warp size */
    LP_SPECIAL_COUNT
} lp_special;

typedef enum lp_op {
    /* integer and float arithmetic (float DIV correctly rounded); REM integers only */
    LO_ADD, LO_SUB, LO_MUL, LO_DIV, LO_REM,
    /* comparisons (to LP_BOOL) and boolean logic */
    LO_LT, LO_LE, LO_EQ, LO_NE, LO_AND, LO_OR,
    /* max / min: integers plain; floats with a NaN policy (see lp_expr.nan) */
    LO_MAX, LO_MIN,
    /* integers' bits: and, or, xor; shifts by 0 to bits - 1 (left modulo 2^bits, right
       arithmetic for signed types) */
    LO_BAND, LO_BOR, LO_BXOR, LO_SHL, LO_SHR,
    /* unary; SQRT floats only, correctly rounded; EXP2A f32 only: 2^x by the target's
       hardware exponential (a kernel's math=approx), within 1-2 ulp, a result below
       2^-126 +0 on NVIDIA (AMD: its denormal mode's); the simulator's is 2^x rounded to
       f32, then +0 below 2^-126 */
    LO_NOT, LO_NEG, LO_SQRT, LO_EXP2A,
    LO_OP_COUNT
} lp_op;

/* The reduction operators (ops.c): how each combines on loop IR, what it starts from and
 * how the reference bounds its error. */
typedef enum ir_identity {
    IR_IDENTITY_ZERO,    /* -0.0 for floats (x + -0.0 is x for every x), 0 for integers */
    IR_IDENTITY_LOWEST,  /* -inf, or the integer type's least value */
    IR_IDENTITY_HIGHEST, /* +inf, or the integer type's greatest value */
    IR_IDENTITY_ONE,     /* 1 */
} ir_identity;
typedef enum ir_error_model {
    IR_ERROR_SUM,   /* rounding grows with the magnitudes summed */
    IR_ERROR_EXACT, /* the result is one of the operands: exact in any order */
    IR_ERROR_PROD,  /* a rounding per factor, relative to the result */
    IR_ERROR_LOG,   /* the log of a sum: the sum's relative error as an absolute one */
    IR_ERROR_VAR,   /* a variance from shifted f64 sums: relative to their sum of squares */
} ir_error_model;
/* What an element becomes before it is combined (the partial results are not lifted). */
typedef enum ir_lift {
    IR_LIFT_NONE,
    IR_LIFT_SQUARE, /* x * x, rounded in the accumulation type (never fused into the add) */
    IR_LIFT_KEY,    /* x (and its index) as one i64 key (ir_key, lower_util.c) */
    IR_LIFT_SHIFT,  /* d = x - x0 (x0 the slice's first element) as the f64x2 (d, d * d),
                       each rounded in f64: var's shifted sums (lower_util.c) */
} ir_lift;
/* What the folded value becomes when it is stored, in the accumulation type. */
typedef enum ir_finish {
    IR_FINISH_NONE,
    IR_FINISH_MEAN, /* divided by the count of elements (converted to the type), rounded once */
    IR_FINISH_SQRT, /* its square root, rounded once */
    IR_FINISH_KEY,  /* the key's two results, into the two destinations */
    IR_FINISH_VAR,  /* the variance of the shifted sums, with the statement's correction */
    IR_FINISH_STD,  /* its square root */
} ir_finish;
/* What a reduction of no elements gives (the JIT's empty axes; a tile has no empty dim). */
typedef enum ir_empty {
    IR_EMPTY_ERROR,    /* nothing: max of nothing has no value */
    IR_EMPTY_IDENTITY, /* the identity (+0 for a zero: its -0 is for folds) */
    IR_EMPTY_NAN,      /* NaN: the mean of nothing is 0 / 0 */
    IR_EMPTY_NEG_INF,  /* -inf: the log of an empty sum */
} ir_empty;
/* An op that folds each element as one i64 key of two 32-bit halves (values of 32 bits or
 * fewer; a 64-bit value's key is the i64x2 of two 64-bit halves, ir_key_wide): argmax /
 * argmin's rank and index complement, folded by an integer max (the larger key is the
 * better value, then the smaller index; slices below 2^31 - 1 elements); or
 * aminmax's rank of the maximum and complemented rank of the minimum, each half folded by
 * its own max; or logsumexp's running maximum and its sum of exponentials relative to it,
 * two f32s (IR_KEY_LSE, a float's: f16, bf16, f32; an f64's two f64s, an f64x2), folded by
 * the rescaling merge. */
typedef enum ir_key { IR_KEY_NONE, IR_KEY_INDEX, IR_KEY_PAIR, IR_KEY_LSE } ir_key;
/* Whether op folds values of dtype d as i64x2 keys (argmax, argmin, aminmax of f64 and i64;
 * an f64 logsumexp's state is an f64x2, lp_op_accum_type). */
bool ir_key_wide(tilec_op op, tilec_dtype d);
typedef struct ir_op_info {
    lp_op combine;        /* LO_ADD, LO_MUL, or LO_MAX / LO_MIN, which take the NaN policy */
    ir_identity identity; /* under nan=ignore a comparing op's float identity is NaN */
    ir_error_model error;
    ir_lift lift;
    ir_finish finish;     /* an op with one takes no accum=true (its result does not combine
                             with the old one) unless accum_element */
    bool accum_element;   /* accum=true folds the destination's old value in as one more
                             element: logsumexp's, log(exp(old) + sum of exp(x)) */
    ir_empty empty;
    bool compares;        /* max / min: nan=ignore applies to floats, -0 is below +0 */
    bool idempotent;      /* x op x = x: a repeated (stride-0) reduced dim reads once */
    bool floats_only;     /* defined on the float dtypes only */
    bool holds_squares;   /* its accumulation type holds the squares of every value: bf16 and
                             f32, whose squares can pass f32's range, accumulate in f64 */
    ir_key key;           /* its elements fold as i64 keys (above) */
    bool long_finish;     /* its finish is many instructions (an f64 logarithm, root or
                             quotient): where a group of lanes folds each output, the CTA
                             gathers its outputs and a thread finishes each (v_grid_rows.c) */
    const char *second;   /* what its second destination holds ("index", "maximum"), NULL: it
                             has one */
} ir_op_info;
/* The row of op (the sum's for a value out of range, which callers have refused). */
const ir_op_info *ir_op(tilec_op op);
/* The type op accumulates values of dtype d in: lp_accum_type(d), f64 where the op's row
 * says its squares need it, i64 for a keyed op (i64x2 for a wide key, ir_key_wide). */
lp_type lp_op_accum_type(tilec_op op, tilec_dtype d);
/* The dtypes op is defined on, as "f16, bf16, f32" (the table's, for messages), in buf. */
const char *ir_op_dtype_names(tilec_op op, char *buf, size_t n);

typedef enum lp_expr_kind {
    LX_CONST, /* i (integer and bool types) or f (float types) */
    LX_REG,
    LX_SPECIAL,
    LX_UNARY,
    LX_BINARY,
    LX_SELECT, /* a ? b : c */
    LX_CAST,   /* a converted to type (round to nearest even) */
    LX_LOAD,   /* buf[a], of the buffer's storage type; with c (a shared buffer of a kernel of
                  clusters), the element of the copy of the cluster's CTA of rank c
                  (distributed shared memory) */
    LX_BITS,   /* a's bits as type: f32 <-> i32, f64 <-> i64 (an order key's input and its
                  inverse) */
    LX_FMA,    /* a * b + c of floats, rounded once (IEEE fusedMultiplyAdd): only where a
                  lowering asks for it; products are otherwise never fused */
    LX_PAIR,   /* the f64x2 (a, b) of two f64s, or the i64x2 of two i64s */
    LX_PART,   /* part i (0 or 1) of the pair a, an f64 or an i64; or half i of the u32 a
                  (LX_PACK16's), a value of the 16-bit type `type` */
    LX_PACK16, /* u32: the f32s a and b each rounded to nearest even to the 16-bit float
                  type i (LP_F16 or LP_BF16), a in bits 0-15, a NaN as the type's quiet NaN
                  (0x7e00, 0x7fc0): two stores' conversions at once, as the GPU's paired
                  conversion does them (cvt.rn.bf16x2.f32) */
    LX_ALIGNED /* bool: whether buf's first element is at an address that is a multiple of i
                  bytes (a func's parameter, whose address the caller chooses; the simulator's
                  buffers always are) */
} lp_expr_kind;

typedef struct lp_buf lp_buf;

typedef struct lp_expr {
    lp_expr_kind kind;
    lp_type type;
    lp_op op;      /* UNARY, BINARY */
    tilec_nan nan; /* float MAX / MIN: propagate or ignore */
    bool wraps;    /* a signed ADD / SUB / MUL that must wrap modulo 2^bits (a reduction's
                      fold, which the format defines so): emitted through unsigned, where
                      C++ would leave an overflow undefined */
    int64_t i;     /* CONST */
    double f;      /* CONST */
    int reg;       /* REG */
    lp_special special;
    const lp_buf *buf; /* LOAD */
    struct lp_expr *a, *b, *c;
} lp_expr;

/* A buffer the loop program touches: a parameter or allocation of the tile program, or
 * scratch a lowering added (shared slots for partial results). */
struct lp_buf {
    const char *name;
    tilec_space space;
    lp_type type;  /* element type in memory */
    int64_t elems; /* addressable elements (the layout's span) */
    const tilec_buffer *tile; /* the tile buffer, NULL for scratch */
    int param;     /* index among the kernel's parameters, -1 otherwise */
    int id;        /* index in the loop kernel's buffer table */
};

typedef enum lp_stmt_kind {
    LS_ASSIGN,  /* reg = a */
    LS_STORE,   /* buf[a] = b (b of the buffer's type) */
    LS_IF,      /* if (a) body else orelse */
    LS_FOR,     /* for (reg = a; reg < b; reg += step) body; all of the register's type,
                   step > 0 and the same for every lane that runs the loop */
    LS_SHFL,    /* reg = shfl_xor(src_reg, lane_mask, width) across the warp */
    LS_BARRIER, /* barrier of `scope` (cluster, cta, warpgroup, warp); a cluster's orders the
                   shared and global accesses of every CTA of the cluster */
    LS_VLOAD,   /* registers reg .. reg + vec - 1 = buf[a .. a + vec): one aligned load of 16, 8 or 4 bytes;
                   a is a multiple of vec */
    LS_VSTORE,  /* buf[a .. a + vec) = registers src_reg .. src_reg + vec - 1 */
    LS_ATOMIC_ADD, /* reg = buf[a]; buf[a] += b, atomically (global integer counters) */
    LS_FENCE,   /* orders this thread's global writes before its later ones, device-wide */
    LS_OP       /* marks the tile op the following statements come from (no effect) */
} lp_stmt_kind;

typedef struct lp_block {
    struct lp_stmt **items;
    int n, cap;
} lp_block;

typedef struct lp_stmt {
    lp_stmt_kind kind;
    int reg, src_reg;     /* ASSIGN, FOR, SHFL */
    const lp_buf *buf;    /* STORE */
    lp_expr *a, *b;
    lp_expr *step;        /* FOR */
    int lane_mask, width; /* SHFL */
    int vec;              /* VLOAD, VSTORE: elements (16 bytes) */
    tilec_scope scope;    /* BARRIER */
    const ir_stmt *origin; /* the tile statement this came from (for messages) */
    const char *variant;  /* OP: the variant that lowered it */
    lp_block body, orelse;
} lp_stmt;

typedef struct lp_regdef {
    lp_type type;
    const char *name; /* a readable base name ("acc", "r"); printed with its number */
} lp_regdef;

typedef struct lp_kernel {
    tilec_program *prog;
    const tilec_kernel *tile;
    int warp_size;
    int threads;
    int64_t grid;
    int cluster; /* CTAs of a thread-block cluster (the tile kernel's cluster=), 0: none */
    lp_buf **bufs;
    int nbufs, cap_bufs;
    lp_regdef *regs;
    int nregs, cap_regs;
    lp_block body;
    const char **variants; /* per statement of the tile kernel: the variant that lowered it
                              (NULL for allocations), set by dsp_lower_kernel */
    char plan[256]; /* how a grid variant laid out the work, for explain; "" otherwise */
    int min_ctas;   /* CTAs an SM should hold at once (CUDA's __launch_bounds__ minimum, which caps
                       the registers a thread); 0: the compiler's choice */
    bool oom;
} lp_kernel;

/* ---- building (allocation failures set k->oom and return harmless placeholders) ---- */

lp_kernel *lp_kernel_new(tilec_program *p, const tilec_kernel *tile, int warp_size);
lp_buf *lp_buf_for(lp_kernel *k, const tilec_buffer *b); /* the tile buffer's entry */
lp_buf *lp_buf_scratch(lp_kernel *k, const char *name, lp_type t, int64_t elems);
/* Global scratch the launcher allocates, zeroed, and passes after the parameters (partial
 * results and completion counters of grid reductions; the kernel leaves counters at 0). */
lp_buf *lp_buf_scratch_global(lp_kernel *k, const char *name, lp_type t, int64_t elems);
int lp_reg_new(lp_kernel *k, lp_type t, const char *name);
/* What goes between a register's or scratch buffer's name and its number where both are
 * printed: "_" after a name that ends in a digit (k1 of 271: k1_271, never k1271, which is
 * k of 1271), else "". The loop IR's dump and the emitters print names this way. */
const char *lp_name_sep(const char *name);

lp_expr *lp_int(lp_kernel *k, lp_type t, int64_t v);
lp_expr *lp_float(lp_kernel *k, lp_type t, double v);
lp_expr *lp_reg(lp_kernel *k, int reg);
lp_expr *lp_special_expr(lp_kernel *k, lp_special s);
lp_expr *lp_unary(lp_kernel *k, lp_op op, lp_expr *a);
lp_expr *lp_binary(lp_kernel *k, lp_op op, lp_expr *a, lp_expr *b);
lp_expr *lp_minmax(lp_kernel *k, lp_op op, tilec_nan nan, lp_expr *a, lp_expr *b);
lp_expr *lp_wrapping(lp_kernel *k, lp_op op, lp_expr *a, lp_expr *b); /* binary, wraps set */
lp_expr *lp_select(lp_kernel *k, lp_expr *c, lp_expr *a, lp_expr *b);
lp_expr *lp_cast(lp_kernel *k, lp_type t, lp_expr *a);
lp_expr *lp_load(lp_kernel *k, const lp_buf *b, lp_expr *index);
/* b[index] in the shared memory of the cluster's CTA of rank `rank` (an i32 below the
 * cluster's size; LX_LOAD's c). */
lp_expr *lp_load_rank(lp_kernel *k, const lp_buf *b, lp_expr *index, lp_expr *rank);
lp_expr *lp_bits(lp_kernel *k, lp_type t, lp_expr *a); /* LX_BITS: f32 <-> i32, f64 <-> i64 */
lp_expr *lp_fma(lp_kernel *k, lp_expr *a, lp_expr *b, lp_expr *c); /* LX_FMA: floats of one type */
lp_expr *lp_pair(lp_kernel *k, lp_expr *a, lp_expr *b);             /* LX_PAIR: f64, f64 -> f64x2; i64, i64 -> i64x2 */
lp_expr *lp_part(lp_kernel *k, lp_expr *pair, int i);               /* LX_PART: f64x2 -> f64; i64x2 -> i64 */
lp_expr *lp_pack16(lp_kernel *k, lp_type half, lp_expr *a, lp_expr *b); /* LX_PACK16: f32, f32 -> u32 */
lp_expr *lp_half(lp_kernel *k, lp_expr *packed, lp_type half, int i); /* LX_PART: u32 -> its 16-bit half i */
lp_expr *lp_aligned(lp_kernel *k, const lp_buf *b, int bytes);      /* LX_ALIGNED */

/* Statements are appended to `into`; the returned statement's blocks can be filled. */
lp_stmt *lp_assign(lp_kernel *k, lp_block *into, int reg, lp_expr *a);
lp_stmt *lp_store(lp_kernel *k, lp_block *into, const lp_buf *b, lp_expr *index, lp_expr *v);
lp_stmt *lp_if(lp_kernel *k, lp_block *into, lp_expr *cond);
lp_stmt *lp_for(lp_kernel *k, lp_block *into, int reg, lp_expr *lo, lp_expr *hi, lp_expr *step);
lp_stmt *lp_shfl(lp_kernel *k, lp_block *into, int dst_reg, int src_reg, int lane_mask, int width);
lp_stmt *lp_barrier(lp_kernel *k, lp_block *into, tilec_scope scope);
lp_stmt *lp_op_marker(lp_kernel *k, lp_block *into, const ir_stmt *origin, const char *variant);
/* Vector moves: vec consecutive registers (allocated together, of the buffer's type). */
lp_stmt *lp_vload(lp_kernel *k, lp_block *into, int first_reg, int vec, const lp_buf *b, lp_expr *index);
lp_stmt *lp_vstore(lp_kernel *k, lp_block *into, const lp_buf *b, lp_expr *index, int first_reg, int vec);
lp_stmt *lp_atomic_add(lp_kernel *k, lp_block *into, int old_reg, const lp_buf *b, lp_expr *index, lp_expr *v);
lp_stmt *lp_fence(lp_kernel *k, lp_block *into);

/* The loop program as readable text (`tilec explain --dump=loop`). */
void lp_print_kernel(ir_str *s, const lp_kernel *k);
void lp_print_expr(ir_str *s, const lp_kernel *k, const lp_expr *e);

/* Visits every statement of a block tree in order (depth first). */
typedef void (*lp_visit_fn)(const lp_stmt *st, int depth, void *arg);
void lp_visit(const lp_block *b, lp_visit_fn fn, void *arg);

#endif
