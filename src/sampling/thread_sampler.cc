#include "sampling/thread_sampler.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/own_fds.h"
#include "sampling/perf_open.h"

// glibc 2.36 (Debian 12) does not yet name the SIGEV_THREAD_ID target field.
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

namespace hybridprof::sampling {
namespace {

std::string errno_text(int err) {
  char buffer[128];
  return strerror_r(err, buffer, sizeof buffer);  // GNU variant: returns the text
}

timespec timespec_of(uint64_t ns) { return {time_t(ns / 1000000000ull), long(ns % 1000000000ull)}; }

}  // namespace

std::string StartFailures::Kind::first() const {
  if (count.load() == 0) return "";
  const char* c = call.load();
  return "thread " + std::to_string(tid.load()) + ": " + (c ? c : "?") + ": " + errno_text(err.load());
}

void ThreadSampler::seed_jitter(pid_t tid) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  jitter_.seed(uint64_t(tid) << 32 ^ uint64_t(now.tv_sec) * 1000000000ull ^ uint64_t(now.tv_nsec));
}

bool ThreadSampler::start(const SamplingPlan& plan, int signal, std::string* error, pid_t tid) {
  if (running()) {
    if (error != nullptr) *error = "this thread is already sampled";
    return false;
  }
  if (tid == 0) tid = static_cast<pid_t>(gettid());
  seed_jitter(tid);
  const char* call = nullptr;
  int err = 0;
  if (plan.mechanism == Mechanism::kPosixTimer) {
    err = arm_timer(plan, signal, tid, &call);
  } else {
    err = open_perf(plan, signal, tid, &call);
    // No descriptor left for a perf event (the program's RLIMIT_NOFILE, most
    // of it in use): a CPU-time timer needs none.
    if (err == EMFILE || err == ENFILE) err = arm_timer(plan, signal, tid, &call);
  }
  if (err == 0) return true;
  if (error != nullptr) *error = std::string(call) + " (" + plan.event.name + "): " + errno_text(err);
  errno = err;
  return false;
}

void ThreadSampler::prepare(const SamplingPlan& plan, int signal, pid_t tid, StartFailures* failures) {
  plan_ = &plan;
  failures_ = failures;
  signal_ = signal;
  tid_ = tid;
  seed_jitter(tid);
}

void ThreadSampler::start_now(const SamplingPlan& plan, int signal, pid_t tid, StartFailures* failures) {
  if (plan.mechanism != Mechanism::kPerfEvent) {
    start_at_first_period(plan, signal, tid, failures);  // a timer from the start
    return;
  }
  if (running()) return;
  prepare(plan, signal, tid, failures);
  const char* call = nullptr;
  const int err = open_perf(plan, signal, tid, &call);
  if (err == 0) {
    checked_cpu_ns_ = 0;  // the first reading: what later ones count from
    leave_perf_if_switching_itself_often();
    return;
  }
  // Refused (no descriptor left, say): the timer samples this thread.
  const char* timer_call = nullptr;
  const int timer_err = arm_timer(plan, signal, tid, &timer_call);
  if (timer_err == 0)
    failures->timer_instead(tid, call, err);
  else
    failures->unsampled(tid, timer_call, timer_err);
}

void ThreadSampler::start_at_first_period(const SamplingPlan& plan, int signal, pid_t tid, StartFailures* failures) {
  if (running()) return;
  prepare(plan, signal, tid, failures);
  const char* call = nullptr;
  int err = 0;
  if (plan.mechanism == Mechanism::kPerfEvent) {
    perf_due_ = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // rule 3: before the timer can fire
    err = arm_timer(plan, signal, tid, &call);
    mechanism_ = Mechanism::kPerfEvent;
    if (err == 0) return;
    perf_due_ = false;
    err = open_perf(plan, signal, tid, &call);  // no timer to be had (RLIMIT_SIGPENDING): the event now
  } else {
    err = arm_timer(plan, signal, tid, &call);
  }
  if (err != 0) failures->unsampled(tid, call, err);
}

// SIGNAL PATH: one system call every samples_per_draw_ calls, none between.
void ThreadSampler::draw_next_period(const siginfo_t* info) {
  if (info->si_code == SI_TIMER || jitter_period_ == 0 || fd_ < 0 || !own_fds::owned(fd_)) return;
  // When the period that ended here began at a draw's restart, the count
  // between the last overflow and this one, less the period set then, is
  // what the last signal's delivery took before the restart. Draws are
  // shortened by its running mean (1/8 of each new reading, at most an
  // eighth of a period: a reading inflated by an interrupt moves it
  // little), so that periods from overflow to overflow keep the mean asked
  // for (without it, 3 to 6% longer here).
  if (restarted_ && overflow_count_ != 0 && last_overflow_count_ != 0 &&
      overflow_count_ >= last_overflow_count_ + last_period_) {
    const uint64_t late = overflow_count_ - last_overflow_count_ - last_period_;
    const int64_t mean = int64_t(delivery_count_) + (int64_t(late) - int64_t(delivery_count_)) / 8;
    delivery_count_ = uint64_t(std::clamp<int64_t>(mean, 0, int64_t(jitter_period_ / 8)));
  }
  last_overflow_count_ = overflow_count_;
  restarted_ = false;
  // A new period every samples_per_draw_ samples (SamplingPlan): the ioctl
  // reprograms the event's timer, which costs this VM hypervisor exits
  // (~15 us a draw; drawn at every sample at 1 kHz, randomized runs took
  // 1.6-2.9% more wall time than fixed ones). The kernel reloads the drawn period at the block's
  // other overflows, and where a block starts moves at random, which is
  // what breaks a program's lock-step with the sampling. Only the block's
  // first period holds a delivery: each of its periods is shortened by a
  // share of it.
  if (++since_draw_ < samples_per_draw_) return;
  since_draw_ = 0;
  const uint64_t next = jitter_.next(jitter_period_) - delivery_count_ / samples_per_draw_;
  last_period_ = next;
  restarted_ = true;
  ioctl(fd_, PERF_EVENT_IOC_PERIOD, &next);
}

// SIGNAL PATH: system calls only.
void ThreadSampler::after_owned_signal(const siginfo_t* info) {
  if (fd_ >= 0 && info->si_code != SI_TIMER && ++perf_signals_ % switch_check_signals_ == 0) {
    leave_perf_if_switching_itself_often();
    return;
  }
  if (!perf_due_ || info->si_code != SI_TIMER) return;
  perf_due_ = false;
  const char* call = nullptr;
  const int err = open_perf(*plan_, signal_, tid_, &call);
  if (err == 0) {
    delete_timer();  // its one signal has come: nothing of it is left pending
    checked_cpu_ns_ = 0;  // the first reading: what later ones count from
    leave_perf_if_switching_itself_often();
    return;
  }
  // Refused (no descriptor left, say): the timer samples this thread on.
  mechanism_ = Mechanism::kPosixTimer;
  failures_->timer_instead(tid_, call, err);
}

// SIGNAL PATH: system calls only (getrusage is one: the raw call, since
// POSIX does not list it as async-signal-safe).
void ThreadSampler::leave_perf_if_switching_itself_often() {
  rusage usage;
  if (syscall(SYS_getrusage, RUSAGE_THREAD, &usage) != 0) return;
  const uint64_t blocked = uint64_t(usage.ru_nvcsw), preempted = uint64_t(usage.ru_nivcsw);
  const uint64_t yields = yields_.load(std::memory_order_relaxed);
  const auto ns = [](const timeval& t) { return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_usec) * 1000ull; };
  const uint64_t cpu_ns = ns(usage.ru_utime) + ns(usage.ru_stime);
  // A yield that switched counts as involuntary; one with nobody else to
  // run switched nothing (and cost nothing): no more of the yields count
  // than the involuntary switches.
  const uint64_t yielded = yields - checked_yields_, involuntary = preempted - checked_preempted_;
  const uint64_t own_switches = (blocked - checked_blocked_) + (yielded < involuntary ? yielded : involuntary);
  const uint64_t ran_ns = cpu_ns - checked_cpu_ns_;
  const bool first_check = checked_cpu_ns_ == 0;
  checked_blocked_ = blocked;
  checked_preempted_ = preempted;
  checked_yields_ = yields;
  checked_cpu_ns_ = cpu_ns;
  if (first_check) checks_over_ = 0;
  if (first_check || ran_ns == 0 || plan_ == nullptr || failures_ == nullptr) return;
  const uint64_t per_cpu_second = own_switches * 1000000000ull / ran_ns;
  checks_over_ = per_cpu_second > kMaxOwnSwitchesPerCpuSecond ? checks_over_ + 1 : 0;
  if (checks_over_ < 2) return;
  // The timer first: a thread that cannot have one keeps its perf event.
  const char* call = nullptr;
  if (arm_timer(*plan_, signal_, tid_, &call) != 0) {
    mechanism_ = Mechanism::kPerfEvent;  // arm_timer names the timer as soon as it has one
    return;
  }
  close_perf();
  failures_->left_perf_for_timer();
}

// SIGNAL PATH too (after_owned_signal): no strings, no locks.
int ThreadSampler::open_perf(const SamplingPlan& plan, int signal, pid_t tid, const char** call) {
  perf_event_attr attr;
  const bool kernel = plan.kernel_time == KernelTime::kSampled;
  detail::fill_sampling_attr(plan.event, plan.value, plan.frequency, kernel, &attr);
  switch_check_signals_ = plan.signals_per_switch_check();
  jitter_period_ = plan.randomized ? plan.perf_period() : 0;
  if (jitter_period_ != 0) {
    attr.sample_period = jitter_.next(jitter_period_);  // threads start out of phase
    attr.sample_type = PERF_SAMPLE_READ;  // the count at each overflow (draw_next_period)
    last_overflow_count_ = overflow_count_ = delivery_count_ = 0;
    since_draw_ = 0;
    samples_per_draw_ = plan.samples_per_draw();
    restarted_ = false;
  }
  *call = "perf_event_open";
  // Out of the program's reach (own_fds.h) before its number is fixed in
  // the signals (F_SETSIG below): a slot-less descriptor, never moved.
  int fd = own_fds::adopt_out_of_reach(detail::open_on_this_thread(&attr));
  if (fd < 0) return -fd;
  if (kernel && !map_ring(fd)) {
    // Samples in the kernel could not be told from the user's: this thread
    // is sampled at user level only.
    own_fds::close_out_of_reach(fd);
    const uint64_t first_period = attr.sample_period;
    detail::fill_sampling_attr(plan.event, plan.value, plan.frequency, false, &attr);
    if (jitter_period_ != 0) attr.sample_period = first_period;
    fd = own_fds::adopt_out_of_reach(detail::open_on_this_thread(&attr));
    if (fd < 0) return -fd;
  }

  mechanism_ = Mechanism::kPerfEvent;
  fd_ = fd;
  signalled_fd_ = fd;
  published_fd_.store(fd);
  std::atomic_signal_fence(std::memory_order_seq_cst);  // rule 3: owns() sees the fd before any signal
  // Route overflow wakeups as `signal` to this thread only (F_OWNER_TID, not
  // the process: another thread would sample the wrong stack). F_SETSIG makes
  // the kernel fill si_fd and si_code = POLL_IN, which owns() checks. The
  // event counts already; the first signal comes with O_ASYNC. A new perf
  // fd has no status flags to keep: F_SETFL without F_GETFL.
  f_owner_ex owner;
  owner.type = F_OWNER_TID;
  owner.pid = tid;
  if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, signal) != 0 || fcntl(fd, F_SETFL, O_ASYNC) != 0) {
    const int err = errno;
    close_perf();
    *call = "fcntl(perf_event)";
    return err;
  }
  return 0;
}

bool ThreadSampler::map_ring(int fd) {
  const size_t page = size_t(getpagesize());  // sysconf is not async-signal-safe
  // One data page holds 512 bare sample records; the handler consumes one
  // per signal, so only signals still queued keep records in it.
  const size_t bytes = 2 * page;
  void* ring = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ring == MAP_FAILED) return false;
  ring_data_ = static_cast<const unsigned char*>(ring) + page;
  ring_mask_ = page - 1;
  ring_map_bytes_ = bytes;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ring_ = ring;
  return true;
}

void ThreadSampler::unmap_ring() {
  if (ring_ == nullptr) return;
  void* ring = ring_;
  ring_ = nullptr;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // rule 3: the handler stops reading it first
  munmap(ring, ring_map_bytes_);
}

int ThreadSampler::arm_timer(const SamplingPlan& plan, int signal, pid_t tid, const char** call) {
  *call = "timer_create";
  if (plan.timer_interval_ns == 0) return EINVAL;  // a plan without an interval
  sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal;
  event.sigev_value.sival_int = kTimerCookie;
  event.sigev_notify_thread_id = tid;
  timer_t timer;
  // CLOCK_THREAD_CPUTIME_ID here is the CPU clock of the calling thread.
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &timer) != 0) return errno;

  mechanism_ = Mechanism::kPosixTimer;
  timer_ = timer;
  timer_armed_ = true;
  used_timer_ = true;
  timer_interval_ns_.store(plan.timer_interval_ns);
  published_timer_.store(timer);
  timer_published_.store(true);
  std::atomic_signal_fence(std::memory_order_seq_cst);  // rule 3

  const itimerspec spec{timespec_of(plan.timer_interval_ns), timespec_of(plan.timer_interval_ns)};
  if (timer_settime(timer, 0, &spec, nullptr) != 0) {
    const int err = errno;
    delete_timer();
    *call = "timer_settime";
    return err;
  }
  return 0;
}

void ThreadSampler::close_perf() {
  // The ring first (the handler stops reading it before it goes), then
  // the event: a signal it raises meanwhile is still ours (owns()) and
  // reads no ring. No PERF_EVENT_IOC_DISABLE: 5 us a thread for nothing.
  // (Not the fd when the program took its number over with dup2.)
  unmap_ring();
  published_fd_.store(-1);
  own_fds::close_out_of_reach(fd_);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  fd_ = -1;  // signalled_fd_ stays (rule 4)
}

void ThreadSampler::delete_timer() {
  timer_published_.store(false);
  timer_delete(timer_);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  timer_armed_ = false;  // used_timer_ stays (rule 4)
}

void ThreadSampler::stop() {
  perf_due_ = false;  // first: a timer signal from here on starts nothing
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (fd_ >= 0) close_perf();
  if (timer_armed_) delete_timer();
}

void ThreadSampler::pause() {
  if (fd_ >= 0 && own_fds::owned(fd_)) ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
  if (timer_armed_) {
    const itimerspec disarm{};
    timer_settime(timer_, 0, &disarm, nullptr);
  }
}

void ThreadSampler::resume() const {
  if (const int fd = published_fd_.load(); fd >= 0) {
    if (own_fds::owned(fd)) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    return;
  }
  if (timer_published_.load()) {
    void* timer = published_timer_.load();
    const timespec interval = timespec_of(timer_interval_ns_.load());
    const itimerspec spec{interval, interval};
    timer_settime(static_cast<timer_t>(timer), 0, &spec, nullptr);
  }
}

void ThreadSampler::reset_after_fork() {
  perf_due_ = false;
  unmap_ring();  // the child's copy of the mapping
  own_fds::close_out_of_reach(fd_);
  fd_ = -1;
  signalled_fd_ = -1;
  published_fd_.store(-1);
  timer_published_.store(false);
  timer_ = nullptr;
  timer_armed_ = false;
  used_timer_ = false;
  checked_cpu_ns_ = 0;  // the child's thread counts its switches afresh
}

}  // namespace hybridprof::sampling
