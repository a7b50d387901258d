// The OS-runtime adapter: blocking C library calls (locks, conditions,
// semaphores, reads and writes, polls, sleeps, waits for children; the
// list is os_wait_functions.def) become traced regions of paradigm "os
// runtime" on the calling thread, with their calling context (native and
// Python frames) and arguments, when they lasted at least the threshold
// (--os-wait-min, 20 us by default). A call under it costs the
// interposition and two clock reads, nothing else: whether it is recorded
// is known only at its end, so a recorded call's enter is written then,
// with its start time (kRegionEnterLate). A lock (mutex, read or write
// lock) is tried first and reads no clock when it was free
// (preload/osrt/os_wait_wrappers.cc), unless every call is recorded.
//
// Not recorded, whatever they last: calls the profiler makes itself, calls
// inside another traced call (an MPI call's own polling: the MPI region
// has that time already), calls from a signal handler (the sampler's or
// the program's: the recording may allocate) and calls made before the
// runtime is ready or after its end. Recording never changes a call's
// result or errno.
//
// A condition wait that CPython's interpreter makes itself (take_gil) is
// "waiting for the GIL" (OsWait::gil).
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "common/trace_clock.h"
#include "osrt/os_wait_arguments.h"
#include "osrt/os_wait_functions.h"

namespace hybridprof::osrt {

// The threshold in trace clock units (common/trace_clock.h); 0 until the
// adapter is ready (the first call after the runtime's start makes it so),
// kOff when it is switched off (--trace without os, --no-os-waits).
inline constexpr uint64_t kOff = UINT64_MAX;
extern std::atomic<uint64_t> g_min_ticks;

// Gets the adapter ready: its threshold, or kOff, or 0 when it cannot be
// yet (no runtime, or called from the runtime while it decides): the call
// then goes untimed.
uint64_t get_ready();

// Records a call of `f` that began at `begin` and ended at `end` (trace
// clock readings) from the program's code at `caller`, if it may be
// recorded (see above). `result_errno` is errno after the call.
void record(OsWait f, uint64_t begin, uint64_t end, const void* caller, Arguments arguments, int result_errno);

// Calls `real` with `args` and records it when it lasted long enough.
// `arguments(result)` makes what is recorded of it. Inlined into each
// interposer: the fast path is a load, two clock reads and a compare.
template <OsWait F, typename Real, typename Describe, typename... Args>
__attribute__((always_inline)) inline auto intercept(const void* caller, Real real, Describe arguments,
                                                     Args... args) {
  uint64_t min = g_min_ticks.load(std::memory_order_relaxed);
  if (__builtin_expect(min == 0, 0)) min = get_ready();
  if (min == kOff || min == 0) return real(args...);
  const uint64_t begin = trace_clock_now();
  const auto result = real(args...);
  const uint64_t end = trace_clock_now();
  if (__builtin_expect(end - begin >= min, 0)) {
    const int saved = errno;
    record(F, begin, end, caller, arguments(result), saved);
    errno = saved;
  }
  return result;
}

}  // namespace hybridprof::osrt
