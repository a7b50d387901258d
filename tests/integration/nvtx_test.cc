// NVTX ranges and marks from a program built with NVTX 3's headers, under
// the launcher (which makes the runtime NVTX's injection library), read
// back from the archive: names, counts per thread, nesting, and samples
// inside a range having it in their calling context.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

#ifdef HP_HAVE_NVTX_FIXTURE

// Per thread: enters of each user region, and the region each was entered
// in ("" at the top).
struct NvtxTrace {
  std::map<uint64_t, std::map<std::string, int>> enters, leaves;
  std::map<std::string, std::map<std::string, int>> parents;  // region -> enclosing region -> count
};

NvtxTrace read_nvtx(const std::string& dir) {
  otf2::ArchiveReader reader(dir);
  const otf2::Archive& a = reader.archive();
  NvtxTrace t;
  std::map<uint64_t, std::vector<std::string>> open;
  reader.read_events([](const otf2::SampleEvent&) {},
                     [&](const otf2::RegionEvent& e) {
                       const otf2::RegionInfo& r = a.regions.at(e.region);
                       if (r.paradigm != otf2::Paradigm::kUser) return;
                       std::vector<std::string>& stack = open[e.location];
                       if (e.enter) {
                         ++t.enters[e.location][r.name];
                         ++t.parents[r.name][stack.empty() ? "" : stack.back()];
                         stack.push_back(r.name);
                         return;
                       }
                       ++t.leaves[e.location][r.name];
                       EXPECT_FALSE(stack.empty() || stack.back() != r.name)
                           << r.name << " left while " << (stack.empty() ? "nothing" : stack.back()) << " is innermost";
                       if (!stack.empty()) stack.pop_back();
                     },
                     [](const otf2::MpiEvent&) {}, [](const otf2::ForkJoinEvent&) {});
  return t;
}

TEST(Nvtx, RangesAndMarksAreUserRegionsOnTheirThreads) {
  constexpr int kRounds = 6;
  TempDir dir;
  const RunResult r =
      profile({"-o", dir / "out", "-F", "2000"}, {fixture("nvtx_ranges"), std::to_string(kRounds), "--check-levels"});
  ASSERT_EQ(r.exit_code, 0) << "a push or pop returned another level than NVTX defines\n" << r.describe();
  const NvtxTrace t = read_nvtx(dir / "out");
  ASSERT_EQ(t.enters.size(), 2u) << "the main thread and the worker";
  // The worker: its pushes, named from a wide string.
  const auto worker = std::find_if(t.enters.begin(), t.enters.end(), [](const auto& e) { return e.second.count("worker"); });
  ASSERT_NE(worker, t.enters.end());
  EXPECT_EQ(worker->second, (std::map<std::string, int>{{"worker", kRounds}}));
  const auto main_thread = worker == t.enters.begin() ? std::next(t.enters.begin()) : t.enters.begin();
  // The main thread: "inside" is left and entered again around the end of
  // "step", which began before it; "handoff" was ended by the worker.
  EXPECT_EQ(main_thread->second, (std::map<std::string, int>{{"outer", kRounds},
                                                             {"inner", kRounds},
                                                             {"tick", kRounds},
                                                             {"io: read batch [loading]", kRounds},
                                                             {"step", kRounds},
                                                             {"inside", 2 * kRounds},
                                                             {"handoff", 1}}));
  for (const auto& [location, enters] : t.enters) EXPECT_EQ(t.leaves.at(location), enters) << "every range ends";
  EXPECT_EQ(t.parents.at("inner"), (std::map<std::string, int>{{"outer", kRounds}}));
  EXPECT_EQ(t.parents.at("outer"), (std::map<std::string, int>{{"", kRounds}}));
  EXPECT_EQ(t.parents.at("inside"), (std::map<std::string, int>{{"step", kRounds}, {"", kRounds}}));

  // Samples in spin_inner have both ranges above them, in order.
  const Profile p(dir / "out");
  uint64_t samples = 0, under = 0;
  for (const otf2::SampleEvent& s : p.samples()) {
    const std::vector<std::string>& path = p.path_names(s.context);
    const auto leaf = std::find(path.begin(), path.end(), "spin_inner");
    if (leaf == path.end()) continue;
    ++samples;
    const auto outer = std::find(path.begin(), leaf, "outer");
    under += outer != leaf && std::find(outer, leaf, "inner") != leaf;
  }
  ASSERT_GT(samples, 0u) << kRounds << " x 30 ms of CPU in spin_inner";
  EXPECT_GE(under, samples * 95 / 100) << under << " of " << samples;

  // The report's user ranges: "inner" nested under "outer", each called
  // once a round. A row: Time%, Total, Calls, Avg, Min, Max (times with
  // their units), two spaces, the range indented by its depth.
  const std::string report = run({report_tool(), dir / "out"}).out;
  std::map<std::string, std::string> calls;  // the range as printed -> its calls
  bool in_section = false;
  for (const std::string& row : split_lines(report)) {
    if (row.rfind("User ranges", 0) == 0) in_section = true;
    if (row.empty()) in_section = false;
    if (!in_section || row.find("%") == std::string::npos || row.find("Time%") != std::string::npos) continue;
    std::istringstream cells(row);
    std::string cell[10];
    for (std::string& c : cell) cells >> c;
    const auto end = cells.tellg();
    if (end < 0 || static_cast<size_t>(end) + 2 > row.size()) continue;
    calls[row.substr(static_cast<size_t>(end) + 2)] = cell[3];
  }
  EXPECT_EQ(calls["outer"], std::to_string(kRounds)) << report;
  EXPECT_EQ(calls["  inner"], std::to_string(kRounds)) << "nested under outer\n" << report;
}

TEST(Nvtx, AnInjectionTheUserNamesIsKept) {
  TempDir dir;
  RunOptions options;
  options.env = {{"NVTX_INJECTION64_PATH", "/nonexistent/libother_tool.so"}};
  const RunResult r = profile({"-o", dir / "out"}, {fixture("nvtx_ranges"), "1"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::vector<std::string> lines = r.err_lines();
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return l.find("NVTX_INJECTION64_PATH names another tool") != std::string::npos; }),
            1)
      << r.err;
  EXPECT_TRUE(read_nvtx(dir / "out").enters.empty()) << "no range is traced";
}

// Switched off (--trace without nvtx), NVTX calls are the no-ops they are
// without a tool; --trace nvtx traces them.
TEST(Nvtx, SwitchedOffNoRangeIsTraced) {
  TempDir dir;
  const RunResult r = profile({"-o", dir / "off", "--trace", "mpi,openmp,cuda"}, {fixture("nvtx_ranges"), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(read_nvtx(dir / "off").enters.empty()) << "no range is traced";
  const RunResult report = run({report_tool(), dir / "off"});
  EXPECT_NE(report.out.find("traced: mpi,openmp,cuda; switched off (--trace): nvtx"), std::string::npos) << report.out;
  const RunResult on = profile({"-o", dir / "on", "--trace", "nvtx"}, {fixture("nvtx_ranges"), "2", "--check-levels"});
  ASSERT_EQ(on.exit_code, 0) << on.describe();
  EXPECT_EQ(read_nvtx(dir / "on").enters.size(), 2u) << "the main thread and the worker";
}

// A traced call's first from a stack through code never seen unwinds it
// with libunwind, which masks signals around each unwind-table lookup: two
// rt_sigprocmask calls a frame, 3,048 for 4,096 first calls at 50 frames.
// The runtime answers those lookups from its loader snapshot, where the
// masks guard nothing, and skips them.
TEST(Nvtx, FirstCallsFromNewStacksMakeNoSystemCalls) {
  const std::string bench = benchmark_program("call_sites_bench");
  if (!file_exists(bench)) GTEST_SKIP() << "call_sites_bench was not built";
  if (!have_program("strace")) GTEST_SKIP() << "strace is not installed";
  TempDir dir;
  // One timed call after the first round: 4,096 first calls at 50 frames,
  // sampling off (-F 1: a sample's unwind is the handler's, masked anyway).
  const RunResult r = run({"strace", "-f", "-c", "-o", dir / "strace", launcher(), "-F", "1", "-o", dir / "out", "--",
                           bench, "1", "1", "50", "4096"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_NE(r.out.find("first_s4096_d50_ns="), std::string::npos) << r.out;
  // What remains is the launcher's, the runtime's start and the finalizer's (8 here).
  EXPECT_LT(strace_count(read_text(dir / "strace"), "rt_sigprocmask"), 100u) << read_text(dir / "strace");
}

// A program that spends most of its time in traced calls (call_sites_bench:
// NVTX push/pop pairs from nine call sites at 10 frames, timing its own
// calls): the share of the timed calls' samples the report gives the
// profiler ([hybridprof]) is the share of their time that profiling added,
// (profiled - plain) / profiled CPU time per call (the mean over
// repetitions, BENCH_THREAD_CPU_TIME), or a little more (why and how much,
// at the checks); 4 kHz for enough samples. The plain time is the lesser
// of the runs just before and just after the profiled one. This VM changes
// speed within seconds (a profiled run at 310-350 ns a call between plain
// ones at 24 ns, where the next profiled run took 180-210: in the slow runs
// the program's own code read 50 ns a call from its samples, the profiler's
// 1.6 times its time in the fast ones): a slow profiled run overstates the
// time added, so a pair of runs that fails the lower check is measured
// again, up to five pairs (here one pair in two read more than 5 points
// low, in slow runs); a profiler that hid its cost fails all five.
// The SampleShare suite runs alone (tests/integration/CMakeLists.txt): it
// compares runs' CPU time.
TEST(SampleShare, OfTheProfilerIsTheTimeItAddedToNvtxCalls) {
  const std::string bench = benchmark_program("call_sites_bench");
  if (!file_exists(bench)) GTEST_SKIP() << "call_sites_bench was not built";
  const std::vector<std::string> program = {bench, "20000", "60", "10", "9"};
  auto ns_per_call = [](const RunResult& r) {
    const size_t at = r.out.find("s9_d10_ns=");
    return at == std::string::npos ? 0.0 : std::stod(r.out.substr(at + 10));
  };
  // CPU time per call, as samples count it: on a busy machine, wall time
  // counts the preemptions of most repetitions, which samples never see.
  RunOptions cpu_time;
  cpu_time.env = {{"BENCH_THREAD_CPU_TIME", "1"}};
  auto plain_ns = [&] {
    const RunResult plain = run(program, cpu_time);
    EXPECT_EQ(plain.exit_code, 0) << plain.describe();
    const double ns = ns_per_call(plain);
    EXPECT_GT(ns, 0.0) << plain.out;
    return ns;
  };
  std::string attempts;
  for (int attempt = 1; attempt <= 5; ++attempt) {
    TempDir dir;
    const double before = plain_ns();
    const RunResult profiled = profile({"-o", dir / "out", "-F", "4000"}, program, cpu_time);
    ASSERT_EQ(profiled.exit_code, 0) << profiled.describe();
    const double p = std::min(before, plain_ns()), q = ns_per_call(profiled);
    ASSERT_FALSE(HasFailure());
    ASSERT_GT(q, p) << profiled.out;
    const RunResult report = run({report_tool(), dir / "out"});
    ASSERT_EQ(report.exit_code, 0) << report.describe();
    ASSERT_NE(report.out.find("Profiler's own time"), std::string::npos) << report.out;
    // The timed calls' samples: those under the benchmark's loop (at_depth),
    // from the report's folded stacks ("root;...;leaf count"). The whole
    // run's share also counts start-up, where the profiler adds little.
    const RunResult folded = run({report_tool(), "--folded", dir / "out"});
    ASSERT_EQ(folded.exit_code, 0) << folded.describe();
    uint64_t timed = 0, ours = 0;
    for (const std::string& line : split_lines(folded.out)) {
      const size_t space = line.rfind(' ');
      if (space == std::string::npos || line.find("at_depth(") == std::string::npos) continue;
      const uint64_t n = std::stoull(line.substr(space + 1));
      const size_t leaf = line.rfind(';', space) + 1;
      timed += n;
      if (line.compare(leaf, space - leaf, "[hybridprof]") == 0) ours += n;
    }
    ASSERT_GT(timed, 100u) << "too few samples in the timed calls\n" << folded.out.substr(0, 4000);
    const double share = 100.0 * double(ours) / double(timed), added = 100.0 * (q - p) / q;
    char figures[200];
    std::snprintf(figures, sizeof figures,
                  "pair %d: [hybridprof] %.1f%% of the timed calls' samples (%llu of %llu); time added %.1f%% (plain "
                  "%.1f ns a call, profiled %.1f ns)\n",
                  attempt, share, static_cast<unsigned long long>(ours), static_cast<unsigned long long>(timed), added,
                  p, q);
    std::printf("%s", figures);
    attempts += figures;
    // Not equal, by the CPU's nature: the program's code between traced
    // calls draws fewer samples than its time alone predicts (~19 ns a call
    // alone, 5-7 ns of samples between traced calls; perf record agrees: 7%
    // of a profiled run's samples in the program where its plain time
    // predicts 10%): 10-14 ns of its cost overlap with the profiler's code,
    // whatever the traced call costs, so the share reads 1-10 points above
    // the time added, the more the faster the traced call. Hence: the
    // profiler's cost is not shown as another's (libc, the kernel, the
    // program): the share is at least the time added, less 5 points (issue
    // 32's tolerance); and the program's code keeps its samples, at least
    // a tenth of what its plain time predicts (a third here), where a
    // sampler that charged them to [hybridprof] would leave none.
    if (share < added - 5.0) continue;
    EXPECT_GE(double(timed - ours), 0.1 * double(timed) * p / q) << figures;
    return;
  }
  ADD_FAILURE() << "in every pair of runs the profiler's share of samples was more than 5 points below the time it "
                   "added:\n"
                << attempts;
}

#endif

}  // namespace
}  // namespace hybridprof::integration
