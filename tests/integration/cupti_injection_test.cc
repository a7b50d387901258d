// The runtime's CUDA injection end to end, without a GPU: the fake CUDA
// driver and CUPTI (tests/fixtures/fake_cuda) load the injection as the
// driver does and call it back as CUPTI does, so what a GPU node would
// record (kernels under their launching calls, the profiler API's capture
// windows, a fork child, a CUPTI that refuses) is checked on every build.
// What only a real GPU shows (CUPTI's own records, timing, PyTorch) is
// benchmarks/gpu/check.sh's.
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "integration_support.h"
#include "otf2/capture_windows.h"

namespace hybridprof::integration {
namespace {

#ifdef HP_HAVE_FAKE_CUDA

RunOptions with_fake_cupti(std::map<std::string, std::string> env = {}) {
  RunOptions options;
  options.env = std::move(env);
  options.env["HYBRIDPROF_CUPTI_LIBRARY"] = fixture("libfake_cuda.so");
  return options;
}

// CUDA regions' enters: on the host threads by name, and the device's
// work with the region names of its calling context, in time order.
struct CudaTrace {
  std::map<std::string, int> host_calls;
  struct Work {
    uint64_t timestamp;
    std::string name;
    std::vector<std::string> context;  // outermost first, the work's own last
  };
  std::vector<Work> device_work;
  std::vector<uint64_t> launch_times;  // cudaLaunchKernel's enters
};

CudaTrace read_cuda(const std::string& dir) {
  otf2::ArchiveReader reader(dir);
  const otf2::Archive& a = reader.archive();
  CudaTrace t;
  reader.read_events([](const otf2::SampleEvent&) {}, [&](const otf2::RegionEvent& e) {
    const otf2::RegionInfo& r = a.regions.at(e.region);
    if (!e.enter || r.paradigm != otf2::Paradigm::kCuda) return;
    if (a.threads.at(e.location).device == otf2::kUndefined) {
      ++t.host_calls[r.name];
      if (r.name == "cudaLaunchKernel") t.launch_times.push_back(e.timestamp);
      return;
    }
    CudaTrace::Work w{e.timestamp, r.name, {}};
    if (e.context != otf2::kUndefined)
      for (uint32_t c : a.context_path(e.context)) w.context.push_back(a.regions.at(a.contexts.at(c).region).name);
    t.device_work.push_back(w);
  });
  std::sort(t.device_work.begin(), t.device_work.end(),
            [](const auto& x, const auto& y) { return x.timestamp < y.timestamp; });
  std::sort(t.launch_times.begin(), t.launch_times.end());
  return t;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

class FakeCupti : public IntegrationTest {};

// 20 launches: 20 kernels on the device's stream, each under its
// cudaLaunchKernel and the function that called it, starting after it; the
// driver's cuLaunchKernel inside each is the runtime call's (no region of
// its own); the device is named from CUPTI's record; records CUPTI says it
// dropped are said.
TEST_F(FakeCupti, KernelsHangUnderTheCallsThatLaunchedThem) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("fake_cuda_app"), "kernels", "20"},
                              with_fake_cupti({{"FAKE_CUPTI_DROPPED", "3"}}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("cuda initialized 1"), std::string::npos) << r.describe();
  const CudaTrace t = read_cuda(d);
  EXPECT_EQ(t.host_calls, (std::map<std::string, int>{{"cudaLaunchKernel", 20}, {"cudaDeviceSynchronize", 1}}));
  ASSERT_EQ(t.device_work.size(), 20u) << r.describe();
  ASSERT_EQ(t.launch_times.size(), 20u);
  for (size_t i = 0; i < t.device_work.size(); ++i) {
    const CudaTrace::Work& w = t.device_work[i];
    EXPECT_EQ(w.name, "fake_saxpy(int, float, float const*, float*)");
    EXPECT_TRUE(contains(w.context, "cudaLaunchKernel") && contains(w.context, "launch_kernels"))
        << "kernel " << i << " is not under its launch: " << testing::PrintToString(w.context);
    EXPECT_GE(w.timestamp, t.launch_times[i]) << "kernel " << i << " starts before its call";
  }
  const Profile p(d);
  ASSERT_EQ(p.archive().devices.size(), 1u);
  EXPECT_NE(p.archive().devices.begin()->second.name.find("Fake GPU, sm_90"), std::string::npos)
      << p.archive().devices.begin()->second.name;
  EXPECT_NE(p.notices().find("CUDA: 20 kernels"), std::string::npos) << p.notices();
  EXPECT_NE(r.err.find("CUPTI dropped 3 activity records"), std::string::npos) << r.describe();
}

// cudaProfilerStart/Stop open and close the window once, however many
// layers see the call: CUPTI alone for a statically linked runtime (nvcc's
// default, which no interposer reaches), the interposer and then CUPTI's
// runtime and driver callbacks for a shared one, CUPTI's driver callback
// for cuProfilerStart/Stop. A second change from an inner layer would say
// "changed nothing".
class FakeCuptiWindows : public FakeCupti, public testing::WithParamInterface<std::string> {};

TEST_P(FakeCuptiWindows, TheProfilerApiOpensAndClosesTheWindowOnce) {
  const std::string d = scratch / "D";
  const RunResult r =
      profile({"--paused", "-o", d}, {fixture("fake_cuda_app"), "windows", GetParam(), "0.2"}, with_fake_cupti());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const Profile p(d);
  EXPECT_GT(p.inclusive_samples("in_range"), 50u) << r.describe();
  EXPECT_EQ(p.inclusive_samples("before_range") + p.inclusive_samples("after_range"), 0u);
  std::vector<otf2::CaptureWindow> windows;
  for (const auto& [ref, process] : p.archive().processes)
    for (const otf2::CaptureWindow& w : otf2::capture_windows_of(process)) windows.push_back(w);
  ASSERT_EQ(windows.size(), 1u) << r.describe();
  const std::string api = GetParam() == "driver" ? "cuProfiler" : "cudaProfiler";
  EXPECT_EQ(windows.front().opened_by, api + "Start()");
  EXPECT_EQ(windows.front().closed_by, api + "Stop()");
  EXPECT_EQ(r.err.find("changed nothing"), std::string::npos) << r.describe();
  EXPECT_EQ(p.notices().find("changed nothing"), std::string::npos) << p.notices();
}

INSTANTIATE_TEST_SUITE_P(Layers, FakeCuptiWindows, testing::Values("static", "shared", "driver"));

// CUDA initialized before the window opened (--paused) is traced once it
// opens: the 4 kernels launched inside it hang under their calls; the 5
// launched and run outside it are left out, and said.
TEST_F(FakeCupti, WorkOutsideTheCaptureWindowsIsLeftOut) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"--paused", "-o", d}, {fixture("fake_cuda_app"), "window-kernels"}, with_fake_cupti());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const CudaTrace t = read_cuda(d);
  EXPECT_EQ(t.host_calls, (std::map<std::string, int>{{"cudaLaunchKernel", 4}}));
  ASSERT_EQ(t.device_work.size(), 4u) << r.describe();
  for (const CudaTrace::Work& w : t.device_work)
    EXPECT_TRUE(contains(w.context, "cudaLaunchKernel")) << testing::PrintToString(w.context);
  const Profile p(d);
  EXPECT_NE(p.notices().find("5 pieces of device work"), std::string::npos) << p.notices();
}

// A fork child of a process that traced CUDA never calls the CUPTI state
// it inherited (CUPTI's flush waits there for threads the child does not
// have): only the parent flushes, and the child ends with its final flush
// of samples.
TEST_F(FakeCupti, AForkChildLeavesTheInheritedCuptiAlone) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("fake_cuda_app"), "fork"}, with_fake_cupti());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::smatch child;
  ASSERT_TRUE(std::regex_search(r.out, child, std::regex("child ([0-9]+)"))) << r.describe();
  EXPECT_EQ(r.err.find("fake CUPTI: flush in process " + child[1].str() + "\n"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("fake CUPTI: flush in process "), std::string::npos) << "the parent flushes\n" << r.describe();
  EXPECT_EQ(r.err.find("without a final flush"), std::string::npos) << r.describe();
  EXPECT_EQ(read_cuda(d).device_work.size(), 1u);
}

// CUPTI refusing (here: profiling restricted to administrators) leaves the
// program running with host profiling, and one line says why.
TEST_F(FakeCupti, ARefusingCuptiIsSaidAndHostProfilingGoesOn) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("fake_cuda_app"), "kernels", "100"},
                              with_fake_cupti({{"FAKE_CUPTI_REFUSE", "35"}}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  int said = 0;
  for (const std::string& line : r.err_lines())
    said += line.rfind("hybridprof: CUDA: GPU activity is not traced: cuptiSubscribe: "
                       "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (GPU profiling is restricted to administrators",
                       0) == 0;
  EXPECT_EQ(said, 1) << r.describe();
  EXPECT_TRUE(read_cuda(d).device_work.empty());
  EXPECT_GT(Profile(d).inclusive_samples("launch_kernels"), 0u);
}

// The step verdict on the device (hybridprof-report --step): a Python
// training loop whose steps wait in cudaDeviceSynchronize most of their
// time is device-bound, with the share of step time the program measures
// itself within 10 points and the advice that rests on it; one that
// mostly computes is not, its share right too, and no device advice.
TEST_F(FakeCupti, StepsWaitingForTheDeviceAreDeviceBound) {
  if (!file_exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  for (const auto& [mode, bound] : {std::pair<std::string, bool>{"device", true}, {"compute", false}}) {
    const std::string d = scratch / mode;
    const RunResult r = profile(
        {"-o", d}, {"/usr/bin/python3", fixture("python_device_bound.py"), fixture("libfake_cuda.so"), mode},
        with_fake_cupti());
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    double measured = -1, share = -1;
    bool said_bound = false;
    for (const std::string& line : split_lines(r.out)) std::sscanf(line.c_str(), "device_share %lf", &measured);
    const RunResult report = run({report_tool(), "--step", "train_step", d});
    for (const std::string& line : split_lines(report.out)) {
      if (std::sscanf(line.c_str(), "  device-bound: %lf%%", &share) == 1) said_bound = true;
      std::sscanf(line.c_str(), "  not device-bound: %lf%%", &share);
    }
    ASSERT_GE(share, 0) << mode << ": no device verdict\n" << report.describe();
    EXPECT_EQ(said_bound, bound) << mode << "\n" << report.out;
    EXPECT_NEAR(share, measured, 10.0) << mode << "\n" << report.out;
    EXPECT_EQ(report.out.find("the step waits ") != std::string::npos &&
                  report.out.find("of its time for the device") != std::string::npos,
              bound)
        << "device advice only where the share points to it\n" << report.out;
  }
}

#endif  // HP_HAVE_FAKE_CUDA

}  // namespace
}  // namespace hybridprof::integration
