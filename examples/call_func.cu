// call_func.cu — calling a tilec func from your own CUDA kernel (docs/codegen.md).
// tilec emit examples/tile_row_max.tile --target cuda -o tile_row_max.cuh
// nvcc -arch=sm_90 -c call_func.cu
#include "tile_row_max.cuh"

__global__ void my_kernel(const float *in, float *out) {   // launched with 128 threads
  __shared__ float tile[64 * 128];
  __shared__ float row_max[64];
  for (int i = threadIdx.x; i < 64 * 128; i += blockDim.x) tile[i] = in[blockIdx.x * 64 * 128 + i];
  __syncthreads();                        // the func reads what every thread wrote
  tile_row_max(row_max, tile);            // every thread of the block calls it
  if (threadIdx.x < 64) out[blockIdx.x * 64 + threadIdx.x] = row_max[threadIdx.x];
}
