/*
 * runtime.c — opening a backend for a context, device memory, and the plans' scratch.
 *
 * AUTO tries CUDA (libcuda.so.1 and a device), then HIP, then falls back to the
 * simulator, where device memory is host memory; the reason each GPU was passed over is
 * kept for TILEC_JIT_LOG and for explicit requests, which fail with it.
 *
 * Scratch (partials and completion counters of grid_rows and grid_cols over several CTAs) belongs to a
 * (plan, stream), not to a plan: two calls of one shape on two streams may run at once,
 * and one set between them would mix their partials and counts. Sets are made on first
 * use, zeroed on the call's stream, kept most recently used first, and freed only after
 * an event recorded behind their latest launch has passed. On a stream being captured
 * into a graph a set is made outside the capture instead (zeroed on the backend's own
 * stream and waited for) and pinned, so the capture gets the launch alone.
 */
#include "runtime.h"

#include "costs.h"

#include "rtc.h"
#include "../codegen/codegen.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The calling thread's number, from 1, never reused (an address would be, by a thread
 * started after another ended, whose last launch on its own per-thread default stream
 * may still run): the scratch of the per-thread default stream is per thread. */
static uint64_t this_thread(void) {
    static _Atomic uint64_t threads;
    static _Thread_local uint64_t me;
    if (!me) me = atomic_fetch_add(&threads, 1) + 1;
    return me;
}

/* Frees a set once no launch with it can still run: after its event, or after everything
 * on the device when no event follows its latest launch (the launch or the record failed,
 * or the zeroing was enqueued and nothing since). When that wait fails the set is kept
 * rather than freed under a kernel that may still use it, except when the runtime closes:
 * a device that cannot wait has stopped running kernels. */
static tilec_status scratch_free(rt *r, rt_scratch *s, bool closing) {
    tilec_status st = s->armed ? r->be->wait(r, s->done) : r->be->sync(r);
    if (st != TILEC_OK && !closing) return st;
    for (int i = 0; i < s->plan->info.nscratch; i++)
        if (s->buf[i]) r->be->release(r, s->buf[i]);
    if (s->done) r->be->event_free(r, s->done);
    free(s);
    return st;
}

/* The plan's set for the stream (and the calling thread, on the per-thread default
 * stream), moved to the front; NULL when there is none. */
static rt_scratch *scratch_find(rt *r, const rt_plan *p, void *stream, uint64_t thread) {
    for (rt_scratch *s, **link = &r->scratch; (s = *link); link = &s->next)
        if (s->plan == p && s->stream == stream && s->thread == thread) {
            *link = s->next;
            s->next = r->scratch;
            r->scratch = s;
            return s;
        }
    return NULL;
}

/* A new set of the plan for the stream, at the front. Zeroed on the stream, the least
 * recently used set that is not pinned freed first when RT_SCRATCH_SETS are kept; or, for
 * a stream being captured (aside), zeroed on the backend's own stream and waited for, and
 * nothing freed: freeing may wait for the whole device, which a capture forbids. */
static tilec_status scratch_make(rt *r, const rt_plan *p, void *stream, uint64_t thread, bool aside, rt_scratch **out) {
    rt_scratch **last = NULL; /* the least recently used set that is not pinned */
    for (rt_scratch **at = &r->scratch; *at; at = &(*at)->next)
        if (!(*at)->pinned) last = at;
    if (r->nscratch >= RT_SCRATCH_SETS && (!last || aside))
        rt_log(r, "scratch: %d sets kept, %s; keeping one more", r->nscratch,
               last ? "and the stream is being captured" : "all pinned by tilec_reduce_prepare or a capture");
    if (r->nscratch >= RT_SCRATCH_SETS && last && !aside) {
        rt_scratch *old = *last;
        rt_log(r, "scratch: %d sets kept; freeing the least recently used (stream %p, %s)", r->nscratch, old->stream,
               old->plan->key);
        rt_scratch *after = old->next;
        tilec_status st = scratch_free(r, old, false); /* frees old unless it fails */
        if (st != TILEC_OK) return st;
        *last = after;
        r->nscratch--;
    }
    rt_scratch *s = calloc(1, sizeof *s);
    if (!s) return TILEC_ERR_NOMEM;
    *s = (rt_scratch){.plan = p, .stream = stream, .thread = thread};
    tilec_status st = TILEC_OK;
    for (int i = 0; i < p->info.nscratch && st == TILEC_OK; i++) {
        st = r->be->alloc(r, p->info.scratch_bytes[i], &s->buf[i]);
        if (st == TILEC_OK)
            st = aside ? r->be->zero_aside(r, s->buf[i], p->info.scratch_bytes[i])
                       : r->be->zero(r, s->buf[i], p->info.scratch_bytes[i], stream);
    }
    if (st != TILEC_OK) {
        if (aside) { /* nothing of it on any stream still: a device-wide wait is not needed, nor allowed */
            for (int i = 0; i < p->info.nscratch; i++)
                if (s->buf[i]) r->be->release(r, s->buf[i]);
            free(s);
            return st;
        }
        /* a zeroing may be under way: freed after the device's work (s->armed is false);
         * the first error is the one to report */
        if (scratch_free(r, s, false) != TILEC_OK) rt_log(r, "scratch: a set kept after a failed wait");
        return st;
    }
    s->next = r->scratch;
    r->scratch = s;
    r->nscratch++;
    rt_log(r, "scratch: new set for stream %p (%d kept)%s, %s", stream, r->nscratch,
           aside ? ", zeroed outside the stream's capture" : "", p->key);
    *out = s;
    return TILEC_OK;
}

/* The plan's set for a stream being captured into a graph, made ready outside the
 * capture and pinned, so that the launch is all the capture gets: in the backend's
 * relaxed mode, nothing enqueued on the stream. A set kept from calls before the capture
 * is waited for through its event (recorded before the capture began) and zeroed aside;
 * one without an event (a launch with it failed: its state is unknown, and only a wait
 * for the whole device, which the capture forbids, would tell when it is idle) is set
 * aside until close and replaced by a new one. */
static tilec_status scratch_for_capture(rt *r, const rt_plan *p, void *stream, uint64_t thread, rt_scratch **io) {
    int saved = 0;
    tilec_status st = r->be->relax ? r->be->relax(r, &saved) : TILEC_OK;
    if (st != TILEC_OK) return st;
    rt_scratch *s = *io; /* at the front when found (scratch_find) */
    if (s && !s->armed) {
        r->scratch = s->next;
        r->nscratch--;
        s->next = r->retired;
        r->retired = s;
        rt_log(r, "scratch: the set of stream %p set aside until close: a launch with it failed, and the stream is "
                  "being captured; %s", stream, p->key);
        s = NULL;
    }
    if (s) {
        st = r->be->wait(r, s->done);
        for (int i = 0; i < p->info.nscratch && st == TILEC_OK; i++) st = r->be->zero_aside(r, s->buf[i], p->info.scratch_bytes[i]);
    } else {
        st = scratch_make(r, p, stream, thread, true, &s);
    }
    if (st == TILEC_OK) {
        s->armed = false;
        s->pinned = true;
        rt_log(r, "scratch: the set of stream %p pinned for its capture, %s", stream, p->key);
        *io = s;
    }
    if (r->be->unrelax) r->be->unrelax(r, saved);
    return st;
}

tilec_status rt_capturing(rt *r, void *stream, bool *yes) {
    *yes = false;
    return r->be->capturing ? r->be->capturing(r, stream, yes) : TILEC_OK;
}

/* The plan's scratch for the stream, ready for a launch: a pinned set as it is (after
 * tilec_reduce_prepare or a captured call: no driver call); else, the stream asked
 * whether it is being captured, and then a set made ready outside the capture
 * (scratch_for_capture), or the one found, or one made and zeroed on the stream. */
static tilec_status scratch_ready(rt *r, const rt_plan *p, void *stream, rt_scratch **out) {
    uint64_t thread = stream == RT_STREAM_PER_THREAD ? this_thread() : 0;
    rt_scratch *s = scratch_find(r, p, stream, thread);
    bool captured = false;
    tilec_status st = s && s->pinned ? TILEC_OK : rt_capturing(r, stream, &captured);
    if (st == TILEC_OK && captured) st = scratch_for_capture(r, p, stream, thread, &s);
    else if (st == TILEC_OK && !s) st = scratch_make(r, p, stream, thread, false, &s);
    if (st == TILEC_OK) *out = s;
    return st;
}

tilec_status rt_launch(rt *r, rt_plan *p, void *const *args, int nargs, void *stream) {
    rt_scratch *s = NULL;
    tilec_status st = p->info.nscratch ? scratch_ready(r, p, stream, &s) : TILEC_OK;
    if (st != TILEC_OK) return st;
    bool track = s && !s->pinned; /* a pinned set's launches may be captured: no event after them */
    if (track) s->armed = false;  /* until an event follows this launch */
    st = r->be->launch(r, p, args, nargs, s ? s->buf : NULL, stream);
    if (st != TILEC_OK && s) {
        /* a simulation stopped part way (its budget, an error found) left the counters and
         * partials where it stopped, which the next launch would start from: zeroed again,
         * on the stream (a GPU launch that failed ran nothing; zeroing changes nothing) */
        for (int i = 0; i < p->info.nscratch; i++) r->be->zero(r, s->buf[i], p->info.scratch_bytes[i], stream);
        return st;
    }
    if (st == TILEC_OK && track && (st = r->be->record(r, &s->done, stream)) == TILEC_OK) s->armed = true;
    return st;
}

tilec_status rt_prepare(rt *r, rt_plan *p, void *stream) {
    rt_scratch *s = NULL;
    tilec_status st = p->info.nscratch ? scratch_ready(r, p, stream, &s) : TILEC_OK;
    if (st != TILEC_OK || !s) return st;
    if (!s->pinned) { /* its zeroing (or its last launch) finished, then pinned */
        if ((st = r->be->record(r, &s->done, stream)) == TILEC_OK) st = r->be->wait(r, s->done);
        if (st != TILEC_OK) return st;
        s->armed = false;
        s->pinned = true;
    }
    return TILEC_OK;
}

tilec_status rt_load(rt *r, rt_plan *p, const void *binary) {
    int saved = 0;
    tilec_status st = r->be->relax ? r->be->relax(r, &saved) : TILEC_OK;
    if (st != TILEC_OK) return st;
    st = r->be->load(r, p, binary);
    if (r->be->unrelax) r->be->unrelax(r, saved);
    return st;
}

tilec_status rt_plan_load(rt *r, rt_plan *p, tilec_status st) {
    void *bin = NULL;
    size_t n = 0;
    if (st == TILEC_OK && ir_target(r->target.backend)->gpu) st = rt_plan_binary(r, p, &bin, &n);
    if (st == TILEC_OK) st = rt_load(r, p, bin);
    free(bin);
    if (st != TILEC_OK) {
        if (r->be->unload) r->be->unload(r, p);
        tilec_program_free(p->prog);
        free(p);
    }
    return st;
}

uint64_t rt_plan_hash(const int64_t id[RT_ID_WORDS]) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < RT_ID_WORDS; i++) h = (h ^ (uint64_t)id[i]) * 1099511628211ull;
    return h;
}

rt_plan *rt_plan_find(rt *r, const int64_t id[RT_ID_WORDS], uint64_t hash) {
    for (rt_plan *p = r->plans; p; p = p->next)
        if (p->hash == hash && memcmp(p->id, id, RT_ID_WORDS * sizeof *id) == 0) {
            rt_log(r, "hit  %s", p->key);
            return p;
        }
    return NULL;
}

static void rt_free(void *p) {
    rt *r = p;
    /* the scratch first: a set goes once its last launch has finished */
    for (rt_scratch *s = r->scratch, *next; s; s = next) {
        next = s->next;
        scratch_free(r, s, true);
    }
    for (rt_scratch *s = r->retired, *next; s; s = next) {
        next = s->next;
        scratch_free(r, s, true);
    }
    for (rt_plan *pl = r->plans, *next; pl; pl = next) {
        next = pl->next;
        for (rt_aux *a = pl->aux, *an; a; a = an) {
            an = a->next;
            r->be->release(r, a->dev);
            free(a);
        }
        if (r->be->unload) r->be->unload(r, pl);
        tilec_program_free(pl->prog);
        free(pl);
    }
    if (r->seg_status) r->be->release(r, r->seg_status);
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
    rt_fused_regs_env(r);
    tilec_status st = be->open(r, device);
    if (st != TILEC_OK) {
        free(r);
        return st;
    }
    if (ir_target(be->kind)->cache_kind) {
        cache_open(&r->cache); /* binaries to keep */
        rt_costs_open(r);      /* and the device's own cost model constants, when measured */
    }
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

static tilec_status binary_of_source(rt *r, const char *kernel, const char *source, void **data, size_t *size) {
    const char *compiler = rtc_version(r->target.backend);
    ir_str key = {0};
    ir_str_printf(&key, "tilec kernel cache 1\ntilec %s\n%s %s warp %d\n%s\n", TILEC_VERSION_STRING,
                  tilec_backend_name(r->target.backend), r->target.arch, r->target.warp_size, compiler ? compiler : "none");
    ir_str_put(&key, source, strlen(source));
    if (key.oom) { ir_str_free(&key); return TILEC_ERR_NOMEM; }
    rtc_dump_source(r->ctx, r->target.backend, kernel, key.data, key.len, source); /* TILEC_DUMP_SOURCE, hit or miss */
    build_arg a = {r, source, TILEC_OK};
    int hits = r->cache.hits, failures = r->cache.store_failures, timeouts = r->cache.lock_timeouts;
    bool ok = cache_get(&r->cache, key.data, key.len, ir_target(r->be->kind)->cache_kind, build_binary, &a,
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
    lp_kernel *ks[1] = {p->kernel};
    return rt_binary(r, p->prog, ks, data, size);
}

tilec_status rt_binary(rt *r, const tilec_program *prog, lp_kernel *const *kernels, void **data, size_t *size) {
    ir_str src = {0};
    cg_emit_program(&src, cg_target_for(r->target.backend), prog, kernels);
    if (src.oom) { ir_str_free(&src); return TILEC_ERR_NOMEM; }
    const char *name = "kernel"; /* TILEC_DUMP_SOURCE's file is named by the first kernel lowered */
    for (int i = 0; i < prog->nkernels; i++)
        if (kernels[i]) { name = tilec_kernel_name(kernels[i]->tile); break; }
    tilec_status st = binary_of_source(r, name, src.data, data, size);
    ir_str_free(&src);
    return st;
}

tilec_status tilec_runtime_open(tilec_ctx *ctx, tilec_backend backend, int device) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (device < 0) return ir_bad(ctx, "device %d is negative: devices are numbered from 0", device);
    if (ctx->runtime) {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the runtime of this context is already open (on %s)",
                    ((rt *)ctx->runtime)->be->name);
        return TILEC_ERR_INVALID_ARG;
    }
    rt *r = NULL;
    tilec_status st;
    /* a backend's runtime; AUTO tries the GPUs in this order, then the simulator */
    static const rt_backend *const backends[TILEC_BACKEND_COUNT] = {
        [TILEC_BACKEND_CUDA] = &rt_cuda, [TILEC_BACKEND_HIP] = &rt_hip, [TILEC_BACKEND_SIM] = &rt_sim};
    static const rt_backend *const gpus[] = {&rt_cuda, &rt_hip};
    if (backend == TILEC_BACKEND_AUTO) {
        st = TILEC_ERR_UNAVAILABLE;
        for (size_t i = 0; i < sizeof gpus / sizeof gpus[0] && st != TILEC_OK; i++) st = try_open(ctx, gpus[i], device, &r);
        if (st != TILEC_OK) {
            ir_begin(ctx); /* a missing GPU is no error for AUTO */
            st = try_open(ctx, &rt_sim, 0, &r);
        }
    } else if ((unsigned)backend < TILEC_BACKEND_COUNT && backends[backend]) {
        st = try_open(ctx, backends[backend], device, &r);
    } else {
        ir_diag_add(ctx, NULL, TILEC_SEV_ERROR, 0, 0, "backend %d is not a tilec_backend", (int)backend);
        return TILEC_ERR_INVALID_ARG;
    }
    if (st != TILEC_OK) return st;
    ctx->runtime = r;
    ctx->runtime_free = rt_free;
    for (int i = 0; i < r->cache.nnotes; i++) { /* what the cache does not do as asked: a note of this call, and the log */
        ir_diag_add(ctx, NULL, TILEC_SEV_NOTE, 0, 0, "%s", r->cache.notes[i]);
        rt_log(r, "%s", r->cache.notes[i]);
    }
    rt_log(r, "backend %s, target %s %s, warp size %d", r->be->name, tilec_backend_name(r->target.backend),
           r->target.arch, r->target.warp_size);
    return TILEC_OK;
}

tilec_backend tilec_runtime_backend(const tilec_ctx *ctx) {
    return ctx && ctx->runtime ? ((rt *)ctx->runtime)->be->kind : TILEC_BACKEND_AUTO;
}

tilec_status rt_lowering_target(rt *r, bool unaligned, dsp_target *t) {
    *t = r->target;
    t->unaligned = unaligned;
    return dsp_target_take_costs(r->ctx, t);
}

tilec_status rt_get(tilec_ctx *ctx, rt **out) {
    if (!ctx->runtime) {
        tilec_status st = tilec_runtime_open(ctx, TILEC_BACKEND_AUTO, 0);
        if (st != TILEC_OK) return st;
    }
    *out = ctx->runtime;
    return TILEC_OK;
}

/* "s" unless n is 1: "%zu byte%s" */
static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

/* Bytes [lo, lo + n) reach past base + size by this much (0: not past), without
 * wrapping; SIZE_MAX where that is more than a size_t holds. */
static size_t past_end(uintptr_t lo, size_t n, uintptr_t base, size_t size) {
    uintptr_t end = base + size; /* a block's end is an address */
    if (lo >= end) return n > SIZE_MAX - (size_t)(lo - end) ? SIZE_MAX : (size_t)(lo - end) + n;
    size_t room = (size_t)(end - lo);
    return n > room ? n - room : 0;
}

tilec_status rt_within(rt *r, const char *what, uintptr_t lo, size_t n) {
    uintptr_t base;
    size_t size;
    if (!n || !r->be->extent || !r->be->extent(r, lo, n, &base, &size)) return TILEC_OK;
    size_t before = lo < base ? (size_t)(base - lo) : 0, past = past_end(lo, n, base, size);
    if (before && past)
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s reaches %zu byte%s before the start and %zu past the end of an "
                    "allocation of %zu byte%s; check its shape, strides and pointer", what, before, plural(before), past,
                    size, plural(size));
    else if (before || past)
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s reaches %zu byte%s %s of an allocation of %zu byte%s; check its "
                    "shape, strides and pointer", what, before ? before : past, plural(before ? before : past),
                    before ? "before the start" : "past the end", size, plural(size));
    return before || past ? TILEC_ERR_INVALID_ARG : TILEC_OK;
}

/* ---- memory -------------------------------------------------------------------------- */

/* On a backend that knows its allocations (the simulator): device bytes [lo, lo + n) of a
 * copy lie inside one block this context allocated; else TILEC_ERR_INVALID_ARG saying
 * where they fall, as a GPU's copy would fail rather than write past a block. */
static tilec_status rt_inside(rt *r, const char *call, const char *what, uintptr_t lo, size_t n) {
    uintptr_t base;
    size_t size;
    if (!n || !r->be->extent) return TILEC_OK;
    if (!r->be->extent(r, lo, n, &base, &size))
        return ir_bad(r->ctx, "%s: the %s %p (%zu byte%s) is not in memory this context allocated (tilec_mem_alloc), or "
                      "it was freed; nothing was copied", call, what, (void *)lo, n, plural(n));
    if (lo < base)
        return ir_bad(r->ctx, "%s: the %s starts %zu byte%s before an allocation of %zu byte%s; nothing was copied", call,
                      what, (size_t)(base - lo), plural((size_t)(base - lo)), size, plural(size));
    size_t at = (size_t)(lo - base), past = past_end(lo, n, base, size), room = at < size ? size - at : 0;
    if (past)
        return ir_bad(r->ctx, "%s: %zu byte%s from byte %zu of an allocation of %zu byte%s reach %zu byte%s past its end; "
                      "copy at most %zu byte%s there; nothing was copied", call, n, plural(n), at, size, plural(size),
                      past, plural(past), room, plural(room));
    return TILEC_OK;
}

/* A copy between the host and device memory: the device side within one of the
 * context's blocks (where the backend knows them), the host side within any block it
 * meets (on the simulator host memory may be a block too). */
static tilec_status copy(tilec_ctx *ctx, const char *call, void *dst, const void *src, size_t bytes, bool up) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (bytes && (!dst || !src))
        return ir_bad(ctx, "%s: the %s is NULL, with %zu byte%s to copy", call, !dst ? "destination" : "source", bytes,
                      plural(bytes));
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    if (st != TILEC_OK || !bytes) return st;
    const void *dev = up ? dst : src, *host = up ? src : dst;
    if ((st = rt_inside(r, call, up ? "destination" : "source", (uintptr_t)dev, bytes)) != TILEC_OK) return st;
    char what[64];
    snprintf(what, sizeof what, "%s: the host %s", call, up ? "source" : "destination");
    if ((st = rt_within(r, what, (uintptr_t)host, bytes)) != TILEC_OK) return st;
    return up ? r->be->upload(r, dst, src, bytes) : r->be->download(r, dst, src, bytes);
}

tilec_status tilec_mem_alloc(tilec_ctx *ctx, size_t bytes, void **ptr) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!ptr) return ir_bad(ctx, "tilec_mem_alloc: ptr is NULL; pass where the block's address goes");
    *ptr = NULL;
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    return st == TILEC_OK ? r->be->alloc(r, bytes ? bytes : 1, ptr) : st;
}

tilec_status tilec_mem_free(tilec_ctx *ctx, void *ptr) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    if (!ptr) return TILEC_OK;
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    return st == TILEC_OK ? r->be->release(r, ptr) : st;
}

tilec_status tilec_mem_upload(tilec_ctx *ctx, void *dst, const void *src, size_t bytes) {
    return copy(ctx, "tilec_mem_upload", dst, src, bytes, true);
}

tilec_status tilec_mem_download(tilec_ctx *ctx, void *dst, const void *src, size_t bytes) {
    return copy(ctx, "tilec_mem_download", dst, src, bytes, false);
}

tilec_status tilec_synchronize(tilec_ctx *ctx) {
    if (!ctx) return TILEC_ERR_INVALID_ARG;
    ir_begin(ctx);
    rt *r;
    tilec_status st = rt_get(ctx, &r);
    if (st == TILEC_OK) st = r->be->sync(r);
    return st == TILEC_OK ? rt_segmented_status(r) : st;
}
