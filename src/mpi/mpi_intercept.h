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

// Hooks that declare kRecordsAfter and records_after(args...) (sends that
// complete without their receiver: eager blocking sends, buffered and
// nonblocking ones) have, where it returns true, their whole bookkeeping
// (calling context, hooks, records) done after the real call, which is
// timed by two clock reads around it: the message leaves before the
// profiler's work, not after it, and a ping-pong's latency carries only
// the clock reads (about 50 ns a one-way message less on this project's
// 2-core VM). What it gives up: a call that never returns (a send stuck in
// flow control to a rank that stopped receiving) leaves no region, only
// the samples taken in it (their stacks show the call).
template <typename H, typename = void>
struct RecordsAfter : std::false_type {};
template <typename H>
struct RecordsAfter<H, std::void_t<decltype(H::kRecordsAfter)>> : std::bool_constant<H::kRecordsAfter> {};

template <MpiFunction F, typename Real, typename... Args>
__attribute__((always_inline)) inline int call_real(Real real, Args&... args) {
  if constexpr (ReplacesCall<Hooks<F>>::value)
    return Hooks<F>::call(real, args...);
  else
    return real(args...);
}

template <MpiFunction F, typename Real, typename... Args>
__attribute__((always_inline)) inline int intercept(Real real, Args&... args) {
  if constexpr (RecordsAfter<Hooks<F>>::value) {
    // Before any record the trace clock is decided (by the path below).
    if (g_trace_clock_decided.load(std::memory_order_acquire)) {
      bool after = false;
      uint64_t start = 0, end = 0;
      int rc = 0;
      {
        // Marks the real call as inside a traced one, as MpiCall does: MPI
        // calling itself, or waiting in the C library, is not recorded
        // again. The decision too: a sample taken in it is the call's.
        const sigsafe::SectionScope inside(sigsafe::Section::kTracedCall);
        if (!inside.outermost()) return call_real<F>(real, args...);
        if (Hooks<F>::records_after(args...)) {
          after = true;
          start = trace_clock_now();
          rc = call_real<F>(real, args...);
          end = trace_clock_now();
        }
      }
      if (after) {
        // Around the whole call, its leave included: a sample taken in
        // this bookkeeping (after the real call) is recorded after the
        // call's records, as the profiler's time, not inside the region
        // with a time past its end.
        TracingHost* host = tracing_host();
        ThreadState* thread = host ? host->current_thread() : nullptr;
        const ProfilerWork work(thread);
        MpiCall call(F, start, end, thread);
        if (call.recording()) {
          Hooks<F>::before(call, args...);
          call.begin();
          Hooks<F>::after(call, rc, args...);
        }
        return rc;
      }
    }
  }
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
