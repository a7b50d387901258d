// How a run ends: the launcher killed by SIGTERM (passed on to the program,
// which flushes and dies by the same signal), the program killed by SIGKILL
// (no final flush; the launcher still writes what reached the disk), and
// hybridprof-merge rebuilding an archive from the raw data.
#include <signal.h>

#include <algorithm>

#include <filesystem>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

class Lifecycle : public IntegrationTest {};

TEST_F(Lifecycle, SigtermToTheLauncher) {
  const std::string d = scratch / "D", pid_file = scratch / "pid";
  Process launcher_process({launcher(), "-o", d, "--", fixture("spin_forever"), pid_file});
  const pid_t program = wait_for_pid_file(pid_file, 10);
  ASSERT_GT(program, 0) << "spin_forever did not start: " << launcher_process.finish().describe();
  // At least 0.7 s of spinning (CPU, so a loaded machine does not starve it).
  ASSERT_TRUE(wait_for_cpu(program, 0.7, 20)) << "spin_forever used " << process_cpu_seconds(program) << " s";
  ASSERT_EQ(kill(launcher_process.pid(), SIGTERM), 0);
  const RunResult r = launcher_process.finish();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error << "\n" << r.describe();
  EXPECT_GE(p->self_samples("spin_forever_loop"), 300u) << p->samples().size() << " samples in all";
  ASSERT_EQ(p->archive().processes.size(), 1u);
  EXPECT_EQ(p->archive().processes.begin()->second.properties.at("EXIT_STATUS"), "signal 15");
}

TEST_F(Lifecycle, SigkillOfTheProgram) {
  const std::string d = scratch / "D", pid_file = scratch / "pid";
  Process launcher_process({launcher(), "-o", d, "--", fixture("spin_forever"), pid_file});
  const pid_t program = wait_for_pid_file(pid_file, 10);
  ASSERT_GT(program, 0) << "spin_forever did not start: " << launcher_process.finish().describe();
  ASSERT_NE(program, launcher_process.pid());
  ASSERT_TRUE(wait_for_cpu(program, 0.7, 20)) << "spin_forever used " << process_cpu_seconds(program) << " s";
  ASSERT_EQ(kill(program, SIGKILL), 0);
  const RunResult r = launcher_process.finish();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.describe();
  bool warned = false;
  for (const auto& line : r.err_lines())
    warned |= line.rfind("hybridprof:", 0) == 0 && lower(line).find("final flush") != std::string::npos;
  EXPECT_TRUE(warned) << "no warning about the missing final flush:\n" << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error << "\n" << r.describe();
  // Everything but the last flush interval (50 ms) reached the disk.
  EXPECT_GE(p->self_samples("spin_forever_loop"), 300u) << p->samples().size() << " samples in all";
}

TEST_F(Lifecycle, MergeRebuildsTheArchiveFromRawData) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("split_workload"), "1", "0.3"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto before = load_profile(d, &error);
  ASSERT_TRUE(before) << error;

  const RunResult refused = run({merge_tool(), d});
  EXPECT_NE(refused.exit_code, 0) << "merge over an existing archive without --force: " << refused.describe();
  const RunResult merged = run({merge_tool(), "--force", d});
  ASSERT_EQ(merged.exit_code, 0) << merged.describe();
  auto after = load_profile(d, &error);
  ASSERT_TRUE(after) << error;
  EXPECT_EQ(after->samples().size(), before->samples().size());
  EXPECT_EQ(after->self_samples("leaf_fifty"), before->self_samples("leaf_fifty"));
  EXPECT_GT(after->self_samples("leaf_fifty"), 0u);
  // With --enter-leave it says where the viewers' archive is, as the launcher does.
  const RunResult viewers = run({merge_tool(), "--force", "--enter-leave", d});
  ASSERT_EQ(viewers.exit_code, 0) << viewers.describe();
  EXPECT_NE(viewers.out.find("enter/leave archive for viewers: " + d + "/enter-leave/traces.otf2"), std::string::npos)
      << viewers.describe();
  EXPECT_TRUE(file_exists(d + "/enter-leave/traces.otf2"));
}

// mpirun may stop a job while the launcher that saw the last rank end is
// still writing the archive (it holds JOB/.finalizing with its pid); a
// merge run then waits for it, and clears what an interrupted writer left.
TEST_F(Lifecycle, MergeWaitsForALauncherStillWritingAndClearsPartialArchives) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("split_workload"), "1", "0.2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::filesystem::remove(d + "/traces.otf2");  // as if its writer was killed halfway
  ASSERT_TRUE(std::filesystem::exists(d + "/traces"));
  // A live launcher (profiling `sleep 1`) holds the claim.
  // (The merge starts once the background child is the launcher, not yet
  // the shell that forks it.)
  const std::string script = "'" + launcher() + "' -o '" + std::string(scratch / "E") + "' -- sleep 1 & p=$!; echo $p > '" +
                             d + "/.finalizing'; while [ \"$(cat /proc/$p/comm)\" != hybridprof ]; do sleep 0.01; done; exec '" +
                             merge_tool() + "' '" + d + "'";
  const RunResult merged = run({"/bin/sh", "-c", script});
  ASSERT_EQ(merged.exit_code, 0) << merged.describe();
  EXPECT_NE(merged.err.find("waiting for hybridprof (pid"), std::string::npos) << merged.describe();
  EXPECT_NE(merged.err.find("incomplete archive"), std::string::npos) << merged.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_GT(p->self_samples("leaf_fifty"), 0u);
}

}  // namespace
}  // namespace hybridprof::integration
