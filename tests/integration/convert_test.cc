// hybridprof-convert --to chrome on real runs: the JSON parses, every
// track's slices nest and run forward in time, every message arrow has both
// ends, and what it holds matches the archive read back through the OTF2
// reader (tests/integration/chrome_trace_check.py checks the file as a
// viewer reads it). Bad input: one line, exit 1, nothing left under the
// output's name.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "integration_support.h"
#include "otf2/selection.h"

namespace hybridprof::integration {
namespace {

std::string convert_tool() { return std::string(HP_BUILD_DIR) + "/bin/hybridprof-convert"; }

struct ChromeFacts {
  std::vector<std::string> problems;
  uint64_t flows = 0, samples = 0, counters = 0, frames = 0;
  std::map<std::pair<uint64_t, uint64_t>, std::map<std::string, uint64_t>> slices;  // by (pid, tid), name
};

ChromeFacts check_chrome(const std::string& file) {
  ChromeFacts f;
  for (const std::string& line : check_with("chrome_trace_check.py", file)) {
    std::istringstream in(line);
    std::string what;
    in >> what;
    if (what == "problem") f.problems.push_back(line);
    else if (what == "flows") in >> f.flows;
    else if (what == "samples") in >> f.samples;
    else if (what == "counters") in >> f.counters;
    else if (what == "frames") in >> f.frames;
    else if (what == "slices") {
      uint64_t pid = 0, tid = 0, n = 0;
      in >> pid >> tid >> n;
      std::string name;
      std::getline(in >> std::ws, name);
      f.slices[{pid, tid}][name] = n;
    }
  }
  return f;
}

// The archive's traced regions per thread track, as the converter numbers
// them (pid: process ref + 1; tid: (location + 1) * 2), and its messages.
struct ArchiveFacts {
  std::map<std::pair<uint64_t, uint64_t>, std::map<std::string, uint64_t>> regions;
  uint64_t sends = 0, samples = 0;
  std::vector<double> send_seconds;  // from the job's start
};
ArchiveFacts read_archive(const std::string& dir) {
  otf2::ArchiveReader reader(dir);
  const otf2::Archive& a = reader.archive();
  ArchiveFacts f;
  reader.read_events([&](const otf2::SampleEvent&) { ++f.samples; },
                     [&](const otf2::RegionEvent& e) {
                       if (!e.enter) return;
                       const otf2::RegionInfo& r = a.regions.at(e.region);
                       if (r.paradigm == otf2::Paradigm::kSampling || r.paradigm == otf2::Paradigm::kPython) return;
                       ++f.regions[{a.threads.at(e.location).process + 1, (e.location + 1) * 2}][r.name];
                     },
                     [&](const otf2::MpiEvent& e) {
                       if (e.kind != otf2::MpiEventKind::kSend && e.kind != otf2::MpiEventKind::kIsend) return;
                       ++f.sends;
                       f.send_seconds.push_back(otf2::seconds_of(a, e.timestamp));
                     });
  return f;
}

class Convert : public IntegrationTest {
 protected:
  RunResult mpirun(int ranks, const std::vector<std::string>& program) {
    RunOptions options;
    options.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
    options.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    options.env["OMPI_MCA_rmaps_base_oversubscribe"] = "1";
    options.env["OMP_NUM_THREADS"] = "2";
    std::vector<std::string> argv{"mpirun", "-np", std::to_string(ranks), "-x", "OMP_NUM_THREADS", launcher(), "-o", dir};
    argv.push_back("--");
    argv.insert(argv.end(), program.begin(), program.end());
    return run(argv, options);
  }
  // Converts the run in `dir` and checks the file against its archive.
  ChromeFacts expect_converted_as_archive(const std::string& output, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{convert_tool(), "--to", "chrome", dir, "-o", output};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    const ChromeFacts c = check_chrome(output);
    EXPECT_TRUE(c.problems.empty()) << ::testing::PrintToString(c.problems);
    return c;
  }
  std::string dir = scratch / "job";
};

TEST_F(Convert, AnMpiOpenMpJobIsOneTraceWithEveryThreadsRegions) {
  if (!have_program("mpirun")) GTEST_SKIP() << "mpirun is not installed";
  const RunResult r = mpirun(2, {fixture("mpi_openmp"), "4"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const ChromeFacts c = expect_converted_as_archive(scratch / "trace.json");
  const ArchiveFacts a = read_archive(dir);
  // Every thread's traced regions, one slice each: 2 ranks x 2 threads.
  std::map<std::pair<uint64_t, uint64_t>, std::map<std::string, uint64_t>> traced;
  for (const auto& [track, names] : c.slices)
    if (track.second % 2 == 0) traced[track] = names;  // even tids: the threads' event tracks
  EXPECT_EQ(traced, a.regions);
  // The program's threads: 2 ranks x 2 (Open MPI's own threads add their
  // OS-runtime waits, as many as its version makes).
  size_t program_threads = 0;
  for (const auto& [track, names] : a.regions) {
    bool program = false;
    for (const auto& [name, count] : names) program |= name.rfind("MPI_", 0) == 0 || name.rfind("!$omp", 0) == 0;
    program_threads += program;
  }
  EXPECT_EQ(program_threads, 4u);
  EXPECT_EQ(c.samples, a.samples) << "stackFrames + samples: each sample once";
  EXPECT_GT(c.counters, 0u);
}

TEST_F(Convert, MessagesAreArrowsFromSendToReceiveAndTheFileMayBeCompressed) {
  if (!have_program("mpirun")) GTEST_SKIP() << "mpirun is not installed";
  const RunResult r = mpirun(2, {fixture("mpi_ring"), "6"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const ChromeFacts c = expect_converted_as_archive(scratch / "trace.json.gz");
  const ArchiveFacts a = read_archive(dir);
  EXPECT_GT(a.sends, 0u);
  EXPECT_EQ(c.flows, a.sends) << "an arrow per message, each with both ends";
  // One rank alone: its regions, no arrow left half-drawn.
  const ChromeFacts one = expect_converted_as_archive(scratch / "rank1.json", {"--ranks", "1"});
  EXPECT_EQ(one.flows, 0u);
  for (const auto& [track, names] : one.slices) EXPECT_EQ(track.first, 2u) << "rank 1 is the second process";
  // A window: fewer slices, all of them whole within it (checked above).
  const ChromeFacts window = expect_converted_as_archive(scratch / "window.json", {"--time", "0:0.000001"});
  uint64_t all = 0, cut = 0;
  for (const auto& [track, names] : c.slices)
    for (const auto& [name, n] : names) all += n;
  for (const auto& [track, names] : window.slices)
    for (const auto& [name, n] : names) cut += n;
  EXPECT_LT(cut, all);
  // Windows that end just after a send, or begin just after one: its
  // receive is on the other side of the edge, and so no arrow at all.
  for (size_t i = 0; i < a.send_seconds.size(); i += std::max<size_t>(1, a.send_seconds.size() / 3)) {
    char at[32];
    std::snprintf(at, sizeof at, "%.9f", a.send_seconds[i] + 1e-9);
    for (const std::string& window : {std::string("0:") + at, std::string(at) + ":"}) {
      const ChromeFacts w = expect_converted_as_archive(scratch / "edge.json", {"--time", window});
      EXPECT_LT(w.flows, c.flows) << window;
    }
  }
}

TEST_F(Convert, BadInputSaysWhatIsWrongAndLeavesNothingBehind) {
  const std::string out = scratch / "out.json";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--to", "chrome", scratch / "missing", "-o", out},
           {"--to", "chrome", HP_SOURCE_DIR, "-o", out},
       }) {
    const RunResult r = run([&] {
      std::vector<std::string> v{convert_tool()};
      v.insert(v.end(), args.begin(), args.end());
      return v;
    }());
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_EQ(split_lines(r.err).size(), 1u) << r.err;
    EXPECT_FALSE(file_exists(out));
  }
  // Usage errors: exit 2 with the usage.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--to", "perfetto", "x", "-o", out}, {"--to", "chrome", "x"}, {"--to", "chrome", "x", "-o", out, "--time", "3:3"},
           {"--to", "chrome", "x", "-o", out, "--ranks", "a"}}) {
    std::vector<std::string> v{convert_tool()};
    v.insert(v.end(), args.begin(), args.end());
    const RunResult r = run(v);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_FALSE(file_exists(out));
  }
  // A real archive to an unwritable place, or a selection of nothing.
  const RunResult made = profile({"-o", dir}, {fixture("split_workload"), "1", "0.05"});
  ASSERT_EQ(made.exit_code, 0) << made.describe();
  const RunResult unwritable = run({convert_tool(), "--to", "chrome", dir, "-o", "/proc/no/such/out.json"});
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable.describe();
  const RunResult nothing = run({convert_tool(), "--to", "chrome", dir, "-o", out, "--ranks", "7"});
  EXPECT_EQ(nothing.exit_code, 1) << nothing.describe();
  EXPECT_NE(nothing.err.find("matches"), std::string::npos) << nothing.err;
  EXPECT_FALSE(file_exists(out));
  for (const auto& e : std::filesystem::directory_iterator(scratch.path()))
    EXPECT_EQ(e.path().string().find(".partial."), std::string::npos) << e.path();
}

}  // namespace
}  // namespace hybridprof::integration
