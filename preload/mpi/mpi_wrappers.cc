// The MPI entry points the runtime interposes, generated from the list in
// src/mpi/mpi_functions.def: each is intercept() (mpi/mpi_intercept.h) over
// the real PMPI_ function.
#include <iterator>

#include "mpi/mpi_intercept.h"
#include "mpi/pmpi.h"

#define HYBRIDPROF_WITH_REAL(...) (real __VA_OPT__(, ) __VA_ARGS__)
// The wrapper is a frame of its own (never inlined), so the drain can map
// the code between its start and end to the call's region.
#define MPI_FUNCTION(name, params, args)                                                              \
  extern "C" __attribute__((noinline)) int name params {                                              \
    using Real = int(*) params;                                                                       \
    static const Real real = reinterpret_cast<Real>(hybridprof::mpi::require_mpi_function("P" #name)); \
    return hybridprof::mpi::intercept<hybridprof::mpi::MpiFunction::name> HYBRIDPROF_WITH_REAL args;   \
  }
#include "mpi/mpi_functions.def"
#undef MPI_FUNCTION

namespace {

// Their entry points, for the drain's code ranges (mpi/mpi_functions.h).
const void* const kWrapperEntries[] = {
#define MPI_FUNCTION(name, params, args) reinterpret_cast<const void*>(&::name),
#include "mpi/mpi_functions.def"
#undef MPI_FUNCTION
};
static_assert(std::size(kWrapperEntries) == hybridprof::mpi::kMpiFunctionCount);

__attribute__((constructor(101))) void register_wrapper_entries() {
  hybridprof::mpi::set_wrapper_entries(kWrapperEntries);
}

}  // namespace
