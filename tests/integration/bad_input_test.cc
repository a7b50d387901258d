// Bad command lines: exit 2, one "hybridprof: ..." line on stderr naming the
// problem, and the program is never started (its side effect, a marker
// file from /usr/bin/touch, must not appear).
#include <algorithm>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

struct BadInput {
  const char* name;
  // Launcher arguments; "@D" is replaced by an output directory in the
  // scratch dir, "@M" by the marker path.
  std::vector<std::string> args;
  // The error line must contain one of these (case-insensitive).
  std::vector<std::string> names_problem;
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.name; }

const std::string kTouch = "/usr/bin/touch";

class BadInputTest : public IntegrationTest, public ::testing::WithParamInterface<BadInput> {};

TEST_P(BadInputTest, RefusedWithOneLineAndNothingStarted) {
  const BadInput& b = GetParam();
  const std::string d = scratch / "D", marker = scratch / "MARKER";
  std::vector<std::string> argv{launcher()};
  for (std::string a : b.args) {
    if (a == "@D") a = d;
    if (a == "@M") a = marker;
    argv.push_back(a);
  }
  RunOptions options;
  options.working_directory = scratch.path();  // a default output dir would land here
  const RunResult r = run(argv, options);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << "stderr should be one line:\n" << r.describe();
  EXPECT_EQ(lines[0].rfind("hybridprof:", 0), 0u) << lines[0];
  const bool named = std::any_of(b.names_problem.begin(), b.names_problem.end(), [&](const std::string& word) {
    return lower(lines[0]).find(lower(word)) != std::string::npos;
  });
  EXPECT_TRUE(named) << "'" << lines[0] << "' names none of " << ::testing::PrintToString(b.names_problem);
  EXPECT_FALSE(file_exists(marker)) << "the program ran";
}

INSTANTIATE_TEST_SUITE_P(
    Launcher, BadInputTest,
    ::testing::Values(
        BadInput{"UnknownFlag", {"--bogus", "-o", "@D", "--", kTouch, "@M"}, {"--bogus"}},
        BadInput{"ZeroFrequency", {"-F", "0", "-o", "@D", "--", kTouch, "@M"}, {"frequency", "-F", "--freq"}},
        BadInput{"HugeFrequency", {"-F", "1000000", "-o", "@D", "--", kTouch, "@M"}, {"1000000"}},
        BadInput{"NonNumericFrequency", {"-F", "abc", "-o", "@D", "--", kTouch, "@M"}, {"abc"}},
        BadInput{"FrequencyAndPeriod", {"-F", "100", "-c", "1000", "-o", "@D", "--", kTouch, "@M"},
                 {"-c", "period"}},
        BadInput{"UnknownEvent", {"-e", "no_such_event", "-o", "@D", "--", kTouch, "@M"}, {"no_such_event"}},
        BadInput{"UnwritableOutput", {"-o", "/proc/forbidden/x", "--", kTouch, "@M"}, {"/proc/forbidden"}},
        BadInput{"OutputIsAFile", {"-o", "/etc/passwd", "--", kTouch, "@M"}, {"/etc/passwd"}},
        BadInput{"MissingProgram", {"-o", "@D", "--", "/nonexistent/prog"}, {"/nonexistent/prog"}},
        BadInput{"NoProgram", {"-o", "@D"}, {"program"}}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

class LauncherInput : public IntegrationTest {};

TEST_F(LauncherInput, SecondRunIntoTheSameDirectoryIsRefused) {
  const std::string d = scratch / "D", marker = scratch / "MARKER";
  const RunResult first = profile({"-o", d}, {fixture("split_workload"), "1", "0.2"});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  std::string error;
  auto before = load_profile(d, &error);
  ASSERT_TRUE(before) << error;

  const RunResult second = profile({"-o", d}, {kTouch, marker});
  expect_refused(second, d, marker);
  auto after = load_profile(d, &error);
  ASSERT_TRUE(after) << "the first archive was damaged: " << error;
  EXPECT_EQ(after->samples().size(), before->samples().size());
}

TEST_F(LauncherInput, HelpAndVersion) {
  const RunResult help = run({launcher(), "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.describe();
  EXPECT_NE(lower(help.out).find("usage"), std::string::npos) << help.describe();
  EXPECT_NE(help.out.find("--enter-leave"), std::string::npos) << help.describe();
  const RunResult version = run({launcher(), "--version"});
  EXPECT_EQ(version.exit_code, 0) << version.describe();
  EXPECT_NE(version.out.find("hybridprof"), std::string::npos) << version.describe();
  EXPECT_NE(version.out.find_first_of("0123456789"), std::string::npos) << version.describe();
}

}  // namespace
}  // namespace hybridprof::integration
