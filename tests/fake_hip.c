/*
 * fake_hip.c — a HIP runtime with one pretend AMD GPU, loaded by TILEC_HIP_PATH
 * (tests/test_hip.c), so be_hip.c's device queries and its load and launch path run where
 * there is no AMD GPU. Built twice: fake_hip6 exports hipGetDevicePropertiesR0600 and
 * hipGetDeviceProperties (the R0000 layout) as ROCm 6 does, fake_hip5 only the latter, as
 * ROCm 5. What the device is comes from the environment, read at each call:
 *   FAKE_HIP_VERSION  hipRuntimeGetVersion (default 60200000): 5.0 and later number
 *                     hipDeviceAttribute_t as 5.0 does, earlier ones as 4.x
 *   FAKE_HIP_ARCH     gcnArchName (default gfx942:sramecc+:xnack-); FAKE_HIP_ARCH_R0000 and
 *                     FAKE_HIP_ARCH_R0600 give one layout's another
 *   FAKE_HIP_CUS, FAKE_HIP_WARP  the multiprocessor count and wavefront size (304, 64)
 *   FAKE_HIP_ATTR_FAIL=1  hipDeviceGetAttribute fails
 * Memory is the process's; a kernel launch runs nothing and is counted; the last module's
 * e_flags are kept. fake_hip_loaded() and fake_hip_launches() tell the test.
 * Graph capture: fake_hip_capture(stream) makes hipStreamIsCapturing say that stream is
 * being captured (NULL: none). While one is, hipMalloc and hipModuleLoadData fail unless
 * the thread's capture mode is relaxed (hipThreadExchangeStreamCaptureMode), as HIP's
 * global mode makes them fail. The calls that touch a stream (memset, event record,
 * launch, stream sync) and the mode exchanges are logged: fake_hip_log(&n) returns the
 * log, fake_hip_log_clear() empties it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef int hipError_t;
enum { OK = 0, INVALID_VALUE = 1, INVALID_DEVICE = 101, INVALID_IMAGE = 200 };

/* the entry points tilec looks up (src/runtime/be_hip.c), and the test's own */
typedef struct fake_hip_call {
    char op;      /* 'z' memset, 'r' event record, 'l' launch, 'y' stream sync, 'm' mode exchange */
    void *stream; /* the stream of z, r, l, y */
    int mode;     /* m: the mode set */
} fake_hip_call;
const fake_hip_call *fake_hip_log(int *n);
void fake_hip_log_clear(void);
void fake_hip_capture(void *stream);
hipError_t hipStreamIsCapturing(void *stream, int *status);
hipError_t hipThreadExchangeStreamCaptureMode(int *mode);
hipError_t hipStreamCreateWithFlags(void **stream, unsigned flags);
hipError_t hipStreamSynchronize(void *stream);
hipError_t hipStreamDestroy(void *stream);
unsigned fake_hip_loaded(void);
unsigned fake_hip_launches(void);
hipError_t hipInit(unsigned flags);
hipError_t hipGetDeviceCount(int *n);
hipError_t hipSetDevice(int d);
hipError_t hipGetDevice(int *d);
hipError_t hipRuntimeGetVersion(int *v);
const char *hipGetErrorString(hipError_t e);
hipError_t hipDeviceGetName(char *name, int len, int device);
hipError_t hipDeviceGetAttribute(int *v, int attr, int device);
hipError_t hipGetDeviceProperties(void *p, int device);
hipError_t hipMalloc(void **p, size_t n);
hipError_t hipFree(void *p);
hipError_t hipMemcpyHtoD(void *dst, const void *src, size_t n);
hipError_t hipMemcpyDtoH(void *dst, const void *src, size_t n);
hipError_t hipMemsetD8Async(void *dst, unsigned char v, size_t n, void *stream);
hipError_t hipDeviceSynchronize(void);
hipError_t hipEventCreateWithFlags(void **e, unsigned flags);
hipError_t hipEventRecord(void *e, void *stream);
hipError_t hipEventSynchronize(void *e);
hipError_t hipEventDestroy(void *e);
hipError_t hipModuleLoadData(void **m, const void *image);
hipError_t hipModuleUnload(void *m);
hipError_t hipModuleGetFunction(void **f, void *m, const char *name);
hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared, void *stream, void **params, void **extra);
#ifdef FAKE_R0600
hipError_t hipGetDevicePropertiesR0600(void *p, int device);
#endif

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}
static const char *env_str(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v ? v : dflt;
}

static int current;
static unsigned loaded_flags, launches;

API unsigned fake_hip_loaded(void) { return loaded_flags; }
API unsigned fake_hip_launches(void) { return launches; }

enum { MODE_RELAXED = 2, LOG_MAX = 256 };
static fake_hip_call calls[LOG_MAX];
static int ncalls, mode; /* mode: hipStreamCaptureModeGlobal (0) at the start */
static void *captured;
static void note(char op, void *stream, int m) {
    if (ncalls < LOG_MAX) calls[ncalls++] = (fake_hip_call){op, stream, m};
}
/* what the global mode refuses while a stream is being captured */
static bool refused(void) { return captured && mode != MODE_RELAXED; }

API const fake_hip_call *fake_hip_log(int *n) { *n = ncalls; return calls; }
API void fake_hip_log_clear(void) { ncalls = 0; }
API void fake_hip_capture(void *stream) { captured = stream; }
API hipError_t hipStreamIsCapturing(void *stream, int *status) {
    *status = stream && stream == captured ? 1 : 0; /* hipStreamCaptureStatusActive */
    return OK;
}
API hipError_t hipThreadExchangeStreamCaptureMode(int *m) {
    if (!m || *m < 0 || *m > MODE_RELAXED) return INVALID_VALUE;
    int old = mode;
    mode = *m;
    *m = old;
    note('m', NULL, mode);
    return OK;
}
API hipError_t hipStreamCreateWithFlags(void **stream, unsigned flags) {
    (void)flags;
    return (*stream = malloc(1)) ? OK : 2;
}
API hipError_t hipStreamSynchronize(void *stream) { note('y', stream, 0); return OK; }
API hipError_t hipStreamDestroy(void *stream) { free(stream); return OK; }

API hipError_t hipInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }
API hipError_t hipGetDeviceCount(int *n) { *n = 1; return OK; }
API hipError_t hipSetDevice(int d) { if (d != 0) return INVALID_DEVICE; current = d; return OK; }
API hipError_t hipGetDevice(int *d) { *d = current; return OK; }
API hipError_t hipRuntimeGetVersion(int *v) { *v = env_int("FAKE_HIP_VERSION", 60200000); return OK; }
API const char *hipGetErrorString(hipError_t e) { return e == INVALID_VALUE ? "hipErrorInvalidValue" : "hipErrorFake"; }

API hipError_t hipDeviceGetName(char *name, int len, int device) {
    if (device != 0 || len <= 0) return INVALID_VALUE;
    strncpy(name, "Fake Instinct", (size_t)len - 1);
    name[len - 1] = '\0';
    return OK;
}

API hipError_t hipDeviceGetAttribute(int *v, int attr, int device) {
    if (device != 0) return INVALID_DEVICE;
    if (env_int("FAKE_HIP_ATTR_FAIL", 0)) return INVALID_VALUE;
    bool five = env_int("FAKE_HIP_VERSION", 60200000) >= 50000000;
    int cus = five ? 63 : 14, warp = five ? 87 : 9; /* hipDeviceAttributeMultiprocessorCount, ...WarpSize */
    if (attr == cus) *v = env_int("FAKE_HIP_CUS", 304);
    else if (attr == warp) *v = env_int("FAKE_HIP_WARP", 64);
    else if (attr == (five ? 56 : 0)) *v = 1024; /* ...MaxThreadsPerBlock */
    else return INVALID_VALUE;
    return OK;
}

/* a struct of the layout's size, every byte set (so a reader cannot lean on zeros), the
 * fields written at their offsets (name, warpSize, multiProcessorCount, gcnArchName) */
static void props(unsigned char *p, size_t size, size_t warp_at, size_t cus_at, size_t arch_at, const char *arch_var) {
    memset(p, 0xab, size);
    strcpy((char *)p, "Fake Instinct");
    int warp = env_int("FAKE_HIP_WARP", 64), cus = env_int("FAKE_HIP_CUS", 304);
    memcpy(p + warp_at, &warp, sizeof warp);
    memcpy(p + cus_at, &cus, sizeof cus);
    const char *arch = env_str(arch_var, env_str("FAKE_HIP_ARCH", "gfx942:sramecc+:xnack-"));
    size_t n = strlen(arch);
    if (n > 255) n = 255;
    memcpy(p + arch_at, arch, n);
    p[arch_at + n] = '\0';
}
API hipError_t hipGetDeviceProperties(void *p, int device) { /* hipDeviceProp_tR0000 */
    if (device != 0) return INVALID_DEVICE;
    props(p, 792, 276, 336, 396, "FAKE_HIP_ARCH_R0000");
    return OK;
}
#ifdef FAKE_R0600
API hipError_t hipGetDevicePropertiesR0600(void *p, int device) {
    if (device != 0) return INVALID_DEVICE;
    props(p, 1472, 308, 388, 1160, "FAKE_HIP_ARCH_R0600");
    return OK;
}
#endif

API hipError_t hipMalloc(void **p, size_t n) {
    if (refused()) return INVALID_VALUE;
    return (*p = malloc(n ? n : 1)) ? OK : 2;
}
API hipError_t hipFree(void *p) { free(p); return OK; }
API hipError_t hipMemcpyHtoD(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return OK; }
API hipError_t hipMemcpyDtoH(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return OK; }
API hipError_t hipMemsetD8Async(void *dst, unsigned char v, size_t n, void *stream) {
    note('z', stream, 0);
    memset(dst, v, n);
    return OK;
}
API hipError_t hipDeviceSynchronize(void) { return OK; }

static int events;
API hipError_t hipEventCreateWithFlags(void **e, unsigned flags) { (void)flags; *e = &events; events++; return OK; }
API hipError_t hipEventRecord(void *e, void *stream) { (void)e; note('r', stream, 0); return OK; }
API hipError_t hipEventSynchronize(void *e) { (void)e; return OK; }
API hipError_t hipEventDestroy(void *e) { (void)e; events--; return OK; }

static int module;
API hipError_t hipModuleLoadData(void **m, const void *image) {
    const unsigned char *p = image;
    if (refused()) return INVALID_VALUE;
    uint16_t machine;
    memcpy(&machine, p + 18, sizeof machine);
    if (memcmp(p, "\x7f" "ELF", 4) != 0 || machine != 224) return INVALID_IMAGE; /* EM_AMDGPU */
    memcpy(&loaded_flags, p + 48, sizeof loaded_flags);
    *m = &module;
    return OK;
}
API hipError_t hipModuleUnload(void *m) { return m == &module ? OK : INVALID_VALUE; }
API hipError_t hipModuleGetFunction(void **f, void *m, const char *name) {
    if (m != &module || !name || !*name) return INVALID_VALUE;
    *f = &module;
    return OK;
}
API hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    (void)gy, (void)gz, (void)by, (void)bz, (void)shared, (void)extra;
    if (f != &module || !gx || !bx || !params) return INVALID_VALUE;
    launches++;
    note('l', stream, 0);
    return OK;
}
