// Traced regions an adapter enters and leaves on the calling thread and
// that carry no events of their own (OpenMP constructs): the enter carries
// the caller's stack, so the region hangs under the code that reached it,
// and the region encloses code (kRegionEnclosesCode): samples the thread
// takes inside it, in the frame that entered it or deeper, have the region
// in their calling context;
// every record goes through Drain::write_or_flush (a full ring is written
// out, never lost), and a record that cannot be written at all (larger
// than the ring) is counted as a lost event. Enter and leave may be in
// different calls (a critical section's start and end).
//
// Not the signal path: producers run on the program's threads, outside
// handlers, and may lock and allocate; they hold the thread's busy guard
// only while they touch its ring or its unwind scratch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "trace/drain.h"
#include "trace/event_payload.h"
#include "trace/records.h"
#include "trace/thread_state.h"
#include "trace/tracing_host.h"
#include "unwind/caller_stack_cache.h"

namespace hybridprof {

class Drain;

// Before an adapter's first traced record: how traced records are timed
// (common/trace_clock.h), decided once per address space for every
// adapter. Returns what was decided, for a notice.
const std::string& prepare_trace_clock(TracingHost& host);

// Whether prepare_trace_clock has decided (set once, before any record).
extern std::atomic<bool> g_trace_clock_decided;

// The tracing host when traced records are made now (the trace clock is
// then decided), else null. Inline, and its check after the first call a
// load: every traced call asks, and each call level a traced call goes
// down costs a deep caller (see enter_region).
inline TracingHost* traced_host() {
  TracingHost* host = tracing_host();
  if (host == nullptr || !host->tracing()) return nullptr;
  if (!g_trace_clock_decided.load(std::memory_order_acquire)) prepare_trace_clock(*host);
  return host;
}

// The calling thread's caller stack for a traced enter, under its busy
// guard: the remembered stack it is (`ref`), the unwinder's flags, how
// many of its return addresses (in t.unwind_scratch, until the guard is
// released) the enter record must carry (0 when the drain has seen the
// stack already) and, on a thread running Python, how many Python frames
// (in t.sampled.python_scratch, as long; 0 when the drain has seen the
// pair): the pair is remembered by PythonStackMemo, since one native
// stack runs many Python ones. Inlined, so the stack begins at the
// producer's caller.
struct CallerStack {
  CallerStackCache::Ref ref;
  uint32_t flags = 0;
  uint32_t depth = 0;
  uint32_t python_depth = 0;
};
__attribute__((always_inline)) inline CallerStack capture_caller_stack(TracingHost& host, ThreadState& t) {
  CallerStack s;
  const uint32_t max_depth = host.config().max_depth;
  // Only a thread made with a Python read window can read Python frames:
  // others (every thread of a program that is not Python) skip the call.
  s.python_depth = t.sampled.python_window ? host.read_python_frames(t, &s.flags) : 0;
  if (!t.traced.caller_stacks) t.traced.caller_stacks = std::make_unique<CallerStackCache>(max_depth);
  if (s.python_depth != 0) {
    if (!t.traced.python_caller_stacks) {
      t.traced.python_caller_stacks = std::make_unique<CallerStackCache>(max_depth);
      t.traced.python_stacks = std::make_unique<PythonStackMemo>();
    }
    CallerStackCache::Ref native;
    s.depth = t.traced.python_caller_stacks->capture(t.unwind_scratch, &s.flags, &native);
    s.ref = t.traced.python_stacks->find_or_add(native.generation, t.unwind_scratch, s.depth, t.sampled.python_scratch,
                                                s.python_depth, *t.traced.caller_stacks);
    if (!s.ref.stored) s.depth = 0, s.python_depth = 0;
    return s;
  }
  s.depth = t.traced.caller_stacks->capture(t.unwind_scratch, &s.flags, &s.ref, /*copy_remembered=*/false);
  if (s.ref.generation != 0 && !s.ref.stored) s.depth = 0;
  return s;
}

// The profiler's own work on the calling thread, for the scope's life (an
// adapter's bookkeeping around a traced call, never the real call): a
// sample that lands in it is recorded at its end as the profiler's time
// ([hybridprof], kSampleInProfiler), not charged to the program's frames.
class ProfilerWork {
 public:
  ProfilerWork() : busy_(current_thread_of(tracing_host())) {}
  // The same where the calling thread's state is at hand (null: none):
  // no lookup through the host.
  explicit ProfilerWork(ThreadState* calling_thread) : busy_(calling_thread) {}
  // The calling thread's state as the host gave it (null: none, or not
  // recording now): an adapter's enter_region_on spares a second lookup.
  ThreadState* thread() const { return busy_.thread(); }

 private:
  static ThreadState* current_thread_of(TracingHost* host) { return host ? host->current_thread() : nullptr; }
  BusyScope busy_;
};

struct EnteredRegion {
  ThreadState* thread = nullptr;  // null: nothing was entered (untraced thread)
  uint32_t region = 0;
  CallerStackCache::Ref stack;
  bool entered = false;  // the enter record is in the ring
};

// Enters `region` on the calling thread now (after prepare_trace_clock).
// `flags` adds RegionFlags to the enter: an event it carries (with
// `event`), a device launch (kRegionLaunchesDeviceWork).
//
// Inlined into the adapter's function, a call level less under every
// traced call: what a traced call costs a program includes the return
// mispredictions its call levels cause. The return stack buffer (32
// entries on the reference AMD EPYC, where it behaves as a wrapping ring)
// holds a deep recursion's returns; each level a traced call goes below
// the caller overwrites one, which the recursion then mispredicts once per
// 32 frames as it returns: ~35 ns a level under 190 frames
// (benchmarks/return_stack_bench.cc).
inline EnteredRegion enter_region(TracingHost& host, uint32_t region, uint32_t flags = 0, const EventPayload& event = {});
// The same for `thread`, the calling thread's state as host.current_thread()
// gave it (null: nothing entered): an adapter that has it at hand spares
// the lookup, a virtual call and the host's checks.
inline EnteredRegion enter_region_on(TracingHost& host, ThreadState* thread, uint32_t region, uint32_t flags = 0,
                                     const EventPayload& event = {});
// Leaves what enter_region entered, on the same thread, now. `flags`: an
// empty event the leave carries (kRegionCarriesEmptyEvent, its kind, and
// where: kRegionEventsOutside).
inline void leave_region(TracingHost& host, const EnteredRegion& r, uint32_t flags = 0);
// The same at given times (trace clock readings), for a region recorded
// after it ended (kRegionEnterLate): `begin` is its enter's time.
inline EnteredRegion enter_region_at(TracingHost& host, uint32_t region, uint64_t begin, uint32_t flags,
                                     const EventPayload& event);
inline void leave_region_at(TracingHost& host, const EnteredRegion& r, uint64_t end);

// A traced event of `kind` (trace/event_sets.h) at `timestamp` (a trace
// clock reading) on thread `t`, the calling thread; counted as lost when
// it cannot be written. False then.
bool write_traced_event(Drain& drain, ThreadState& t, uint32_t kind, uint64_t timestamp, const EventPayload& payload);
// The same, now, on the calling thread (after prepare_trace_clock);
// nothing on an untraced thread.
void write_traced_event(TracingHost& host, uint32_t kind, const EventPayload& payload);
// `first` and then `count` more of it at `timestamp`, each repeated `how`
// (the same, or its serial number advanced: a Waitall's completions of
// requests made in turn), as two records. False when one was lost (counted).
bool write_traced_event_run(Drain& drain, ThreadState& t, uint32_t kind, uint64_t timestamp,
                            const EventPayload& first, EventRepeat how, uint64_t count);

namespace detail {
// enter_region's body; `now` gives the enter's time once the stack is read.
template <typename Now>
__attribute__((always_inline)) inline EnteredRegion enter_region_timed(TracingHost& host, ThreadState* t,
                                                                      uint32_t region, uint32_t flags,
                                                                      const EventPayload& event, Now now_fn) {
  EnteredRegion r;
  if (t == nullptr) return r;
  r.thread = t;
  r.region = region;
  Drain& drain = host.drain();
  BusyScope busy(t);
  const CallerStack stack = capture_caller_stack(host, *t);
  r.stack = stack.ref;
  const uint64_t now = now_fn();
  const RegionView body{region, stack.flags | flags, &event};
  r.entered = drain.write_or_flush(*t, [&]() __attribute__((always_inline)) {
    return t->traced.calls.enter(t->ring, now, body, r.stack, t->unwind_scratch, stack.depth,
                                 t->sampled.python_scratch, stack.python_depth);
  });
  if (!r.entered) t->traced.dropped_events.fetch_add(1, std::memory_order_relaxed);
  return r;
}

// leave_region's body; `now_fn` gives the leave's time, read only for a
// region that was recorded (one outside a capture window or on an untraced
// thread reads no clock: before the trace clock is decided that is
// clock_gettime, ~25 ns on a VM, which doubled an NVTX range's cost under
// --paused).
template <typename Now>
__attribute__((always_inline)) inline void leave_region_timed(TracingHost& host, const EnteredRegion& r,
                                                             uint32_t flags, Now now_fn) {
  if (r.thread == nullptr || !r.entered) return;
  const uint64_t now = now_fn();
  ThreadState& t = *r.thread;
  Drain& drain = host.drain();
  if (t.traced_call_wants_early_drain(now)) drain.wake();
  BusyScope busy(&t);
  const RegionView body{r.region, flags, nullptr};
  // A lost leave leaves the region open to the thread's end, where the
  // drain closes it; count it.
  if (!drain.write_or_flush(t, [&]() __attribute__((always_inline)) {
        return t.traced.calls.leave(t.ring, now, body, r.stack);
      }))
    t.traced.dropped_events.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

__attribute__((always_inline)) inline EnteredRegion enter_region(TracingHost& host, uint32_t region, uint32_t flags,
                                                                const EventPayload& event) {
  return enter_region_on(host, host.current_thread(), region, flags, event);
}

__attribute__((always_inline)) inline EnteredRegion enter_region_on(TracingHost& host, ThreadState* thread,
                                                                   uint32_t region, uint32_t flags,
                                                                   const EventPayload& event) {
  return detail::enter_region_timed(host, thread, region, flags | kRegionEnclosesCode, event,
                                    []() __attribute__((always_inline)) { return trace_clock_now(); });
}

__attribute__((always_inline)) inline void leave_region(TracingHost& host, const EnteredRegion& r, uint32_t flags) {
  detail::leave_region_timed(host, r, flags, []() __attribute__((always_inline)) { return trace_clock_now(); });
}

__attribute__((always_inline)) inline EnteredRegion enter_region_at(TracingHost& host, uint32_t region,
                                                                   uint64_t begin, uint32_t flags,
                                                                   const EventPayload& event) {
  return detail::enter_region_timed(host, host.current_thread(), region, flags | kRegionEnterLate, event,
                                    [begin]() __attribute__((always_inline)) { return begin; });
}

__attribute__((always_inline)) inline void leave_region_at(TracingHost& host, const EnteredRegion& r, uint64_t end) {
  detail::leave_region_timed(host, r, 0, [end]() __attribute__((always_inline)) { return end; });
}

}  // namespace hybridprof
