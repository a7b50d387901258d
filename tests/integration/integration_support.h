// Helpers for the integration tests: running the launcher (or any program)
// with captured output, scratch directories, and sample statistics read back
// from an archive through ArchiveReader.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "otf2/archive_reader.h"

namespace hybridprof::integration {

// Paths of the built programs (compile definitions from CMake).
std::string launcher();       // build/bin/hybridprof
std::string merge_tool();     // build/bin/hybridprof-merge
std::string report_tool();    // build/bin/hybridprof-report
std::string fixture(const std::string& name);  // tests/fixtures/<name>
std::string plugin_library(); // the dlopen fixture's plugin (absolute path)

// A fresh directory from mkdtemp; removed at destruction unless keep() was
// called (tests keep it when they fail, for a look at the raw data).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& child) const { return path_ + "/" + child; }
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

struct RunOptions {
  std::map<std::string, std::string> env;  // added to (or replacing in) the environment
  std::string working_directory;           // "" = the test's
  bool discard_stdout = false;             // stdout to /dev/null (big outputs)
  double timeout_seconds = 90;             // then the process group is SIGKILLed
};

struct RunResult {
  int exit_code = -1;  // exit status, or 128+signal
  bool timed_out = false;
  std::string out, err;
  std::vector<std::string> err_lines() const;  // stderr split into lines
  std::string describe() const;                // for assertion messages
};

// A started program whose stdout/stderr go to files; finish() waits.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const RunOptions& options = {});
  ~Process();  // kills the process group if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  pid_t pid() const { return pid_; }
  RunResult finish();  // waits (up to the timeout) and collects the output

 private:
  pid_t pid_ = -1;
  RunOptions options_;
  std::string out_path_, err_path_;
  bool finished_ = false;
};

// `count` processes that spin on the CPU until destroyed: a node whose
// cores are all taken, as on a fully subscribed cluster node.
class CpuHogs {
 public:
  explicit CpuHogs(int count);
  ~CpuHogs();  // kills and reaps them
  CpuHogs(const CpuHogs&) = delete;
  CpuHogs& operator=(const CpuHogs&) = delete;

 private:
  std::vector<pid_t> pids_;
};

// Runs argv to completion.
RunResult run(const std::vector<std::string>& argv, const RunOptions& options = {});

// `hybridprof <profiler_args> -- <program...>`.
RunResult profile(const std::vector<std::string>& profiler_args, const std::vector<std::string>& program,
                  const RunOptions& options = {});

// Reads a pid written by spin_forever into `path`, waiting up to `timeout` s. -1 if none.
pid_t wait_for_pid_file(const std::string& path, double timeout_seconds);
// CPU seconds (user + system) used so far by `pid`, from /proc; -1 if gone.
double process_cpu_seconds(pid_t pid);
// Waits until `pid` has used `cpu_seconds` of CPU (or `timeout` passed). True if it did.
bool wait_for_cpu(pid_t pid, double cpu_seconds, double timeout_seconds);

std::vector<std::string> split_lines(const std::string& text);
// The report's OpenMP row of parallel region `name` ("Time%  Time  Calls
// Avg  Threads ... Name") says `calls` and `threads` (only that section's
// rows count: a call path elsewhere can end in the region too).
void expect_report_row(const std::string& report, const std::string& name, int calls, int threads);
bool file_exists(const std::string& path);
// The launcher said no: exit 2, one "hybridprof:" line containing `why`,
// and the program (one that creates `marker`) never ran.
void expect_refused(const RunResult& r, const std::string& why, const std::string& marker);
std::string read_text(const std::string& path);
bool have_program(const std::string& name);  // on $PATH
// A parameterized test's name for a Python version: "Python312" for "3.12".
std::string python_version_test_name(const ::testing::TestParamInfo<std::string>& info);
// pyenv's python3 of `version` ("3.12") under /root/.pyenv/versions, "" if none.
std::string pyenv_python(const std::string& version);
// Runs python3 on one of this folder's checkers (chrome_trace_check.py,
// flamegraph_check.py) with `file`, expecting it to succeed: its facts, a
// line each ("problem ...", "flows 4", ...).
std::vector<std::string> check_with(const std::string& checker, const std::string& file);
// How many `syscall` calls an `strace -c` summary in `text` counts (0 if
// it names none).
uint64_t strace_count(const std::string& text, const std::string& syscall);

// A benchmark program built beside the launcher (build/bin/<name>).
std::string benchmark_program(const std::string& name);

// ViTE exporting `archive` to SVG, headless, as a user would check a trace
// opens: what it said, and what it drew.
struct ViteExport {
  RunResult run;
  bool parsed_clean = false;             // it said "0 errors and 0 warnings"
  std::vector<std::string> complaints;   // other lines naming an error or a missing rank
  std::string svg;                       // the drawing ("" if none)
  size_t count(const std::string& element) const;  // e.g. "<rect" (states), "<polygon" (message arrowheads)
};
ViteExport vite_export(const std::string& archive, const std::string& work_directory);

// No location of the archive had an event written more than 20 us after
// its time to keep the location's order (the writer's OUT_OF_ORDER_NS):
// records reaching the writer out of order are a bug (a send written after
// a sample it preceded, 56 us late, was one). Nanoseconds are the rounding
// between the samples' clock and the traced calls'; a region recorded at
// its end seconds after it began (an OS wait) may be some microseconds
// off, its start converted from the clock's rate at its end.
void expect_events_in_order(const otf2::Archive& archive);

// Samples of an archive, with the names along their calling-context paths.
// Reading one checks expect_events_in_order.
class Profile {
 public:
  explicit Profile(const std::string& path_or_directory);  // throws like ArchiveReader

  const otf2::Archive& archive() const { return archive_; }
  const std::vector<otf2::SampleEvent>& samples() const { return samples_; }

  // Root-first region names of a context's path.
  const std::vector<std::string>& path_names(uint32_t context) const;
  // Innermost region of a context ("" if unknown).
  const std::string& leaf_name(uint32_t context) const;
  const otf2::RegionInfo* leaf_region(uint32_t context) const;

  // Samples whose innermost frame is `function`, optionally on one location.
  uint64_t self_samples(const std::string& function) const;
  // Samples with `function` anywhere on their path.
  uint64_t inclusive_samples(const std::string& function) const;
  // Per location: samples whose innermost frame is `function`.
  std::map<uint64_t, uint64_t> self_samples_by_location(const std::string& function) const;
  // Per location: sample events read.
  std::map<uint64_t, uint64_t> samples_by_location() const;
  // Sum of the SAMPLES property over threads.
  uint64_t samples_property_total() const;
  // The archive's notices (one per line), "" when it has none.
  std::string notices() const;
  uint64_t thread_property(uint64_t location, const std::string& name) const;  // 0 if absent
  // The process (location group) a location belongs to.
  uint32_t process_of(uint64_t location) const;
  // The process whose PID property is `pid`; otf2::kUndefined if none.
  uint32_t process_with_pid(long pid) const;

 private:
  otf2::Archive archive_;
  std::vector<otf2::SampleEvent> samples_;
  mutable std::map<uint32_t, std::vector<std::string>> path_cache_;
};

// Loads `directory`'s archive; null with `error` set if it cannot be read.
std::unique_ptr<Profile> load_profile(const std::string& directory, std::string* error);

// Base of the tests: a scratch directory per test, kept (and named on
// stderr) when the test fails.
class IntegrationTest : public ::testing::Test {
 protected:
  void TearDown() override;
  TempDir scratch;
};

}  // namespace hybridprof::integration
