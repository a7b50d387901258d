// Python programs under the launcher: Python frames in every sample,
// merged with the native ones, named qualname + file + line, for each
// CPython this machine has.
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

const char* kDebianPython = "/usr/bin/python3";

class Python : public IntegrationTest {
 protected:
  std::unique_ptr<Profile> run_split(const std::string& python, const std::string& seconds = "1") {
    const std::string d = scratch / "D";
    std::filesystem::remove_all(d);
    const RunResult r = profile({"-o", d}, {python, fixture("python_split.py"), seconds});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    std::string error;
    auto p = load_profile(d, &error);
    EXPECT_TRUE(p) << error;
    if (p) {
      for (const auto& line : r.err_lines())
        EXPECT_FALSE(line.find("Python") != std::string::npos && line.find("not supported") != std::string::npos)
            << line;
    }
    return p;
  }
};

// Python frames of a sample's path, root first.
std::vector<std::string> python_path(const Profile& p, uint32_t context) {
  std::vector<std::string> names;
  const auto& a = p.archive();
  for (uint32_t c = context; c != otf2::kUndefined; c = a.contexts.at(c).parent) {
    const auto& region = a.regions.at(a.contexts.at(c).region);
    if (region.paradigm == otf2::Paradigm::kPython) names.insert(names.begin(), region.name);
  }
  return names;
}

TEST_F(Python, SplitBetweenTwoFunctionsMatchesCProfile) {
  if (!file_exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  auto p = run_split(kDebianPython);
  ASSERT_TRUE(p);
  const double sixty = double(p->inclusive_samples("sixty")), forty = double(p->inclusive_samples("forty"));
  ASSERT_GT(sixty + forty, 100.0) << "Python frames in the samples";
  const double ours = sixty / (sixty + forty);

  const RunResult c = run({kDebianPython, fixture("python_split.py"), "1", "--cprofile"});
  ASSERT_EQ(c.exit_code, 0) << c.describe();
  std::smatch m;
  const std::regex figures("sixty=([0-9.]+) forty=([0-9.]+)");
  ASSERT_TRUE(std::regex_search(c.out, m, figures)) << c.describe();
  const double c60 = std::stod(m[1]), c40 = std::stod(m[2]);
  const double theirs = c60 / (c60 + c40);
  EXPECT_NEAR(ours, theirs, 0.06) << "hybridprof " << ours << " vs cProfile " << theirs;
  EXPECT_NEAR(ours, 0.6, 0.08);
}

TEST_F(Python, StacksRunFromModuleToTheSampledFunction) {
  if (!file_exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  auto p = run_split(kDebianPython);
  ASSERT_TRUE(p);
  uint64_t in_spin = 0, complete = 0;
  for (const auto& s : p->samples()) {
    const auto path = python_path(*p, s.context);
    if (path.empty() || path.back() != "spin") continue;
    ++in_spin;
    const std::vector<std::string> via_sixty = {"<module>", "main", "sixty", "spin"};
    const std::vector<std::string> via_forty = {"<module>", "main", "forty", "spin"};
    complete += path == via_sixty || path == via_forty;
  }
  ASSERT_GT(in_spin, 100u);
  EXPECT_GE(double(complete), 0.97 * double(in_spin)) << complete << " of " << in_spin << " complete";
  // Regions name the file; contexts carry the sampled line.
  bool spin_region = false;
  for (const auto& [ref, r] : p->archive().regions) {
    if (r.name != "spin") continue;
    spin_region = true;
    EXPECT_EQ(r.paradigm, otf2::Paradigm::kPython);
    EXPECT_NE(r.file.find("python_split.py"), std::string::npos) << r.file;
  }
  EXPECT_TRUE(spin_region);
  // The report's call paths show Python frames as "qualname (file:line)",
  // the line being where the function was (spin's loop is line 16).
  const RunResult report = run({report_tool(), scratch / "D"});
  ASSERT_EQ(report.exit_code, 0) << report.describe();
  EXPECT_NE(report.out.find("main (python_split.py:"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("spin (python_split.py:16)"), std::string::npos) << report.out;
  // --python-only: Python frames alone; spin is the hottest function by
  // self time (its clock calls are native frames, hidden here), and paths
  // start at <module>.
  const RunResult python_only = run({report_tool(), "--python-only", scratch / "D"});
  ASSERT_EQ(python_only.exit_code, 0) << python_only.describe();
  const std::string& text = python_only.out;
  const size_t flat = text.find("Flat profile"), paths = text.find("Hottest call paths");
  ASSERT_NE(flat, std::string::npos);
  ASSERT_NE(paths, std::string::npos);
  const size_t first_row = text.find('\n', text.find("Function", flat)) + 1;
  EXPECT_NE(text.substr(first_row, text.find('\n', first_row) - first_row).find(" spin "), std::string::npos)
      << text.substr(flat, paths - flat);
  const std::string path_rows = text.substr(paths, text.find("\n\n", paths) - paths);
  EXPECT_EQ(path_rows.find("_start"), std::string::npos) << path_rows;
  EXPECT_NE(path_rows.find("<module> (python_split.py:"), std::string::npos) << path_rows;
  // The interpreter's native frames stay above the Python ones: the
  // evaluation frames themselves are replaced.
  for (const auto& s : p->samples()) {
    const auto& names = p->path_names(s.context);
    if (std::find(names.begin(), names.end(), "spin") == names.end()) continue;
    EXPECT_EQ(std::count(names.begin(), names.end(), "_PyEval_EvalFrameDefault"), 0);
    EXPECT_NE(std::find(names.begin(), names.end(), "Py_RunMain"), names.end());
    break;
  }
}

// --python-functions: spin runs on several lines (its loop test and its
// body), each a path of its own by line; by function they are one path
// whose samples are the sum, the count the archive itself gives.
TEST_F(Python, ReportMergesAFunctionsLinesWithPythonFunctions) {
  if (!file_exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  auto p = run_split(kDebianPython);
  ASSERT_TRUE(p);
  const std::vector<std::string> chain = {"<module>", "main", "sixty", "spin"};
  uint64_t via_sixty = 0;
  std::set<uint32_t> spin_lines;
  for (const auto& s : p->samples()) {
    if (python_path(*p, s.context) != chain) continue;
    ++via_sixty;
    // The innermost Python context is spin's: its line.
    for (uint32_t c = s.context; c != otf2::kUndefined; c = p->archive().contexts.at(c).parent) {
      const auto& context = p->archive().contexts.at(c);
      if (p->archive().regions.at(context.region).name != "spin") continue;
      auto where = p->archive().source_locations.find(context.source_location);
      if (where != p->archive().source_locations.end()) spin_lines.insert(where->second.line);
      break;
    }
  }
  ASSERT_GT(via_sixty, 100u);
  ASSERT_GE(spin_lines.size(), 2u) << "spin sampled on one line only: nothing to merge";

  // "  <samples>  <percent>  <path>" rows of the call-path table.
  auto path_rows = [](const std::string& text) {
    std::map<std::string, uint64_t> rows;
    const size_t start = text.find("Hottest call paths");
    std::istringstream in(text.substr(start, text.find("\n\n", start) - start));
    const std::regex row(R"(^\s+(\d+)\s+[0-9.]+%\s+(.*)$)");
    std::smatch m;
    for (std::string line; std::getline(in, line);)
      if (std::regex_match(line, m, row)) rows[m[2]] += std::stoull(m[1]);
    return rows;
  };
  const RunResult by_line = run({report_tool(), "--python-only", "--full-paths", "--paths", "1000", scratch / "D"});
  ASSERT_EQ(by_line.exit_code, 0) << by_line.describe();
  size_t spin_paths = 0;
  for (const auto& [path, samples] : path_rows(by_line.out))
    spin_paths += path.find("sixty (python_split.py:") != std::string::npos && path.find("spin (") != std::string::npos;
  EXPECT_GE(spin_paths, 2u) << by_line.out;

  const RunResult by_function =
      run({report_tool(), "--python-only", "--python-functions", "--full-paths", "--paths", "1000", scratch / "D"});
  ASSERT_EQ(by_function.exit_code, 0) << by_function.describe();
  const auto rows = path_rows(by_function.out);
  const std::string merged =
      "<module> (python_split.py) → main (python_split.py) → sixty (python_split.py) → spin (python_split.py)";
  ASSERT_TRUE(rows.count(merged)) << by_function.out;
  EXPECT_EQ(rows.at(merged), via_sixty) << by_function.out;
  for (const auto& [path, samples] : rows) EXPECT_EQ(path.find(".py:"), std::string::npos) << path;
  // Folded stacks say the same.
  const RunResult folded = run({report_tool(), "--folded", "--python-only", "--python-functions", scratch / "D"});
  ASSERT_EQ(folded.exit_code, 0) << folded.describe();
  EXPECT_NE(folded.out.find("<module> (python_split.py);main (python_split.py);sixty (python_split.py);spin "
                            "(python_split.py) " + std::to_string(via_sixty) + "\n"),
            std::string::npos)
      << folded.out;
}

// The archive says which Python ran and, per thread, how many samples had
// an incomplete Python stack; the report sums them in its run summary and
// lists them per thread. On this single-threaded program they are rare
// (the stacks test above finds 97% complete).
TEST_F(Python, ReportCountsIncompletePythonStacks) {
  if (!file_exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  auto p = run_split(kDebianPython);
  ASSERT_TRUE(p);
  const RunResult version = run({kDebianPython, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"});
  ASSERT_EQ(version.exit_code, 0) << version.describe();
  ASSERT_EQ(p->archive().processes.size(), 1u);
  const auto& process = p->archive().processes.begin()->second;
  ASSERT_TRUE(process.properties.count("PYTHON"));
  EXPECT_EQ(process.properties.at("PYTHON") + "\n", version.out);
  uint64_t incomplete = 0;
  for (const auto& [location, thread] : p->archive().threads) {
    ASSERT_TRUE(thread.properties.count("PYTHON_INCOMPLETE")) << thread.name;
    incomplete += thread.properties.at("PYTHON_INCOMPLETE");
  }
  EXPECT_LT(incomplete * 20, p->samples().size()) << incomplete << " of " << p->samples().size();
  const RunResult report = run({report_tool(), scratch / "D"});
  ASSERT_EQ(report.exit_code, 0) << report.describe();
  EXPECT_NE(report.out.find("  Python                    " + version.out), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("  Incomplete Python stacks  " + std::to_string(incomplete) + " ("), std::string::npos)
      << report.out;
  EXPECT_NE(report.out.find("Python incomplete\n"), std::string::npos) << report.out;
}

// Each Python thread shows its Python stack, also one that released the GIL
// to hash in C: its samples have the Python caller above the native code.
TEST_F(Python, ThreadsShowTheirStacksAlsoWithTheGilReleased) {
  if (!file_exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {kDebianPython, fixture("python_threads.py"), "1"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  uint64_t spin = 0, hashing_native = 0, hashing_total = 0;
  for (const auto& s : p->samples()) {
    const auto py = python_path(*p, s.context);
    if (py.empty()) continue;
    if (py.back() == "python_spin") ++spin;
    if (py.back() != "native_hash") continue;
    ++hashing_total;
    // Below the Python frame: native code of the hash (not the eval loop).
    const auto& names = p->path_names(s.context);
    hashing_native += names.back() != "native_hash";
  }
  EXPECT_GT(spin, 100u);
  EXPECT_GT(hashing_total, 100u);
  EXPECT_GT(double(hashing_native), 0.8 * double(hashing_total)) << "native frames under native_hash";
  // ... and each thread's stack starts at the thread's run().
  for (const auto& s : p->samples()) {
    const auto py = python_path(*p, s.context);
    if (py.empty() || (py.back() != "python_spin" && py.back() != "native_hash")) continue;
    EXPECT_EQ(py.front(), "Thread._bootstrap") << "outermost Python frame of a thread";
    break;
  }
}

// A forked child's Python frames come from the child's own memory (the
// reads name the child's pid, not the parent's): its samples are in
// child_spin, while the parent sits blocked in parent_wait.
TEST_F(Python, ForkedChildReadsItsOwnFrames) {
  if (!file_exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {kDebianPython, fixture("python_fork.py")});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string error;
  auto p = load_profile(d, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->archive().processes.size(), 2u);
  const uint64_t child = p->inclusive_samples("child_spin"), parent = p->inclusive_samples("parent_wait");
  // 0.5 s of the child's CPU against the parent's start-up: a share, which
  // holds however much CPU the child got on a loaded machine.
  EXPECT_GT(2 * child, p->samples().size()) << child << " samples in the child's child_spin";
  EXPECT_LT(parent * 10, child) << parent << " samples in parent_wait, which only blocks";
}

// Processes that Python's multiprocessing starts are named by what they
// run: the program by its script, each worker by its function and a
// number, reused each epoch as PyTorch numbers its DataLoader workers; and
// each names its parent (python_workers.py: 2 epochs of 2 workers).
TEST_F(Python, MultiprocessingWorkersAreNamedByTheirRoleAndParent) {
  if (!file_exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  const std::string d = scratch / "D";
  const RunResult r = profile({"-o", d}, {kDebianPython, fixture("python_workers.py"), "2", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  otf2::ArchiveReader reader(d);
  const otf2::Archive& a = reader.archive();
  std::string main_pid;
  for (const auto& [ref, process] : a.processes) {
    if (process.name.find("(python_workers.py)") != std::string::npos) main_pid = process.properties.at("PID");
  }
  ASSERT_FALSE(main_pid.empty()) << "the program named by its script";
  std::map<std::string, int> workers;
  for (const auto& [ref, process] : a.processes) {
    if (process.properties.at("PID") == main_pid) continue;
    EXPECT_EQ(process.properties.at("PARENT_PID"), main_pid) << process.name;
    EXPECT_EQ(process.properties.at("EXIT_STATUS"), "exit 0") << process.name;
    const size_t role = process.name.find(" (load_batches worker ");
    EXPECT_NE(role, std::string::npos) << process.name;
    if (role != std::string::npos) ++workers[process.name.substr(role)];
  }
  // Two epochs of workers 0 and 1 (each samples its 0.3 s of CPU in
  // load_batches, however busy the machine).
  EXPECT_EQ(workers, (std::map<std::string, int>{{" (load_batches worker 0)", 2}, {" (load_batches worker 1)", 2}}));
  // The report lists the parent beside each.
  const std::string report = run({report_tool(), d}).out;
  int rows_with_parent = 0;
  for (const std::string& line : split_lines(report))
    rows_with_parent += line.find("load_batches worker") != std::string::npos &&
                        line.find(" " + main_pid + " ") != std::string::npos;
  EXPECT_EQ(rows_with_parent, 4) << report;
}

// Every CPython under pyenv's usual place (3.8 to 3.13 here, 3.14 when
// installed); skipped for versions not installed.
class PythonVersions : public Python, public ::testing::WithParamInterface<std::string> {};

TEST_P(PythonVersions, FramesAreReadAndNamed) {
  const std::string python = pyenv_python(GetParam());
  if (python.empty()) GTEST_SKIP() << "no Python " << GetParam() << " under pyenv";
  auto p = run_split(python, "0.5");
  ASSERT_TRUE(p);
  EXPECT_GT(p->inclusive_samples("spin"), 50u);
  EXPECT_GT(p->inclusive_samples("sixty"), p->inclusive_samples("forty"));
  EXPECT_GT(p->inclusive_samples("<module>"), 50u);
}

INSTANTIATE_TEST_SUITE_P(Installed, PythonVersions,
                         ::testing::Values("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"), python_version_test_name);

}  // namespace
}  // namespace hybridprof::integration
