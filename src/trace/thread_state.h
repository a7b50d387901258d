// ThreadState: what the signal path of one sampled thread writes to, and the
// drain reads. Allocated when the thread starts (outside any handler), freed
// by the drain once the thread has finished and its ring is empty.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "sigsafe/reentrancy_guard.h"
#include "sigsafe/thread_ring.h"
#include "trace/raw_format.h"
#include "trace/records.h"
#include "trace/recent_calls.h"
#include "trace/traced_call_writer.h"
#include "unwind/caller_stack_cache.h"
#include "unwind/python/python_stack.h"

namespace hybridprof {

// Room for the unwinder's output in the signal handler: --max-depth plus the
// handler's own frames. Kept per thread (the busy guard makes it exclusive)
// instead of on the interrupted thread's stack, which may be small.
inline constexpr size_t kUnwindScratchEntries = 512 + 16;
// Python frames read by the handler before they are copied into the ring.
inline constexpr size_t kPythonScratchFrames = 256;
static_assert(kPythonScratchFrames <= python::PythonReadWindow::kMaxStampedFrames, "every frame read gets its stamp");

struct ThreadState {
  // `storage` holds the ring (`ring_bytes`, a power of two) followed by the
  // unwind scratch buffer; see storage_bytes().
  ThreadState(void* storage, size_t ring_bytes)
      : ring(storage, ring_bytes),
        unwind_scratch(reinterpret_cast<uint64_t*>(static_cast<unsigned char*>(storage) + ring_bytes)),
        python_scratch(reinterpret_cast<python::PythonFrame*>(unwind_scratch + kUnwindScratchEntries)),
        ring_storage(storage),
        ring_bytes(ring_bytes) {}
  static size_t storage_bytes(size_t ring_bytes) {
    return ring_bytes + kUnwindScratchEntries * sizeof(uint64_t) + kPythonScratchFrames * sizeof(python::PythonFrame);
  }

  ThreadRing ring;
  uint64_t* const unwind_scratch;
  python::PythonFrame* const python_scratch;  // kPythonScratchFrames
  uint64_t python_thread_state = 0;           // the handler's cache of this thread's PyThreadState
  std::unique_ptr<python::PythonReadWindow> python_window;  // Python programs: made at the thread's start
  std::unique_ptr<python::SeenCodes> python_seen_codes;     // ... with this
  void* const ring_storage;  // mapped by the drain, unmapped when it frees the state
  const size_t ring_bytes;
  uint32_t index = 0;  // dense per process, the thread's id in the raw stream
  pid_t tid = 0;
  uint64_t begin_ns = 0;

  // Written by the signal path (same thread), read by the drain.
  std::atomic<uint64_t> samples{0}, dropped{0}, unwind_failed{0}, truncated{0}, unwind_recovered{0};
  // Written by traced-event producers (MPI wrappers) on this thread: events
  // lost because the ring was full.
  std::atomic<uint64_t> dropped_events{0};
  // Samples landing while profiler code runs on this thread (the
  // reentrancy guard's kRuntime section, see BusyScope) are deferred: their
  // weight (and kSampleInKernel) wait here, and the end of the outermost
  // section records them with the stack it has then (record_deferred, set
  // by the runtime).
  std::atomic<uint32_t> deferred_weight{0}, deferred_flags{0};
  void (*record_deferred)(ThreadState&) = nullptr;

  // Set by the thread when it stops producing; the drain then ends it.
  std::atomic<bool> finished{false};
  uint64_t end_ns = 0;
  char name[16] = {};

  // Traced-call wrappers only (this thread, outside handlers): the stacks
  // of its recent traced calls. Made at the first one.
  std::unique_ptr<CallerStackCache> caller_stacks;
  TracedCallWriter traced_calls;  // ... and how they write enters and leaves
  uint64_t drain_woken_ns = 0;  // when they (or the sample handler) last asked the drain for an early pass

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
  // Over a quarter of the ring waits for the drain.
  bool ring_filling() const { return ring.pending_bytes() * 4 > ring.capacity(); }

  // Drain only: RingFlushRecords seen, and the time they span.
  uint64_t ring_flushes = 0, ring_flush_ns = 0;
  // Drain only: CCT nodes of the traced regions this thread is inside, so a
  // leave names the context its enter had.
  std::vector<uint32_t> open_regions;
  // Drain only: a traced call whose enter was read and not yet written. If
  // its leave is the next record but for its events, the drain writes the
  // whole call as one raw::Call; anything else writes the enter first.
  struct UnwrittenCall {
    raw::CallShape shape;
    uint64_t enter_ns = 0;
    std::array<uint64_t, raw::Call::kMaxEvents> event_ns{};
    uint32_t site = kNoSite;     // its caller stack's entry in call_sites
    // Its enter repeated the site's, and nothing has come since: its shape
    // is the site's enter_shape (events at enter_ns), not copied yet.
    bool shape_at_site = false;
  };
  UnwrittenCall unwritten_call;
  bool call_unwritten = false;
  // Drain only: per remembered caller stack (CallerStackCache entry), the
  // last enter and leave records written in full from it, kept by the
  // producer's rule (TracedCallWriter) so that a RepeatRecord stands for
  // them; the call's shape so far after that enter; and where the stream
  // writer keeps the shape of a whole call from there, so a loop's next
  // call is written as a repeat without being converted again.
  struct CallSite {
    uint32_t generation = 0;  // the stack's; 0: none
    bool leave_known = false;
    RegionBody enter, leave;
    raw::CallShape enter_shape;
    raw::RecentCalls::Handle written;  // of enter and leave together
  };
  static constexpr uint32_t kNoSite = CallerStackCache::kEntries;
  std::array<CallSite, CallerStackCache::kEntries> call_sites;
  // Drain only: the context node of each stack the thread's CallerStackCache
  // remembers (RegionRecord's stack_slot / stack_generation).
  struct RememberedStack {
    uint32_t generation = 0, node = 0;
  };
  std::array<RememberedStack, CallerStackCache::kEntries> remembered_stacks;

  raw::ThreadCounters counters() const {
    return {samples.load(std::memory_order_relaxed), dropped.load(std::memory_order_relaxed),
            unwind_failed.load(std::memory_order_relaxed), truncated.load(std::memory_order_relaxed),
            dropped_events.load(std::memory_order_relaxed), unwind_recovered.load(std::memory_order_relaxed),
            ring_flushes, ring_flush_ns};
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
    if (outermost_ && t_->deferred_weight.load(std::memory_order_relaxed) != 0 && t_->record_deferred)
      t_->record_deferred(*t_);
  }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  ThreadState* const t_;
  const bool outermost_;
};

}  // namespace hybridprof
