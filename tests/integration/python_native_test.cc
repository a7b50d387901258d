// Python programs whose time is in native code: a C library called through
// ctypes, numpy, and a PyTorch training loop with OpenMP worker threads.
// The merged stacks must put the native frames under the Python function
// that called them, and the report must show those paths.
#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

// Debian's CPython: the one with python3-numpy and python3-torch.
const char* kDebianPython = "/usr/bin/python3";

// A sample's path as frames, root first, each marked Python or native.
struct Frame {
  std::string name, module;
  bool python = false;
};

std::vector<Frame> frames_of(const Profile& p, uint32_t context) {
  std::vector<Frame> frames;
  const auto& a = p.archive();
  for (uint32_t c : a.context_path(context)) {
    const auto& region = a.regions.at(a.contexts.at(c).region);
    const std::string module = region.module.substr(region.module.find_last_of('/') + 1);
    frames.push_back({region.name, module, region.paradigm == otf2::Paradigm::kPython});
  }
  return frames;
}

// Index of the first frame named `name`, or -1.
int find_frame(const std::vector<Frame>& frames, const std::string& name) {
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames[i].name == name) return int(i);
  return -1;
}

std::vector<std::string> python_names(const std::vector<Frame>& frames) {
  std::vector<std::string> names;
  for (const auto& f : frames)
    if (f.python) names.push_back(f.name);
  return names;
}

// The native frames below the innermost Python frame (root first).
std::vector<Frame> native_below_python(const std::vector<Frame>& frames) {
  size_t last_python = frames.size();
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames[i].python) last_python = i;
  if (last_python == frames.size()) return {};
  return {frames.begin() + long(last_python) + 1, frames.end()};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class PythonNative : public IntegrationTest {
 protected:
  // Runs `python fixture args...` under the launcher into scratch/D. A
  // fixture exits with 3 when it cannot import its module: then the test is
  // skipped, but only if the import fails without the profiler as well.
  // Returns null (with a failure or skip recorded) when there is no profile.
  std::unique_ptr<Profile> run_fixture(const std::vector<std::string>& program, const std::string& module,
                                       RunResult* result) {
    if (!file_exists(kDebianPython)) {
      skip_reason = std::string("no ") + kDebianPython;
      return nullptr;
    }
    const std::string d = scratch / "D";
    *result = profile({"-o", d}, program);
    if (result->exit_code == 3 && contains(result->err, module + ": cannot import")) {
      const RunResult plain = run({kDebianPython, "-c", "import " + module});
      if (plain.exit_code != 0) {
        skip_reason = std::string("'import ") + module + "' fails under " + kDebianPython + ": " + plain.err;
        return nullptr;
      }
      ADD_FAILURE() << "import " << module << " works without the profiler but not under it\n" << result->describe();
      return nullptr;
    }
    EXPECT_EQ(result->exit_code, 0) << result->describe();
    std::string error;
    auto p = load_profile(d, &error);
    EXPECT_TRUE(p) << error;
    return p;
  }

  RunResult report(const std::vector<std::string>& options) {
    std::vector<std::string> argv{report_tool()};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(scratch / "D");
    return run(argv);
  }

  std::string skip_reason;
};

// A C function called through ctypes: its samples have the Python function
// that called it as an ancestor, with only native frames (ctypes, libffi)
// between them, and the report's call paths read the same.
TEST_F(PythonNative, CtypesCallIsUnderItsPythonCaller) {
  RunResult r;
  auto p = run_fixture({kDebianPython, fixture("python_native.py"), fixture("libnative_burn.so"), "ctypes", "1"},
                       "ctypes", &r);
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_TRUE(p);
  uint64_t in_burn = 0, under_caller = 0;
  for (const auto& s : p->samples()) {
    const auto frames = frames_of(*p, s.context);
    const int burn = find_frame(frames, "hp_native_burn");
    if (burn < 0) continue;
    ++in_burn;
    const int caller = find_frame(frames, "call_native_burn_via_ctypes");
    if (caller < 0 || caller > burn || !frames[size_t(caller)].python) continue;
    // The Python frames are exactly <module> -> main -> caller, so below
    // the caller there is only native code (ctypes, libffi) down to
    // hp_native_burn, which is the fixture library's.
    const std::vector<std::string> expected = {"<module>", "main", "call_native_burn_via_ctypes"};
    if (python_names(frames) != expected) continue;
    if (frames[size_t(burn)].module != "libnative_burn.so") continue;
    ++under_caller;
  }
  // About 1 s of CPU in hp_native_burn; at the default rate that is
  // hundreds of samples (100 leaves room for a loaded machine).
  ASSERT_GT(in_burn, 100u);
  EXPECT_GE(double(under_caller), 0.95 * double(in_burn)) << under_caller << " of " << in_burn;
  EXPECT_GT(double(p->self_samples("hp_native_burn")), 0.8 * double(in_burn)) << "hp_native_burn as the leaf";

  // The hottest call path in the report runs through the Python caller
  // (named with its file and line) into hp_native_burn.
  const RunResult text = report({"--full-paths", "--paths", "3"});
  ASSERT_EQ(text.exit_code, 0) << text.describe();
  const size_t paths = text.out.find("Hottest call paths");
  ASSERT_NE(paths, std::string::npos) << text.out;
  const std::vector<std::string> rows = split_lines(text.out.substr(paths));
  ASSERT_GT(rows.size(), 2u) << text.out;
  const std::string& hottest = rows[2];  // after the heading and the column titles
  const size_t caller = hottest.find("call_native_burn_via_ctypes (python_native.py:");
  const size_t burn = hottest.find("hp_native_burn");
  EXPECT_NE(caller, std::string::npos) << hottest;
  EXPECT_NE(burn, std::string::npos) << hottest;
  EXPECT_LT(caller, burn) << hottest;
  EXPECT_LT(hottest.find("main (python_native.py:"), caller) << hottest;
}

// numpy's matrix product: samples in numpy_matmul_work spend their time in
// native code of numpy (or its BLAS) below that Python frame.
TEST_F(PythonNative, NumpyWorkIsUnderItsPythonCaller) {
  RunResult r;
  auto p = run_fixture({kDebianPython, fixture("python_native.py"), "-", "numpy", "1"}, "numpy", &r);
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_TRUE(p);
  uint64_t in_work = 0, in_numpy_code = 0;
  std::map<std::string, uint64_t> leaf_modules;
  for (const auto& s : p->samples()) {
    const auto frames = frames_of(*p, s.context);
    const auto python = python_names(frames);
    if (python.empty() || python.back() != "numpy_matmul_work") continue;
    ++in_work;
    const auto native = native_below_python(frames);
    if (native.empty()) continue;
    ++leaf_modules[native.back().module];
    const bool numpy_code = std::any_of(native.begin(), native.end(), [](const Frame& f) {
      return contains(f.module, "_multiarray_umath") || contains(f.module, "blas");
    });
    in_numpy_code += numpy_code;
  }
  std::string modules;
  for (const auto& [m, n] : leaf_modules) modules += " " + m + "=" + std::to_string(n);
  ASSERT_GT(in_work, 100u) << "leaf modules:" << modules;
  EXPECT_GE(double(in_numpy_code), 0.8 * double(in_work))
      << in_numpy_code << " of " << in_work << " in numpy's code; leaf modules:" << modules;

  const RunResult folded = report({"--folded"});
  ASSERT_EQ(folded.exit_code, 0) << folded.describe();
  // Folded stacks: some stack goes on below numpy_matmul_work (native
  // frames: the Python function is not the leaf).
  bool shown = false;
  for (const auto& line : split_lines(folded.out)) {
    const size_t caller = line.find(";numpy_matmul_work (python_native.py:");
    shown |= caller != std::string::npos && line.find(';', caller + 1) != std::string::npos;
  }
  EXPECT_TRUE(shown) << "no folded stack with native frames under numpy_matmul_work";
}

// The location of the process's main thread (TID == PID); otf2::kUndefined
// as uint64_t when there is none.
uint64_t main_thread(const Profile& p) {
  for (const auto& [location, thread] : p.archive().threads) {
    const auto& process = p.archive().processes.at(thread.process);
    auto pid = process.properties.find("PID");
    if (pid != process.properties.end() && pid->second == std::to_string(p.thread_property(location, "TID")))
      return location;
  }
  return uint64_t(otf2::kUndefined);
}

// The row of `function` in the report's flat profile: its Incl column, or
// -1 when the function is not listed.
long flat_profile_inclusive(const std::string& report, const std::string& function) {
  const size_t flat = report.find("Flat profile"), paths = report.find("Hottest call paths");
  if (flat == std::string::npos || paths == std::string::npos) return -1;
  // Columns: Self% Self Incl% Incl Function Module Source.
  const std::regex row("^\\s*[0-9.]+% +[0-9]+ +[0-9.]+% +([0-9]+) +(.*?) {2,}");
  for (const auto& line : split_lines(report.substr(flat, paths - flat))) {
    std::smatch m;
    if (std::regex_search(line, m, row) && m[2] == function) return std::stol(m[1]);
  }
  return -1;
}

// A PyTorch training loop with 2 OpenMP threads: the main thread's samples
// run from the Python training step through the model's forward methods
// into ATen's operators; libgomp's worker thread is sampled with its native
// frames; the flat profile gives the Python functions' time.
TEST_F(PythonNative, TorchTrainingLoopFromPythonIntoAtenAndOpenMp) {
  RunResult r;
  // 1000 steps: the worker's share of each elementwise operator is short,
  // and its samples in ATen are ~1.5% of its samples (300 steps gave 4-5,
  // and on a busy machine once none).
  auto p = run_fixture({kDebianPython, fixture("python_torch_train.py"), "1000"}, "torch", &r);
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_TRUE(p);
  // The loop trained, with 2 threads.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("loss ([0-9.]+) -> ([0-9.]+) threads ([0-9]+)"))) << r.describe();
  EXPECT_LT(std::stod(m[2]), std::stod(m[1]));
  EXPECT_EQ(m[3], "2");

  const uint64_t main_location = main_thread(*p);
  ASSERT_NE(main_location, uint64_t(otf2::kUndefined));

  // Main thread: train_step -> TinyMlp.forward -> (Linear.forward) -> ATen.
  uint64_t in_step = 0, step_path_complete = 0, forward_into_aten = 0, linear_into_addmm = 0;
  for (const auto& s : p->samples()) {
    if (s.location != main_location) continue;
    const auto frames = frames_of(*p, s.context);
    const int step = find_frame(frames, "train_step");
    if (step < 0) continue;
    ++in_step;
    const auto python = python_names(frames);
    step_path_complete += python.size() >= 3 && python[0] == "<module>" && python[1] == "main" &&
                          python[2] == "train_step";
    const int forward = find_frame(frames, "TinyMlp.forward");
    if (forward < step) continue;
    const auto native = native_below_python(frames);
    const bool aten = std::any_of(native.begin(), native.end(), [](const Frame& f) {
      return contains(f.module, "libtorch_cpu") && contains(f.name, "at::");
    });
    forward_into_aten += aten;
    const int linear = find_frame(frames, "Linear.forward");
    if (linear > forward && aten && python.back() == "Linear.forward")
      linear_into_addmm += std::any_of(native.begin(), native.end(),
                                       [](const Frame& f) { return contains(f.name, "addmm"); });
  }
  ASSERT_GT(in_step, 100u) << "samples in train_step on the main thread";
  EXPECT_GE(double(step_path_complete), 0.95 * double(in_step)) << step_path_complete << " of " << in_step;
  EXPECT_GT(forward_into_aten, 20u) << "samples in ATen under TinyMlp.forward, of " << in_step << " in train_step";
  EXPECT_GT(linear_into_addmm, 5u) << "samples in addmm under Linear.forward";

  // libgomp's worker threads: sampled, their stacks unwound from the
  // thread's start through libgomp, some of them in ATen's kernels.
  std::map<uint64_t, uint64_t> worker_samples, worker_complete, worker_in_aten;
  for (const auto& s : p->samples()) {
    if (s.location == main_location) continue;
    const auto frames = frames_of(*p, s.context);
    const bool gomp = std::any_of(frames.begin(), frames.end(),
                                  [](const Frame& f) { return f.module.rfind("libgomp", 0) == 0; });
    if (!gomp) continue;
    ++worker_samples[s.location];
    worker_complete[s.location] += frames.front().name == "clone3" || frames.front().name == "clone";
    worker_in_aten[s.location] += std::any_of(frames.begin(), frames.end(), [](const Frame& f) {
      return contains(f.module, "libtorch_cpu") && contains(f.name, "at::");
    });
    EXPECT_TRUE(python_names(frames).empty()) << "a Python frame on an OpenMP worker";
  }
  uint64_t workers = 0, in_aten = 0;
  for (const auto& [location, n] : worker_samples) {
    if (n < 50) continue;
    ++workers;
    in_aten += worker_in_aten[location];
    EXPECT_GE(double(worker_complete[location]), 0.95 * double(n))
        << "worker " << location << ": " << worker_complete[location] << " of " << n << " unwound to clone3";
  }
  EXPECT_GE(workers, 1u) << "no thread besides the main one sampled in libgomp";
  EXPECT_GT(in_aten, 0u) << "no worker sample in ATen code under libgomp";

  // The report: folded stacks hold the whole path; the flat profile
  // (Python frames only) gives each Python function's time, as counted here.
  const RunResult folded = report({"--folded"});
  ASSERT_EQ(folded.exit_code, 0) << folded.describe();
  bool shown = false;
  for (const auto& line : split_lines(folded.out)) {
    const size_t step = line.find(";train_step (python_torch_train.py:");
    const size_t forward = line.find(";TinyMlp.forward (python_torch_train.py:", step);
    const size_t linear = line.find(";Linear.forward (linear.py:", forward);
    const size_t aten = line.find(";at::", linear);
    shown |= step != std::string::npos && forward != std::string::npos && linear != std::string::npos &&
             aten != std::string::npos;
  }
  EXPECT_TRUE(shown) << "no folded stack train_step;...;TinyMlp.forward;...;Linear.forward;...;at::...";

  const RunResult flat = report({"--python-only", "--top", "100000"});
  ASSERT_EQ(flat.exit_code, 0) << flat.describe();
  for (const std::string function : {"train_step", "TinyMlp.forward", "Linear.forward"}) {
    const long shown_inclusive = flat_profile_inclusive(flat.out, function);
    EXPECT_EQ(shown_inclusive, long(p->inclusive_samples(function))) << function << "\n" << flat.out;
  }
  EXPECT_GT(p->inclusive_samples("TinyMlp.forward"), p->inclusive_samples("Linear.forward"));
}

}  // namespace
}  // namespace hybridprof::integration
