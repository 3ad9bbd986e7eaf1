/*
 * lower.c — lowers a verified tile kernel to loop IR, statement by statement: each
 * statement is dispatched to a variant, which appends its loop IR; a statement run by one
 * selected instance (`warp[5].sum`) is wrapped in a test of the instance id, and every
 * reduction ends with a barrier of its scope, as the format promises. The shared slots a
 * variant adds count against the target's shared memory with the kernel's own buffers.
 */
#include "dispatch.h"

#include "../ir/numeric.h"

/* Shared bytes of the kernel's CTA so far (its buffers and the variants' slots, 16-byte
 * aligned each, as the emitters lay them out). */
static int64_t shared_bytes(const lp_kernel *k) {
    int64_t total = 0;
    for (int i = 0; i < k->nbufs; i++) {
        const lp_buf *b = k->bufs[i];
        if (b->space == TILEC_SPACE_SHARED && b->param < 0)
            total += (b->elems * (int64_t)num_size(b->type) + 15) & ~(int64_t)15;
    }
    return total;
}

/* The executing thread's instance of a scope, as an expression. */
static lp_expr *instance_of(lp_kernel *k, tilec_scope s) {
    switch (s) {
    case TILEC_SCOPE_WARPGROUP:
        return lp_binary(k, LO_DIV, lp_special_expr(k, LP_TID), lp_int(k, LP_I32, 128));
    case TILEC_SCOPE_WARP: return lp_special_expr(k, LP_WARP);
    default: return lp_special_expr(k, LP_TID);
    }
}

lp_kernel *dsp_lower_kernel(tilec_program *p, const tilec_kernel *tk, const dsp_target *t, tilec_status *why) {
    tilec_status dummy;
    if (!why) why = &dummy;
    *why = TILEC_ERR_NOMEM;
    lp_kernel *k = lp_kernel_new(p, tk, t->warp_size);
    if (!k) return NULL;
    bool ok = true, too_big = false;
    char name[128];
    ir_limits lim;
    dsp_limits(t, &lim, name, sizeof name);
    int64_t limit = tk->is_func ? lim.func_shared_bytes : lim.shared_bytes;
    for (int i = 0; i < tk->nstmts; i++) {
        const ir_stmt *st = tk->stmts[i];
        if (st->kind == IR_ALLOC) {
            lp_buf_for(k, st->alloc);
            continue;
        }
        dsp_query q;
        dsp_query_init(&q, t, tk, st);
        lp_stmt *marker = lp_op_marker(k, &k->body, st, NULL);
        lp_block *into = &k->body;
        if (q.selected && q.inst_count > 1) {
            lp_stmt *guard = lp_if(k, into, lp_binary(k, LO_EQ, instance_of(k, st->exec.scope),
                                                      lp_int(k, LP_I32, st->exec.instance)));
            into = &guard->body;
        }
        dsp_lower l = {k, into, &q};
        dsp_report rep;
        int64_t before = shared_bytes(k);
        dsp_dispatch(&q, &l, &rep);
        if (rep.outcome != DSP_FOUND) {
            dsp_report_error(p, &q, &rep);
            ok = false;
            continue;
        }
        int64_t after = shared_bytes(k);
        if (after > limit && !too_big) { /* the verifier checked the buffers alone */
            ir_stmt_diag(p, tk, st, TILEC_SEV_ERROR, st->op_pos.line ? st->op_pos : st->pos,
                         "variant %s adds %lld bytes of shared slots, which brings the %s's shared memory to %lld "
                         "bytes, more than the %lld a %s gets on %s; leave room in shared memory or choose another "
                         "variant (variant=...)",
                         rep.v[rep.chosen].c->variant, (long long)(after - before), tk->is_func ? "func" : "kernel",
                         (long long)after, (long long)limit, tk->is_func ? "func" : "CTA", lim.target);
            too_big = true;
            ok = false;
        }
        marker->variant = rep.v[rep.chosen].c->variant;
        if (st->kind == IR_REDUCE && st->exec.scope != TILEC_SCOPE_THREAD && st->exec.scope != TILEC_SCOPE_GRID)
            lp_barrier(k, into, st->exec.scope);
    }
    if (k->oom) return NULL; /* *why is NOMEM */
    *why = ok ? TILEC_OK : TILEC_ERR_DISPATCH;
    return ok ? k : NULL;
}
