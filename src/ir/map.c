/*
 * map.c — what the verifier and the lowerings ask of a map statement's fragment operands:
 * which register of its own lane holds the element a register of a fragment destination
 * needs (docs/format.md, "Elementwise statements", Fragments).
 */
#include "ir.h"

/* The flat index, in the operand's buffer, of the element that destination element `e`
 * (flat row-major in dst) reads: the operand is a whole fragment, broadcast per bcast. */
static int64_t operand_element(const tilec_buffer *dst, const ir_expr *operand, int64_t e) {
    int64_t coord[TILEC_MAX_RANK];
    for (int d = dst->rank - 1; d >= 0; d--) {
        coord[d] = e % dst->shape[d];
        e /= dst->shape[d];
    }
    const tilec_buffer *ob = operand->region.buf;
    int64_t at[TILEC_MAX_RANK] = {0};
    for (int d = 0; d < dst->rank; d++)
        if (operand->bcast[d] >= 0) at[operand->bcast[d]] = coord[d];
    int64_t flat = 0;
    for (int j = 0; j < ob->rank; j++) flat = flat * ob->shape[j] + at[j];
    return flat;
}

bool ir_map_frag_mismatch(const tilec_buffer *dst, const ir_expr *operand, int reg, int *src_reg, int *lane,
                          int *warp) {
    const tilec_buffer *ob = operand->region.buf;
    *src_reg = -1;
    *lane = *warp = 0;
    if (operand->kind != IR_X_REGION || dst->layout.kind == TILEC_LAYOUT_NONE || ob->layout.kind == TILEC_LAYOUT_NONE ||
        ir_frag_threads(ob) != ir_frag_threads(dst) || reg < 0 || reg >= 1 << dst->frag_reg)
        return true;
    int64_t want = operand_element(dst, operand, ir_frag_element(dst, 0, 0, reg));
    for (int r = 0; r < 1 << ob->frag_reg && *src_reg < 0; r++)
        if (ir_frag_element(ob, 0, 0, r) == want) *src_reg = r;
    if (*src_reg < 0) return true;
    for (int w = 0; w < 1 << dst->frag_warp; w++)
        for (int l = 0; l < 32; l++)
            if (ir_frag_element(ob, w, l, *src_reg) != operand_element(dst, operand, ir_frag_element(dst, w, l, reg))) {
                *lane = l;
                *warp = w;
                return true;
            }
    return false;
}

int ir_expr_nargs(const ir_expr *e) {
    switch (e->kind) {
    case IR_X_OP: return ir_ewop_arity(e->op);
    case IR_X_CAST:
    case IR_X_GATHER: return 1;
    default: return 0;
    }
}

bool ir_map_frag_source(const tilec_buffer *dst, const ir_expr *operand, int reg, int *src_reg) {
    int lane, warp;
    return !ir_map_frag_mismatch(dst, operand, reg, src_reg, &lane, &warp);
}
