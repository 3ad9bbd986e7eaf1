/*
 * api.c — the runtime's public entry points, where the stages meet:
 *
 *   parse (ir) → verify (ir) → dispatch and lower (dispatch) → emit (codegen) → compile (rtc)
 *                                                             ↘ simulate (sim)
 *
 * lower_program() is that pipeline up to loop IR (dsp_lower_program, which the JIT and
 * tilec_explain take too; tilec_lower stops there); tilec_emit, tilec_compile,
 * tilec_simulate and tilec_launch_info_get take it from there.
 */
#include "rtc.h"
#include "runtime.h"
#include "sim.h"

#include "../codegen/codegen.h"
#include "../ir/numeric.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Resolves the target, then the pipeline up to loop IR (dsp_lower_program): *out has one
 * lowered kernel per kernel of the program (arena memory). */
static tilec_status lower_program(tilec_program *p, const tilec_target *target, const tilec_kernel *only,
                                  dsp_target *t, lp_kernel ***out) {
    tilec_status st = dsp_target_resolve_diag(p->ctx, target, t);
    return st != TILEC_OK ? st : dsp_lower_program(p, t, only, out);
}

static const cg_target *codegen_for(tilec_program *p, const tilec_target *target) {
    tilec_backend b = target ? target->backend : TILEC_BACKEND_AUTO;
    const cg_target *cg = cg_target_for(b);
    if (cg) return cg;
    const char *name = tilec_backend_name(b);
    ir_diag_add(p->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "source is emitted for cuda or hip, not %s%s",
                name ? name : "backend ", name ? "" : "out of range");
    return NULL;
}

/* Emits source into *s; *t gets the resolved target. */
static tilec_status emit(tilec_program *p, const tilec_target *target, dsp_target *t, ir_str *s) {
    const cg_target *cg = codegen_for(p, target);
    if (!cg) return TILEC_ERR_INVALID_ARG;
    lp_kernel **ks;
    tilec_status st = lower_program(p, target, NULL, t, &ks);
    if (st != TILEC_OK) return st;
    cg_emit_program(s, cg, p, ks);
    return s->oom ? TILEC_ERR_NOMEM : TILEC_OK;
}

tilec_status tilec_emit(tilec_program *prog, const tilec_target *target, char **source, size_t *len) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    if (!source) return ir_bad(prog->ctx, "tilec_emit: source is NULL; pass where the source goes");
    *source = NULL;
    ir_str s = {0};
    dsp_target t;
    tilec_status st = emit(prog, target, &t, &s);
    if (st != TILEC_OK) { ir_str_free(&s); return st; }
    *source = s.data;
    if (len) *len = s.len;
    return TILEC_OK;
}

tilec_status tilec_lower(tilec_program *prog, const tilec_target *target) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    dsp_target t;
    lp_kernel **ks;
    return lower_program(prog, target, NULL, &t, &ks);
}

tilec_status tilec_compile(tilec_program *prog, const tilec_target *target, void **binary, size_t *size) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    if (!binary || !size)
        return ir_bad(prog->ctx, "tilec_compile: %s is NULL; pass where the binary and its size go", !binary ? "binary" : "size");
    *binary = NULL;
    *size = 0;
    ir_str s = {0};
    dsp_target t;
    tilec_status st = emit(prog, target, &t, &s);
    rtc_result r = {0};
    if (st == TILEC_OK && getenv("TILEC_DUMP_SOURCE")) { /* named by the target and the source, as the JIT's by its key */
        ir_str key = {0};
        ir_str_printf(&key, "tilec compile\n%s %s warp %d\n%s", tilec_backend_name(t.backend), t.arch, t.warp_size, s.data);
        if (!key.oom)
            rtc_dump_source(prog->ctx, t.backend, prog->nkernels ? prog->kernels[0]->name : NULL, key.data, key.len, s.data);
        ir_str_free(&key);
    }
    if (st == TILEC_OK) st = rtc_compile(prog->ctx, t.backend, t.arch, t.warp_size, prog->src.file, s.data, RTC_BINARY, &r);
    ir_str_free(&s);
    if (st == TILEC_OK) {
        *binary = r.data;
        *size = r.size;
        r.data = NULL;
    }
    rtc_result_free(&r);
    return st;
}

tilec_status tilec_launch_info_get(tilec_program *prog, const tilec_target *target, const char *name,
                                   tilec_launch_info *info) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    if (!info) return ir_bad(prog->ctx, "tilec_launch_info_get: info is NULL; pass where the launch info goes");
    const tilec_kernel *k = ir_find_kernel(prog, name);
    if (!k) return TILEC_ERR_INVALID_ARG;
    dsp_target t;
    lp_kernel **ks;
    tilec_status st = lower_program(prog, target, k, &t, &ks);
    if (st != TILEC_OK) return st;
    for (int i = 0; i < prog->nkernels; i++)
        if (prog->kernels[i] == k) return rt_launch_info(prog->ctx, ks[i], info);
    return TILEC_ERR_INTERNAL;
}

tilec_status rt_launch_info(tilec_ctx *ctx, const lp_kernel *lk, tilec_launch_info *info) {
    const tilec_kernel *k = lk->tile;
    ir_str sym = {0};
    cg_name(&sym, k->name);
    if (sym.oom) {
        ir_str_free(&sym);
        return TILEC_ERR_NOMEM;
    }
    memset(info, 0, sizeof *info);
    snprintf(info->symbol, sizeof info->symbol, "%s", sym.data);
    ir_str_free(&sym);
    info->threads = k->threads;
    info->grid = lk->grid; /* a grid statement's variant chooses it */
    for (int i = 0; i < lk->nbufs; i++) {
        const lp_buf *b = lk->bufs[i];
        if (b->space != TILEC_SPACE_GLOBAL || b->param >= 0) continue;
        if (info->nscratch == (int)(sizeof info->scratch_bytes / sizeof info->scratch_bytes[0])) {
            ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "kernel '%s' needs more than 4 scratch buffers", k->name);
            return TILEC_ERR_INTERNAL;
        }
        info->scratch_bytes[info->nscratch++] = (size_t)b->elems * num_size(b->type);
    }
    size_t shared = cg_shared_bytes(lk);
    info->dynamic_shared = !k->is_func && shared > CG_STATIC_SHARED_LIMIT ? shared : 0;
    info->cluster = lk->cluster;
    return TILEC_OK;
}

tilec_status tilec_simulate(tilec_program *prog, const char *name, const tilec_target *target, void *const *args) {
    if (!prog) return TILEC_ERR_INVALID_ARG;
    ir_begin(prog->ctx);
    if (!args) return ir_bad(prog->ctx, "tilec_simulate: args is NULL; give one host buffer per parameter of the kernel");
    const tilec_kernel *k = ir_find_kernel(prog, name);
    if (!k) return TILEC_ERR_INVALID_ARG;
    if (target && target->backend != TILEC_BACKEND_SIM) {
        ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "tilec_simulate runs on the simulator only (backend sim), on host memory; "
                    "tilec_run_kernel runs a kernel on the runtime's GPU, on device memory");
        return TILEC_ERR_INVALID_ARG;
    }
    for (int i = 0; i < k->nparams; i++)
        if (!args[i]) {
            ir_diag_add(prog->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no buffer for parameter '%s'", k->params[i]->name);
            return TILEC_ERR_INVALID_ARG;
        }
    /* lowered for the pointers given, as tilec_run_kernel does: vector loads only where every
       one is 16-byte aligned (the simulator checks the addresses of its vector accesses) */
    dsp_target t;
    tilec_status st = dsp_target_resolve_diag(prog->ctx, target, &t);
    if (st != TILEC_OK) return st;
    for (int i = 0; i < k->nparams; i++) t.unaligned = t.unaligned || (uintptr_t)args[i] % 16 != 0;
    lp_kernel **ks;
    if ((st = dsp_lower_program(prog, &t, k, &ks)) != TILEC_OK) return st;
    for (int i = 0; i < prog->nkernels; i++)
        if (prog->kernels[i] == k) return sim_run(prog, ks[i], args);
    return TILEC_ERR_INTERNAL;
}

tilec_status tilec_set_sim_budget(tilec_ctx *ctx, uint64_t steps) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    ctx->sim_budget = steps;
    return TILEC_OK;
}
