// ThreadSampler: the per-thread sample source. It makes the kernel send one
// signal to this thread per sample (perf_event overflow or CPU-time timer) and
// tells the signal handler which signals are its own.
//
// Rules (the signal path):
//  1. owns(), sample_weight() and rearm() are async-signal-safe: a few loads,
//     no allocation, no locks, no syscalls.
//  2. start(), stop() and reset_after_fork() run on the sampled thread, outside
//     signal handlers; they may allocate (error strings) and make syscalls.
//  3. Fields are plain and written only by the owning thread. The handler that
//     reads them runs on that same thread, so the only reordering to prevent
//     is the compiler's: std::atomic_signal_fence around the syscalls that
//     start and stop signal delivery.
//  4. owns() stays true for signals this sampler caused even after stop(): a
//     sample signal still pending (e.g. while the thread blocks signals) must
//     not reach the application's handler, since SIG_DFL of a real-time
//     signal terminates the process.
#pragma once

#include <linux/perf_event.h>
#include <signal.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "sampling/sampling_plan.h"

namespace hybridprof::sampling {

// sival_int of our timer signals ("HPRF"). Together with si_code SI_TIMER it
// separates our timers' signals from sigqueue(3)/pthread_sigqueue(3), whose
// si_code is SI_QUEUE whatever value they carry.
inline constexpr int kTimerCookie = 0x48505246;

class ThreadSampler {
 public:
  constexpr ThreadSampler() = default;
  ThreadSampler(const ThreadSampler&) = delete;
  ThreadSampler& operator=(const ThreadSampler&) = delete;
  // No destructor on purpose: trivially destructible, so a ThreadSampler can
  // sit in thread-local storage without registering a TLS destructor. Call
  // stop() at thread exit.

  // Called ON the sampled thread. Starts sampling it with `plan`, delivering
  // `signal` (e.g. SIGRTMIN+4) to this thread only. The handler for `signal`
  // must be installed first. False with *error if the thread is already
  // sampled or a syscall fails (nothing is left open then).
  //  perf:  perf_event_open(this thread, any CPU), disabled; its ring
  //         buffer mapped when the plan samples kernel mode (at user level
  //         only when the mapping is refused: the locked-memory limit);
  //         F_SETOWN_EX to this tid, F_SETSIG, O_ASYNC; then
  //         PERF_EVENT_IOC_ENABLE.
  //  timer: timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID to this tid,
  //         sival_int = kTimerCookie) + timer_settime(interval).
  // `tid`: the calling thread's id, when the caller knows it (0: looked up).
  bool start(const SamplingPlan& plan, int signal, std::string* error, pid_t tid = 0);

  // Disable + close / timer_delete. Idempotent; safe at thread exit.
  void stop();

  // Async-signal-safe (one system call): no more signals from this sampler
  // (PERF_EVENT_IOC_DISABLE, or the timer disarmed); what it holds stays
  // until stop(). For the thread's own handler once recording has stopped.
  void pause();

  // In a fork child, for the child's copy of the forking thread's sampler:
  // closes the inherited perf fd (only the child's reference: the parent's
  // sampling goes on) and forgets the timer (timers are not inherited, and
  // deleting its id could delete a timer the child made since). Then start()
  // may be called again. Pending signals do not survive fork, so nothing the
  // parent's sampler caused can reach the child.
  void reset_after_fork();

  // Async-signal-safe: is this siginfo one of OUR sample signals for this
  // thread? perf: si_code POLL_IN or POLL_HUP and si_fd == our fd; timer:
  // si_code == SI_TIMER and si_value.sival_int == kTimerCookie. Signals we did
  // not cause (kill, tgkill/pthread_kill, sigqueue) belong to the program.
  bool owns(const siginfo_t* info) const {
    if (info == nullptr) return false;
    if (info->si_code == SI_TIMER) return used_timer_ && info->si_value.sival_int == kTimerCookie;
    if (info->si_code == POLL_IN || info->si_code == POLL_HUP) return signalled_fd_ >= 0 && info->si_fd == signalled_fd_;
    return false;
  }

  // Async-signal-safe: how many sampling intervals an owned signal stands for.
  // A POSIX CPU-time timer is checked only on scheduler ticks that interrupt
  // this thread, so with a 1 ms interval on a HZ=250 kernel each signal covers
  // ~4 intervals (many more under CPU contention) and says so in si_overrun;
  // weighting samples by it keeps CPU-time totals right. A perf signal is one
  // overflow, i.e. one interval.
  static uint32_t sample_weight(const siginfo_t* info) {
    if (info->si_code == SI_TIMER && info->si_overrun > 0) return 1u + uint32_t(info->si_overrun);
    return 1;
  }

  // Async-signal-safe (loads and one store to the event's ring buffer): for
  // an owned perf signal, consumes the oldest sample record the overflow
  // wrote and says whether the period ran out in kernel mode. The kernel
  // delivers the signal on the way back to user mode, so the interrupted
  // context is the user stack that entered the kernel (the system call or
  // the faulting instruction). False without a ring (timers, user-level
  // events). One record per signal: the kernel queues one real-time signal
  // per overflow.
  bool sample_was_in_kernel() {
    if (ring_ == nullptr) return false;
    auto* meta = static_cast<perf_event_mmap_page*>(ring_);
    const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    bool in_kernel = false;
    while (tail < head) {
      // Records are 8-byte aligned in a power-of-two ring: a header never wraps.
      const auto* h = reinterpret_cast<const perf_event_header*>(ring_data_ + (tail & ring_mask_));
      tail += h->size >= sizeof *h ? h->size : sizeof *h;
      if (h->type == PERF_RECORD_SAMPLE) {
        in_kernel = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
        break;
      }
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    return in_kernel;
  }

  // Async-signal-safe; call after handling an owned signal. A no-op, kept so
  // the handler does not need to know the mechanism: a perf event stays armed
  // after each overflow unless PERF_EVENT_IOC_REFRESH set an overflow limit
  // (we never do: with wakeup_events = 1 every overflow already signals), and
  // an interval timer re-arms itself.
  void rearm() const {}

  bool running() const { return fd_ >= 0 || timer_armed_; }
  Mechanism mechanism() const { return mechanism_; }

 private:
  bool start_perf(const SamplingPlan& plan, int signal, pid_t tid, std::string* error);
  bool start_timer(const SamplingPlan& plan, int signal, pid_t tid, std::string* error);
  bool map_ring(int fd);
  void unmap_ring();

  // The perf event's ring buffer (metadata page, then ring_mask_ + 1 data
  // bytes), mapped when it samples kernel mode too; unmapped by stop(). Not
  // an owning type: the sampler lives in thread-local storage and must stay
  // trivially destructible.
  void* ring_ = nullptr;
  const unsigned char* ring_data_ = nullptr;
  uint64_t ring_mask_ = 0;
  size_t ring_map_bytes_ = 0;

  int fd_ = -1;             // the open perf event, -1 when none
  int signalled_fd_ = -1;   // si_fd of our perf signals; kept after stop() (rule 4)
  timer_t timer_ = nullptr;
  bool timer_armed_ = false;
  bool used_timer_ = false; // our timer signals may exist (rule 4)
  Mechanism mechanism_ = Mechanism::kPerfEvent;
};

static_assert(std::is_trivially_destructible_v<ThreadSampler>);

}  // namespace hybridprof::sampling
