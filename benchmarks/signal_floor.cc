// The signal floor (signal_floor.h) on the same 2-thread CPU work as
// overhead_workload: "signal_floor arm" samples both threads at 1 kHz into
// an empty handler, "signal_floor" does not. Their ratio is the floor.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "signal_floor.h"

namespace {

volatile uint64_t g_sink;

void worker(uint64_t rounds, bool arm) {
  if (arm) signal_floor::arm_this_thread();
  uint64_t x = 1;
  for (uint64_t i = 0; i < rounds * 20000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  g_sink = x;
}

}  // namespace

int main(int argc, char** argv) {
  const bool arm = argc > 1 && std::strcmp(argv[1], "arm") == 0;
  const uint64_t rounds = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 90000;
  signal_floor::install_empty_handler();
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) threads.emplace_back(worker, rounds, arm);
  for (auto& t : threads) t.join();
  return 0;
}
