// The floor under any in-process sampler: the same 2-thread CPU work as
// overhead_workload, with a per-thread cpu-clock perf_event delivering a
// signal to an EMPTY handler every 1 ms ("signal_floor arm"), or nothing
// ("signal_floor"). The ratio of the two is what the kernel (and, in a VM,
// the hypervisor) charges per sample before a profiler does any work.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

volatile uint64_t g_sink;

void on_signal(int, siginfo_t*, void*) {}

void arm_this_thread() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = 1000000;  // 1 ms of CPU time
  attr.wakeup_events = 1;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) std::exit(3);
  fcntl(fd, F_SETFL, O_ASYNC);
  fcntl(fd, F_SETSIG, SIGRTMIN + 4);
  f_owner_ex owner{F_OWNER_TID, static_cast<pid_t>(syscall(SYS_gettid))};
  fcntl(fd, F_SETOWN_EX, &owner);
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

void worker(uint64_t rounds, bool arm) {
  if (arm) arm_this_thread();
  uint64_t x = 1;
  for (uint64_t i = 0; i < rounds * 20000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  g_sink = x;
}

}  // namespace

int main(int argc, char** argv) {
  const bool arm = argc > 1 && std::strcmp(argv[1], "arm") == 0;
  const uint64_t rounds = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 90000;
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGRTMIN + 4, &sa, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) threads.emplace_back(worker, rounds, arm);
  for (auto& t : threads) t.join();
  return 0;
}
