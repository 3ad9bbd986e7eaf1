/*
 * codegen.h — printers from loop IR to CUDA and HIP source.
 *
 * A target is a struct of hooks (cuda.c and hip.c fill one each, with the same names);
 * emit.c walks the loop IR and calls them for what differs: the prelude's 16-bit float
 * conversions, shuffles, barriers. The source is self-contained (no #include), the same
 * bytes for the same input, and every user name that could clash with C++, CUDA or HIP is
 * renamed (see cg_name).
 */
#ifndef TILEC_CODEGEN_H
#define TILEC_CODEGEN_H

#include "../ir/loop.h"

typedef struct cg_target {
    const char *name;      /* "cuda", "hip" */
    /* what differs in the prelude: f16 <-> f32 conversions, and anything else the target
     * needs before the shared helpers */
    void (*prelude)(ir_str *s);
    /* per kernel, after the thread's position is known (CUDA: the warp's lane mask) */
    void (*kernel_setup)(ir_str *s, const lp_kernel *k);
    /* dst = value from lane ^ lane_mask within groups of width lanes */
    void (*shfl)(ir_str *s, const char *dst, const char *value, int lane_mask, int width);
    /* a barrier of scope (cta, warpgroup, warp) in a CTA of `threads` (a kernel's, or the
       block of exactly its threads a func is called by: docs/codegen.md) */
    void (*barrier)(ir_str *s, tilec_scope scope, int threads);
    /* the body of tl_exp2_approx_f32(float x): the hardware's 2^x (LO_EXP2A, math=approx) */
    const char *exp2_approx;
    /* the body of `template <class T> T tl_peer(const T *p, unsigned rank)`: *p in the
       shared memory of the cluster's CTA of that rank (LX_LOAD's c); NULL: the target has no
       clusters (the verifier refuses them) */
    const char *peer_load;
} cg_target;

extern const cg_target cg_cuda, cg_hip;

/* The prelude's ABI version. Every name the prelude defines (functions, types, macros)
 * carries it (tl_p2_…, TL_P2_…) and its include guard is TL_P<ABI>_PRELUDE, so any number
 * of emitted files combine in one translation unit: files of the same ABI share one
 * prelude, and files of two ABIs each have their own, under other names. Bump it whenever
 * the prelude's text changes (test_codegen holds the prelude of each ABI to its digest). */
#define CG_PRELUDE_ABI "3"
#define CG_P "tl_p" CG_PRELUDE_ABI "_" /* the prefix of the prelude's names in C++ */
/* The source target of a backend: cg_cuda, cg_hip; NULL for one with no source (sim, auto,
 * out of range). */
const cg_target *cg_target_for(tilec_backend b);

/* The name a user's identifier gets in emitted code: itself, or "tl_u_" + itself when it
 * could mean something else there (names.c): a C++ keyword, a CUDA / HIP built-in, a
 * device-library or C-library function, type or macro, a reserved identifier, a
 * macro-like name (INT_MAX), or ours (tl_…, TL_…). */
void cg_name(ir_str *s, const char *name);

/* Shared bytes a kernel's shared buffers take in one CTA (aligned to 16 each). */
size_t cg_shared_bytes(const lp_kernel *k);
/* Kernels above this many static shared bytes take their shared memory dynamically. */
enum { CG_STATIC_SHARED_LIMIT = 48 * 1024 };

/* Emits a whole program: a header, the prelude, then each lowered kernel (kernels[i] of
 * the program, lowered for the same target) in order; a NULL kernels[i] is left out (the
 * runtime emits only the kernel it launches). */
/* The prelude alone, guarded and with its names versioned (what cg_emit_program writes
 * after the header comment). */
void cg_prelude(ir_str *s, const cg_target *t);
void cg_emit_program(ir_str *s, const cg_target *t, const tilec_program *p, lp_kernel *const *kernels);

#endif
