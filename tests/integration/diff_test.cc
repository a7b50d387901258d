// hybridprof-report --diff BASE NEW on real runs: one function made twice
// as slow ranks first, near +100% in time; two runs of the same program
// differ by noise only; traced regions compare by calls and time; runs of
// different programs compare, with a warning.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

struct Row {
  std::string change, relative, name, base_count, new_count;
  double change_value = 0;
  double base_share = 0, new_share = 0;  // percent (shares only)
};
// The rows of section `title` of a diff, in order.
std::vector<Row> section(const std::string& report, const std::string& title) {
  std::vector<Row> rows;
  bool in = false;
  for (const std::string& line : split_lines(report)) {
    if (line == title) {
      in = true;
      continue;
    }
    if (!in) continue;
    if (line.empty() || line[0] != ' ') break;
    std::istringstream fields(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(fields), {}};
    if (w.size() < 8 || w[0] == "Change") continue;
    // "+14.4 pts +38% 38.2% 52.6% 380 744 NAME", or with --absolute
    // "+0.364 s +96% 0.380 s 0.744 s 380 744 NAME".
    Row r;
    r.change = w[0] + " " + w[1];
    r.change_value = std::atof(w[0].c_str());
    r.relative = w[2];
    const size_t name_at = w[1] == "s" ? 9 : 7;
    r.base_count = w[name_at - 2];
    r.new_count = w[name_at - 1];
    if (w[1] == "pts") r.base_share = std::atof(w[3].c_str()), r.new_share = std::atof(w[4].c_str());
    for (size_t i = name_at; i < w.size(); ++i) r.name += (r.name.empty() ? "" : " ") + w[i];
    rows.push_back(r);
  }
  return rows;
}

class Diff : public IntegrationTest {
 protected:
  std::string run_workload(const std::string& name, const std::string& slow) {
    const std::string d = scratch / name;
    const RunResult r = profile({"-o", d}, {fixture("diff_workload"), slow, "40", "0.005"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return d;
  }
};

TEST_F(Diff, TheFunctionMadeSlowerRanksFirst) {
  const std::string base = run_workload("base", "1"), slower = run_workload("slower", "2");
  const RunResult shares = run({report_tool(), "--diff", base, slower});
  ASSERT_EQ(shares.exit_code, 0) << shares.describe();
  const std::vector<Row> self = section(shares.out, "Functions by self time");
  ASSERT_FALSE(self.empty()) << shares.out;
  EXPECT_EQ(self.front().name, "diff_beta (diff_workload)") << shares.out;
  EXPECT_GT(self.front().change_value, 8) << "a share that grew: 2/5 of the work became 4/7";
  const RunResult time = run({report_tool(), "--diff", base, slower, "--absolute"});
  ASSERT_EQ(time.exit_code, 0) << time.describe();
  const std::vector<Row> absolute = section(time.out, "Functions by self time");
  ASSERT_FALSE(absolute.empty()) << time.out;
  EXPECT_EQ(absolute.front().name, "diff_beta (diff_workload)") << time.out;
  const double relative = std::atof(absolute.front().relative.c_str());
  EXPECT_NEAR(relative, 100, 25) << "twice as slow: " << time.out;
}

TEST_F(Diff, TwoRunsOfTheSameWorkDifferByNoiseOnly) {
  const std::string one = run_workload("one", "1"), two = run_workload("two", "1");
  const RunResult r = run({report_tool(), "--diff", one, two});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(r.err.empty()) << r.err;
  const std::vector<Row> self = section(r.out, "Functions by self time");
  ASSERT_FALSE(self.empty()) << r.out;
  // Noise: the difference of two sampled shares has a standard deviation
  // of sqrt(p (1 - p) (1/n1 + 1/n2)); no change may pass four of them.
  double base_total = 0, new_total = 0;
  for (const Row& row : self) {
    if (row.base_share > 0) base_total = std::atof(row.base_count.c_str()) * 100 / row.base_share;
    if (row.new_share > 0) new_total = std::atof(row.new_count.c_str()) * 100 / row.new_share;
  }
  ASSERT_GT(base_total, 500);
  ASSERT_GT(new_total, 500);
  // The workload's own functions: the clock reads its leaves poll cost more
  // on a busy machine ([vdso], [kernel]), which is a real change.
  for (const Row& row : self) {
    if (row.name.rfind("diff_", 0) != 0) continue;
    const double p = (std::atof(row.base_count.c_str()) + std::atof(row.new_count.c_str())) / (base_total + new_total);
    const double sigma = 100 * std::sqrt(p * (1 - p) * (1 / base_total + 1 / new_total));
    EXPECT_LT(std::abs(row.change_value), std::max(1.0, 4 * sigma)) << row.name << " " << row.change;
  }
}

TEST_F(Diff, TracedRegionsCompareByTimeAndCallsAndOtherProgramsWarn) {
  if (!file_exists(fixture("nvtx_steps"))) GTEST_SKIP() << "built without NVTX 3";
  const std::string three = scratch / "three", six = scratch / "six";
  ASSERT_EQ(profile({"-o", three}, {fixture("nvtx_steps"), "3", "0.02"}).exit_code, 0);
  ASSERT_EQ(profile({"-o", six}, {fixture("nvtx_steps"), "6", "0.02"}).exit_code, 0);
  const RunResult r = run({report_tool(), "--diff", three, six, "--absolute"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  bool steps = false;
  for (const Row& row : section(r.out, "Traced regions (MPI, OpenMP, CUDA, NVTX)"))
    steps |= row.name == "user: step" && row.base_count == "3" && row.new_count == "6" && row.change_value > 0;
  EXPECT_TRUE(steps) << "3 step ranges, then 6:\n" << r.out;
  const RunResult other = run({report_tool(), "--diff", three, run_workload("base", "1")});
  EXPECT_EQ(other.exit_code, 0) << other.describe();
  EXPECT_NE(other.err.find("different programs"), std::string::npos) << other.err;
  // --absolute alone is a usage error.
  EXPECT_NE(run({report_tool(), "--absolute", three}).exit_code, 0);
}

}  // namespace
}  // namespace hybridprof::integration
