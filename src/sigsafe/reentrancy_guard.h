// The runtime's one reentrancy guard: which of its sections are running
// on this thread, each a depth, in one per-thread block. Signal-safe to
// read and to change: it is initial-exec TLS, only the thread changes its
// own, and a handler that interrupts a change leaves the depths as it
// found them (so plain loads and stores suffice, with compiler fences).
//
// The sections:
//   kRuntime         profiler code the signal path must not race (the
//                    ring, the unwind scratch, a loader call the unwinder
//                    depends on). A sample landing inside is deferred to
//                    the outermost section's end (trace/thread_state.h,
//                    BusyScope), and signal masks set inside are the
//                    profiler's own (preload/interpose_signal.cc).
//   kSampleHandler   the sample handler is recording a sample.
//   kDeferredSamples the thread is recording the samples it deferred (the
//                    runtime section that opens must not start another).
//   kTracedCall      inside an intercepted call (an MPI call that MPI
//                    itself makes is not traced again).
//   kProgramHandler  the program's own signal handler is running (the
//                    OS-runtime adapter records nothing there).
#pragma once

#include <atomic>
#include <cstdint>

namespace hybridprof::sigsafe {

enum class Section : uint32_t { kRuntime, kSampleHandler, kDeferredSamples, kTracedCall, kProgramHandler, kCount };

struct ThreadSections {
  uint32_t depth[static_cast<uint32_t>(Section::kCount)];
};
extern __thread ThreadSections tls_sections __attribute__((tls_model("initial-exec")));

// SIGNAL-SAFE.
inline bool inside(Section s) { return tls_sections.depth[static_cast<uint32_t>(s)] != 0; }

// SIGNAL-SAFE. Enters `s` on this thread; true when it was not entered
// already (the outermost section). Each enter_section has its leave_section.
inline bool enter_section(Section s) {
  const uint32_t i = static_cast<uint32_t>(s);
  const bool outermost = tls_sections.depth[i] == 0;
  tls_sections.depth[i] = tls_sections.depth[i] + 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return outermost;
}
inline void leave_section(Section s) {
  const uint32_t i = static_cast<uint32_t>(s);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tls_sections.depth[i] = tls_sections.depth[i] - 1;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

// SIGNAL-SAFE. Section `s` for the scope's lifetime.
class SectionScope {
 public:
  explicit SectionScope(Section s) : section_(s), outermost_(enter_section(s)) {}
  ~SectionScope() { leave_section(section_); }
  SectionScope(const SectionScope&) = delete;
  SectionScope& operator=(const SectionScope&) = delete;
  bool outermost() const { return outermost_; }

 private:
  const Section section_;
  const bool outermost_;
};

}  // namespace hybridprof::sigsafe
