// Limits on what the profiler writes: --max-size, a file size limit and a
// full disk. Each stops recording with one line on stderr and a notice in
// the archive; the program runs on to its normal exit, and what was
// written before is kept (the launcher's archive, or hybridprof-merge's
// once there is room).
//
// The program (fault_cases more-work:S) spends 0.2 s of CPU in
// first_work, 0.3 s in last_work, then S s in more_work, sampled at
// 20 kHz: several times the data any of the limits below lets through
// (a sample of this program takes about 8 bytes of raw stream, so 120 KiB
// hold about a second of it). Recording stopped when more_work has a
// smaller share of the samples than its share of the CPU.
#include <sys/stat.h>

#include <filesystem>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

namespace fs = std::filesystem;

uint64_t raw_bytes(const std::string& run_dir) {
  uint64_t bytes = 0;
  for (const auto& e : fs::directory_iterator(run_dir + "/raw"))
    if (e.path().extension() == ".hpr") bytes += e.file_size();
  return bytes;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The checks every stop shares: said once, the program ran to its end,
// the archive has what came before the stop and says why it stopped.
void expect_stopped_recording(const RunResult& r, const std::string& run_dir, const std::string& why,
                              double more_work_seconds) {
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(count(r.err, "recording stopped"), 1u) << r.describe();
  EXPECT_NE(r.err.find(why), std::string::npos) << r.describe();
  EXPECT_EQ(r.err.find("without a final flush"), std::string::npos) << r.describe();
  std::string error;
  auto p = load_profile(run_dir, &error);
  ASSERT_TRUE(p) << error << "\n" << r.describe();
  EXPECT_NE(p->notices().find("recording stopped"), std::string::npos) << p->notices();
  EXPECT_NE(p->notices().find(why), std::string::npos) << p->notices();
  const uint64_t first = p->self_samples("first_work"), more = p->self_samples("more_work");
  EXPECT_GT(first, 0u) << r.describe();
  // Unstopped, more_work would have more_work_seconds / 0.2 times first_work's samples.
  EXPECT_LT(double(more), 0.5 * more_work_seconds / 0.2 * double(first)) << "first_work " << first;
  ASSERT_EQ(p->archive().processes.size(), 1u);
  // Where the launcher found no room on the full disk to leave the status
  // to hybridprof-merge, the process's own end record still has it.
  EXPECT_EQ(p->archive().processes.begin()->second.properties.at("EXIT_STATUS"), "exit 0");
}

class DiskLimits : public IntegrationTest {};

TEST_F(DiskLimits, MaxSizeStopsRecordingWithANoteAndTheProgramRunsOn) {
  const std::string d = scratch / "D";
  const RunResult r =
      profile({"-F", "20000", "--max-size", "128K", "-o", d}, {fixture("fault_cases"), "more-work:2"});
  expect_stopped_recording(r, d, "reached --max-size (128 KiB)", 2);
  EXPECT_LE(raw_bytes(d), 128u * 1024);
}

TEST_F(DiskLimits, MaxSizeRejectsWhatIsNoSize) {
  for (const char* bad : {"0", "12X", "-5", "32K", "M"}) {
    const RunResult r = profile({"--max-size", bad, "-o", scratch / "D"}, {fixture("fault_cases")});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.describe();
    EXPECT_NE(r.err.find("--max-size needs a size"), std::string::npos) << r.describe();
    EXPECT_FALSE(fs::exists(scratch / "D")) << "nothing started";
  }
}

// A file size limit (ulimit -f): the stream's write fails with EFBIG.
TEST_F(DiskLimits, AFileSizeLimitStopsRecordingAndWhatWasWrittenIsKept) {
  const std::string d = scratch / "D";
  const RunResult r = run({"bash", "-c", "ulimit -f 96 && exec \"$0\" \"$@\"", launcher(), "-F", "20000", "-o", d,
                           "--", fixture("fault_cases"), "more-work:2"});
  if (!fs::exists(d + "/traces.otf2")) {
    // The archive's own files passed the limit too: the launcher said how
    // to write it, and that works without the limit.
    EXPECT_NE(r.err.find("no archive written"), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find("hybridprof-merge " + d), std::string::npos) << r.describe();
    EXPECT_FALSE(fs::exists(d + "/traces")) << "a half-written archive is removed";
    const RunResult merged = run({merge_tool(), d});
    ASSERT_EQ(merged.exit_code, 0) << merged.describe();
  }
  expect_stopped_recording(r, d, "File too large", 2);
  EXPECT_LE(raw_bytes(d), 96u * 1024);
}

// A full file system: a tmpfs of 1 MiB in a mount namespace of the test's
// own, nearly filled. Where mounting is not allowed the test is skipped.
TEST_F(DiskLimits, AFullDiskStopsRecordingAndWhatWasWrittenIsRecoverable) {
  const std::string mnt = scratch / "mnt", kept = scratch / "kept";
  fs::create_directories(mnt);
  const std::string script =
      "mount -t tmpfs -o size=1m tmpfs \"$1\" || exit 77\n"
      "dd if=/dev/zero of=\"$1/filler\" bs=1k count=900 2>/dev/null\n"
      "\"$2\" -F 20000 -o \"$1/run\" -- \"$3\" more-work:3\n"
      "rc=$?\n"
      "rm \"$1/filler\"\n"
      "[ -e \"$1/run/traces.otf2\" ] || \"$4\" \"$1/run\" >&2 || exit 78\n"
      "cp -r \"$1/run\" \"$5\" && exit $rc\n";
  const RunResult r =
      run({"unshare", "-m", "bash", "-c", script, "sh", mnt, launcher(), fixture("fault_cases"), merge_tool(), kept});
  if (r.exit_code == 77 || (r.exit_code != 0 && r.err.find("unshare") != std::string::npos))
    GTEST_SKIP() << "no tmpfs mount allowed here: " << r.describe();
  ASSERT_NE(r.exit_code, 78) << "hybridprof-merge failed once there was room\n" << r.describe();
  expect_stopped_recording(r, kept, "No space left on device", 3);
}

}  // namespace
}  // namespace hybridprof::integration
