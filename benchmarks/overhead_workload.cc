// The overhead benchmark's program: 2 threads of fixed CPU work (not fixed
// time, so a slower run shows as a longer wall time) under ~30-frame stacks.
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

volatile uint64_t g_sink;

__attribute__((noinline)) uint64_t kernel(uint64_t n, uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

__attribute__((noinline)) uint64_t frame(int depth, uint64_t n, uint64_t seed) {
  if (depth == 0) return kernel(n, seed);
  const uint64_t r = frame(depth - 1, n, seed + 1);
  return r ^ uint64_t(depth);  // not a tail call: every level stays on the stack
}

void worker(uint64_t rounds) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i < rounds; ++i) acc += frame(28, 20000, i);
  g_sink = acc;
}

}  // namespace

int main(int argc, char** argv) {
  // Rounds per thread: about 45000 per second on a 2-core reference VM.
  const uint64_t rounds = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 90000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) threads.emplace_back(worker, rounds);
  for (auto& t : threads) t.join();
  return 0;
}
