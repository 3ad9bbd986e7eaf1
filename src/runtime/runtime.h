/*
 * runtime.h — the JIT runtime: backends behind one vtable (sim, cuda, hip), device
 * memory, plans (a whole-tensor reduction compiled for one shape, cached per context) and
 * their scratch, one set per stream (docs/runtime.md, "Streams and threads").
 */
#ifndef TILEC_RUNTIME_H
#define TILEC_RUNTIME_H

#include "../dispatch/dispatch.h"
#include "cache.h"

typedef struct rt rt;

/* A reduction lowered (and, on GPUs, compiled and loaded) for one shape. */
enum { RT_ID_WORDS = 3 + 2 * TILEC_MAX_RANK };
typedef struct rt_plan {
    char key[512];          /* op, dtype, merged view, axes, NaN policy, accum, target: for the log */
    int64_t id[RT_ID_WORDS];/* the same in words (the target is the runtime's), compared on each call */
    uint64_t hash;          /* of id, compared first */
    tilec_program *prog;    /* the generated tile program (owns the loop IR too) */
    lp_kernel *kernel;      /* lowered for the backend's target */
    const char *variant;    /* chosen for its grid statement */
    tilec_launch_info info; /* grid, block, the sizes of its scratch (rt_scratch) */
    void *module, *function;/* backend objects */
    size_t in_bytes, out_bytes;
    struct rt_aux *aux;     /* device memory a plan keeps per stream (fused.c's split rows), freed with it */
    struct rt_plan *next;
} rt_plan;

/* A plan's device memory for one stream (a fused kernel's partial results and row
 * indices): made on the stream's first launch, freed with the plan. */
typedef struct rt_aux {
    void *stream;
    void *dev;
    struct rt_aux *next;
} rt_aux;

/* The scratch of one plan for one stream: partials and completion counters. Launches on
 * one stream run one after another, so they share a set; launches on two streams may run
 * at once, so each stream has its own. A set is made at the first call of its (plan,
 * stream) and zeroed on that stream, before that call's launch in the stream's order; the
 * kernel leaves its counters at zero, so the next launch on the stream finds them so. */
typedef struct rt_scratch {
    const rt_plan *plan;
    void *stream;            /* the calls' stream handle */
    uint64_t thread;         /* the calling thread's number for the per-thread default stream, else 0 */
    void *buf[4];            /* plan->info.nscratch buffers */
    void *done;              /* the backend's event, recorded after each launch with buf */
    bool armed;              /* done follows the latest launch (else: wait for the device) */
    bool pinned;             /* made by tilec_reduce_prepare, or by a call on a stream being
                                captured: never evicted, no event after its launches (they may
                                be captured in a graph); freed at close, after the device's work */
    struct rt_scratch *next; /* the most recently used first */
} rt_scratch;

/* The sets a context keeps: the least recently used that is not pinned is freed, once its
 * stream's last launch with it has finished, to make room for a new one. */
enum { RT_SCRATCH_SETS = 64 };

/* The handle of the per-thread default stream (CU_STREAM_PER_THREAD, hipStreamPerThread):
 * one handle, a different stream on every thread. */
#define RT_STREAM_PER_THREAD ((void *)2)

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
    /* enqueued on the stream: ordered after the stream's earlier work */
    tilec_status (*zero)(rt *r, void *dst, size_t n, void *stream);
    /* waits for everything launched on the device, on every stream */
    tilec_status (*sync)(rt *r);
    /* records *event (made on the first record) on the stream, after its work so far */
    tilec_status (*record)(rt *r, void **event, void *stream);
    /* waits for the work before the event's latest record */
    tilec_status (*wait)(rt *r, void *event);
    void (*event_free)(rt *r, void *event);
    /* loads a lowered plan whose binary the JIT compiled (or found in the disk cache) for a
     * GPU target; the simulator runs the loop IR (binary NULL) */
    tilec_status (*load)(rt *r, rt_plan *p, const void *binary);
    /* enqueues the plan's kernel on the stream; scratch: its info.nscratch buffers */
    /* args: the kernel's parameters in order (a reduction's input, output and second
     * output; a .tile kernel's parameters: tilec_run_kernel), any number of them */
    tilec_status (*launch)(rt *r, rt_plan *p, void *const *args, int nargs, void *const *scratch, void *stream);
    void (*unload)(rt *r, rt_plan *p);
    /* optional: a block of this backend's memory that bytes [lo, lo + n) meet, when it
     * knows one: its base and the size asked for */
    bool (*extent)(rt *r, uintptr_t lo, size_t n, uintptr_t *base, size_t *size);
    /* optional: makes the device current on this thread (CUDA: its primary context
     * pushed; HIP: hipSetDevice) for a library that reads the current device (NCCL),
     * until device_leave(saved) restores the caller's */
    tilec_status (*device_enter)(rt *r, int *saved);
    void (*device_leave)(rt *r, int saved);
    /* Graph capture (docs/runtime.md, "CUDA graphs"); all optional, absent on a backend
     * whose streams are never captured (the simulator). */
    /* whether the stream is being captured into a graph (CUDA: cuStreamIsCapturing; an
     * invalidated capture counts as one) */
    tilec_status (*capturing)(rt *r, void *stream, bool *yes);
    /* this thread may make the driver calls a capture in progress forbids (allocations,
     * module loads, host waits: CUDA's relaxed capture mode) until unrelax(saved) */
    tilec_status (*relax)(rt *r, int *saved);
    void (*unrelax)(rt *r, int saved);
    /* zeroes device memory and waits for it, on a stream of the backend's own (never the
     * legacy default stream nor a caller's): what a set made for a capture is zeroed with */
    tilec_status (*zero_aside)(rt *r, void *dst, size_t n);
} rt_backend;

extern const rt_backend rt_sim, rt_cuda, rt_hip;

enum { RT_MAX_ARGS = 3 }; /* a reduction's parameters: its input and up to two outputs */

struct rt {
    tilec_ctx *ctx;
    const rt_backend *be;
    dsp_target target;   /* what kernels are lowered for */
    void *dev;           /* the backend's own state */
    rt_plan *plans;      /* the in-memory cache, newest first: tilec_reduce's plans and
                            tilec_run_kernel's (whose prog and kernel are NULL between
                            launches: they are the caller's, lent for a launch) */
    int nplans;
    rt_scratch *scratch; /* the plans' scratch per stream, most recently used first */
    int nscratch;        /* at most RT_SCRATCH_SETS, but for sets made for a capture */
    rt_scratch *retired; /* sets left in an unknown state by a failed launch, replaced during a
                            capture (which cannot wait for them): freed at close */
    bool log;            /* TILEC_JIT_LOG=1 */
    rt_cache cache;      /* compiled kernels on disk */
    void *seg_status;    /* the status words of segmented reductions (dispatch.h, DSP_SEG_*),
                            device memory made at the first one: read by tilec_synchronize */
    char device_name[128]; /* the driver's name of the device ("" when it has none) */
    bool has_costs;        /* the device's own cost model constants (costs.c), which
                              target.costs points to; else the defaults */
    tilec_costs costs;
    char costs_what[PATH_MAX + 200];
    int fused_regs[2];        /* TILEC_FUSED_REGS as the runtime opened: rows, threads (0, 0:
                                 unset; -1, -1: off), read once (fused.c, rt_fused_regs_env) */
    char fused_regs_bad[256]; /* its refusal, which every fused call returns ("" when none) */
    int fused_cluster;        /* TILEC_FUSED_CLUSTER: CTAs a row of a register plan (0: unset), read with it */
};

/* Reads TILEC_FUSED_REGS into r->fused_regs and TILEC_FUSED_CLUSTER into r->fused_cluster
 * (or a refusal into r->fused_regs_bad), once when the runtime opens, off the fused calls'
 * path. */
void rt_fused_regs_env(rt *r);

/* The binary of the plan's kernel for the runtime's GPU target: its CUDA or HIP source
 * from the disk cache, or compiled with NVRTC / hiprtc and stored. *data is malloc'd. */
tilec_status rt_plan_binary(rt *r, const rt_plan *p, void **data, size_t *size);

/* The binary of lowered kernels of prog (kernels[i] for kernel i of the program; NULL ones
 * are left out) for the runtime's GPU target, through the disk cache as rt_plan_binary. */
tilec_status rt_binary(rt *r, const tilec_program *prog, lp_kernel *const *kernels, void **data, size_t *size);

/* On a backend that knows its allocations (the simulator, through extent): bytes
 * [lo, lo + n) of `what` meet none of them, or fit inside the one they meet; else
 * TILEC_ERR_INVALID_ARG with a diagnostic saying how far it reaches out. */
tilec_status rt_within(rt *r, const char *what, uintptr_t lo, size_t n);

/* The output's dtype (the input's, or with widen its wide one) and the second output's
 * (argmax's indices, aminmax's maxima) of a descriptor; whether [a, a + n) and [b, b + m)
 * share a byte. */
tilec_dtype rt_out_dtype(const tilec_reduce_desc *d);
tilec_dtype rt_out2_dtype(const tilec_reduce_desc *d);
bool rt_meet(uintptr_t a, size_t n, uintptr_t b, size_t m);
/* A reduction's outputs apart from its input and from each other (bytes [in, in +
 * in_bytes), [out, out + out_bytes), [out2, out2 + out2_bytes); 0 bytes meet nothing):
 * else TILEC_ERR_INVALID_ARG with tilec_reduce's diagnostic ("the input and the output
 * overlap; ..."). */
tilec_status rt_outputs_apart(tilec_ctx *ctx, uintptr_t in, size_t in_bytes, uintptr_t out, size_t out_bytes,
                              uintptr_t out2, size_t out2_bytes);
/* The bytes the input of d at `in` reaches, from its lowest element (*bytes 0 for an empty
 * tensor or a NULL in); false when the descriptor cannot be a valid one (tilec_reduce
 * refuses it). */
bool rt_input_range(const tilec_reduce_desc *d, const void *in, uintptr_t *lo, size_t *bytes);

/* How to launch a lowered kernel: its symbol, block, grid, dynamic shared memory and
 * global scratch. TILEC_ERR_INTERNAL when it needs more scratch than the struct holds. */
/* NULL when this process can load libraries (dlopen); in a program linked statically,
 * which has no dynamic loader, the message every loader fails with instead of calling
 * dlopen (loader.c). */
const char *rt_no_loader(void);

tilec_status rt_launch_info(tilec_ctx *ctx, const lp_kernel *k, tilec_launch_info *info);

/* Launches a plan on the stream with the stream's scratch (made on first use, and
 * recorded as in use by this launch). On a stream being captured, a set not yet pinned is
 * made ready outside the capture and pinned, so the launch is all the capture gets. */
tilec_status rt_launch(rt *r, rt_plan *p, void *const *args, int nargs, void *stream);
/* A plan's words (rt_plan.id) hashed (FNV-1a), and the cached plan of those words (logged as
 * a hit), or NULL: tilec_reduce's, the segmented and the fused plans look up alike. */
uint64_t rt_plan_hash(const int64_t id[RT_ID_WORDS]);
rt_plan *rt_plan_find(rt *r, const int64_t id[RT_ID_WORDS], uint64_t hash);
/* Everything rt_launch does before its launch: the plan's scratch for the stream, made,
 * zeroed (waited for) and pinned, so that the next rt_launch only launches. */
tilec_status rt_prepare(rt *r, rt_plan *p, void *stream);
/* be->load(r, p, binary), in the backend's relaxed capture mode where it has one: a miss
 * may load a module while this thread, or another, captures a stream. */
tilec_status rt_load(rt *r, rt_plan *p, const void *binary);
/* A new plan's kernel made ready after `st` (its lowering's status): on a GPU its binary
 * (rt_plan_binary) loaded (rt_load); on any failure the plan is unloaded and freed, and the
 * status returned. */
tilec_status rt_plan_load(rt *r, rt_plan *p, tilec_status st);
/* Whether the stream is being captured into a graph (false on a backend without capture). */
tilec_status rt_capturing(rt *r, void *stream, bool *yes);

/* What a new plan of this runtime is lowered (or explained) for: the device's target,
 * without vector access to global memory when a pointer may be unaligned, and with
 * tilec_costs_load's constants when the context has them (else the device's own file's,
 * else the defaults). TILEC_ERR_INVALID_ARG when those constants are another arch's. */
tilec_status rt_lowering_target(rt *r, bool unaligned, dsp_target *t);

/* The context's runtime, opened on AUTO device 0 when it is not yet. */
tilec_status rt_get(tilec_ctx *ctx, rt **out);
/* A line to stderr when TILEC_JIT_LOG=1 (the only output of the library, and only on
 * request). */
void rt_log(const rt *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Checks a reduction's descriptor as tilec_reduce does (op, dtype, axes, extents...). */
tilec_status rt_check_desc(tilec_ctx *ctx, const tilec_reduce_desc *d);
/* After the device is synchronized: the status words of the segmented reductions
 * launched so far (segmented.c), reported and cleared; TILEC_OK when they hold nothing. */
tilec_status rt_segmented_status(rt *r);

#endif
