// Randomized sampling periods (sampling/period_jitter.h) on a program whose
// rounds are exactly periodic (tests/fixtures/periodic_rounds): the
// archive's leaf shares match the program's own CPU-time measurement, run
// after run, at 1 kHz with 2 ms rounds and at 100 Hz with 10 ms rounds; each
// thread's samples times the period come to its CPU time. --fixed-period
// turns it off and the archive says so.
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "integration_support.h"
#include "otf2/property_names.h"

namespace hybridprof::integration {
namespace {

constexpr const char* kLeaves[] = {"leaf_five", "leaf_three", "leaf_two"};

// What the program measured: per thread (TID), its CPU time and its CPU time in each leaf.
struct OwnTimes {
  std::map<uint64_t, double> cpu;
  std::map<std::string, double> leaves;  // summed over threads
};
OwnTimes own_times(const std::string& out) {
  OwnTimes t;
  for (const std::string& line : split_lines(out)) {
    std::istringstream in(line);
    std::string word, cpu, five, three, two;
    uint64_t tid = 0;
    double c = 0, f = 0, th = 0, tw = 0;
    if (!(in >> word >> tid >> cpu >> c >> five >> f >> three >> th >> two >> tw) || word != "thread") continue;
    t.cpu[tid] = c;
    t.leaves["leaf_five"] += f;
    t.leaves["leaf_three"] += th;
    t.leaves["leaf_two"] += tw;
  }
  return t;
}

class SamplingPeriods : public IntegrationTest {
 protected:
  // Profiles periodic_rounds (2 threads, `cpu_seconds` of CPU each, rounds
  // of `round_ms`) at `hz`; checks that the archive's share of each leaf is
  // within 3 points of the program's, and each thread's samples within
  // `cpu_tolerance` of its CPU time. Returns the largest share difference.
  double expect_true_shares(int run, uint64_t hz, double cpu_seconds, double round_ms, double cpu_tolerance) {
    const std::string d = scratch / ("run" + std::to_string(run));
    char round[32];
    std::snprintf(round, sizeof round, "%g", round_ms);
    const RunResult r = profile({"-F", std::to_string(hz), "-e", "cpu-clock", "-o", d},
                                {fixture("periodic_rounds"), "2", std::to_string(cpu_seconds), round});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    const OwnTimes own = own_times(r.out);
    EXPECT_EQ(own.cpu.size(), 2u) << r.describe();
    std::string error;
    auto p = load_profile(d, &error);
    if (!p) {
      ADD_FAILURE() << error;
      return 100;
    }
    EXPECT_EQ(p->archive().properties.at(otf2::property::kPeriods).rfind("randomized", 0), 0u);
    double own_total = 0, sampled_total = 0;
    for (const char* leaf : kLeaves) {
      own_total += own.leaves.at(leaf);
      sampled_total += double(p->inclusive_samples(leaf));
    }
    double worst = 0;
    for (const char* leaf : kLeaves) {
      const double own_share = 100 * own.leaves.at(leaf) / own_total;
      const double sampled_share = 100 * double(p->inclusive_samples(leaf)) / sampled_total;
      EXPECT_NEAR(sampled_share, own_share, 3.0) << leaf << " at " << hz << " Hz, run " << run;
      worst = std::max(worst, std::fabs(sampled_share - own_share));
    }
    // Each thread: its samples, a period each, against its own CPU clock.
    const std::map<uint64_t, uint64_t> samples = p->samples_by_location();
    for (const auto& [location, n] : samples) {
      const uint64_t tid = p->thread_property(location, otf2::property::kTid);
      const auto cpu = own.cpu.find(tid);
      if (cpu == own.cpu.end()) continue;  // the main thread, which only joins
      EXPECT_NEAR(double(n) / double(hz), cpu->second, cpu_tolerance * cpu->second)
          << "thread " << tid << ": " << n << " samples at " << hz << " Hz";
    }
    return worst;
  }
};

// Five runs at 1 kHz: the 2 ms round is in step with the default period,
// which sampled the same points of it round after round (fixed periods
// read 46/40/13 for 50/30/20 once).
TEST_F(SamplingPeriods, APeriodicProgramsSharesAreRightInEveryRunAt1kHz) {
  for (int run = 0; run < 5; ++run) expect_true_shares(run, 1000, 1.5, 2, 0.03);
}

TEST_F(SamplingPeriods, APeriodicProgramsSharesAreRightAt100Hz) {
  expect_true_shares(0, 100, 8, 10, 0.05);
}

// A long run: the samples' count times the mean period is the CPU time.
TEST_F(SamplingPeriods, SamplesTimesThePeriodAreTheThreadsCpuTime) {
  expect_true_shares(0, 1000, 5, 2, 0.02);
}

TEST_F(SamplingPeriods, FixedPeriodIsAskedForAndRecorded) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"--fixed-period", "-e", "cpu-clock", "-o", d}, {fixture("periodic_rounds"), "1", "0.2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->archive().properties.at(otf2::property::kPeriods), "fixed");
  const RunResult report = run({report_tool(), d});
  EXPECT_NE(report.out.find("Periods"), std::string::npos) << report.out;
}

}  // namespace
}  // namespace hybridprof::integration
