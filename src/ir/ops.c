/*
 * ops.c — the reduction operators as one table: a row per tilec_op, read by the parser,
 * the verifier, dispatch, the lowerings, the runtime and the reference. A new op is a row
 * here (and its hooks where a row cannot say it), not a case in each of them.
 */
#include "loop.h"

#include <stdio.h>

static const ir_op_info ops[] = {
    [TILEC_OP_SUM] = {.combine = LO_ADD, .identity = IR_IDENTITY_ZERO, .error = IR_ERROR_SUM,
                      .empty = IR_EMPTY_IDENTITY},
    [TILEC_OP_MAX] = {.combine = LO_MAX, .identity = IR_IDENTITY_LOWEST, .error = IR_ERROR_EXACT,
                      .compares = true, .idempotent = true},
    [TILEC_OP_MIN] = {.combine = LO_MIN, .identity = IR_IDENTITY_HIGHEST, .error = IR_ERROR_EXACT,
                      .compares = true, .idempotent = true},
    [TILEC_OP_PROD] = {.combine = LO_MUL, .identity = IR_IDENTITY_ONE, .error = IR_ERROR_PROD,
                       .empty = IR_EMPTY_IDENTITY},
    [TILEC_OP_SUMSQ] = {.combine = LO_ADD, .identity = IR_IDENTITY_ZERO, .error = IR_ERROR_SUM,
                        .lift = IR_LIFT_SQUARE, .empty = IR_EMPTY_IDENTITY},
    [TILEC_OP_NORM2] = {.combine = LO_ADD, .identity = IR_IDENTITY_ZERO, .error = IR_ERROR_SUM,
                        .lift = IR_LIFT_SQUARE, .finish = IR_FINISH_SQRT, .empty = IR_EMPTY_IDENTITY,
                        .floats_only = true, .holds_squares = true},
    [TILEC_OP_MEAN] = {.combine = LO_ADD, .identity = IR_IDENTITY_ZERO, .error = IR_ERROR_SUM,
                       .finish = IR_FINISH_MEAN, .empty = IR_EMPTY_NAN, .floats_only = true},
    [TILEC_OP_ARGMAX] = {.combine = LO_MAX, .identity = IR_IDENTITY_LOWEST, .error = IR_ERROR_EXACT,
                         .lift = IR_LIFT_KEY, .finish = IR_FINISH_KEY, .compares = true, .key = IR_KEY_INDEX,
                         .second = "index"},
    [TILEC_OP_ARGMIN] = {.combine = LO_MIN, .identity = IR_IDENTITY_LOWEST, .error = IR_ERROR_EXACT,
                         .lift = IR_LIFT_KEY, .finish = IR_FINISH_KEY, .compares = true, .key = IR_KEY_INDEX,
                         .second = "index"},
    [TILEC_OP_AMINMAX] = {.combine = LO_MIN, .identity = IR_IDENTITY_LOWEST, .error = IR_ERROR_EXACT,
                          .lift = IR_LIFT_KEY, .finish = IR_FINISH_KEY, .compares = true, .idempotent = true,
                          .key = IR_KEY_PAIR, .second = "maximum"},
    [TILEC_OP_LOGSUMEXP] = {.combine = LO_ADD, .identity = IR_IDENTITY_LOWEST, .error = IR_ERROR_LOG,
                            .lift = IR_LIFT_KEY, .finish = IR_FINISH_KEY, .empty = IR_EMPTY_NEG_INF,
                            .floats_only = true, .key = IR_KEY_LSE, .long_finish = true, .accum_element = true},
    [TILEC_OP_VAR] = {.combine = LO_ADD, .identity = IR_IDENTITY_ZERO, .error = IR_ERROR_VAR, .lift = IR_LIFT_SHIFT,
                      .finish = IR_FINISH_VAR, .empty = IR_EMPTY_NAN, .floats_only = true, .long_finish = true},
    [TILEC_OP_STD] = {.combine = LO_ADD, .identity = IR_IDENTITY_ZERO, .error = IR_ERROR_VAR, .lift = IR_LIFT_SHIFT,
                      .finish = IR_FINISH_STD, .empty = IR_EMPTY_NAN, .floats_only = true, .long_finish = true},
};
_Static_assert(sizeof ops / sizeof ops[0] == TILEC_OP_COUNT, "a row for every tilec_op");

static const ir_ewop_info ewops[] = {
    [TILEC_EW_ADD] = {.infix = '+', .prec = 1},
    [TILEC_EW_SUB] = {.infix = '-', .prec = 1},
    [TILEC_EW_MUL] = {.infix = '*', .prec = 2},
    [TILEC_EW_DIV] = {.infix = '/', .prec = 2, .floats_only = true},
    [TILEC_EW_MAX] = {0},
    [TILEC_EW_MIN] = {0},
    [TILEC_EW_NEG] = {0},
    [TILEC_EW_ABS] = {0},
    [TILEC_EW_EXP] = {.floats_only = true},
    [TILEC_EW_EXP2] = {.floats_only = true},
    [TILEC_EW_LOG] = {.floats_only = true},
    [TILEC_EW_LOG2] = {.floats_only = true},
    [TILEC_EW_SQRT] = {.floats_only = true},
    [TILEC_EW_RSQRT] = {.floats_only = true},
    [TILEC_EW_FMA] = {.floats_only = true},
    [TILEC_EW_WHERE] = {0},
    [TILEC_EW_EQ] = {.compares = true},
    [TILEC_EW_NE] = {.compares = true},
    [TILEC_EW_LT] = {.compares = true},
    [TILEC_EW_LE] = {.compares = true},
    [TILEC_EW_GT] = {.compares = true},
    [TILEC_EW_GE] = {.compares = true},
};
_Static_assert(sizeof ewops / sizeof ewops[0] == TILEC_EWOP_COUNT, "a row for every tilec_ewop");

const ir_ewop_info *ir_ewop(tilec_ewop op) { return &ewops[(unsigned)op < TILEC_EWOP_COUNT ? op : TILEC_EW_ADD]; }

const ir_op_info *ir_op(tilec_op op) { return &ops[(unsigned)op < TILEC_OP_COUNT ? op : TILEC_OP_SUM]; }

bool ir_key_wide(tilec_op op, tilec_dtype d) {
    ir_key key = ir_op(op)->key;
    return (key == IR_KEY_INDEX || key == IR_KEY_PAIR) && tilec_dtype_size(d) == 8;
}

lp_type lp_op_accum_type(tilec_op op, tilec_dtype d) {
    if (ir_key_wide(op, d)) return LP_I64X2;
    if (ir_op(op)->key == IR_KEY_LSE && d == TILEC_F64) return LP_F64X2; /* (m, s) in f64 */
    if (ir_op(op)->key != IR_KEY_NONE) return LP_I64;
    if (ir_op(op)->lift == IR_LIFT_SHIFT) return LP_F64X2;
    lp_type t = lp_accum_type(d);
    return ir_op(op)->holds_squares && (d == TILEC_BF16 || d == TILEC_F32) ? LP_F64 : t;
}

const char *ir_op_dtype_names(tilec_op op, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = 0;
    for (int d = 0; d < TILEC_DTYPE_COUNT && at < n; d++)
        if (tilec_op_supports(op, (tilec_dtype)d, false))
            at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "", tilec_dtype_name((tilec_dtype)d));
    return buf;
}

bool tilec_op_compares(tilec_op op) { return (unsigned)op < TILEC_OP_COUNT && ops[op].compares; }

bool tilec_op_takes_correction(tilec_op op) { return (unsigned)op < TILEC_OP_COUNT && ops[op].lift == IR_LIFT_SHIFT; }

int tilec_op_outputs(tilec_op op) {
    if ((unsigned)op >= TILEC_OP_COUNT) return 0;
    return ops[op].second ? 2 : 1;
}

tilec_dtype tilec_op_second_dtype(tilec_op op, tilec_dtype values) {
    if ((unsigned)op >= TILEC_OP_COUNT || (unsigned)values >= TILEC_DTYPE_COUNT) return TILEC_DTYPE_COUNT;
    switch (ops[op].key) {
    case IR_KEY_NONE: return TILEC_DTYPE_COUNT;
    case IR_KEY_INDEX: return TILEC_I64;
    case IR_KEY_PAIR: return values;
    case IR_KEY_LSE: return TILEC_DTYPE_COUNT;
    }
    return TILEC_DTYPE_COUNT; /* not reached: the switch covers ir_key (-Wswitch) */
}

bool tilec_op_supports(tilec_op op, tilec_dtype dtype, bool accumulate) {
    if ((unsigned)op >= TILEC_OP_COUNT || (unsigned)dtype >= TILEC_DTYPE_COUNT) return false;
    const ir_op_info *o = &ops[op];
    return (!o->floats_only || ir_dtype_is_float(dtype)) &&
           (!accumulate || o->finish == IR_FINISH_NONE || o->accum_element);
}
