// Capture windows (preload/capture_window.cc): --delay and --duration record
// only their window, the control API (include/hybridprof/control.h) only
// what its calls open, with the marks it names; a window that never opens
// is said, and the program's exit status stays its own. The archive's
// CAPTURE_WINDOWS property says what was recorded and the report shows it.
#include <filesystem>
#include <iterator>
#include <map>
#include <cstdio>
#include <sstream>

#include "integration_support.h"
#include "otf2/capture_windows.h"
#include "otf2/property_names.h"
#include "otf2/selection.h"

namespace hybridprof::integration {
namespace {

struct Window {
  double from_s = 0, to_s = 0;
  uint64_t raw_from = 0, raw_to = 0;  // as stored: the archive's ticks (ns)
  std::string opened_by, closed_by;
};
std::vector<Window> windows_of(const Profile& p) {
  std::vector<Window> windows;
  for (const auto& [ref, process] : p.archive().processes)
    for (const otf2::CaptureWindow& w : otf2::capture_windows_of(process))
      windows.push_back({otf2::seconds_of(p.archive(), w.from), otf2::seconds_of(p.archive(), w.to), w.from, w.to,
                         w.opened_by, w.closed_by});
  return windows;
}

class CaptureWindows : public IntegrationTest {};

// Two threads working steadily for 2 s: a window from 1 s to 1.5 s holds
// every sample, and as many as the threads' CPU time in it at 1 kHz
// (within 25%; the program notes its threads' CPU clocks every 2 ms, so
// the count holds however busy the machine is).
TEST_F(CaptureWindows, DelayAndDurationRecordOnlyTheirWindow) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"-F", "1000", "-e", "cpu-clock", "--delay", "1", "--duration", "0.5", "-o", d},
                              {fixture("steady_threads"), "2", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  Profile p(d);
  const std::vector<Window> windows = windows_of(p);
  ASSERT_EQ(windows.size(), 1u);
  const Window& w = windows.front();
  EXPECT_EQ(w.opened_by, "--delay");
  EXPECT_EQ(w.closed_by, "--duration");
  EXPECT_NEAR(w.to_s - w.from_s, 0.5, 0.05);
  EXPECT_GE(w.from_s, 0.99);
  uint64_t outside = 0;
  for (const otf2::SampleEvent& s : p.samples()) {
    const double at = otf2::seconds_of(p.archive(), s.timestamp);
    outside += at < w.from_s || at > w.to_s;
  }
  EXPECT_EQ(outside, 0u) << "samples outside the window";
  // The threads' CPU time inside the window, from their notes (monotonic
  // ns, as the archive's clock; one process, so no offsets).
  const uint64_t from_ns = w.raw_from, to_ns = w.raw_to;
  std::map<long, std::vector<std::pair<uint64_t, uint64_t>>> notes;
  for (const std::string& line : split_lines(r.out)) {
    long tid = 0;
    unsigned long long at = 0, cpu = 0;
    if (std::sscanf(line.c_str(), "cpu %ld %llu %llu", &tid, &at, &cpu) == 3) notes[tid].emplace_back(at, cpu);
  }
  ASSERT_EQ(notes.size(), 2u) << r.out.substr(0, 200);
  double cpu_in_window = 0;
  for (const auto& [tid, thread] : notes) {
    const auto cpu_at = [&](uint64_t t) {  // the CPU clock at the last note before t
      uint64_t cpu = thread.front().second;
      for (const auto& [at, c] : thread)
        if (at <= t) cpu = c;
      return cpu;
    };
    cpu_in_window += double(cpu_at(to_ns) - cpu_at(from_ns)) / 1e9;
  }
  EXPECT_GT(cpu_in_window, 0.01) << "the threads ran in the window (how much depends on the machine's load)";
  EXPECT_NEAR(double(p.samples().size()), cpu_in_window * 1000, cpu_in_window * 1000 * 0.25)
      << cpu_in_window << " s of CPU in the window";
  const RunResult report = run({report_tool(), d});
  EXPECT_NE(report.out.find("Capture windows"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("--duration"), std::string::npos) << report.out;
}

// The control API around phases b and d of five, with --paused; a second
// stop changes nothing and is counted. Without the profiler the same
// program runs, its calls no-ops.
TEST_F(CaptureWindows, TheControlApiRecordsWhatItOpensAndItsMarks) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"--paused", "-o", d}, {fixture("control_phases"), "0.2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("b recording 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("c recording 0"), std::string::npos) << r.out;
  Profile p(d);
  for (const char* recorded : {"phase_b", "phase_d"}) EXPECT_GT(p.inclusive_samples(recorded), 50u) << recorded;
  for (const char* left_out : {"phase_a", "phase_c", "phase_e"}) EXPECT_EQ(p.inclusive_samples(left_out), 0u) << left_out;
  const std::vector<Window> windows = windows_of(p);
  ASSERT_EQ(windows.size(), 2u);
  for (const Window& w : windows) {
    EXPECT_EQ(w.opened_by, "hybridprof_start()");
    EXPECT_EQ(w.closed_by, "hybridprof_stop()");
  }
  const auto& process = p.archive().processes.begin()->second;
  const std::string marks = process.properties.count(otf2::property::kMarks) ? process.properties.at(otf2::property::kMarks) : "";
  EXPECT_NE(marks.find("\tphase b\n"), std::string::npos) << marks;
  EXPECT_NE(marks.find("\tphase d\n"), std::string::npos) << marks;
  EXPECT_NE(p.notices().find("already closed at 1 call to close it"), std::string::npos) << p.notices();
  const RunResult report = run({report_tool(), d});
  EXPECT_NE(report.out.find("phase d"), std::string::npos) << report.out;
  // --time NAME: the window that mark opened, in every section.
  const RunResult phase_d = run({report_tool(), "--time", "phase d", d});
  EXPECT_EQ(phase_d.exit_code, 0) << phase_d.describe();
  EXPECT_NE(phase_d.out.find("phase_d"), std::string::npos) << phase_d.out;
  EXPECT_EQ(phase_d.out.find("phase_b"), std::string::npos) << phase_d.out;
  const RunResult unknown = run({report_tool(), "--time", "phase z", d});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.describe();
  EXPECT_NE(unknown.err.find("no capture window is marked 'phase z'"), std::string::npos) << unknown.err;
  // The Chrome trace has them as process-wide instant events.
  const std::string json = scratch / "trace.json";
  const RunResult converted = run({std::string(HP_BUILD_DIR) + "/bin/hybridprof-convert", "--to", "chrome", d, "-o", json});
  ASSERT_EQ(converted.exit_code, 0) << converted.describe();
  const std::string text = read_text(json);
  EXPECT_NE(text.find("\"name\":\"phase d\",\"cat\":\"mark\""), std::string::npos);
  EXPECT_NE(text.find("capture window closed (hybridprof_stop())"), std::string::npos);
  for (const std::string& line : check_with("chrome_trace_check.py", json))
    EXPECT_NE(line.rfind("problem", 0), 0u) << line;

  const RunResult plain = run({fixture("control_phases"), "0.01"});
  EXPECT_EQ(plain.exit_code, 0) << plain.describe();
  EXPECT_EQ(plain.out.find("recording 1"), std::string::npos) << plain.out;
}

// cudaProfilerStart/Stop open and close the window too (the CUDA runtime's
// own calls fail without a GPU, and the program sees that as before).
TEST_F(CaptureWindows, TheCudaProfilerApiOpensAndClosesTheWindow) {
  if (!file_exists(fixture("cuda_profiler_phases"))) GTEST_SKIP() << "built without the CUDA runtime";
  const std::string d = scratch / "D";
  const RunResult r = profile({"--paused", "-o", d}, {fixture("cuda_profiler_phases"), "0.2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("cudaProfilerStart: "), std::string::npos) << r.out;
  Profile p(d);
  EXPECT_GT(p.inclusive_samples("in_range"), 50u);
  EXPECT_EQ(p.inclusive_samples("before_range") + p.inclusive_samples("after_range"), 0u);
  const std::vector<Window> windows = windows_of(p);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows.front().opened_by, "cudaProfilerStart()");
  EXPECT_EQ(windows.front().closed_by, "cudaProfilerStop()");
}

// Python's module (python/hybridprof, installed with pip from the source
// tree where pip is there): a `with hybridprof.window(...)` around one of
// three phases records that phase only, marked; without the profiler the
// module's calls do nothing.
TEST_F(CaptureWindows, PythonsWindowRecordsItsBody) {
  const std::string python = "/usr/bin/python3";
  if (!file_exists(python)) GTEST_SKIP() << "no " << python;
  std::string module_dir = std::string(HP_SOURCE_DIR) + "/python";
  // pip builds in the tree it is given: a copy of it.
  const std::string source = scratch / "source", site = scratch / "site";
  std::filesystem::copy(module_dir, source, std::filesystem::copy_options::recursive);
  const RunResult pip = run({python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                             "--no-cache-dir", "--target", site, source});
  if (pip.exit_code == 0) module_dir = site;  // else (no pip) from the source tree
  RunOptions options;
  options.env["PYTHONPATH"] = module_dir;
  const std::string d = scratch / "D";
  const RunResult r = profile({"--paused", "-o", d}, {python, fixture("python_window.py"), "0.2"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("second recording True"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first recording False"), std::string::npos) << r.out;
  Profile p(d);
  EXPECT_GT(p.inclusive_samples("second"), 50u);
  EXPECT_EQ(p.inclusive_samples("first") + p.inclusive_samples("third"), 0u);
  const auto& process = p.archive().processes.begin()->second;
  EXPECT_NE(process.properties.at(otf2::property::kMarks).find("\tsecond phase\n"), std::string::npos);

  const RunResult plain = run({python, fixture("python_window.py"), "0.01"}, options);
  EXPECT_EQ(plain.exit_code, 0) << plain.describe();
  EXPECT_EQ(plain.out.find("True"), std::string::npos) << plain.out;
}

// Fortran, through the interface module (include/hybridprof/hybridprof_control.f90).
TEST_F(CaptureWindows, FortransCallsOpenAndCloseTheWindow) {
  if (!file_exists(fixture("control_phases_f"))) GTEST_SKIP() << "built without a Fortran compiler";
  const std::string d = scratch / "D";
  const RunResult r = profile({"--paused", "-o", d}, {fixture("control_phases_f")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("second recording T"), std::string::npos) << r.out;
  Profile p(d);
  std::map<std::string, uint64_t> in;  // samples under each phase (Fortran names carry their module)
  for (const otf2::SampleEvent& s : p.samples())
    for (const std::string& name : p.path_names(s.context))
      for (const char* phase : {"fortran_first", "fortran_second", "fortran_third"})
        if (name.find(phase) != std::string::npos) ++in[phase];
  EXPECT_GT(in["fortran_second"], 50u);
  EXPECT_EQ(in["fortran_first"] + in["fortran_third"], 0u);
  const auto& process = p.archive().processes.begin()->second;
  EXPECT_NE(process.properties.at(otf2::property::kMarks).find("\tfortran phase\n"), std::string::npos);
}

// --capture-range nvtx:step --capture-range-count 2 on five "step" ranges:
// the first two are recorded (each its own window), nothing between them.
TEST_F(CaptureWindows, AnNvtxCaptureRangeRecordsItsFirstRanges) {
  if (!file_exists(fixture("nvtx_steps"))) GTEST_SKIP() << "built without NVTX 3";
  const std::string d = scratch / "D";
  const RunResult r = profile({"--capture-range", "nvtx:step", "--capture-range-count", "2", "-o", d},
                              {fixture("nvtx_steps"), "5", "0.05"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("step 1 recording 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 2 recording 0"), std::string::npos) << r.out;
  Profile p(d);
  const std::vector<Window> windows = windows_of(p);
  ASSERT_EQ(windows.size(), 2u);
  for (const Window& w : windows) {
    EXPECT_EQ(w.opened_by, "nvtx range 'step'");
    EXPECT_EQ(w.closed_by, "end of nvtx range 'step'");
  }
  EXPECT_GT(p.inclusive_samples("step_work"), 20u);
  EXPECT_EQ(p.inclusive_samples("between_steps"), 0u);
  const RunResult report = run({report_tool(), d});
  bool two_steps = false;  // the NVTX table's row: "... ms      2  ... ms ... step"
  for (const std::string& line : split_lines(report.out)) {
    std::istringstream fields(line);
    std::vector<std::string> words{std::istream_iterator<std::string>(fields), {}};
    two_steps |= words.size() == 11 && words.back() == "step" && words[3] == "2";
  }
  EXPECT_TRUE(two_steps) << "two step ranges:\n" << report.out;
  // A range in another domain does not match; a bad range is refused.
  const RunResult other = profile({"--capture-range", "nvtx:step@io", "-o", scratch / "E"}, {fixture("nvtx_steps"), "2", "0.01"});
  EXPECT_EQ(other.exit_code, 0) << other.describe();
  EXPECT_EQ(other.out.find("recording 1"), std::string::npos) << other.out;
  for (const char* bad : {"step", "nvtx:", "nvtx:@io"}) {
    const RunResult refused = run({launcher(), "--capture-range", bad, "-o", scratch / "F", "--", fixture("nvtx_steps")});
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.describe();
  }
}

// No window ever opens: --paused with no start, --delay past the end. The
// archive and the launcher say so; the exit status is the program's.
TEST_F(CaptureWindows, AWindowThatNeverOpensIsSaid) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--paused"}, {"--delay", "30"}}) {
    const std::string d = scratch / ("D" + args.front());
    std::vector<std::string> profiler = args;
    profiler.insert(profiler.end(), {"-o", d});
    const RunResult r = profile(profiler, {fixture("split_workload"), "1", "0.1"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_NE(r.err.find("no capture window was opened"), std::string::npos) << r.err;
    Profile p(d);
    EXPECT_EQ(p.samples().size(), 0u);
    EXPECT_TRUE(windows_of(p).empty());
  }
  // Bad values: one line, exit 2, nothing run.
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--delay", "soon"}, {"--duration", "0"},
                                              {"--duration", "-1"}}) {
    std::vector<std::string> argv{launcher()};
    argv.insert(argv.end(), bad.begin(), bad.end());
    argv.insert(argv.end(), {"-o", scratch / "bad", "--", fixture("split_workload"), "1", "0.1"});
    const RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_EQ(split_lines(r.err).size(), 1u) << r.err;
  }
}

}  // namespace
}  // namespace hybridprof::integration
