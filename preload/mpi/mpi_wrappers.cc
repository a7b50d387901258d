// The MPI entry points the runtime interposes, generated from the list in
// src/mpi/mpi_functions.def: each enters its region, runs its hooks
// (mpi_hooks.h) around the real PMPI_ function and leaves the region.
#include <tuple>
#include <type_traits>

#include "preload/mpi/mpi_hooks.h"
#include "preload/mpi/pmpi.h"

namespace hybridprof::preload::mpi {

// Always inlined: the real call must be made from the wrapper's own frame
// (a tail call would drop that frame from the stacks sampled inside it).
// Hooks that declare kBeginsCollective (blocking collectives) have their
// MpiCollectiveBegin carried by the enter record.
template <typename H, typename = void>
struct BeginsCollective : std::false_type {};
template <typename H>
struct BeginsCollective<H, std::void_t<decltype(H::kBeginsCollective)>> : std::bool_constant<H::kBeginsCollective> {};

// Hooks that declare kReplacesCall (MPI_Finalize, MPI_Finalized) make the
// real call themselves, traced or not: Hooks<F>::call(real, args...).
template <typename H, typename = void>
struct ReplacesCall : std::false_type {};
template <typename H>
struct ReplacesCall<H, std::void_t<decltype(H::kReplacesCall)>> : std::bool_constant<H::kReplacesCall> {};

template <MpiFunction F, typename Real, typename... Args>
__attribute__((always_inline)) inline int call_real(Real real, Args&... args) {
  if constexpr (ReplacesCall<Hooks<F>>::value)
    return Hooks<F>::call(real, args...);
  else
    return real(args...);
}

template <MpiFunction F, typename Real, typename... Args>
__attribute__((always_inline)) inline int intercept(Real real, Args&... args) {
  MpiCall call(F, BeginsCollective<Hooks<F>>::value);
  if (!call.recording()) return call_real<F>(real, args...);
  Hooks<F>::before(call, args...);
  call.begin();
  const int rc = call_real<F>(real, args...);
  Hooks<F>::after(call, rc, args...);
  return rc;
}

}  // namespace hybridprof::preload::mpi

#define HYBRIDPROF_WITH_REAL(...) (real __VA_OPT__(, ) __VA_ARGS__)
// The wrapper is a frame of its own (never inlined), so the drain can map
// the code between its start and end to the call's region.
#define MPI_FUNCTION(name, params, args)                                                              \
  extern "C" __attribute__((noinline)) int name params {                                              \
    using Real = int(*) params;                                                                       \
    static const Real real = reinterpret_cast<Real>(hybridprof::preload::mpi::require_mpi_function("P" #name)); \
    return hybridprof::preload::mpi::intercept<hybridprof::preload::mpi::MpiFunction::name>            \
        HYBRIDPROF_WITH_REAL args;                                                                    \
  }
#include "mpi/mpi_functions.def"
