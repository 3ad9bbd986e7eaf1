// attention_stats.cu — attention's row statistics in your own mma.sync kernel, by a tilec
// func (docs/codegen.md, "Calling a func from your own kernel").
//
// Each warp computes the scores S = Q·Kᵀ · scale of 16 query rows, a block of 64 keys at a
// time, with mma.sync m16n8k16 (f16 inputs, f32 accumulators), and after each block calls
// the func of attention_stats.tile for online softmax's running statistics of its rows:
// the maximum m and the logsumexp l of the scores so far. The kernel writes the final m
// and l of every query row (l = ln Σ_keys exp(s)); main() checks them against a CPU
// reference in double, prints PASS or FAIL and exits 1 on a failure. Needs sm_80 or newer.
//
//   tilec emit examples/attention/attention_stats.tile --target cuda -o attention_stats.cuh
//   nvcc -arch=sm_90 -I. examples/attention/attention_stats.cu -o attention_stats
//   ./attention_stats
#include <cuda_fp16.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "attention_stats.cuh"  // extern "C" __device__ void attention_stats(const float *S, float *m, float *l)

constexpr int D = 64;        // head dimension: 4 k16 steps of the mma
constexpr int BLOCK_N = 64;  // keys a block: 8 n8 tiles, float acc[32] a lane
constexpr int WARPS = 4;     // the func's threads=128: 4 warps, 16 query rows each

// acc (a 16 x 8 f32 tile, c0..c3) += a (16 x 16 f16, a0..a7 in 4 registers) · b (16 x 8 f16,
// b0..b3 in 2 registers)
__device__ __forceinline__ void mma_m16n8k16(float *acc, const unsigned a[4], const unsigned b[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// X[row, col] and X[row, col + 1] of a [rows, D] f16 matrix as one 32-bit register (the
// first in the low half, as mma.sync reads a pair); 0 past the last row
__device__ __forceinline__ unsigned pair(const __half *X, int rows, int row, int col) {
  return row < rows ? *reinterpret_cast<const unsigned *>(X + (size_t)row * D + col) : 0u;
}

// Launched with WARPS * 32 threads a block, ceil(nq / (16 * WARPS)) blocks. S_out, when not
// null, receives every scaled score from where the fragment formula below says it is:
// a check of the mma's layout for main(); a real kernel leaves it out.
__global__ void attention_stats_kernel(const __half *Q, const __half *K, int nq, int nk, float scale,
                                       float *M, float *L, float *S_out) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane >> 2, t = lane & 3;  // the PTX ISA's groupID and threadID_in_group
  const int q0 = (blockIdx.x * WARPS + warp) * 16;  // this warp's first query row

  // A fragments (row-major 16 x 16 f16) of Q[q0 : q0 + 16, 16kk : 16kk + 16], kept for the
  // whole loop: register 0 holds (row g, columns 2t, 2t + 1), 1 row g + 8, 2 and 3 the same
  // rows at columns 2t + 8, 2t + 9
  unsigned a[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++) {
    a[kk][0] = pair(Q, nq, q0 + g, 16 * kk + 2 * t);
    a[kk][1] = pair(Q, nq, q0 + g + 8, 16 * kk + 2 * t);
    a[kk][2] = pair(Q, nq, q0 + g, 16 * kk + 2 * t + 8);
    a[kk][3] = pair(Q, nq, q0 + g + 8, 16 * kk + 2 * t + 8);
  }
  // The running statistics in the layout attention_stats.tile gives them: register 0 is
  // row g, register 1 row g + 8, the same in the 4 lanes of a quad. Nothing seen yet: -inf.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {-INFINITY, -INFINITY};

  for (int n0 = 0; n0 < nk; n0 += BLOCK_N) {
    // S[q0 : q0 + 16, n0 : n0 + 64] as 8 n8 tiles side by side (mma_m16n8k16_c):
    // acc[4j + r] holds row g + 8 * (r >> 1), key n0 + 8j + 2t + (r & 1)
    float acc[32];
#pragma unroll
    for (int j = 0; j < 8; j++) {
      acc[4 * j] = acc[4 * j + 1] = acc[4 * j + 2] = acc[4 * j + 3] = 0.0f;
      const int key = n0 + 8 * j + g;  // the B fragment's column n = g is key n0 + 8j + g
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++) {
        // B = Kᵀ (16 x 8, "col"): register 0 holds (rows k = 2t, 2t + 1; column g), register
        // 1 rows 2t + 8, 2t + 9 — consecutive elements of one row of K
        const unsigned b[2] = {pair(K, nk, key, 16 * kk + 2 * t), pair(K, nk, key, 16 * kk + 2 * t + 8)};
        mma_m16n8k16(&acc[4 * j], a[kk], b);
      }
    }
#pragma unroll
    for (int i = 0; i < 32; i++) {
      const int row = q0 + g + 8 * ((i >> 1) & 1), key = n0 + 8 * (i >> 2) + 2 * t + (i & 1);
      acc[i] = key < nk ? acc[i] * scale : -INFINITY;  // keys past the end: exp(-inf) = 0
      if (S_out != nullptr && row < nq && key < nk) S_out[(size_t)row * nk + key] = acc[i];
    }
    attention_stats(acc, m, l);  // every lane of every warp calls it
  }

  if (t == 0) {  // m and l are the same in each quad: its first lane writes them
    for (int r = 0; r < 2; r++) {
      const int row = q0 + g + 8 * r;
      if (row < nq) {
        M[row] = m[r];
        L[row] = l[r];
      }
    }
  }
}

// ---- host: random Q and K, the kernel, a reference in double ----

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "attention_stats: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static unsigned long long rng = 88172645463325252ull;
static float uniform(float lo, float hi) {  // xorshift64: the same data on every run
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return lo + (hi - lo) * (float)((rng >> 11) * 0x1.0p-53);
}

// One shape: returns the number of failed checks.
static int run_case(int nq, int nk) {
  const float scale = 1.0f / sqrtf((float)D);  // 0.125: exact, so the scaling adds no error
  std::vector<__half> q((size_t)nq * D), k((size_t)nk * D);
  for (auto &x : q) x = __float2half(uniform(-2.0f, 2.0f));
  for (auto &x : k) x = __float2half(uniform(-2.0f, 2.0f));

  __half *dQ, *dK;
  float *dM, *dL, *dS;
  CHECK(cudaMalloc(&dQ, q.size() * sizeof(__half)));
  CHECK(cudaMalloc(&dK, k.size() * sizeof(__half)));
  CHECK(cudaMalloc(&dM, nq * sizeof(float)));
  CHECK(cudaMalloc(&dL, nq * sizeof(float)));
  CHECK(cudaMalloc(&dS, (size_t)nq * nk * sizeof(float)));
  CHECK(cudaMemcpy(dQ, q.data(), q.size() * sizeof(__half), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dK, k.data(), k.size() * sizeof(__half), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dM, 0xff, nq * sizeof(float)));  // NaN: a row never written fails
  CHECK(cudaMemset(dL, 0xff, nq * sizeof(float)));
  CHECK(cudaMemset(dS, 0xff, (size_t)nq * nk * sizeof(float)));
  const int rows_per_block = 16 * WARPS;
  attention_stats_kernel<<<(nq + rows_per_block - 1) / rows_per_block, WARPS * 32>>>(dQ, dK, nq, nk, scale, dM,
                                                                                       dL, dS);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> M(nq), L(nq), S((size_t)nq * nk);
  CHECK(cudaMemcpy(M.data(), dM, nq * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(L.data(), dL, nq * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(S.data(), dS, S.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dQ));
  CHECK(cudaFree(dK));
  CHECK(cudaFree(dM));
  CHECK(cudaFree(dL));
  CHECK(cudaFree(dS));

  // The reference, in double from the same f16 values. Tolerances:
  // - a score: the products of two f16 are exact in f32; a score's 4 mma each add 16 of
  //   them to the f32 accumulator, which the tensor core may do with the terms aligned to
  //   the largest and truncated: at most 4 · 17 terms, each off by at most 2^-23 of the
  //   largest, so |error| <= 2^-16 · scale · Σ|q·k| (128 · 2^-23: room to spare). Here that
  //   is at most 5e-4, while a score taken from a wrong row or key is off by about 1 (the
  //   scores spread over about ±3): a wrong fragment mapping fails;
  // - m: a maximum moves no more than the largest error of its elements: tol_row, the
  //   largest score tolerance of the row;
  // - l: logsumexp moves no more than the largest error of its elements either (tol_row),
  //   plus the func's own f32 arithmetic: exp within a few ulps and a sum of nk terms
  //   (a tree in each block, one merge a block), well within 1e-5 of the sum, that is
  //   1e-5 in its logarithm, and the final rounding, 2^-24 of |l|: 1e-5 · (1 + |l|).
  int failed = 0, s_bad = 0;
  double worst_s = 0, worst_m = 0, worst_l = 0;
  for (int i = 0; i < nq; i++) {
    double m_ref = -INFINITY, tol_row = 0;
    std::vector<double> s(nk);
    for (int j = 0; j < nk; j++) {
      double dot = 0, mag = 0;
      for (int d = 0; d < D; d++) {
        const double p = (double)__half2float(q[(size_t)i * D + d]) * (double)__half2float(k[(size_t)j * D + d]);
        dot += p;
        mag += fabs(p);
      }
      s[j] = scale * dot;
      const double tol = 0x1.0p-16 * scale * mag;
      tol_row = fmax(tol_row, tol);
      m_ref = fmax(m_ref, s[j]);
      const double err = fabs(S[(size_t)i * nk + j] - s[j]);
      worst_s = fmax(worst_s, err / tol);
      if (!(err <= tol) && s_bad++ < 5)
        printf("  S[%d, %d] = %.9g, reference %.9g (tolerance %.3g)\n", i, j, S[(size_t)i * nk + j], s[j], tol);
    }
    double sum = 0;
    for (int j = 0; j < nk; j++) sum += exp(s[j] - m_ref);
    const double l_ref = m_ref + log(sum);
    const double tol_l = tol_row + 1e-5 * (1 + fabs(l_ref));
    const double err_m = fabs(M[i] - m_ref), err_l = fabs(L[i] - l_ref);
    worst_m = fmax(worst_m, err_m / tol_row);
    worst_l = fmax(worst_l, err_l / tol_l);
    if (!(err_m <= tol_row) || !(err_l <= tol_l)) {
      if (failed < 5)
        printf("  row %d: m = %.9g (reference %.9g, tolerance %.3g), l = %.9g (reference %.9g, tolerance %.3g)\n",
               i, M[i], m_ref, tol_row, L[i], l_ref, tol_l);
      failed++;
    }
  }
  printf("%s: %d queries x %d keys, head dim %d: %d of %d rows' m and l and %d of %lld scores outside "
         "the tolerance (largest error / tolerance: scores %.3g, m %.3g, l %.3g)\n",
         (failed + s_bad) ? "FAIL" : "ok", nq, nk, D, failed, nq, s_bad, (long long)nq * nk, worst_s, worst_m, worst_l);
  return failed + s_bad;
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    fprintf(stderr, "attention_stats: no CUDA device here\n");
    return 1;
  }
  int failed = 0;
  failed += run_case(128, 1024);  // whole warps and whole key blocks
  failed += run_case(100, 1000);  // a warp with 4 rows past the end, a last block of 40 keys
  failed += run_case(1, 5);       // one row, one block of 5 keys
  printf("%s\n", failed ? "FAIL" : "PASS");
  return failed ? 1 : 0;
}
