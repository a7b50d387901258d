// Timing for the benchmarks that time their own calls (openmp_syncbench,
// nvtx_bench): `outer` timed repetitions of body(inner), which makes
// `inner` calls; the median repetition's time per call, in ns. The median
// keeps one preempted repetition from moving the figure.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

template <typename Body>
double median_ns_per_call(int inner, int outer, Body body) {
  std::vector<double> per;
  for (int o = 0; o < outer; ++o) {
    const auto t0 = std::chrono::steady_clock::now();
    body(inner);
    const auto t1 = std::chrono::steady_clock::now();
    per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / inner);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}
