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
  EXPECT_EQ(s.work().count("[CUDA sync: stream]"), 0u) << "a wait is not the device's work";
  EXPECT_EQ(s.syncs().at("[CUDA sync: stream]").total_ns, 600u);
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
  EXPECT_NE(text.find("CUDA synchronization"), std::string::npos) << text;
}

// Work and the call that launched it carry the same correlation id: the
// wait from the call's start to the work's, per device, with ids matched
// only within their own process.
TEST(GpuSummary, LaunchToStartPerDevice) {
  otf2::Archive a = gpu_archive();
  constexpr uint32_t kCorrelation = 7, kOther = 8;
  constexpr uint64_t kHost2 = 10, kStream2 = 11;
  a.parameters[kCorrelation] = "CUDA correlation id";
  a.parameters[kOther] = "CUDA bytes";
  a.processes[1] = {1, "rank 1", {}};
  a.devices[1] = {"GPU 0 (Test GPU, sm_90)", 1};
  a.threads[kHost2] = {kHost2, "main thread", 1, {}, 0};
  a.threads[kStream2] = {kStream2, "CUDA stream 7", 1, {}, 0, 1};
  GpuStats s(a);
  const auto parameter = [&](uint64_t location, uint64_t t, uint32_t p, uint64_t value) {
    s.add(otf2::ParameterEvent{location, t, p, value});
  };
  parameter(kHost, 10, kCorrelation, 1);
  parameter(kHost, 20, kCorrelation, 2);
  parameter(kHost, 30, kCorrelation, 3);
  parameter(kHost, 40, kCorrelation, 4);  // launched nothing (a cudaMalloc)
  region(s, kStreamA, kKernel, 100, 300);
  parameter(kStreamA, 100, kCorrelation, 1);  // waited 90
  parameter(kStreamA, 100, kOther, 2);        // not an id
  region(s, kStreamA, kKernel, 600, 700);
  parameter(kStreamA, 600, kCorrelation, 2);  // waited 580
  region(s, kStreamB, kKernel, 25, 28);
  parameter(kStreamB, 25, kCorrelation, 3);  // before its call: the clocks disagree by 5, a wait of 0
  region(s, kStreamB, kCopy, 200, 400);
  parameter(kStreamB, 200, kCorrelation, 99);  // its call is not in the archive
  // The other process's id 1 is its own call's.
  parameter(kHost2, 500, kCorrelation, 1);
  region(s, kStream2, kKernel, 550, 560);
  parameter(kStream2, 550, kCorrelation, 1);

  const auto devices = s.devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].launched, 3u);
  EXPECT_EQ(devices[0].unlaunched, 1u);
  EXPECT_EQ(devices[0].latency_median_ns, 90u);
  EXPECT_EQ(devices[0].latency_p95_ns, 580u);
  EXPECT_EQ(devices[0].latency_max_ns, 580u);
  EXPECT_EQ(devices[1].launched, 1u);
  EXPECT_EQ(devices[1].latency_max_ns, 50u);

  std::ostringstream out;
  print_gpu_summary(out, s, 10);
  const std::string text = out.str();
  EXPECT_NE(text.find("launch to start (from the call's start to the work's): median 0.090 us"), std::string::npos)
      << text;
  EXPECT_NE(text.find("1 of its kernels, copies and memsets have no launching call"), std::string::npos) << text;
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
