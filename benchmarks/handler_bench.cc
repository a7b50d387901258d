// Per-sample cost of the signal path (Google Benchmark):
//  - BM_SignalDeliveryOnly: raise() to an empty handler and back;
//  - BM_SignalUnwindAndRecord/N: the same with the sample handler's work
//    (unwind from the signal context, record into the ring) at a stack
//    of about N frames (40, and 150 as deep C++ stacks such as PyTorch's).
// The difference is the handler's own cost per sample.
//  - BM_RandomizedPeriod: what randomized periods add to a sample: a draw
//    and PERF_EVENT_IOC_PERIOD on a running cpu-clock event of this thread
//    (ThreadSampler::draw_next_period), against BM_FixedPeriod's nothing.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <ucontext.h>

#include <vector>

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sampling/period_jitter.h"
#include "sigsafe/thread_ring.h"
#include "trace/records.h"
#include "unwind/native_unwinder.h"

namespace hybridprof {
namespace {

alignas(64) unsigned char g_storage[1 << 18];
ThreadRing g_ring(g_storage, sizeof g_storage);
uint32_t g_last_depth = 0;

void unwind_and_record(void* context) {
  uint64_t ips[256 + kUnwindScratchFrames];
  uint32_t flags = 0;
  const uint32_t depth = unwind_signal_context(context, ips, 256, &flags);
  if (auto* h = g_ring.reserve(sample_record_bytes(depth), uint16_t(RecordType::kSample), uint16_t(depth))) {
    auto* s = reinterpret_cast<SampleRecord*>(h);
    s->flags = flags;
    for (uint32_t i = 0; i < depth; ++i) s->ips()[i] = ips[i];
    g_ring.commit();
  }
  g_last_depth = depth;
  if (g_ring.pending_bytes() > sizeof g_storage / 2) g_ring.consume([](const RecordHeader&) {});
}

void on_signal(int, siginfo_t*, void* context) { unwind_and_record(context); }

template <typename Fn>
__attribute__((noinline)) void at_depth(int depth, Fn& fn) {
  if (depth == 0) {
    fn();
  } else {
    at_depth(depth - 1, fn);
  }
  benchmark::ClobberMemory();  // not a tail call
}

void on_signal_empty(int, siginfo_t*, void*) {}

// Signal delivery and return alone, to subtract from the next figure.
void BM_SignalDeliveryOnly(benchmark::State& state) {
  struct sigaction sa {};
  sa.sa_sigaction = on_signal_empty;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGRTMIN + 6, &sa, nullptr);
  auto body = [&] {
    for (auto _ : state) raise(SIGRTMIN + 6);
  };
  at_depth(26, body);
}
BENCHMARK(BM_SignalDeliveryOnly);

void BM_SignalUnwindAndRecord(benchmark::State& state) {
  prepare_unwinder_for_process();
  prepare_unwinder_for_thread(/*with_trace_cache=*/true);
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGRTMIN + 5, &sa, nullptr);
  auto body = [&] {
    for (auto _ : state) raise(SIGRTMIN + 5);
  };
  // The frames below at_depth's (the benchmark's, main's) come to about 14.
  at_depth(int(state.range(0)) - 14, body);
  state.counters["frames"] = g_last_depth;
}
BENCHMARK(BM_SignalUnwindAndRecord)->Arg(40)->Arg(150);

// A counting cpu-clock event of this thread with a 1 ms period and no
// signal: the event the period updates restart. -1 where perf_event is refused.
int open_cpu_clock() {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = 1000000;
  attr.exclude_hv = 1;
  return int(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

void BM_RandomizedPeriod(benchmark::State& state) {
  const int fd = open_cpu_clock();
  if (fd < 0) {
    state.SkipWithError("perf_event_open refused");
    return;
  }
  sampling::PeriodJitter jitter;
  jitter.seed(uint64_t(getpid()));
  for (auto _ : state) {
    uint64_t next = jitter.next(1000000);
    ioctl(fd, PERF_EVENT_IOC_PERIOD, &next);
  }
  close(fd);
}
BENCHMARK(BM_RandomizedPeriod);

void BM_FixedPeriod(benchmark::State& state) {
  const int fd = open_cpu_clock();
  for (auto _ : state) benchmark::DoNotOptimize(fd);
  if (fd >= 0) close(fd);
}
BENCHMARK(BM_FixedPeriod);

}  // namespace
}  // namespace hybridprof

BENCHMARK_MAIN();
