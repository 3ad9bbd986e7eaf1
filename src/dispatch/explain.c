/*
 * explain.c — tilec_explain: the dispatch verdicts of every tile statement, and the
 * lowered loop IR on request.
 */
#include "dispatch.h"

#include <stdio.h>

tilec_status tilec_explain(tilec_program *prog, const tilec_target *target, bool dump_loop, char **text) {
    if (!prog || !text) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    *text = NULL;
    dsp_target t;
    char why[200];
    if (!dsp_target_resolve(target, &t, why, sizeof why)) {
        ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s", why);
        return TILEC_ERR_INVALID_ARG;
    }
    return dsp_explain(prog, &t, dump_loop, text);
}

tilec_status dsp_explain(tilec_program *prog, const dsp_target *target, bool dump_loop, char **text) {
    const dsp_target t = *target;
    *text = NULL;
    tilec_status vs = dsp_verify(prog, &t);
    if (vs != TILEC_OK) return vs;
    ir_str s = {0};
    bool failed = false;
    for (int i = 0; i < prog->nkernels; i++) {
        const tilec_kernel *k = prog->kernels[i];
        if (i) ir_str_printf(&s, "\n");
        ir_str_printf(&s, "%s %s (target %s %s, warp size %d, threads=%d)\n", k->is_func ? "func" : "kernel",
                      k->name, tilec_backend_name(t.backend), t.arch, t.warp_size, k->threads);
        for (int j = 0; j < k->nstmts; j++) {
            const ir_stmt *st = k->stmts[j];
            if (st->kind == IR_ALLOC) continue;
            dsp_query q;
            dsp_query_init(&q, &t, k, st);
            dsp_report rep;
            dsp_dispatch(&q, NULL, &rep);
            if (st->pos.line) ir_str_printf(&s, "  line %d: ", st->pos.line);
            else ir_str_printf(&s, "  statement %d: ", st->index + 1);
            ir_print_stmt(&s, st);
            if (st->kind == IR_REDUCE)
                ir_str_printf(&s, "\n    %lld output%s of %lld element%s; groups of %d lane%s",
                              (long long)q.spatial_len, q.spatial_len == 1 ? "" : "s", (long long)q.red_len,
                              q.red_len == 1 ? "" : "s", q.group, q.group == 1 ? "" : "s");
            ir_str_printf(&s, "\n");
            dsp_print_report(&s, &q, &rep, 4);
            if (rep.outcome != DSP_FOUND) {
                dsp_report_error(prog, &q, &rep);
                failed = true;
            }
        }
        if (dump_loop && !failed) {
            tilec_status why;
            lp_kernel *lk = dsp_lower_kernel(prog, k, &t, &why);
            if (!lk) {
                if (why == TILEC_ERR_NOMEM) s.oom = true;
                failed = true;
                continue;
            }
            ir_str_printf(&s, "\n");
            lp_print_kernel(&s, lk);
        }
    }
    if (s.oom) { ir_str_free(&s); return TILEC_ERR_NOMEM; }
    *text = s.data;
    return failed ? TILEC_ERR_DISPATCH : TILEC_OK;
}
