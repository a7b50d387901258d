// OpenMP from GCC's runtime, libgomp, which has no OMPT: what each
// intercepted GOMP_ entry point (gomp_functions.def) records around the
// real one. Every construct is a traced region of paradigm OpenMP on the
// thread that meets it, named after the construct and where it is in the
// code ("!$omp for @solver.c:42"):
//   kFork           a parallel region: the outlined body runs inside the
//                   region on every thread of the team (a combined
//                   parallel loop or sections: its loop or sections too);
//   kForkStart/kJoin  the same, for the older start/end pair;
//   kCall           the call is the region (a barrier, a taskwait);
//   kStart/kFinish  the region runs from one call to the other (a loop);
//   kStartWaiting   kStart, the call itself a "(waiting)" region inside it
//                   (acquiring a critical section);
//   kFinishWaiting  kFinish, the call a region of its wait (a loop's
//                   implicit barrier).
//
// Not the signal path: wrappers run in the program's threads like any
// library code and may lock and allocate.
#pragma once

#include <cstdint>

namespace hybridprof::openmp {

enum class Construct : uint8_t {
  kParallel, kLoop, kSections, kSingle, kBarrier, kCritical, kAtomic, kOrdered, kTask, kTaskwait, kTaskgroup,
};
enum class Role : uint8_t { kFork, kForkStart, kJoin, kCall, kStart, kFinish, kStartWaiting, kFinishWaiting };

// The real libgomp function `name` (the next definition after ours, or
// libgomp's where it is not in the global scope); aborts with a message
// when there is none (a program calling it has one loaded).
void* require_gomp_function(const char* name);

// What a fork hands libgomp instead of the outlined body and its data.
struct ForkPacket {
  void (*fn)(void*);
  void* data;
  Construct construct;  // kParallel, or the loop / sections of a combined construct
};
// Runs the outlined body of `packet` (a ForkPacket) inside its regions.
void traced_body(void* packet);
// kForkStart: a copy of `packet` that lives until the matching kJoin.
ForkPacket* keep_fork_packet(const ForkPacket& packet);

// Around the real call, for the roles but kFork / kForkStart. `site`: the
// wrapper's return address.
void before_call(Construct c, Role r, const void* site);
void after_call(Construct c, Role r);
// kFork / kForkStart: the packet's regions are entered on each thread by
// traced_body; kForkStart's master enters them after the real call.
void after_fork_start(ForkPacket* packet);

// Calls `real` inside what role `R` of construct `C` records (not kFork,
// kForkStart: gomp_wrappers.cc).
template <Construct C, Role R, typename Real, typename... Args>
inline auto intercept(Real real, const void* site, Args... args) {
  before_call(C, R, site);
  struct After {
    ~After() { after_call(C, R); }
  } after;
  return real(args...);
}

}  // namespace hybridprof::openmp
