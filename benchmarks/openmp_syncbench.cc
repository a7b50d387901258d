// An EPCC-syncbench-style loop (J. M. Bull's OpenMP microbenchmarks): the
// time per construct of empty parallel regions, barriers and critical
// sections, on the threads OMP_NUM_THREADS gives. For each construct,
// `outer` timed repetitions of `inner` constructs each; prints the median
// repetition's time per construct:
//   parallel_ns=... barrier_ns=... critical_ns=...
// Built by GCC (libgomp) and, where clang and libomp are found, by clang
// (libomp): benchmarks/openmp_overhead.sh runs both, plain and profiled.
//
//   openmp_syncbench [INNER=2000] [OUTER=21]
#include <omp.h>

#include <cstdio>
#include <cstdlib>

#include "median_time.h"

namespace {

// A little work inside each construct, as EPCC's delay(0) keeps the
// compiler from removing an empty body.
__attribute__((noinline)) void delay(volatile int* sink) { *sink = *sink + 1; }

}  // namespace

int main(int argc, char** argv) {
  const int inner = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int outer = argc > 2 ? std::atoi(argv[2]) : 21;
  if (inner < 1 || outer < 1) {
    std::fprintf(stderr, "usage: openmp_syncbench [INNER>=1] [OUTER>=1]\n");
    return 2;
  }
  volatile int sink = 0;
  // The team exists before the first timed region, as in EPCC.
#pragma omp parallel
  delay(&sink);
  const double parallel = median_ns_per_call(inner, outer, [&](int n) {
    for (int j = 0; j < n; ++j) {
#pragma omp parallel
      delay(&sink);
    }
  });
  const double barrier = median_ns_per_call(inner, outer, [&](int n) {
#pragma omp parallel
    for (int j = 0; j < n; ++j) {
      delay(&sink);
#pragma omp barrier
    }
  });
  const double critical = median_ns_per_call(inner, outer, [&](int n) {
#pragma omp parallel
    for (int j = 0; j < n / omp_get_num_threads(); ++j) {
#pragma omp critical
      delay(&sink);
    }
  });
  std::printf("threads=%d parallel_ns=%.1f barrier_ns=%.1f critical_ns=%.1f\n", omp_get_max_threads(), parallel,
              barrier, critical);
  return 0;
}
