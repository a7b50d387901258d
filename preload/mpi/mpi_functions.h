// The intercepted MPI functions as an enum, from the list in
// src/mpi/mpi_functions.def.
#pragma once

#include <cstdint>

namespace hybridprof::preload::mpi {

enum class MpiFunction : uint16_t {
#define MPI_FUNCTION(name, params, args) name,
#include "mpi/mpi_functions.def"
  kCount
};
inline constexpr uint32_t kMpiFunctionCount = static_cast<uint32_t>(MpiFunction::kCount);

const char* mpi_function_name(MpiFunction);

// Raw-stream region ids of the MPI functions: a block reserved at the first
// use (trace/region_ids.h), then the base + enum value.
uint32_t mpi_region(MpiFunction f);

}  // namespace hybridprof::preload::mpi
