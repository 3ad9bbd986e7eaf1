/*
 * cuda.c — the CUDA target: NVRTC-compatible C++ with no #include. 16-bit floats convert
 * with PTX cvt instructions; shuffles are __shfl_xor_sync with the warp's lanes as the
 * member mask (computed once per kernel, never __activemask()); a warpgroup barrier is a
 * named barrier whose id (1 + the warpgroup's index, so 1 to 8) is never 0, the id of
 * __syncthreads(), and differs between the warpgroups of a CTA.
 */
#include "codegen.h"

static void prelude(ir_str *s) {
    ir_str_printf(s, "static __device__ __forceinline__ __attribute__((unused)) float tl_f16_to_f32(tl_u16 h) {\n"
                     "  float f; asm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(f) : \"h\"(h)); return f;\n}\n"
                     "static __device__ __forceinline__ __attribute__((unused)) tl_u16 tl_f32_to_f16(float x) {  /* nearest even */\n"
                     "  tl_u16 h; asm(\"cvt.rn.f16.f32 %%0, %%1;\" : \"=h\"(h) : \"f\"(x)); return h;\n}\n");
    ir_str_printf(s, "/* IEEE round-to-nearest products, quotients and roots: never fused, never approximated,\n"
                     "   whatever --fmad says (--use_fast_math also flushes subnormals to zero: not for this file) */\n"
                     "#define tl_mul_f32 __fmul_rn\n#define tl_mul_f64 __dmul_rn\n#define tl_div_f32 __fdiv_rn\n"
                     "#define tl_div_f64 __ddiv_rn\n#define tl_sqrt_f32 __fsqrt_rn\n#define tl_sqrt_f64 __dsqrt_rn\n"
                     "/* fused where the lowering says so (LX_FMA), rounded once */\n"
                     "#define tl_fma_f32 __fmaf_rn\n#define tl_fma_f64 __fma_rn\n");
    /* From sm_80 on, f32 max and min are one instruction each: max.NaN / min.NaN return a
     * NaN when either operand is one (propagate), max / min the number (ignore). That they
     * order -0 below +0 as the format does was measured on sm_90 (every pair of special
     * values against the selects); tools/jit_check checks it on whatever GPU it runs on.
     * Older GPUs keep the selects. */
    /* From sm_80 on, f32 to bf16 is one instruction (cvt.rn.bf16.f32, nearest even, as the
     * software rounding it replaces: 1 instruction for 7). Its NaN is the canonical
     * 0x7fff where the software one keeps the payload's top bits; a map stores every NaN as
     * 0x7fc0 and a grid statement as the dtype's default NaN, so only an in-kernel
     * statement's NaN can show it, and those payloads are not part of the contract. */
    ir_str_printf(s, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n#define TL_F32_MINMAX 1\n#define TL_BF16_CVT 1\n"
                     "static __device__ __forceinline__ __attribute__((unused)) tl_u16 tl_f32_to_bf16(float x) {  /* nearest even */\n"
                     "  tl_u16 h; asm(\"cvt.rn.bf16.f32 %%0, %%1;\" : \"=h\"(h) : \"f\"(x)); return h;\n}\n");
    static const struct { const char *name, *insn; } hw[] = {
        {"max", "max.NaN"}, {"maxnum", "max"}, {"min", "min.NaN"}, {"minnum", "min"}};
    for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++)
        ir_str_printf(s, "static __device__ __forceinline__ __attribute__((unused)) float tl_%s_f32(float a, float b) {\n"
                         "  float r; asm(\"%s.f32 %%0, %%1, %%2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b)); return r;\n}\n",
                      hw[i].name, hw[i].insn);
    ir_str_printf(s, "#endif\n");
    /* From sm_90 on, two f32s to a word of two bf16s is one paired conversion (cvt.rn.bf16x2.f32,
     * nearest even, each half as cvt.rn.bf16.f32) and one signed 16-bit minimum with 0x7fc0
     * (min.s16x2, sm_90's): the conversion's NaN is always 0x7fff, which the minimum makes the
     * quiet 0x7fc0, and it leaves every number (a positive one's bits are at most 0x7f80, a
     * negative one's are below 0 as signed). Two instructions for two stores where each store
     * took a conversion, a NaN test and a select. `scripts/gpu-check cvt` holds it to the
     * software pair over all 2^32 f32 patterns. */
    ir_str_printf(s, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n#define TL_PACK_BF16X2 1\n"
                     "static __device__ __forceinline__ __attribute__((unused)) unsigned tl_pack_bf16x2(float a, float b) {\n"
                     "  unsigned w; asm(\"cvt.rn.bf16x2.f32 %%0, %%1, %%2;\" : \"=r\"(w) : \"f\"(b), \"f\"(a));\n"
                     "  asm(\"min.s16x2 %%0, %%1, %%2;\" : \"=r\"(w) : \"r\"(w), \"r\"(0x7fc07fc0u)); return w;\n}\n"
                     "#endif\n");
}

static void kernel_setup(ir_str *s, const lp_kernel *k) {
    int rem = k->threads % 32;
    if (rem == 0) {
        ir_str_printf(s, "  const unsigned tl_mask = 0xffffffffu;  /* every warp is whole */\n"
                         "  (void)tl_mask;  /* a kernel without shuffles or warp barriers does not read it */\n");
        return;
    }
    ir_str_printf(s, "  /* the lanes of this warp: the last of %d threads has %d */\n"
                     "  const unsigned tl_mask = tl_warp == %d ? 0x%08xu : 0xffffffffu;\n"
                     "  (void)tl_mask;  /* a kernel without shuffles or warp barriers does not read it */\n",
                  k->threads, rem, k->threads / 32, (1u << rem) - 1u);
}

static void shfl(ir_str *s, const char *dst, const char *value, int lane_mask, int width) {
    ir_str_printf(s, "%s = __shfl_xor_sync(tl_mask, %s, %d, %d);\n", dst, value, lane_mask, width);
}

/* A warpgroup's barrier: the CTA's where the CTA is one warpgroup (a func's too: it is
 * called by a block of exactly its threads), else named barrier 1 + its warpgroup, the id a
 * constant in each case of a switch: ptxas reserves barriers up to the highest id it sees,
 * and all 16 for an id in a register, which capped an H100 multiprocessor at 4 CTAs (ncu:
 * Block Limit Barriers). */
static void barrier(ir_str *s, tilec_scope scope, int threads) {
    switch (scope) {
    case TILEC_SCOPE_WARP: ir_str_printf(s, "__syncwarp(tl_mask);\n"); break;
    case TILEC_SCOPE_WARPGROUP:
        if (threads == 128) {
            ir_str_printf(s, "__syncthreads();\n");
            break;
        }
        ir_str_printf(s, "switch (tl_tid / 128) {");
        for (int w = 0; w < (threads + 127) / 128; w++)
            ir_str_printf(s, " case %d: asm volatile(\"bar.sync %d, 128;\" ::: \"memory\"); break;", w, 1 + w);
        ir_str_printf(s, " }\n");
        break;
    case TILEC_SCOPE_CLUSTER: /* every thread of every CTA of the cluster; release and acquire order the
                                 shared (and global) writes before it with the reads after it */
        ir_str_printf(s, "asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n");
        break;
    default: ir_str_printf(s, "__syncthreads();\n"); break;
    }
}

const cg_target cg_cuda = {
    .name = "cuda",
    .prelude = prelude,
    .kernel_setup = kernel_setup,
    .shfl = shfl,
    .barrier = barrier,
    /* MUFU.EX2: about 2 ulp, subnormal results flushed to +0 (ftz) */
    .exp2_approx = "float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y;",
    /* mapa: the generic address of the same shared variable in the peer CTA's memory, then an
       ordinary (generic) load */
    .peer_load = "unsigned long long a; asm(\"mapa.u64 %0, %1, %2;\" : \"=l\"(a) : \"l\"(p), \"r\"(rank)); "
                 "return *(const T *)a;",
};
