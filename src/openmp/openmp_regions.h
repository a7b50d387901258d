// OpenMP constructs as traced regions, whichever runtime reports them
// (GCC's libgomp through its intercepted GOMP_ entry points, LLVM's libomp
// through OMPT): each is a region of paradigm OpenMP on the thread that
// meets it, named after the construct and where it is in the code
// ("!$omp for @solver.c:42"), entered and left on that thread. A region
// stays open across calls (a loop from its start to its end) on a per-thread
// stack, and encloses the code run meanwhile (trace/traced_region.h).
//
// Not the signal path: called from the program's threads (wrappers, OMPT
// callbacks) like any library code; may lock and allocate.
#pragma once

#include <cstdint>

namespace hybridprof {
class TracingHost;
struct ThreadState;
}

namespace hybridprof::openmp {

enum class Construct : uint8_t {
  kParallel, kLoop, kSections, kSingle, kBarrier, kImplicitBarrier, kCritical, kAtomic, kOrdered, kLock, kTask,
  kTaskwait, kTaskgroup, kMasked, kDistribute, kTaskloop, kWorkshare, kReduction,
  kIdle,  // not a construct: a worker between parallel regions (worker_idle)
  // GCC's GOMP_barrier, the one call it makes for `#pragma omp barrier`
  // and for the implicit barrier closing a loop, sections or single: named
  // a barrier or an implicit barrier by its line table (raw::RegionDef).
  kBarrierCall,
};
inline constexpr uint32_t kConstructs = static_cast<uint32_t>(Construct::kBarrierCall) + 1;

// Enters construct `c` (or its wait: "!$omp critical (waiting)") met at
// `code` (an address in the program: the outlined body of a parallel
// region, or just before the call the construct made) on this thread.
void open(TracingHost& host, Construct c, bool waiting, uint64_t code);
// The same on `thread`, the calling thread's state (host.current_thread()),
// for a caller that has it at hand; null: nothing is entered.
void open_on(TracingHost& host, ThreadState* thread, Construct c, bool waiting, uint64_t code);
// Leaves the innermost open region of construct `c` (or its wait) if it is
// the innermost one; a call whose start was not seen (before tracing
// began) closes nothing: false then.
bool close(Construct c, bool waiting);
// Leaves the innermost open region of `c` and every one opened after it (a
// runtime that reports the end of a region before those inside it); false
// when none of `c` is open.
bool close_through(Construct c, bool waiting);
// The team of a parallel region met on this thread forks (asking for
// `requested_threads`) and joins: OTF2's ThreadFork and ThreadJoin, on
// the thread that meets the region, around its parallel region there. The
// fork and the join are recorded with this thread's next enter of a
// parallel region (the master's part of the team) and its leave; join()
// ends a fork whose region this thread never entered (nothing recorded).
void fork(uint32_t requested_threads);
void join();
// A team's worker thread has finished its part of a parallel region and
// waits in the runtime for the next one (spinning or asleep): it is in the
// region kIdleRegionName, which encloses the runtime's code, until
// worker_busy() (its next parallel region's start), as Score-P and TAU
// name it. A master thread is never idle: between regions it runs the
// program.
void worker_idle(TracingHost& host, ThreadState* thread);
void worker_busy();
// How many regions are open on this thread; close_above(n) leaves the ones
// opened after there were n.
uint32_t open_depth();
void close_above(uint32_t depth);

}  // namespace hybridprof::openmp
