// The CUDA profiler API (cudaProfilerStart/Stop, the driver's
// cuProfilerStart/Stop) opens and closes the capture window, as Nsight
// Systems' cudaProfilerApi capture range does. One call can reach the
// runtime through up to three layers on its thread: the interposer
// (cuda_profiler_api.cc, for a shared libcudart), then CUPTI's callbacks
// for the runtime function and for the driver function it calls
// (cupti_injection.cc, the only layer that sees a statically linked
// runtime's calls). The outermost layer changes the window, the others
// only nest, so each call changes it once.
//
// Not the signal path: runs on the program's threads inside its CUDA calls.
#pragma once

namespace hybridprof::preload {

// A layer's entry into a profiler-API call: `start` opens the window,
// else closes it, if no layer of this thread is inside one already.
// `cause` is what the archive says opened or closed it ("cudaProfilerStart()").
void profiler_api_enter(bool start, const char* cause);
// Its exit (every enter has one).
void profiler_api_exit();

}  // namespace hybridprof::preload
