/*
 * kernel.c — tilec_run_kernel: a kernel of a `.tile` program (or of built IR) launched on
 * the context's runtime, on device memory, as tilec_reduce launches its own.
 *
 * The path is tilec_reduce's below its planner: the program is verified and lowered for
 * the runtime's target (dsp_lower_program, what tilec_launch_info_get takes, so the launch
 * is the one it describes), the kernel alone is emitted and compiled through the disk
 * cache (rt_binary), loaded, kept as a plan of the context, and launched by rt_launch with
 * its scratch per stream. On the simulator the plan runs the loop IR, so CI runs the same
 * call.
 *
 * A plan is keyed by the SHA-256 of the program's canonical text, the kernel's name, the
 * target and whether every pointer is 16-byte aligned: the caller may change the program
 * (the builder) or free it and parse another at the same address, and each is then a new
 * text. So a plan keeps nothing of the caller's program: on a GPU the loaded module is
 * enough; the simulator, which runs the loop IR itself, is lent the kernel lowered by this
 * call for the launch (so its diagnostics point at the caller's source).
 */
#include "runtime.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* "f32[4, 8]" into buf. */
static const char *dims(const tilec_buffer *b, char *buf, size_t n) {
    size_t at = (size_t)snprintf(buf, n, "%s[", tilec_dtype_name(b->dtype));
    for (int d = 0; d < b->rank && at < n; d++) at += (size_t)snprintf(buf + at, n - at, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
    if (at < n) snprintf(buf + at, n - at, "]");
    return buf;
}

/* The plan's key: the program's text by its SHA-256, the kernel, the target, alignment. */
static tilec_status kernel_key(rt *r, tilec_program *prog, const tilec_kernel *k, bool unaligned, char *key, size_t n) {
    char *text = NULL;
    size_t len = 0;
    tilec_status st = tilec_format(prog, &text, &len);
    if (st != TILEC_OK) return st;
    uint8_t h[32];
    rt_sha256(text, len, h);
    tilec_free(text);
    size_t at = (size_t)snprintf(key, n, "kernel %s of ", k->name);
    for (int i = 0; i < 32 && at < n; i++) at += (size_t)snprintf(key + at, n - at, "%02x", h[i]);
    if (at < n)
        snprintf(key + at, n - at, " %s %s ws%d%s", r->be->name, r->target.arch, r->target.warp_size, unaligned ? " unaligned" : "");
    return TILEC_OK;
}

tilec_status tilec_run_kernel(tilec_ctx *ctx, tilec_program *prog, const char *name, void *const *args, size_t nargs,
                              void *stream) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!prog) return ir_bad(ctx, "tilec_run_kernel: no program");
    if (prog->ctx != ctx)
        return ir_bad(ctx, "tilec_run_kernel: the program belongs to another context; run it on the context it was "
                        "parsed or built in (its runtime holds the device memory)");
    const tilec_kernel *k = ir_find_kernel(prog, name); /* says why not */
    if (!k) return TILEC_ERR_INVALID_ARG;
    if (k->is_func)
        return ir_bad(ctx, "'%s' is a func: a func is called from a kernel's code, not launched; launch a kernel "
                        "(tilec_simulate runs a func on the simulator as a one-CTA kernel)", k->name);
    if (nargs != (size_t)k->nparams)
        return ir_bad(ctx, "kernel '%s' takes %d parameter%s, not %zu: one device pointer per parameter, in order", k->name,
                   k->nparams, k->nparams == 1 ? "" : "s", nargs);
    if (nargs && !args) return ir_bad(ctx, "tilec_run_kernel: args is NULL; kernel '%s' takes %zu parameters", k->name, nargs);
    char d[128], what[TILEC_MAX_NAME + 160];
    for (size_t i = 0; i < nargs; i++)
        if (!args[i])
            return ir_bad(ctx, "parameter %zu of kernel '%s', %s: %s, is NULL; give it device memory of %lld bytes "
                            "(tilec_mem_alloc)", i, k->name, k->params[i]->name, dims(k->params[i], d, sizeof d),
                       (long long)((size_t)k->params[i]->span * tilec_dtype_size(k->params[i]->dtype)));
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    if (st != TILEC_OK) return st;
    bool unaligned = false; /* vector loads only when every parameter is 16-byte aligned */
    for (size_t i = 0; i < nargs; i++) {
        const tilec_buffer *b = k->params[i];
        snprintf(what, sizeof what, "parameter '%s' (%s)", b->name, dims(b, d, sizeof d));
        if ((st = rt_within(r, what, (uintptr_t)args[i], (size_t)b->span * tilec_dtype_size(b->dtype))) != TILEC_OK) return st;
        unaligned = unaligned || (uintptr_t)args[i] % 16 != 0;
    }
    char key[512];
    if ((st = kernel_key(r, prog, k, unaligned, key, sizeof key)) != TILEC_OK) return st;
    rt_plan *p = r->plans;
    while (p && strcmp(p->key, key) != 0) p = p->next;
    bool gpu = ir_target(r->target.backend)->gpu;
    lp_kernel *lk = NULL;
    if (!p || !gpu) { /* verify and lower for the target: a miss, or the simulator's launch */
        dsp_target target;
        if ((st = rt_lowering_target(r, unaligned, &target)) != TILEC_OK) return st;
        target.sms = 0; /* grid statements sized as tilec_launch_info_get sizes them, so it
                           describes this launch (the bits do not depend on it) */
        lp_kernel **ks;
        if ((st = dsp_lower_program(prog, &target, k, &ks)) != TILEC_OK) return st;
        for (int i = 0; i < prog->nkernels; i++)
            if (prog->kernels[i] == k) lk = ks[i];
        if (!lk) return TILEC_ERR_INTERNAL;
        if (!p) {
            if (!(p = calloc(1, sizeof *p))) return TILEC_ERR_NOMEM;
            snprintf(p->key, sizeof p->key, "%s", key);
            st = rt_launch_info(ctx, lk, &p->info);
            if (st == TILEC_OK && (p->info.grid < 1 || p->info.grid > INT32_MAX))
                st = ir_bad(ctx, "kernel '%s' launches %lld CTAs; a launch takes 1 to 2^31 - 1", k->name, (long long)p->info.grid);
            void *bin = NULL;
            size_t n = 0;
            if (st == TILEC_OK && gpu) st = rt_binary(r, prog, ks, &bin, &n);
            if (st == TILEC_OK) st = rt_load(r, p, bin);
            free(bin);
            if (st != TILEC_OK) {
                if (r->be->unload) r->be->unload(r, p);
                free(p);
                return st;
            }
            rt_log(r, "miss %s: grid %lld x %d, %d scratch buffers", key, (long long)p->info.grid, p->info.threads,
                   p->info.nscratch);
            p->next = r->plans;
            r->plans = p;
            r->nplans++;
        }
    } else {
        rt_log(r, "hit  %s", key);
    }
    p->prog = prog, p->kernel = lk; /* lent for the launch (the simulator runs them), never kept */
    st = rt_launch(r, p, args, (int)nargs, stream);
    p->prog = NULL, p->kernel = NULL;
    return st;
}

tilec_status tilec_runtime_target(tilec_ctx *ctx, tilec_target *out) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!out) return ir_bad(ctx, "tilec_runtime_target: out is NULL; pass where the target goes");
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    if (st != TILEC_OK) return st;
    *out = (tilec_target){.backend = r->target.backend, .arch = r->target.arch, .warp_size = r->target.warp_size};
    return TILEC_OK;
}
