// The symbol an OpenMP runtime with OMPT looks for in the process as it
// starts: the preloaded runtime's makes hybridprof its tool
// (openmp/ompt_tool.h).
#include <omp-tools.h>

#include "openmp/ompt_tool.h"
#include "preload/runtime.h"

extern "C" ompt_start_tool_result_t* ompt_start_tool(unsigned int omp_version, const char* runtime_version) {
  if (hybridprof::preload::secure_execution()) return nullptr;
  return static_cast<ompt_start_tool_result_t*>(hybridprof::openmp::start_ompt_tool(omp_version, runtime_version));
}
