#include "sampling/thread_sampler.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

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

void close_own(int fd) {
  if (own_fds::release(fd)) close(fd);
}

// False, with *error and errno set.
bool fail(std::string* error, const std::string& what, int err) {
  if (error != nullptr) *error = what + ": " + errno_text(err);
  errno = err;
  return false;
}

// A perf event's descriptor that adopt() could not move out of the
// program's numbers (its limit on descriptors is near): closed, so the
// program keeps every number it may open; EMFILE as if none were left.
int above_the_programs(int fd) {
  if (fd < 0 || fd >= own_fds::kLowest) return fd;
  close_own(fd);
  return -EMFILE;
}

}  // namespace

bool ThreadSampler::start(const SamplingPlan& plan, int signal, std::string* error, pid_t tid) {
  if (running()) {
    if (error != nullptr) *error = "this thread is already sampled";
    return false;
  }
  if (tid == 0) tid = static_cast<pid_t>(gettid());
  if (plan.mechanism == Mechanism::kPosixTimer) return start_timer(plan, signal, tid, error);
  if (start_perf(plan, signal, tid, error)) return true;
  // No descriptor left for a perf event (the program's RLIMIT_NOFILE, most
  // of it in use): a CPU-time timer needs none.
  if (errno != EMFILE && errno != ENFILE) return false;
  return start_timer(plan, signal, tid, error);
}

bool ThreadSampler::start_perf(const SamplingPlan& plan, int signal, pid_t tid, std::string* error) {
  perf_event_attr attr;
  const bool kernel = plan.kernel_time == KernelTime::kSampled;
  detail::fill_sampling_attr(plan.event, plan.value, plan.frequency, kernel, &attr);
  // Out of the program's reach (own_fds.h) before its number is fixed in
  // the signals (F_SETSIG below): a slot-less descriptor, never moved.
  int fd = above_the_programs(own_fds::adopt(detail::open_on_this_thread(&attr)));
  if (fd < 0) return fail(error, "perf_event_open(" + plan.event.name + ")", -fd);
  if (kernel && !map_ring(fd)) {
    // Samples in the kernel could not be told from the user's: this thread
    // is sampled at user level only.
    close_own(fd);
    detail::fill_sampling_attr(plan.event, plan.value, plan.frequency, false, &attr);
    fd = above_the_programs(own_fds::adopt(detail::open_on_this_thread(&attr)));
    if (fd < 0) return fail(error, "perf_event_open(" + plan.event.name + ")", -fd);
  }

  mechanism_ = Mechanism::kPerfEvent;
  fd_ = fd;
  signalled_fd_ = fd;
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
    int err = errno;
    stop();
    return fail(error, "fcntl(perf_event fd)", err);
  }
  return true;
}

bool ThreadSampler::map_ring(int fd) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
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

bool ThreadSampler::start_timer(const SamplingPlan& plan, int signal, pid_t tid, std::string* error) {
  if (plan.timer_interval_ns == 0) {
    if (error != nullptr) *error = "timer plan without an interval";
    return false;
  }
  sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal;
  event.sigev_value.sival_int = kTimerCookie;
  event.sigev_notify_thread_id = tid;
  timer_t timer;
  // CLOCK_THREAD_CPUTIME_ID here is the CPU clock of the calling thread.
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &timer) != 0) return fail(error, "timer_create", errno);

  mechanism_ = Mechanism::kPosixTimer;
  timer_ = timer;
  timer_armed_ = true;
  used_timer_ = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // rule 3

  itimerspec spec;
  spec.it_interval.tv_sec = time_t(plan.timer_interval_ns / 1000000000ull);
  spec.it_interval.tv_nsec = long(plan.timer_interval_ns % 1000000000ull);
  spec.it_value = spec.it_interval;
  if (timer_settime(timer, 0, &spec, nullptr) != 0) {
    int err = errno;
    stop();
    return fail(error, "timer_settime", err);
  }
  return true;
}

void ThreadSampler::stop() {
  if (fd_ >= 0) {
    // The ring first (the handler stops reading it before it goes), then
    // the event: a signal it raises meanwhile is still ours (owns()) and
    // reads no ring. No PERF_EVENT_IOC_DISABLE: 5 us a thread for nothing.
    // (Not the fd when the program took its number over with dup2.)
    const bool ours = own_fds::release(fd_);
    unmap_ring();
    if (ours) close(fd_);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    fd_ = -1;  // signalled_fd_ stays (rule 4)
  }
  if (timer_armed_) {
    timer_delete(timer_);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    timer_armed_ = false;  // used_timer_ stays (rule 4)
  }
}

void ThreadSampler::pause() {
  if (fd_ >= 0 && own_fds::owned(fd_)) ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
  if (timer_armed_) {
    const itimerspec disarm{};
    timer_settime(timer_, 0, &disarm, nullptr);
  }
}

void ThreadSampler::reset_after_fork() {
  unmap_ring();  // the child's copy of the mapping
  if (fd_ >= 0) close_own(fd_);
  fd_ = -1;
  signalled_fd_ = -1;
  timer_ = nullptr;
  timer_armed_ = false;
  used_timer_ = false;
}

}  // namespace hybridprof::sampling
