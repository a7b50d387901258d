// The launcher on programs that stress the runtime's interposers: dlopen and
// dlclose, fork, a program with signal handlers of its own, thousands of
// threads, and exit() from a non-main thread.
#include <regex>
#include <set>

#include <signal.h>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class Workloads : public IntegrationTest {};

TEST_F(Workloads, DlopenedPluginIsNamedAfterItIsUnloaded) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("dlopen_workload"), plugin_library()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;

  // 0.6 s of CPU in the plugin: ~600 samples at 1 kHz.
  uint64_t hot = 0, hot_with_file = 0;
  std::set<std::string> files;
  for (const auto& s : p->samples()) {
    const otf2::RegionInfo* region = p->leaf_region(s.context);
    if (!region || region->name != "plugin_hot_loop") continue;
    ++hot;
    files.insert(region->file);
    hot_with_file += ends_with(region->file, "dlopen_plugin.cc");
  }
  EXPECT_GE(hot, 100u) << "samples in plugin_hot_loop; " << p->samples().size() << " samples in all";
  EXPECT_EQ(hot_with_file, hot) << "plugin_hot_loop regions name files other than dlopen_plugin.cc: "
                                << ::testing::PrintToString(files);
  // 0.2 s in the program after dlclose: ~200 samples.
  EXPECT_GE(p->self_samples("after_unload_work"), 50u);
}

// The sample handler's unwind must never wait for the loader's lock: a
// sample landing inside dlopen (Open MPI's MPI_Init) deadlocked on it.
TEST_F(Workloads, SamplesDoNotWaitForTheLoaderLock) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-F", "1000", "-o", d}, {fixture("loader_lock_workload")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("work finished while the loader lock was held"), std::string::npos) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  // Unwound through the lookups, not just recorded: fresh_work under main.
  EXPECT_GE(p->self_samples("fresh_work"), 20u);
  EXPECT_GE(p->inclusive_samples("main"), p->self_samples("fresh_work"));
}

// Nor on malloc's lock: after a dlopen() of a library with TLS, the first
// access to libunwind's TLS used to update the thread's TLS vector, with
// malloc, in the handler of a sample that landed inside malloc (PyTorch's
// import on a GPU node hung so). Without the fix this hung every run here.
TEST_F(Workloads, SamplesInMallocAfterADlopenDoNotHang) {
  const std::string d = scratch / "D";
  RunOptions options;
  options.timeout_seconds = 60;
  const RunResult r = profile({"-F", "2000", "-o", d},
                              {fixture("tls_dlopen_workload"), fixture("libtls_module.so"), "40"}, options);
  ASSERT_FALSE(r.timed_out) << "hung: " << r.describe();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("loaded 40 copies"), std::string::npos) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->notices().find("reached through the loader"), std::string::npos) << p->notices();
  // The allocations' samples are unwound, through malloc, to main.
  const uint64_t allocating = p->inclusive_samples("allocate_without_pause");
  EXPECT_GE(allocating, 50u);
  EXPECT_GE(p->inclusive_samples("main"), allocating);
}

TEST_F(Workloads, ForkChildIsItsOwnProcess) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("fork_workload")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(parent (\d+)\nchild (\d+))"))) << r.describe();
  const long parent_pid = std::stol(m[1]), child_pid = std::stol(m[2]);
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;

  EXPECT_EQ(p->archive().processes.size(), 2u);
  const uint32_t parent = p->process_with_pid(parent_pid), child = p->process_with_pid(child_pid);
  ASSERT_NE(parent, otf2::kUndefined) << "no process with PID " << parent_pid;
  ASSERT_NE(child, otf2::kUndefined) << "no process with PID " << child_pid;
  ASSERT_NE(parent, child);

  auto check = [&](const std::string& function, uint32_t owner, const char* owner_name) {
    uint64_t total = 0;
    for (const auto& [loc, n] : p->self_samples_by_location(function)) {
      total += n;
      EXPECT_EQ(p->process_of(loc), owner) << n << " samples of " << function << " on location " << loc
                                           << ", which is not in the " << owner_name << " process";
    }
    // 0.4 s of CPU: ~400 samples.
    EXPECT_GE(total, 100u) << "samples in " << function;
  };
  check("child_work", child, "child");
  check("parent_work", parent, "parent");
  // Each with its exit code, the child's returned from main.
  EXPECT_EQ(p->archive().processes.at(parent).properties.at("EXIT_STATUS"), "exit 0");
  EXPECT_EQ(p->archive().processes.at(child).properties.at("EXIT_STATUS"), "exit 3");
}

// A child that outlives its parent: the launcher waits for it (its
// subreaper), so its last samples reach the archive, with its exit status.
// The flush interval is longer than the run: only its end writes them.
TEST_F(Workloads, AForkChildThatOutlivesItsParentIsWaitedFor) {
  const std::string d = scratch / "D";
  RunOptions options;
  options.env["HYBRIDPROF_FLUSH_MS"] = "60000";
  const RunResult r = profile({"-o", d}, {fixture("fork_workload"), "orphan"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.err.find("without a final flush"), std::string::npos) << r.describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(parent (\d+)\nchild (\d+))"))) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  const uint32_t child = p->process_with_pid(std::stol(m[2]));
  ASSERT_NE(child, otf2::kUndefined) << r.describe();
  EXPECT_EQ(p->archive().processes.at(child).properties.at("EXIT_STATUS"), "exit 0");
  // 0.3 s of CPU in child_last_work, 0.2 s in child_work before it.
  const uint64_t first = p->self_samples("child_work"), last = p->self_samples("child_last_work");
  EXPECT_GT(first, 0u);
  EXPECT_GE(last, first) << r.describe();
}

// Writing the archive says how far it got, on a terminal only: a line
// rewritten in place (after a second; at once with
// HYBRIDPROF_PROGRESS_AFTER_MS=0), cleared before the summary; nothing of
// it when stderr is a pipe or a file.
TEST_F(Workloads, ArchiveWritingShowsProgressOnATerminalOnly) {
  if (!have_program("script")) GTEST_SKIP() << "no script(1) to give the launcher a terminal";
  if (run({"script", "-qec", "true", "/dev/null"}).exit_code != 0)
    GTEST_SKIP() << "script(1) cannot make a pseudo-terminal here (no /dev/pts)";
  RunOptions options;
  options.env["HYBRIDPROF_PROGRESS_AFTER_MS"] = "0";
  const std::string on_terminal = scratch / "tty";
  const RunResult tty = run({"script", "-qfec", launcher() + " -o " + on_terminal + " -- " + fixture("fork_workload"),
                             "/dev/null"},
                            options);
  ASSERT_EQ(tty.exit_code, 0) << tty.describe();
  EXPECT_NE(tty.out.find("hybridprof: reading processes: 1 of 2"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("\r\033[Khybridprof: "), std::string::npos) << "cleared before the summary";
  const RunResult piped = profile({"-o", scratch / "pipe"}, {fixture("fork_workload")}, options);
  ASSERT_EQ(piped.exit_code, 0) << piped.describe();
  EXPECT_EQ(piped.err.find("processes: "), std::string::npos) << piped.err;
}

TEST_F(Workloads, ProgramKeepsItsOwnSignalHandlers) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("own_handlers")});
  // The fixture prints its handler counts when they are wrong.
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_GT(p->samples_property_total(), 0u);
  // 0.4 s of its 0.5 s of CPU (a share: it holds on a loaded machine).
  EXPECT_GT(2 * p->self_samples("handlers_work"), p->samples().size()) << p->samples().size() << " samples in all";
}

// The runtime keeps a SIGSEGV/SIGBUS handler of its own (its plain-load
// reads of the interpreter's memory survive faults through it): the
// program's handlers still get every fault, and sigaction() shows them.
TEST_F(Workloads, ProgramKeepsItsOwnFaultHandlers) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("own_fault_handler"), "recover"});
  // The fixture prints what went wrong.
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_GT(p->self_samples("fault_work"), 0u) << p->samples().size() << " samples in all";
}

// A fault nobody handles ends the program as it would without the profiler:
// by SIGSEGV, after the program's SA_RESETHAND handler ran once.
TEST_F(Workloads, AnUnhandledFaultKillsTheProgramAsWithoutTheProfiler) {
  for (const std::string mode : {"crash", "resethand"}) {
    const std::string d = scratch / mode;
    const RunResult r = profile({"-o", d}, {fixture("own_fault_handler"), mode});
    EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << mode << "\n" << r.describe();
    if (mode == "resethand") {
      EXPECT_EQ(r.out, "handled\n") << r.describe();
    }
    std::string error;
    EXPECT_TRUE(load_profile(d, &error)) << mode << ": " << error << "\n" << r.describe();
  }
}

// Threads counted without a location of their own (they recorded nothing).
uint64_t quiet_threads(const Profile& p) {
  uint64_t quiet = 0;
  for (const auto& [ref, process] : p.archive().processes) quiet += std::stoull(process.properties.at("QUIET_THREADS"));
  return quiet;
}

TEST_F(Workloads, TwoThousandShortThreads) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("many_threads")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;

  // Each thread is counted: by its location, or (no sample, no event: most
  // of 0.2 ms threads at 1 kHz) in its process's QUIET_THREADS.
  const uint64_t quiet = quiet_threads(*p);
  EXPECT_EQ(p->archive().threads.size() + quiet, 2001u) << "main + 2000";
  EXPECT_GT(quiet, 0u);
  // A location of its own: a sample or a signal taken, or a traced region.
  std::set<uint64_t> traced;
  otf2::ArchiveReader(d).read_events([](const otf2::SampleEvent&) {},
                                      [&](const otf2::RegionEvent& e) { traced.insert(e.location); });
  for (const auto& [loc, t] : p->archive().threads) {
    if (t.name == "main thread") continue;
    EXPECT_TRUE(p->thread_property(loc, "SAMPLES") + p->thread_property(loc, "DROPPED") +
                        p->thread_property(loc, "SAMPLE_SIGNALS") > 0 ||
                traced.count(loc))
        << t.name << ": a location that recorded nothing";
  }
  // The report counts them all.
  const RunResult report = run({report_tool(), d});
  ASSERT_EQ(report.exit_code, 0) << report.describe();
  EXPECT_TRUE(std::regex_search(report.out, std::regex("\\n  Threads +2001 \\(" + std::to_string(quiet) + " recorded nothing")))
      << report.out;
  EXPECT_GT(p->samples().size(), 0u);
  // Sampling still works in the main thread after the churn (0.2 s: ~200).
  EXPECT_GE(p->self_samples("main_after_threads"), 50u);
  int bad = 0;
  for (const auto& [loc, t] : p->archive().threads) {
    const uint64_t samples = p->thread_property(loc, "SAMPLES");
    const uint64_t failures = p->thread_property(loc, "UNWIND_FAILURES");
    if (2 * failures > samples && bad++ < 5)
      ADD_FAILURE() << "thread " << t.name << " (TID " << p->thread_property(loc, "TID") << "): " << failures
                    << " unwind failures in " << samples << " samples";
  }
  EXPECT_EQ(bad, 0) << "threads with more unwind failures than half their samples";
}

// 10,000 threads that do nothing record nothing: no location each (20,000
// OTF2 files made the whole command 5x slower than the program), and the
// report still counts them all.
TEST_F(Workloads, TenThousandThreadsThatRecordNothingGetNoLocations) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("many_threads"), "10000", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->archive().threads.size() + quiet_threads(*p), 10001u);
  EXPECT_LE(p->archive().threads.size(), 100u) << "threads that ran no code of their own";
  EXPECT_NE(r.err.find("from 10001 threads"), std::string::npos) << r.err;
  const RunResult report = run({report_tool(), d});
  ASSERT_EQ(report.exit_code, 0) << report.describe();
  EXPECT_TRUE(std::regex_search(report.out, std::regex("\\n  Threads +10001 "))) << report.out;
}

TEST_F(Workloads, ExitFromAWorkerThread) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("exit_from_thread")});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error << "\n" << r.describe();
  const auto worker = p->self_samples_by_location("worker_busy");
  const auto main = p->self_samples_by_location("main_busy");
  uint64_t worker_total = 0, main_total = 0;
  for (const auto& [loc, n] : worker) worker_total += n;
  for (const auto& [loc, n] : main) main_total += n;
  // 0.3 s in each thread (they run side by side): ~300 samples each.
  EXPECT_GE(worker_total, 100u) << "samples in worker_busy";
  EXPECT_GE(main_total, 100u) << "samples in main_busy";
  ASSERT_EQ(worker.size(), 1u);
  ASSERT_EQ(main.size(), 1u);
  EXPECT_NE(worker.begin()->first, main.begin()->first) << "both functions on one location";
  ASSERT_EQ(p->archive().processes.size(), 1u);
  EXPECT_EQ(p->archive().processes.begin()->second.properties.at("EXIT_STATUS"), "exit 3");
}

}  // namespace
}  // namespace hybridprof::integration
