/*
 * api.c — the runtime's public entry points that need no GPU: tilec_simulate, which
 * lowers a kernel for the simulator's warp size and runs it (the pipeline in one place:
 * dispatch and lower, then run).
 */
#include "sim.h"

#include <stdio.h>
#include <string.h>

static const tilec_kernel *find(tilec_program *p, const char *name) {
    if (!name) {
        if (p->nkernels == 1) return p->kernels[0];
        ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "the program has %d kernels and funcs; name the one to run", p->nkernels);
        return NULL;
    }
    for (int i = 0; i < p->nkernels; i++)
        if (strcmp(p->kernels[i]->name, name) == 0) return p->kernels[i];
    ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no kernel or func named '%s'", name);
    return NULL;
}

tilec_status tilec_simulate(tilec_program *prog, const char *name, const tilec_target *target, void *const *args) {
    if (!prog || !args) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    const tilec_kernel *k = find(prog, name);
    if (!k) return TILEC_ERR_INVALID_ARG;
    dsp_target t;
    char why[200];
    if (target && target->backend != TILEC_BACKEND_SIM) {
        ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "tilec_simulate runs on the simulator only (backend sim)");
        return TILEC_ERR_INVALID_ARG;
    }
    if (!dsp_target_resolve(target, &t, why, sizeof why)) {
        ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s", why);
        return TILEC_ERR_INVALID_ARG;
    }
    for (int i = 0; i < k->nparams; i++)
        if (!args[i]) {
            ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no buffer for parameter '%s'", k->params[i]->name);
            return TILEC_ERR_INVALID_ARG;
        }
    tilec_status vs = ir_verify(prog, t.warp_size);
    if (vs != TILEC_OK) return vs;
    lp_kernel *lk = dsp_lower_kernel(prog, k, &t);
    if (!lk) return ir_error_count(prog->ctx) ? TILEC_ERR_DISPATCH : TILEC_ERR_NOMEM;
    return sim_run(prog, lk, args);
}
