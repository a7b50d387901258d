// The hybridprof-report executable: exit codes and one-line errors on bad
// input, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "otf2/archive_writer.h"
#include "otf2/property_names.h"
#include "test_support.h"

namespace hybridprof::report {
namespace {

using otf2::testing::CommandResult;
using otf2::testing::TempDir;

CommandResult report(const std::string& args) {
  // The suppressions only matter in sanitizer builds (OTF2 leaks on corrupt anchors).
  return otf2::testing::run_command("LSAN_OPTIONS=print_suppressions=0:suppressions=" HYBRIDPROF_LSAN_SUPPRESSIONS " " +
                                    std::string(HYBRIDPROF_REPORT_BIN) + " " + args);
}

// Exit status 1 and exactly one line, starting with the tool's error prefix.
void expect_one_line_error(const CommandResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 1) << r.output;  // a crash would be -1 (signal)
  EXPECT_EQ(r.output.rfind("hybridprof-report: error: ", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  EXPECT_NE(r.output.find(fragment), std::string::npos) << r.output;
}

// An archive of one thread whose samples have one calling context (main),
// written by `body` (samples, properties).
template <typename Body>
void write_one_thread(const std::string& path, Body body) {
  otf2::ArchiveWriter w({.directory = path});
  const uint32_t node = w.define_system_tree_node("host", "node", otf2::kUndefined);
  const uint64_t thread = w.define_thread(w.define_process("app", node), "main");
  const uint32_t context = w.define_calling_context(w.define_region("main", "main.cc", 1, otf2::Paradigm::kSampling),
                                                    otf2::kUndefined, otf2::kUndefined);
  body(w, thread, context);
  w.close({});
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { otf2::testing::write_known_archive(dir_ / "ok"); }
  TempDir dir_;
};

TEST_F(Cli, PrintsTheReport) {
  CommandResult r = report(dir_ / "ok");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Flat profile"), std::string::npos);
  EXPECT_NE(r.output.find("Hottest call paths"), std::string::npos);
  EXPECT_NE(r.output.find("Threads (by samples)"), std::string::npos);
}

// Events the writer had to move later to keep their thread's order are
// counted in the Run section when one moved a microsecond or more; an
// archive without any (the known one) has no such line.
TEST_F(Cli, EventsOutOfOrderAreShownWhenOneMovedAMicrosecond) {
  for (const uint64_t late_by : {3500, 400}) {
    const std::string path = dir_ / ("late" + std::to_string(late_by));
    write_one_thread(path, [&](otf2::ArchiveWriter& w, uint64_t thread, uint32_t context) {
      for (uint64_t time : {uint64_t{10000}, 10000 - late_by, uint64_t{20000}, uint64_t{19900}})
        w.write_sample(thread, time, context, 1, otf2::kUndefined);
    });
    CommandResult r = report(path);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    if (late_by >= 1000)
      EXPECT_NE(r.output.find("Events out of order     2, written at their thread's previous time, up to 3.5 us after "
                              "their own"),
                std::string::npos)
          << r.output;
    else
      EXPECT_EQ(r.output.find("Events out of order"), std::string::npos) << r.output;
  }
  EXPECT_EQ(report(dir_ / "ok").output.find("Events out of order"), std::string::npos);
}

// Samples weighted by more periods than signals came (CPU-time timers,
// which fire at scheduler ticks) say how many signals they came from; the
// known archive's (no signal count) and one signal a sample say nothing.
TEST_F(Cli, SamplesFromFewerSignalsSayHowMany) {
  for (const uint64_t signals : {uint64_t{133}, uint64_t{1492}}) {
    const std::string path = dir_ / ("signals" + std::to_string(signals));
    write_one_thread(path, [&](otf2::ArchiveWriter& w, uint64_t thread, uint32_t context) {
      w.write_sample(thread, 1000, context, 1, otf2::kUndefined);
      w.set_thread_property(thread, otf2::property::kSamples, 1492);
      w.set_thread_property(thread, otf2::property::kSampleSignals, signals);
    });
    CommandResult r = report(path);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const bool said = r.output.find("(threads report 1492 taken; from 133 signals, each weighted by the periods it "
                                    "covered (CPU-time timers fire at scheduler ticks): shares are as certain as 133 "
                                    "samples')") != std::string::npos;
    EXPECT_EQ(said, signals == 133) << r.output;
    EXPECT_EQ(r.output.find("signals, each weighted") != std::string::npos, signals == 133) << r.output;
  }
  EXPECT_EQ(report(dir_ / "ok").output.find("signals, each weighted"), std::string::npos);
}

// The handler's mean leaves out handlers the scheduler switched out (over
// 250 us on the wall clock), and says how many.
TEST_F(Cli, TheHandlersMeanLeavesOutHandlersSwitchedOut) {
  for (const uint64_t slow : {uint64_t{0}, uint64_t{10}}) {
    const std::string path = dir_ / ("slow" + std::to_string(slow));
    write_one_thread(path, [&](otf2::ArchiveWriter& w, uint64_t thread, uint32_t context) {
      w.write_sample(thread, 1000, context, 1, otf2::kUndefined);
      w.set_thread_property(thread, otf2::property::kSamples, 110);
      w.set_thread_property(thread, otf2::property::kSampleSignals, 100 + slow);
      w.set_thread_property(thread, otf2::property::kSampleHandlerNs, 400000);  // 4 us each of the 100
      w.set_thread_property(thread, otf2::property::kSampleHandlerSlow, slow);
    });
    CommandResult r = report(path);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(slow ? "4.0 us a sample (mean of 100; 10 more over 250 us, switched out meanwhile, left out)"
                                 : "4.0 us a sample (mean of 100)"),
              std::string::npos)
        << r.output;
  }
}

TEST_F(Cli, FoldedOutputIsExact) {
  CommandResult r = report("--folded " + dir_ / "ok/traces.otf2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "main 5\nmain;A 21\nmain;B 7\nmain;B;C 13\n");
}

TEST_F(Cli, PathsZeroMeansNoCallPaths) {
  CommandResult r = report("--paths 0 " + dir_ / "ok");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Flat profile"), std::string::npos);
  EXPECT_EQ(r.output.find("Hottest call paths"), std::string::npos) << r.output;
  expect_one_line_error(report("--top 0 " + dir_ / "ok"), "--top needs a positive number, got '0'");
}

TEST_F(Cli, HelpExitsZero) {
  CommandResult r = report("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("usage: hybridprof-report"), std::string::npos);
}

TEST_F(Cli, BadFlag) { expect_one_line_error(report("--frobnicate " + dir_ / "ok"), "unknown option '--frobnicate'"); }

TEST_F(Cli, MissingArchive) {
  expect_one_line_error(report(dir_ / "nowhere"), "no OTF2 archive at " + dir_ / "nowhere");
}

TEST_F(Cli, TruncatedDefinitions) {
  std::filesystem::copy(dir_ / "ok", dir_ / "cut", std::filesystem::copy_options::recursive);
  std::filesystem::resize_file(dir_ / "cut/traces.def", std::filesystem::file_size(dir_ / "cut/traces.def") / 2);
  expect_one_line_error(report(dir_ / "cut"), "corrupt archive");
}

TEST_F(Cli, GarbageAnchor) {
  std::filesystem::copy(dir_ / "ok", dir_ / "junk", std::filesystem::copy_options::recursive);
  std::ofstream(dir_ / "junk/traces.otf2", std::ios::trunc) << "this is not an OTF2 anchor file\n";
  expect_one_line_error(report(dir_ / "junk"), "corrupt archive");
}

TEST_F(Cli, TruncatedEvents) {
  std::filesystem::copy(dir_ / "ok", dir_ / "events", std::filesystem::copy_options::recursive);
  std::filesystem::resize_file(dir_ / "events/traces/0.evt", 40);
  expect_one_line_error(report(dir_ / "events"), "corrupt archive");
}

}  // namespace
}  // namespace hybridprof::report
