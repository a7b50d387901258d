// Process boundaries and hostile stacks: exec, a corrupted stack, mpirun.
#include <algorithm>
#include <cstdlib>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

class ProcessImages : public IntegrationTest {};

TEST_F(ProcessImages, ExecKeepsProfilingInANewImage) {
  const std::string dir = scratch / "D";
  const RunResult r = profile({"-o", dir}, {fixture("exec_chain")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  Profile p(dir);
  EXPECT_EQ(p.archive().processes.size(), 2u) << "one location group per process image";
  EXPECT_GE(p.self_samples("first_image_work"), 100u);
  EXPECT_GE(p.self_samples("second_image_work"), 100u);
  // Both images have the same PID but are separate processes in the archive.
  uint32_t first = otf2::kUndefined, second = otf2::kUndefined;
  for (const auto& [location, n] : p.self_samples_by_location("first_image_work")) first = p.process_of(location);
  for (const auto& [location, n] : p.self_samples_by_location("second_image_work")) second = p.process_of(location);
  EXPECT_NE(first, second);
  for (const std::string& line : r.err_lines())
    EXPECT_EQ(line.find("without a final flush"), std::string::npos) << "the first image flushes before exec: " << line;
}

TEST_F(ProcessImages, BrokenStackIsCountedNeverFatal) {
  const std::string dir = scratch / "D";
  const RunResult r = profile({"-o", dir}, {fixture("broken_stack")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("survived"), std::string::npos);
  Profile p(dir);
  const uint64_t broken = p.self_samples("spin_on_broken_stack");
  EXPECT_GE(broken, 200u);
  uint64_t failures = 0;
  for (const auto& [location, thread] : p.archive().threads)
    failures += p.thread_property(location, "UNWIND_FAILURES");
  EXPECT_GE(failures, broken * 9 / 10) << "every unwind through the garbage frame must count as failed";
  // Those samples hang under the incomplete-unwind root, not under main.
  uint64_t under_marker = 0;
  for (const auto& s : p.samples()) {
    if (p.leaf_name(s.context) != "spin_on_broken_stack") continue;
    const auto& path = p.path_names(s.context);
    under_marker += !path.empty() && path.front() == "[incomplete unwind]";
    EXPECT_EQ(std::find(path.begin(), path.end(), "main"), path.end()) << "a broken stack cannot reach main";
  }
  EXPECT_EQ(under_marker, broken);
}

TEST_F(ProcessImages, MpirunRanksShareOneJobArchive) {
  if (!have_program("mpirun")) GTEST_SKIP() << "mpirun is not installed";
  const std::string dir = scratch / "J";
  RunOptions options;
  options.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
  options.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  options.env["OMPI_MCA_rmaps_base_oversubscribe"] = "1";
  const RunResult r = run({"mpirun", "-np", "2", launcher(), "-o", dir, "--", fixture("split_workload"), "1", "0.3"},
                          options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // One archive for the job, one process per rank.
  Profile p(dir);
  EXPECT_EQ(p.archive().processes.size(), 2u);
  for (const auto& [location, n] : p.self_samples_by_location("leaf_fifty")) EXPECT_GE(n, 50u);
  EXPECT_EQ(p.self_samples_by_location("leaf_fifty").size(), 2u);
}

}  // namespace
}  // namespace hybridprof::integration
