#include "trace/traced_region.h"

#include <memory>
#include <mutex>

#include "common/trace_clock.h"
#include "trace/drain.h"
#include "trace/records.h"
#include "trace/thread_state.h"
#include "trace/tracing_host.h"

namespace hybridprof {

std::atomic<bool> g_trace_clock_decided{false};

const std::string& prepare_trace_clock(TracingHost& host) {
  static std::string note;
  static std::once_flag decided;
  std::call_once(decided, [&] {
    // Decided at the first traced record, not at every process start: it
    // reads /proc/cpuinfo and times system calls. The drain converts from
    // the TSC before any record reads it. The profiler's own work: the os
    // adapter passes those calls through (its first call would otherwise
    // ask for this very decision, from inside it, and wait for itself).
    const ProfilerWork own_work;
    const bool tsc = tsc_can_time_calls(host.config().trace_clock, &note);
    host.drain().use_tsc_trace_clock(tsc);
    g_trace_clock_tsc = tsc;
    g_trace_clock_decided.store(true, std::memory_order_release);
  });
  return note;
}

bool write_traced_event(Drain& drain, ThreadState& t, uint32_t kind, uint64_t timestamp, const EventPayload& payload) {
  BusyScope busy(&t);
  const bool written = drain.write_or_flush(t, [&]() __attribute__((always_inline)) {
    return t.traced.calls.event(t.ring, timestamp, kind, payload);
  });
  if (!written) t.traced.dropped_events.fetch_add(1, std::memory_order_relaxed);
  return written;
}

bool write_traced_event_run(Drain& drain, ThreadState& t, uint32_t kind, uint64_t timestamp,
                            const EventPayload& first, EventRepeat how, uint64_t count) {
  if (!write_traced_event(drain, t, kind, timestamp, first)) {
    t.traced.dropped_events.fetch_add(count, std::memory_order_relaxed);
    return false;
  }
  if (count == 0) return true;
  BusyScope busy(&t);
  const bool written = drain.write_or_flush(t, [&]() __attribute__((always_inline)) {
    return t.traced.calls.event_run(t.ring, timestamp, kind, how, count);
  });
  if (!written) t.traced.dropped_events.fetch_add(count, std::memory_order_relaxed);
  return written;
}

void write_traced_event(TracingHost& host, uint32_t kind, const EventPayload& payload) {
  if (ThreadState* t = host.current_thread()) write_traced_event(host.drain(), *t, kind, trace_clock_now(), payload);
}

}  // namespace hybridprof
