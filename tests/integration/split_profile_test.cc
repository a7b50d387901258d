// The launcher on split_workload: two threads, a 24-deep recursion, leaves
// with a 50/30/20 CPU split. The archive must reproduce the split, the full
// call paths and the per-thread counts; the tools and viewers must read it.
#include <algorithm>
#include <regex>
#include <set>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

const std::vector<std::string> kLeaves = {"leaf_fifty", "leaf_thirty", "leaf_twenty"};
const std::map<std::string, double> kExpectedShare = {{"leaf_fifty", 50}, {"leaf_thirty", 30}, {"leaf_twenty", 20}};

bool is_leaf_function(const std::string& name) {
  return std::find(kLeaves.begin(), kLeaves.end(), name) != kLeaves.end();
}

class SplitProfile : public IntegrationTest {};

TEST_F(SplitProfile, SharesPathsAndThreadCounts) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-F", "1000", "-o", d}, {fixture("split_workload"), "2", "1.5"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("hybridprof: archive " + d + "/traces.otf2"), std::string::npos) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error << "\n" << r.describe();

  // 1. Self shares among the three leaves: 50/30/20 within 5 points.
  std::map<std::string, uint64_t> self;
  uint64_t leaf_total = 0;
  for (const auto& leaf : kLeaves) leaf_total += self[leaf] = p->self_samples(leaf);
  ASSERT_GT(leaf_total, 1000u) << "samples in the leaves: fifty " << self["leaf_fifty"] << ", thirty "
                               << self["leaf_thirty"] << ", twenty " << self["leaf_twenty"] << " of "
                               << p->samples().size();
  for (const auto& leaf : kLeaves) {
    const double share = 100.0 * double(self[leaf]) / double(leaf_total);
    EXPECT_NEAR(share, kExpectedShare.at(leaf), 5.0)
        << leaf << ": " << self[leaf] << " of " << leaf_total << " leaf samples";
  }

  // 2. Leaf samples carry the whole recursion and a complete stack.
  uint64_t complete = 0, shown = 0;
  std::string examples;
  for (const auto& s : p->samples()) {
    if (!is_leaf_function(p->leaf_name(s.context))) continue;
    const auto& names = p->path_names(s.context);
    const auto descends = std::count(names.begin(), names.end(), "descend");
    const bool cut = names.front() == "[truncated stack]" || names.front() == "[incomplete unwind]";
    if (descends >= 24 && !cut) {
      ++complete;
    } else if (shown++ < 3) {
      examples += "\n  " + std::to_string(descends) + " descend frames, outermost '" + names.front() + "'";
    }
  }
  EXPECT_GE(double(complete), 0.9 * double(leaf_total))
      << complete << " of " << leaf_total << " leaf samples have >= 24 descend frames and a complete stack;"
      << " for example:" << examples;

  // 3. Two worker threads, each with >= 500 samples (property and events).
  const auto events = p->samples_by_location();
  std::vector<std::pair<uint64_t, uint64_t>> workers;  // (leaf samples, location)
  for (const auto& [loc, thread] : p->archive().threads) {
    uint64_t n = 0;
    for (const auto& leaf : kLeaves) {
      const auto by_loc = p->self_samples_by_location(leaf);
      if (auto it = by_loc.find(loc); it != by_loc.end()) n += it->second;
    }
    if (n > 0) workers.emplace_back(n, loc);
  }
  std::sort(workers.rbegin(), workers.rend());
  ASSERT_GE(workers.size(), 2u) << "threads with samples in the leaves";
  for (size_t i = 0; i < 2; ++i) {
    const uint64_t loc = workers[i].second;
    const auto it = events.find(loc);
    EXPECT_GE(p->thread_property(loc, "SAMPLES"), 500u) << "SAMPLES of worker location " << loc;
    EXPECT_GE(it == events.end() ? 0 : it->second, 500u) << "sample events of worker location " << loc;
  }
  EXPECT_NE(workers[0].second, workers[1].second);

  // 4. OTF2's own reader accepts the archive.
  if (have_program("otf2-print")) {
    RunOptions quiet;
    quiet.discard_stdout = true;
    const RunResult print = run({"otf2-print", d + "/traces.otf2"}, quiet);
    EXPECT_EQ(print.exit_code, 0) << print.describe();
  } else {
    ADD_FAILURE() << "otf2-print is not installed (otf2-tools)";
  }
}

TEST_F(SplitProfile, ReportNamesTheHotLeafWithAPercentage) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {fixture("split_workload"), "2", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_TRUE(file_exists(report_tool())) << report_tool() << " was not built";
  const RunResult report = run({report_tool(), d});
  EXPECT_EQ(report.exit_code, 0) << report.describe();
  EXPECT_NE(report.out.find("leaf_fifty"), std::string::npos) << report.describe();
  EXPECT_TRUE(std::regex_search(report.out, std::regex(R"([0-9]+(\.[0-9]+)?\s?%)"))) << report.describe();
}

TEST_F(SplitProfile, EnterLeaveArchiveOpensInVite) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-F", "1000", "--enter-leave", "-o", d}, {fixture("split_workload"), "2", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string el = d + "/enter-leave/traces.otf2";
  ASSERT_TRUE(file_exists(el)) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);  // the calling-context archive is still written
  ASSERT_TRUE(p) << error;
  EXPECT_GT(p->self_samples("leaf_fifty"), 100u);
  // The enter/leave archive: region events, and leaf_fifty among them.
  {
    otf2::ArchiveReader reader(el);
    uint64_t enters = 0, leaf_enters = 0;
    const auto& regions = reader.archive().regions;
    reader.read_events([](const otf2::SampleEvent&) {},
                       [&](const otf2::RegionEvent& e) {
                         if (!e.enter) return;
                         ++enters;
                         auto it = regions.find(e.region);
                         leaf_enters += it != regions.end() && it->second.name == "leaf_fifty";
                       });
    EXPECT_GT(enters, 0u);
    EXPECT_GT(leaf_enters, 0u);
  }
  if (!have_program("vite")) GTEST_SKIP() << "vite is not installed";
  const ViteExport vite = vite_export(el, scratch.path());
  EXPECT_EQ(vite.run.exit_code, 0) << vite.run.describe();
  EXPECT_TRUE(vite.parsed_clean) << vite.run.describe();
  EXPECT_TRUE(vite.complaints.empty()) << "vite said: " << vite.complaints.front();
  ASSERT_FALSE(vite.svg.empty()) << vite.run.describe();
  // ViTE's SVG labels only containers, not states: count the state
  // rectangles it drew. Each sampled function entered is one; a calling-
  // context archive would give none.
  const size_t rectangles = vite.count("<rect");
  EXPECT_GT(rectangles, 100u) << "ViTE drew too few states";
}

}  // namespace
}  // namespace hybridprof::integration
