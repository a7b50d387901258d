// The fault matrix: the fault_cases fixture ending, crashing or misbehaving
// in each way under the launcher. The flush interval is set past the run's
// length, so that everything recorded reaches disk only through the path
// taken at the end: the program's exit status or signal must be kept, the
// archive must open, and the samples of the program's last 0.3 s of CPU
// before the end must be there, at least as many as those of the 0.2 s
// before them (a share, not a count: it holds on a loaded machine).
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

struct FaultCase {
  const char* mode;
  int exit_code;           // or 128 + signal
  const char* exit_status;  // the archive's EXIT_STATUS of the process
  const char* out = "";     // what the program prints itself
};

std::string test_name(const ::testing::TestParamInfo<FaultCase>& info) {
  std::string name;
  for (const char* c = info.param.mode; *c; ++c) name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
  return name;
}

class Faults : public IntegrationTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(Faults, TheProgramEndsItsOwnWayAndTheProfileIsWhole) {
  const FaultCase& c = GetParam();
  const std::string d = scratch / "D";
  RunOptions options;
  options.env["HYBRIDPROF_FLUSH_MS"] = "60000";
  const RunResult r = profile({"-o", d}, {fixture("fault_cases"), c.mode}, options);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.describe();
  EXPECT_EQ(r.out, c.out) << r.describe();
  EXPECT_EQ(r.err.find("without a final flush"), std::string::npos) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error << "\n" << r.describe();
  const uint64_t first = p->self_samples("first_work"), last = p->self_samples("last_work");
  EXPECT_GT(first, 0u) << r.describe();
  EXPECT_GE(last, first) << "0.3 s of CPU in last_work, 0.2 s in first_work\n" << r.describe();
  ASSERT_EQ(p->archive().processes.size(), 1u);
  EXPECT_EQ(p->archive().processes.begin()->second.properties.at("EXIT_STATUS"), c.exit_status);
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, Faults,
    ::testing::Values(FaultCase{"normal", 0, "exit 0"},
                      FaultCase{"segv", 128 + SIGSEGV, "signal 11"},
                      FaultCase{"bus", 128 + SIGBUS, "signal 7"},
                      FaultCase{"fpe", 128 + SIGFPE, "signal 8"},
                      FaultCase{"ill", 128 + SIGILL, "signal 4"},
                      FaultCase{"abort", 128 + SIGABRT, "signal 6"},
                      FaultCase{"assert", 128 + SIGABRT, "signal 6"},
                      FaultCase{"throw", 128 + SIGABRT, "signal 6"},
                      FaultCase{"exit-thread", 5, "exit 5"},
                      FaultCase{"_exit-thread", 5, "exit 5"},
                      FaultCase{"kill:TERM", 128 + SIGTERM, "signal 15"},
                      FaultCase{"kill:INT", 128 + SIGINT, "signal 2"},
                      FaultCase{"kill:HUP", 128 + SIGHUP, "signal 1"},
                      FaultCase{"kill:USR1", 128 + SIGUSR1, "signal 10"},
                      FaultCase{"kill:USR2", 128 + SIGUSR2, "signal 12"},
                      // The program's handlers run in the order it chained them.
                      FaultCase{"chain", 128 + SIGSEGV, "signal 11", "second\nfirst\n"},
                      // Its own files stay its own (the fixture checks them).
                      FaultCase{"closefrom", 0, "exit 0"},
                      FaultCase{"dup2-over", 0, "exit 0"},
                      // A thread near the end of its stack while sampled.
                      FaultCase{"full-stack", 0, "exit 0"}),
    test_name);

// Threads on PTHREAD_STACK_MIN stacks are sampled like any other: the
// runtime's start on them (libunwind's set-up needs more stack than they
// have) runs on its own signal stack. Five runs: every one of the 4 threads
// has samples, whole ones, and none crashes.
class TinyStacks : public IntegrationTest {};

TEST_F(TinyStacks, ThreadsOnTheSmallestStacksAreSampled) {
  for (const char* mode : {"tiny-stacks", "tiny-stacks", "tiny-stacks", "tiny-stacks", "tiny-stacks", "tiny-stacks:32"}) {
    const std::string d = scratch / "D";
    std::filesystem::remove_all(d);
    const RunResult r = profile({"-o", d}, {fixture("fault_cases"), mode});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    std::string error;
    auto p = load_profile(d, &error);
    ASSERT_TRUE(p) << error;
    EXPECT_EQ(p->archive().threads.size(), 5u) << mode;
    EXPECT_EQ(p->notices().find("not sampled"), std::string::npos) << p->notices();
    // Threads whose samples reach their start routine (whole stacks).
    size_t sampled_threads = 0;
    for (const auto& [location, n] : p->samples_by_location()) {
      uint64_t whole = 0;
      for (const otf2::SampleEvent& e : p->samples())
        if (e.location == location) {
          const auto& names = p->path_names(e.context);
          whole += std::find(names.begin(), names.end(), "tiny_thread") != names.end();
        }
      if (whole > 0) ++sampled_threads;
    }
    EXPECT_EQ(sampled_threads, 4u) << mode << ": threads with samples in tiny_thread";
  }
}

// A program near its limit on descriptors: every number below 512 stays
// the program's (the profiler keeps its own above), and threads whose perf
// event finds no number left there are sampled by CPU-time timers, said
// once in the archive.
TEST(Descriptors, TheProgramKeepsEveryNumberBelow512WhenThreadsTakeTheRest) {
  TempDir dir;
  const std::string d = dir / "D";
  const RunResult r = run({"bash", "-c", "ulimit -n 640 && exec \"$0\" \"$@\"", launcher(), "-o", d, "--",
                           fixture("fault_cases"), "fd-headroom"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  const std::string notices = p->notices();
  EXPECT_NE(notices.find("threads were sampled by CPU-time timers"), std::string::npos) << notices;
  EXPECT_EQ(p->archive().threads.size(), 201u);
}

}  // namespace
}  // namespace hybridprof::integration
