// enter_leave mode: samples become properly nested Enter/Leave that ViTE draws.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "otf2/archive_reader.h"
#include "otf2/region_stack.h"
#include "test_support.h"

namespace hybridprof::otf2 {
namespace {

using testing::TempDir;

struct Step {
  uint64_t time;
  uint32_t region;
  bool enter;
  bool operator==(const Step&) const = default;
};

std::map<uint64_t, std::vector<Step>> read_region_events(const std::string& dir, uint64_t* samples = nullptr) {
  ArchiveReader reader(dir);
  std::map<uint64_t, std::vector<Step>> steps;
  uint64_t sample_count = 0;
  reader.read_events([&](const SampleEvent&) { ++sample_count; },
                     [&](const RegionEvent& e) { steps[e.location].push_back({e.timestamp, e.region, e.enter}); });
  if (samples) *samples = sample_count;
  return steps;
}

// Every leave closes the innermost open enter, and nothing stays open.
void expect_proper_nesting(const std::vector<Step>& steps) {
  std::vector<uint32_t> open;
  uint64_t last_time = 0;
  for (const Step& s : steps) {
    EXPECT_GE(s.time, last_time);
    last_time = s.time;
    if (s.enter) {
      open.push_back(s.region);
    } else {
      ASSERT_FALSE(open.empty()) << "leave of " << s.region << " with nothing open";
      ASSERT_EQ(open.back(), s.region) << "leave does not match the innermost enter";
      open.pop_back();
    }
  }
  EXPECT_TRUE(open.empty());
}

TEST(RegionStack, LeavesInnermostFirstThenEntersOutermostFirst) {
  RegionStack stack;
  std::vector<std::pair<uint32_t, bool>> emitted;
  auto emit = [&](uint32_t r, bool enter) { emitted.emplace_back(r, enter); };
  const std::vector<uint32_t> a{1, 2, 3}, b{1, 4};
  stack.move_to(a, emit);
  stack.move_to(b, emit);
  stack.leave_all(emit);
  EXPECT_EQ(emitted, (std::vector<std::pair<uint32_t, bool>>{
                         {1, true}, {2, true}, {3, true}, {3, false}, {2, false}, {4, true}, {4, false}, {1, false}}));
  EXPECT_TRUE(stack.open().empty());
}

TEST(EnterLeave, SampleSequenceBecomesTheExpectedEvents) {
  TempDir dir;
  uint32_t main, a, b, c;
  {
    ArchiveWriter w({.directory = dir.path(), .enter_leave = true});
    const uint64_t t = w.define_thread(w.define_process("p", w.define_system_tree_node("h", "node", kUndefined)), "t");
    main = w.define_region("main", "m.c", 1, Paradigm::kSampling);
    a = w.define_region("A", "m.c", 2, Paradigm::kSampling);
    b = w.define_region("B", "m.c", 3, Paradigm::kSampling);
    c = w.define_region("C", "m.c", 4, Paradigm::kSampling);
    const uint32_t c_main = w.define_calling_context(main, kUndefined, kUndefined);
    const uint32_t c_a = w.define_calling_context(a, kUndefined, c_main);
    const uint32_t c_b = w.define_calling_context(b, kUndefined, c_main);
    const uint32_t c_c = w.define_calling_context(c, kUndefined, c_b);
    // A sibling context of c_a differing only by call site: same regions, no events.
    const uint32_t c_a_other_site = w.define_calling_context(a, w.define_source_location("m.c", 9), c_main);
    w.write_sample(t, 10, c_a, 1, kUndefined);
    w.write_sample(t, 20, c_a_other_site, 1, kUndefined);
    w.write_sample(t, 30, c_c, 1, kUndefined);
    w.write_sample(t, 40, c_b, 1, kUndefined);
    w.write_sample(t, 50, c_main, 1, kUndefined);
    w.end_thread(t, 60);
    w.close({});
  }
  uint64_t samples = 99;
  auto steps = read_region_events(dir.path(), &samples);
  EXPECT_EQ(samples, 0u);  // no CallingContextSample records in this mode
  EXPECT_EQ(steps[0], (std::vector<Step>{{10, main, true},
                                         {10, a, true},
                                         {30, a, false},
                                         {30, b, true},
                                         {30, c, true},
                                         {40, c, false},
                                         {50, b, false},
                                         {60, main, false}}));
}

TEST(EnterLeave, KnownArchiveIsProperlyNestedOnEveryThread) {
  TempDir dir;
  auto known = testing::write_known_archive(dir.path(), /*enter_leave=*/true);
  auto steps = read_region_events(dir.path());
  ASSERT_EQ(steps.size(), 3u);
  for (const auto& [location, list] : steps) {
    SCOPED_TRACE("location " + std::to_string(location));
    EXPECT_FALSE(list.empty());
    expect_proper_nesting(list);
  }
  // Threads left at close() are closed at their last sample's time.
  EXPECT_EQ(steps[known.t_main].back().time, known.samples[known.t_main].back().first);
}

TEST(EnterLeave, TracedRegionsAreContextsOnTheSampledStack) {
  TempDir dir;
  uint32_t main, send, f, inner;
  {
    ArchiveWriter w({.directory = dir.path(), .enter_leave = true});
    const uint64_t t = w.define_thread(w.define_process("p", w.define_system_tree_node("h", "node", kUndefined)), "t");
    main = w.define_region("main", "m.c", 1, Paradigm::kSampling);
    send = w.define_region("MPI_Send", "", 0, Paradigm::kMpi);
    f = w.define_region("f", "m.c", 5, Paradigm::kSampling);
    inner = w.define_region("progress", "libmpi.c", 9, Paradigm::kSampling);
    const uint32_t c_main = w.define_calling_context(main, kUndefined, kUndefined);
    const uint32_t c_f = w.define_calling_context(f, kUndefined, c_main);
    const uint32_t c_send = w.define_calling_context(send, kUndefined, c_main);
    const uint32_t c_inner = w.define_calling_context(inner, kUndefined, c_send);
    w.write_sample(t, 10, c_f, 2, kUndefined);
    w.write_context_enter(t, 15, c_send, 2);       // main -> MPI_Send: f is left
    w.write_sample(t, 20, c_inner, 3, kUndefined);  // inside MPI_Send
    w.write_context_leave(t, 30, c_send);           // back to main
    w.write_sample(t, 40, c_main, 1, kUndefined);
    w.write_context_enter(t, 45, c_send, 2);  // left open: end_thread closes it
    w.close({});
  }
  auto steps = read_region_events(dir.path());
  expect_proper_nesting(steps[0]);
  EXPECT_EQ(steps[0], (std::vector<Step>{{10, main, true},
                                         {10, f, true},
                                         {15, f, false},
                                         {15, send, true},
                                         {20, inner, true},
                                         {30, inner, false},
                                         {30, send, false},
                                         {45, send, true},
                                         {45, send, false},
                                         {45, main, false}}));
}

// ViTE draws Enter/Leave as states and ignores CallingContextSample records:
// the same samples give state rectangles only in enter_leave mode.
int vite_state_rectangles(const std::string& svg_path) {
  std::ifstream in(svg_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string svg = text.str();
  static const std::regex group(R"re(<g clip-path="url\(#stateArea\)">([\s\S]*?)</g>)re");
  int rectangles = 0;
  for (std::sregex_iterator it(svg.begin(), svg.end(), group), end; it != end; ++it) {
    const std::string body = (*it)[1];
    for (size_t at = 0; (at = body.find("<rect ", at)) != std::string::npos; ++at) ++rectangles;
  }
  return rectangles;
}

testing::CommandResult run_vite(const std::string& anchor, const std::string& svg) {
  return testing::run_command("QT_QPA_PLATFORM=offscreen timeout 120 vite -f " + anchor + " -e " + svg);
}

TEST(EnterLeave, VitePlotsTheStates) {
  if (!testing::have_program("vite")) GTEST_SKIP() << "vite not installed";
  TempDir dir;
  testing::write_known_archive(dir / "el", /*enter_leave=*/true);
  testing::write_known_archive(dir / "cc", /*enter_leave=*/false);

  auto el = run_vite(dir / "el/traces.otf2", dir / "el.svg");
  ASSERT_EQ(el.exit_code, 0) << el.output;
  EXPECT_NE(el.output.find("0 errors and 0 warnings"), std::string::npos) << el.output;
  EXPECT_EQ(el.output.find("[OTF2]"), std::string::npos) << el.output;  // OTF2 library complaints
  const int states = vite_state_rectangles(dir / "el.svg");
  EXPECT_GT(states, 0);

  auto cc = run_vite(dir / "cc/traces.otf2", dir / "cc.svg");
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  EXPECT_EQ(vite_state_rectangles(dir / "cc.svg"), 0);

  // ViTE's SVG labels containers, not states: check our thread names are there.
  std::ifstream in(dir / "el.svg");
  std::stringstream svg;
  svg << in.rdbuf();
  EXPECT_NE(svg.str().find(">worker_"), std::string::npos);
  EXPECT_NE(svg.str().find(">app_"), std::string::npos);
}

}  // namespace
}  // namespace hybridprof::otf2
