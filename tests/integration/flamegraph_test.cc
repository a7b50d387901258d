// hybridprof-report --flamegraph: a self-contained SVG whose frames' widths
// are the samples, read back by an XML parser
// (tests/integration/flamegraph_check.py): on the 50/30/20 example each
// leaf's share of the width is its share in the flat profile, within 3
// points; --icicle puts the roots at the top; the window and thread
// filters cut the samples; bad output paths fail with one line and leave
// nothing.
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

struct FlameFacts {
  std::vector<std::string> problems;
  uint64_t frames = 0;
  bool script = false, root_top = false;
  std::map<std::string, double> self;  // percent of the width
};

FlameFacts check_flamegraph(const std::string& svg) {
  FlameFacts f;
  for (const std::string& line : check_with("flamegraph_check.py", svg)) {
    std::istringstream in(line);
    std::string what;
    in >> what;
    if (what == "problem") f.problems.push_back(line);
    else if (what == "frames") in >> f.frames;
    else if (what == "script") f.script = line == "script yes";
    else if (what == "root_top") f.root_top = line == "root_top yes";
    else if (what == "self") {
      double percent = 0;
      in >> percent;
      std::string name;
      std::getline(in >> std::ws, name);
      f.self[name] = percent;
    }
  }
  return f;
}

class FlameGraph : public IntegrationTest {};

TEST_F(FlameGraph, LeafWidthsAreTheFlatProfilesShares) {
  const std::string d = scratch / "run";
  const RunResult r = profile({"-o", d}, {fixture("split_workload"), "1", "0.6"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string svg = scratch / "flame.svg";
  const RunResult made = run({report_tool(), "--flamegraph", svg, d});
  ASSERT_EQ(made.exit_code, 0) << made.describe();
  const FlameFacts f = check_flamegraph(svg);
  EXPECT_TRUE(f.problems.empty()) << ::testing::PrintToString(f.problems);
  EXPECT_TRUE(f.script) << "click to zoom and Search need the inline script";
  EXPECT_FALSE(f.root_top) << "a flame graph grows upwards";
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  const double total = double(p->samples().size());
  ASSERT_GT(total, 100);
  for (const char* leaf : {"leaf_fifty", "leaf_thirty", "leaf_twenty"}) {
    const double flat = 100.0 * double(p->self_samples(leaf)) / total;
    ASSERT_TRUE(f.self.count(leaf)) << leaf;
    EXPECT_NEAR(f.self.at(leaf), flat, 3.0) << leaf;
  }
  // Upside down, the same frames.
  const std::string icicle = scratch / "icicle.svg";
  ASSERT_EQ(run({report_tool(), "--flamegraph", icicle, "--icicle", d}).exit_code, 0);
  const FlameFacts i = check_flamegraph(icicle);
  EXPECT_TRUE(i.root_top);
  EXPECT_EQ(i.frames, f.frames);
  // A window of the run holds fewer samples: the leaves' shares stay.
  const std::string part = scratch / "part.svg";
  ASSERT_EQ(run({report_tool(), "--flamegraph", part, "--time", "0:0.2", d}).exit_code, 0);
  EXPECT_TRUE(check_flamegraph(part).problems.empty());
}

TEST_F(FlameGraph, BadOutputsFailWithOneLineAndLeaveNothing) {
  const std::string d = scratch / "run";
  ASSERT_EQ(profile({"-o", d}, {fixture("split_workload"), "1", "0.05"}).exit_code, 0);
  const RunResult unwritable = run({report_tool(), "--flamegraph", "/proc/no/such/flame.svg", d});
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable.describe();
  EXPECT_EQ(split_lines(unwritable.err).size(), 1u) << unwritable.err;
  const RunResult icicle_alone = run({report_tool(), "--icicle", d});
  EXPECT_EQ(icicle_alone.exit_code, 1) << icicle_alone.describe();
  const std::string svg = scratch / "none.svg";
  const RunResult nothing = run({report_tool(), "--flamegraph", svg, "--threads", "1", d});
  EXPECT_EQ(nothing.exit_code, 1) << nothing.describe();
  EXPECT_FALSE(file_exists(svg));
  for (const auto& e : std::filesystem::directory_iterator(scratch.path()))
    EXPECT_EQ(e.path().string().find(".partial."), std::string::npos) << e.path();
}

}  // namespace
}  // namespace hybridprof::integration
