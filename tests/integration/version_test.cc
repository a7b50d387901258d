// Each tool says which hybridprof it is, and each archive records the same:
// the version and the git commit it was built from.
#include <gtest/gtest.h>

#include <regex>

#include "integration_support.h"
#include "otf2/archive_reader.h"
#include "otf2/property_names.h"

namespace hybridprof::integration {
namespace {

class Version : public IntegrationTest {};

// The commit this source tree is at (12 hex digits), or "" outside git.
std::string source_commit() {
  const RunResult r = run({"git", "-C", HP_SOURCE_DIR, "rev-parse", "--short=12", "HEAD"});
  return r.exit_code == 0 && r.out.size() > 12 ? r.out.substr(0, 12) : "";
}

TEST_F(Version, EachToolAndEachArchiveNameTheVersionAndTheCommit) {
  const std::string commit = source_commit();
  const std::regex line(R"(^(\S+) (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}(-modified)?|unknown)\)\n$)");
  std::string version;
  for (const std::string& tool : {launcher(), report_tool(), merge_tool(), std::string(HP_BUILD_DIR) + "/bin/hybridprof-convert"}) {
    const RunResult r = run({tool, "--version"});
    ASSERT_EQ(r.exit_code, 0) << tool << r.describe();
    std::smatch m;
    ASSERT_TRUE(std::regex_match(r.out, m, line)) << tool << ": " << r.out;
    EXPECT_EQ(tool.substr(tool.rfind('/') + 1), m[1].str());
    if (!commit.empty()) {
      EXPECT_EQ(m[3].str().substr(0, 12), commit) << "built from another commit than the tree's";
    }
    if (version.empty()) version = m[2].str();
    EXPECT_EQ(m[2].str(), version) << tool;
  }
  const std::string d = scratch / "D";
  ASSERT_EQ(profile({"-o", d}, {"/bin/true"}).exit_code, 0);
  const otf2::ArchiveReader reader(d);
  const auto& properties = reader.archive().properties;
  ASSERT_TRUE(properties.count(otf2::property::kVersion) && properties.count(otf2::property::kCommit));
  EXPECT_EQ(properties.at(otf2::property::kVersion), version);
  if (!commit.empty()) {
    EXPECT_EQ(properties.at(otf2::property::kCommit).substr(0, 12), commit);
  }
  EXPECT_NE(run({report_tool(), d}).out.find("  hybridprof version      " + version + " (commit "), std::string::npos);
}

}  // namespace
}  // namespace hybridprof::integration
