// How an intercepted MPI call runs: it enters its region, runs its hooks
// (mpi_hooks.h) around the real PMPI_ function and leaves the region. The
// runtime's interposers (preload/mpi/mpi_wrappers.cc) are this, generated
// from the list; unit tests call it with a fake real function.
#pragma once

#include <tuple>
#include <type_traits>

#include "mpi/mpi_hooks.h"
#include "trace/traced_region.h"

namespace hybridprof::mpi {

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

// Hooks that declare kRunsUntraced (MPI_Init*, MPI_Finalize, communicator
// creation and freeing) run before() and after() on calls that are not
// recorded too (MPI switched off, a thread not traced, a capture window
// closed): the rank, the clock offsets, the communicators and the job's
// archive come from there.
template <typename H, typename = void>
struct RunsUntraced : std::false_type {};
template <typename H>
struct RunsUntraced<H, std::void_t<decltype(H::kRunsUntraced)>> : std::bool_constant<H::kRunsUntraced> {};

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
  if (!call.recording()) {
    if constexpr (RunsUntraced<Hooks<F>>::value) {
      Hooks<F>::before(call, args...);
      const int rc = call_real<F>(real, args...);
      Hooks<F>::after(call, rc, args...);
      return rc;
    }
    return call_real<F>(real, args...);
  }
  {
    const ProfilerWork work(call.thread());
    Hooks<F>::before(call, args...);
    call.begin();
  }
  const int rc = call_real<F>(real, args...);
  const ProfilerWork work(call.thread());
  Hooks<F>::after(call, rc, args...);
  return rc;
}

}  // namespace hybridprof::mpi
