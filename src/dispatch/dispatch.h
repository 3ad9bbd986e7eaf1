/*
 * dispatch.h — choosing a lowering for each tile statement, and the lowerings themselves.
 *
 * A registry holds cases {variant, priority, predicates, lower} per operation. For a
 * statement, cases are tried by priority (high first, ties by name); every predicate of a
 * case is evaluated (no short-circuit) and gives "ok" or a reason; the first case whose
 * predicates all pass and whose lower() does not decline wins. `variant=NAME` filters the
 * cases and never falls back. The verdicts are kept for `tilec explain` and for the error
 * when nothing wins.
 *
 * Lowerings append loop IR (src/ir/loop.h) to the kernel being built; each variant lives
 * in its own file (v_*.c) and shares the helpers of lower_util.c.
 */
#ifndef TILEC_DISPATCH_H
#define TILEC_DISPATCH_H

#include "../ir/ir.h"
#include "../ir/loop.h"

/* The target as dispatch sees it. */
typedef struct dsp_target {
    tilec_backend backend; /* CUDA, HIP or SIM (never AUTO here) */
    const char *arch;      /* as given, or the default */
    int warp_size;         /* 32 or 64 */
    bool unaligned;        /* global parameters may not be 16-byte aligned (no vector loads) */
    int sms;               /* multiprocessors of the device, 0 when unknown (DSP_DEFAULT_SMS) */
    const tilec_costs *costs; /* the cost model's constants; NULL: the defaults (dsp_costs) */
    const char *costs_what;   /* where they come from, for explain (with costs) */
} dsp_target;

/* The multiprocessor count grid variants size their launches for when the target does not
 * know its device (tilec emit, the simulator): an H100 / H200 has 132. */
enum { DSP_DEFAULT_SMS = 132 };

/* The cost model's constants of a target: its own, else the defaults. */
const tilec_costs *dsp_target_costs(const dsp_target *t);
/* The constants tilec_costs_load gave ctx, if any, for the target: set into t (TILEC_OK);
 * TILEC_ERR_INVALID_ARG with a diagnostic when they were measured on another arch or warp
 * size. Without such constants, t is left as it is. */
tilec_status dsp_target_take_costs(tilec_ctx *ctx, dsp_target *t);

/* Resolves a public target: defaults, the warp size of an arch. False with a message in
 * why when the target is not usable. */
bool dsp_target_resolve(const tilec_target *in, dsp_target *out, char *why, size_t n);
/* The same, the message as a diagnostic of ctx: TILEC_ERR_INVALID_ARG when not usable. */
tilec_status dsp_target_resolve_diag(tilec_ctx *ctx, const tilec_target *in, dsp_target *out);

/* What the target launches (its warp size, shared memory per CTA, local memory per
 * thread; docs/format.md#limits); out->target points into name. */
void dsp_limits(const dsp_target *t, ir_limits *out, char *name, size_t n);
/* Verifies the program for the target: every rule, and its limits. */
tilec_status dsp_verify(tilec_program *p, const dsp_target *t);

/* What a statement is, for the registry: a reduction inside a CTA or over the grid (of any
 * op of the op table: a case takes every op), or data movement. */
typedef enum dsp_opkind { DSP_REDUCE, DSP_GRID_REDUCE, DSP_COPY, DSP_FILL, DSP_SYNC, DSP_MAP, DSP_CLUSTER_REDUCE,
                          DSP_OPKIND_COUNT } dsp_opkind;
dsp_opkind dsp_opkind_of(const ir_stmt *st);
/* What a statement is, for messages: "sum", "grid max", "copy" (into buf, n bytes). */
const char *dsp_stmt_what(const ir_stmt *st, char *buf, size_t n);

/* ---- the in-kernel cost model (cost.c) ----------------------------------------------------
 *
 * A candidate lowering of a reduction inside a CTA, warpgroup or warp (variants `rows` and
 * `cols`) and its estimated cost. The model counts, from the source's real layout, the
 * shared-memory wavefronts of every warp-wide load (32 banks of 4 bytes), the shuffles,
 * the combines, the longest dependent chain and the barriers, and turns them into cycles
 * with constants measured on an H200 (docs/dispatch.md#the-cost-model). */
typedef enum dsp_orient {
    DSP_ALONG_REDUCED, /* `rows`: the lanes of a group run along the reduced elements of an output */
    DSP_ALONG_KEPT,    /* `cols`: neighbouring threads take neighbouring outputs */
} dsp_orient;

typedef struct dsp_tile_plan {
    dsp_orient orient;
    int lanes;    /* rows: lanes per output (a power of two up to the warp), or the instance's
                     threads (> a warp: a butterfly per warp, then shared slots) */
    int vec;      /* elements a load reads (1, 2, 4, 8: at most 16 bytes) */
    int accs;     /* independent accumulators a lane (1, 2, 4) */
    int inflight; /* rows: outputs a group works on at once */
    int batch;    /* loads a lane issues before it folds them (every lane has the same count of
                     loads, a multiple of it), or 0: one at a time, guarded */
    int slices;   /* cols: threads an output's elements are split over (their partial results
                     meet in shared slots) */
    /* what the model counted, for one instance, all its warps */
    int64_t loads;      /* warp-wide load instructions */
    int64_t wavefronts; /* their shared-memory wavefronts (global: 128-byte transfers) */
    int64_t shuffles;   /* warp-wide shuffles */
    int64_t chain;      /* the longest dependent chain, cycles */
    int barriers;
    double cycles1, cycles4; /* the estimates: one instance per multiprocessor, and four */
} dsp_tile_plan;

/* The measured constants (cycles; docs/dispatch.md gives them with the run): the
 * defaults, or a target's own (dsp_target.costs: tilec_calibrate's). */
typedef tilec_costs dsp_cost_consts;
extern const dsp_cost_consts dsp_costs;

/* Facts about one statement that predicates and lowerings read. */
typedef struct dsp_query {
    const dsp_target *target;
    const tilec_kernel *kernel;
    const ir_stmt *st;
    dsp_opkind opkind;
    int threads;       /* of the CTA */
    int ws;            /* warp size */
    int inst_size;     /* threads in one full instance of the scope */
    int inst_count;    /* instances in the CTA */
    int inst_last;     /* threads in the last instance (smaller when the last warp is partial) */
    bool selected;     /* one instance chosen with scope[k] */
    /* reductions only */
    int src_rank;             /* rank of the source region as indexed */
    int64_t src_dims[TILEC_MAX_RANK];
    bool reduced[TILEC_MAX_RANK];
    int64_t red_len;          /* elements folded into one output */
    int64_t spatial_len;      /* outputs */
    int group;                /* lanes per output for shuffle trees (power of two) */
    /* the cost model's cheapest plan of each family (cost.c), for a reduction inside a
       CTA, warpgroup or warp whose operands are shared or global */
    bool has_plan[2];
    dsp_tile_plan plan[2]; /* by dsp_orient */
} dsp_query;


enum { DSP_MAX_PLANS = 160 };
/* Every candidate of the statement (shared or global source, not thread scope), cheapest
 * first; with orient >= 0 only that family. Returns how many. */
int dsp_tile_plans(const dsp_query *q, int orient, dsp_tile_plan *out, int max);
/* The cheapest plan of a family (orient), false when it has none. */
bool dsp_tile_best(const dsp_query *q, dsp_orient orient, dsp_tile_plan *out);
/* Loads a lane issues together: the largest divisor b of count (loads each lane makes) with
 * b * per elements at most budget, whose elements fill the accs accumulators evenly (b * per
 * a multiple of accs) unless b is all of them; 0 when none is. */
int dsp_batch(int64_t count, int per, int accs, int budget);
/* The (output, reduced element) pairs at which a thread starts a batch of loads: outputs
 * s0 + k * s_step (k < ns), elements a * a_step + i * i_step (a < na, i < ni). */
typedef struct dsp_starts {
    int64_t s0, s_step, ns, a_step, na, i_step, ni;
} dsp_starts;
/* Whether the source offset of reduced element e + c follows from element e's offset p the
 * same way at every start: (p ^ *x) + *a. Without a swizzle that is a distance (*x = 0) where
 * elements e and e + c sit the same way for every start; a swizzle that only permutes the
 * chunks the step crosses gives an XOR, whose bits that p never has set go to *a (so the
 * compiler folds them into the load). False when neither holds, or there are too many
 * starts to check (the starts are enumerated, each one exactly). */
bool dsp_load_step(const dsp_query *q, const dsp_starts *st, int64_t c, int64_t *x, int64_t *a);
/* The plan as a few words: "8 lanes an output, 16-byte loads, 2 accumulators". */
void dsp_plan_text(const dsp_query *q, const dsp_tile_plan *p, char *buf, size_t n);
/* Whether a load of vec elements is aligned and inside one run for every output (rows:
 * along the reduced elements; cols: along neighbouring outputs). */
bool dsp_vec_ok(const dsp_query *q, dsp_orient orient, int vec);

void dsp_query_init(dsp_query *q, const dsp_target *t, const tilec_kernel *k, const ir_stmt *st);

/* Where a lowering writes, and what it knows. */
typedef struct dsp_lower {
    lp_kernel *k;
    lp_block *into;
    const dsp_query *q;
    int64_t shared_limit; /* bytes of shared memory the kernel may use; a variant whose slots
                             would pass it declines (0: no limit) */
    const char *limit_what; /* "a CTA gets on CUDA sm_90", for that reason */
    lp_expr *count; /* the elements folded into the output being stored, where it varies
                       (a segment's length: v_grid_segments.c); NULL: red_len */
    lp_expr *frag_at; /* the register of a fragment destination that the output being stored
                         goes to (v_fragment.c); dsp_region_offset of a fragment is it */
} dsp_lower;

/* The plan a lowering takes: the cheapest of the family, or, when its shared slots would
 * take the kernel past l's shared-memory limit, the cheapest without slots (rows: a group
 * of at most a warp; cols: one slice). False when the family has no plan. */
bool dsp_tile_fit(const dsp_lower *l, dsp_orient orient, dsp_tile_plan *out);
/* Bytes of shared memory the kernel's allocations and a lowering's slots take. */
int64_t dsp_shared_bytes(const lp_kernel *k);

/* A predicate: true when it holds; otherwise a reason in why (one sentence, no period). */
typedef bool (*dsp_pred_fn)(const dsp_query *q, char *why, size_t n);
typedef struct dsp_pred {
    const char *name;
    dsp_pred_fn check;
} dsp_pred;

/* A lowering: true when done; false to decline, with a reason in why. */
typedef bool (*dsp_lower_fn)(dsp_lower *l, char *why, size_t n);

enum { DSP_MAX_PREDS = 8 };

typedef struct dsp_case {
    const char *variant;
    int priority;
    unsigned ops;     /* bit per dsp_opkind */
    unsigned targets; /* bit per tilec_backend */
    dsp_pred preds[DSP_MAX_PREDS];
    dsp_lower_fn lower;
    const char *summary; /* one line for docs and explain */
    bool fragments;      /* for statements on fragments (v_fragment.c), and only those */
} dsp_case;

#define DSP_OPS_REDUCE (1u << DSP_REDUCE)
#define DSP_OPS_GRID (1u << DSP_GRID_REDUCE)
#define DSP_OPS_CLUSTER (1u << DSP_CLUSTER_REDUCE)
#define DSP_ALL_TARGETS ((1u << TILEC_BACKEND_CUDA) | (1u << TILEC_BACKEND_HIP) | (1u << TILEC_BACKEND_SIM))

/* The cases, one table per variant file. */
/* Every registered case (for tests that walk the registry): *cases gets the array. */
size_t dsp_registry(const dsp_case *const **cases);

extern const dsp_case dsp_case_shared, dsp_case_cta_tree, dsp_case_sequential,
    dsp_case_smem_tree, dsp_case_local, dsp_case_local_smem, dsp_case_copy, dsp_case_fill,
    dsp_case_sync, dsp_case_grid_rows, dsp_case_grid_cols, dsp_case_rows, dsp_case_cols, dsp_case_fragment,
    dsp_case_fragment_copy, dsp_case_fragment_fill, dsp_case_map, dsp_case_fragment_map, dsp_case_cluster;
/* Whether a statement reads or writes a fragment (a local buffer with a layout). */
bool dsp_stmt_has_fragment(const ir_stmt *st);
/* How the fragment variant lowers q's reduction, in words (what `explain` prints). */
void dsp_fragment_plan(const dsp_query *q, char *out, size_t n);

/* How the cluster variant lowers q's cluster reduction, in words (what `explain` prints). */
void dsp_cluster_plan(const dsp_query *q, char *out, size_t n);

/* How the map variants lower q's map statement, in words (what `explain` prints): vectors
 * or elements, and how each operand is read. */
void dsp_map_plan(const dsp_query *q, char *out, size_t n);

/* ---- the verdicts of one dispatch ------------------------------------------------------ */

typedef struct dsp_verdict {
    const dsp_case *c;
    int npreds;
    bool pred_ok[DSP_MAX_PREDS];
    char reasons[DSP_MAX_PREDS][200];
    bool declined;
    char declined_why[200];
    bool chosen;
} dsp_verdict;

enum { DSP_MAX_CASES = 24 };

typedef struct dsp_report {
    dsp_verdict v[DSP_MAX_CASES];
    int n;
    int chosen; /* index in v, or -1 */
    enum { DSP_FOUND, DSP_UNKNOWN_VARIANT, DSP_NO_CASES, DSP_ALL_REJECTED } outcome;
} dsp_report;

/* Dispatches one statement: fills the report and, when a case wins and l is not NULL,
 * lowers into l. With l NULL every case is evaluated and the winner is only marked. */
void dsp_dispatch(const dsp_query *q, dsp_lower *l, dsp_report *rep);
/* Appends the report as the table `tilec explain` prints. */
void dsp_print_report(ir_str *s, const dsp_query *q, const dsp_report *rep, int indent);
/* Reports a failed dispatch as a diagnostic at the statement. */
void dsp_report_error(tilec_program *p, const dsp_query *q, const dsp_report *rep);

/* tilec_explain for a resolved target (the JIT explains a plan for its device); flags as
 * tilec_explain's (TILEC_EXPLAIN_LOOP, TILEC_EXPLAIN_SHORT). */
tilec_status dsp_explain(tilec_program *prog, const dsp_target *t, unsigned flags, char **text);

/* Lowers a whole verified kernel; k->variants says what each statement became. NULL when
 * a statement has no variant (diagnostics say which; *why = TILEC_ERR_DISPATCH) or memory
 * ran out (*why = TILEC_ERR_NOMEM); why may be NULL. */
lp_kernel *dsp_lower_kernel(tilec_program *p, const tilec_kernel *k, const dsp_target *t, tilec_status *why);

/* The pipeline up to loop IR, the one every caller takes (tilec_emit, tilec_compile,
 * tilec_simulate, tilec_launch_info_get, tilec_explain --dump=loop, the JIT): verifies
 * the program for the target, then lowers every kernel, or only kernel `only` when it is
 * not NULL. *out gets one lowered kernel per kernel of the program, in order (NULL for the
 * ones not lowered; arena memory). */
tilec_status dsp_lower_program(tilec_program *p, const dsp_target *t, const tilec_kernel *only, lp_kernel ***out);

/* ---- helpers shared by the lowerings (lower_util.c) ------------------------------------- */

/* Expressions for the executing instance: its index, the thread's index inside it, and
 * its size (a constant unless the last warp is partial). */
lp_expr *dsp_inst_id(dsp_lower *l);
/* The CTA's rank in its thread-block cluster (cta_in_cluster): its index in the grid modulo
 * the cluster's size. */
lp_expr *dsp_cluster_rank(dsp_lower *l);
lp_expr *dsp_inst_tid(dsp_lower *l);
lp_expr *dsp_inst_size(dsp_lower *l);
/* Threads of the smallest instance the statement runs in: the chosen one's, or, when every
 * instance runs it, the last's (a partial warp when threads is not a multiple of it). */
int dsp_inst_threads(const dsp_query *q);

/* The value a fill statement stores into a buffer of type t. */
lp_expr *dsp_fill_value(dsp_lower *l, lp_type t);
/* The element offset of region element `flat` (row-major over the region's shape as
 * indexed), in the region's buffer. */
lp_expr *dsp_region_offset(dsp_lower *l, const ir_region *r, lp_expr *flat);
/* The element offset of the region element at coords (one per dimension of the region's
 * shape as indexed, any integer type), in the region's buffer (swizzled where it is). */
lp_expr *dsp_region_offset_at(dsp_lower *l, const ir_region *r, lp_expr *const *coords);
/* A region whose kept dimensions are row-major without gaps: element e is at base + e. */
bool dsp_region_dense(const ir_region *r);
/* Whether the offset of the region's first element is a multiple of vec for every id. */
bool dsp_region_base_aligned(const ir_region *r, int vec);
/* Whether every run of vec elements of the region (numbered row-major, each run starting at
 * a multiple of vec) is vec consecutive elements of its buffer, the first aligned to vec:
 * the last kept dimension of stride 1 and of an extent vec divides, every other kept one
 * (of extent above 1) of a positive stride vec divides — rows at a stride qualify — and
 * dsp_region_base_aligned. Whether the buffer's address is known is the caller's test. */
bool dsp_region_vector_runs(const ir_region *r, int vec);
/* Whether b's address is unknown when the code is generated, so that loads wider than an
 * element need a test at run time (or must not be used): a func's parameter (its caller
 * chooses the address), or a kernel's global parameter on a target told that its
 * pointers may not be 16-byte aligned (dsp_target.unaligned: the JIT's and
 * tilec_run_kernel's plans for such pointers). */
bool dsp_address_unknown(const dsp_query *q, const tilec_buffer *b);
/* The source offset of output s, reduced element r (r over the reduced axes in order). */
lp_expr *dsp_reduce_src_offset(dsp_lower *l, lp_expr *s, lp_expr *r);
/* off[b] = the source offset of output s, reduced element e + c[b], for the B loads of a
 * batch: where dsp_load_step finds a constant step for every b > 0, load 0's offset is
 * computed once into a register (in `into`) and the others are it plus (or XOR) a constant,
 * which the compiler folds into the load; else each is computed on its own. */
void dsp_batch_offsets(dsp_lower *l, lp_block *into, lp_expr *s, lp_expr *e, const int64_t *c, int B,
                       const dsp_starts *st, lp_expr **off);

/* The reduction's identity and combine, in the accumulation type. */
lp_type dsp_acc_type(const dsp_query *q);
/* whether the state is one 4-byte register: no key and an f32, i32 or u32 accumulator (sum, max,
 * min, prod, sumsq, mean of 32-bit and narrower types, norm2 of f16; not norm2 of bf16, whose
 * state is wider) -- the states a launch bound can squeeze without spilling */
bool dsp_small_state(const dsp_query *q);
lp_expr *dsp_identity(dsp_lower *l);
/* combine(a, b); an op whose combine takes several steps (logsumexp's merge) writes them
 * into `into` first, where the value is used. */
lp_expr *dsp_combine(dsp_lower *l, lp_block *into, lp_expr *a, lp_expr *b);
/* The same where a's elements all come before b's in index order and b is the identity
 * only where a is too: for argmax / argmin a compare of the ranks alone (ties keep a). */
lp_expr *dsp_combine_ordered(dsp_lower *l, lp_block *into, lp_expr *a, lp_expr *b);
/* Index keys of 32-bit ranks (argmax / argmin of a value of 32 bits or fewer; not the wide
 * keys of f64 and i64): an element's key is dsp_rank_key(dsp_element_rank(x), index), a
 * 32-bit rank high (the better value the higher, NaN placed by the policy) and the index's
 * complement low, so of elements in rising index order the greatest key is that of the
 * first one of the highest rank. A lowering may fold such elements on their ranks alone
 * and make the one key of the winner (grid_rows' pieces: v_grid_rows.c). */
bool dsp_ranks(const dsp_query *q);
lp_expr *dsp_element_rank(dsp_lower *l, lp_expr *x);
lp_expr *dsp_rank_key(dsp_lower *l, lp_expr *rank, lp_expr *index);
/* Whether the statement's op folds many partial results at once (logsumexp: the maximum,
 * then one sum) rather than by pairs (grid_reg_tree); dsp_fold_regs, for such an op, folds
 * the registers first, first + step, … (n) into first. */
bool dsp_folds_many(const dsp_query *q);
void dsp_fold_regs(dsp_lower *l, lp_block *into, int first, int n, int step);
/* logsumexp's many-at-once fold of n states given as values, not keys: m[i] of
 * dsp_lse_value_type (the element, or -inf for a missing one) and s[i] (1, or +0 for a
 * missing one); the state written to register dst. The same operations as dsp_fold_regs on
 * the keys of those states, so the same bits, without a key of two floats made for each (a
 * lane's 32 leaves of a piece held 64 registers of keys: 109 registers a thread in bf16). */
lp_type dsp_lse_value_type(const dsp_query *q);
void dsp_lse_fold_values(dsp_lower *l, lp_block *into, int dst, int n, lp_expr *const *m, lp_expr *const *s);
/* The state in register acc and the n source elements x (each the state (x, 1); n at most
 * LSE_FOLD_MAX) folded at once into acc: one exponential an element and one for the state,
 * where merging the elements one by one rescales the state at each. */
enum { LSE_FOLD_MAX = 64 };
/* The exponentials' constants (maps and logsumexp): ln 2, log2(e) (each rounded to f64, then
 * to the type that takes them), and the rounders 1.5 * 2^23 and 1.5 * 2^52: t + rounder
 * rounds t to an integer k, in its low bits. */
#define DSP_LN2 0x1.62e42fefa39efp-1
#define DSP_LOG2E 0x1.71547652b82fep0
#define DSP_ROUNDER32 12582912.0
#define DSP_ROUNDER64 6755399441055744.0
/* The f32 exponential's polynomial: e^f = sum of dsp_exp_minimax[n] f^n, |f| <= 1.0005 ln2 / 2
 * (lower_util.c), shared by exp maps and logsumexp's exponential. */
extern const double dsp_exp_minimax[7];
void dsp_lse_fold_elements(dsp_lower *l, lp_block *into, int acc, int n, lp_expr *const *x);
/* A source element as the fold takes it: converted to the accumulation type and lifted
 * (squared for sumsq and norm2; with its index, the flat offset in the reduced sub-space in
 * row-major order of the reduced axes, as one key for argmax and argmin; as its offset
 * from the slice's `shift` and that offset's square for var and std). Partial results are
 * combined as they are. */
lp_expr *dsp_element(dsp_lower *l, lp_expr *x, lp_expr *index, lp_expr *shift);
/* For an op whose elements are lifted relative to their slice (var, std: dsp_element's
 * shift), an f64 register holding the source element at `offset`, one of the slice's,
 * loaded into `into`: every partial result of one output must be lifted from the same one
 * (lower_util.c, "Variance"). NULL for the other ops. */
lp_expr *dsp_shift(dsp_lower *l, lp_block *into, lp_expr *offset);
/* Stores an accumulated value to output s: applies accum, finishes the op (a mean's
 * division, a norm's square root, a key's value and index into the two destinations) and
 * converts to the dtype. */
void dsp_store_output(dsp_lower *l, lp_block *into, lp_expr *s, lp_expr *acc);
/* acc = combine(acc, src[s, r]) for r = first, first + stride, ... < red_len. */
void dsp_accumulate(dsp_lower *l, lp_block *into, int acc, lp_expr *s, lp_expr *first, lp_expr *stride);
/* Butterfly over `width` lanes: log2(width) xor steps with masks 1, 2, 4, ... */
/* The butterfly over the given lane masks of a warp of `width` (each an XOR shuffle and a
 * combine; logsumexp's: the maxima first, then the rescaled sums): every lane ends with
 * the fold over the lanes that differ from it in those bits. */
void dsp_xor_masks(dsp_lower *l, lp_block *into, int acc, const int *masks, int n, int width);
void dsp_xor_tree(dsp_lower *l, lp_block *into, int acc, int width);
/* ceil(a / b) for positive integer expressions. */
lp_expr *dsp_ceil_div(dsp_lower *l, lp_expr *a, lp_expr *b);
lp_expr *dsp_i32(dsp_lower *l, int64_t v);
/* The one rule for index types: an index that stays below `bound` but may be stepped past
 * it by up to `step` (a loop's last increment, a guarded load a turn ahead), and what is
 * computed from it, is 32-bit when bound + step fits in int32, else 64-bit. */
lp_type dsp_index_type(int64_t bound, int64_t step);
/* The largest stride of a loop over the lanes or threads of an instance: a constant
 * stride's value, else the CTA's threads or the warp size, whichever is larger. */
int64_t dsp_lane_step(const dsp_lower *l, const lp_expr *stride);

/* `rows` and `cols` (v_rows.c): whether the model puts family o first (a forced variant
 * needs only a plan of its family); and the lowering of plan p by emit, into l->into, with a
 * test of a func parameter's alignment when p loads several elements at once (the other
 * path loads the same elements one at a time, so the fold order and the bits are the same). */
bool dsp_pred_cheapest(const dsp_query *q, dsp_orient o, char *why, size_t n);
void dsp_emit_checked(dsp_lower *l, const dsp_tile_plan *p,
                      void (*emit)(dsp_lower *, lp_block *, const dsp_tile_plan *, bool scalar));

/* Registers first .. first + vec - 1 = src[off .. off + vec): one vector load (off a
 * multiple of vec), or with `scalar` vec loads of one element, in the same order. */
void dsp_load_run(dsp_lower *l, lp_block *into, const lp_buf *src, lp_expr *off, int first, int vec, bool scalar);

/* The halving tree of n (a power of two) accumulators, each `width` registers wide
 * (neighbouring outputs): acc[i] ⊕= acc[i + n/2] for i < n/2, then n/4, …, into acc[0]. */
void dsp_merge_accs(dsp_lower *l, lp_block *into, int acc, int n, int width);

/* Predicates several variants share. */
bool dsp_pred_shared_or_global(const dsp_query *q, char *why, size_t n);
bool dsp_pred_not_thread_scope(const dsp_query *q, char *why, size_t n);
bool dsp_pred_scope_on_target(const dsp_query *q, char *why, size_t n);
/* A fragment's statement: warps of 32 lanes (NVIDIA's MMA layouts) and every lane of the
 * instance present (v_fragment.c; the map of a fragment takes it too). */
bool dsp_pred_frag_warps(const dsp_query *q, char *why, size_t n);


/* ---- segmented reductions (v_grid_segments.c) ------------------------------------------- */

/* A reduction of segments: for each of `rows` rows of `extent` elements, the segments
 * [O[s], O[s + 1]) of the row, s < nsegs, each folded in the order of a dense row of its
 * length (docs/runtime.md, "Segmented reductions"). */
typedef struct dsp_segmented {
    tilec_op op;
    tilec_nan nan;
    bool accum;
    int64_t correction; /* var / std */
    int64_t rows, extent, nsegs;
    int workers;        /* groups of 32 lanes an output: 1, or every group of the CTA */
    int ctas;           /* CTAs an output (a power of two; > 1 only with every group) */
    bool index64;       /* positions in 64 bits where 32 would do (tests: the wide path on small data) */
} dsp_segmented;

/* Lowers kernel tk of p, whose parameters are A: the input [rows, extent], B: the output
 * [rows, nsegs], C: the second output (an op with two), O: the nsegs + 1 offsets (i32 or
 * i64) and Z: u32[16], the status words (docs/runtime.md); tk has no statements. NULL
 * with *why set as dsp_lower_kernel's. */
lp_kernel *dsp_lower_segmented(tilec_program *p, const tilec_kernel *tk, const dsp_target *t, const dsp_segmented *sg,
                               tilec_status *why);

/* Elements of a piece of a segment of dtype dt (the fold order's W of a dense row): the
 * runtime sizes its workers by it. */
int64_t dsp_segment_piece(tilec_dtype dt);

/* The status words a segmented kernel writes (u32 each; 64-bit values in two, low first).
 * A count is its low word and its carry (the high word, which the add that wraps the low
 * one increments): 64 bits, so it never wraps to 0, "no error". */
enum {
    DSP_SEG_BAD,        /* outputs (a row's segment) whose offsets were bad (counted, low word) */
    DSP_SEG_EMPTY,      /* empty outputs of an op that has no value for them (counted, low word) */
    DSP_SEG_BAD_AT = 2, /* the first bad one counted: its number, offsets, the extent */
    DSP_SEG_BAD_LO = 4,
    DSP_SEG_BAD_HI = 6,
    DSP_SEG_EXTENT = 8,
    DSP_SEG_EMPTY_AT = 10, /* the first empty one counted */
    DSP_SEG_OP = 12,       /* its op */
    DSP_SEG_BAD_CARRY = 13, /* the high words of the two counts */
    DSP_SEG_EMPTY_CARRY = 14,
    DSP_SEG_BAD_SEEN = 15,   /* 0 until a record is written: the add that finds it 0 writes it, */
    DSP_SEG_EMPTY_SEEN = 16, /* so a count wrapping round to 0 never overwrites the first */
    DSP_SEG_WORDS = 18
};

#endif
