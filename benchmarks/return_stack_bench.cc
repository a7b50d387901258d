// return_stack_bench [DEPTH=190] [ROUNDS=20000]: what one more call level
// under a deep caller costs it. A recursion DEPTH frames deep calls, at its
// bottom, a chain of K nested calls (K = 0, 2, ..., 48), then returns all
// the way; printed: ns per round for each K, the least of 30 interleaved
// repetitions.
//
// Why it matters to a profiler: a traced call (an MPI wrapper, an NVTX
// push, an OpenMP construct) runs under the program's stack, and each call
// level it goes down overwrites an entry of the CPU's return stack buffer.
// Where that buffer wraps without a fallback predictor (AMD Zen: 32
// entries), the program's recursion, returning, then mispredicts each
// overwritten entry once per 32 frames. On the reference VM (AMD EPYC),
// under 190 frames each level costs ~32 ns (K=0 346 ns, K=8 603, K=16 860);
// under 10 frames nothing until the chain passes the buffer's size. So the
// runtime inlines what a traced call runs (trace/traced_region.h).
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

volatile long g_sink;

template <int K>
__attribute__((noinline)) void chain() {
  if constexpr (K > 0) chain<K - 1>();
  g_sink = g_sink + 1;
}

using Chain = void (*)();
constexpr Chain kChains[] = {chain<0>, chain<2>, chain<4>, chain<8>, chain<12>, chain<16>, chain<24>, chain<32>, chain<48>};
constexpr int kLevels[] = {0, 2, 4, 8, 12, 16, 24, 32, 48};
constexpr int kKinds = sizeof kLevels / sizeof kLevels[0];

__attribute__((noinline)) void recurse(int depth, Chain bottom) {
  if (depth > 0)
    recurse(depth - 1, bottom);
  else
    bottom();
  g_sink = g_sink + 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int depth = argc > 1 ? std::atoi(argv[1]) : 190, rounds = argc > 2 ? std::atoi(argv[2]) : 20000;
  if (depth < 0 || rounds < 1) {
    std::fprintf(stderr, "usage: return_stack_bench [DEPTH>=0] [ROUNDS>=1]\n");
    return 2;
  }
  double best[kKinds];
  for (double& b : best) b = 1e300;
  for (int repetition = 0; repetition < 30; ++repetition) {
    for (int k = 0; k < kKinds; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < rounds; ++r) recurse(depth, kChains[k]);
      const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / rounds;
      if (ns < best[k]) best[k] = ns;
    }
  }
  for (int k = 0; k < kKinds; ++k)
    std::printf("depth %d, %2d call levels below: %7.1f ns a round (+%.1f)\n", depth, kLevels[k], best[k],
                best[k] - best[0]);
  return 0;
}
