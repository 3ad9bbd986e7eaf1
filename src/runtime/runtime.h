/*
 * runtime.h — the JIT runtime: backends behind one vtable (sim, cuda, hip), device
 * memory, and plans (a whole-tensor reduction compiled for one shape, cached per context).
 */
#ifndef TILEC_RUNTIME_H
#define TILEC_RUNTIME_H

#include "../dispatch/dispatch.h"
#include "cache.h"

typedef struct rt rt;

/* A reduction lowered (and, on GPUs, compiled and loaded) for one shape. */
typedef struct rt_plan {
    char key[512];          /* op, dtype, merged view, axes, NaN policy, accum, target */
    tilec_program *prog;    /* the generated tile program (owns the loop IR too) */
    lp_kernel *kernel;      /* lowered for the backend's target */
    const char *variant;    /* chosen for its grid statement */
    tilec_launch_info info; /* grid, block, scratch */
    void *scratch[4];       /* device scratch (zeroed; counters are left at zero) */
    void *module, *function;/* backend objects */
    size_t in_bytes, out_bytes;
    struct rt_plan *next;
} rt_plan;

typedef struct rt_backend {
    tilec_backend kind;
    const char *name;
    /* opens device `device`; false with a diagnostic when unusable */
    tilec_status (*open)(rt *r, int device);
    void (*close)(rt *r);
    tilec_status (*alloc)(rt *r, size_t n, void **p);
    tilec_status (*release)(rt *r, void *p);
    tilec_status (*upload)(rt *r, void *dst, const void *src, size_t n);
    tilec_status (*download)(rt *r, void *dst, const void *src, size_t n);
    tilec_status (*zero)(rt *r, void *dst, size_t n, void *stream);
    tilec_status (*sync)(rt *r);
    /* compiles and loads a lowered plan (sim: nothing to do) */
    tilec_status (*load)(rt *r, rt_plan *p);
    tilec_status (*launch)(rt *r, rt_plan *p, const void *in, void *out, void *stream);
    void (*unload)(rt *r, rt_plan *p);
} rt_backend;

extern const rt_backend rt_sim, rt_cuda, rt_hip;

struct rt {
    tilec_ctx *ctx;
    const rt_backend *be;
    dsp_target target;   /* what kernels are lowered for */
    void *dev;           /* the backend's own state */
    rt_plan *plans;      /* the in-memory cache, newest first */
    int nplans;
    bool log;            /* TILEC_JIT_LOG=1 */
    rt_cache cache;      /* compiled kernels on disk */
};

/* The binary of the plan's kernel for the runtime's GPU target: its CUDA or HIP source
 * from the disk cache, or compiled with NVRTC / hiprtc and stored. *data is malloc'd. */
tilec_status rt_plan_binary(rt *r, const rt_plan *p, void **data, size_t *size);

/* How to launch a lowered kernel: its symbol, block, grid, dynamic shared memory and
 * global scratch. TILEC_ERR_INTERNAL when it needs more scratch than the struct holds. */
tilec_status rt_launch_info(tilec_ctx *ctx, const lp_kernel *k, tilec_launch_info *info);

/* The context's runtime, opened on AUTO device 0 when it is not yet. */
tilec_status rt_get(tilec_ctx *ctx, rt **out);
/* A line to stderr when TILEC_JIT_LOG=1 (the only output of the library, and only on
 * request). */
void rt_log(const rt *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
