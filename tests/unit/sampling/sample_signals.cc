#include "sample_signals.h"

#include <time.h>

#include <cstring>

namespace hybridprof::sampling::test_support {
namespace {

thread_local ThreadSampler* t_sampler = nullptr;

void counting_handler(int, siginfo_t* info, void*) {
  SignalCounts& c = counts();
  ThreadSampler* sampler = t_sampler;
  if (sampler != nullptr && sampler->owns(info)) {
    sampler->sample_was_in_kernel();  // as the runtime's handler does: it reads the overflow's record
    sampler->draw_next_period(info);
    timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    const uint64_t cpu_ns = uint64_t(now.tv_sec) * 1000000000ull + uint64_t(now.tv_nsec);
    const int n = c.intervals.load(std::memory_order_relaxed);
    if (c.last_signal_cpu_ns != 0 && n < SignalCounts::kMaxIntervals) {
      c.intervals_ns[n] = cpu_ns - c.last_signal_cpu_ns;
      c.intervals.store(n + 1, std::memory_order_relaxed);
    }
    c.last_signal_cpu_ns = cpu_ns;
    c.owned.fetch_add(1, std::memory_order_relaxed);
    c.owned_weight.fetch_add(ThreadSampler::sample_weight(info), std::memory_order_relaxed);
    if (info->si_code == SI_TIMER) c.owned_timer.fetch_add(1, std::memory_order_relaxed);
    sampler->after_owned_signal(info);
  } else if (info->si_code == SI_TKILL) {
    c.foreign_tkill.fetch_add(1, std::memory_order_relaxed);
  } else if (info->si_code == SI_QUEUE) {
    c.foreign_queue.fetch_add(1, std::memory_order_relaxed);
  } else {
    c.foreign_other.fetch_add(1, std::memory_order_relaxed);
  }
}

double seconds(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

int sample_signal() { return SIGRTMIN + 4; }

void SignalCounts::reset() {
  owned = 0;
  owned_weight = 0;
  owned_timer = 0;
  foreign_tkill = 0;
  foreign_queue = 0;
  foreign_other = 0;
  intervals = 0;
  last_signal_cpu_ns = 0;
}

SignalCounts& counts() {
  static SignalCounts instance;
  return instance;
}

void set_thread_sampler(ThreadSampler* sampler) { t_sampler = sampler; }

void install_counting_handler() {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = counting_handler;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(sample_signal(), &action, nullptr);
}

double spin_cpu(double cpu_seconds) {
  double cpu_start = seconds(CLOCK_THREAD_CPUTIME_ID);
  double wall_start = seconds(CLOCK_MONOTONIC);
  volatile uint64_t sink = 0;
  while (seconds(CLOCK_THREAD_CPUTIME_ID) - cpu_start < cpu_seconds && seconds(CLOCK_MONOTONIC) - wall_start < 30.0) {
    for (int i = 0; i < 10000; ++i) sink = sink + uint64_t(i);
  }
  return seconds(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
}

}  // namespace hybridprof::sampling::test_support
