/*
 * ops.c — the reduction operators as one table: a row per tilec_op, read by the parser,
 * the verifier, dispatch, the lowerings, the runtime and the reference. A new op is a row
 * here (and its hooks where a row cannot say it), not a case in each of them.
 */
#include "loop.h"

static const ir_op_info ops[] = {
    [TILEC_OP_SUM] = {.combine = LO_ADD, .identity = IR_IDENTITY_ZERO, .error = IR_ERROR_SUM,
                      .empty_has_value = true},
    [TILEC_OP_MAX] = {.combine = LO_MAX, .identity = IR_IDENTITY_LOWEST, .error = IR_ERROR_EXACT,
                      .compares = true, .idempotent = true},
    [TILEC_OP_MIN] = {.combine = LO_MIN, .identity = IR_IDENTITY_HIGHEST, .error = IR_ERROR_EXACT,
                      .compares = true, .idempotent = true},
    [TILEC_OP_PROD] = {.combine = LO_MUL, .identity = IR_IDENTITY_ONE, .error = IR_ERROR_PROD,
                       .empty_has_value = true},
};
_Static_assert(sizeof ops / sizeof ops[0] == TILEC_OP_COUNT, "a row for every tilec_op");

const ir_op_info *ir_op(tilec_op op) { return &ops[(unsigned)op < TILEC_OP_COUNT ? op : TILEC_OP_SUM]; }
