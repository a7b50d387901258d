// The host-side time of a queued GPU operation and of a round trip, for
// benchmarks/cuda_overhead.sh (which needs a GPU): `outer` timed
// repetitions of `inner` cudaMemsetAsync calls on a stream (then one
// cudaStreamSynchronize, inside the timing: the device's part too), and of
// `inner` / 10 memset + synchronize round trips. Prints the median
// repetition's time per operation:
//   async_op_ns=... round_trip_ns=...
// Under hybridprof each call is a traced region and each memset a GPU
// activity record CUPTI delivers, as a kernel's. Exits 3, saying why, when
// CUDA gives it no device.
//
//   cuda_bench [INNER=20000] [OUTER=21]
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "median_time.h"

int main(int argc, char** argv) {
  const int inner = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int outer = argc > 2 ? std::atoi(argv[2]) : 21;
  if (inner < 1 || outer < 1) {
    std::fprintf(stderr, "usage: cuda_bench [INNER>=1] [OUTER>=1]\n");
    return 2;
  }
  void* memory = nullptr;
  cudaStream_t stream = nullptr;
  cudaError_t error = cudaMalloc(&memory, 4096);
  if (error == cudaSuccess) error = cudaStreamCreate(&stream);
  if (error != cudaSuccess) {
    std::fprintf(stderr, "cuda_bench: %s\n", cudaGetErrorString(error));
    return 3;
  }
  const double async_op = median_ns_per_call(inner, outer, [&](int n) {
    for (int i = 0; i < n; ++i) cudaMemsetAsync(memory, i & 0xff, 4096, stream);
    cudaStreamSynchronize(stream);
  });
  const double round_trip = median_ns_per_call(inner / 10 + 1, outer, [&](int n) {
    for (int i = 0; i < n; ++i) {
      cudaMemsetAsync(memory, i & 0xff, 4096, stream);
      cudaStreamSynchronize(stream);
    }
  });
  std::printf("async_op_ns=%.1f round_trip_ns=%.1f\n", async_op, round_trip);
  cudaStreamDestroy(stream);
  cudaFree(memory);
  return 0;
}
