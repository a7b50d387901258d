// The output where users look, in a real browser: Debian's headless
// Chromium, driven by puppeteer-core (tests/browser/view_in_browser.js,
// the npm packages in the build tree's browser/, installed by
// tools/setup-and-run.sh test). speedscope, served from its npm package by
// a local HTTP server, loads hybridprof-convert's Chrome JSON and the
// report's folded stacks and lists the program's functions; the report's
// SVG flame graph zooms when a frame is clicked. Screenshots are kept in
// the build tree's browser-shots/.
#include <filesystem>
#include <fstream>
#include <string>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

const std::string kModules = std::string(HP_BUILD_DIR) + "/browser/node_modules";
const std::string kShots = std::string(HP_BUILD_DIR) + "/browser-shots";

class Browser : public IntegrationTest {
 protected:
  void SetUp() override {
    if (!have_program("node") || !file_exists("/usr/bin/chromium"))
      GTEST_SKIP() << "no node or chromium (tools/setup-and-run.sh test installs them)";
    if (!file_exists(kModules + "/puppeteer-core/package.json") || !file_exists(kModules + "/speedscope/package.json"))
      GTEST_SKIP() << "no npm packages in " << kModules << " (tools/setup-and-run.sh test installs them)";
    std::filesystem::create_directories(kShots);
    const RunResult r = profile({"-o", run_dir}, {fixture("split_workload"), "1", "0.5"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
  RunResult view(const std::vector<std::string>& args) {
    RunOptions options;
    options.env["NODE_PATH"] = kModules;
    std::vector<std::string> argv{"node", std::string(HP_SOURCE_DIR) + "/tests/browser/view_in_browser.js"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, options);
  }
  std::string run_dir = scratch / "run";
};

// Every leaf of the 50/30/20 example is listed by name.
void expect_speedscope_lists_the_leaves(const RunResult& r, const std::string& file) {
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("title " + file + " - speedscope"), std::string::npos) << r.out;
  for (const char* leaf : {"text leaf_fifty", "text leaf_thirty", "text leaf_twenty"})
    EXPECT_NE(r.out.find(leaf), std::string::npos) << leaf << " not on the page\n" << r.out;
  EXPECT_EQ(r.out.find("error "), std::string::npos) << r.out;
}

TEST_F(Browser, SpeedscopeOpensTheChromeTraceAndTheFoldedStacks) {
  const std::string json = scratch / "trace.json";
  ASSERT_EQ(run({std::string(HP_BUILD_DIR) + "/bin/hybridprof-convert", "--to", "chrome", run_dir, "-o", json}).exit_code,
            0);
  expect_speedscope_lists_the_leaves(
      view({"speedscope", kModules + "/speedscope/dist/release", json, kShots + "/speedscope-chrome-trace.png"}),
      "trace.json");
  const std::string folded = scratch / "stacks.folded";
  const RunResult f = run({report_tool(), "--folded", run_dir});
  ASSERT_EQ(f.exit_code, 0) << f.describe();
  std::ofstream(folded) << f.out;
  expect_speedscope_lists_the_leaves(
      view({"speedscope", kModules + "/speedscope/dist/release", folded, kShots + "/speedscope-folded.png"}),
      "stacks.folded");
}

TEST_F(Browser, TheFlameGraphZoomsWhenAFrameIsClicked) {
  const std::string svg = scratch / "flame.svg";
  ASSERT_EQ(run({report_tool(), "--flamegraph", svg, run_dir}).exit_code, 0);
  const RunResult r = view({"svg", svg, kShots + "/flamegraph-zoomed.png"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out.find("error "), std::string::npos) << r.out;
  uint64_t frames = 0, zoomed = 0;
  for (const std::string& line : split_lines(r.out)) {
    if (line.rfind("frames ", 0) == 0) frames = std::stoull(line.substr(7));
    if (line.rfind("zoomed ", 0) == 0) zoomed = std::stoull(line.substr(7));
  }
  EXPECT_GT(frames, 5u) << r.out;
  EXPECT_GT(zoomed, 2u) << "a click on a frame widens it and its children\n" << r.out;
}

}  // namespace
}  // namespace hybridprof::integration
