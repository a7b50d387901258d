// Event selection: `cycles` falls back to cpu-clock on machines without a
// PMU (with a notice), and HYBRIDPROF_FORCE_TIMER=1 samples with POSIX
// timers instead of perf_event. Either way the profile is right.
#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "integration_support.h"
#include "otf2/property_names.h"

namespace hybridprof::integration {
namespace {

class Events : public IntegrationTest {};

TEST_F(Events, CyclesFallsBackToCpuClockWithANotice) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-e", "cycles", "-o", d}, {fixture("split_workload"), "1", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  const auto& props = p->archive().properties;
  ASSERT_TRUE(props.count("HYBRIDPROF::EVENT")) << "no HYBRIDPROF::EVENT property";
  const std::string event = props.at("HYBRIDPROF::EVENT");
  if (event != "cycles") {
    EXPECT_EQ(event, "cpu-clock");
    const auto lines = r.err_lines();
    const bool noticed = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
      return l.rfind("hybridprof:", 0) == 0 && l.find("cpu-clock") != std::string::npos;
    });
    EXPECT_TRUE(noticed) << "no notice about the fallback to cpu-clock:\n" << r.describe();
  }
  // 0.5 s of CPU at 1 kHz: ~500 samples, about half in leaf_fifty.
  EXPECT_GE(p->samples_property_total(), 200u);
  EXPECT_GE(p->self_samples("leaf_fifty"), 100u);
}

TEST_F(Events, ForcedPosixTimers) {
  const std::string d = scratch / "D";
  RunOptions options;
  options.env["HYBRIDPROF_FORCE_TIMER"] = "1";
  // 3 s of CPU: POSIX CPU timers fire on scheduler ticks (4 ms here), each
  // signal weighted by the periods it covers, so this is ~750 signals alone
  // and as few as ~270 beside three busy loops (the fixture reads its CPU
  // clock every ~15 us, and a loaded machine then runs it between ticks:
  // 133 signals in 1.5 s, which ordered 30% and 20% wrongly 2 runs in 6).
  const RunResult r = profile({"-o", d}, {fixture("split_workload"), "1", "3"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  const auto& props = p->archive().properties;
  ASSERT_TRUE(props.count("HYBRIDPROF::MECHANISM"));
  EXPECT_EQ(props.at("HYBRIDPROF::MECHANISM"), "posix-timer");
  EXPECT_GE(p->samples_property_total(), 200u);
  const uint64_t fifty = p->self_samples("leaf_fifty"), thirty = p->self_samples("leaf_thirty"),
                 twenty = p->self_samples("leaf_twenty");
  EXPECT_GT(fifty, thirty);
  EXPECT_GT(thirty, twenty);
  EXPECT_GT(twenty, 0u);
}

// --timer asks for what HYBRIDPROF_FORCE_TIMER=1 does, from the command
// line: POSIX CPU-time timers, which cost a thread nothing when it is
// switched out (a perf event costs every switch: an oversubscribed MPI job
// that yields lost a third of its speed to it).
TEST_F(Events, TheTimerOptionSamplesWithPosixTimers) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"--timer", "-o", d}, {fixture("split_workload"), "2", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  ASSERT_TRUE(p->archive().properties.count("HYBRIDPROF::MECHANISM"));
  EXPECT_EQ(p->archive().properties.at("HYBRIDPROF::MECHANISM"), "posix-timer");
  EXPECT_GT(p->self_samples("leaf_fifty"), p->self_samples("leaf_twenty"));
  const RunResult help = run({launcher(), "--help"});
  EXPECT_NE(help.out.find("--timer"), std::string::npos) << help.describe();
}

// Threads that switch themselves out tens of thousands of times a second
// (MPI ranks on an oversubscribed node, yielding to each other on one core
// or blocking in their waits) leave their perf events (which cost every
// switch) for CPU-time timers, said in a notice, and go on being sampled.
// A thread that never waits keeps its perf event however busy the machine:
// the kernel-time tests see [kernel] frames, which only a perf event gives.
TEST_F(Events, ThreadsSwitchingThemselvesOutAreSampledByTimers) {
  // At a low rate too: 20 Hz gives ping and pong ~10 signals each in 0.5 s
  // of their CPU (checked at every 8th signal, they kept their perf events).
  for (const auto& [how, rate, seconds] : {std::tuple{"yield", "1000", "0.3"}, {"block", "1000", "0.3"},
                                           {"yield", "20", "0.5"}}) {
    const std::string d = scratch / (std::string(how) + rate);
    const RunResult r = profile({"-F", rate, "-o", d}, {fixture("yielding_threads"), seconds, how});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    std::string error;
    auto p = load_profile(d, &error);
    ASSERT_TRUE(p) << error;
    EXPECT_EQ(p->archive().properties.at("HYBRIDPROF::MECHANISM"), "perf_event");
    const std::string notices = p->notices();
    const size_t at = notices.find(" threads switched from perf events to CPU-time timers");
    ASSERT_NE(at, std::string::npos) << how << " at " << rate << " Hz:\n" << notices;
    const size_t line = notices.rfind('\n', at);
    EXPECT_EQ(std::atoi(notices.c_str() + (line == std::string::npos ? 0 : line + 1)), 2)
        << how << ": ping and pong, not steady nor the main thread:\n" << notices;
    const bool low_rate = std::string(rate) == "20";
    if (!low_rate) {
      EXPECT_GT(p->self_samples("ping_work"), 0u) << how;
    }
    // steady: its SECONDS of CPU at the rate (300 at 1 kHz, 10 at 20 Hz).
    EXPECT_GT(p->self_samples("steady_work"), low_rate ? 3u : 100u) << how << " at " << rate << " Hz";
  }
}

// Each thread's archive entry says what its sample signals cost it: how
// many the handler took and the time it spent on them; the report gives the
// mean. Each signal is a sample recorded, deferred into one, or dropped.
TEST_F(Events, TheSampleHandlersCostIsCountedPerThread) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("split_workload"), "2", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  const double run_ns = 1e9 * double(p->archive().clock.trace_length) / double(p->archive().clock.resolution);
  int sampled_threads = 0;
  for (const auto& [location, thread] : p->archive().threads) {
    const auto count = [&](const char* property) {
      const auto it = thread.properties.find(property);
      return it == thread.properties.end() ? uint64_t{0} : it->second;
    };
    const uint64_t samples = count(otf2::property::kSamples), signals = count(otf2::property::kSampleSignals);
    const uint64_t handler_ns = count(otf2::property::kSampleHandlerNs);
    EXPECT_LE(signals, samples + count(otf2::property::kDropped)) << "thread " << thread.name;
    EXPECT_GE(signals * 2, samples) << "thread " << thread.name << ": a perf event's signal is one period";
    if (samples < 100) continue;
    ++sampled_threads;
    EXPECT_GT(handler_ns, 0u) << "thread " << thread.name;
    EXPECT_LT(double(handler_ns), run_ns) << "thread " << thread.name << ": more time in the handler than the run took";
  }
  EXPECT_EQ(sampled_threads, 2) << "the two workers";
  const RunResult report = run({report_tool(), d});
  ASSERT_EQ(report.exit_code, 0) << report.describe();
  EXPECT_NE(report.out.find(" us a sample (mean of "), std::string::npos) << report.out;
}

}  // namespace
}  // namespace hybridprof::integration
