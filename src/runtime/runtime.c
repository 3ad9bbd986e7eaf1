/*
 * runtime.c — opening a backend for a context, and device memory.
 *
 * AUTO tries CUDA (libcuda.so.1 and a device), then HIP, then falls back to the
 * simulator, where device memory is host memory; the reason each GPU was passed over is
 * kept for TILEC_JIT_LOG and for explicit requests, which fail with it.
 */
#include "runtime.h"

#include "rtc.h"
#include "../codegen/codegen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void rt_free(void *p) {
    rt *r = p;
    for (rt_plan *pl = r->plans, *next; pl; pl = next) {
        next = pl->next;
        for (int i = 0; i < pl->info.nscratch; i++)
            if (pl->scratch[i]) r->be->release(r, pl->scratch[i]);
        if (r->be->unload) r->be->unload(r, pl);
        tilec_program_free(pl->prog);
        free(pl);
    }
    if (r->be->close) r->be->close(r);
    cache_close(&r->cache);
    free(r);
}

void rt_log(const rt *r, const char *fmt, ...) {
    if (!r->log) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tilec jit: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static tilec_status try_open(tilec_ctx *ctx, const rt_backend *be, int device, rt **out) {
    rt *r = calloc(1, sizeof *r);
    if (!r) return TILEC_ERR_NOMEM;
    r->ctx = ctx;
    r->be = be;
    const char *log = getenv("TILEC_JIT_LOG");
    r->log = log && strcmp(log, "1") == 0;
    tilec_status st = be->open(r, device);
    if (st != TILEC_OK) {
        free(r);
        return st;
    }
    if (be->kind != TILEC_BACKEND_SIM) cache_open(&r->cache);
    *out = r;
    return TILEC_OK;
}

typedef struct build_arg {
    rt *r;
    const char *source;
    tilec_status st;
} build_arg;

static bool build_binary(void *p, void **data, size_t *size) {
    build_arg *a = p;
    rtc_result res;
    a->st = rtc_compile(a->r->ctx, a->r->target.backend, a->r->target.arch, a->r->target.warp_size, "tilec.cu",
                        a->source, RTC_BINARY, &res);
    if (a->st != TILEC_OK) return false;
    *data = res.data;
    *size = res.size;
    res.data = NULL;
    rtc_result_free(&res);
    return true;
}

static tilec_status binary_of_source(rt *r, const char *source, void **data, size_t *size) {
    const char *compiler = rtc_version(r->target.backend);
    ir_str key = {0};
    ir_str_printf(&key, "tilec kernel cache 1\ntilec %s\n%s %s warp %d\n%s\n", TILEC_VERSION_STRING,
                  dsp_backend_name(r->target.backend), r->target.arch, r->target.warp_size, compiler ? compiler : "none");
    ir_str_put(&key, source, strlen(source));
    if (key.oom) { ir_str_free(&key); return TILEC_ERR_NOMEM; }
    build_arg a = {r, source, TILEC_OK};
    int hits = r->cache.hits, failures = r->cache.store_failures, timeouts = r->cache.lock_timeouts;
    bool ok = cache_get(&r->cache, key.data, key.len, r->target.backend == TILEC_BACKEND_CUDA ? 1 : 2, build_binary, &a,
                        data, size);
    ir_str_free(&key);
    rt_log(r, "disk cache %s (%s)", r->cache.hits > hits ? "hit" : r->cache.mode == CACHE_OFF ? "off" : "miss", r->cache.dir);
    if (r->cache.store_failures != failures) rt_log(r, "%s", r->cache.store_error);
    if (r->cache.lock_timeouts != timeouts) { /* a note of this call, and the log */
        ir_diag_add(r->ctx, NULL, TILEC_SEV_NOTE, 0, 0, "%s", r->cache.lock_note);
        rt_log(r, "%s", r->cache.lock_note);
    }
    if (!ok) return a.st != TILEC_OK ? a.st : TILEC_ERR_COMPILE;
    return TILEC_OK;
}

tilec_status rt_plan_binary(rt *r, const rt_plan *p, void **data, size_t *size) {
    ir_str src = {0};
    lp_kernel *ks[1] = {p->kernel};
    cg_emit_program(&src, r->target.backend == TILEC_BACKEND_CUDA ? &cg_cuda : &cg_hip, p->prog, ks);
    if (src.oom) { ir_str_free(&src); return TILEC_ERR_NOMEM; }
    tilec_status st = binary_of_source(r, src.data, data, size);
    ir_str_free(&src);
    return st;
}

tilec_status tilec_runtime_open(tilec_ctx *ctx, tilec_backend backend, int device) {
    if (!ctx || device < 0) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (ctx->runtime) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the runtime of this context is already open (on %s)",
                    ((rt *)ctx->runtime)->be->name);
        return TILEC_ERR_INVALID_ARG;
    }
    rt *r = NULL;
    tilec_status st;
    if (backend == TILEC_BACKEND_AUTO) {
        st = try_open(ctx, &rt_cuda, device, &r);
        if (st != TILEC_OK) st = try_open(ctx, &rt_hip, device, &r);
        if (st != TILEC_OK) {
            ir_begin(ctx); /* a missing GPU is no error for AUTO */
            st = try_open(ctx, &rt_sim, 0, &r);
        }
    } else {
        const rt_backend *be = backend == TILEC_BACKEND_CUDA ? &rt_cuda : backend == TILEC_BACKEND_HIP ? &rt_hip : &rt_sim;
        st = try_open(ctx, be, device, &r);
    }
    if (st != TILEC_OK) return st;
    ctx->runtime = r;
    ctx->runtime_free = rt_free;
    for (int i = 0; i < r->cache.nnotes; i++) { /* what the cache does not do as asked: a note of this call, and the log */
        ir_diag_add(ctx, NULL, TILEC_SEV_NOTE, 0, 0, "%s", r->cache.notes[i]);
        rt_log(r, "%s", r->cache.notes[i]);
    }
    rt_log(r, "backend %s, target %s %s, warp size %d", r->be->name, dsp_backend_name(r->target.backend),
           r->target.arch, r->target.warp_size);
    return TILEC_OK;
}

tilec_backend tilec_runtime_backend(const tilec_ctx *ctx) {
    return ctx && ctx->runtime ? ((rt *)ctx->runtime)->be->kind : TILEC_BACKEND_AUTO;
}

tilec_status rt_get(tilec_ctx *ctx, rt **out) {
    if (!ctx->runtime) {
        tilec_status st = tilec_runtime_open(ctx, TILEC_BACKEND_AUTO, 0);
        if (st != TILEC_OK) return st;
    }
    *out = ctx->runtime;
    return TILEC_OK;
}

/* ---- memory -------------------------------------------------------------------------- */

tilec_status tilec_mem_alloc(tilec_ctx *ctx, size_t bytes, void **ptr) {
    if (!ctx || !ptr) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    *ptr = NULL;
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    return st == TILEC_OK ? r->be->alloc(r, bytes ? bytes : 1, ptr) : st;
}

tilec_status tilec_mem_free(tilec_ctx *ctx, void *ptr) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    if (!ptr) return TILEC_OK;
    ir_begin(ctx);
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    return st == TILEC_OK ? r->be->release(r, ptr) : st;
}

tilec_status tilec_mem_upload(tilec_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (!ctx || ((!dst || !src) && bytes)) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    return st == TILEC_OK && bytes ? r->be->upload(r, dst, src, bytes) : st;
}

tilec_status tilec_mem_download(tilec_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (!ctx || ((!dst || !src) && bytes)) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    return st == TILEC_OK && bytes ? r->be->download(r, dst, src, bytes) : st;
}

tilec_status tilec_synchronize(tilec_ctx *ctx) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    return st == TILEC_OK ? r->be->sync(r) : st;
}
