/*
 * tilec.h — the one public header of tilec, a compiler backend for GPU tile reductions.
 *
 * Everything a host program, an embedding compiler or the `tilec` CLI needs is here:
 * opaque handles, status codes, the enumerations of the tile IR, the text front end
 * (parse, verify, format) and a builder that makes the same IR without text.
 *
 * Conventions
 * - Every call that can fail returns a tilec_status. On failure the context keeps
 *   diagnostics (tilec_diag_count / tilec_diag_get / tilec_diag_text); nothing prints,
 *   exits or aborts.
 * - The context comes first, or is reachable from the first argument (a program keeps
 *   the context it was made with).
 * - Strings passed in are copied; strings handed out stay valid until the object that
 *   owns them changes or is freed, unless a function says "free with tilec_free".
 * - The library is not thread-safe per context: a context is used by one thread at a time
 *   (it may move between threads); threads working at once each open their own.
 */
#ifndef TILEC_H
#define TILEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version, stated once; meson.build reads these three lines. */
#define TILEC_VERSION_MAJOR 0
#define TILEC_VERSION_MINOR 2
#define TILEC_VERSION_PATCH 0

#define TILEC_STR_(x) #x
#define TILEC_STR(x) TILEC_STR_(x)
#define TILEC_VERSION_STRING                                                                \
    TILEC_STR(TILEC_VERSION_MAJOR) "." TILEC_STR(TILEC_VERSION_MINOR) "." TILEC_STR(          \
        TILEC_VERSION_PATCH)

#if defined(_WIN32)
#define TILEC_API
#elif defined(__GNUC__)
#define TILEC_API __attribute__((visibility("default")))
#else
#define TILEC_API
#endif

/* Limits of the tile IR. */
#define TILEC_MAX_RANK 8        /* dimensions of a buffer */
#define TILEC_MAX_NAME 63       /* characters of a name */
#define TILEC_MAX_THREADS 1024  /* threads of a CTA */
#define TILEC_MAX_ELEMENTS ((int64_t)1 << 48) /* elements a buffer spans (256 Ti): index
                                                 arithmetic near 2^63 stays exact */
#define TILEC_MAX_SOURCE (16u << 20) /* bytes of `.tile` text */
#define TILEC_MAX_STMTS 4096         /* statements (allocations included) of a kernel */
#define TILEC_MAX_KERNELS 1024       /* kernels and funcs of a program */
/* Memory a kernel allocates (its `shared` and `local` statements, each rounded up to 16
 * bytes), on the most permissive target: CUDA sm_90 and the simulator. Each target has its
 * own bound, lower on most (docs/format.md#limits); tilec_verify checks these. */
#define TILEC_MAX_SHARED_BYTES (227 << 10)     /* shared bytes of a kernel's CTA */
#define TILEC_MAX_FUNC_SHARED_BYTES (64 << 10) /* shared bytes a func allocates (HIP) */
#define TILEC_MAX_LOCAL_BYTES (64 << 10)       /* local bytes of one thread */

/*
 * Enumerations as X-macro lists, so the library's name tables are generated from the
 * same lines. Each list is X(SUFFIX, "name", ...properties).
 */

/* X(SUFFIX, name, bytes, is_float, WIDE): WIDE is the dtype a reduction may write instead
 * (tilec_reduce_desc.widen; itself when there is none wider) */
#define TILEC_DTYPE_LIST(X)                                                                \
    X(F16, "f16", 2, 1, F32)                                                               \
    X(BF16, "bf16", 2, 1, F32)                                                             \
    X(F32, "f32", 4, 1, F64)                                                               \
    X(F64, "f64", 8, 1, F64)                                                               \
    X(I32, "i32", 4, 0, I64)                                                               \
    X(U32, "u32", 4, 0, I64)                                                               \
    X(I64, "i64", 8, 0, I64)

/* X(SUFFIX, name) — numpy's (and torch's) name of each dtype, which the tilec command
 * (--dtype float32) and the Python package take as well as tilec's own */
#define TILEC_DTYPE_NUMPY_LIST(X)                                                          \
    X(F16, "float16") X(BF16, "bfloat16") X(F32, "float32") X(F64, "float64")             \
    X(I32, "int32") X(U32, "uint32") X(I64, "int64")

/* X(SUFFIX, name) — where a buffer lives */
#define TILEC_SPACE_LIST(X) X(GLOBAL, "global") X(SHARED, "shared") X(LOCAL, "local")

/* X(SUFFIX, name, id name) — who executes a statement: cta to thread, widest first, then
 * grid (every CTA of the launch together; whole-tensor reductions, see docs/format.md),
 * then cluster (the CTAs of one thread-block cluster of a kernel with `cluster=(N)`: CUDA
 * sm_90 and later; docs/format.md, "Thread-block clusters") */
#define TILEC_SCOPE_LIST(X)                                                                \
    X(CTA, "cta", "cta_id")                                                                \
    X(WARPGROUP, "warpgroup", "warpgroup_id")                                              \
    X(WARP, "warp", "warp_id")                                                             \
    X(THREAD, "thread", "thread_id")                                                       \
    X(GRID, "grid", "grid_id")                                                             \
    X(CLUSTER, "cluster", "cluster_id")

/* X(SUFFIX, name) — reduction operators */
#define TILEC_OP_LIST(X)                                                                   \
    X(SUM, "sum") X(MAX, "max") X(MIN, "min") X(PROD, "prod") X(SUMSQ, "sumsq") X(NORM2, "norm2") \
    X(MEAN, "mean") X(ARGMAX, "argmax") X(ARGMIN, "argmin") X(AMINMAX, "aminmax")   \
    X(LOGSUMEXP, "logsumexp") X(VAR, "var") X(STD, "std")

/* X(SUFFIX, name, arity) — the elementwise operators of a map statement (docs/format.md,
 * "Elementwise statements"): add, sub, mul and div are also written a + b, a - b, a * b,
 * a / b, and neg as -a; the comparisons give 1 or 0; where(c, a, b) is a where c != 0. */
#define TILEC_EWOP_LIST(X)                                                                 \
    X(ADD, "add", 2) X(SUB, "sub", 2) X(MUL, "mul", 2) X(DIV, "div", 2) X(MAX, "max", 2)    \
    X(MIN, "min", 2) X(NEG, "neg", 1) X(ABS, "abs", 1) X(EXP, "exp", 1) X(EXP2, "exp2", 1)  \
    X(LOG, "log", 1) X(LOG2, "log2", 1) X(SQRT, "sqrt", 1) X(RSQRT, "rsqrt", 1)             \
    X(FMA, "fma", 3) X(WHERE, "where", 3) X(EQ, "eq", 2) X(NE, "ne", 2) X(LT, "lt", 2)      \
    X(LE, "le", 2) X(GT, "gt", 2) X(GE, "ge", 2)

/* X(SUFFIX, name) — the JIT's fused kernels over a tensor's last axis (tilec_fused;
 * docs/runtime.md, "Fused kernels") */
#define TILEC_FUSED_LIST(X)                                                                \
    X(SOFTMAX, "softmax") X(LOG_SOFTMAX, "log_softmax") X(RMS_NORM, "rms_norm")             \
    X(LAYER_NORM, "layer_norm") X(ADD_RMS_NORM, "add_rms_norm") X(CROSS_ENTROPY, "cross_entropy")

/* X(SUFFIX, name) — register-fragment layouts of a `local` buffer that a warp or a
 * warpgroup holds together (docs/format.md#fragment-layouts): which lane (and warp) and
 * which of its registers holds each element. NONE: each thread its own copy. The presets
 * are the PTX ISA's (lane l, g = l >> 2, t = l & 3): MMA_C, mma.sync m16n8k16's f32 C/D,
 * [16, 8n]; MMA_A, its A operand, [16, 16n]; MMA_B, its B operand (k x n), [16, 8n];
 * WGMMA_D, wgmma m64nNk16's f32 D, [64, N], a warpgroup. LINEAR: the general form, of
 * which the presets are cases: each bit of the register, lane and warp index adds a
 * coordinate (tilec_layout.basis). */
#define TILEC_LAYOUT_LIST(X)                                                               \
    X(NONE, "none") X(MMA_C, "mma_m16n8k16_c") X(MMA_A, "mma_m16n8k16_a")                   \
    X(MMA_B, "mma_m16n8k16_b") X(WGMMA_D, "wgmma_m64nNk16_d") X(LINEAR, "linear")

/* X(SUFFIX, name, bits, base, shift) — the swizzles of a `shared` tile
 * (docs/format.md#swizzled-shared-tiles) by name: the element at byte offset o from the
 * tile's first byte (by its strides) is stored at o ^ (((o >> (base + shift)) & (2^bits -
 * 1)) << base), CuTe's Swizzle<bits, base, shift> on bytes. SW128, SW64 and SW32 are TMA's
 * and wgmma's 128-, 64- and 32-byte swizzles (16-byte chunks of a 128-byte line, XORed
 * with the line's index in a group of 8); XOR: any other (bits, base, shift). */
#define TILEC_SWIZZLE_LIST(X)                                                              \
    X(NONE, "none", 0, 0, 0) X(SW32, "sw32", 1, 4, 3) X(SW64, "sw64", 2, 4, 3)               \
    X(SW128, "sw128", 3, 4, 3) X(XOR, "xor", 0, 0, 0)

/* X(SUFFIX, name) — NaN policy of max / min */
#define TILEC_NAN_LIST(X) X(PROPAGATE, "propagate") X(IGNORE, "ignore")

/* X(SUFFIX, name) — a kernel's math (`math=` in its header): EXACT, every result the same
 * bits on every target and the simulator; APPROX, f32 exp and exp2 (maps, logsumexp's
 * fold) by the target's hardware exponential, faster and within about 2^-21 relative (exp:
 * plus |x| 2^-24, its argument's rounding), subnormal results flushed, not the same
 * bits (docs/format.md, "Math") */
#define TILEC_MATH_LIST(X) X(EXACT, "exact") X(APPROX, "approx")

/* X(SUFFIX, value, description) */
#define TILEC_STATUS_LIST(X)                                                               \
    X(OK, 0, "success")                                                                    \
    X(ERR_INVALID_ARG, 1, "invalid argument")                                              \
    X(ERR_NOMEM, 2, "out of memory")                                                       \
    X(ERR_IO, 3, "input/output error")                                                     \
    X(ERR_PARSE, 4, "syntax error in tile program")                                        \
    X(ERR_VERIFY, 5, "tile program breaks a rule of the format")                           \
    X(ERR_INTERNAL, 6, "internal error in tilec")                                          \
    X(ERR_DISPATCH, 7, "no variant can lower a tile statement")                            \
    X(ERR_SIMULATE, 8, "the simulator found an error in the lowered program")              \
    X(ERR_UNAVAILABLE, 9, "the requested backend or compiler is not available")             \
    X(ERR_COMPILE, 10, "the run-time compiler rejected the generated source")              \
    X(ERR_BUDGET, 11, "the simulation would exceed its work budget or memory bound")

typedef enum tilec_dtype {
#define TILEC_X_(s, n, b, f, w) TILEC_##s,
    TILEC_DTYPE_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_DTYPE_COUNT
} tilec_dtype;

typedef enum tilec_space {
#define TILEC_X_(s, n) TILEC_SPACE_##s,
    TILEC_SPACE_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_SPACE_COUNT
} tilec_space;

typedef enum tilec_scope {
#define TILEC_X_(s, n, id) TILEC_SCOPE_##s,
    TILEC_SCOPE_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_SCOPE_COUNT
} tilec_scope;

typedef enum tilec_layout_kind {
#define TILEC_X_(s, n) TILEC_LAYOUT_##s,
    TILEC_LAYOUT_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_LAYOUT_COUNT
} tilec_layout_kind;

typedef enum tilec_swizzle_kind {
#define TILEC_X_(s, n, b, m, sh) TILEC_SWIZZLE_##s,
    TILEC_SWIZZLE_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_SWIZZLE_COUNT
} tilec_swizzle_kind;

typedef enum tilec_op {
#define TILEC_X_(s, n) TILEC_OP_##s,
    TILEC_OP_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_OP_COUNT
} tilec_op;

typedef enum tilec_ewop {
#define TILEC_X_(s, n, a) TILEC_EW_##s,
    TILEC_EWOP_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_EWOP_COUNT
} tilec_ewop;

typedef enum tilec_fused_op {
#define TILEC_X_(s, n) TILEC_FUSED_##s,
    TILEC_FUSED_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_FUSED_COUNT
} tilec_fused_op;

typedef enum tilec_nan {
#define TILEC_X_(s, n) TILEC_NAN_##s,
    TILEC_NAN_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_NAN_COUNT
} tilec_nan;

typedef enum tilec_math {
#define TILEC_X_(s, n) TILEC_MATH_##s,
    TILEC_MATH_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_MATH_COUNT
} tilec_math;

typedef enum tilec_status {
#define TILEC_X_(s, v, d) TILEC_##s = v,
    TILEC_STATUS_LIST(TILEC_X_)
#undef TILEC_X_
} tilec_status;

/* Names: "f32", "shared", "warp", "sum", "ignore", "TILEC_ERR_PARSE"; NULL when out of range. */
TILEC_API const char *tilec_dtype_name(tilec_dtype d);
TILEC_API const char *tilec_space_name(tilec_space s);
TILEC_API const char *tilec_scope_name(tilec_scope s);
TILEC_API const char *tilec_op_name(tilec_op o);
TILEC_API const char *tilec_nan_name(tilec_nan n);
TILEC_API const char *tilec_math_name(tilec_math m);
TILEC_API const char *tilec_ewop_name(tilec_ewop o);
TILEC_API const char *tilec_fused_name(tilec_fused_op o);
TILEC_API const char *tilec_layout_name(tilec_layout_kind l);
TILEC_API const char *tilec_swizzle_name(tilec_swizzle_kind s);
/* Whether reduction op is defined on dtype (mean, norm2, var, std and logsumexp take
 * float dtypes only; argmax, argmin and aminmax every dtype) and,
 * with accumulate, whether it folds in the destination's old value (mean and norm2, whose
 * results are not their fold's, do not). False for values out of range. */
TILEC_API bool tilec_op_supports(tilec_op op, tilec_dtype dtype, bool accumulate);
/* Whether op compares values (max, min, argmax, argmin, aminmax): the NaN policy
 * (nan=ignore) applies to it on float dtypes. False out of range. */
TILEC_API bool tilec_op_compares(tilec_op op);
/* Whether op takes a correction (var and std: the divisor is n - correction). False out of
 * range. */
TILEC_API bool tilec_op_takes_correction(tilec_op op);
/* How many results op writes: 2 for argmax and argmin (the value and its index) and for
 * aminmax (the minimum and the maximum), 1 for the others, 0 out of range. */
TILEC_API int tilec_op_outputs(tilec_op op);
/* The dtype of op's second result for values of dtype `values`: i64 for argmax and argmin
 * (their indices; i32 may be asked for), `values` for aminmax (its maximum), and
 * TILEC_DTYPE_COUNT for an op with one result or a value out of range. */
TILEC_API tilec_dtype tilec_op_second_dtype(tilec_op op, tilec_dtype values);
TILEC_API const char *tilec_status_name(tilec_status s);
/* A sentence that describes a status ("syntax error in tile program"). */
TILEC_API const char *tilec_status_message(tilec_status s);
/* Bytes of one element of d, 0 when out of range. */
TILEC_API size_t tilec_dtype_size(tilec_dtype d);
/* The dtype a reduction of d writes with tilec_reduce_desc.widen: f16, bf16 -> f32;
 * f32 -> f64; i32, u32 -> i64; d itself for f64 and i64 (and out of range). */
TILEC_API tilec_dtype tilec_dtype_wide(tilec_dtype d);
/* 16-bit float patterns, for preparing and reading f16 / bf16 buffers: conversions round
 * to nearest even (overflow gives ±inf); NaN stays NaN. */
TILEC_API uint16_t tilec_f16_from_double(double x);
TILEC_API uint16_t tilec_bf16_from_double(double x);
TILEC_API double tilec_f16_to_double(uint16_t bits);
TILEC_API double tilec_bf16_to_double(uint16_t bits);
/* "0.2.0": the library's version, which may differ from the header's TILEC_VERSION_STRING. */
TILEC_API const char *tilec_version(void);

/* ---------------------------------------------------------------------------------------
 * Context and diagnostics
 * ------------------------------------------------------------------------------------ */

typedef struct tilec_ctx tilec_ctx;

/* Opens a context. *out is NULL on failure. Close it with tilec_close. */
TILEC_API tilec_status tilec_open(tilec_ctx **out);
/* Frees the context and everything it still owns (on the simulator, the device memory
 * the caller did not free too). NULL is allowed. */
TILEC_API void tilec_close(tilec_ctx *ctx);

typedef enum tilec_severity { TILEC_SEV_ERROR, TILEC_SEV_NOTE, TILEC_SEV_WARNING } tilec_severity;

/* One diagnostic. line and col are 1-based; 0 when the IR was built through the API.
 * The strings belong to the context and stay valid until its diagnostics are cleared. */
typedef struct tilec_diag {
    tilec_severity severity;
    const char *file;    /* file name given to tilec_parse, "<api>" for built IR, "tilec"
                            for problems of the call itself (a missing compiler…) */
    int line, col;       /* position of the offending token */
    const char *message; /* one line, no trailing newline, no "error:" prefix */
} tilec_diag;

/* Diagnostics left by the last call (cleared when a call starts): a failing call's errors
 * and notes; a call that succeeds may leave notes and warnings (TILEC_SEV_WARNING: a
 * TILEC_DUMP_SOURCE file that could not be written, docs/runtime.md). A message is
 * one line, except dispatch failures, whose message holds a table of the variants tried. */
TILEC_API size_t tilec_diag_count(const tilec_ctx *ctx);
TILEC_API tilec_status tilec_diag_get(const tilec_ctx *ctx, size_t i, tilec_diag *out);
/* All diagnostics rendered for a terminal: "FILE:LINE:COL: error: MESSAGE", then the source
 * line and a caret under the column. "" when there are none. Owned by the context. */
TILEC_API const char *tilec_diag_text(const tilec_ctx *ctx);
TILEC_API void tilec_diag_clear(tilec_ctx *ctx);

/* Frees memory handed out by tilec (tilec_format's text). NULL is allowed. */
TILEC_API void tilec_free(void *p);

/* ---------------------------------------------------------------------------------------
 * Programs: parse, verify, format
 * ------------------------------------------------------------------------------------ */

typedef struct tilec_program tilec_program;
typedef struct tilec_kernel tilec_kernel;
typedef struct tilec_buffer tilec_buffer;

/* Parses `.tile` text (format v1). `file` names the text in diagnostics (NULL: "<input>").
 * The text need not be NUL-terminated. On success *out owns a program; free it with
 * tilec_program_free. The program is not yet verified. */
TILEC_API tilec_status tilec_parse(tilec_ctx *ctx, const char *file, const char *text,
                                   size_t len, tilec_program **out);

/* Options of tilec_verify; zero-initialise, or pass NULL for the defaults. */
typedef struct tilec_verify_options {
    int warp_size; /* 32 or 64; 0 means 32. Sets how many warps a CTA has. */
} tilec_verify_options;

/* Checks every rule of the format (shapes, axes, dtypes, ids, scopes, barriers). Returns
 * TILEC_ERR_VERIFY with one diagnostic per violation (notes point at related lines). */
TILEC_API tilec_status tilec_verify(tilec_program *prog, const tilec_verify_options *opts);

/* Writes the program as canonical `.tile` text (comments kept). *text is NUL-terminated;
 * free it with tilec_free. Formatting the parse of the result gives the same text. */
TILEC_API tilec_status tilec_format(tilec_program *prog, char **text, size_t *len);

TILEC_API void tilec_program_free(tilec_program *prog);
TILEC_API tilec_ctx *tilec_program_ctx(const tilec_program *prog);

/* Introspection. Indices run from 0 to count-1; out of range gives NULL or 0. */
TILEC_API size_t tilec_program_kernel_count(const tilec_program *prog);
TILEC_API tilec_kernel *tilec_program_kernel(const tilec_program *prog, size_t i);
TILEC_API const char *tilec_kernel_name(const tilec_kernel *k);
TILEC_API bool tilec_kernel_is_func(const tilec_kernel *k);
TILEC_API int tilec_kernel_threads(const tilec_kernel *k);
TILEC_API int64_t tilec_kernel_grid(const tilec_kernel *k);
TILEC_API tilec_math tilec_kernel_math(const tilec_kernel *k);
/* CTAs of the kernel's thread-block clusters (`cluster=(N)`), 0 when it declares none. */
TILEC_API int tilec_kernel_cluster(const tilec_kernel *k);
TILEC_API size_t tilec_kernel_param_count(const tilec_kernel *k);
TILEC_API tilec_buffer *tilec_kernel_param_at(const tilec_kernel *k, size_t i);
/* Whether kernel k writes its parameter i (a copy, fill or reduction into it): what a
 * caller must give writable memory for, known before anything runs. */
TILEC_API bool tilec_kernel_param_written(const tilec_kernel *k, size_t i);
TILEC_API const char *tilec_buffer_name(const tilec_buffer *b);
TILEC_API tilec_dtype tilec_buffer_dtype(const tilec_buffer *b);
TILEC_API tilec_space tilec_buffer_space(const tilec_buffer *b);
TILEC_API int tilec_buffer_rank(const tilec_buffer *b);
TILEC_API int64_t tilec_buffer_extent(const tilec_buffer *b, int dim);

/* ---------------------------------------------------------------------------------------
 * Builder: the same IR without text. Arguments are checked here (names, enums, ranks);
 * the rules between statements are checked by tilec_verify, as for parsed text.
 * ------------------------------------------------------------------------------------ */

/* An empty program owned by the caller (tilec_program_free). */
TILEC_API tilec_status tilec_program_new(tilec_ctx *ctx, tilec_program **out);

/* Adds a `kernel` (is_func false; grid >= 1) or a `func` (is_func true; grid must be 1). */
TILEC_API tilec_status tilec_kernel_new(tilec_program *prog, const char *name, bool is_func,
                                        int threads, int64_t grid, tilec_kernel **out);

/* The kernel's or func's math (TILEC_MATH_EXACT when never set): `math=` in its header. */
TILEC_API tilec_status tilec_kernel_set_math(tilec_kernel *k, tilec_math math);

/* The kernel's thread-block clusters, `cluster=(N)` in its header: N CTAs, 1 to 16 (more
 * than 8 only where the target allows the non-portable size), or 0 for none; a func has
 * none (docs/format.md, "Thread-block clusters"). That the grid is a multiple of N is
 * checked by tilec_verify. */
TILEC_API tilec_status tilec_kernel_set_cluster(tilec_kernel *k, int n);

/* A parameter. Kernel parameters must be global; func parameters may be in any space. */
TILEC_API tilec_status tilec_kernel_param(tilec_kernel *k, const char *name, tilec_dtype dtype,
                                          int rank, const int64_t *shape, tilec_space space,
                                          tilec_buffer **out);

/* A `shared` or `local` allocation statement. strides: NULL for row-major. */
TILEC_API tilec_status tilec_kernel_alloc(tilec_kernel *k, const char *name, tilec_space space,
                                          tilec_dtype dtype, int rank, const int64_t *shape,
                                          const int64_t *strides, tilec_buffer **out);

/* A register-fragment layout (TILEC_LAYOUT_LIST). For a preset only `kind` is read; its
 * bits follow from the buffer's shape. For TILEC_LAYOUT_LINEAR, element (coordinates) of
 * register r of lane l of warp w is the XOR of basis[i] over the set bits of r (i < nreg),
 * then of l (nreg <= i < nreg + nlane), then of w: every extent a power of two, nlane 5
 * (a warp of 32 lanes), nwarp 0 (a warp's), 2 (a warpgroup's) or 1, 3, 4, 5 (a CTA's of
 * 64, 256, 512 or 1024 threads), at most TILEC_LAYOUT_MAX_BITS bits in all (2^16 elements);
 * a lane or warp bit may add nothing (all zero: its lanes hold the same elements, a
 * replicated value). */
#define TILEC_LAYOUT_MAX_BITS 16
typedef struct tilec_layout {
    tilec_layout_kind kind;
    int nreg, nlane, nwarp;
    int64_t basis[TILEC_LAYOUT_MAX_BITS][TILEC_MAX_RANK];
} tilec_layout;

/* Gives a `local` allocation (or a func's `local` parameter) a layout (NULL, or kind NONE:
 * none), checked at once: on an error (TILEC_ERR_VERIFY; TILEC_ERR_INVALID_ARG for a linear
 * layout's bit counts out of range; the context's diagnostic says what is wrong) the
 * buffer keeps the layout it had. */
TILEC_API tilec_status tilec_buffer_set_layout(tilec_buffer *b, const tilec_layout *layout);

/* A shared tile's swizzle (TILEC_SWIZZLE_LIST). For a preset only `kind` is read; for
 * TILEC_SWIZZLE_XOR, bits (1 to 5), base (the log2 of the bytes that move together: at
 * least the element's size) and shift (at least bits), base + shift + bits at most 10 (an
 * atom of at most 1024 bytes, to which the tile is aligned). */
typedef struct tilec_swizzle {
    tilec_swizzle_kind kind;
    int bits, base, shift;
} tilec_swizzle;

/* Gives a `shared` allocation (or a func's `shared` parameter) a swizzle (NULL, or kind
 * NONE: none), checked at once: on an error (TILEC_ERR_VERIFY; the context's diagnostic
 * says what is wrong) the buffer keeps the swizzle it had. */
TILEC_API tilec_status tilec_buffer_set_swizzle(tilec_buffer *b, const tilec_swizzle *swizzle);

/* Who executes a statement: every instance of `scope`, or only `instance` when >= 0. */
typedef struct tilec_exec {
    tilec_scope scope;
    int instance; /* -1: every instance */
} tilec_exec;

typedef enum tilec_index_kind {
    TILEC_INDEX_AT,    /* one position: drops the dimension */
    TILEC_INDEX_SLICE, /* start:stop, keeps the dimension */
    TILEC_INDEX_ID,    /* cta_id / warpgroup_id / warp_id / thread_id / cluster_id: drops the
                          dimension */
    TILEC_INDEX_RANK   /* cta_in_cluster, the CTA's rank in its cluster: drops the dimension (its
                          id is not read) */
} tilec_index_kind;

/* One index of a region. Negative positions count from the end, as in numpy. */
typedef struct tilec_index {
    tilec_index_kind kind;
    int64_t start;      /* AT: the position; SLICE: the first position */
    int64_t stop;       /* SLICE: one past the last position */
    bool has_start;     /* SLICE: false for an open start (0) */
    bool has_stop;      /* SLICE: false for an open stop (the extent) */
    tilec_scope id;     /* ID: whose id (TILEC_SCOPE_WARP is warp_id) */
} tilec_index;

/* A part of a buffer: indices apply to the first nindex dimensions; the rest are whole. */
typedef struct tilec_region {
    const tilec_buffer *buffer;
    int nindex;
    tilec_index index[TILEC_MAX_RANK];
} tilec_region;

/* The whole buffer as a region. */
TILEC_API tilec_region tilec_region_whole(const tilec_buffer *b);

typedef struct tilec_reduce_attrs {
    int naxes;                 /* >= 1 */
    int axes[TILEC_MAX_RANK];  /* of the region as indexed; negative counts from the end */
    bool accum;                /* dst = op(dst_old, reduce(src)) */
    tilec_nan nan;             /* max / min, argmax / argmin only */
    const char *variant;       /* force a dispatch variant; NULL lets tilec choose */
    const tilec_region *dst2;  /* the second result: argmax / argmin's index (i64 or i32),
                                  aminmax's maximum (dst gets its minimum); required for
                                  them, NULL for every other op */
    const int64_t *correction; /* var / std: the divisor is max(n - *correction, 0), with
                                  *correction >= 0 (0: numpy's default); NULL: 1, Bessel's
                                  (torch's default). NULL for every other op */
} tilec_reduce_attrs;

/* axes = (-1), accum = false, nan = propagate, no forced variant. */
TILEC_API tilec_reduce_attrs tilec_reduce_attrs_default(void);

TILEC_API tilec_status tilec_kernel_copy(tilec_kernel *k, tilec_exec exec,
                                         const tilec_region *dst, const tilec_region *src);
/* Fill with a floating value (any finite value, ±inf or NaN) or an integer value. */
TILEC_API tilec_status tilec_kernel_fill(tilec_kernel *k, tilec_exec exec,
                                         const tilec_region *dst, double value);
TILEC_API tilec_status tilec_kernel_fill_int(tilec_kernel *k, tilec_exec exec,
                                             const tilec_region *dst, int64_t value);
TILEC_API tilec_status tilec_kernel_sync(tilec_kernel *k, tilec_exec exec);
TILEC_API tilec_status tilec_kernel_reduce(tilec_kernel *k, tilec_exec exec, tilec_op op,
                                           const tilec_region *dst, const tilec_region *src,
                                           const tilec_reduce_attrs *attrs);
/* An elementwise statement, exec.map(dst, expr): expr is the expression's text as a
 * `.tile` file writes it (docs/format.md, "Elementwise statements"), naming the kernel's
 * buffers declared so far: "exp(S - m)", "f32(x) * rsqrt(v + 1e-6) * w". Parsed and
 * checked at once (its types, and its shapes where no region is indexed by an id; the rest
 * when the program is verified): on an error (TILEC_ERR_PARSE, TILEC_ERR_VERIFY; the
 * context's diagnostic says what is wrong, at the column of the expression's text, file
 * "expression") nothing is added. */
TILEC_API tilec_status tilec_kernel_map(tilec_kernel *k, tilec_exec exec, const tilec_region *dst,
                                        const char *expr);

/* ---------------------------------------------------------------------------------------
 * Targets, dispatch and the simulator
 * ------------------------------------------------------------------------------------ */

/* AUTO: a usable GPU, else the simulator; SIM: the CPU simulator, which runs the lowered
 * program and checks it as it goes. The names are the CLI's --backend / --target values. */
#define TILEC_BACKEND_LIST(X) X(AUTO, "auto") X(CUDA, "cuda") X(HIP, "hip") X(SIM, "sim")

typedef enum tilec_backend {
#define TILEC_X_(s, n) TILEC_BACKEND_##s,
    TILEC_BACKEND_LIST(TILEC_X_)
#undef TILEC_X_
        TILEC_BACKEND_COUNT
} tilec_backend;

/* "auto", "cuda", "hip", "sim"; NULL when out of range. */
TILEC_API const char *tilec_backend_name(tilec_backend b);
/* The extension of what tilec_emit (binary false: ".cu", ".hip") or tilec_compile (true:
 * ".cubin", ".co") gives for a GPU backend; NULL for the others. */
TILEC_API const char *tilec_backend_file_extension(tilec_backend b, bool binary);

typedef struct tilec_target {
    tilec_backend backend;
    const char *arch; /* "sm_90", "gfx90a"…; NULL for the backend's default */
    int warp_size;    /* 0: from the arch (CUDA 32; HIP gfx9 64, gfx10 and later 32; sim 32) */
} tilec_target;

/* tilec_explain's flags (0: the full table, as `tilec explain --verbose` prints it) */
#define TILEC_EXPLAIN_LOOP 1u  /* the lowered loop IR after each kernel (what `true` asked for) */
#define TILEC_EXPLAIN_SHORT 2u /* per statement only the variant that lowers it, the one reason
                                  it won and what it does (a grid statement: its launch), as
                                  `tilec explain` prints it */

/* For every tile statement of every kernel and func: each variant tried, each predicate's
 * verdict and the winner, as text (free with tilec_free); with TILEC_EXPLAIN_SHORT the
 * short form instead. With TILEC_EXPLAIN_LOOP, the lowered loop IR follows each kernel.
 * Other bits: TILEC_ERR_INVALID_ARG. The program is verified first, for the target's warp
 * size (TILEC_ERR_VERIFY). Fails with TILEC_ERR_DISPATCH (and the full table in the
 * diagnostics) when a statement has no variant; the text is still returned then. */
TILEC_API tilec_status tilec_explain(tilec_program *prog, const tilec_target *target,
                                     unsigned flags, char **text);

/* Runs kernel `name` (NULL: the program's only kernel) on the simulator for its whole
 * grid. A func runs as a one-CTA kernel: its shared parameters start with the given
 * content, every thread's local parameters start with it, and thread 0's come back. args[i] is parameter i in host memory: dense, row-major, little-endian elements of
 * its dtype (16-bit patterns for f16 and bf16); it is read and written in place. The
 * target's backend must be TILEC_BACKEND_SIM (NULL: the simulator, warp size 32; on a GPU,
 * tilec_run_kernel runs a kernel on device memory); warp_size
 * 32 or 64. The program is verified first, for that warp size, and lowered for the
 * pointers given (vector accesses only where every one is 16-byte aligned, as
 * tilec_run_kernel does). Problems the simulator finds (a shuffle from an inactive lane,
 * a barrier reached by part of its scope, an access out of bounds, a race on shared
 * memory, a read of uninitialised memory, a vector access at a misaligned address) fail
 * with TILEC_ERR_SIMULATE and a diagnostic at the tile statement. A run that would exceed
 * the context's work budget (tilec_set_sim_budget) or TILEC_SIM_MAX_MEMORY fails with
 * TILEC_ERR_BUDGET, before it starts when that is certain, else when it gets there; the
 * parameters are left part-written then. */
TILEC_API tilec_status tilec_simulate(tilec_program *prog, const char *name,
                                      const tilec_target *target, void *const *args);

/* The simulator's work budget, in thread-steps: one thread executing one statement of the
 * lowered loop IR is one step, and starting a CTA costs one step per thread and one per
 * element of shared and local memory it clears. The default stops a run after a few
 * minutes of one core (docs/simulator.md#budget). */
#define TILEC_SIM_BUDGET_DEFAULT ((uint64_t)30000000000ull) /* 3 x 10^10 */
#define TILEC_SIM_UNLIMITED UINT64_MAX
/* Bytes the simulator allocates for one run (shared memory and its race-tracking shadow,
 * every thread's local memory and registers, global scratch), checked before allocating.
 * The parameters are the caller's memory; `tilec run` refuses parameters above it too. */
#define TILEC_SIM_MAX_MEMORY ((size_t)1 << 30)
/* Bytes the CPU reference (tilec_check, tilec_reduce_check, `--check`) allocates: 32 per
 * element of every buffer it models, checked before allocating (TILEC_ERR_BUDGET above). */
#define TILEC_REF_MAX_MEMORY ((size_t)4 << 30)

/* Sets the work budget of every later simulation in this context (tilec_simulate, and
 * tilec_reduce on the simulator), per kernel run: `steps` thread-steps; 0 restores the
 * default: the environment's TILEC_SIM_BUDGET (a decimal count, or "unlimited") when set,
 * else TILEC_SIM_BUDGET_DEFAULT; TILEC_SIM_UNLIMITED runs without a budget. */
TILEC_API tilec_status tilec_set_sim_budget(tilec_ctx *ctx, uint64_t steps);

/* CUDA or HIP source for every kernel and func of the program (verified and lowered for
 * the target first), NUL-terminated; free it with tilec_free. Kernels are
 * `extern "C" __global__` with __launch_bounds__; funcs are `extern "C" __device__`
 * functions taking pointers to their operands. The same program and target give the same
 * bytes. The backend must be CUDA or HIP. */
TILEC_API tilec_status tilec_emit(tilec_program *prog, const tilec_target *target, char **source,
                                  size_t *len);

/* Verifies the program for the target's warp size and lowers every kernel and func for
 * the target, as tilec_emit, tilec_compile and tilec_simulate do first, and keeps nothing:
 * TILEC_OK when the target can run the program, else the status and diagnostics those
 * would give (TILEC_ERR_VERIFY; TILEC_ERR_DISPATCH with the statement's FILE:LINE:COL and
 * every variant's reason; TILEC_ERR_INVALID_ARG for a target it does not know). `tilec
 * check` calls it for each target it checks. */
TILEC_API tilec_status tilec_lower(tilec_program *prog, const tilec_target *target);

/* Emits and compiles with NVRTC (a CUBIN for the target's sm_XX) or hiprtc (a code object
 * for its gfxNNN); no GPU is needed. *binary is freed with tilec_free. TILEC_ERR_UNAVAILABLE
 * when the compiler is not installed or does not know the arch (the diagnostic says what
 * was tried); TILEC_ERR_COMPILE with the compiler's log in the diagnostic. */
TILEC_API tilec_status tilec_compile(tilec_program *prog, const tilec_target *target,
                                     void **binary, size_t *size);

/* How to launch a kernel of emitted code. */
typedef struct tilec_launch_info {
    char symbol[TILEC_MAX_NAME + 8]; /* the extern "C" name in the source (renamed if it clashed) */
    int threads;                     /* block size (1-D) */
    int64_t grid;                    /* CTAs (1-D) */
    size_t dynamic_shared;           /* bytes of dynamic shared memory to pass (0 when static) */
    int nscratch;                    /* global scratch buffers to pass after the parameters, */
    size_t scratch_bytes[4];         /* zeroed before the first launch (the kernel leaves them so);
                                      * one set per stream when launches may overlap */
    int cluster;                     /* CTAs of a thread-block cluster (0: none): compiled into the
                                      * kernel (__cluster_dims__), so a plain launch runs clusters;
                                      * more than 8 needs the function's non-portable cluster size
                                      * allowed first (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) */
} tilec_launch_info;

TILEC_API tilec_status tilec_launch_info_get(tilec_program *prog, const tilec_target *target,
                                             const char *name, tilec_launch_info *info);

/* The result of comparing one written parameter with the reference. */
typedef struct tilec_check_result {
    const char *param;   /* the parameter's name */
    bool ok;
    bool exact;          /* compared bit for bit (integers, max, min, copies) */
    double tolerance;    /* allowed |got - want| / scale for sums; 0 when exact */
    double max_error;    /* largest |got - want| / scale (exact: largest |got - want|) */
    int64_t mismatches;  /* elements outside the tolerance */
    int64_t first_bad;   /* flat index of the first, -1 when none */
    double got, want;    /* at first_bad */
} tilec_check_result;

/* Computes kernel `name` (NULL: the only kernel) on the CPU in double precision (the
 * target gives the warp size, which sets how many warps there are) from
 * `inputs` (the parameters before the run, laid out as for tilec_simulate) and compares
 * every parameter the kernel writes with `outputs` (the parameters after the run).
 * Integers, max, min and copies must match exactly (any NaN matches a NaN); sums must be
 * within 1e-5 (f32, f64) or 1e-2 (f16, bf16) of the reference, relative to the sum of the
 * magnitudes of what was added; a sum that can overflow its accumulation type in some
 * order may also be what such an order gives (docs/simulator.md); products must be within
 * a rounding per factor, relative to the value, and where some order of the factors leaves
 * the normal range, have the product's sign (and an infinity, or a bounded magnitude, where
 * such an order gives one: docs/format.md#reductions). results[] gets one entry
 * per written parameter, in parameter order (room for every parameter is enough); *count
 * says how many. Every input must be given; an output may be NULL only for a parameter
 * the kernel does not write (else TILEC_ERR_INVALID_ARG naming it). Returns TILEC_OK when
 * the comparison ran, whatever it found. */
TILEC_API tilec_status tilec_check(tilec_program *prog, const char *name,
                                   const tilec_target *target, const void *const *inputs,
                                   const void *const *outputs, tilec_check_result *results,
                                   size_t *count);

/* ---------------------------------------------------------------------------------------
 * JIT: whole-tensor reductions of device memory
 * ------------------------------------------------------------------------------------ */

/* Chooses where this context runs (once, before anything else of this section): CUDA or
 * HIP device `device`, the simulator (device memory is then host memory), or AUTO: a
 * usable GPU, else the simulator. TILEC_ERR_UNAVAILABLE says what was tried;
 * TILEC_ERR_INVALID_ARG a backend out of range, a negative device or a second open.
 * Without it, the first call below opens AUTO on device 0. */
TILEC_API tilec_status tilec_runtime_open(tilec_ctx *ctx, tilec_backend backend, int device);
/* The backend in use (TILEC_BACKEND_AUTO before one is open). */
TILEC_API tilec_backend tilec_runtime_backend(const tilec_ctx *ctx);
/* The target kernels are lowered for on the runtime (opened as AUTO device 0 when not
 * yet): its backend (CUDA, HIP or SIM, never AUTO), the device's exact arch ("sm_90",
 * "gfx90a"; "cpu" on the simulator; owned by the context) and its warp size. */
TILEC_API tilec_status tilec_runtime_target(tilec_ctx *ctx, tilec_target *out);

/* ---- the in-kernel cost model's constants (docs/dispatch.md#calibrated-constants) ----
 * The dispatcher chooses a plan for a reduction inside a CTA by a cost model whose
 * constants are cycles of one GPU. The compiled defaults were measured on an H200; a
 * device's own are measured by tilec_calibrate (`tilec calibrate`) and kept in a file
 * beside the kernel cache, which the runtime reads when it opens that device. */
/* X(name, what) — the constants, in order: the fields of tilec_costs, the keys of a
 * constants file, the lines of `tilec calibrate`'s table (one table, read everywhere) */
#define TILEC_COSTS_LIST(X)                                                                \
    X(lds_latency, "a dependent shared load (4 and 16 bytes)")                             \
    X(shfl_latency, "a dependent warp shuffle")                                            \
    X(add_latency, "a dependent f32 add")                                                  \
    X(barrier, "a barrier of 4 and 8 warps, back to back")                                 \
    X(wavefront, "a wavefront of 16-byte shared loads (4 CTAs x 8 warps an SM)")          \
    X(request, "a 4-byte warp-wide shared load (one wavefront)")                           \
    X(shuffle, "a warp-wide shuffle (4 CTAs x 8 warps an SM)")                             \
    X(instruction, "a warp instruction (independent f32 adds)")

typedef struct tilec_costs { /* cycles */
#define TILEC_X_(n, what) double n;
    TILEC_COSTS_LIST(TILEC_X_)
#undef TILEC_X_
} tilec_costs;

/* The name of constant i ("lds_latency"), in TILEC_COSTS_LIST's order; NULL out of range. */
TILEC_API const char *tilec_costs_name(int i);

/* A constants file is at most this long (it is about 800 bytes). */
#define TILEC_COSTS_MAX_BYTES 4096

/* The compiled defaults (an H200's). */
TILEC_API tilec_costs tilec_costs_default(void);

/* Makes the constants file `text` (len bytes; `file` names it in messages) the constants
 * of every lowering of this context from now on (tilec_explain, tilec_emit, the runtime's
 * new plans), in place of the defaults and of the device's own file. Targets of another
 * arch or warp size than the file's are then refused (TILEC_ERR_INVALID_ARG) until
 * tilec_costs_load(ctx, NULL, NULL, 0) goes back to the defaults. A file that is not one
 * tilec_calibrate wrote, byte for byte (truncated, edited, corrupt, of another format
 * version), is TILEC_ERR_PARSE with the line and what is wrong; nothing changes then. */
TILEC_API tilec_status tilec_costs_load(tilec_ctx *ctx, const char *file, const char *text, size_t len);

/* tilec_calibrate's flags */
#define TILEC_CALIBRATE_NO_SAVE 1u /* measure and return, write no file and keep using the old constants */

/* Measures the cost model's constants on the runtime's GPU (opened as AUTO device 0 when
 * not yet) with micro-kernels timed by the GPU's clock: dependent shared loads, shuffles
 * and adds, barriers of 4 and 8 warps, shared-memory and shuffle throughput and the issue
 * rate, with 1 and 4 CTAs to a multiprocessor (about a second). Unless NO_SAVE, writes them
 * to the device's constants file in the kernel cache's directory (TILEC_CACHE_DIR, ...;
 * docs/runtime.md) and lowers this context's new plans with them; every later runtime
 * opened on a device of that name, arch and multiprocessor count reads them. out (may be
 * NULL) gets the constants; text (may be NULL) the file's content, path (may be NULL) where
 * it was written (NULL when it was not: NO_SAVE, or the cache is off or read-only, which a
 * note says); free both with tilec_free. TILEC_ERR_UNAVAILABLE on the simulator or when no
 * GPU can be opened; a file that cannot be written is an error, the measured constants
 * still returned. */
TILEC_API tilec_status tilec_calibrate(tilec_ctx *ctx, unsigned flags, tilec_costs *out, char **text, char **path);

/* Device memory of the context's backend (16-byte aligned at least). */
TILEC_API tilec_status tilec_mem_alloc(tilec_ctx *ctx, size_t bytes, void **ptr);
/* Frees what tilec_mem_alloc gave; NULL does nothing. A pointer the context did not give
 * out (or already freed) is TILEC_ERR_INVALID_ARG on the simulator, the driver's error
 * on a GPU; nothing is freed. */
TILEC_API tilec_status tilec_mem_free(tilec_ctx *ctx, void *ptr);
/* Copies bytes from the host to device memory (upload) or back (download). On the
 * simulator, which knows its blocks, the device side must lie inside one block of the
 * context and a host side that meets a block must fit in it: else TILEC_ERR_INVALID_ARG
 * and nothing is copied (a GPU's copy fails likewise). */
TILEC_API tilec_status tilec_mem_upload(tilec_ctx *ctx, void *dst, const void *src, size_t bytes);
TILEC_API tilec_status tilec_mem_download(tilec_ctx *ctx, void *dst, const void *src, size_t bytes);
/* Waits for everything launched so far. */
TILEC_API tilec_status tilec_synchronize(tilec_ctx *ctx);

/* What to reduce: a tensor of `rank` dims (1 to 8, extents >= 0, 64-bit) over `axes` (any
 * non-empty set; negative counts from the end). The output is the dense row-major tensor
 * of the kept dims, in order (one element when every dim is reduced). The input is dense
 * row-major, or a strided view: `strides` gives rank element strides (DLPack's
 * convention: any sign, 0 for a broadcast dim) and `in` points at element [0, ..., 0]
 * (docs/runtime.md, "Strided inputs"). */
typedef struct tilec_reduce_desc {
    tilec_op op;
    tilec_dtype dtype;
    int rank;
    int64_t shape[TILEC_MAX_RANK];
    int naxes;
    int axes[TILEC_MAX_RANK];
    tilec_nan nan;   /* max / min of floats */
    bool accumulate; /* out = op(out, reduction) */
    void *stream;    /* CUstream / hipStream_t of the device's primary context; NULL: the
                      * default stream. Calls on different streams may run at once
                      * (docs/runtime.md, "Streams and threads"). */
    const int64_t *strides; /* NULL: dense row-major; else `rank` element strides */
    bool widen;      /* the output in tilec_dtype_wide(dtype), accumulated in it (or in
                      * f32 for 16-bit floats): an i32 sum that passes 2^31 stays exact,
                      * an f16 sum is not rounded to f16 */
    void *out2;      /* the second result, of the output's shape, device memory as `out`
                      * is: argmax / argmin's indices (i64, or i32 with index_i32),
                      * aminmax's maxima (in the output's dtype; out gets the minima).
                      * Required for these three (tilec_op_outputs is 2); in
                      * tilec_reduce_check, the host copy of it after the call. NULL for
                      * every other op */
    bool index_i32;  /* argmax / argmin: out2 holds i32 indices */
    const int64_t *correction; /* var / std: the divisor is max(n - *correction, 0), with
                      * *correction >= 0 (0: numpy's default); NULL: 1, Bessel's (torch's
                      * default). Read during the call only. NULL for every other op */
} tilec_reduce_desc;

/* Reduces `in` into `out` (device memory of the context's backend). The first call for a
 * shape plans, generates, compiles (or finds in the cache) and loads a kernel; later calls
 * launch it. Asynchronous on GPUs (tilec_synchronize). The same input gives the same bits
 * on every run. 16-bit floats accumulate in f32 (a norm2 of bf16 or f32 in f64); integer
 * sums and products wrap. Over an empty axis (a reduced extent 0, the output not empty) a
 * sum, sumsq or norm2 gives +0, a prod 1, a mean, var or std NaN and a logsumexp -inf (when
 * accumulating, the output is left as it was); max, min, argmax, argmin and aminmax over one
 * are TILEC_ERR_INVALID_ARG. argmax and argmin write the values to out and the indices to
 * desc->out2; aminmax the minima to out and the maxima to desc->out2 (docs/runtime.md,
 * "Two outputs"). On the
 * simulator, a reduction whose planned kernel must take more thread-steps than the work
 * budget allows (a lower bound from its loop IR: the steps each element's read costs at
 * least) is TILEC_ERR_BUDGET before it runs (tilec_set_sim_budget). */
TILEC_API tilec_status tilec_reduce(tilec_ctx *ctx, const tilec_reduce_desc *desc, const void *in, void *out);

/* Everything tilec_reduce(ctx, desc, in, out) does but the launch: plan, generate, compile
 * (or find in the disk cache), load, and make the scratch of the plan for desc->stream,
 * zeroed (and waited for) and kept until tilec_close. The next tilec_reduce of the same
 * descriptor on that stream then only enqueues its kernel, so it may be captured in a CUDA
 * graph (cuStreamBeginCapture ... cuStreamEndCapture) and the graph replayed, as long as
 * the context stays open. `in` is not read: its address decides the plan (16-byte loads
 * or not), so pass the pointer the captured call will use. A call not prepared may be
 * captured too: on a stream being captured, tilec_reduce does this work itself, outside
 * the capture (docs/runtime.md, "Streams and threads", its item CUDA graphs); preparing
 * keeps that work, which waits on the host, out of the capturing code. */
TILEC_API tilec_status tilec_reduce_prepare(tilec_ctx *ctx, const tilec_reduce_desc *desc, const void *in);

/* Checks a reduction's result against the double-precision reference (as tilec_check
 * does for a kernel), in host memory: the input, the output before the call (read only when
 * accumulating; NULL otherwise) and after it. */
TILEC_API tilec_status tilec_reduce_check(tilec_ctx *ctx, const tilec_reduce_desc *desc, const void *in,
                                          const void *out_before, const void *out_after,
                                          tilec_check_result *result);

/* The plan of a reduction as text (the merged view, the generated tile program, the
 * variant chosen and why); free with tilec_free. Opens the runtime like tilec_reduce. */
TILEC_API tilec_status tilec_reduce_explain(tilec_ctx *ctx, const tilec_reduce_desc *desc, char **text);

/* ---------------------------------------------------------------------------------------
 * JIT: fused kernels over the last axis (docs/runtime.md, "Fused kernels")
 * ------------------------------------------------------------------------------------ */

/* A fused kernel over `rows` rows of `cols` elements (a tensor's leading dims flattened into
 * rows, its last axis the row), generated as a `.tile` program of copies, reductions and
 * map statements and sent down the same pipeline as any program (tilec_fused_explain shows
 * it). Accumulation is in f32; the results round once into out_dtype.
 *   softmax       y = exp(x - max(x)) / sum(exp(x - max(x))) (a row with NaN or +inf: NaN)
 *   log_softmax   y = x - logsumexp(x)
 *   rms_norm      y = x * rsqrt(mean(x^2) + eps) [* weight]; with stats, rstd per row
 *                 (a 16-bit x: the normalised row rounds to dtype before the weight, as torch)
 *   layer_norm    y = (x - mean) * rsqrt(var + eps) [* weight] [+ bias], var with no
 *                 correction; with stats, mean and rstd per row
 *   add_rms_norm  h = x + residual (rounded to dtype), written back to residual; y = rms_norm(h)
 *   cross_entropy loss = logsumexp(x) - x[target] per row, 0 where target == ignore_index
 *                 (y: rows losses of out_dtype); with stats, lse per row. A target outside
 *                 [0, cols) other than ignore_index gives a NaN loss. */
typedef struct tilec_fused_desc {
    tilec_fused_op op;
    tilec_dtype dtype;     /* x's (and residual's, weight's, bias's): f16, bf16 or f32 */
    tilec_dtype out_dtype; /* y's: f16, bf16 or f32 */
    int64_t rows, cols;    /* rows >= 0, cols >= 1 */
    int64_t row_stride;    /* x's elements from one row to the next (>= cols); 0: cols. The
                            * last axis is dense; y, residual and the stats are dense */
    double eps;            /* rms_norm, add_rms_norm, layer_norm: > 0 and at most FLT_MAX (it is
                            * added to an f32 statistic) */
    bool weight, bias;     /* whether args->weight / args->bias are given (norms) */
    bool stats;            /* layer_norm: mean and rstd; rms_norm, add_rms_norm: rstd;
                            * cross_entropy: lse (f32, a value a row) */
    int64_t ignore_index;  /* cross_entropy */
    void *stream;          /* as tilec_reduce_desc.stream */
    tilec_math math;       /* TILEC_MATH_APPROX: softmax's, log_softmax's and cross_entropy's
                            * exponentials by the GPU's hardware exp (faster; each within
                            * about 2^-21 + |x| 2^-24 relative, subnormal ones flushed; not
                            * the same bits across targets or as the simulator's); EXACT (the
                            * default): the same bits everywhere */
} tilec_fused_desc;

/* Device memory of the call (tilec_mem_alloc; host memory on the simulator). */
typedef struct tilec_fused_args {
    const void *x;
    void *y;               /* rows x cols of out_dtype; cross_entropy: rows losses */
    const void *weight, *bias; /* cols elements of dtype */
    void *residual;        /* add_rms_norm: rows x cols of dtype, read, then overwritten with h */
    void *mean, *rstd;     /* f32, a value a row (stats) */
    const int64_t *target; /* cross_entropy: a class a row */
    void *lse;             /* cross_entropy with stats: f32, a value a row */
} tilec_fused_args;

/* out_dtype = dtype, dense rows, eps 1e-5 (layer_norm) or 1e-6, ignore_index -100, no
 * weight, bias or stats. */
TILEC_API tilec_fused_desc tilec_fused_desc_default(tilec_fused_op op, tilec_dtype dtype, int64_t rows, int64_t cols);
/* Runs the fused kernel (asynchronous on GPUs, as tilec_reduce). The first call for a
 * descriptor plans, generates, compiles and loads; later calls launch. The same bits on
 * every GPU, batch size and the simulator (docs/runtime.md says where a batch size changes
 * the plan; with TILEC_MATH_APPROX the hardware's exponentials differ between kinds of GPU
 * and from the simulator's, which rounds 2^x of the same argument once). Errors:
 * TILEC_ERR_INVALID_ARG (a bad descriptor, a missing or overlapping buffer), and the
 * pipeline's. */
TILEC_API tilec_status tilec_fused(tilec_ctx *ctx, const tilec_fused_desc *desc, const tilec_fused_args *args);
/* The plan as text: the generated tile program(s), the variants chosen; free with tilec_free. */
TILEC_API tilec_status tilec_fused_explain(tilec_ctx *ctx, const tilec_fused_desc *desc, char **text);

/* ---------------------------------------------------------------------------------------
 * Kernels of a program on the runtime's device
 * ------------------------------------------------------------------------------------ */

/* Launches kernel `name` of prog (NULL: the program's only kernel) on the context's runtime
 * (opened as AUTO device 0 when not yet; prog must belong to ctx), for its whole grid, on
 * `stream` (a CUstream / hipStream_t as tilec_reduce_desc.stream; NULL: the default).
 * args[i] is the device memory of parameter i (tilec_mem_alloc; nargs = the kernel's
 * parameter count): dense, row-major, little-endian elements of its dtype, read and
 * written in place. The launch is what tilec_launch_info_get says for the runtime's target
 * (tilec_runtime_target), so a grid statement's grid is sized as it says: for
 * the default of 132 multiprocessors, whatever the device has (the bits do not change).
 * The first call for a program's text, kernel and target (and whether every pointer is
 * 16-byte aligned) verifies the program for the target's warp size,
 * lowers, emits and compiles the kernel (or finds it in the disk cache, as tilec_reduce
 * does), loads it and keeps it in the context; later calls launch it. Nothing of prog is
 * kept: prog may change or be freed after the call (a changed program is a new text).
 * Asynchronous on GPUs (tilec_synchronize); on the simulator the kernel has run, with the
 * simulator's checks, when the call returns. Errors: TILEC_ERR_INVALID_ARG (no such
 * kernel, a func, nargs not the parameter count, a NULL pointer, a pointer whose
 * parameter does not fit the tilec_mem_alloc block it meets, where the backend knows its
 * blocks: the simulator), TILEC_ERR_VERIFY, TILEC_ERR_DISPATCH, TILEC_ERR_COMPILE,
 * TILEC_ERR_UNAVAILABLE (no usable backend, a failed launch), and on the simulator
 * TILEC_ERR_SIMULATE and TILEC_ERR_BUDGET as tilec_simulate; each with a diagnostic. */
TILEC_API tilec_status tilec_run_kernel(tilec_ctx *ctx, tilec_program *prog, const char *name, void *const *args,
                                        size_t nargs, void *stream);

/* ---------------------------------------------------------------------------------------
 * Sharded reductions: a tensor split across ranks (one process or thread per GPU),
 * combined through NCCL in a fixed order (docs/runtime.md, "Sharded reductions")
 * ------------------------------------------------------------------------------------ */

/* A group of ranks, each with its own context. NCCL (libnccl.so.2, or the file
 * TILEC_NCCL_PATH names) is loaded with dlopen when the first of these calls needs it; a
 * missing one is TILEC_ERR_UNAVAILABLE naming what was tried. Callers must run every
 * process with NCCL_NVLS_ENABLE=0 (tilec does not change the environment). */
typedef struct tilec_comm tilec_comm;

/* The group's name: made once (ncclGetUniqueId) by one rank and handed to every rank by
 * the caller (a file, MPI, a socket; a variable when the ranks are threads). */
typedef struct tilec_comm_id {
    unsigned char bytes[128];
} tilec_comm_id;

/* Makes a new group name. Needs no runtime; ctx only takes the diagnostics. */
TILEC_API tilec_status tilec_comm_unique_id(tilec_ctx *ctx, tilec_comm_id *out);

/* Joins group `id` as rank `rank` of `nranks` (1 to 1024), on the device of ctx's runtime
 * (opened on AUTO device 0 when it is not yet). Blocks until every rank has joined (NCCL's
 * ncclCommInitRank). *out is NULL on failure; free it with tilec_comm_free before closing
 * ctx. One thread per rank: a process driving several GPUs runs a thread per GPU, each
 * with its own context. NCCL moves GPU memory only: on a context whose runtime is the
 * simulator it is not asked, and the call fails with TILEC_ERR_UNAVAILABLE saying so
 * (only a stand-in that exchanges host memory, such as tests/fake_nccl.c, runs there). */
TILEC_API tilec_status tilec_comm_init(tilec_ctx *ctx, int nranks, int rank, const tilec_comm_id *id,
                                       tilec_comm **out);
/* Leaves the group (ncclCommDestroy). NULL is allowed. */
TILEC_API void tilec_comm_free(tilec_comm *comm);
TILEC_API int tilec_comm_rank(const tilec_comm *comm);
TILEC_API int tilec_comm_size(const tilec_comm *comm);

/* Every rank of comm calls this together (a collective). `local` describes this rank's
 * shard of the tensor (any layout tilec_reduce takes: dense or strided); the shards are
 * cut along dim `shard_dim` (of the local descriptor, negative from the end) in rank
 * order: rank 0 holds the first extent of that dim, rank 1 the next, and so on; every
 * other extent, the op, dtype, axes and options must be the same on every rank (else
 * every rank returns TILEC_ERR_INVALID_ARG; a NULL correction is the same as 1). `out`
 * (and local->out2) get the whole reduction, in device memory, on every rank, with the
 * same bits on every rank and on every run; they are checked as tilec_reduce checks its
 * outputs (apart from the input; within their blocks on the simulator), and one rank's
 * bad output fails every rank. Every op is taken: a kept shard_dim gathers the ranks' slices; a reduced one
 * folds the ranks' partial states in rank order (docs/runtime.md says which, and when the
 * bits are also those of one context reducing the whole tensor). accumulate is not taken. A rank whose own part fails (a bad
 * descriptor, a budget) still takes part, so every rank returns an error; a failing NCCL
 * call is TILEC_ERR_IO and leaves the group unusable. Synchronous: the call waits for the
 * device after the local reduction and after each all-gather. */
TILEC_API tilec_status tilec_reduce_sharded(tilec_ctx *ctx, tilec_comm *comm, const tilec_reduce_desc *local,
                                            int shard_dim, const void *in, void *out);

/* ---------------------------------------------------------------------------------------
 * Segmented reductions: jagged data, segments of one axis given by offsets
 * (docs/runtime.md, "Segmented reductions")
 * ------------------------------------------------------------------------------------ */

/* Reduces the segments of axis desc->axes[0] (desc->naxes is 1): segment s is elements
 * offsets[s] to offsets[s + 1] - 1 of the axis (CSR's row pointers, CUB's d_offsets),
 * for s < nsegs, and out (and desc->out2) is the dense row-major tensor of desc's shape
 * with that axis's extent replaced by nsegs. `offsets` is device memory of nsegs + 1
 * int64 (int32 with offsets_i32), read on the device only. Each segment's result has the
 * bits tilec_reduce gives for a dense row of its elements (the fold order depends on the
 * length only). Every op and dtype tilec_reduce takes, with its options but strides: the
 * input is dense, and the axis is the innermost one of extent above 1. An empty segment
 * gives what an empty axis gives (a sum +0, a prod 1, a mean, var or std NaN, a
 * logsumexp -inf; left as is when accumulating). Offsets that fall, start below 0 or end
 * past the axis's extent, and empty segments of max, min, argmax, argmin and aminmax, are
 * found on the device without reading out of bounds: those segments' outputs are not
 * written, and the next tilec_synchronize of the context returns TILEC_ERR_INVALID_ARG
 * saying how many outputs (a segment of a row each; a 64-bit count) and which came first
 * (then clears it). With no rows (no kernel runs) and nsegs above 0 the call downloads
 * the offsets and checks them itself, returning TILEC_ERR_INVALID_ARG for bad ones; with
 * nsegs 0 nothing is read or refused (offsets may be NULL). Asynchronous as tilec_reduce
 * otherwise. */
TILEC_API tilec_status tilec_reduce_segmented(tilec_ctx *ctx, const tilec_reduce_desc *desc, const void *offsets,
                                              bool offsets_i32, int64_t nsegs, const void *in, void *out);

#ifdef __cplusplus
}
#endif
#endif /* TILEC_H */
