// ThreadSampler: the per-thread sample source. It makes the kernel send one
// signal to this thread per sample (perf_event overflow or CPU-time timer) and
// tells the signal handler which signals are its own.
//
// Rules (the signal path):
//  1. owns(), sample_weight() and sample_was_in_kernel() are async-signal-
//     safe: a few loads, no allocation, no locks, no syscalls.
//     after_owned_signal() and pause() are async-signal-safe with system
//     calls (the first may open the perf event).
//  2. start(), start_at_first_period(), stop() and reset_after_fork() run
//     on the sampled thread, outside signal handlers; they may allocate
//     (error strings) and make syscalls.
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

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "sampling/period_jitter.h"
#include "sampling/sampling_plan.h"

namespace hybridprof::sampling {

// sival_int of our timer signals ("HPRF"). Together with si_code SI_TIMER it
// separates our timers' signals from sigqueue(3)/pthread_sigqueue(3), whose
// si_code is SI_QUEUE whatever value they carry.
inline constexpr int kTimerCookie = 0x48505246;

// What became of the threads whose sampler could not start as planned,
// counted where it happens: a sample handler too (a perf event started at
// a thread's first period, see ThreadSampler::start_at_first_period), so
// atomics only.
class StartFailures {
 public:
  // Async-signal-safe. `call` (a string literal) failed with `err` on
  // thread `tid`: a CPU-time timer samples the thread instead of a perf
  // event, or nothing does.
  void timer_instead(pid_t tid, const char* call, int err) { timer_instead_.add(tid, call, err); }
  void unsampled(pid_t tid, const char* call, int err) { unsampled_.add(tid, call, err); }

  // Async-signal-safe. A thread left its perf event for a CPU-time timer:
  // it switched itself out too often (ThreadSampler::after_owned_signal).
  void left_perf_for_timer() { left_perf_.fetch_add(1); }

  uint64_t timer_instead_count() const { return timer_instead_.count.load(); }
  uint64_t left_perf_count() const { return left_perf_.load(); }
  uint64_t unsampled_count() const { return unsampled_.count.load(); }
  // The first of each, "thread 12: perf_event_open: Too many open files";
  // not for the signal path.
  std::string first_timer_instead() const { return timer_instead_.first(); }
  std::string first_unsampled() const { return unsampled_.first(); }

 private:
  struct Kind {
    std::atomic<uint64_t> count{0};
    std::atomic<pid_t> tid{0};
    std::atomic<const char*> call{nullptr};
    std::atomic<int> err{0};
    void add(pid_t t, const char* c, int e) {
      if (count.fetch_add(1) != 0) return;
      tid.store(t), call.store(c), err.store(e);
    }
    std::string first() const;
  };
  Kind timer_instead_, unsampled_;
  std::atomic<uint64_t> left_perf_{0};
};

class ThreadSampler {
 public:
  constexpr ThreadSampler() = default;
  ThreadSampler(const ThreadSampler&) = delete;
  ThreadSampler& operator=(const ThreadSampler&) = delete;
  // No destructor on purpose: trivially destructible, so a ThreadSampler can
  // sit in thread-local storage without registering a TLS destructor. Call
  // stop() at thread exit.

  // Called ON the sampled thread. Starts sampling it with `plan` at once,
  // delivering `signal` (e.g. SIGRTMIN+4) to this thread only. The handler
  // for `signal` must be installed first. False with *error if the thread
  // is already sampled or a syscall fails (nothing is left open then).
  //  perf:  perf_event_open(this thread, any CPU), counting; its ring
  //         buffer mapped when the plan samples kernel mode (at user level
  //         only when the mapping is refused: the locked-memory limit);
  //         F_SETOWN_EX to this tid, F_SETSIG, O_ASYNC. With no
  //         descriptor left for it (EMFILE), the timer below instead.
  //  timer: timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID to this tid,
  //         sival_int = kTimerCookie) + timer_settime(interval).
  // `tid`: the calling thread's id, when the caller knows it (0: looked up).
  bool start(const SamplingPlan& plan, int signal, std::string* error, pid_t tid = 0);

  // Called ON the sampled thread, as start(), for threads that may live
  // shorter than a sampling period: a perf plan starts with the timer
  // plan's CPU-time timer, whose first signal (a sample like the others,
  // its overruns counted) starts the perf event from the handler
  // (after_owned_signal) and ends the timer. A thread that ends within its
  // first period of CPU time never opens one: three system calls instead
  // of nine, and no perf event set up and torn down. Where the perf event
  // is refused then, the timer samples the thread on; where no timer can
  // be had, the perf event starts now. A timer plan starts its timer. `plan` and `failures` must outlive the
  // sampler; what does not start as planned is counted in *failures.
  void start_at_first_period(const SamplingPlan& plan, int signal, pid_t tid, StartFailures* failures);
  // Called ON the sampled thread, as start_at_first_period, for threads
  // that are likely to run on: a perf plan opens its event at once (where
  // it is refused, the timer samples the thread, counted in *failures).
  // The first period's timer fires only at a scheduler tick that finds
  // the thread running, which on a loaded machine may not happen for a
  // long time: a thread that waits for it can run on unsampled.
  void start_now(const SamplingPlan& plan, int signal, pid_t tid, StartFailures* failures);

  // Async-signal-safe (system calls only, no locks): after an owned signal
  // was handled. The first timer signal of start_at_first_period starts
  // the perf event and takes a first reading of the thread's context
  // switches and CPU time (getrusage) and its yields (count_yield); a perf
  // signal about every 8 ms of its CPU time (every signal at 125 Hz and
  // below: SamplingPlan::signals_per_switch_check) reads them again
  // (~1.5 us). A thread that switched itself out (blocking waits, and
  // yields that let another thread run) more than
  // kMaxOwnSwitchesPerCpuSecond times a second of its CPU time between two
  // readings, and again by the next, leaves its perf event for a CPU-time
  // timer (counted in the StartFailures): a sustained rate, not a burst. A perf
  // event costs its thread at every switch: the kernel stops and restarts
  // it, and a software clock's restart reprograms a timer, which in a
  // virtual machine goes through the hypervisor (here ~8 us a switch; two
  // processes yielding to each other on one core: 2.7 us a round plain,
  // 19 us with a perf event each, the same under `perf record`). MPI ranks
  // sharing cores yield or block tens of thousands of times a second
  // (HPCG: 22,000-95,000; Open MPI's progress loop yields when the node is
  // oversubscribed, its multi-threaded waits block) and ran at 0.6x of
  // their speed; a timer costs a switch nothing. Preemption by a busy
  // machine does not count: such a thread keeps its perf event, which alone
  // times kernel work ([kernel] frames). Any other signal, nothing. A perf
  // event stays armed after each overflow (no PERF_EVENT_IOC_REFRESH
  // limit), an interval timer re-arms itself.
  void after_owned_signal(const siginfo_t* info);
  static constexpr uint64_t kMaxOwnSwitchesPerCpuSecond = 5000;

  // Async-signal-safe (one system call every samples_per_draw_ calls), for an
  // owned perf signal, after sample_was_in_kernel() and before the sample's
  // work: where the plan is randomized, sets the thread's period for its
  // next samples_per_draw_ samples (the plan's) to a fresh draw (PeriodJitter) with
  // PERF_EVENT_IOC_PERIOD, which restarts the count from now. What the
  // event counted between the overflow and that restart (the signal's
  // delivery, 30-60 us of CPU time in this virtual machine) is in no
  // period: the count read from the overflow's sample record measures it,
  // and each draw is shortened by a share of its running mean. Without a
  // ring (user-level events) it is not measured.
  void draw_next_period(const siginfo_t* info);

  // Async-signal-safe, on the sampler's own thread: it called sched_yield.
  void count_yield() { yields_.store(yields_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

  // Disable + close / timer_delete. Idempotent; safe at thread exit.
  void stop();

  // Async-signal-safe (one system call): no more signals from this sampler
  // (PERF_EVENT_IOC_DISABLE, or the timer disarmed); what it holds stays
  // until stop(), and a perf event due at the timer's signal stays due.
  // For the thread's own handler when recording has stopped or a capture
  // window has closed.
  void pause();
  // From any thread (a capture window opening): what pause() stopped runs
  // again: the perf event (PERF_EVENT_IOC_ENABLE) or the timer (re-armed
  // with its interval). Reads only what the sampler published (atomics);
  // an event or timer the thread replaced meanwhile gets an enable it does
  // not need (the thread's own handler pauses it again if the window closed).
  void resume() const;

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
        // With PERF_SAMPLE_READ (randomized periods) the event's count
        // follows the header, 8-byte aligned: it may wrap, a header never.
        if (jitter_period_ != 0 && h->size >= sizeof *h + sizeof(uint64_t)) {
          const uint64_t at = tail - h->size + sizeof *h;
          overflow_count_ = *reinterpret_cast<const uint64_t*>(ring_data_ + (at & ring_mask_));
        }
        break;
      }
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    return in_kernel;
  }

  bool running() const { return fd_ >= 0 || timer_armed_; }
  Mechanism mechanism() const { return mechanism_; }

 private:
  // What the start_* methods keep for later: the plan, where failures
  // are counted, the signal, the thread; the jitter seeded.
  void prepare(const SamplingPlan& plan, int signal, pid_t tid, StartFailures* failures);
  // Each returns 0 or the errno of `*call`, the system call that failed.
  // open_perf is async-signal-safe (no strings, no locks).
  int open_perf(const SamplingPlan& plan, int signal, pid_t tid, const char** call);
  int arm_timer(const SamplingPlan& plan, int signal, pid_t tid, const char** call);
  bool map_ring(int fd);
  void unmap_ring();
  void close_perf();
  void delete_timer();

  // The perf event's ring buffer (metadata page, then ring_mask_ + 1 data
  // bytes), mapped when it samples kernel mode too; unmapped by stop(). Not
  // an owning type: the sampler lives in thread-local storage and must stay
  // trivially destructible.
  void* ring_ = nullptr;
  const unsigned char* ring_data_ = nullptr;
  uint64_t ring_mask_ = 0;
  size_t ring_map_bytes_ = 0;

  // Randomized periods: the thread's generator, the plan's period around
  // which it draws (0: fixed periods), the event's count at the overflow
  // being handled and at the one before (0: not known; read from the
  // sample records), and the period set at the one before.
  void seed_jitter(pid_t tid);
  PeriodJitter jitter_;
  uint64_t jitter_period_ = 0;
  uint64_t overflow_count_ = 0, last_overflow_count_ = 0, last_period_ = 0;
  uint64_t delivery_count_ = 0;  // the running mean of the delivery's count
  // Samples since the last draw, and whether the period now running began
  // at a draw's restart (draw_next_period).
  uint32_t since_draw_ = 0, samples_per_draw_ = 1;
  bool restarted_ = false;

  // What resume() may act on from another thread: fd_ and timer_ while
  // they are live, and the timer's interval.
  std::atomic<int> published_fd_{-1};
  std::atomic<void*> published_timer_{nullptr};  // glibc's timer_t: the kernel's id, 0 the first
  std::atomic<bool> timer_published_{false};
  std::atomic<uint64_t> timer_interval_ns_{0};

  int fd_ = -1;             // the open perf event, -1 when none
  int signalled_fd_ = -1;   // si_fd of our perf signals; kept after stop() (rule 4)
  timer_t timer_ = nullptr;
  bool timer_armed_ = false;
  bool used_timer_ = false; // our timer signals may exist (rule 4)
  Mechanism mechanism_ = Mechanism::kPerfEvent;

  // start_at_first_period(): the perf event is due at the timer's signal.
  bool perf_due_ = false;
  const SamplingPlan* plan_ = nullptr;
  StartFailures* failures_ = nullptr;
  int signal_ = 0;
  pid_t tid_ = 0;

  // after_owned_signal's context switch check.
  void leave_perf_if_switching_itself_often();
  uint32_t perf_signals_ = 0;
  uint32_t switch_check_signals_ = 8;  // the plan's signals_per_switch_check()
  std::atomic<uint64_t> yields_{0};
  uint64_t checked_blocked_ = 0, checked_preempted_ = 0, checked_yields_ = 0, checked_cpu_ns_ = 0;
  uint32_t checks_over_ = 0;  // readings in a row past the rate
};

static_assert(std::is_trivially_destructible_v<ThreadSampler>);

}  // namespace hybridprof::sampling
