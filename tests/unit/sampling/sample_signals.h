// Test support: one SA_SIGINFO handler for the sample signal that sorts every
// signal it gets by what ThreadSampler::owns() says about it, and a CPU spinner.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>

#include "sampling/thread_sampler.h"

namespace hybridprof::sampling::test_support {

int sample_signal();  // SIGRTMIN+4, the runtime's default

struct SignalCounts {
  std::atomic<uint64_t> owned{0};          // owns() true
  std::atomic<uint64_t> owned_weight{0};   // sum of sample_weight() over owned signals
  std::atomic<uint64_t> owned_timer{0};    // of those, a timer's (si_code SI_TIMER)
  std::atomic<uint64_t> foreign_tkill{0};  // owns() false, si_code SI_TKILL
  std::atomic<uint64_t> foreign_queue{0};  // owns() false, si_code SI_QUEUE
  std::atomic<uint64_t> foreign_other{0};  // owns() false, anything else
  // The thread's CPU time between consecutive owned signals, in ns (the
  // first kMaxIntervals), from the thread the sampler is on.
  static constexpr int kMaxIntervals = 4096;
  uint64_t intervals_ns[kMaxIntervals] = {};
  std::atomic<int> intervals{0};
  uint64_t last_signal_cpu_ns = 0;
  void reset();
};
SignalCounts& counts();

// The sampler the handler consults on this thread (nullptr: every signal is foreign).
void set_thread_sampler(ThreadSampler* sampler);

// Installs the counting handler for sample_signal() (idempotent; never removed,
// so a late sample signal can never hit SIG_DFL and kill the test).
void install_counting_handler();

// Burns `cpu_seconds` of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so
// the expected sample counts hold on a loaded machine; gives up after 30 s of
// wall time. Returns the CPU seconds actually spent.
double spin_cpu(double cpu_seconds);

// Burns CPU until done() or `max_cpu_seconds` of this thread's CPU time.
// For the POSIX-timer tests: a CPU-time timer's expiry is only noticed when a
// scheduler tick interrupts this very thread, so on a contended machine its
// signals come late and in bursts (with large si_overrun). A fixed CPU budget
// would make those tests flaky; "enough within a generous budget" does not.
// Returns the CPU seconds spent.
template <typename Done>
double spin_cpu_until(Done done, double max_cpu_seconds) {
  double spent = 0;
  while (!done() && spent < max_cpu_seconds) spent += spin_cpu(0.005);
  return spent;
}

}  // namespace hybridprof::sampling::test_support
