// cudaProfilerStart() / cudaProfilerStop() open and close the capture
// window (preload/capture_window.cc), as Nsight Systems' cudaProfilerApi
// capture range does: many CUDA codes already call them around the part
// worth profiling. The runtime's definitions come first for the program
// (and for libraries a framework loads into a scope of their own, whose
// lookups search the global scope first); each then calls the CUDA
// runtime's own, found in whichever loaded libcudart has it. The window
// changes whatever CUDA answers (without a GPU it fails, and the program
// sees that error as before).
//
// A program linked with the static CUDA runtime (nvcc's default) calls its
// own copy, which no symbol reaches.
#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "preload/runtime.h"

namespace hybridprof::preload {
namespace {

using ProfilerFn = int (*)();  // cudaError_t is an enum: an int

struct Search {
  const char* name;
  void* self;  // this library's definition, never the answer
  ProfilerFn found = nullptr;
};

// The CUDA runtime's `name`: the next definition after ours, else any
// loaded libcudart's (one dlopen'ed into a local scope, as frameworks do).
ProfilerFn cuda_runtime_function(const char* name, void* self) {
  if (void* next = dlsym(RTLD_NEXT, name); next && next != self) return reinterpret_cast<ProfilerFn>(next);
  Search search{name, self};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "libcudart") == nullptr) return 0;
        void* handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
        if (handle == nullptr) return 0;
        void* f = dlsym(handle, s->name);
        dlclose(handle);
        if (f == nullptr || f == s->self) return 0;
        s->found = reinterpret_cast<ProfilerFn>(f);
        return 1;
      },
      &search);
  return search.found;
}

constexpr int kCudaErrorUnknown = 999;

int call_cuda(const char* name, void* self) {
  const ProfilerFn real = cuda_runtime_function(name, self);
  return real ? real() : kCudaErrorUnknown;
}

}  // namespace
}  // namespace hybridprof::preload

using namespace hybridprof::preload;

extern "C" {
int cudaProfilerStart() {
  set_capture_window(true, "cudaProfilerStart()");
  return call_cuda("cudaProfilerStart", reinterpret_cast<void*>(&cudaProfilerStart));
}
int cudaProfilerStop() {
  set_capture_window(false, "cudaProfilerStop()");
  return call_cuda("cudaProfilerStop", reinterpret_cast<void*>(&cudaProfilerStop));
}
}
