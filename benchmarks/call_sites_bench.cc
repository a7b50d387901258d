// What a traced call costs as a real program makes it: from many call
// sites in turn, at varied stack depths. Each traced call here is an NVTX
// push/pop pair (an adapter's enter and leave with its calling context,
// the path every adapter's calls take) or, built with
// CALL_SITES_OPENMP (call_sites_openmp_bench), a one-thread OpenMP
// parallel region (GCC's GOMP_parallel, intercepted), or, built with
// CALL_SITES_MPI (call_sites_mpi_bench, one process: MPI's singleton), an
// MPI_Allreduce of one int on MPI_COMM_SELF, made from SITES distinct call
// paths (three levels of 16 functions: up to 4,096 stacks, each its own)
// at DEPTH frames, the sites called in turn. For each (sites, depth):
//   - steady state: after one round over every site, `outer` timed
//     repetitions of `inner` calls; the median repetition's time per call;
//   - first calls: the first round's time per call (each stack new, through
//     code already seen: a warm-up first calls each path function at each
//     level, along the 16 paths k-k-k, at the same depth; the one or few
//     of those among the sites are not new), where sites >= 64.
// Prints "s<SITES>_d<DEPTH>_ns=... first_s<SITES>_d<DEPTH>_ns=..." on one
// line, for benchmarks/call_sites.sh, which runs it plain and profiled.
//
// With BENCH_ALTERNATE_WINDOWS=1, under hybridprof, the timed repetitions
// alternate between the capture window closed and open (the control API's
// hybridprof_stop and hybridprof_start): "s<SITES>_d<DEPTH>_closed_ns=..."
// is then the calls' time with the window closed, where traced calls pass
// straight through and nothing samples, beside the figure with it open,
// from the same process at the same machine speed.
//
//   call_sites_bench [INNER=20000] [OUTER=11] [DEPTH] [SITES]   (one shape only, when given)
#if defined(CALL_SITES_OPENMP)
#include <omp.h>
#elif defined(CALL_SITES_MPI)
#include <mpi.h>
#else
#include <nvtx3/nvToolsExt.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "hybridprof/control.h"
#include "median_time.h"

namespace {

volatile int g_sink;

// The traced call, at the end of a path.
__attribute__((noinline)) void traced_call() {
#if defined(CALL_SITES_OPENMP)
#pragma omp parallel num_threads(1)
  g_sink = g_sink + 1;
#elif defined(CALL_SITES_MPI)
  int mine = 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  g_sink = g_sink + sum;
#else
  nvtxRangePushA("site");
  nvtxRangePop();
#endif
  g_sink = g_sink + 1;
}

void dispatch(const int* digits, int level);
// One of 16 functions per level: the path's return addresses tell the sites apart.
template <int K>
__attribute__((noinline)) void via(const int* digits, int level) {
  if (level == 3)
    traced_call();
  else
    dispatch(digits, level + 1);
  g_sink = g_sink + K;
}
template <int... K>
__attribute__((noinline)) void dispatch_to(int k, const int* digits, int level, std::integer_sequence<int, K...>) {
  ((k == K ? via<K>(digits, level) : void()), ...);
}
__attribute__((noinline)) void dispatch(const int* digits, int level) {
  dispatch_to(digits[level] & 15, digits, level, std::make_integer_sequence<int, 16>{});
  g_sink = g_sink + 1;
}

// `depth` frames of recursion, then site `n`'s path.
__attribute__((noinline)) void at_depth(int depth, int n) {
  if (depth > 0) {
    at_depth(depth - 1, n);
  } else {
    const int digits[4] = {0, n >> 8 & 15, n >> 4 & 15, n & 15};
    dispatch(digits, 1);
  }
  g_sink = g_sink + 1;
}

// The path itself is about 10 frames (main, the loop, dispatch and via at
// three levels, traced_call): recursion makes up the rest of `depth`.
constexpr int kPathFrames = 10;

}  // namespace

int main(int argc, char** argv) {
  const int inner = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int outer = argc > 2 ? std::atoi(argv[2]) : 11;
  if (inner < 1 || outer < 1) {
    std::fprintf(stderr, "usage: call_sites_bench [INNER>=1] [OUTER>=1]\n");
    return 2;
  }
#if defined(CALL_SITES_MPI)
  MPI_Init(&argc, &argv);
#elif !defined(CALL_SITES_OPENMP)
  nvtxRangePushA("warm-up");  // NVTX loads its injection at the first call
  nvtxRangePop();
#endif
  std::string line;
  char figure[96];
  const char* alternate_env = std::getenv("BENCH_ALTERNATE_WINDOWS");
  const bool alternate = alternate_env != nullptr && std::string(alternate_env) == "1";
  if (alternate && hybridprof_recording() == 0) {
    std::fprintf(stderr, "call_sites_bench: BENCH_ALTERNATE_WINDOWS=1 needs hybridprof, recording\n");
    return 2;
  }
  const int only_depth = argc > 3 ? std::atoi(argv[3]) : 0, only_sites = argc > 4 ? std::atoi(argv[4]) : 0;
  for (const int depth : {10, 50, 200}) {
    if (only_depth && depth != only_depth) continue;
    const int recursion = depth > kPathFrames ? depth - kPathFrames : 0;
    for (const int sites : {1, 8, 9, 64, 4096}) {
      if (only_sites && sites != only_sites) continue;
      // Spread over the 4,096 paths, so that every level varies.
      const int stride = 4096 / sites;
      // One loop for the first round and the timed ones: the same stacks.
      int next = 0;
      const auto calls_in_turn = [&](int calls) {
        for (int i = 0; i < calls; ++i) {
          at_depth(recursion, next * stride);
          if (++next == sites) next = 0;
        }
      };
      for (int k = 0; k < 16; ++k) at_depth(recursion, k * 0x111);
      const auto t0 = std::chrono::steady_clock::now();
      calls_in_turn(sites);
      const double first = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / sites;
      if (alternate) {
        const auto [closed, open] = alternating_ns_per_call(inner, outer, hybridprof_stop, hybridprof_start, calls_in_turn);
        std::snprintf(figure, sizeof figure, "s%d_d%d_ns=%.1f s%d_d%d_closed_ns=%.1f ", sites, depth, open, sites, depth,
                      closed);
      } else {
        std::snprintf(figure, sizeof figure, "s%d_d%d_ns=%.1f ", sites, depth,
                      median_ns_per_call(inner, outer, calls_in_turn));
      }
      line += figure;
      if (sites >= 64) {
        std::snprintf(figure, sizeof figure, "first_s%d_d%d_ns=%.1f ", sites, depth, first);
        line += figure;
      }
    }
  }
  line.pop_back();
  std::printf("%s\n", line.c_str());
#if defined(CALL_SITES_MPI)
  MPI_Finalize();
#endif
  return 0;
}
