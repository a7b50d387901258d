// cudaProfilerStart() / cudaProfilerStop() open and close the capture
// window (preload/capture_window.cc; cuda_profiler_api.h says which layer
// does): many CUDA codes already call them around the part worth
// profiling. The runtime's definitions come first for the program (and for
// libraries a framework loads into a scope of their own, whose lookups
// search the global scope first); each then calls the CUDA runtime's own,
// found in whichever loaded libcudart has it. The window changes whatever
// CUDA answers (without a GPU it fails, and the program sees that error as
// before).
//
// A program linked with the static CUDA runtime (nvcc's default) calls its
// own copy, which no symbol reaches: CUPTI's callbacks see those calls.
#include "preload/cuda/cuda_profiler_api.h"

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

int call_cuda(bool start, const char* name, void* self) {
  profiler_api_enter(start, start ? "cudaProfilerStart()" : "cudaProfilerStop()");
  const ProfilerFn real = cuda_runtime_function(name, self);
  const int result = real ? real() : kCudaErrorUnknown;
  profiler_api_exit();
  return result;
}

// How many layers of a profiler-API call this thread is inside.
thread_local int t_profiler_api_depth = 0;

}  // namespace

void profiler_api_enter(bool start, const char* cause) {
  if (t_profiler_api_depth++ == 0) set_capture_window(start, cause);
}

void profiler_api_exit() {
  if (t_profiler_api_depth > 0) --t_profiler_api_depth;
}

}  // namespace hybridprof::preload

using namespace hybridprof::preload;

extern "C" {
int cudaProfilerStart() { return call_cuda(true, "cudaProfilerStart", reinterpret_cast<void*>(&cudaProfilerStart)); }
int cudaProfilerStop() { return call_cuda(false, "cudaProfilerStop", reinterpret_cast<void*>(&cudaProfilerStop)); }
}
