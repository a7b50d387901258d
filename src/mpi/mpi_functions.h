// The intercepted MPI functions as an enum, from the list in
// src/mpi/mpi_functions.def.
#pragma once

#include <cstdint>

namespace hybridprof::mpi {

enum class MpiFunction : uint16_t {
#define MPI_FUNCTION(name, params, args) name,
#include "mpi/mpi_functions.def"
  kCount
};
inline constexpr uint32_t kMpiFunctionCount = static_cast<uint32_t>(MpiFunction::kCount);

const char* mpi_function_name(MpiFunction);

// Raw-stream region ids of the MPI functions: the base of a block reserved
// (trace/region_ids.h) when the first MPI call defines the regions, before
// any region id is used, + the enum value. Inline: every call uses it.
extern uint32_t g_mpi_region_base;
inline uint32_t mpi_region(MpiFunction f) { return g_mpi_region_base + static_cast<uint32_t>(f); }

// The interposers' entry points, kMpiFunctionCount of them in the list's
// order (the runtime's, preload/mpi/mpi_wrappers.cc; none in unit tests):
// the drain files the frames of their code under the call's region.
void set_wrapper_entries(const void* const* entries);

}  // namespace hybridprof::mpi
