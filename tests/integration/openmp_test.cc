// OpenMP programs built by GCC (libgomp, intercepted) and by clang
// (libomp, OMPT) under the launcher: every construct the runtime reports
// is a region of paradigm OpenMP on the thread that met it, counted exactly
// against the fixtures' schedules (tests/fixtures/openmp_workload.cc,
// openmp_nested_tasks.cc), named after the construct and its source line,
// enters matching leaves; each team's fork and join on the thread that
// forked it; samples inside a construct under it.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

// Source lines of the fixtures' constructs.
namespace workload {  // openmp_workload.cc
constexpr int kParallel = 50, kBarrier = 54, kCritical = 56, kSingle = 61, kParallelFor = 64;
}
namespace nested {  // openmp_nested_tasks.cc
constexpr int kOuter = 25, kInner = 27, kTasking = 30, kTask = 35, kTaskwait = 38;
}

constexpr const char* kIdle = "OpenMP idle (worker waiting for work)";

// Per thread, enters by construct (the region's name up to " @"), the
// longest critical-section wait, and the teams forked and joined.
struct OpenMpTrace {
  std::map<uint64_t, std::map<std::string, int>> enters, leaves;
  std::map<uint64_t, std::map<std::string, int>> named;  // per thread, enters by whole name
  uint64_t longest_wait_ns = 0;
  std::map<uint64_t, int> forks, joins;  // per thread
  std::map<uint32_t, int> requested;     // forks by the number of threads asked for
  std::map<uint64_t, int> idle_enters, idle_leaves;  // per thread: OpenMP idle, apart from the constructs
  int not_openmp = 0;                    // forks and joins of another paradigm
  // Enters of region `name` (whole) on all threads.
  int total(const std::string& name) const {
    int n = 0;
    for (const auto& [location, by_name] : named) n += by_name.count(name) ? by_name.at(name) : 0;
    return n;
  }
};

OpenMpTrace read_openmp(const std::string& dir) {
  otf2::ArchiveReader reader(dir);
  const otf2::Archive& a = reader.archive();
  OpenMpTrace t;
  std::map<uint64_t, uint64_t> wait_began;
  reader.read_events([](const otf2::SampleEvent&) {},
                     [&](const otf2::RegionEvent& e) {
                       const otf2::RegionInfo& r = a.regions.at(e.region);
                       if (r.paradigm != otf2::Paradigm::kOpenMp) return;
                       const std::string construct = r.name.substr(0, r.name.find(" @"));
                       if (construct == kIdle) {
                         ++(e.enter ? t.idle_enters : t.idle_leaves)[e.location];
                         return;
                       }
                       ++(e.enter ? t.enters : t.leaves)[e.location][construct];
                       if (e.enter) ++t.named[e.location][r.name];
                       if (construct != "!$omp critical (waiting)") return;
                       if (e.enter) wait_began[e.location] = e.timestamp;
                       else t.longest_wait_ns = std::max(t.longest_wait_ns, e.timestamp - wait_began[e.location]);
                     },
                     [](const otf2::MpiEvent&) {},
                     [&](const otf2::ForkJoinEvent& e) {
                       t.not_openmp += e.paradigm != otf2::Paradigm::kOpenMp;
                       ++(e.fork ? t.forks : t.joins)[e.location];
                       if (e.fork) ++t.requested[e.requested_threads];
                     });
  return t;
}

// Runs the fixture (`program`: its name in the fixtures) for `regions`
// regions and checks each of its 2 threads entered the constructs as
// `expected` says, left each, and that a thread waited for the critical
// section the other held; and that each entered every construct at its
// line of openmp_workload.cc once a region.
void expect_constructs(const std::string& program, int regions, const std::map<std::string, int>& expected) {
  TempDir dir;
  const RunResult r = profile({"-o", dir / "out"}, {fixture(program), std::to_string(regions)});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  const OpenMpTrace t = read_openmp(dir / "out");
  EXPECT_EQ(t.enters.size(), 2u) << "two threads met OpenMP constructs";
  // The report's OpenMP section: each parallel region called `regions`
  // times by 2 threads.
  const std::string report = run({report_tool(), dir / "out"}).out;
  for (int line : {workload::kParallel, workload::kParallelFor})
    expect_report_row(report, "!$omp parallel @openmp_workload.cc:" + std::to_string(line), regions, 2);
  // The master forks and joins each of the 2 * regions teams of 2.
  EXPECT_EQ(t.forks, (std::map<uint64_t, int>{{t.enters.begin()->first, 2 * regions}}));
  EXPECT_EQ(t.joins, t.forks);
  EXPECT_EQ(t.requested, (std::map<uint32_t, int>{{2, 2 * regions}}));
  EXPECT_EQ(t.not_openmp, 0);
  for (const auto& [location, enters] : t.enters) {
    EXPECT_EQ(enters, expected) << "thread " << location;
    EXPECT_EQ(t.leaves.at(location), enters) << "every region entered is left";
  }
  // The worker waits for work after each of its 2 * regions regions (the
  // last wait ends with the process), its master never.
  EXPECT_EQ(t.idle_enters.size(), 1u);
  for (const auto& [location, n] : t.idle_enters) {
    EXPECT_EQ(n, 2 * regions) << "thread " << location;
    EXPECT_EQ(t.idle_leaves.count(location) ? t.idle_leaves.at(location) : 0, n) << "thread " << location;
  }
  // Each thread holds the critical section 1 ms right after a barrier: the
  // other one waits for it.
  EXPECT_GE(t.longest_wait_ns, 100000u);
  const std::pair<std::string, int> lines[] = {
      {"!$omp parallel", workload::kParallel}, {"!$omp parallel", workload::kParallelFor},
      {"!$omp barrier", workload::kBarrier},   {"!$omp critical", workload::kCritical},
      {"!$omp single", workload::kSingle}};
  for (const auto& [location, named] : t.named)
    for (const auto& [construct, line] : lines) {
      const std::string name = construct + " @openmp_workload.cc:" + std::to_string(line);
      EXPECT_EQ(named.count(name) ? named.at(name) : 0, regions) << name << " on thread " << location;
    }
}

#ifdef HP_HAVE_GOMP_FIXTURE

TEST(OpenMp, GompConstructsAreRegionsCountedPerThread) {
  // GCC ends a single with the GOMP_barrier call an explicit barrier
  // makes, on the single's line: an implicit barrier, as libomp reports
  // it; the combined parallel loop's end is its join, not seen.
  constexpr int kRegions = 20;
  expect_constructs("openmp_workload", kRegions,
                                          {
                                              {"!$omp parallel", 2 * kRegions},
                                              {"!$omp for", 2 * kRegions},
                                              {"!$omp implicit barrier", 2 * kRegions},
                                              {"!$omp barrier", kRegions},
                                              {"!$omp critical", kRegions},
                                              {"!$omp critical (waiting)", kRegions},
                                              {"!$omp single", kRegions},
                                          });
}

// A barrier the program's outlined body reaches by a tail call returns
// into the profiler's trampoline that ran the body: it is named after the
// body in the program's source, never after a file of the profiler
// (LULESH: "!$omp barrier @gomp_tracer.cc:156", 850 times in 8 ranks).
// And GCC's barrier call closing a loop is an implicit barrier, as
// libomp reports it, whether called or tail-called.
TEST(OpenMp, GompBarriersReachedByTailCallsAreNamedFromTheProgram) {
  const std::string program = fixture("openmp_loops");
  const RunResult code = run({"objdump", "-d", "--no-show-raw-insn", program});
  if (code.exit_code != 0) GTEST_SKIP() << "no objdump to check the fixture's code";
  if (code.out.find("jmp") == std::string::npos ||
      code.out.find("<GOMP_barrier@plt>\n", code.out.find("jmp")) == std::string::npos)
    GTEST_SKIP() << "the compiler made no tail call to GOMP_barrier";
  constexpr int kRounds = 400;
  const TempDir dir;
  RunOptions options;
  options.env["OMP_NUM_THREADS"] = "2";
  const RunResult r = profile({"-o", dir / "out"}, {program, std::to_string(kRounds)}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const OpenMpTrace t = read_openmp(dir / "out");
  int barriers = 0, named_here = 0;
  for (const auto& [location, named] : t.named) {
    for (const auto& [name, n] : named) {
      EXPECT_NE(name.find("@openmp_loops.cc:"), std::string::npos) << name << ": not the program's source";
      // GCC's GOMP_barrier closing a loop is the loop's implicit barrier
      // (the fixture has no explicit one), as clang's runtime reports it.
      EXPECT_NE(name.rfind("!$omp barrier", 0), 0u) << name;
      if (name.rfind("!$omp implicit barrier @", 0) == 0) barriers += n;
      if (name.find("@openmp_loops.cc:") != std::string::npos) named_here += n;
    }
  }
  EXPECT_EQ(barriers, 2 * kRounds) << "one a round on each of the 2 threads";
  EXPECT_GT(named_here, 0);
}

#endif

#ifdef HP_HAVE_OMPT_FIXTURE

TEST(OpenMp, OmptConstructsAreRegionsCountedPerThread) {
  // libomp reports the single's barrier as implicit; a parallel region's
  // closing barrier ends the region on each thread and is not a region.
  constexpr int kRegions = 20;
  expect_constructs("openmp_workload_clang", kRegions,
                                          {
                                              {"!$omp parallel", 2 * kRegions},
                                              {"!$omp for", 2 * kRegions},
                                              {"!$omp implicit barrier", 2 * kRegions},
                                              {"!$omp barrier", kRegions},
                                              {"!$omp critical", kRegions},
                                              {"!$omp critical (waiting)", kRegions},
                                              {"!$omp single", kRegions},
                                          });
}

#endif

// How many of the samples with `function` on their path have `regions`
// (a construct, or a region's whole name) above it on the path, in that
// order.
struct UnderRegions {
  uint64_t samples = 0, under = 0;
};
UnderRegions samples_under(const Profile& p, const std::string& function, const std::vector<std::string>& regions) {
  UnderRegions u;
  for (const otf2::SampleEvent& s : p.samples()) {
    const std::vector<std::string>& path = p.path_names(s.context);
    const auto at =
        std::find_if(path.begin(), path.end(), [&](const std::string& n) { return n.find(function) != std::string::npos; });
    if (at == path.end()) continue;
    ++u.samples;
    auto from = path.begin();
    bool all = true;
    for (const std::string& region : regions) {
      from = std::find_if(from, at, [&](const std::string& n) { return n == region || n.rfind(region + " @", 0) == 0; });
      if (from == at) {
        all = false;
        break;
      }
    }
    u.under += all;
  }
  return u;
}

void expect_samples_under_constructs(const std::string& program) {
  TempDir dir;
  const RunResult r = profile({"-o", dir / "out", "-F", "2000"}, {fixture(program), "20"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const Profile p(dir / "out");
  // The loop's chunks run in the outlined body itself, between the loop's
  // start and end; the critical section's code between its acquire and
  // release.
  const UnderRegions loop = samples_under(p, "work_in_loop", {"!$omp parallel", "!$omp for"});
  const UnderRegions critical = samples_under(p, "work_in_critical", {"!$omp parallel", "!$omp critical"});
  ASSERT_GT(loop.samples, 0u) << "20 regions spin 2.5 ms of CPU in the loop";
  ASSERT_GT(critical.samples, 0u) << "each thread spins 20 ms of CPU in the critical section";
  EXPECT_GE(loop.under, loop.samples * 95 / 100) << loop.under << " of " << loop.samples;
  EXPECT_GE(critical.under, critical.samples * 95 / 100) << critical.under << " of " << critical.samples;
  // And not under a construct they are not in.
  EXPECT_EQ(samples_under(p, "work_in_critical", {"!$omp for"}).under, 0u);
  // Outlined bodies are named after the function they came from, by
  // either compiler ("main._omp_fn.0"; clang's ".omp_outlined." bodies
  // "main [clone .omp_outlined.]"), never by an anonymous outline name.
  size_t outlined = 0;
  for (const auto& [ref, region] : p.archive().regions) {
    EXPECT_NE(region.name.rfind(".omp_outlined", 0), 0u) << region.name << ": named after no function";
    outlined += region.name.rfind("main._omp_fn.", 0) == 0 || region.name.rfind("main [clone .omp_outlined", 0) == 0;
  }
  EXPECT_GT(outlined, 0u) << "main's outlined bodies";
}

#ifdef HP_HAVE_GOMP_FIXTURE
TEST(OpenMp, GompSamplesInsideAConstructHaveItInTheirCallingContext) {
  expect_samples_under_constructs("openmp_workload");
}
#endif
#ifdef HP_HAVE_OMPT_FIXTURE
TEST(OpenMp, OmptSamplesInsideAConstructHaveItInTheirCallingContext) {
  expect_samples_under_constructs("openmp_workload_clang");
}
#endif

// A team's worker waits for work while its master runs the program's
// serial code (openmp_idle.cc: each round the master spins 3 ms of its CPU
// alone, then a team of 2 spins 1 ms each). With OMP_WAIT_POLICY=active
// the worker spins in the runtime meanwhile: those samples are under
// "OpenMP idle (worker waiting for work)", not an opaque path of the
// runtime's frames; the master has none there; and the report's OpenMP
// section gives the worker's idle time, one wait a round.
void expect_worker_idle_named(const std::string& program) {
  constexpr int kRounds = 40;
  TempDir dir;
  RunOptions options;
  options.env["OMP_WAIT_POLICY"] = "active";
  const RunResult r =
      profile({"-o", dir / "out", "-F", "2000"}, {fixture(program), std::to_string(kRounds)}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const Profile p(dir / "out");
  struct Thread {
    int samples = 0, idle = 0, serial = 0, in_region = 0;
  };
  std::map<uint64_t, Thread> threads;
  for (const otf2::SampleEvent& s : p.samples()) {
    const std::vector<std::string>& path = p.path_names(s.context);
    const auto has = [&](const std::string& part) {
      return std::any_of(path.begin(), path.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
    };
    Thread& t = threads[s.location];
    ++t.samples;
    t.idle += has(kIdle);
    t.serial += has("serial_part");
    t.in_region += has("!$omp parallel");
  }
  const OpenMpTrace t = read_openmp(dir / "out");
  ASSERT_EQ(t.idle_enters.size(), 1u) << "only the worker idles";
  const uint64_t worker_location = t.idle_enters.begin()->first;
  EXPECT_EQ(t.idle_enters.at(worker_location), kRounds);
  EXPECT_EQ(t.idle_leaves.count(worker_location) ? t.idle_leaves.at(worker_location) : 0, kRounds)
      << "the last wait ends with the process";
  // A busy machine may leave the worker hardly any CPU, but the master
  // spins its serial part on its own CPU clock.
  for (const auto& [location, thread] : threads) {
    if (location == worker_location) continue;
    EXPECT_EQ(thread.idle, 0) << "a master runs the program between regions";
  }
  const Thread worker = threads[worker_location];
  EXPECT_EQ(worker.serial, 0);
  // About 3/4 of a spinning worker's CPU on an idle machine, much less on
  // a busy one (libomp's spinning worker yields its CPU then); but every
  // sample between its regions is under the idle region: outside both,
  // only its start, before its first region.
  EXPECT_LE(worker.samples - worker.idle - worker.in_region, 2 + worker.samples / 20)
      << worker.idle << " idle and " << worker.in_region << " in the region of " << worker.samples;
  // The report: one row, the worker's, with a wait a round.
  const std::string report = run({report_tool(), dir / "out"}).out;
  const size_t section = report.find(std::string(kIdle) + ": worker threads");
  ASSERT_NE(section, std::string::npos) << report;
  std::vector<std::string> rows;
  for (const std::string& line : split_lines(report.substr(section)))
    if (line.find(" ms ") != std::string::npos || line.find(" s ") != std::string::npos) rows.push_back(line);
    else if (!rows.empty() || line.empty()) break;
  ASSERT_EQ(rows.size(), 1u) << report.substr(section);
  std::istringstream row(rows[0]);
  std::string idle, unit, share;
  int waits = 0;
  row >> idle >> unit >> share >> waits;
  EXPECT_EQ(waits, kRounds) << rows[0];
  // Wall time, whatever CPU the threads got: about 3/4 of the worker's.
  EXPECT_GE(std::atof(share.c_str()), 33.0) << rows[0];
}

#ifdef HP_HAVE_GOMP_FIXTURE
TEST(OpenMp, GompWorkersWaitingForWorkAreNamedIdle) { expect_worker_idle_named("openmp_idle"); }
#endif
#ifdef HP_HAVE_OMPT_FIXTURE
TEST(OpenMp, OmptWorkersWaitingForWorkAreNamedIdle) { expect_worker_idle_named("openmp_idle_clang"); }
#endif

#ifdef HP_HAVE_OMPT_FIXTURE
// A runtime serves one OMPT tool: the one the user names in
// OMP_TOOL_LIBRARIES gets it, hybridprof says so in one line (and in the
// archive's notices), and samples the program as ever.
TEST(OpenMp, AnOmptToolTheUserNamesGetsTheRuntime) {
  TempDir dir;
  RunOptions options;
  options.env["OMP_TOOL_LIBRARIES"] = fixture("libother_ompt_tool.so");
  const RunResult r = profile({"-o", dir / "out"}, {fixture("openmp_workload_clang"), "5"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("other_ompt_tool: initialized"), std::string::npos) << r.err;
  int lines = 0;
  for (const std::string& line : split_lines(r.err)) lines += line.find("OMP_TOOL_LIBRARIES") != std::string::npos;
  EXPECT_EQ(lines, 1) << r.err;
  const OpenMpTrace t = read_openmp(dir / "out");
  EXPECT_TRUE(t.enters.empty()) << "no construct traced";
  const Profile p(dir / "out");
  EXPECT_FALSE(p.samples().empty());
  const RunResult report = run({report_tool(), dir / "out"});
  EXPECT_NE(report.out.find("OMP_TOOL_LIBRARIES names another OMPT tool"), std::string::npos) << report.out;
}
#endif

// Nested parallel regions and tasks (openmp_nested_tasks.cc): each round
// forks an outer team of 2 whose 2 threads each fork an inner team of 2,
// then a team of 2 where one thread creates 8 tasks and waits for them.
void expect_nested_teams_and_tasks(const std::string& program) {
  constexpr int kRounds = 10;
  TempDir dir;
  const RunResult r = profile({"-o", dir / "out", "-F", "2000"}, {fixture(program), std::to_string(kRounds)});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const OpenMpTrace t = read_openmp(dir / "out");
  const std::string at = " @openmp_nested_tasks.cc:";
  const std::string outer = "!$omp parallel" + at + std::to_string(nested::kOuter),
                    inner = "!$omp parallel" + at + std::to_string(nested::kInner),
                    tasking = "!$omp parallel" + at + std::to_string(nested::kTasking),
                    task = "!$omp task" + at + std::to_string(nested::kTask);
  EXPECT_EQ(t.total(outer), 2 * kRounds);
  EXPECT_EQ(t.total(inner), 4 * kRounds) << "each outer thread's inner team of 2";
  EXPECT_EQ(t.total(tasking), 2 * kRounds);
  EXPECT_EQ(t.total(task), 8 * kRounds) << "every task, where it ran";
  EXPECT_EQ(t.total("!$omp taskwait" + at + std::to_string(nested::kTaskwait)), kRounds);
  for (const auto& [location, enters] : t.enters) EXPECT_EQ(t.leaves.at(location), enters) << "thread " << location;
  // Forks on the thread that met the region: the initial thread 3 a round
  // (outer, its inner, tasking), the outer team's other thread 1 (its inner).
  std::vector<int> forks;
  for (const auto& [location, n] : t.forks) forks.push_back(n);
  std::sort(forks.begin(), forks.end());
  EXPECT_EQ(forks, (std::vector<int>{kRounds, 3 * kRounds}));
  EXPECT_EQ(t.joins, t.forks);
  EXPECT_EQ(t.requested, (std::map<uint32_t, int>{{2, 4 * kRounds}}));
  // The report counts an inner region's calls by its forks, 2 a round.
  const std::string report = run({report_tool(), dir / "out"}).out;
  expect_report_row(report, outer, kRounds, 2);
  expect_report_row(report, tasking, kRounds, 2);
  int inner_threads = 0;  // libgomp starts new threads for nested teams; libomp keeps them
  for (const auto& [location, named] : t.named) inner_threads += named.count(inner) ? 1 : 0;
  expect_report_row(report, inner, 2 * kRounds, inner_threads);

  // Inner work is under its inner region; on the outer team's threads, under
  // the outer region too. Tasks' work is under the task where it ran (not
  // always under the parallel region: libgomp runs tasks at the team's
  // closing barrier too, after the outlined body returned).
  const Profile p(dir / "out");
  const UnderRegions in_inner = samples_under(p, "work_in_inner", {inner});
  ASSERT_GT(in_inner.samples, 0u) << "4 threads spin 2 ms of CPU a round";
  EXPECT_GE(in_inner.under, in_inner.samples * 95 / 100) << in_inner.under << " of " << in_inner.samples;
  EXPECT_GT(samples_under(p, "work_in_inner", {outer, inner}).under, 0u)
      << "the outer threads do half the inner work, nested in both regions";
  const UnderRegions in_task = samples_under(p, "work_in_task", {task});
  ASSERT_GT(in_task.samples, 0u) << "8 tasks spin 500 us of CPU a round";
  EXPECT_GE(in_task.under, in_task.samples * 95 / 100) << in_task.under << " of " << in_task.samples;
}

#ifdef HP_HAVE_GOMP_FIXTURE
TEST(OpenMp, GompNestedTeamsAndTasks) { expect_nested_teams_and_tasks("openmp_nested_tasks"); }
#endif
#ifdef HP_HAVE_OMPT_FIXTURE
TEST(OpenMp, OmptNestedTeamsAndTasks) { expect_nested_teams_and_tasks("openmp_nested_tasks_clang"); }
#endif

}  // namespace
}  // namespace hybridprof::integration
