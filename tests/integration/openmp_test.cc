// OpenMP programs built by GCC under the launcher: every construct libgomp
// is called for is a region of paradigm OpenMP on the thread that met it,
// counted exactly against the fixture's schedule
// (tests/fixtures/openmp_workload.cc), named after the construct and its
// source line, enters matching leaves.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

// Per thread, enters by construct (the region's name up to " @"), and the
// longest critical-section wait.
struct OpenMpTrace {
  std::map<uint64_t, std::map<std::string, int>> enters, leaves;
  std::map<uint64_t, std::map<std::string, int>> named;  // per thread, enters by whole name
  uint64_t longest_wait_ns = 0;
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
                       ++(e.enter ? t.enters : t.leaves)[e.location][construct];
                       if (e.enter) ++t.named[e.location][r.name];
                       if (construct != "!$omp critical (waiting)") return;
                       if (e.enter) wait_began[e.location] = e.timestamp;
                       else t.longest_wait_ns = std::max(t.longest_wait_ns, e.timestamp - wait_began[e.location]);
                     },
                     [](const otf2::MpiEvent&) {});
  return t;
}

// Runs the fixture (`program`: its name in the fixtures) for `regions`
// regions and checks each of its 2 threads entered the constructs as
// `expected` says, left each, and that a thread waited for the critical
// section the other held. Returns the trace.
OpenMpTrace expect_constructs(const std::string& program, int regions, const std::map<std::string, int>& expected) {
  TempDir dir;
  const RunResult r = profile({"-o", dir / "out"}, {fixture(program), std::to_string(regions)});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  const OpenMpTrace t = read_openmp(dir / "out");
  EXPECT_EQ(t.enters.size(), 2u) << "two threads met OpenMP constructs";
  // The report's OpenMP section: each parallel region called `regions`
  // times by 2 threads ("Time%  Time  Calls  Avg  Threads ...").
  const RunResult report = run({report_tool(), dir / "out"});
  for (int line : {40, 52}) {
    const std::string name = "!$omp parallel @openmp_workload.cc:" + std::to_string(line);
    bool found = false;
    for (const std::string& row : split_lines(report.out)) {
      if (row.size() < name.size() || row.compare(row.size() - name.size(), name.size(), name) != 0) continue;
      std::istringstream cells(row);
      std::string share, time, unit, calls, avg, avg_unit, threads;
      cells >> share >> time >> unit >> calls >> avg >> avg_unit >> threads;
      EXPECT_EQ(calls, std::to_string(regions)) << row;
      EXPECT_EQ(threads, "2") << row;
      found = true;
    }
    EXPECT_TRUE(found) << name << " in the report:\n" << report.out;
  }
  for (const auto& [location, enters] : t.enters) {
    EXPECT_EQ(enters, expected) << "thread " << location;
    EXPECT_EQ(t.leaves.at(location), enters) << "every region entered is left";
  }
  // Each thread holds the critical section 1 ms right after a barrier: the
  // other one waits for it.
  EXPECT_GE(t.longest_wait_ns, 100000u);
  return t;
}

// Every thread entered construct @ the fixture's line (openmp_workload.cc)
// as often as `lines` says; each parallel region (40, 52) once a region.
void expect_lines(const OpenMpTrace& t, int regions, const std::map<std::pair<std::string, int>, int>& lines) {
  std::map<std::pair<std::string, int>, int> all = lines;
  all[{"!$omp parallel", 40}] = regions;
  all[{"!$omp parallel", 52}] = regions;
  for (const auto& [location, named] : t.named)
    for (const auto& [construct_line, count] : all) {
      const std::string name = construct_line.first + " @openmp_workload.cc:" + std::to_string(construct_line.second);
      EXPECT_EQ(named.count(name) ? named.at(name) : 0, count) << name << " on thread " << location;
    }
}

#ifdef HP_HAVE_GOMP_FIXTURE

TEST(OpenMp, GompConstructsAreRegionsCountedPerThread) {
  // GCC ends a single with an explicit GOMP_barrier call; the combined
  // parallel loop's end is its join, not seen.
  constexpr int kRegions = 20;
  const OpenMpTrace t = expect_constructs("openmp_workload", kRegions,
                                          {
                                              {"!$omp parallel", 2 * kRegions},
                                              {"!$omp for", 2 * kRegions},
                                              {"!$omp implicit barrier", kRegions},
                                              {"!$omp barrier", 2 * kRegions},
                                              {"!$omp critical", kRegions},
                                              {"!$omp critical (waiting)", kRegions},
                                              {"!$omp single", kRegions},
                                          });
  expect_lines(t, kRegions, {{{"!$omp barrier", 44}, kRegions}, {{"!$omp critical", 45}, kRegions}, {{"!$omp single", 49}, kRegions}});
}

#endif

#ifdef HP_HAVE_OMPT_FIXTURE

TEST(OpenMp, OmptConstructsAreRegionsCountedPerThread) {
  // libomp reports the single's barrier as implicit; a parallel region's
  // closing barrier ends the region on each thread and is not a region.
  constexpr int kRegions = 20;
  const OpenMpTrace t = expect_constructs("openmp_workload_clang", kRegions,
                                          {
                                              {"!$omp parallel", 2 * kRegions},
                                              {"!$omp for", 2 * kRegions},
                                              {"!$omp implicit barrier", 2 * kRegions},
                                              {"!$omp barrier", kRegions},
                                              {"!$omp critical", kRegions},
                                              {"!$omp critical (waiting)", kRegions},
                                              {"!$omp single", kRegions},
                                          });
  expect_lines(t, kRegions, {{{"!$omp barrier", 44}, kRegions}, {{"!$omp critical", 45}, kRegions}, {{"!$omp single", 49}, kRegions}});
}

#endif

// How many of the samples with `function` on their path have `regions`
// above it on the path, in that order.
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
      from = std::find_if(from, at, [&](const std::string& n) { return n.rfind(region + " @", 0) == 0; });
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

}  // namespace
}  // namespace hybridprof::integration
