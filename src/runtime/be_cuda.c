/*
 * be_cuda.c — the CUDA backend: the driver API through dlopen("libcuda.so.1") (never the
 * bare libcuda.so, which can be the toolkit's stub), the device's primary context, CUBINs
 * compiled by NVRTC for its exact sm_XY, modules loaded from memory.
 *
 * The driver acts on the calling thread's current context, and a context may be used
 * from any thread, one at a time: every function here that calls into the driver pushes
 * the primary context (enter) and pops it before returning (leave), so a thread that has
 * no context current, or another one, works, and finds its own current again afterwards.
 */
#include "runtime.h"

#include "rtc.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

typedef struct cuda_dev {
    void *lib;
    int device;
    char arch[16]; /* sm_XY of the device; the target points here */
    void *context;
    CUresult (*init)(unsigned);
    CUresult (*count)(int *);
    CUresult (*get)(int *, int);
    CUresult (*attribute)(int *, int, int);
    CUresult (*retain)(void **, int);
    CUresult (*unretain)(int);
    CUresult (*push)(void *);
    CUresult (*pop)(void **);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, void *);
    CUresult (*sync)(void);
    CUresult (*event_create)(void **, unsigned);
    CUresult (*event_record)(void *, void *);
    CUresult (*event_sync)(void *);
    CUresult (*event_destroy)(void *);
    CUresult (*load)(void **, const void *);
    CUresult (*unload)(void *);
    CUresult (*function)(void **, void *, const char *);
    CUresult (*set_attribute)(void *, int, int);
    CUresult (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
    CUresult (*error)(CUresult, const char **);
    CUresult (*driver_version)(int *);
    CUresult (*get_current)(void **); /* optional: a launch skips the push when ours is current */
    CUresult (*name)(char *, int, int); /* optional: cuDeviceGetName, for the cost model's constants file */
    /* graph capture (docs/runtime.md, "CUDA graphs"): all of them, or none used */
    CUresult (*is_capturing)(void *, int *);   /* cuStreamIsCapturing */
    CUresult (*exchange_mode)(int *);          /* cuThreadExchangeStreamCaptureMode */
    CUresult (*stream_create)(void **, unsigned);
    CUresult (*stream_sync)(void *);
    CUresult (*stream_destroy)(void *);
    void *aside; /* a non-blocking stream of the backend's own for zero_aside, made on its first use */
} cuda_dev;

enum { SM_COUNT = 16, CC_MAJOR = 75, CC_MINOR = 76, MAX_DYNAMIC_SHARED = 8, NON_PORTABLE_CLUSTER = 14,
       ERR_CLUSTER_SIZE = 912, ERR_STUB = 34, ERR_NO_DEVICE = 100, ERR_NO_DRIVER = 35,
       EVENT_DISABLE_TIMING = 2, STREAM_NON_BLOCKING = 1, CAPTURE_MODE_RELAXED = 2 };

static bool bind(void *lib, void *fn, const char *name) {
    void *p = dlsym(lib, name);
    memcpy(fn, &p, sizeof p);
    return p != NULL;
}

static const char *why(const cuda_dev *d, CUresult r) {
    const char *s = NULL;
    if (d->error) d->error(r, &s);
    return s ? s : "unknown error";
}

static tilec_status fail(rt *r, CUresult res, const char *what) {
    cuda_dev *d = r->dev;
    ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "CUDA %s failed: %s (%d)", what, why(d, res), res);
    return TILEC_ERR_UNAVAILABLE;
}

/* The primary context current on this thread until leave(). */
static tilec_status enter(rt *r) {
    cuda_dev *d = r->dev;
    CUresult res = d->push(d->context);
    return res ? fail(r, res, "cuCtxPushCurrent") : TILEC_OK;
}

/* The caller's context (or none) current again. */
static void leave(rt *r) {
    cuda_dev *d = r->dev;
    void *popped;
    d->pop(&popped);
}

static tilec_status cuda_open(rt *r, int device) {
    cuda_dev *d = calloc(1, sizeof *d);
    if (!d) return TILEC_ERR_NOMEM;
    const char *no_loader = rt_no_loader();
    if (no_loader) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no CUDA driver: %s", no_loader);
        free(d);
        return TILEC_ERR_UNAVAILABLE;
    }
    d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d->lib) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "no CUDA driver: libcuda.so.1 could not be loaded (%s); install the NVIDIA driver, or use "
                    "the sim backend", dlerror());
        free(d);
        return TILEC_ERR_UNAVAILABLE;
    }
    bool ok = bind(d->lib, &d->init, "cuInit") && bind(d->lib, &d->count, "cuDeviceGetCount") &&
              bind(d->lib, &d->get, "cuDeviceGet") && bind(d->lib, &d->attribute, "cuDeviceGetAttribute") &&
              bind(d->lib, &d->retain, "cuDevicePrimaryCtxRetain") &&
              bind(d->lib, &d->unretain, "cuDevicePrimaryCtxRelease_v2") &&
              bind(d->lib, &d->push, "cuCtxPushCurrent_v2") && bind(d->lib, &d->pop, "cuCtxPopCurrent_v2") &&
              bind(d->lib, &d->mem_alloc, "cuMemAlloc_v2") &&
              bind(d->lib, &d->mem_free, "cuMemFree_v2") && bind(d->lib, &d->htod, "cuMemcpyHtoD_v2") &&
              bind(d->lib, &d->dtoh, "cuMemcpyDtoH_v2") && bind(d->lib, &d->memset8, "cuMemsetD8Async") &&
              bind(d->lib, &d->sync, "cuCtxSynchronize") && bind(d->lib, &d->event_create, "cuEventCreate") &&
              bind(d->lib, &d->event_record, "cuEventRecord") && bind(d->lib, &d->event_sync, "cuEventSynchronize") &&
              bind(d->lib, &d->event_destroy, "cuEventDestroy_v2") && bind(d->lib, &d->load, "cuModuleLoadData") &&
              bind(d->lib, &d->unload, "cuModuleUnload") && bind(d->lib, &d->function, "cuModuleGetFunction") &&
              bind(d->lib, &d->set_attribute, "cuFuncSetAttribute") && bind(d->lib, &d->launch, "cuLaunchKernel") &&
              bind(d->lib, &d->error, "cuGetErrorString") && bind(d->lib, &d->driver_version, "cuDriverGetVersion");
    if (!bind(d->lib, &d->get_current, "cuCtxGetCurrent")) d->get_current = NULL;
    if (!bind(d->lib, &d->name, "cuDeviceGetName")) d->name = NULL;
    /* capture support: every driver since CUDA 10.1 has these; without one of them, no
     * stream is taken for captured (and a capture gets what a call without it enqueues) */
    if (!(bind(d->lib, &d->is_capturing, "cuStreamIsCapturing") &&
          bind(d->lib, &d->exchange_mode, "cuThreadExchangeStreamCaptureMode") &&
          bind(d->lib, &d->stream_create, "cuStreamCreate") && bind(d->lib, &d->stream_sync, "cuStreamSynchronize") &&
          bind(d->lib, &d->stream_destroy, "cuStreamDestroy_v2")))
        d->is_capturing = NULL;
    r->dev = d;
    if (!ok) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "libcuda.so.1 lacks driver API entry points tilec needs");
        goto unusable;
    }
    CUresult res = d->init(0);
    if (res == ERR_STUB) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "libcuda.so.1 is the CUDA toolkit's stub library, not a driver: this machine has no NVIDIA driver");
        goto unusable;
    }
    if (res == ERR_NO_DEVICE || res == ERR_NO_DRIVER) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the NVIDIA driver sees no usable GPU (%s)", why(d, res));
        goto unusable;
    }
    if (res) { fail(r, res, "cuInit"); goto unusable; }
    int n = 0;
    if ((res = d->count(&n)) || device >= n) {
        if (res) fail(r, res, "cuDeviceGetCount");
        else ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "CUDA device %d does not exist (%d found)", device, n);
        goto unusable;
    }
    int major = 0, minor = 0, sms = 0;
    if ((res = d->get(&d->device, device)) || (res = d->attribute(&major, CC_MAJOR, d->device)) ||
        (res = d->attribute(&minor, CC_MINOR, d->device)) || (res = d->attribute(&sms, SM_COUNT, d->device)) ||
        (res = d->retain(&d->context, d->device))) {
        fail(r, res, "device setup");
        goto unusable;
    }
    if (!rtc_version(TILEC_BACKEND_CUDA)) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "a CUDA GPU is here but NVRTC is not: install the CUDA "
                                                         "toolkit's NVRTC or set TILEC_NVRTC_PATH");
        goto unusable;
    }
    /* CUBINs of a newer NVRTC major release need a driver of that release */
    int driver = 0, nv_major = 0;
    const char *nv = rtc_version(TILEC_BACKEND_CUDA);
    if (d->driver_version(&driver) == 0 && nv && sscanf(nv, "NVRTC %d", &nv_major) == 1 && driver / 1000 < nv_major) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "the NVIDIA driver supports CUDA %d.%d, older than %s: update the driver, or set "
                    "TILEC_NVRTC_PATH to an NVRTC of CUDA %d", driver / 1000, driver % 1000 / 10, nv, driver / 1000);
        goto unusable;
    }
    snprintf(d->arch, sizeof d->arch, "sm_%d%d", major, minor);
    r->target = (dsp_target){.backend = TILEC_BACKEND_CUDA, .arch = d->arch, .warp_size = 32, .sms = sms};
    if (!d->name || d->name(r->device_name, (int)sizeof r->device_name, d->device)) r->device_name[0] = '\0';
    r->device_name[sizeof r->device_name - 1] = '\0';
    return TILEC_OK;
unusable:
    if (d->context && d->unretain) d->unretain(d->device);
    dlclose(d->lib);
    free(d);
    r->dev = NULL;
    return TILEC_ERR_UNAVAILABLE;
}

static void cuda_close(rt *r) {
    cuda_dev *d = r->dev;
    if (!d) return;
    if (d->aside && enter(r) == TILEC_OK) {
        d->stream_destroy(d->aside);
        leave(r);
    }
    d->unretain(d->device);
    dlclose(d->lib);
    free(d);
}

static tilec_status cuda_alloc(rt *r, size_t n, void **p) {
    cuda_dev *d = r->dev;
    CUdeviceptr ptr = 0;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    CUresult res = d->mem_alloc(&ptr, n);
    leave(r);
    if (res) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "cuMemAlloc of %zu byte%s failed: %s", n, n == 1 ? "" : "s", why(d, res));
        return TILEC_ERR_NOMEM;
    }
    *p = (void *)(uintptr_t)ptr;
    return TILEC_OK;
}

static tilec_status cuda_release(rt *r, void *p) {
    cuda_dev *d = r->dev;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    CUresult res = d->mem_free((CUdeviceptr)(uintptr_t)p);
    leave(r);
    return res ? fail(r, res, "cuMemFree") : TILEC_OK;
}

static tilec_status cuda_upload(rt *r, void *dst, const void *src, size_t n) {
    cuda_dev *d = r->dev;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    CUresult res = d->htod((CUdeviceptr)(uintptr_t)dst, src, n);
    leave(r);
    return res ? fail(r, res, "cuMemcpyHtoD") : TILEC_OK;
}

static tilec_status cuda_download(rt *r, void *dst, const void *src, size_t n) {
    cuda_dev *d = r->dev;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    CUresult res = d->dtoh(dst, (CUdeviceptr)(uintptr_t)src, n);
    leave(r);
    return res ? fail(r, res, "cuMemcpyDtoH") : TILEC_OK;
}

static tilec_status cuda_zero(rt *r, void *dst, size_t n, void *stream) {
    cuda_dev *d = r->dev;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    CUresult res = d->memset8((CUdeviceptr)(uintptr_t)dst, 0, n, stream);
    leave(r);
    return res ? fail(r, res, "cuMemsetD8Async") : TILEC_OK;
}

/* On the backend's own non-blocking stream, waited for: ordered with no caller's stream
 * and not with the legacy default stream, so it touches no stream being captured (a
 * capture of a blocking stream forbids work on the legacy one). */
static tilec_status cuda_zero_aside(rt *r, void *dst, size_t n) {
    cuda_dev *d = r->dev;
    if (!d->is_capturing) return TILEC_ERR_INTERNAL; /* only sets made for a capture are zeroed so */
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    const char *what = "cuStreamCreate";
    CUresult res = d->aside ? 0 : d->stream_create(&d->aside, STREAM_NON_BLOCKING);
    if (!res) what = "cuMemsetD8Async", res = d->memset8((CUdeviceptr)(uintptr_t)dst, 0, n, d->aside);
    if (!res) what = "cuStreamSynchronize", res = d->stream_sync(d->aside);
    leave(r);
    return res ? fail(r, res, what) : TILEC_OK;
}

static tilec_status cuda_capturing(rt *r, void *stream, bool *yes) {
    cuda_dev *d = r->dev;
    *yes = false;
    if (!d->is_capturing) return TILEC_OK;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    int status = 0; /* CU_STREAM_CAPTURE_STATUS_NONE, _ACTIVE, _INVALIDATED */
    CUresult res = d->is_capturing(stream, &status);
    leave(r);
    if (res) return fail(r, res, "cuStreamIsCapturing");
    *yes = status != 0;
    return TILEC_OK;
}

/* The calling thread's capture mode relaxed (cuThreadExchangeStreamCaptureMode), so the
 * allocations, module loads and waits done outside a capture are allowed during it, on
 * this thread only; unrelax puts the caller's mode back. */
static tilec_status cuda_relax(rt *r, int *saved) {
    cuda_dev *d = r->dev;
    *saved = -1;
    if (!d->is_capturing) return TILEC_OK;
    int mode = CAPTURE_MODE_RELAXED;
    CUresult res = d->exchange_mode(&mode);
    if (res) return fail(r, res, "cuThreadExchangeStreamCaptureMode");
    *saved = mode;
    return TILEC_OK;
}

static void cuda_unrelax(rt *r, int saved) {
    cuda_dev *d = r->dev;
    if (saved >= 0 && d->is_capturing) d->exchange_mode(&saved);
}

static tilec_status cuda_sync(rt *r) {
    cuda_dev *d = r->dev;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    CUresult res = d->sync();
    leave(r);
    return res ? fail(r, res, "cuCtxSynchronize") : TILEC_OK;
}

/* Events: one per scratch set, recorded after each launch with it, so the set is freed
 * only once that launch has finished (runtime.c). No timing: a record costs less. */
static tilec_status cuda_record(rt *r, void **event, void *stream) {
    cuda_dev *d = r->dev;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    const char *what = "cuEventCreate";
    CUresult res = *event ? 0 : d->event_create(event, EVENT_DISABLE_TIMING);
    if (!res) what = "cuEventRecord", res = d->event_record(*event, stream);
    leave(r);
    return res ? fail(r, res, what) : TILEC_OK;
}

static tilec_status cuda_wait(rt *r, void *event) {
    cuda_dev *d = r->dev;
    tilec_status st = enter(r);
    if (st != TILEC_OK) return st;
    CUresult res = d->event_sync(event);
    leave(r);
    return res ? fail(r, res, "cuEventSynchronize") : TILEC_OK;
}

static void cuda_event_free(rt *r, void *event) {
    cuda_dev *d = r->dev;
    if (enter(r) != TILEC_OK) return;
    d->event_destroy(event);
    leave(r);
}

static tilec_status load_module(rt *r, rt_plan *p, const void *bin) {
    cuda_dev *d = r->dev;
    CUresult res = d->load(&p->module, bin);
    if (res) return fail(r, res, "cuModuleLoadData");
    if ((res = d->function(&p->function, p->module, p->info.symbol))) return fail(r, res, "cuModuleGetFunction");
    if (p->info.dynamic_shared &&
        (res = d->set_attribute(p->function, MAX_DYNAMIC_SHARED, (int)p->info.dynamic_shared)))
        return fail(r, res, "cuFuncSetAttribute");
    if (p->info.cluster > IR_PORTABLE_CLUSTER && (res = d->set_attribute(p->function, NON_PORTABLE_CLUSTER, 1)))
        return fail(r, res, "cuFuncSetAttribute (a cluster above the portable 8 CTAs)");
    return TILEC_OK;
}

static tilec_status cuda_load(rt *r, rt_plan *p, const void *bin) {
    tilec_status st = enter(r);
    if (st == TILEC_OK) {
        st = load_module(r, p, bin);
        leave(r);
    }
    return st;
}

static tilec_status cuda_launch(rt *r, rt_plan *p, void *const *args, int nargs, void *const *scratch, void *stream) {
    cuda_dev *d = r->dev;
    /* the parameters' values and the pointers to them cuLaunchKernel takes: on the stack
     * for a reduction's few, else allocated (a .tile kernel has any number) */
    enum { ON_STACK = RT_MAX_ARGS + 4 };
    CUdeviceptr stack_v[ON_STACK], *v = stack_v;
    void *stack_params[ON_STACK], **params = stack_params;
    int total = nargs + p->info.nscratch;
    if (total > ON_STACK) {
        v = malloc((size_t)total * sizeof *v);
        params = malloc((size_t)total * sizeof *params);
        if (!v || !params) {
            free(v);
            free(params);
            return TILEC_ERR_NOMEM;
        }
    }
    int n = 0;
    for (int i = 0; i < nargs; i++, n++) v[n] = (CUdeviceptr)(uintptr_t)args[i];
    for (int i = 0; i < p->info.nscratch && i < 4; i++, n++) v[n] = (CUdeviceptr)(uintptr_t)scratch[i];
    for (int i = 0; i < n; i++) params[i] = &v[i];
    /* the primary context is often current already (torch's and CuPy's threads, a caller
     * of the runtime API): then the launch needs no push and pop around it */
    void *current = NULL;
    bool ours = d->get_current && d->get_current(&current) == 0 && current == d->context;
    tilec_status st = ours ? TILEC_OK : enter(r);
    CUresult res = 0;
    if (st == TILEC_OK) {
        res = d->launch(p->function, (unsigned)p->info.grid, 1, 1, (unsigned)p->info.threads, 1, 1,
                        (unsigned)p->info.dynamic_shared, stream, params, NULL);
        if (!ours) leave(r);
    }
    if (v != stack_v) {
        free(v);
        free(params);
    }
    if (st != TILEC_OK) return st;
    if (res == ERR_CLUSTER_SIZE) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "launching %s (grid %lld, block %d, %zu shared bytes) failed: %s; this device cannot hold a cluster "
                    "of %d such CTAs at once (they must fit the multiprocessors of one GPC): use a smaller cluster=(N), "
                    "or fewer threads or less shared memory a CTA",
                    p->info.symbol, (long long)p->info.grid, p->info.threads, p->info.dynamic_shared, why(d, res),
                    p->info.cluster);
        return TILEC_ERR_UNAVAILABLE;
    }
    if (res) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "launching %s (grid %lld, block %d, %zu shared bytes) failed: %s",
                    p->info.symbol, (long long)p->info.grid, p->info.threads, p->info.dynamic_shared, why(d, res));
        return TILEC_ERR_UNAVAILABLE;
    }
    return TILEC_OK;
}

static void cuda_unload(rt *r, rt_plan *p) {
    cuda_dev *d = r->dev;
    if (p->module && enter(r) == TILEC_OK) {
        d->unload(p->module);
        leave(r);
    }
    p->module = p->function = NULL;
}

static tilec_status cuda_device_enter(rt *r, int *saved) {
    *saved = 0;
    return enter(r);
}

static void cuda_device_leave(rt *r, int saved) {
    (void)saved;
    leave(r);
}

const rt_backend rt_cuda = {
    .kind = TILEC_BACKEND_CUDA,
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .download = cuda_download,
    .zero = cuda_zero,
    .sync = cuda_sync,
    .record = cuda_record,
    .wait = cuda_wait,
    .event_free = cuda_event_free,
    .load = cuda_load,
    .launch = cuda_launch,
    .unload = cuda_unload,
    .device_enter = cuda_device_enter,
    .device_leave = cuda_device_leave,
    .capturing = cuda_capturing,
    .relax = cuda_relax,
    .unrelax = cuda_unrelax,
    .zero_aside = cuda_zero_aside,
};
