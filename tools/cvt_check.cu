// tools/cvt_check.cu — the bf16 rounding the CUDA prelude uses from sm_80 on (one
// cvt.rn.bf16.f32) against the bit arithmetic it replaced (and that older GPUs, HIP and the
// simulator's rounding agree with), over every one of the 2^32 f32 bit patterns, on the GPU
// it runs on. Every number must give the same bits; the NaNs' results are reported (the
// instruction's NaN, which only an in-kernel reduction's NaN result can show: docs/codegen.md).
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
    return *differ ? 1 : 0;
}
