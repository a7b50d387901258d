// WaitStats on hand-made events: each thread's wall time splits into CPU
// outside traced waits, the outermost traced waits by kind, and the rest;
// regions that are no wait (a parallel region, a user range) count for
// nothing; the Waits section's paths add up per calling context (a
// wait's enter context ends in its region).
#include "wait_summary.h"

#include <gtest/gtest.h>

#include <optional>
#include <sstream>

#include "otf2/property_names.h"

namespace hybridprof::report {
namespace {

constexpr uint64_t kMs = 1000000;

class WaitSummary : public ::testing::Test {
 protected:
  WaitSummary() {
    archive_.properties[otf2::property::kPeriod] = "1000 Hz";  // a sample stands for 1 ms
    region(1, "MPI_Recv", otf2::Paradigm::kMpi);
    region(2, "read", otf2::Paradigm::kOsRuntime);
    region(3, "waiting for the GIL", otf2::Paradigm::kOsRuntime);
    region(4, "!$omp parallel @a.c:3", otf2::Paradigm::kOpenMp);
    region(5, "!$omp implicit barrier @a.c:3", otf2::Paradigm::kOpenMp);
    region(6, "cudaDeviceSynchronize", otf2::Paradigm::kCuda);
    region(7, "cudaLaunchKernel", otf2::Paradigm::kCuda);
    region(8, "main", otf2::Paradigm::kSampling);
    archive_.contexts[10] = {8, otf2::kUndefined, otf2::kUndefined};  // main
    archive_.contexts[11] = {2, otf2::kUndefined, 10};                // main -> read
    archive_.contexts[12] = {1, otf2::kUndefined, 10};                // main -> MPI_Recv
    archive_.contexts[13] = {5, otf2::kUndefined, 10};                // ... -> barrier
    archive_.contexts[14] = {6, otf2::kUndefined, 10};                // ... -> cudaDeviceSynchronize
    archive_.contexts[15] = {3, otf2::kUndefined, 10};                // ... -> the GIL
    archive_.contexts[16] = {4, otf2::kUndefined, 10};                // ... -> parallel region
    archive_.contexts[17] = {7, otf2::kUndefined, 10};                // ... -> cudaLaunchKernel
    archive_.threads[0] = {0, "main thread", 0, {}, 0};
    archive_.processes[0] = {0, "app", {{otf2::property::kPid, "42"}}};
    stats_.emplace(archive_);
  }
  void region(uint32_t ref, const char* name, otf2::Paradigm p) {
    archive_.regions[ref] = otf2::RegionInfo{name, "", "", 0, p};
  }
  void sample(uint64_t ms) { stats().add(otf2::SampleEvent{0, ms * kMs, 10}); }
  void span(uint32_t region, uint64_t from_ms, uint64_t to_ms, uint32_t context) {
    stats().add(otf2::RegionEvent{0, from_ms * kMs, region, true, context});
    stats().add(otf2::RegionEvent{0, to_ms * kMs, region, false, context});
  }
  WaitStats& stats() { return *stats_; }

  otf2::Archive archive_;
  std::optional<WaitStats> stats_;  // made once the archive is
};

TEST_F(WaitSummary, WallTimeIsCpuWaitsByKindAndTheRest) {
  sample(0);
  sample(1);
  span(2, 2, 12, 11);  // a 10 ms read
  stats().add(otf2::RegionEvent{0, 12 * kMs, 1, true, 12});  // MPI_Recv, 20 ms, a sample inside it
  sample(20);
  stats().add(otf2::RegionEvent{0, 32 * kMs, 1, false, 12});
  stats().add(otf2::RegionEvent{0, 40 * kMs, 4, true, 16});  // a parallel region: no wait
  span(5, 41, 45, 13);                                       // its barrier: an OpenMP wait
  stats().add(otf2::RegionEvent{0, 50 * kMs, 4, false, 16});
  span(7, 50, 51, 17);  // a launch: no wait
  span(6, 51, 61, 14);  // a synchronization
  span(3, 61, 66, 15);  // the GIL
  sample(99);
  sample(100);
  const WaitStats::Thread& t = stats().threads().at(0);
  EXPECT_EQ(t.wall_ns(), 100 * kMs);
  EXPECT_EQ(t.samples, 4u) << "the sample inside MPI_Recv is its time";
  EXPECT_EQ(t.waits_ns, (std::map<std::string, uint64_t>{{"read/write", 10 * kMs},
                                                         {"MPI", 20 * kMs},
                                                         {"OpenMP wait", 4 * kMs},
                                                         {"CUDA sync", 10 * kMs},
                                                         {"GIL", 5 * kMs}}));
  EXPECT_EQ(t.waiting_ns(), 49 * kMs);
  ASSERT_EQ(stats().paths().size(), 5u);
  EXPECT_EQ(stats().paths().at(11).total_ns, 10 * kMs);
  EXPECT_EQ(stats().paths().at(12).kind, "MPI");
  std::ostringstream out;
  print_wall_time(out, stats(), 10);
  // 100 ms: 4 samples of 1 ms outside waits, 49 ms waiting, 47 ms unaccounted.
  EXPECT_NE(out.str().find("app [42]  main thread  100.000 ms  4.0%    49.0%        47.0%  MPI 20.0%, read/write 10.0%, "
                           "CUDA sync 10.0%, GIL 5.0%, …"),
            std::string::npos)
      << out.str();
}

TEST_F(WaitSummary, AWaitInsideAWaitCountsOnce) {
  stats().add(otf2::RegionEvent{0, 0, 1, true, 12});  // MPI_Recv
  span(2, 1, 9, 11);                                 // a read inside it (an MPI library's own)
  stats().add(otf2::RegionEvent{0, 10 * kMs, 1, false, 12});
  const WaitStats::Thread& t = stats().threads().at(0);
  EXPECT_EQ(t.waits_ns, (std::map<std::string, uint64_t>{{"MPI", 10 * kMs}}));
  EXPECT_EQ(stats().paths().count(11), 0u);
}

}  // namespace
}  // namespace hybridprof::report
