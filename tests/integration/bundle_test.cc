// The relocatable bundle (tools/make-bundle.sh) and the GPU node check it
// carries (benchmarks/gpu/check.sh), on this machine: a copy of the bundle
// made here and moved elsewhere profiles a program with no library path of
// ours, loading nothing of ours from outside itself; the check says why it
// skips on a machine without a GPU.
#include <sys/stat.h>

#include <filesystem>
#include <sstream>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

namespace fs = std::filesystem;

class Bundle : public IntegrationTest {
 protected:
  // One bundle for the suite, made and then moved away from where it was
  // made (its first directory removed): `bundle_`.
  static void SetUpTestSuite() {
    home_ = std::make_unique<TempDir>();
    const std::string made = *home_ / "made";
    made_ = run({std::string(HP_SOURCE_DIR) + "/tools/make-bundle.sh", made, HP_BUILD_DIR},
                RunOptions{{}, {}, false, 300});
    bundle_ = *home_ / "elsewhere/hybridprof";
    fs::create_directories(*home_ / "elsewhere");
    if (made_.exit_code == 0) {
      fs::copy(made, bundle_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
      fs::remove_all(made);
    }
  }
  static void TearDownTestSuite() { home_.reset(); }
  void SetUp() override { ASSERT_EQ(made_.exit_code, 0) << made_.describe(); }

  static std::unique_ptr<TempDir> home_;
  static RunResult made_;
  static std::string bundle_;
};
std::unique_ptr<TempDir> Bundle::home_;
RunResult Bundle::made_;
std::string Bundle::bundle_;

TEST_F(Bundle, ACopyElsewhereProfilesWithNoLibraryPath) {
  EXPECT_NE(made_.out.find("needs: x86-64 Linux, glibc >= "), std::string::npos) << made_.describe();
  const std::string d = scratch / "D";
  RunOptions empty_path;
  empty_path.env = {{"LD_LIBRARY_PATH", ""}, {"HYBRIDPROF_RUNTIME", ""}};
  const RunResult r =
      run({bundle_ + "/bin/hybridprof", "-F", "1000", "-o", d, "--", fixture("split_workload"), "2", "1"}, empty_path);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error << "\n" << r.describe();
  // The program's own split (50/30/20): the runtime sampled and unwound it.
  EXPECT_GT(p->self_samples("leaf_fifty"), p->self_samples("leaf_twenty")) << r.describe();
  EXPECT_GT(p->self_samples("leaf_twenty"), 0u) << r.describe();
  const RunResult report = run({bundle_ + "/bin/hybridprof-report", d}, empty_path);
  EXPECT_EQ(report.exit_code, 0) << report.describe();
  EXPECT_NE(report.out.find("leaf_fifty"), std::string::npos) << report.describe();

  // Every file loads its libraries from the bundle, under names of its own,
  // or from the system: glibc and the C++ runtime only.
  for (const char* dir : {"/bin", "/lib"}) {
    for (const auto& entry : fs::directory_iterator(bundle_ + dir)) {
      const RunResult ldd = run({"ldd", entry.path().string()}, empty_path);
      ASSERT_EQ(ldd.exit_code, 0) << ldd.describe();
      std::istringstream lines(ldd.out);
      for (std::string line; std::getline(lines, line);) {
        const size_t arrow = line.find(" => ");
        if (arrow == std::string::npos) continue;
        std::string soname = line.substr(0, arrow);
        soname.erase(0, soname.find_first_not_of(" \t"));
        const std::string path = line.substr(arrow + 4);
        if (path.rfind(bundle_ + "/", 0) == 0 || path.rfind(bundle_ + "/bin/../lib/", 0) == 0) {
          EXPECT_TRUE(soname.rfind("hybridprof-lib", 0) == 0 || soname.rfind("libhybridprof", 0) == 0)
              << entry.path() << ": " << line;
          continue;
        }
        const bool system = soname.rfind("libc.so", 0) == 0 || soname.rfind("libm.so", 0) == 0 ||
                            soname.rfind("libstdc++.so", 0) == 0 || soname.rfind("libgcc_s.so", 0) == 0 ||
                            soname.rfind("libmpi", 0) == 0 ||
                            entry.path().filename() == "libhybridprof_job_archive.so";  // MPI's own libraries
        EXPECT_TRUE(system) << entry.path() << " loads " << line << " from outside the bundle";
      }
    }
  }
}

TEST_F(Bundle, TheGpuCheckSaysWhyItSkipsWithoutAGpu) {
  struct stat st;
  if (stat("/proc/driver/nvidia/gpus", &st) == 0) GTEST_SKIP() << "this machine has an NVIDIA GPU";
  const std::string check = bundle_ + "/share/hybridprof/benchmarks/gpu/check.sh";
  const RunResult r = run({check, bundle_});
  EXPECT_EQ(r.exit_code, 77) << r.describe();
  EXPECT_EQ(r.out, "no GPU/driver: skipped\n") << r.describe();
  const RunResult no_bundle = run({check, scratch / "nothing"});
  EXPECT_EQ(no_bundle.exit_code, 2) << no_bundle.describe();
  EXPECT_NE(no_bundle.err.find("make the bundle with tools/make-bundle.sh"), std::string::npos) << no_bundle.describe();
}

}  // namespace
}  // namespace hybridprof::integration
