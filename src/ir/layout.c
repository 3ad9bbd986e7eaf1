/*
 * layout.c — register-fragment layouts (TILEC_LAYOUT_LIST, docs/format.md#fragment-layouts):
 * a `local` buffer that a warp or a warpgroup holds together, each element in one register
 * of one lane (or, replicated, of several).
 *
 * Every layout is F2-linear: the element of register r of lane l of warp w is the XOR of a
 * basis vector for each set bit of r, then of l, then of w. The extents are powers of two,
 * so a coordinate's bits are a field of the row-major flat index and the XOR of coordinates
 * is the XOR of flat indices: the resolved basis (tilec_buffer.frag) is flat indices. The
 * presets are such bases, from the PTX ISA's formulas (lane l, g = l >> 2, t = l & 3):
 *
 *   mma_m16n8k16_c  [16, 8n] f32: c0, c1 at (g, 2t + (i & 1)), c2, c3 at (g + 8, …); fragment
 *                   j of the n along the columns: reg bits (0,1) (8,0) (0,8) (0,16) …
 *   mma_m16n8k16_a  [16, 16n] 16-bit: a0, a1 (g, 2t + i & 1), a2, a3 (g + 8, …), a4, a5
 *                   (g, 2t + 8 + …), a6, a7 (g + 8, 2t + 8 + …): reg bits (0,1) (8,0) (0,8) (0,16) …
 *   mma_m16n8k16_b  [16, 8n] 16-bit, k x n: b0, b1 (2t + i & 1, g), b2, b3 (2t + 8 + …, g):
 *                   reg bits (1,0) (8,0) (0,8) …; lane bits (2,0) (4,0) (0,1) (0,2) (0,4)
 *   wgmma_m64nNk16_d [64, N] f32, a warpgroup: register i of warp w at row 16w + g +
 *                   8 ((i >> 1) & 1), column 8 (i >> 2) + 2t + (i & 1): reg bits (0,1) (8,0)
 *                   (0,8) …; warp bits (16,0) (32,0)
 *
 * and the C / A lanes: t's bits (0,2) (0,4), g's (1,0) (2,0) (4,0).
 */
#include "ir.h"

#include <string.h>

static bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
static int log2i(int64_t v) {
    int n = 0;
    while (((int64_t)1 << n) < v) n++;
    return n;
}

/* The flat row-major index of coordinates c of b (every extent a power of two). */
static int64_t flat(const tilec_buffer *b, const int64_t *c) {
    int64_t f = 0;
    for (int d = 0; d < b->rank; d++) f = f * b->shape[d] + c[d];
    return f;
}

/* an error at the layout's position, and false */
#define FAIL(...) (ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col, __VA_ARGS__), false)

/* A 2-dimensional preset's basis: reg bits, then the 5 lane bits, then warp bits, as
 * (row, column) pairs. */
typedef struct rc {
    int64_t r, c;
} rc;

/* The presets (TILEC_LAYOUT_LIST's), one row each: the shape, the first register bit, then
 * (8, 0) and the columns' (0, 8), (0, 16), … up to the shape, the lane bits, and a
 * warpgroup's warp bits (16, 0), (32, 0). */
static const rc lanes_c[5] = {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}}; /* t's bits, then g's */
static const rc lanes_b[5] = {{2, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 4}}; /* k x n: t along k, g along n */
static const struct preset_row {
    tilec_layout_kind kind;
    int64_t rows, min_cols; /* columns: powers of two from min_cols to 256 */
    rc first;
    const rc *lanes;
    int nwarp;
    const char *want;
} presets[] = {
    {TILEC_LAYOUT_MMA_C, 16, 8, {0, 1}, lanes_c, 0, "[16, 8n] (n fragments of n8 side by side, n a power of two up to 32)"},
    {TILEC_LAYOUT_MMA_A, 16, 16, {0, 1}, lanes_c, 0, "[16, 16n] (n fragments of k16 side by side, n a power of two up to 16)"},
    {TILEC_LAYOUT_MMA_B, 16, 8, {1, 0}, lanes_b, 0, "[16, 8n] (n fragments of n8 side by side, n a power of two up to 32)"},
    {TILEC_LAYOUT_WGMMA_D, 64, 8, {0, 1}, lanes_c, 2, "[64, N] (N a power of two from 8 to 256)"},
};
_Static_assert(sizeof presets / sizeof presets[0] == TILEC_LAYOUT_COUNT - 2, "a row for every preset (not none, linear)");

static int preset(const tilec_buffer *b, tilec_layout_kind kind, rc *v, int *nreg, int *nwarp, const char **want) {
    int64_t R = b->shape[0], C = b->rank == 2 ? b->shape[1] : 0;
    const struct preset_row *row = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (presets[i].kind == kind) row = &presets[i];
    if (!row) return -1;
    *want = row->want;
    if (R != row->rows || C < row->min_cols || C > 256 || !pow2(C)) return -1;
    int n = 0;
    v[n++] = row->first;
    v[n++] = (rc){8, 0};
    for (int64_t c = 8; c < C; c <<= 1) v[n++] = (rc){0, c};
    *nreg = n;
    for (int i = 0; i < 5; i++) v[n++] = row->lanes[i];
    *nwarp = row->nwarp;
    if (row->nwarp) {
        v[n++] = (rc){16, 0};
        v[n++] = (rc){32, 0};
    }
    return n;
}

/* where linear bit i was written, else the layout's position */
static ir_pos bit_at(const tilec_buffer *b, int i, ir_pos at) {
    return b->layout.kind == TILEC_LAYOUT_LINEAR && b->layout_bit_pos[i].line ? b->layout_bit_pos[i] : at;
}

bool ir_check_layout(tilec_program *p, tilec_buffer *b, ir_pos at) {
    const tilec_layout *L = &b->layout;
    const char *kn = tilec_layout_name(L->kind);
    if (L->kind == TILEC_LAYOUT_NONE) {
        b->frag_reg = b->frag_lane = b->frag_warp = 0;
        if (!b->has_strides) b->span = b->elems;
        return true;
    }
    if (!kn) {
        ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col, "'%s': layout %d is not a tilec_layout_kind",
                    b->name, (int)L->kind);
        return false;
    }
    if (b->space != TILEC_SPACE_LOCAL)
        return FAIL("'%s' is a %s buffer; a fragment layout places a local buffer in a warp's registers", b->name,
                    tilec_space_name(b->space));
    if (b->has_strides)
        return FAIL("'%s' has strides and a layout; a fragment layout says where each element is, so leave "
                    "strides= out", b->name);
    for (int d = 0; d < b->rank; d++)
        if (!pow2(b->shape[d])) {
            ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col,
                        "'%s': extent %lld of dimension %d is not a power of two; a fragment layout's extents "
                        "are (pad the tile to the next power of two)",
                        b->name, (long long)b->shape[d], d);
            return false;
        }
    int64_t v[TILEC_LAYOUT_MAX_BITS];
    int nreg, nlane = 5, nwarp, n;
    if (L->kind == TILEC_LAYOUT_LINEAR) {
        nreg = L->nreg;
        nwarp = L->nwarp;
        if (L->nlane != 5)
            return FAIL("'%s': a linear layout has 5 lane bits (a warp of 32 lanes), not %d%s", b->name, L->nlane,
                        L->nlane < 5 ? "; give every lane bit, (0, 0) where the lanes hold the same elements" : "");
        if (nwarp < 0 || nwarp > 5)
            return FAIL("'%s': a linear layout has no warp bits (a warp's), 2 (a warpgroup's) or 1, 3, 4 or 5 (a CTA's of "
                        "64, 256, 512 or 1024 threads), not %d", b->name, nwarp);
        if (nreg < 0 || nreg > 8)
            return FAIL("'%s': a linear layout has 0 to 8 register bits (up to 256 elements a lane), not %d", b->name,
                        nreg);
        n = nreg + nlane + nwarp;
        for (int i = 0; i < n; i++) {
            for (int d = 0; d < b->rank; d++)
                if (L->basis[i][d] < 0 || L->basis[i][d] >= b->shape[d]) {
                    ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, bit_at(b, i, at).line, bit_at(b, i, at).col,
                                "'%s': coordinate %d of the layout's %s bit %d is %lld, outside extent %lld",
                                b->name, d, i < nreg ? "register" : i < nreg + nlane ? "lane" : "warp",
                                i < nreg ? i : i < nreg + nlane ? i - nreg : i - nreg - nlane,
                                (long long)L->basis[i][d], (long long)b->shape[d]);
                    return false;
                }
            v[i] = flat(b, L->basis[i]);
        }
    } else {
        if (b->rank != 2)
            return FAIL("'%s' has a %s layout, which is two-dimensional (rows, columns)", b->name, kn);
        bool f32 = L->kind == TILEC_LAYOUT_MMA_C || L->kind == TILEC_LAYOUT_WGMMA_D;
        if (f32 ? b->dtype != TILEC_F32 : (b->dtype != TILEC_F16 && b->dtype != TILEC_BF16)) {
            ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col,
                        "'%s' is %s; the %s layout is of %s (%s)", b->name, tilec_dtype_name(b->dtype), kn,
                        f32 ? "f32 accumulators" : "f16 or bf16 operands",
                        f32 ? "an f16 accumulator packs two elements a register, another layout"
                            : "m16n8k16's operands are 16-bit");
            return false;
        }
        rc r[TILEC_LAYOUT_MAX_BITS];
        const char *want = "";
        n = preset(b, L->kind, r, &nreg, &nwarp, &want);
        if (n < 0) {
            ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col, "'%s' is [%lld, %lld]; the %s layout is %s",
                        b->name, (long long)b->shape[0], (long long)b->shape[1], kn, want);
            return false;
        }
        for (int i = 0; i < n; i++) v[i] = r[i].r * b->shape[1] + r[i].c;
    }
    /* a bijection onto the elements, up to replicated lanes and warps: the register bits
     * and the nonzero lane and warp bits are independent over F2 and span every index */
    int need = log2i(b->elems), rank = 0;
    int64_t piv[63] = {0}; /* the bits so far, reduced: piv[k] has leading bit k */
    for (int i = 0; i < n; i++) {
        const char *kind = i < nreg ? "register" : i < nreg + nlane ? "lane" : "warp";
        int which = i < nreg ? i : i < nreg + nlane ? i - nreg : i - nreg - nlane;
        int64_t x = v[i];
        if (!x && i < nreg) {
            ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, bit_at(b, i, at).line, bit_at(b, i, at).col,
                        "'%s': register bit %d of the layout adds no coordinate; a register holds one "
                        "element (drop the bit)", b->name, which);
            return false;
        }
        bool added = !x; /* an all-zero lane or warp bit: replicated */
        for (int bit = 62; bit >= 0 && !added; bit--)
            if (x >> bit & 1) {
                if (piv[bit]) {
                    x ^= piv[bit];
                } else {
                    piv[bit] = x;
                    rank++;
                    added = true;
                }
            }
        if (!added) {
            ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, bit_at(b, i, at).line, bit_at(b, i, at).col,
                        "'%s': the layout's %s bit %d reaches only elements the bits before it reach; every "
                        "element has one place (a lane bit whose lanes hold the same elements is all zero)",
                        b->name, kind, which);
            return false;
        }
    }
    if (rank != need) {
        ir_diag_add(p->ctx, &p->src, TILEC_SEV_ERROR, at.line, at.col,
                    "'%s' has %lld elements, and the layout places %lld of them (%d independent bits of %d); "
                    "give a bit for each power of two of the shape",
                    b->name, (long long)b->elems, (long long)1 << rank, rank, need);
        return false;
    }
    b->frag_reg = nreg;
    b->frag_lane = nlane;
    b->frag_warp = nwarp;
    b->span = (int64_t)1 << nreg; /* what a thread holds: its registers */
    memcpy(b->frag, v, sizeof(int64_t) * (size_t)n);
    return true;
}

int ir_frag_threads(const tilec_buffer *b) { return 32 << b->frag_warp; }

tilec_scope ir_frag_scope(const tilec_buffer *b) {
    return b->frag_warp == 0 ? TILEC_SCOPE_WARP : b->frag_warp == 2 ? TILEC_SCOPE_WARPGROUP : TILEC_SCOPE_CTA;
}

tilec_scope ir_reduce_end_scope(const ir_stmt *st) {
    if (st->exec.scope != TILEC_SCOPE_CLUSTER) return st->exec.scope;
    bool global = st->dst.buf->space == TILEC_SPACE_GLOBAL || (st->dst2.buf && st->dst2.buf->space == TILEC_SPACE_GLOBAL);
    return global ? TILEC_SCOPE_CLUSTER : TILEC_SCOPE_CTA;
}

bool ir_reduce_has_barrier(const ir_stmt *st) {
    bool registers = st->src.buf->layout.kind != TILEC_LAYOUT_NONE && st->dst.buf->space == TILEC_SPACE_LOCAL &&
                     (!st->dst2.buf || st->dst2.buf->space == TILEC_SPACE_LOCAL);
    return !registers;
}

int64_t ir_frag_xor(const int64_t *vals, int n, int64_t bits) {
    int64_t e = 0;
    for (int i = 0; i < n; i++)
        if (bits >> i & 1) e ^= vals[i];
    return e;
}

int64_t ir_frag_element(const tilec_buffer *b, int warp, int lane, int reg) {
    return ir_frag_xor(b->frag, b->frag_reg, reg) ^ ir_frag_xor(b->frag + b->frag_reg, b->frag_lane, lane) ^
           ir_frag_xor(b->frag + b->frag_reg + b->frag_lane, b->frag_warp, warp);
}
