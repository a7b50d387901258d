// A program linked with the CUDA runtime, under the launcher, on a machine
// without a CUDA driver (as where the tests run; on a GPU node the checks
// that need the driver to be missing are skipped): it exits with its own
// status, one line says GPU activity is not traced and why, and its host
// samples are as without CUDA.
#include <dlfcn.h>

#include <algorithm>
#include <string>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

#ifdef HP_HAVE_CUDA_FIXTURE

bool have_cuda_driver() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) dlclose(driver);
  return driver != nullptr;
}

TEST(Cuda, WithoutADriverTheProgramRunsOnAndOneLineSaysWhy) {
  if (have_cuda_driver()) GTEST_SKIP() << "this machine has a CUDA driver";
  TempDir dir;
  const RunResult r = profile({"-o", dir / "out", "-F", "1000"}, {fixture("cuda_runtime_app"), "0.4"});
  EXPECT_EQ(r.exit_code, 7) << "the program's own status: CUDA gave it no device\n" << r.describe();
  EXPECT_NE(r.out.find("devices 0"), std::string::npos) << r.describe();
  const auto lines = r.err_lines();
  const auto said = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("hybridprof: CUDA: ", 0) == 0 && l.find("no CUDA driver") != std::string::npos &&
           l.find("libcudart.so") != std::string::npos;
  });
  EXPECT_EQ(said, 1) << "one line names the cause\n" << r.describe();

  // The host side is profiled as usual: the program's CPU time is in host_work.
  Profile p(dir / "out");
  const double total = double(p.samples().size());
  ASSERT_GT(total, 0) << r.describe();
  EXPECT_GE(double(p.inclusive_samples("host_work")) / total, 0.6) << "host_work ran almost all the CPU time";
  EXPECT_TRUE(p.archive().devices.empty()) << "no GPU streams";
}

#endif  // HP_HAVE_CUDA_FIXTURE

}  // namespace
}  // namespace hybridprof::integration
