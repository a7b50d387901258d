// CUDA runtime and driver API calls as regions of paradigm CUDA on the
// calling thread (CUPTI's callback API calls enter() and exit() around
// each): the enter carries the caller's stack, Python frames included, and
// the call's correlation id as a launch key (trace/device_work.h), so the
// kernels and copies it caused hang under it. A driver call made inside a
// runtime call on the same thread is the runtime call's doing: no region
// of its own, its correlation id an alias of the runtime call's.
//
// The region encloses the code run meanwhile (trace/traced_region.h): the
// samples a blocking cudaMemcpy or cudaDeviceSynchronize takes in the
// driver hang under it.
//
// Not the signal path: runs on the program's threads inside CUDA calls;
// may lock and allocate. Changes nothing the call returns.
#pragma once

#include <cstdint>

namespace hybridprof::cuda {

class CorrelationAliases;

// `function`: the API function's name as CUPTI gives it (a string of
// CUPTI's that lives as long as the process).
void api_enter(bool runtime, const char* function, uint32_t correlation, CorrelationAliases& aliases);
void api_exit(bool runtime);
// A fork child starts with no call open.
void api_fork_child();

}  // namespace hybridprof::cuda
