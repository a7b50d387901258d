#include "trace/traced_region.h"

#include <memory>
#include <mutex>

#include "common/trace_clock.h"
#include "trace/drain.h"
#include "trace/records.h"
#include "trace/thread_state.h"
#include "trace/tracing_host.h"

namespace hybridprof {

const std::string& prepare_trace_clock(TracingHost& host) {
  static std::string note;
  static std::once_flag decided;
  std::call_once(decided, [&] {
    // Decided at the first traced record, not at every process start: it
    // reads /proc/cpuinfo and times system calls. The drain converts from
    // the TSC before any record reads it.
    const bool tsc = tsc_can_time_calls(host.config().trace_clock, &note);
    host.drain().use_tsc_trace_clock(tsc);
    g_trace_clock_tsc = tsc;
  });
  return note;
}

TracingHost* traced_host() {
  TracingHost* host = tracing_host();
  if (host == nullptr || !host->tracing()) return nullptr;
  prepare_trace_clock(*host);
  return host;
}

EnteredRegion enter_region(TracingHost& host, uint32_t region, uint32_t flags, const EventPayload& event) {
  EnteredRegion r;
  ThreadState* t = host.current_thread();
  if (t == nullptr) return r;
  r.thread = t;
  r.region = region;
  Drain& drain = host.drain();
  BusyScope busy(t);
  const CallerStack stack = capture_caller_stack(host, *t);
  r.stack = stack.ref;
  const uint64_t now = trace_clock_now();
  const RegionBody body{region, stack.flags | flags | kRegionEnclosesCode, event};
  r.entered = drain.write_or_flush(*t, [&] {
    return t->traced.calls.enter(t->ring, now, body, r.stack, t->unwind_scratch, stack.depth,
                                 t->sampled.python_scratch, stack.python_depth);
  });
  if (!r.entered) t->traced.dropped_events.fetch_add(1, std::memory_order_relaxed);
  return r;
}

void leave_region(TracingHost& host, const EnteredRegion& r) {
  if (r.thread == nullptr || !r.entered) return;
  ThreadState& t = *r.thread;
  Drain& drain = host.drain();
  const uint64_t now = trace_clock_now();
  if (t.traced_call_wants_early_drain(now)) drain.wake();
  BusyScope busy(&t);
  const RegionBody body{r.region, 0, {}};
  // A lost leave leaves the region open to the thread's end, where the
  // drain closes it; count it.
  if (!drain.write_or_flush(t, [&] { return t.traced.calls.leave(t.ring, now, body, r.stack); }))
    t.traced.dropped_events.fetch_add(1, std::memory_order_relaxed);
}

bool write_traced_event(Drain& drain, ThreadState& t, uint32_t kind, uint64_t timestamp, const EventPayload& payload) {
  BusyScope busy(&t);
  const bool written = drain.write_or_flush(t, [&]() __attribute__((always_inline)) {
    auto* r = reinterpret_cast<EventRecord*>(t.ring.reserve_exclusive(
        sizeof(EventRecord), static_cast<uint16_t>(RecordType::kEvent), static_cast<uint16_t>(kind)));
    if (r == nullptr) return false;
    r->timestamp = timestamp;
    r->payload = payload;
    t.ring.commit_exclusive();
    return true;
  });
  if (!written) t.traced.dropped_events.fetch_add(1, std::memory_order_relaxed);
  return written;
}

void write_traced_event(TracingHost& host, uint32_t kind, const EventPayload& payload) {
  if (ThreadState* t = host.current_thread()) write_traced_event(host.drain(), *t, kind, trace_clock_now(), payload);
}

}  // namespace hybridprof
