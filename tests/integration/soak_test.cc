// The soak test: a long run at 5 kHz on 2 threads, whose resident memory
// must stay flat. Minutes long, so not in the default suite; run it with
//
//   build/bin/integration_test --gtest_also_run_disabled_tests --gtest_filter='Soak.*'
//
// (HYBRIDPROF_SOAK_SECONDS: CPU seconds per thread, default 240).
//
// The program (split_workload) goes through the same stacks all along, so
// nothing the runtime keeps may grow: the calling-context tree and names
// grow only with distinct stacks, rings and chunks are fixed. The resident
// set is read every 0.5 s; its peak over the last third of the run may
// pass its peak over the second third (after the start's growth) by no
// more than a little allocator slack.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

// VmRSS of `pid` in KiB; 0 once it is gone.
uint64_t resident_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  return 0;
}

// The launcher's child: the profiled program.
pid_t child_of(pid_t parent) {
  std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
  pid_t child = -1;
  in >> child;
  return child;
}

TEST(Soak, DISABLED_ResidentMemoryStaysFlatOverALongRunAt5kHz) {
  const char* env = std::getenv("HYBRIDPROF_SOAK_SECONDS");
  const double seconds = env ? std::atof(env) : 240;
  ASSERT_GE(seconds, 30) << "too short to tell growth from start-up";
  TempDir dir;
  RunOptions options;
  options.timeout_seconds = seconds * 4 + 120;
  Process launcher({integration::launcher(), "-F", "5000", "-o", dir / "D", "--", fixture("split_workload"), "2",
                    std::to_string(seconds)},
                   options);
  pid_t program = -1;
  for (int i = 0; i < 200 && program <= 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    program = child_of(launcher.pid());
  }
  ASSERT_GT(program, 0) << "the launcher started no program";
  std::vector<std::pair<double, uint64_t>> readings;  // (CPU seconds of the program, KiB)
  for (uint64_t kib; (kib = resident_kib(program)) != 0;) {
    readings.emplace_back(process_cpu_seconds(program), kib);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const RunResult r = launcher.finish();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_GE(readings.size(), 30u) << r.describe();

  // By the program's CPU time (2 threads): thirds of the work, not of the wall time.
  const double total = readings.back().first;
  uint64_t second_third = 0, last_third = 0;
  for (const auto& [cpu, kib] : readings) {
    if (cpu >= total / 3 && cpu < 2 * total / 3) second_third = std::max(second_third, kib);
    if (cpu >= 2 * total / 3) last_third = std::max(last_third, kib);
  }
  std::ostringstream trace;
  for (size_t i = 0; i < readings.size(); i += readings.size() / 20 + 1)
    trace << readings[i].first << " s CPU: " << readings[i].second << " KiB\n";
  ASSERT_GT(second_third, 0u) << trace.str();
  EXPECT_LE(last_third, second_third + 1024) << "resident memory grew over the run:\n" << trace.str();
  std::fprintf(stderr, "soak: %zu readings over %.0f s of CPU; peak %llu KiB (second third), %llu KiB (last third)\n",
               readings.size(), total, (unsigned long long)second_third, (unsigned long long)last_third);

  std::string error;
  auto p = load_profile(dir / "D", &error);
  ASSERT_TRUE(p) << error;
  // The run's 5:3:2 split holds to the end: nothing was dropped on the way.
  const double fifty = double(p->self_samples("leaf_fifty")), twenty = double(p->self_samples("leaf_twenty"));
  EXPECT_NEAR(fifty / twenty, 2.5, 0.5);
}

}  // namespace
}  // namespace hybridprof::integration
