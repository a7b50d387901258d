// The floor under any in-process sampler: a per-thread cpu-clock perf_event
// that delivers a signal to an EMPTY handler every 1 ms of the thread's CPU
// time. What a program loses to it is what the kernel (and, in a VM, the
// hypervisor) charges per sample before a profiler does any work.
#pragma once

#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace signal_floor {

inline constexpr int kSignalOffset = 4;  // SIGRTMIN + 4, the profiler's default

inline void on_signal(int, siginfo_t*, void*) {}

inline void install_empty_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGRTMIN + kSignalOffset, &sa, nullptr);
}

// Exits with status 3 when perf_event_open is refused. `kernel`: count the
// thread's CPU time in the kernel too, as the profiler does where it may
// (so that both take a signal per millisecond of user plus system time).
inline void arm_this_thread(bool kernel = false) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = 1000000;  // 1 ms of CPU time
  attr.wakeup_events = 1;
  attr.disabled = 1;
  attr.exclude_kernel = kernel ? 0 : 1;
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) std::exit(3);
  fcntl(fd, F_SETFL, O_ASYNC);
  fcntl(fd, F_SETSIG, SIGRTMIN + kSignalOffset);
  f_owner_ex owner{F_OWNER_TID, static_cast<pid_t>(syscall(SYS_gettid))};
  fcntl(fd, F_SETOWN_EX, &owner);
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

}  // namespace signal_floor
