// cuda_static_window [N=100]: a CUDA program linked with the static CUDA
// runtime (nvcc's default), for the GPU node check (benchmarks/gpu/check.py):
// N cudaMemsetAsync calls before cudaProfilerStart(), N between it and
// cudaProfilerStop(), N after, each phase synchronized. A static runtime's
// calls reach no interposer: under `hybridprof --paused` the window opens
// and closes through CUPTI's callbacks alone, and only the middle N
// memsets are recorded. Prints "window memsets N". Exits 3, saying why,
// when CUDA gives it no device.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100;
  void* memory = nullptr;
  cudaStream_t stream = nullptr;
  cudaError_t error = cudaMalloc(&memory, 4096);
  if (error == cudaSuccess) error = cudaStreamCreate(&stream);
  if (error != cudaSuccess) {
    std::fprintf(stderr, "cuda_static_window: %s\n", cudaGetErrorString(error));
    return 3;
  }
  const auto phase = [&] {
    for (int i = 0; i < n; ++i) cudaMemsetAsync(memory, i & 0xff, 4096, stream);
    cudaStreamSynchronize(stream);
  };
  phase();
  cudaProfilerStart();
  phase();
  cudaProfilerStop();
  phase();
  std::printf("window memsets %d\n", n);
  return 0;
}
