/*
 * explain.c — tilec_explain: the dispatch verdicts of every tile statement, and the
 * lowered loop IR on request.
 */
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>

tilec_status tilec_explain(tilec_program *prog, const tilec_target *target, bool dump_loop, char **text) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    if (!text) return ir_bad(prog->ctx, "tilec_explain: text is NULL; pass where the text goes");
    *text = NULL;
    dsp_target t;
    tilec_status st = dsp_target_resolve_diag(prog->ctx, target, &t);
    return st != TILEC_OK ? st : dsp_explain(prog, &t, dump_loop, text);
}

/* The verdicts of every statement of k, into s; false when one has no variant (reported). */
static bool explain_kernel(ir_str *s, tilec_program *prog, const dsp_target *t, const tilec_kernel *k) {
    bool ok = true;
    ir_str_printf(s, "%s %s (target %s %s, warp size %d, threads=%d)\n", k->is_func ? "func" : "kernel", k->name,
                  tilec_backend_name(t->backend), t->arch, t->warp_size, k->threads);
    for (int j = 0; j < k->nstmts; j++) {
        const ir_stmt *st = k->stmts[j];
        if (st->kind == IR_ALLOC) continue;
        dsp_query q;
        dsp_query_init(&q, t, k, st);
        dsp_report rep;
        dsp_dispatch(&q, NULL, &rep);
        if (st->pos.line) ir_str_printf(s, "  line %d: ", st->pos.line);
        else ir_str_printf(s, "  statement %d: ", st->index + 1);
        ir_print_stmt(s, st);
        bool lanes = st->kind == IR_REDUCE && st->src.buf->space == TILEC_SPACE_LOCAL && st->exec.scope != TILEC_SCOPE_THREAD;
        if (st->kind == IR_REDUCE)
            ir_str_printf(s, "\n    %lld output%s of %lld element%s%s; groups of %d lane%s", (long long)q.spatial_len,
                          q.spatial_len == 1 ? "" : "s", (long long)q.red_len, q.red_len == 1 ? "" : "s",
                          lanes ? " from each lane" : "", q.group, q.group == 1 ? "" : "s");
        ir_str_printf(s, "\n");
        dsp_print_report(s, &q, &rep, 4);
        if (rep.outcome != DSP_FOUND) {
            dsp_report_error(prog, &q, &rep);
            ok = false;
        }
    }
    return ok;
}

tilec_status dsp_explain(tilec_program *prog, const dsp_target *target, bool dump_loop, char **text) {
    const dsp_target t = *target;
    *text = NULL;
    tilec_status vs = dsp_verify(prog, &t);
    if (vs != TILEC_OK) return vs;
    /* the verdicts of each kernel, then (--dump=loop, when every statement has a variant)
     * the pipeline's loop IR after each kernel's verdicts */
    ir_str *parts = calloc((size_t)prog->nkernels + 1, sizeof *parts);
    if (!parts) return TILEC_ERR_NOMEM;
    bool failed = false, oom = false;
    for (int i = 0; i < prog->nkernels; i++) failed |= !explain_kernel(&parts[i], prog, &t, prog->kernels[i]);
    lp_kernel **ks = NULL;
    if (dump_loop && !failed) {
        tilec_status st = dsp_lower_program(prog, &t, NULL, &ks);
        oom = st == TILEC_ERR_NOMEM;
        failed = st != TILEC_OK;
    }
    ir_str s = {0};
    for (int i = 0; i < prog->nkernels; i++) {
        if (i) ir_str_printf(&s, "\n");
        if (parts[i].data) ir_str_put(&s, parts[i].data, parts[i].len);
        oom |= parts[i].oom;
        if (ks) {
            ir_str_printf(&s, "\n");
            lp_print_kernel(&s, ks[i]);
        }
        ir_str_free(&parts[i]);
    }
    free(parts);
    if (s.oom || oom) { ir_str_free(&s); return TILEC_ERR_NOMEM; }
    *text = s.data;
    return failed ? TILEC_ERR_DISPATCH : TILEC_OK;
}
