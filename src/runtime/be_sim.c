/*
 * be_sim.c — the simulator backend: device memory is host memory, a plan's loop IR runs
 * on the CPU (sim.c), everything is synchronous. It is what tilec_reduce runs on where
 * there is no GPU, and what CI tests the whole JIT path with.
 *
 * The backend keeps the blocks it allocated, so that tilec_reduce can refuse a view that
 * meets a block but does not fit in the bytes asked for (the CPU would read another
 * object's memory), and tilec_mem_free can refuse a pointer it never gave out. Memory
 * that meets no block of the context is taken on trust.
 *
 * A stream is any handle, and changes nothing here but which scratch set the runtime
 * passes (runtime.c): every call has finished when it returns, so an event has nothing to
 * wait for. The kernel runs on the runtime's scratch, kept between calls as on a GPU.
 */
#include "runtime.h"
#include "env.h"
#include "sim.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { SIM_SMS = 4, SIM_SMS_MAX = 1024 };

/* The blocks alloc made and release has not freed: their bases, the sizes asked for and
 * the sizes reserved (rounded up to 256 bytes). */
typedef struct sim_block {
    uintptr_t base;
    size_t size, reserved;
} sim_block;

typedef struct sim_dev {
    sim_block *blocks;
    size_t n, cap;
} sim_dev;

static tilec_status sim_open(rt *r, int device) {
    (void)device;
    /* the simulator stands for a small GPU of SIM_SMS multiprocessors (TILEC_SIM_SMS says
     * otherwise): grid variants cut work into few CTAs, so the tests reach each of their
     * paths at sizes a CPU runs quickly. The count changes the launch, never the bits. */
    uint64_t sms = SIM_SMS;
    const char *env = getenv("TILEC_SIM_SMS");
    if (env && *env && (!rt_parse_u64(env, NULL, SIM_SMS_MAX, &sms) || sms == 0)) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "TILEC_SIM_SMS=%.40s is not a multiprocessor count: give 1 to %d, or unset it for %d", env,
                    SIM_SMS_MAX, SIM_SMS);
        return TILEC_ERR_INVALID_ARG;
    }
    /* and of warps of 32 threads, or of 64 (TILEC_SIM_WARP_SIZE=64: a wave64 GPU's lowerings,
     * which the JIT's plans then take, as a tile program's do with --warp-size 64) */
    uint64_t warp = 32;
    env = getenv("TILEC_SIM_WARP_SIZE");
    if (env && *env && (!rt_parse_u64(env, NULL, 64, &warp) || (warp != 32 && warp != 64))) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "TILEC_SIM_WARP_SIZE=%.40s is not a warp size: give 32 or 64, or unset it for 32", env);
        return TILEC_ERR_INVALID_ARG;
    }
    if (!(r->dev = calloc(1, sizeof(sim_dev)))) return TILEC_ERR_NOMEM;
    r->target = (dsp_target){.backend = TILEC_BACKEND_SIM, .arch = "cpu", .warp_size = (int)warp, .sms = (int)sms};
    return TILEC_OK;
}

/* Frees the blocks still allocated too: tilec_close frees everything the context owns,
 * the device memory the caller did not free included (as a GPU context's destruction
 * does). */
static void sim_close(rt *r) {
    sim_dev *d = r->dev;
    for (size_t i = 0; d && i < d->n; i++) free((void *)d->blocks[i].base);
    if (d) free(d->blocks);
    free(d);
    r->dev = NULL;
}

static tilec_status sim_alloc(rt *r, size_t n, void **p) {
    sim_dev *d = r->dev;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        sim_block *b = realloc(d->blocks, cap * sizeof *b);
        if (!b) return TILEC_ERR_NOMEM;
        d->blocks = b, d->cap = cap;
    }
    if (n > SIZE_MAX - 255) return TILEC_ERR_NOMEM;
    size_t reserved = (n + 255) & ~(size_t)255;
    if (!(*p = aligned_alloc(256, reserved))) return TILEC_ERR_NOMEM;
    d->blocks[d->n++] = (sim_block){(uintptr_t)*p, n, reserved};
    return TILEC_OK;
}

static tilec_status sim_release(rt *r, void *p) {
    sim_dev *d = r->dev;
    for (size_t i = 0; i < d->n; i++)
        if (d->blocks[i].base == (uintptr_t)p) {
            d->blocks[i] = d->blocks[--d->n];
            free(p);
            return TILEC_OK;
        }
    ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                "tilec_mem_free: %p is not memory this context allocated, or it was freed already; nothing was freed", p);
    return TILEC_ERR_INVALID_ARG;
}

/* The first block whose reserved bytes meet [lo, lo + n); an end past the address space
 * is its last address (lo + n used to wrap, and a block it ran past was not found). */
static bool sim_extent(rt *r, uintptr_t lo, size_t n, uintptr_t *base, size_t *size) {
    const sim_dev *d = r->dev;
    uintptr_t end = n > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + n;
    for (size_t i = 0; i < d->n; i++) {
        const sim_block *b = &d->blocks[i];
        if (lo < b->base + b->reserved && b->base < end) {
            *base = b->base, *size = b->size;
            return true;
        }
    }
    return false;
}

static tilec_status sim_copy(rt *r, void *dst, const void *src, size_t n) {
    (void)r;
    memmove(dst, src, n);
    return TILEC_OK;
}

static tilec_status sim_zero(rt *r, void *dst, size_t n, void *stream) {
    (void)r, (void)stream;
    memset(dst, 0, n);
    return TILEC_OK;
}

/* No stream of the simulator is ever being captured (it has no `capturing`), but a test's
 * backend may say one is: the set made for it is zeroed here. */
static tilec_status sim_zero_aside(rt *r, void *dst, size_t n) { return sim_zero(r, dst, n, NULL); }

static tilec_status sim_sync(rt *r) {
    (void)r;
    return TILEC_OK;
}

static tilec_status sim_record(rt *r, void **event, void *stream) {
    (void)r, (void)event, (void)stream;
    return TILEC_OK;
}

static tilec_status sim_wait(rt *r, void *event) {
    (void)r, (void)event;
    return TILEC_OK;
}

static void sim_event_free(rt *r, void *event) { (void)r, (void)event; }

static tilec_status sim_load(rt *r, rt_plan *p, const void *binary) {
    (void)r, (void)p, (void)binary;
    return TILEC_OK;
}

static tilec_status sim_launch(rt *r, rt_plan *p, void *const *args, int nargs, void *const *scratch, void *stream) {
    (void)stream;
    (void)r;
    (void)nargs; /* the kernel's parameters, which it only reads the first of */
    return sim_run_scratch(p->prog, p->kernel, (void **)args, p->info.nscratch ? scratch : NULL);
}

const rt_backend rt_sim = {
    .kind = TILEC_BACKEND_SIM,
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .alloc = sim_alloc,
    .release = sim_release,
    .upload = sim_copy,
    .download = sim_copy,
    .zero = sim_zero,
    .sync = sim_sync,
    .record = sim_record,
    .wait = sim_wait,
    .event_free = sim_event_free,
    .load = sim_load,
    .launch = sim_launch,
    .extent = sim_extent,
    .zero_aside = sim_zero_aside,
};
