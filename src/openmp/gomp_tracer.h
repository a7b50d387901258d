// OpenMP from GCC's runtime, libgomp, which has no OMPT: what each
// intercepted GOMP_ entry point (gomp_functions.def) records around the
// real one, as regions of openmp_regions.h:
//   kFork           a parallel region: the outlined body runs inside the
//                   region on every thread of the team (a combined
//                   parallel loop or sections: its loop or sections too);
//   kForkStart/kJoin  the same, for the older start/end pair;
//   kCall           the call is the region (a barrier, a taskwait);
// and GOMP_task (create_task) a task where it runs;
//   kStart/kFinish  the region runs from one call to the other (a loop);
//   kStartWaiting   kStart, the call itself a "(waiting)" region inside it
//                   (acquiring a critical section);
//   kFinishWaiting  kFinish, the call a region of its wait (a loop's
//                   implicit barrier).
// LLVM's libomp (and Intel's) define the GOMP_ entry points too, for
// GCC-built code; when it reports through OMPT (ompt_tool.cc) the wrappers
// only call through, so nothing is recorded twice.
//
// Not the signal path: wrappers run in the program's threads like any
// library code and may lock and allocate.
#pragma once

#include <cstdint>

#include "openmp/ompt_tool.h"
#include "openmp/openmp_regions.h"
#include "trace/traced_region.h"

namespace hybridprof::openmp {

enum class Role : uint8_t { kFork, kForkStart, kJoin, kCall, kStart, kFinish, kStartWaiting, kFinishWaiting };

// A GOMP_ entry point's real function: the next definition after ours, or
// libgomp's where it is not in the global scope (aborts with a message when
// there is none: a program calling it has one loaded).
struct RealGompFunction {
  explicit RealGompFunction(const char* name);
  void* function;
  bool in_ompt_runtime;  // defined by a runtime that may report through OMPT
  bool switched_on;      // --trace has openmp
  // This call is traced here: not when its runtime reports through OMPT.
  // Inline, a load or two: every construct asks.
  bool traced() const { return switched_on && !(in_ompt_runtime && ompt_reports()); }
};

// What a fork hands libgomp instead of the outlined body and its data.
struct ForkPacket {
  void (*fn)(void*);
  void* data;
  Construct construct;  // kParallel, or the loop / sections of a combined construct
  bool traced;
  const void* forker;  // this_thread_token() of the thread that forked it (its master)
  // The master's state as it forked (host->current_thread(); null: not
  // traced then): its body's regions are entered on it without a second
  // lookup through the host.
  ThreadState* forker_state = nullptr;
};
// A token for the calling thread, unique among live threads.
const void* this_thread_token();
// Around the real fork of a traced packet: the team's fork (`num_threads`
// as the call gives it, 0: the default; under the caller's ProfilerWork),
// when its master is traced (forker_state), and, for kFork, its join.
void before_fork(const ForkPacket& packet, unsigned num_threads);
void after_fork(const ForkPacket& packet);
// Runs the outlined body of `packet` (a ForkPacket) inside its regions.
void traced_body(void* packet);
// kForkStart: a copy of `packet` that lives until the matching kJoin
// (whose after_call joins the team).
ForkPacket* keep_fork_packet(const ForkPacket& packet);

// GOMP_task's parameters, and its wrapper's work: the task runs inside a
// region "!$omp task" named after where it was created (`site`: the
// wrapper's return address), on whichever thread runs it, as OMPT reports
// tasks. Tasks with a copy constructor (cpyfn) or a detach clause go to
// the real function as they are (libgomp writes into their data): not
// traced.
using GompTaskFunction = void (*)(void (*fn)(void*), void* data, void (*cpyfn)(void*, void*), long arg_size,
                                  long arg_align, bool if_clause, unsigned flags, void** depend, int priority,
                                  void* detach);
void create_task(const RealGompFunction& real, const void* site, void (*fn)(void*), void* data,
                 void (*cpyfn)(void*, void*), long arg_size, long arg_align, bool if_clause, unsigned flags,
                 void** depend, int priority, void* detach);

// Around the real call, for the roles but kFork / kForkStart. `site`: the
// wrapper's return address.
void before_call(Construct c, Role r, const void* site);
void after_call(Construct c, Role r);
// kFork / kForkStart: the packet's regions are entered on each thread by
// traced_body; kForkStart's master enters them after the real call.
void after_fork_start(ForkPacket* packet);

// Calls the real function inside what role `R` of construct `C` records
// (not kFork, kForkStart: gomp_wrappers.cc).
template <Construct C, Role R, typename Real, typename... Args>
inline auto intercept(const RealGompFunction& real, const void* site, Args... args) {
  const auto fn = reinterpret_cast<Real>(real.function);
  if (!real.traced()) return fn(args...);
  {
    const ProfilerWork work;
    before_call(C, R, site);
  }
  struct After {
    ~After() {
      const ProfilerWork work;
      after_call(C, R);
    }
  } after;
  return fn(args...);
}

}  // namespace hybridprof::openmp
