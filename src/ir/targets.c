/*
 * targets.c — the targets as one table: a row per tilec_backend with what every layer asks
 * of it below its own hooks (codegen's cg_target, the runtime's rt_backend): the arch
 * names it takes and its default, its warp-size rule, its shared-memory limits, whether it
 * has a warpgroup barrier, the files `tilec emit` writes and the disk cache's tag. A new
 * target is a row here, a be_*.c and its codegen hooks.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* The most shared memory a CTA of a CUDA arch can have (the opt-in maximum of the CUDA
 * programming guide's table per compute capability); kernels above 48 KiB take it
 * dynamically (src/codegen/emit.c) and the launcher opts in. An arch not in the table gets
 * the 48 KiB every CUDA GPU has. */
static int64_t cuda_shared_bytes(const char *arch) {
    switch (atoi(arch + strlen("sm_"))) { /* sm_90, sm_90a, sm_100f… */
    case 70:
    case 72: return 96 << 10;
    case 75: return 64 << 10;
    case 80:
    case 87: return 163 << 10;
    case 86:
    case 89:
    case 120:
    case 121: return 99 << 10;
    case 90:
    case 100:
    case 101:
    case 103:
    case 110: return 227 << 10;
    default: return 48 << 10;
    }
}

/* The CTAs of a thread-block cluster (CUDA programming guide, "Thread Block Clusters"):
 * compute capability 9.0 and later launch 8 (the portable size); sm_90 and sm_100 16 with
 * the non-portable size, which the launcher opts in to; none before sm_90. */
static int cuda_cluster_max(const char *arch) {
    int cc = atoi(arch + strlen("sm_"));
    return cc < 90 ? 0 : cc == 90 || cc == 100 ? IR_MAX_CLUSTER : IR_PORTABLE_CLUSTER;
}

static int sim_cluster_max(const char *arch) {
    (void)arch;
    return IR_MAX_CLUSTER;
}

/* The LDS of a workgroup on gfx9, gfx10, gfx11. */
static int64_t hip_shared_bytes(const char *arch) {
    (void)arch;
    return 64 << 10;
}

static int warp_32(const char *arch) {
    (void)arch;
    return 32;
}

/* gfx9 (CDNA, GCN) runs wave64; gfx10 and later default to wave32 */
static int hip_warp(const char *arch) { return strncmp(arch, "gfx9", 4) == 0 && strlen(arch) <= 6 ? 64 : 32; }

static const ir_target_info targets[] = {
    [TILEC_BACKEND_AUTO] = {0},
    [TILEC_BACKEND_CUDA] = {.label = "CUDA", .default_arch = "sm_90", .arch_prefix = "sm_", .arch_digits = "0123456789",
                            .arch_suffix = "af", .arch_form = "sm_XX (sm_80, sm_90…)", .natural_warp = warp_32,
                            .warp_sizes = IR_WARP_32, .warpgroup = true, .shared_bytes = cuda_shared_bytes,
                            .func_shared_bytes = 48 << 10, .func_why = "(a func's shared buffers are static arrays)",
                            .cluster_max = cuda_cluster_max,
                            .source_ext = ".cu", .binary_ext = ".cubin", .cache_kind = 1, .gpu = true},
    [TILEC_BACKEND_HIP] = {.label = "HIP", .default_arch = "gfx90a", .arch_prefix = "gfx", .arch_digits = "0123456789abcdef",
                           .arch_suffix = "", .arch_form = "gfxNNN (gfx90a, gfx1100…)", .natural_warp = hip_warp,
                           .warp_sizes = IR_WARP_32 | IR_WARP_64, .wave64_only = true, .shared_bytes = hip_shared_bytes,
                           .func_shared_bytes = 64 << 10, .source_ext = ".hip", .binary_ext = ".co", .cache_kind = 2,
                           .gpu = true},
    [TILEC_BACKEND_SIM] = {.label = "the simulator", .default_arch = "cpu", .natural_warp = warp_32,
                           .warp_sizes = IR_WARP_32 | IR_WARP_64, .warpgroup = true, .cluster_max = sim_cluster_max,
                           .kernel_why = "(as on the most permissive GPU, CUDA sm_90)",
                           .func_why = "(as on HIP, the most permissive GPU for funcs)"},
};
_Static_assert(sizeof targets / sizeof targets[0] == TILEC_BACKEND_COUNT, "a row for every tilec_backend");

const ir_target_info *ir_target(tilec_backend b) {
    return (unsigned)b < TILEC_BACKEND_COUNT && targets[b].label ? &targets[b] : NULL;
}
