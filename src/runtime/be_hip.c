/*
 * be_hip.c — the HIP backend, mirroring be_cuda.c: libamdhip64 through dlopen, code
 * objects compiled by hiprtc, modules loaded from memory. The device's arch (gfxNNN) comes
 * from TILEC_HIP_ARCH, since the layout of hipDeviceProp_t changes between ROCm releases.
 * Only "no HIP device" is exercised here (no AMD GPU is lent to this project).
 *
 * HIP acts on the calling thread's current device (hipCtx* is deprecated): every function
 * here that calls into HIP sets the runtime's device (enter) and sets the caller's back
 * before returning (leave), so any thread may use the context, one at a time.
 */
#include "runtime.h"

#include "rtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;

typedef struct hip_dev {
    void *lib;
    char arch[64];
    int device;
    hipError_t (*init)(unsigned);
    hipError_t (*count)(int *);
    hipError_t (*set_device)(int);
    hipError_t (*get_device)(int *);
    hipError_t (*mem_alloc)(void **, size_t);
    hipError_t (*mem_free)(void *);
    hipError_t (*htod)(void *, const void *, size_t);
    hipError_t (*dtoh)(void *, const void *, size_t);
    hipError_t (*memset8)(void *, unsigned char, size_t, void *);
    hipError_t (*sync)(void);
    hipError_t (*event_create)(void **, unsigned);
    hipError_t (*event_record)(void *, void *);
    hipError_t (*event_sync)(void *);
    hipError_t (*event_destroy)(void *);
    hipError_t (*load)(void **, const void *);
    hipError_t (*unload)(void *);
    hipError_t (*function)(void **, void *, const char *);
    hipError_t (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
    const char *(*error)(hipError_t);
} hip_dev;

static bool bind(void *lib, void *fn, const char *name) {
    void *p = dlsym(lib, name);
    memcpy(fn, &p, sizeof p);
    return p != NULL;
}

static tilec_status fail(rt *r, hipError_t e, const char *what) {
    hip_dev *d = r->dev;
    const char *s = d->error ? d->error(e) : NULL;
    ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "HIP %s failed: %s (%d)", what, s ? s : "unknown error", e);
    return TILEC_ERR_UNAVAILABLE;
}

enum { EVENT_DISABLE_TIMING = 2 };

/* The runtime's device current on this thread until leave(prev). */
static tilec_status enter(rt *r, int *prev) {
    hip_dev *d = r->dev;
    hipError_t e = d->get_device(prev);
    if (!e && *prev != d->device) e = d->set_device(d->device);
    return e ? fail(r, e, "hipSetDevice") : TILEC_OK;
}

/* The caller's device current again. */
static void leave(rt *r, int prev) {
    hip_dev *d = r->dev;
    if (prev != d->device) d->set_device(prev);
}

static tilec_status hip_open(rt *r, int device) {
    static const char *const names[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"};
    hip_dev *d = calloc(1, sizeof *d);
    if (!d) return TILEC_ERR_NOMEM;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !d->lib; i++) d->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!d->lib) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no HIP runtime: libamdhip64.so.7, .6 and .5 could not be loaded");
        free(d);
        return TILEC_ERR_UNAVAILABLE;
    }
    r->dev = d;
    bool ok = bind(d->lib, &d->init, "hipInit") && bind(d->lib, &d->count, "hipGetDeviceCount") &&
              bind(d->lib, &d->set_device, "hipSetDevice") && bind(d->lib, &d->get_device, "hipGetDevice") &&
              bind(d->lib, &d->mem_alloc, "hipMalloc") &&
              bind(d->lib, &d->mem_free, "hipFree") && bind(d->lib, &d->htod, "hipMemcpyHtoD") &&
              bind(d->lib, &d->dtoh, "hipMemcpyDtoH") && bind(d->lib, &d->memset8, "hipMemsetD8Async") &&
              bind(d->lib, &d->sync, "hipDeviceSynchronize") && bind(d->lib, &d->event_create, "hipEventCreateWithFlags") &&
              bind(d->lib, &d->event_record, "hipEventRecord") && bind(d->lib, &d->event_sync, "hipEventSynchronize") &&
              bind(d->lib, &d->event_destroy, "hipEventDestroy") && bind(d->lib, &d->load, "hipModuleLoadData") &&
              bind(d->lib, &d->unload, "hipModuleUnload") && bind(d->lib, &d->function, "hipModuleGetFunction") &&
              bind(d->lib, &d->launch, "hipModuleLaunchKernel") && bind(d->lib, &d->error, "hipGetErrorString");
    int n = 0;
    hipError_t e = ok ? d->init(0) : 0;
    if (ok && !e) e = d->count(&n);
    const char *arch = getenv("TILEC_HIP_ARCH");
    if (!ok || e || n == 0 || device >= n || !arch || strncmp(arch, "gfx", 3) != 0) {
        if (!ok) ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the HIP runtime lacks entry points tilec needs");
        else if (e || n == 0) ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the HIP runtime sees no AMD GPU");
        else if (device >= n) ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "HIP device %d does not exist (%d found)", device, n);
        else ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "set TILEC_HIP_ARCH to the GPU's arch (gfx90a, gfx942…)");
        /* the library stays loaded: once initialised, the HIP runtime does not survive
         * being unloaded (its threads and allocations remain) */
        free(d);
        r->dev = NULL;
        return TILEC_ERR_UNAVAILABLE;
    }
    d->device = device; /* made current by each call (enter), not here */
    snprintf(d->arch, sizeof d->arch, "%s", arch);
    dsp_target t;
    char why[200];
    tilec_target want = {TILEC_BACKEND_HIP, d->arch, 0};
    if (!dsp_target_resolve(&want, &t, why, sizeof why)) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s", why);
        return TILEC_ERR_UNAVAILABLE;
    }
    r->target = t;
    return TILEC_OK;
}

static void hip_close(rt *r) {
    hip_dev *d = r->dev;
    if (!d) return;
    dlclose(d->lib);
    free(d);
}

static tilec_status hip_alloc(rt *r, size_t n, void **p) {
    hip_dev *d = r->dev;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    hipError_t e = d->mem_alloc(p, n);
    leave(r, prev);
    return e ? fail(r, e, "hipMalloc") : TILEC_OK;
}
static tilec_status hip_release(rt *r, void *p) {
    hip_dev *d = r->dev;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    hipError_t e = d->mem_free(p);
    leave(r, prev);
    return e ? fail(r, e, "hipFree") : TILEC_OK;
}
static tilec_status hip_upload(rt *r, void *dst, const void *src, size_t n) {
    hip_dev *d = r->dev;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    hipError_t e = d->htod(dst, src, n);
    leave(r, prev);
    return e ? fail(r, e, "hipMemcpyHtoD") : TILEC_OK;
}
static tilec_status hip_download(rt *r, void *dst, const void *src, size_t n) {
    hip_dev *d = r->dev;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    hipError_t e = d->dtoh(dst, src, n);
    leave(r, prev);
    return e ? fail(r, e, "hipMemcpyDtoH") : TILEC_OK;
}
static tilec_status hip_zero(rt *r, void *dst, size_t n, void *stream) {
    hip_dev *d = r->dev;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    hipError_t e = d->memset8(dst, 0, n, stream);
    leave(r, prev);
    return e ? fail(r, e, "hipMemsetD8Async") : TILEC_OK;
}
static tilec_status hip_sync(rt *r) {
    hip_dev *d = r->dev;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    hipError_t e = d->sync();
    leave(r, prev);
    return e ? fail(r, e, "hipDeviceSynchronize") : TILEC_OK;
}

/* Events: one per scratch set, recorded after each launch with it (runtime.c). */
static tilec_status hip_record(rt *r, void **event, void *stream) {
    hip_dev *d = r->dev;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    const char *what = "hipEventCreateWithFlags";
    hipError_t e = *event ? 0 : d->event_create(event, EVENT_DISABLE_TIMING);
    if (!e) what = "hipEventRecord", e = d->event_record(*event, stream);
    leave(r, prev);
    return e ? fail(r, e, what) : TILEC_OK;
}

static tilec_status hip_wait(rt *r, void *event) {
    hip_dev *d = r->dev;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    hipError_t e = d->event_sync(event);
    leave(r, prev);
    return e ? fail(r, e, "hipEventSynchronize") : TILEC_OK;
}

static void hip_event_free(rt *r, void *event) {
    hip_dev *d = r->dev;
    int prev;
    if (enter(r, &prev) != TILEC_OK) return;
    d->event_destroy(event);
    leave(r, prev);
}

static tilec_status load_module(rt *r, rt_plan *p, const void *bin) {
    hip_dev *d = r->dev;
    hipError_t e = d->load(&p->module, bin);
    if (e) return fail(r, e, "hipModuleLoadData");
    if ((e = d->function(&p->function, p->module, p->info.symbol))) return fail(r, e, "hipModuleGetFunction");
    return TILEC_OK;
}

static tilec_status hip_load(rt *r, rt_plan *p, const void *bin) {
    int prev;
    tilec_status st = enter(r, &prev);
    if (st == TILEC_OK) {
        st = load_module(r, p, bin);
        leave(r, prev);
    }
    return st;
}

static tilec_status hip_launch(rt *r, rt_plan *p, void *const *args, int nargs, void *const *scratch, void *stream) {
    hip_dev *d = r->dev;
    void *v[RT_MAX_ARGS + 4], *params[RT_MAX_ARGS + 4];
    int n = 0;
    for (int i = 0; i < nargs && i < RT_MAX_ARGS; i++) v[n++] = args[i];
    for (int i = 0; i < p->info.nscratch && i < 4; i++) v[n++] = scratch[i];
    for (int i = 0; i < n; i++) params[i] = &v[i];
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    hipError_t e = d->launch(p->function, (unsigned)p->info.grid, 1, 1, (unsigned)p->info.threads, 1, 1,
                             (unsigned)p->info.dynamic_shared, stream, params, NULL);
    leave(r, prev);
    return e ? fail(r, e, "hipModuleLaunchKernel") : TILEC_OK;
}

static void hip_unload(rt *r, rt_plan *p) {
    hip_dev *d = r->dev;
    int prev;
    if (p->module && enter(r, &prev) == TILEC_OK) {
        d->unload(p->module);
        leave(r, prev);
    }
    p->module = p->function = NULL;
}

const rt_backend rt_hip = {
    .kind = TILEC_BACKEND_HIP,
    .name = "hip",
    .open = hip_open,
    .close = hip_close,
    .alloc = hip_alloc,
    .release = hip_release,
    .upload = hip_upload,
    .download = hip_download,
    .zero = hip_zero,
    .sync = hip_sync,
    .record = hip_record,
    .wait = hip_wait,
    .event_free = hip_event_free,
    .load = hip_load,
    .launch = hip_launch,
    .unload = hip_unload,
    .device_enter = enter,
    .device_leave = leave,
};
