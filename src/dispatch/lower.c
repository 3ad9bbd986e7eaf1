/*
 * lower.c — lowers a verified tile kernel to loop IR, statement by statement: each
 * statement is dispatched to a variant, which appends its loop IR; a statement run by one
 * selected instance (`warp[5].sum`) is wrapped in a test of the instance id, and every
 * reduction ends with a barrier of its scope, as the format promises (but one of a fragment
 * into a fragment: registers only; one right before another barrier of its scope, the
 * program's own sync, is the only one kept). The shared slots a
 * variant adds count against the target's shared memory with the kernel's own buffers.
 */
#include "dispatch.h"

#include "../ir/numeric.h"

#include <stdio.h>

/* The executing thread's instance of a scope, as an expression. */
static lp_expr *instance_of(lp_kernel *k, tilec_scope s) {
    switch (s) {
    case TILEC_SCOPE_WARPGROUP:
        return lp_binary(k, LO_DIV, lp_special_expr(k, LP_TID), lp_int(k, LP_I32, 128));
    case TILEC_SCOPE_WARP: return lp_special_expr(k, LP_WARP);
    default: return lp_special_expr(k, LP_TID);
    }
}

/* A barrier right after another of the same scope (nothing between them but op markers)
 * orders nothing the first one did not: a reduction's own barrier followed by the
 * program's `cta.sync()`. The second is dropped, in every block; and a CTA's barrier right
 * before a cluster's, which every thread of the CTA passes too, is. */
static void drop_repeated_barriers(lp_block *b) {
    int kept = 0, at = -1; /* the last statement kept that is not a marker, and where it is */
    for (int i = 0; i < b->n; i++) {
        lp_stmt *st = b->items[i];
        const lp_stmt *last = at >= 0 ? b->items[at] : NULL;
        if (st->kind == LS_BARRIER && last && last->kind == LS_BARRIER && last->scope == st->scope) continue;
        if (st->kind == LS_BARRIER && last && last->kind == LS_BARRIER && last->scope == TILEC_SCOPE_CTA &&
            st->scope == TILEC_SCOPE_CLUSTER) { /* a cluster's barrier is its every CTA's too */
            b->items[at] = st;
            continue;
        }
        drop_repeated_barriers(&st->body);
        drop_repeated_barriers(&st->orelse);
        if (st->kind != LS_OP) at = kept;
        b->items[kept++] = st;
    }
    b->n = kept;
}

lp_kernel *dsp_lower_kernel(tilec_program *p, const tilec_kernel *tk, const dsp_target *t, tilec_status *why) {
    tilec_status dummy;
    if (!why) why = &dummy;
    *why = TILEC_ERR_NOMEM;
    lp_kernel *k = lp_kernel_new(p, tk, t->warp_size);
    if (!k) return NULL;
    k->variants = ir_arena_alloc(&p->arena, (size_t)(tk->nstmts + 1) * sizeof *k->variants);
    if (!k->variants) return NULL;
    bool ok = true, clustered = false;
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
        char what[160];
        snprintf(what, sizeof what, "a %s gets on %s", tk->is_func ? "func" : "CTA", lim.target);
        dsp_lower l = {k, into, &q, limit, what, NULL, NULL};
        dsp_report rep;
        dsp_dispatch(&q, &l, &rep); /* a variant whose slots pass the limit declines: the next one is tried */
        if (rep.outcome != DSP_FOUND) {
            dsp_report_error(p, &q, &rep);
            ok = false;
            continue;
        }
        marker->variant = k->variants[i] = rep.v[rep.chosen].c->variant;
        if (st->kind == IR_REDUCE && st->exec.scope != TILEC_SCOPE_THREAD && st->exec.scope != TILEC_SCOPE_GRID &&
            ir_reduce_has_barrier(st))
            lp_barrier(k, into, ir_reduce_end_scope(st));
        clustered |= st->exec.scope == TILEC_SCOPE_CLUSTER && st->kind == IR_REDUCE;
    }
    /* a CTA leaves only when no peer may still read its shared memory: the slots a cluster
       reduction's states meet in (v_cluster.c) */
    if (clustered) lp_barrier(k, &k->body, TILEC_SCOPE_CLUSTER);
    if (k->oom) return NULL; /* *why is NOMEM */
    drop_repeated_barriers(&k->body);
    *why = ok ? TILEC_OK : TILEC_ERR_DISPATCH;
    return ok ? k : NULL;
}

tilec_status dsp_lower_program(tilec_program *p, const dsp_target *t, const tilec_kernel *only, lp_kernel ***out) {
    tilec_status st = dsp_verify(p, t);
    if (st != TILEC_OK) return st;
    lp_kernel **ks = ir_arena_alloc(&p->arena, (size_t)(p->nkernels + 1) * sizeof *ks);
    if (!ks) return TILEC_ERR_NOMEM;
    for (int i = 0; i < p->nkernels; i++) { /* every kernel, so each one's problems are reported */
        tilec_status failed;
        if (only && p->kernels[i] != only) continue;
        if (!(ks[i] = dsp_lower_kernel(p, p->kernels[i], t, &failed)) && st != TILEC_ERR_NOMEM) st = failed;
    }
    if (st != TILEC_OK) return st;
    *out = ks;
    return TILEC_OK;
}
