/*
 * hip.c — the HIP target: hiprtc-compatible C++ with no #include. 16-bit floats convert
 * through clang's _Float16; shuffles are __shfl_xor of the target's warp size (baked into
 * the source: warpSize is not a compile-time constant in newer ROCm); a warp barrier is a
 * wavefront fence and barrier. Warpgroup scope does not exist here (a predicate rejects
 * it before emission).
 */
#include "codegen.h"

static void prelude(ir_str *s) {
    ir_str_printf(s, "static __device__ __forceinline__ __attribute__((unused)) float tl_f16_to_f32(tl_u16 h) {\n"
                     "  union { tl_u16 u; _Float16 f; } c; c.u = h; return (float)c.f;\n}\n"
                     "static __device__ __forceinline__ __attribute__((unused)) tl_u16 tl_f32_to_f16(float x) {  /* nearest even */\n"
                     "  union { tl_u16 u; _Float16 f; } c; c.f = (_Float16)x; return c.u;\n}\n"
                     "/* IEEE round-to-nearest products, quotients and roots (HIP's defaults), none fused\n"
                     "   into an add: the JIT compiles with -ffp-contract=off, as this file should be */\n"
                     "#pragma clang fp contract(off)\n"
                     "static __device__ __forceinline__ __attribute__((unused)) float tl_mul_f32(float a, float b) { return a * b; }\n"
                     "static __device__ __forceinline__ __attribute__((unused)) double tl_mul_f64(double a, double b) { return a * b; }\n"
                     "static __device__ __forceinline__ __attribute__((unused)) float tl_div_f32(float a, float b) { return a / b; }\n"
                     "static __device__ __forceinline__ __attribute__((unused)) double tl_div_f64(double a, double b) { return a / b; }\n"
                     "static __device__ __forceinline__ __attribute__((unused)) float tl_sqrt_f32(float a) { return sqrtf(a); }\n"
                     "static __device__ __forceinline__ __attribute__((unused)) double tl_sqrt_f64(double a) { return sqrt(a); }\n"
                     "/* fused where the lowering says so (LX_FMA), rounded once */\n"
                     "static __device__ __forceinline__ __attribute__((unused)) float tl_fma_f32(float a, float b, float c) { return __builtin_fmaf(a, b, c); }\n"
                     "static __device__ __forceinline__ __attribute__((unused)) double tl_fma_f64(double a, double b, double c) { return __builtin_fma(a, b, c); }\n");
}

static void kernel_setup(ir_str *s, const lp_kernel *k) {
    (void)s, (void)k; /* HIP's __shfl_xor takes no member mask */
}

static void shfl(ir_str *s, const char *dst, const char *value, int lane_mask, int width) {
    ir_str_printf(s, "%s = __shfl_xor(%s, %d, %d);\n", dst, value, lane_mask, width);
}

static void barrier(ir_str *s, tilec_scope scope, int threads) {
    (void)threads;
    if (scope == TILEC_SCOPE_WARP)
        ir_str_printf(s, "__builtin_amdgcn_fence(__ATOMIC_RELEASE, \"wavefront\"); __builtin_amdgcn_wave_barrier(); "
                         "__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"wavefront\");\n");
    else
        ir_str_printf(s, "__syncthreads();\n");
}

const cg_target cg_hip = {
    .name = "hip",
    .prelude = prelude,
    .kernel_setup = kernel_setup,
    .shfl = shfl,
    .barrier = barrier,
    /* v_exp_f32 (VOP1 on gfx9 to gfx12): 1 ulp; a subnormal result as the wave's denormal mode
       has it (docs/format.md: flushed on NVIDIA and the simulator, maybe not here) */
    .exp2_approx = "float y; asm(\"v_exp_f32 %0, %1\" : \"=v\"(y) : \"v\"(x)); return y;",
};
