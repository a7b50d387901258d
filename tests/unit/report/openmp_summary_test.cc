// The report's OpenMP section from region events alone: per parallel
// region its calls, time, imbalance of its threads' work and barrier share,
// and the waits.
#include <gtest/gtest.h>

#include <sstream>

#include "openmp_summary.h"

namespace hybridprof::report {
namespace {

constexpr uint32_t kParallel = 1, kBarrier = 2, kCriticalWait = 3, kCritical = 4, kLoop = 5, kMpiSend = 6;

otf2::Archive openmp_archive() {
  otf2::Archive a;
  const auto omp = otf2::Paradigm::kOpenMp;
  a.regions[kParallel] = {"!$omp parallel @a.c:10", "a.c", "", 10, omp};
  a.regions[kBarrier] = {"!$omp implicit barrier @a.c:12", "a.c", "", 12, omp};
  a.regions[kCriticalWait] = {"!$omp critical (waiting) @a.c:14", "a.c", "", 14, omp};
  a.regions[kCritical] = {"!$omp critical @a.c:14", "a.c", "", 14, omp};
  a.regions[kLoop] = {"!$omp for @a.c:11", "a.c", "", 11, omp};
  a.regions[kMpiSend] = {"MPI_Send", "", "", 0, otf2::Paradigm::kMpi};
  return a;
}

void region(OpenMpStats& s, uint64_t location, uint32_t r, uint64_t enter, uint64_t leave) {
  s.add(otf2::RegionEvent{location, enter, r, true});
  s.add(otf2::RegionEvent{location, leave, r, false});
}

TEST(OpenMpSummary, WorkWaitsAndImbalancePerParallelRegion) {
  const otf2::Archive a = openmp_archive();
  OpenMpStats s(a);
  // Thread 0: 80 ns of work, 20 in the barrier. Thread 1: 10 waiting for
  // the critical section, 30 of work, 60 in the barrier. Twice each.
  for (uint64_t base : {0, 1000}) {
    s.add(otf2::RegionEvent{0, base, kParallel, true});
    region(s, 0, kLoop, base + 5, base + 70);
    region(s, 0, kBarrier, base + 80, base + 100);
    s.add(otf2::RegionEvent{0, base + 100, kParallel, false});
    s.add(otf2::RegionEvent{1, base, kParallel, true});
    s.add(otf2::RegionEvent{1, base + 10, kCritical, true});
    region(s, 1, kCriticalWait, base + 10, base + 20);
    region(s, 1, kMpiSend, base + 21, base + 25);  // not OpenMP: ignored
    s.add(otf2::RegionEvent{1, base + 30, kCritical, false});
    region(s, 1, kBarrier, base + 40, base + 100);
    s.add(otf2::RegionEvent{1, base + 100, kParallel, false});
  }
  ASSERT_EQ(s.parallel_regions().size(), 1u);
  const OpenMpStats::ParallelRegion& r = s.parallel_regions().at("!$omp parallel @a.c:10");
  EXPECT_EQ(r.calls(), 2u);
  EXPECT_EQ(r.total_ns(), 200u);
  EXPECT_EQ(r.threads.size(), 2u);
  EXPECT_DOUBLE_EQ(r.imbalance(), 160.0 / ((160.0 + 60.0) / 2));
  EXPECT_EQ(r.barrier_ns(), 160u);
  EXPECT_EQ(r.thread_ns(), 400u);
  EXPECT_EQ(s.waits().at("!$omp critical (waiting) @a.c:14").total_ns, 20u);
  EXPECT_EQ(s.waits().at("!$omp implicit barrier @a.c:12").count, 4u);
  EXPECT_EQ(s.waits().count("!$omp for @a.c:11"), 0u) << "a loop is work, not a wait";

  std::ostringstream out;
  print_openmp_summary(out, s, 10);
  const std::string text = out.str();
  EXPECT_NE(text.find("0.200 us"), std::string::npos) << text;  // the parallel region: 200 ns
  EXPECT_NE(text.find("1.45x"), std::string::npos) << text;
  EXPECT_NE(text.find("40.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("!$omp critical (waiting) @a.c:14"), std::string::npos) << text;
}

// An MPI job: every rank forks its own team. Eight ranks of one thread each
// are teams of 1, evenly loaded however different the ranks' work; the
// imbalance is that of the most uneven team (two ranks of two threads here:
// 1.0 and 1.5).
TEST(OpenMpSummary, TeamsArePerProcess) {
  otf2::Archive a = openmp_archive();
  for (uint64_t location = 0; location < 8; ++location) a.threads[location] = {location, "", uint32_t(location), {}, 0};
  OpenMpStats one_thread_teams(a);
  for (uint64_t rank = 0; rank < 8; ++rank) region(one_thread_teams, rank, kParallel, 0, 100 * (rank + 1));
  const OpenMpStats::ParallelRegion& r = one_thread_teams.parallel_regions().at("!$omp parallel @a.c:10");
  EXPECT_EQ(r.team_threads(), 1u);
  EXPECT_DOUBLE_EQ(r.imbalance(), 1.0) << "a team of one is never uneven";

  for (uint64_t location = 0; location < 4; ++location) a.threads[location].process = uint32_t(location / 2);
  OpenMpStats two_teams(a);
  region(two_teams, 0, kParallel, 0, 100);  // process 0: 100 and 100
  region(two_teams, 1, kParallel, 0, 100);
  region(two_teams, 2, kParallel, 0, 300);  // process 1: 300 and 100
  region(two_teams, 3, kParallel, 0, 100);
  const OpenMpStats::ParallelRegion& t = two_teams.parallel_regions().at("!$omp parallel @a.c:10");
  EXPECT_EQ(t.team_threads(), 2u);
  EXPECT_DOUBLE_EQ(t.imbalance(), 300.0 / 200.0);
  std::ostringstream out;
  print_openmp_summary(out, two_teams, 10);
  EXPECT_NE(out.str().find("1.50x"), std::string::npos) << out.str();
}

// Nested parallelism: an inner region forked by each of 2 outer threads
// is 2 calls, whatever the most any one thread entered it.
TEST(OpenMpSummary, CallsAreTheForksOfARegion) {
  const otf2::Archive a = openmp_archive();
  OpenMpStats s(a);
  for (uint64_t outer : {0, 1}) {
    s.add(otf2::ForkJoinEvent{outer, 0, true, otf2::Paradigm::kOpenMp, 2});
    region(s, outer, kParallel, 10, 50);  // forked: an instance
    s.add(otf2::ForkJoinEvent{outer, 60, false, otf2::Paradigm::kOpenMp, 0});
  }
  region(s, 7, kParallel, 10, 30);  // the inner teams' other threads
  region(s, 8, kParallel, 10, 30);
  const OpenMpStats::ParallelRegion& r = s.parallel_regions().at("!$omp parallel @a.c:10");
  EXPECT_EQ(r.calls(), 2u);
  EXPECT_EQ(r.threads.size(), 4u);
  EXPECT_EQ(r.thread_average_ns(), (40u + 40u + 20u + 20u) / 4);
}

TEST(OpenMpSummary, UnmatchedLeavesAndOtherParadigmsAreIgnored) {
  const otf2::Archive a = openmp_archive();
  OpenMpStats s(a);
  s.add(otf2::RegionEvent{0, 5, kParallel, false});  // no enter
  region(s, 0, kMpiSend, 0, 10);
  EXPECT_TRUE(s.empty());
  std::ostringstream out;
  print_openmp_summary(out, s, 10);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace hybridprof::report
