// tools/cvt_check.cu — the bf16 rounding the CUDA prelude uses from sm_80 on (one
// cvt.rn.bf16.f32) against the bit arithmetic it replaced (and that older GPUs, HIP and the
// simulator's rounding agree with), over every one of the 2^32 f32 bit patterns, on the GPU
// it runs on. Every number must give the same bits; the NaNs' results are reported (the
// instruction's NaN, which only an in-kernel reduction's NaN result can show: docs/codegen.md).
// Also the sm_90 prelude's pair (tl_pack_bf16x2: cvt.rn.bf16x2.f32, then min.s16x2 with
// 0x7fc0) against two conversions by the bit arithmetic with a NaN as 0x7fc0, every pattern
// paired with its negation, so every NaN too must give exactly the quiet NaN's bits.
// Built and run by `scripts/gpu-check cvt` (nvcc -arch=native). Exit 0 when they agree.
#include <cstdio>

__device__ unsigned short by_instruction(float x) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}

__device__ unsigned short by_bits(float x) { // round to nearest even; a NaN stays a NaN
    unsigned u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__device__ unsigned pack_by_instruction(float a, float b) { // the CUDA prelude's, sm_90
    unsigned w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(b), "f"(a));
#if __CUDA_ARCH__ >= 900
    asm("min.s16x2 %0, %1, %2;" : "=r"(w) : "r"(w), "r"(0x7fc07fc0u));
#endif
    return w;
}

__device__ unsigned pack_by_bits(float a, float b) {
    unsigned short x = a != a ? 0x7fc0 : by_bits(a), y = b != b ? 0x7fc0 : by_bits(b);
    return (unsigned)x | (unsigned)y << 16;
}

__global__ void check_pack(unsigned long long *differ, unsigned *first, unsigned base) {
    unsigned u = base + blockIdx.x * blockDim.x + threadIdx.x;
    float x = __uint_as_float(u), y = __uint_as_float(u ^ 0x80000000u);
    if (pack_by_instruction(x, y) != pack_by_bits(x, y) && atomicAdd(differ, 1ull) == 0) *first = u;
}

__global__ void check(unsigned long long *differ, unsigned *first, unsigned *nan_or, unsigned *nan_and, unsigned base) {
    unsigned u = base + blockIdx.x * blockDim.x + threadIdx.x;
    float x = __uint_as_float(u);
    unsigned short a = by_instruction(x), b = by_bits(x);
    if (x != x) {
        atomicOr(nan_or, a);
        atomicAnd(nan_and, a);
    } else if (a != b) {
        if (atomicAdd(differ, 1ull) == 0) *first = u;
    }
}

int main() {
    unsigned long long *differ;
    unsigned *w;
    if (cudaMallocManaged(&differ, 8) != cudaSuccess || cudaMallocManaged(&w, 12) != cudaSuccess) {
        fprintf(stderr, "cvt_check: no usable CUDA device\n");
        return 3;
    }
    *differ = 0, w[0] = 0, w[1] = 0, w[2] = 0xffffffffu;
    const unsigned chunk = 1u << 28;
    for (unsigned long long base = 0; base < (1ull << 32); base += chunk)
        check<<<chunk / 256, 256>>>(differ, &w[0], &w[1], &w[2], (unsigned)base);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "cvt_check: the kernel failed\n");
        return 1;
    }
    printf("cvt.rn.bf16.f32 against the bit arithmetic over all 2^32 f32 patterns: %llu numbers differ%s; "
           "every NaN gives 0x%04x%s\n",
           *differ, *differ ? " (see the first)" : "", w[1], w[1] == w[2] ? "" : " (not one value: OR shown)");
    if (*differ) printf("first differing pattern: 0x%08x\n", w[0]);
    unsigned long long scalar = *differ;
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    if (major < 9) { /* the prelude pairs in hardware from sm_90 on (min.s16x2) */
        printf("the paired conversion: the prelude's is sm_90's, not checked on this GPU (sm_%d0)\n", major);
        return scalar ? 1 : 0;
    }
    *differ = 0;
    for (unsigned long long base = 0; base < (1ull << 32); base += chunk)
        check_pack<<<chunk / 256, 256>>>(differ, &w[0], (unsigned)base);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "cvt_check: the pair kernel failed\n");
        return 1;
    }
    printf("the paired conversion (cvt.rn.bf16x2.f32 and min.s16x2) against the bit arithmetic, each pattern "
           "with its negation, NaNs as 0x7fc0: %llu pairs differ\n", *differ);
    if (*differ) printf("first differing pattern: 0x%08x\n", w[0]);
    return scalar || *differ ? 1 : 0;
}
