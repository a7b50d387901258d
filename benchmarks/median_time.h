// Timing for the benchmarks that time their own calls (openmp_syncbench,
// nvtx_bench, call_sites_bench): `outer` timed repetitions of body(inner),
// which makes `inner` calls; the median repetition's time per call, in ns.
// The median keeps one preempted repetition from moving the figure.
//
// With BENCH_THREAD_CPU_TIME=1 in the environment, the time is the calling
// thread's CPU time instead of the wall clock's, and the figure is the mean
// over all repetitions: what cpu-clock samples count. CPU time is unmoved by
// a busy machine, where most repetitions are preempted and no median helps,
// and its outliers are real work that samples see (a profiler's ring
// written out every few repetitions), which a median would leave out. The
// tests that compare the profiler's share of samples with the time it
// added use it.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

inline clockid_t bench_clock() {
  const char* cpu = std::getenv("BENCH_THREAD_CPU_TIME");
  return cpu != nullptr && std::strcmp(cpu, "1") == 0 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
}

inline double bench_now_ns(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

template <typename Body>
double median_ns_per_call(int inner, int outer, Body body) {
  const clockid_t clock = bench_clock();
  std::vector<double> per;
  double total = 0;
  for (int o = 0; o < outer; ++o) {
    const double t0 = bench_now_ns(clock);
    body(inner);
    per.push_back((bench_now_ns(clock) - t0) / inner);
    total += per.back();
  }
  if (clock == CLOCK_THREAD_CPUTIME_ID) return total / outer;
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}
