/*
 * be_hip.c — the HIP backend, mirroring be_cuda.c: libamdhip64 through dlopen (or
 * TILEC_HIP_PATH), code objects compiled by hiprtc, modules loaded from memory. What the
 * device is, read without depending on a layout that changed between ROCm releases
 * (docs/runtime.md, "The HIP device"):
 *  - its multiprocessor (CU) count and wavefront size through hipDeviceGetAttribute, whose
 *    hipDeviceAttribute_t numbers are chosen by hipRuntimeGetVersion from a table (ROCm 5.0
 *    renumbered the enum; 5.0 to 6.x kept it);
 *  - its arch (gfx942…), which no attribute gives (hipDeviceAttributeGcnArchName was never
 *    answered and is hipDeviceAttributeUnused5 since ROCm 6), from hipDeviceProp_t's
 *    gcnArchName, through the entry point whose name pins the layout
 *    (hipGetDevicePropertiesR0600 in ROCm 6 and later, hipGetDeviceProperties, the R0000
 *    layout, before and since), into a buffer larger than either layout, the string checked
 *    to be an arch before it is used — as hiprtc itself finds the arch. TILEC_HIP_ARCH
 *    overrides it.
 * No AMD GPU is lent to this project: tests/test_hip.c runs this file against a fake HIP
 * runtime (tests/fake_hip.c) of each layout and numbering.
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
    /* optional: what the device is */
    hipError_t (*runtime_version)(int *);
    hipError_t (*attribute)(int *, int, int);
    hipError_t (*name)(char *, int, int);
    /* optional: graph capture (docs/runtime.md, "CUDA graphs"), all of them or none used */
    hipError_t (*is_capturing)(void *, int *); /* hipStreamIsCapturing */
    hipError_t (*exchange_mode)(int *);        /* hipThreadExchangeStreamCaptureMode */
    hipError_t (*stream_create)(void **, unsigned);
    hipError_t (*stream_sync)(void *);
    hipError_t (*stream_destroy)(void *);
    void *aside; /* a non-blocking stream of the backend's own for zero_aside, made on its first use */
} hip_dev;

/* The hipDeviceAttribute_t numbers read, by HIP release (hipRuntimeGetVersion: major *
 * 10000000 + minor * 100000 + patch), newest first. Read from hip_runtime_api.h of every
 * ROCm tag from 4.0 to 6.2 and HIP's main of October 2024 (ROCm/HIP): 5.0 put the enum in
 * CUDA's alphabetical order, and 6.0 only renamed entries (hipDeviceAttributeName to
 * hipDeviceAttributeUnused1, GcnArch and GcnArchName to Unused4 and Unused5), numbering
 * none anew. */
static const struct hip_attr_numbers {
    int since;           /* the first HIP release that numbers them so */
    int multiprocessors; /* hipDeviceAttributeMultiprocessorCount */
    int warp_size;       /* hipDeviceAttributeWarpSize */
} attr_numbers[] = {
    {50000000, 63, 87}, /* ROCm 5.0 to 6.x */
    {0, 14, 9},         /* ROCm 4.x (libamdhip64.so.4, which is only loaded through TILEC_HIP_PATH) */
};

/* Where hipDeviceProp_t's gcnArchName lies for each entry point (offsetof on x86-64 from
 * the same headers): the name pins the layout. hipGetDeviceProperties has written the
 * R0000 layout in every release, ROCm 6 keeping it for binaries built against 5. */
static const struct hip_prop_layout {
    const char *symbol;
    size_t arch_offset; /* of char gcnArchName[256] */
    size_t size;        /* sizeof the struct */
} prop_layouts[] = {
    {"hipGetDevicePropertiesR0600", 1160, 1472}, /* hipDeviceProp_tR0600: ROCm 6.0 and later */
    {"hipGetDeviceProperties", 396, 792},        /* hipDeviceProp_tR0000: ROCm 4.5 to 5.7, and since */
};
enum { PROP_BUFFER = 16384 }; /* room for any layout: the struct of 6.x has 1472 bytes */

/* An arch as gcnArchName holds it: gfx + 2 to 4 hex digits, then :feature± parts. */
static bool arch_like(const char *s, size_t n) {
    if (n < 5 || strncmp(s, "gfx", 3) != 0) return false;
    size_t d = strspn(s + 3, "0123456789abcdef");
    if (d < 2 || d > 4) return false;
    for (size_t i = 3 + d; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == ':' || s[i] == '+' ||
              s[i] == '-' || s[i] == '_'))
            return false;
    return 3 + d == n || s[3 + d] == ':';
}

/* The device's arch from hipDeviceProp_t (above) into arch, features after ':' dropped
 * (a code object for gfx90a, xnack and sramecc "any", loads whatever the device's
 * setting); false with what was seen in why. */
static bool arch_of_device(hip_dev *d, int device, char *arch, size_t n, char *why, size_t wn) {
    unsigned char *buf = malloc(PROP_BUFFER);
    if (!buf) {
        snprintf(why, wn, "out of memory");
        return false;
    }
    snprintf(why, wn, "the HIP runtime has no hipGetDeviceProperties");
    bool ok = false;
    for (size_t i = 0; i < sizeof prop_layouts / sizeof prop_layouts[0] && !ok; i++) {
        hipError_t (*props)(void *, int) = NULL;
        void *p = dlsym(d->lib, prop_layouts[i].symbol);
        memcpy(&props, &p, sizeof p);
        if (!props) continue;
        memset(buf, 0, PROP_BUFFER);
        hipError_t e = props(buf, device);
        if (e) {
            const char *s = d->error ? d->error(e) : NULL;
            snprintf(why, wn, "%s failed: %s (%d)", prop_layouts[i].symbol, s ? s : "unknown error", e);
            continue;
        }
        const char *name = (const char *)buf + prop_layouts[i].arch_offset;
        size_t len = strnlen(name, 256);
        if (len == 256 || !arch_like(name, len)) {
            char shown[40];
            size_t k = 0;
            for (; k < len && k < sizeof shown - 1; k++) shown[k] = name[k] >= 0x20 && name[k] < 0x7f ? name[k] : '?';
            shown[k] = '\0';
            snprintf(why, wn, "%s gave '%s' where its gcnArchName should be, not an arch", prop_layouts[i].symbol, shown);
            continue;
        }
        size_t base = strcspn(name, ":");
        if (base >= n) base = n - 1;
        memcpy(arch, name, base);
        arch[base] = '\0';
        ok = true;
    }
    free(buf);
    return ok;
}

/* The multiprocessor count and wavefront size of the device through hipDeviceGetAttribute,
 * each 0 where the runtime's release or the attribute is unknown. */
static void attributes_of_device(hip_dev *d, int device, int *version, int *sms, int *warp) {
    *version = *sms = *warp = 0;
    if (!d->runtime_version || d->runtime_version(version) || *version <= 0 || !d->attribute) return;
    const struct hip_attr_numbers *a = NULL;
    for (size_t i = 0; i < sizeof attr_numbers / sizeof attr_numbers[0] && !a; i++)
        if (*version >= attr_numbers[i].since) a = &attr_numbers[i];
    int v = 0;
    if (!d->attribute(&v, a->warp_size, device) && (v == 32 || v == 64)) *warp = v;
    /* a wavefront that is neither 32 nor 64 means the numbers are not this release's */
    if (*warp && !d->attribute(&v, a->multiprocessors, device) && v > 0 && v <= 65536) *sms = v;
}

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

enum { EVENT_DISABLE_TIMING = 2, STREAM_NON_BLOCKING = 1 /* hipStreamNonBlocking */, CAPTURE_MODE_RELAXED = 2 };

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
    const char *over = getenv("TILEC_HIP_PATH"), *no_loader = rt_no_loader();
    if (no_loader) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no HIP runtime: %s", no_loader);
        free(d);
        return TILEC_ERR_UNAVAILABLE;
    }
    if (over && *over) { /* an explicit choice replaces the search, so a mistake shows */
        d->lib = dlopen(over, RTLD_NOW | RTLD_LOCAL);
        if (!d->lib) {
            const char *e = dlerror();
            ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "no HIP runtime: TILEC_HIP_PATH=%.300s could not be loaded (%.300s)",
                        over, e ? e : "unknown error");
            free(d);
            return TILEC_ERR_UNAVAILABLE;
        }
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !d->lib; i++) d->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!d->lib) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "no HIP runtime: libamdhip64.so.7, .6 and .5 could not be loaded (TILEC_HIP_PATH names another)");
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
    bind(d->lib, &d->runtime_version, "hipRuntimeGetVersion");
    bind(d->lib, &d->attribute, "hipDeviceGetAttribute");
    bind(d->lib, &d->name, "hipDeviceGetName");
    if (!(bind(d->lib, &d->is_capturing, "hipStreamIsCapturing") &&
          bind(d->lib, &d->exchange_mode, "hipThreadExchangeStreamCaptureMode") &&
          bind(d->lib, &d->stream_create, "hipStreamCreateWithFlags") && bind(d->lib, &d->stream_sync, "hipStreamSynchronize") &&
          bind(d->lib, &d->stream_destroy, "hipStreamDestroy")))
        d->is_capturing = NULL; /* no stream is taken for captured */
    int n = 0;
    hipError_t e = ok ? d->init(0) : 0;
    if (ok && !e) e = d->count(&n);
    char why[400] = "";
    const char *arch = getenv("TILEC_HIP_ARCH");
    bool have_arch = ok && !e && n > 0 && device >= 0 && device < n &&
                     ((arch && *arch) ? snprintf(d->arch, sizeof d->arch, "%s", arch) > 0
                                      : arch_of_device(d, device, d->arch, sizeof d->arch, why, sizeof why));
    if (!have_arch) {
        if (!ok) ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the HIP runtime lacks entry points tilec needs");
        else if (e || n == 0) ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "the HIP runtime sees no AMD GPU");
        else if (device < 0 || device >= n)
            ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "HIP device %d does not exist (%d found)", device, n);
        else ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                         "could not tell HIP device %d's arch: %s; set TILEC_HIP_ARCH to it (gfx90a, gfx942…)", device, why);
        /* the library stays loaded: once initialised, the HIP runtime does not survive
         * being unloaded (its threads and allocations remain) */
        free(d);
        r->dev = NULL;
        return TILEC_ERR_UNAVAILABLE;
    }
    d->device = device; /* made current by each call (enter), not here */
    dsp_target t;
    tilec_target want = {TILEC_BACKEND_HIP, d->arch, 0};
    if (!dsp_target_resolve(&want, &t, why, sizeof why)) {
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0, "%s%s", why, arch && *arch ? " (TILEC_HIP_ARCH)" : "");
        r->dev = NULL;
        free(d);
        return TILEC_ERR_UNAVAILABLE;
    }
    int version, sms, warp;
    attributes_of_device(d, device, &version, &sms, &warp);
    if (warp && warp != t.warp_size) { /* kernels of the other width would give wrong results */
        char name[128] = "";
        if (!d->name || d->name(name, (int)sizeof name, device)) name[0] = '\0';
        ir_diag_add(r->ctx, NULL, TILEC_SEV_ERROR, 0, 0,
                    "HIP device %d%s%s%s runs wavefronts of %d, but tilec takes %s for wave%d: set TILEC_HIP_ARCH to the "
                    "device's arch", device, name[0] ? " (" : "", name, name[0] ? ")" : "", warp, d->arch, t.warp_size);
        r->dev = NULL;
        free(d);
        return TILEC_ERR_UNAVAILABLE;
    }
    t.sms = sms; /* 0: unknown, and the grid planner assumes DSP_DEFAULT_SMS */
    r->target = t;
    if (!d->name || d->name(r->device_name, (int)sizeof r->device_name, device)) r->device_name[0] = '\0';
    return TILEC_OK;
}

static void hip_close(rt *r) {
    hip_dev *d = r->dev;
    if (!d) return;
    int prev;
    if (d->aside && enter(r, &prev) == TILEC_OK) {
        d->stream_destroy(d->aside);
        leave(r, prev);
    }
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
/* On the backend's own non-blocking stream, waited for (as be_cuda.c's). */
static tilec_status hip_zero_aside(rt *r, void *dst, size_t n) {
    hip_dev *d = r->dev;
    if (!d->is_capturing) return TILEC_ERR_INTERNAL; /* only sets made for a capture are zeroed so */
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    const char *what = "hipStreamCreateWithFlags";
    hipError_t e = d->aside ? 0 : d->stream_create(&d->aside, STREAM_NON_BLOCKING);
    if (!e) what = "hipMemsetD8Async", e = d->memset8(dst, 0, n, d->aside);
    if (!e) what = "hipStreamSynchronize", e = d->stream_sync(d->aside);
    leave(r, prev);
    return e ? fail(r, e, what) : TILEC_OK;
}

static tilec_status hip_capturing(rt *r, void *stream, bool *yes) {
    hip_dev *d = r->dev;
    *yes = false;
    if (!d->is_capturing) return TILEC_OK;
    int prev;
    tilec_status st = enter(r, &prev);
    if (st != TILEC_OK) return st;
    int status = 0; /* hipStreamCaptureStatusNone, Active, Invalidated */
    hipError_t e = d->is_capturing(stream, &status);
    leave(r, prev);
    if (e) return fail(r, e, "hipStreamIsCapturing");
    *yes = status != 0;
    return TILEC_OK;
}

static tilec_status hip_relax(rt *r, int *saved) {
    hip_dev *d = r->dev;
    *saved = -1;
    if (!d->is_capturing) return TILEC_OK;
    int mode = CAPTURE_MODE_RELAXED;
    hipError_t e = d->exchange_mode(&mode);
    if (e) return fail(r, e, "hipThreadExchangeStreamCaptureMode");
    *saved = mode;
    return TILEC_OK;
}

static void hip_unrelax(rt *r, int saved) {
    hip_dev *d = r->dev;
    if (saved >= 0 && d->is_capturing) d->exchange_mode(&saved);
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
    /* on the stack for a reduction's few parameters, else allocated (tilec_run_kernel) */
    enum { ON_STACK = RT_MAX_ARGS + 4 };
    void *stack_v[ON_STACK], *stack_params[ON_STACK], **v = stack_v, **params = stack_params;
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
    for (int i = 0; i < nargs; i++) v[n++] = args[i];
    for (int i = 0; i < p->info.nscratch && i < 4; i++) v[n++] = scratch[i];
    for (int i = 0; i < n; i++) params[i] = &v[i];
    int prev;
    tilec_status st = enter(r, &prev);
    hipError_t e = 0;
    if (st == TILEC_OK) {
        e = d->launch(p->function, (unsigned)p->info.grid, 1, 1, (unsigned)p->info.threads, 1, 1,
                      (unsigned)p->info.dynamic_shared, stream, params, NULL);
        leave(r, prev);
    }
    if (v != stack_v) {
        free(v);
        free(params);
    }
    if (st != TILEC_OK) return st;
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
    .capturing = hip_capturing,
    .relax = hip_relax,
    .unrelax = hip_unrelax,
    .zero_aside = hip_zero_aside,
};
