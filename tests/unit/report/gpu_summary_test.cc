// The report's GPU section from region events alone: per kernel and copy
// its calls and times, the CUDA calls of host threads, and each device's
// idle share with its streams' work overlapping.
#include <gtest/gtest.h>

#include <sstream>

#include "gpu_summary.h"

namespace hybridprof::report {
namespace {

constexpr uint32_t kKernel = 1, kCopy = 2, kLaunch = 3, kSync = 4, kUserRange = 5;
constexpr uint64_t kHost = 0, kStreamA = 1, kStreamB = 2, kSyncLocation = 3;

otf2::Archive gpu_archive() {
  otf2::Archive a;
  const auto cuda = otf2::Paradigm::kCuda;
  a.regions[kKernel] = {"gemm(float*)", "", "", 0, cuda};
  a.regions[kCopy] = {"[CUDA memcpy HtoD]", "", "", 0, cuda};
  a.regions[kLaunch] = {"cudaLaunchKernel", "", "", 0, cuda};
  a.regions[kSync] = {"[CUDA sync: stream]", "", "", 0, cuda};
  a.regions[kUserRange] = {"step", "", "", 0, otf2::Paradigm::kUser};
  a.devices[0] = {"GPU 0 (Test GPU, sm_90)", 0};
  a.threads[kHost] = {kHost, "main thread", 0, {}, 0};
  a.threads[kStreamA] = {kStreamA, "CUDA stream 7", 0, {}, 0, 0};
  a.threads[kStreamB] = {kStreamB, "CUDA stream 8", 0, {}, 0, 0};
  a.threads[kSyncLocation] = {kSyncLocation, "CUDA synchronization (context 1)", 0, {}, 0, 0};
  return a;
}

void region(GpuStats& s, uint64_t location, uint32_t r, uint64_t enter, uint64_t leave) {
  s.add(otf2::RegionEvent{location, enter, r, true});
  s.add(otf2::RegionEvent{location, leave, r, false});
}

TEST(GpuSummary, WorkCallsAndIdleSharePerDevice) {
  const otf2::Archive a = gpu_archive();
  GpuStats s(a);
  region(s, kHost, kUserRange, 0, 1000);  // not CUDA: ignored
  region(s, kHost, kLaunch, 10, 15);
  region(s, kHost, kLaunch, 20, 30);
  // Stream A: kernels 100-300 and 600-700; stream B: a copy 200-400
  // overlapping the first. Busy 100-400 and 600-700 of 100-700.
  region(s, kStreamA, kKernel, 100, 300);
  region(s, kStreamA, kKernel, 600, 700);
  region(s, kStreamB, kCopy, 200, 400);
  region(s, kSyncLocation, kSync, 50, 650);  // the host waiting: not device work time
  EXPECT_EQ(s.work().at("gemm(float*)").calls, 2u);
  EXPECT_EQ(s.work().at("gemm(float*)").total_ns, 300u);
  EXPECT_EQ(s.work().at("gemm(float*)").min_ns, 100u);
  EXPECT_EQ(s.work().at("gemm(float*)").max_ns, 200u);
  EXPECT_EQ(s.work().at("[CUDA memcpy HtoD]").total_ns, 200u);
  EXPECT_EQ(s.api().at("cudaLaunchKernel").calls, 2u);
  EXPECT_EQ(s.api().at("cudaLaunchKernel").total_ns, 15u);
  EXPECT_EQ(s.api().count("step"), 0u);
  const auto devices = s.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].name, "GPU 0 (Test GPU, sm_90)");
  EXPECT_EQ(devices[0].busy_ns, 400u);
  EXPECT_EQ(devices[0].span_ns, 600u);

  std::ostringstream out;
  print_gpu_summary(out, s, 10);
  const std::string text = out.str();
  EXPECT_NE(text.find("GPU activities"), std::string::npos) << text;
  EXPECT_NE(text.find("gemm(float*)"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 0 (Test GPU, sm_90): idle 33.3%"), std::string::npos) << text;
  EXPECT_NE(text.find("CUDA API calls"), std::string::npos) << text;
}

TEST(GpuSummary, NothingWithoutCuda) {
  const otf2::Archive a = gpu_archive();
  GpuStats s(a);
  region(s, kHost, kUserRange, 0, 1000);
  EXPECT_TRUE(s.empty());
  std::ostringstream out;
  print_gpu_summary(out, s, 10);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace hybridprof::report
