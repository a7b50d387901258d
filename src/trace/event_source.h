// The contract between the runtime's spine (thread lifecycle, rings, drain,
// raw stream) and each event source: the sampler, MPI, and the coming
// OpenMP, CUDA and NVTX adapters. A source registers itself once (a static
// initializer in its own folder) and the runtime calls every registered
// source at the points of a process's life below; the spine names no
// source. What a source writes goes through the thread's ring
// (Drain::write_or_flush for traced events) or Drain::append (definitions,
// notices).
//
// None of these is the signal path: they run on the thread named, outside
// handlers, and may lock and allocate.
#pragma once

#include <cstddef>

#include "trace/raw_format.h"

namespace hybridprof {

class Drain;
struct ThreadState;

class EventSource {
 public:
  virtual ~EventSource() = default;
  // Short and fixed: "sampling", "mpi".
  virtual const char* name() const = 0;
  // Before the process's raw stream begins: what the source says of the
  // process in its first record (the sampler: what it samples and how).
  virtual void describe(raw::ProcessBegin&) const {}
  // The process's raw stream has begun (at start, and in a fork child,
  // whose stream is new): what the source defines up front goes there.
  virtual void process_started(Drain&) {}
  // On a new thread, once its state (ring) exists; and on the thread as it
  // ends, before its state is handed to the drain to finish.
  virtual void thread_started(ThreadState&) {}
  virtual void thread_ending(ThreadState&) {}
  // In a fork child, before its new stream begins: forget the parent's
  // per-process state (the child's stream has none of its definitions).
  virtual void fork_child() {}
  // The process ends (exit, exec, a terminating signal): the last records
  // before the final drain.
  virtual void process_ending(raw::EndReason) {}
  // A capture window opened or closed (Drain::set_window has recorded it),
  // on the thread that changed it: a source with work of its own outside
  // the producers' recording() check (the samplers' signals) starts or
  // stops it.
  virtual void window_changed(bool /*open*/) {}
};

// At most this many sources; registration beyond it is refused.
inline constexpr size_t kMaxEventSources = 8;

// Registers `source` (not owned; it lives as long as the process). False
// when the table is full. Thread-safe. Sources of the runtime register
// with HYBRIDPROF_EVENT_SOURCE below.
bool register_event_source(EventSource* source);

// At namespace scope in a source's own .cc: registers a `Type` made on
// first use, before the runtime starts whatever the link order (a
// prioritized constructor runs before every plain one and every static
// initializer, among them the runtime's start).
#define HYBRIDPROF_EVENT_SOURCE(Type)                                  \
  __attribute__((constructor(101))) static void register_##Type() {    \
    static Type source;                                                \
    ::hybridprof::register_event_source(&source);                      \
  }

// Every registered source, in registration order.
template <typename F>
void for_each_event_source(F&& f);

namespace detail {
size_t event_source_count();
EventSource* event_source(size_t index);
}  // namespace detail

template <typename F>
void for_each_event_source(F&& f) {
  const size_t n = detail::event_source_count();
  for (size_t i = 0; i < n; ++i)
    if (EventSource* s = detail::event_source(i)) f(*s);
}

}  // namespace hybridprof
