// Stacks that stay whole: code generated at run time (no unwind tables, no
// frame pointer chain) is unwound past by a stack scan and named from the
// program's perf map; CPU time in the kernel is sampled and charged to the
// user stack that entered it.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

class NativeStacks : public IntegrationTest {};

bool on_path(const std::vector<std::string>& path, const std::string& name) {
  return std::find(path.begin(), path.end(), name) != path.end();
}

uint64_t sum_thread_property(const Profile& p, const std::string& name) {
  uint64_t n = 0;
  for (const auto& [location, thread] : p.archive().threads) n += p.thread_property(location, name);
  return n;
}

// jit_workload: samples in the generated code and in the C function it
// calls back both unwind to main, the code is named from the perf map,
// and the archive counts the recovered unwinds.
TEST_F(NativeStacks, JitCodeAndItsCalleeUnwindToMain) {
  const std::string dir = scratch / "J";
  const RunResult r = profile({"-o", dir}, {fixture("jit_workload"), "1"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_NE(r.out.find("jit ok"), std::string::npos);
  Profile p(dir);
  uint64_t in_jit = 0, in_callback = 0, whole = 0;
  std::string short_example;  // the first path that does not reach main
  uint64_t wrong_main_caller = 0;
  std::string wrong_caller_example;
  for (const auto& s : p.samples()) {
    const std::vector<std::string>& path = p.path_names(s.context);
    const std::string& leaf = p.leaf_name(s.context);
    if (leaf == "jit_spin_kernel") {
      ++in_jit;
      const otf2::RegionInfo* region = p.leaf_region(s.context);
      ASSERT_NE(region, nullptr);
    } else if (leaf == "burn_in_callback") {
      ++in_callback;
      ASSERT_GE(path.size(), 2u);
      EXPECT_EQ(path[path.size() - 2], "jit_spin_kernel") << "the callback's caller is the generated code";
    } else {
      continue;
    }
    const bool reaches_main = on_path(path, "main") && on_path(path, "run_jit_work") && path.front() == "_start";
    whole += reaches_main;
    if (!reaches_main && short_example.empty())
      for (const std::string& frame : path) short_example += frame + ";";
    // main's caller is the C library's start, as in any other sample: no
    // frame taken from a stale return address between them (a recovered
    // caller continued from the generated code's garbage rbp once read
    // "__libc_start_call_main;__on_exit;main").
    const auto at_main = std::find(path.begin(), path.end(), "main");
    if (at_main != path.begin() && at_main != path.end() && *(at_main - 1) != "__libc_start_call_main" &&
        *(at_main - 1) != "__libc_start_main") {
      ++wrong_main_caller;
      if (wrong_caller_example.empty())
        for (const std::string& frame : path) wrong_caller_example += frame + ";";
    }
  }
  const uint64_t total = p.samples().size();
  ASSERT_GT(total, 0u);
  // The program splits its time between the two: both are sampled, and
  // together they are nearly all of it.
  EXPECT_GT(in_jit, total / 5) << "generated code named from the perf map";
  EXPECT_GT(in_callback, total / 5);
  EXPECT_GE(in_jit + in_callback, total * 9 / 10);
  // Each unwinds to main through run_jit_work, but for two in a thousand
  // at most: the generated code has no unwind tables, so its caller is
  // found by scanning the stack, which once took main's return address
  // for the nearest (998 samples, one "main;jit_spin_kernel", on a loaded
  // machine).
  EXPECT_LE((in_jit + in_callback - whole) * 500, in_jit + in_callback)
      << "samples under the generated code that stop short, as " << short_example;
  EXPECT_LE(wrong_main_caller * 500, in_jit + in_callback) << "main called from elsewhere, as " << wrong_caller_example;
  EXPECT_LE(sum_thread_property(p, "UNWIND_FAILURES") * 50, total) << "at most 2% incomplete";
  EXPECT_GE(sum_thread_property(p, "UNWIND_RECOVERED"), (in_jit + in_callback) * 9 / 10)
      << "samples under the generated code needed a stack scan, and the archive says so";
  // The report's run summary says how many.
  const RunResult report = run({report_tool(), dir});
  EXPECT_NE(report.out.find("Recovered unwinds"), std::string::npos) << report.out;
}

// The same code under 151 frames of recursion (an interpreter's depth):
// every sample under it has them all, whether its callers were found by a
// scan and a step-by-step walk to main, or recalled (the thread's last
// recovery, proved still in place slot by slot: RecoveredCallers).
TEST_F(NativeStacks, JitCodeUnderADeepCallerUnwindsWhole) {
  const std::string dir = scratch / "J";
  const RunResult r = profile({"-o", dir}, {fixture("jit_workload"), "1", "150"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  Profile p(dir);
  uint64_t under_jit = 0, whole = 0;
  std::string example;
  for (const auto& s : p.samples()) {
    const std::vector<std::string>& path = p.path_names(s.context);
    if (!on_path(path, "jit_spin_kernel")) continue;
    ++under_jit;
    const auto nested = std::count(path.begin(), path.end(), "nest_deeper");
    const bool ok = nested == 151 && path.front() == "_start" && on_path(path, "run_jit_work");
    whole += ok;
    if (!ok && example.empty())
      example = std::to_string(nested) + " nest_deeper frames, from " + path.front();
  }
  ASSERT_GT(under_jit, p.samples().size() / 2);
  EXPECT_LE((under_jit - whole) * 500, under_jit) << "samples under the generated code cut short, as " << example;
}

// kernel_workload: samples cover user plus system CPU time, and the kernel
// time (a [kernel] leaf) sits under the function that made it.
TEST_F(NativeStacks, KernelTimeIsSampledUnderTheFunctionThatEnteredTheKernel) {
  const std::string dir = scratch / "K";
  const RunResult r = profile({"-F", "1000", "-o", dir}, {fixture("kernel_workload"), "0.4", "1.2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  double user = 0, sys = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "user %lf sys %lf", &user, &sys), 2) << r.out;
  Profile p(dir);
  const std::string kernel_time = p.archive().properties.count("HYBRIDPROF::KERNEL_TIME")
                                      ? p.archive().properties.at("HYBRIDPROF::KERNEL_TIME")
                                      : "";
  if (kernel_time.rfind("sampled", 0) != 0) GTEST_SKIP() << "kernel-level sampling refused here: " << kernel_time;
  const double total = double(p.samples().size());
  // 1 kHz on a CPU clock: a sample per millisecond of the thread's CPU time.
  const double cpu_ms = (user + sys) * 1000.0;
  EXPECT_NEAR(total, cpu_ms, cpu_ms * 0.15) << "samples cover user + system time (" << user << " + " << sys << " s)";
  uint64_t in_kernel = 0, kernel_under_heavy = 0;
  for (const auto& s : p.samples()) {
    if (p.leaf_name(s.context) != "[kernel]") continue;
    ++in_kernel;
    kernel_under_heavy += on_path(p.path_names(s.context), "kernel_heavy");
  }
  const double kernel_share = double(in_kernel) / total, sys_share = sys / (user + sys);
  // getrusage's user/system split is itself sampled (at scheduler ticks,
  // then scaled): on a loaded machine it read 0.84 system against 0.71 in
  // [kernel] samples, with fixed and randomized periods alike.
  EXPECT_NEAR(kernel_share, sys_share, 0.15) << "[kernel] samples hold the system share";
  EXPECT_GE(kernel_under_heavy, in_kernel * 9 / 10) << "kernel time is charged to the function that entered it";
  EXPECT_GE(p.inclusive_samples("user_heavy"), uint64_t(total * 0.1));
  EXPECT_LE(p.self_samples("[kernel]") - kernel_under_heavy, in_kernel / 10);
  const RunResult report = run({report_tool(), dir});
  EXPECT_NE(report.out.find("sampled ([kernel] frames)"), std::string::npos) << report.out;
}

// Where the system refuses kernel-level sampling, CPU-time timers still
// count system time (not told apart from user time), and the run says so.
TEST_F(NativeStacks, TimersCountKernelTimeWithUserTime) {
  const std::string dir = scratch / "T";
  RunOptions options;
  options.env["HYBRIDPROF_FORCE_TIMER"] = "1";
  const RunResult r = profile({"-F", "1000", "-o", dir}, {fixture("kernel_workload"), "0.3", "1.0"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  double user = 0, sys = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "user %lf sys %lf", &user, &sys), 2) << r.out;
  Profile p(dir);
  EXPECT_EQ(p.archive().properties.at("HYBRIDPROF::KERNEL_TIME"), "counted with user time (CPU-time timers)");
  EXPECT_EQ(p.self_samples("[kernel]"), 0u);
  // kernel_heavy's share of the samples is its share of the CPU time,
  // system time included.
  const double total = double(p.samples().size());
  ASSERT_GT(total, 0);
  EXPECT_GE(double(p.inclusive_samples("kernel_heavy")) / total, 0.6)
      << "kernel_heavy ran about 3/4 of the CPU time, most of it in the kernel (user " << user << " s, sys " << sys
      << " s)";
}

}  // namespace
}  // namespace hybridprof::integration
