// OpenMP from runtimes with OMPT (LLVM's libomp, Intel's): hybridprof is
// their first-party tool. The runtime finds ompt_start_tool in the process
// (the preloaded runtime defines it, preload/openmp/ompt_start_tool.cc)
// and calls it as it starts; the callbacks then record the same regions as
// the GOMP wrappers do for libgomp (openmp_regions.h): parallel regions on
// every thread of the team (implicit tasks), worksharing, barriers and other
// sync regions, explicit tasks where they run, critical sections, locks
// and ordered (each with its wait), masked.
//
// Another tool the user names in OMP_TOOL_LIBRARIES gets the runtime's
// events instead (a runtime serves one tool): hybridprof steps aside and
// says so in one line; samples are unaffected.
//
// Not the signal path: callbacks run on the program's threads, from inside
// the OpenMP runtime; they may lock and allocate.
#pragma once

namespace hybridprof::openmp {

// An OpenMP runtime has started hybridprof's tool: it reports constructs,
// and its GOMP_ entry points need no tracing of their own.
bool ompt_reports();

// ompt_start_tool's work: its ompt_start_tool_result_t, or null to step
// aside for another tool. Defined when built with OMPT's interface
// (omp-tools.h; preload/openmp/ompt_start_tool.cc then calls it).
void* start_ompt_tool(unsigned omp_version, const char* runtime_version);

}  // namespace hybridprof::openmp
