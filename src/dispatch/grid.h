/*
 * grid.h — whole-tensor reductions: grid-scope statements, where every CTA of the
 * launch works on one reduction and the variant chooses how many CTAs there are.
 *
 * One planner, one fold order, two executors.
 *
 * The planner (plan_view) reads the source region as dims with element strides, sorts
 * them by stride (memory order, outermost first), drops extent-1 dims and merges
 * neighbours that are both reduced (and, for argmax / argmin, neighbours in the flat
 * reduced index too), or both kept and contiguous in the output too. Then
 * the innermost dim decides the layout: reduced, the output reads runs of contiguous
 * elements ("rows"); kept, neighbouring outputs are neighbours in memory ("cols").
 *
 * The fold order of an output depends on the op, the dtype, the reduced extents and the
 * layout only (docs/runtime.md, "Fold order", says it so another implementation can
 * reproduce it):
 *
 *   Pieces. Rows: each run of n elements is cut into pieces of W = 32 * vec * U elements
 *   (vec = 16 / element size, U = 8, or 4 for 16-bit types), the last one shorter. Cols:
 *   a piece is one element. The pieces of an output are numbered o = run * P + piece (P
 *   pieces per run; runs over the other reduced dims in memory order, row-major): M in all.
 *
 *   A piece's value: element i is the leaf k = (i / (32 vec)) * vec + i % vec of lane
 *   (i / vec) % 32; each lane's U * vec leaves are combined by a perfect binary tree over
 *   k (pairs (0,1), (2,3), …, then pairs of those), then the 32 lane values by a perfect
 *   binary tree over the lane (the xor butterfly 1, 2, 4, 8, 16).
 *
 *   Blocks. NB = ceil(M / G) blocks of G = max(ceil(w / min(L, w)), ceil(M / B)) pieces,
 *   for pieces of L elements; w = 16 and B = 4096 for rows, w = 128 and B = 16384 for cols.
 *   Rows: block b folds pieces b, b + NB, b + 2 NB, … (the CTAs of an output sweep it
 *   together); cols: pieces b G, b G + 1, … b G + G - 1 (a thread's rows are neighbours);
 *   left to right. The NB block values are combined by a perfect binary tree over b.
 *
 *   A missing leaf of a tree is the identity, which changes nothing (the identity of a
 *   float sum is -0.0: x + -0.0 is x for every x), so every tree may be cut short where
 *   its leaves end, and any executor that computes the same trees gives the same bits.
 *
 * The executors choose lanes, CTAs, loads and where partial results meet — never the
 * order: so the bits do not depend on the kept extents, the device's multiprocessor count,
 * the warp size or the pointer's alignment.
 *
 * - grid_rows: a group of g lanes per piece (g = 32, fewer for short pieces), 16-byte
 *   loads when the runs start aligned, all of a piece's loads in flight before it is
 *   folded; several short rows in flight per group when a row is one piece.
 * - grid_cols: a thread per (vector of) column(s) and block, 8 to 32 rows in flight: 128
 *   bytes (64 for 16-bit element loads).
 *
 * Both put the block values of a CTA in shared slots and fold them as the tree says; when
 * an output's blocks span several CTAs, each CTA stores its subtree's value in global
 * scratch and the last CTA of the output (a completion counter) folds them.
 */
#ifndef TILEC_GRID_H
#define TILEC_GRID_H

#include "dispatch.h"

enum {
    NB_ROWS = 4096,     /* blocks of an output, rows */
    NB_COLS = 16384,    /* blocks of an output, cols */
    WORK_ROWS = 16,     /* elements a block folds at least, rows */
    WORK_COLS = 128,    /* elements a block folds at least, cols */
    SLOTS = 4096,       /* shared slots a CTA folds at once (16 KB of f32) */
    LANES = 32,         /* lanes of a piece (also on 64-wide warps) */
    FIN_GROUP = 32,     /* CTAs of a column block whose partials one of them folds (cols) */
};

static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t pow2_ceil(int64_t v) {
    int64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}
static inline int64_t pow2_floor(int64_t v) {
    int64_t p = 1;
    while (p * 2 <= v) p <<= 1;
    return p;
}

typedef struct gdim {
    int64_t n;   /* extent */
    int64_t in;  /* element stride in the source buffer (>= 0: negative ones are flipped) */
    int64_t out; /* stride in the flat output index (kept dims; negative when flipped) */
    int64_t xs;  /* stride in the executors' index of outputs, memory order (kept dims) */
    int64_t ri;  /* stride in the flat reduced index, row-major over the reduced dims as
                    indexed (reduced dims; negative when flipped): argmax's index */
    bool red;
} gdim;

typedef struct gplan {
    int rank;
    gdim d[TILEC_MAX_RANK + 1]; /* memory order, outermost first */
    int64_t base;               /* source offset of element 0 */
    int64_t obase;              /* flat output index of the executors' output 0 */
    int64_t rbase;              /* flat reduced index of the executors' element 0 */
    bool out_in_order;          /* the executors' output x is output x */
    int64_t S;                  /* outputs */
    bool rows;                  /* the innermost dim is reduced */
    int vec, U;                 /* elements per 16 bytes; loads per lane of a piece */
    int64_t W, n, ns;           /* piece size; run length and its element stride (rows) */
    int64_t P, L, M, G, NB;     /* pieces per run, elements per piece, pieces, per block, blocks */
    bool aligned;               /* 16-byte loads of whole vectors */
} gplan;

/* 16-byte loads a thread keeps in flight: 8 (128 bytes), or 4 for 16-bit elements, which
 * take a register each; either way 32 registers of loaded data. */
static inline int in_flight(tilec_dtype t) { return tilec_dtype_size(t) == 2 ? 4 : 8; }

static inline lp_expr *ival(lp_kernel *k, lp_type t, int64_t v) { return lp_int(k, t, v); }
static inline lp_expr *add(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_ADD, a, b); }
static inline lp_expr *mul(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_MUL, a, b); }
static inline lp_expr *lt(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_LT, a, b); }
static inline lp_expr *eq(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_EQ, a, b); }
static inline lp_expr *both(lp_kernel *k, lp_expr *a, lp_expr *b) { return lp_binary(k, LO_AND, a, b); }
static inline lp_expr *divc(lp_kernel *k, lp_expr *a, int64_t c) { return c == 1 ? a : lp_binary(k, LO_DIV, a, ival(k, a->type, c)); }
static inline lp_expr *remc(lp_kernel *k, lp_expr *a, int64_t c) { return lp_binary(k, LO_REM, a, ival(k, a->type, c)); }
static inline lp_expr *mulc(lp_kernel *k, lp_expr *a, int64_t c) {
    if (c == 0) return ival(k, a->type, 0);
    return c == 1 ? a : mul(k, a, ival(k, a->type, c));
}

/* What the last CTA of an output (rows) or a column block (cols) gathers into its slots:
 * slot f = i * width + c holds partial first + i of local column c, read from `from`,
 * which holds `stride` partials per output; the identity from partial `stride` on (up to
 * the tree's power of two) and past the last column. Local column c is output row0 +
 * c * out, and global column col0 + c of ncols (col0 NULL: one column, rows). Every index
 * is clamped, so every slot reads in bounds. */
typedef struct partial_gather {
    lp_buf *from;
    lp_expr *first; /* NULL: 0 */
    lp_expr *row0, *col0;
    int64_t stride, width, ncols, out;
    lp_type it;
} partial_gather;

/* The source region as dims in memory order, merged; false (with why) when the region is
 * not a strided view of a global parameter. */
bool grid_plan_view(const dsp_query *q, gplan *g, char *why, size_t wn);
/* CTAs that fill the device once (executors aim for a few such waves). */
int64_t grid_wave(const dsp_query *q);
/* The one index type of a plan's kernel. */
lp_type grid_index_type(const dsp_query *q, const gplan *g);
/* Of the executors' output x: base + the sum over the kept dims of its coordinate times the
 * dim's stride in the source (out false) or the flat output index (out true); its first
 * element's source offset; its flat output index. */
lp_expr *grid_kept_sum(lp_kernel *k, const gplan *g, lp_expr *x, bool out);
lp_expr *grid_kept_offset(lp_kernel *k, const gplan *g, lp_expr *x);
lp_expr *grid_out_index(lp_kernel *k, const gplan *g, lp_expr *x);
/* The source offset of outer index o over the reduced dims (all for cols, all but the run
 * for rows). */
lp_expr *grid_outer_offset(lp_kernel *k, const gplan *g, lp_expr *o);
/* Its flat reduced index (grid_outer_offset's twin), rbase included; for rows, the element
 * i of the run adds i times run_index_stride. */
lp_expr *grid_outer_index(lp_kernel *k, const gplan *g, lp_expr *o);
static inline int64_t run_index_stride(const gplan *g) { return g->d[g->rank - 1].ri; }
/* The trees of the fold order: over registers first, first + step, … (ordered: their
 * elements come in index order, and the present ones first: dsp_combine_ordered); over
 * shared slots (grid.c says how they are laid out). */
void grid_reg_tree(dsp_lower *l, lp_block *b, int first, int n, int step, bool ordered);
bool grid_tree_by_leaf(const dsp_lower *l);
void grid_tree_leaf(dsp_lower *l, lp_block *b, int first, int j, int step, bool ordered, int hlo, int hhi);
void grid_tree_rest(dsp_lower *l, lp_block *b, int first, int n, int step, bool ordered);
void grid_slot_tree(dsp_lower *l, lp_block *b, lp_buf *slots, int64_t leaves, int64_t K, int64_t width);
/* The partials' gather into slots f < n, eight loads in flight per thread. */
void grid_slot_gather(dsp_lower *l, lp_block *b, lp_buf *slots, int64_t n, const partial_gather *p);
/* The block that runs in the CTA completing the count of `total` on `counter`. */
lp_block *grid_when_last(dsp_lower *l, lp_block *b, lp_buf *counter, lp_expr *which, lp_expr *total);
/* Blocks per CTA (grid.c: the waves each layout wants). */
int64_t grid_blocks_per_cta(const dsp_query *q, const gplan *g, int64_t lines, int64_t least, int64_t width,
                            int64_t quarters);
/* n consecutive registers; the first one's number. */
int grid_regs_new(lp_kernel *k, lp_type t, const char *name, int n);

#endif
