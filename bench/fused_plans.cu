// bench/fused_plans.cu — the host of `scripts/bench fused-plans`: times generated fused
// kernels (tilec emit's CUDA, compiled here by NVRTC for the device's arch) one by one, on
// rows x cols bf16 inputs rotated among copies of at least 256 MiB (so no kernel reads its
// input from L2), against a device-to-device copy of the same bytes timed the same way.
//
//   fused_plans compile DIR NAME...   DIR/NAME.cu -> DIR/NAME.cubin
//   fused_plans time CFG              CFG's lines: NAME KIND ROWS COLS THREADS GRID SMEM
//                                     (KIND 0: tilec_softmax(X, Y), its result checked
//                                     against a double-precision softmax; 1:
//                                     tilec_cross_entropy(X, Tg, Y), timed only)
// Prints a line a kernel: its time, GB/s (softmax: x read and y written; cross_entropy:
// x and the targets read, a loss a row written) and the share of the copy's GB/s.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#define CK(x) do { CUresult e_ = (x); if (e_) { const char *s_; cuGetErrorString(e_, &s_); fprintf(stderr, "CUDA %s at line %d\n", s_, __LINE__); exit(1); } } while (0)

static std::string slurp(const std::string &p) {
  FILE *f = fopen(p.c_str(), "rb");
  if (!f) { perror(p.c_str()); exit(1); }
  std::string s;
  char b[65536];
  size_t n;
  while ((n = fread(b, 1, sizeof b, f))) s.append(b, n);
  fclose(f);
  return s;
}
static float bf(unsigned short h) { unsigned u = (unsigned)h << 16; float f; memcpy(&f, &u, 4); return f; }
static unsigned short tobf(float f) { unsigned u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return (unsigned short)(u >> 16); }
static const size_t ROTATE = (size_t)256 << 20;

// the median of 7 repeats of `calls` launches (time per call, microseconds)
template <class F> static double timed(F launch, int calls) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> v;
  for (int i = 0; i < 3; i++) launch(i);
  for (int rep = 0; rep < 7; rep++) {
    cudaEventRecord(a);
    for (int i = 0; i < calls; i++) launch(i);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    v.push_back(ms * 1e3f / calls);
  }
  std::sort(v.begin(), v.end());
  return v[3];
}

int main(int argc, char **argv) {
  if (argc > 3 && !strcmp(argv[1], "compile")) {
    cudaFree(0);
    int dev, ma, mi;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&ma, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&mi, cudaDevAttrComputeCapabilityMinor, dev);
    std::string arch = "-arch=sm_" + std::to_string(ma * 10 + mi);
    for (int a = 3; a < argc; a++) {
      std::string base = std::string(argv[2]) + "/" + argv[a], src = slurp(base + ".cu");
      nvrtcProgram p;
      nvrtcCreateProgram(&p, src.c_str(), argv[a], 0, NULL, NULL);
      const char *opts[] = {arch.c_str(), "-std=c++17"};
      if (nvrtcCompileProgram(p, 2, opts) != NVRTC_SUCCESS) {
        size_t n;
        nvrtcGetProgramLogSize(p, &n);
        std::string log(n, '\0');
        nvrtcGetProgramLog(p, &log[0]);
        fprintf(stderr, "%s: %s\n", argv[a], log.substr(0, 800).c_str());
        continue;
      }
      size_t n;
      nvrtcGetCUBINSize(p, &n);
      std::string bin(n, '\0');
      nvrtcGetCUBIN(p, &bin[0]);
      FILE *f = fopen((base + ".cubin").c_str(), "wb");
      fwrite(bin.data(), 1, n, f);
      fclose(f);
      nvrtcDestroyProgram(&p);
    }
    return 0;
  }
  if (argc != 3 || strcmp(argv[1], "time")) {
    fprintf(stderr, "usage: fused_plans compile DIR NAME... | fused_plans time CFG\n");
    return 2;
  }
  cudaFree(0);
  std::string cfg = argv[2], dir = cfg.substr(0, cfg.rfind('/'));
  FILE *cf = fopen(cfg.c_str(), "r");
  if (!cf) { perror(argv[2]); return 1; }
  char name[256];
  int kind, T, S, G;
  long long R, C, curR = -1, curC = -1;
  std::vector<CUdeviceptr> X;
  CUdeviceptr Y = 0, Z = 0, Tg = 0;
  std::vector<unsigned short> h, o;
  std::vector<double> ref;
  double copy_us = 0;
  size_t n = 0;
  int bad_total = 0;
  while (fscanf(cf, "%255s %d %lld %lld %d %d %d", name, &kind, &R, &C, &T, &G, &S) == 7) {
    if (R != curR || C != curC) {  // new data: x, its copies, the reference, the copy ceiling
      for (CUdeviceptr p : X) cuMemFree(p);
      if (Y) {
        cuMemFree(Y);
        cuMemFree(Z);
        cuMemFree(Tg);
      }
      curR = R, curC = C, n = (size_t)R * C;
      h.assign(n, 0), o.assign(n, 0);
      srand((unsigned)C);
      for (size_t i = 0; i < n; i++) h[i] = tobf((rand() / (float)RAND_MAX) * 16 - 8);
      size_t copies = std::max<size_t>(1, std::min<size_t>(16, (ROTATE + n * 2 - 1) / (n * 2)));
      X.assign(copies, 0);
      for (auto &p : X) {
        CK(cuMemAlloc(&p, n * 2));
        CK(cuMemcpyHtoD(p, h.data(), n * 2));
      }
      CK(cuMemAlloc(&Y, n * 2));
      CK(cuMemAlloc(&Z, n * 2));
      std::vector<long long> tg(R);
      for (long long r = 0; r < R; r++) tg[r] = r % 13 == 0 ? -100 : (r * 7919) % C;
      CK(cuMemAlloc(&Tg, R * 8));
      CK(cuMemcpyHtoD(Tg, tg.data(), R * 8));
      ref.assign(n, 0);
      for (long long r = 0; r < R; r++) {
        const unsigned short *x = &h[(size_t)r * C];
        double m = -INFINITY, s = 0;
        for (long long c = 0; c < C; c++) m = std::max(m, (double)bf(x[c]));
        for (long long c = 0; c < C; c++) s += exp(bf(x[c]) - m);
        for (long long c = 0; c < C; c++) ref[(size_t)r * C + c] = exp(bf(x[c]) - m) / s;
      }
      int calls = (int)std::max<size_t>(3, std::min<size_t>(200, ((size_t)4 << 30) / (n * 4)));
      copy_us = timed([&](int i) { cuMemcpyDtoDAsync(Z, X[i % X.size()], n * 2, 0); }, calls);
      printf("rows %lld x cols %lld: %zu copies of x; the copy ceiling %.2f us, %.0f GB/s\n", R, C, X.size(), copy_us,
             4.0 * n / (copy_us * 1e3));
    }
    CUmodule mod;
    if (cuModuleLoad(&mod, (dir + "/" + name + ".cubin").c_str()) != CUDA_SUCCESS) {
      printf("%-28s not compiled\n", name);
      continue;
    }
    CUfunction fn;
    CK(cuModuleGetFunction(&fn, mod, kind ? "tilec_cross_entropy" : "tilec_softmax"));
    CK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, S));
    int regs, occ;
    cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, T, S);
    auto launch = [&](int i) {
      CUdeviceptr x = X[i % X.size()];
      void *sm[] = {&x, &Y}, *ce[] = {&x, &Tg, &Y};
      cuLaunchKernel(fn, G, 1, 1, T, 1, 1, S, 0, kind ? ce : sm, NULL);
    };
    int calls = (int)std::max<size_t>(3, std::min<size_t>(200, ((size_t)4 << 30) / (n * 4)));
    double us = timed(launch, calls);
    CK(cuCtxSynchronize());
    double bytes = kind ? n * 2.0 + R * 10.0 : n * 4.0;
    char check[64] = "";
    if (kind == 0) {  // the result of x's first copy against the double-precision softmax
      CUdeviceptr x0 = X[0];
      void *sm[] = {&x0, &Y};
      CK(cuLaunchKernel(fn, G, 1, 1, T, 1, 1, S, 0, sm, NULL));
      CK(cuMemcpyDtoH(o.data(), Y, n * 2));
      size_t bad = 0;
      for (size_t i = 0; i < n; i++)
        if (!(fabs(bf(o[i]) - ref[i]) <= ref[i] * (1.0 / 128) + 1e-38)) bad++;
      snprintf(check, sizeof check, "%s", bad ? "WRONG" : "right");
      if (bad) bad_total++;
    }
    printf("%-28s threads %4d regs %3d CTAs/SM %2d smem %6d  %9.2f us %5.0f GB/s %5.1f%% of the copy  %s\n", name, T,
           regs, occ, S, us, bytes / (us * 1e3), 100.0 * (bytes / (4.0 * n)) * copy_us / us, check);
    fflush(stdout);
    cuModuleUnload(mod);
  }
  return bad_total ? 1 : 0;
}
