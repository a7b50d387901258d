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
#include <utility>
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

// The figure of `outer` repetitions' times per call: their mean in CPU
// time, their median on the wall clock (above).
inline double summarize_ns_per_call(clockid_t clock, std::vector<double> per) {
  if (per.empty()) return 0;
  if (clock == CLOCK_THREAD_CPUTIME_ID) {
    double total = 0;
    for (const double t : per) total += t;
    return total / double(per.size());
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

template <typename Body>
double time_ns_per_call(clockid_t clock, int inner, Body& body) {
  const double t0 = bench_now_ns(clock);
  body(inner);
  return (bench_now_ns(clock) - t0) / inner;
}

template <typename Body>
double median_ns_per_call(int inner, int outer, Body body) {
  const clockid_t clock = bench_clock();
  std::vector<double> per;
  for (int o = 0; o < outer; ++o) per.push_back(time_ns_per_call(clock, inner, body));
  return summarize_ns_per_call(clock, per);
}

// The same calls in two states of the process, `outer` repetitions of
// each in turn (enter_a(), a repetition, enter_b(), a repetition, ...):
// {figure in state a, figure in state b}. Two states compared within one
// run share the machine's speed, where two runs may not: a VM that changes
// speed for seconds at a time made one run's calls 1.7 times another's.
template <typename EnterA, typename EnterB, typename Body>
std::pair<double, double> alternating_ns_per_call(int inner, int outer, EnterA enter_a, EnterB enter_b, Body body) {
  const clockid_t clock = bench_clock();
  std::vector<double> a, b;
  for (int o = 0; o < outer; ++o) {
    enter_a();
    a.push_back(time_ns_per_call(clock, inner, body));
    enter_b();
    b.push_back(time_ns_per_call(clock, inner, body));
  }
  return {summarize_ns_per_call(clock, a), summarize_ns_per_call(clock, b)};
}
