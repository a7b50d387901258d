// ThreadState: one thread of the process as the spine knows it: its ring,
// its identity and end, and the parts its three owners keep, each in its
// own struct: the sampler's signal path (SampledThread), the traced-event
// producers on the thread (TracedCallProducer) and the drain
// (DrainedThread). Made when the thread starts (outside any handler), in
// the mapping that holds its ring (create(): no malloc on the new thread,
// which would give it a malloc arena of its own), and destroyed by the
// drain once the thread has finished and its ring is empty.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <new>

#include "sigsafe/reentrancy_guard.h"
#include "sigsafe/thread_ring.h"
#include "trace/drained_thread.h"
#include "trace/raw_format.h"
#include "trace/sampled_thread.h"
#include "trace/traced_call_producer.h"

namespace hybridprof {

// Room for an unwinder's output: --max-depth plus the handler's own frames.
// Kept per thread (the reentrancy guard makes it exclusive) instead of on
// the interrupted thread's stack, which may be small.
inline constexpr size_t kUnwindScratchEntries = 512 + 16;

struct ThreadState {
  // `storage` (of storage_bytes(ring_bytes)) holds the ring (`ring_bytes`,
  // a power of two), the unwind scratch buffer, the sampler's Python frames
  // and the state itself. destroy() leaves the storage to its owner.
  static ThreadState* create(void* storage, size_t ring_bytes) {
    return new (static_cast<unsigned char*>(storage) + state_offset(ring_bytes)) ThreadState(storage, ring_bytes);
  }
  static void destroy(ThreadState* t) { t->~ThreadState(); }
  static size_t storage_bytes(size_t ring_bytes) { return state_offset(ring_bytes) + sizeof(ThreadState); }

  // Written by the thread (its handler and its producers), read by the drain.
  ThreadRing ring;
  // The native stack being unwound, by the sample handler or by a traced
  // call capturing its caller: one at a time (the reentrancy guard).
  uint64_t* const unwind_scratch;

  SampledThread sampled;        // the sampler's signal path
  TracedCallProducer traced;    // traced-event producers on this thread
  DrainedThread drained;        // the drain

  void* const ring_storage;  // mapped by the drain, unmapped when it frees the state
  const size_t ring_bytes;
  uint32_t index = 0;  // dense per process, the thread's id in the raw stream
  pid_t tid = 0;
  uint64_t begin_ns = 0;
  // Set by the thread when it stops producing; the drain then ends it.
  std::atomic<bool> finished{false};
  uint64_t end_ns = 0;
  char name[16] = {};
  uint64_t drain_woken_ns = 0;  // when the thread last asked the drain for an early pass
  uint64_t drain_woken_trace = 0;  // ... from a traced call, in the trace clock

  // Signal-safe. Should this thread, at `now_ns`, ask the drain for a pass
  // before its interval ends? Yes when `urgent` or its ring is a quarter
  // full (the drain then has the other three quarters' time to get a core),
  // at most once a millisecond (each ask is a system call).
  bool wants_early_drain(uint64_t now_ns, bool urgent = false) {
    if (!urgent && !ring_filling()) return false;
    if (now_ns - drain_woken_ns <= kEarlyDrainIntervalNs) return false;
    drain_woken_ns = now_ns;
    return true;
  }
  static constexpr uint64_t kEarlyDrainIntervalNs = 1000000;
  // The same for a traced call at `trace_now`, the trace clock reading it
  // took (common/trace_clock.h): no clock read of its own on the call's
  // path. At most once a million of the clock's ticks (1 ms of
  // CLOCK_MONOTONIC, 0.3 ms of a 3 GHz TSC).
  bool traced_call_wants_early_drain(uint64_t trace_now) {
    if (!ring_filling() || trace_now - drain_woken_trace <= kEarlyDrainIntervalNs) return false;
    drain_woken_trace = trace_now;
    return true;
  }
  // Over a quarter of the ring waits for the drain.
  bool ring_filling() const { return ring.pending_bytes() * 4 > ring.capacity(); }

  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;

 private:
  ThreadState(void* storage, size_t ring_bytes)
      : ring(storage, ring_bytes),
        unwind_scratch(reinterpret_cast<uint64_t*>(static_cast<unsigned char*>(storage) + ring_bytes)),
        sampled(reinterpret_cast<python::PythonFrame*>(unwind_scratch + kUnwindScratchEntries)),
        ring_storage(storage),
        ring_bytes(ring_bytes) {}
  ~ThreadState() = default;
  static size_t state_offset(size_t ring_bytes) {
    const size_t end = ring_bytes + kUnwindScratchEntries * sizeof(uint64_t) +
                       kPythonScratchFrames * sizeof(python::PythonFrame);
    return (end + alignof(ThreadState) - 1) / alignof(ThreadState) * alignof(ThreadState);
  }

 public:
  // Every owner's counters, as the thread's end record carries them.
  raw::ThreadCounters counters() const {
    constexpr auto relaxed = std::memory_order_relaxed;
    raw::ThreadCounters c;
    c.samples = sampled.samples.load(relaxed);
    c.dropped = sampled.dropped.load(relaxed);
    c.unwind_failed = sampled.unwind_failed.load(relaxed);
    c.truncated = sampled.truncated.load(relaxed);
    c.dropped_events = traced.dropped_events.load(relaxed);
    c.unwind_recovered = sampled.unwind_recovered.load(relaxed);
    c.ring_flushes = drained.ring_flushes;
    c.ring_flush_ns = drained.ring_flush_ns;
    c.sample_signals = sampled.signals.load(relaxed);
    c.sample_handler_ns = sampled.handler_ns.load(relaxed);
    c.sample_handler_slow = sampled.slow_handlers.load(relaxed);
    return c;
  }
};

// Marks profiler work on thread `t` (the calling thread) for its lifetime:
// the reentrancy guard's kRuntime section. A sample arriving meanwhile is
// deferred, and the outermost scope records it as it ends. Null: no guard.
class BusyScope {
 public:
  explicit BusyScope(ThreadState* t) : t_(t), outermost_(t && sigsafe::enter_section(sigsafe::Section::kRuntime)) {}
  ~BusyScope() {
    if (!t_) return;
    sigsafe::leave_section(sigsafe::Section::kRuntime);
    if (outermost_ && t_->sampled.deferred_weight.load(std::memory_order_relaxed) != 0 &&
        t_->sampled.record_deferred)
      t_->sampled.record_deferred(*t_);
  }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
  ThreadState* thread() const { return t_; }

 private:
  ThreadState* const t_;
  const bool outermost_;
};

}  // namespace hybridprof
