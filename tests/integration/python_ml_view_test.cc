// The report's Python ML view on real PyTorch training loops: a small MLP
// (python_torch_train.py) and an input-bound ResNet-18 fed by a DataLoader
// (python_torch_convnet.py). Checks shares and facts read from the report's
// text, never sample counts, which follow the machine's load.
#include <algorithm>
#include <filesystem>
#include <regex>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

// Debian's CPython: the one with python3-torch and python3-torchvision.
const char* kDebianPython = "/usr/bin/python3";

// Python fixtures need no build: read from the source tree, next to this file.
std::string python_fixture(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures" / "python" / name).string();
}

// The ML view's section of the report, parsed.
struct MlSection {
  std::string title;  // "Python ML view (PyTorch): all N samples" or "...: step F, ..."
  std::map<std::string, uint64_t> phases;
  struct Operator {
    uint64_t self = 0, inclusive = 0;
  };
  std::map<std::pair<std::string, std::string>, Operator> operators;  // (name, pass)
  bool input_bound = false;
  std::string text;

  uint64_t samples() const {
    uint64_t sum = 0;
    for (const auto& [name, n] : phases) sum += n;
    return sum;
  }
  double share(const std::string& phase) const {
    auto it = phases.find(phase);
    return it == phases.end() || samples() == 0 ? 0.0 : double(it->second) / double(samples());
  }
  bool has(const std::string& name, const std::string& pass) const {
    auto it = operators.find({name, pass});
    return it != operators.end() && it->second.inclusive > 0;
  }
};

MlSection parse_ml_section(const std::string& report) {
  MlSection section;
  const size_t begin = report.find("\nPython ML view");
  if (begin == std::string::npos) return section;
  const size_t end = report.find("\nProcesses\n", begin);
  section.text = report.substr(begin + 1, end == std::string::npos ? std::string::npos : end - begin - 1);
  const std::regex phase("^  (input pipeline|forward|backward|optimizer|other) +([0-9]+) +[0-9.]+%$");
  const std::regex op("^ +[0-9.]+% +([0-9]+) +[0-9.]+% +([0-9]+) +(forward|backward) +(\\S+)$");
  const std::vector<std::string> lines = split_lines(section.text);
  if (!lines.empty()) section.title = lines[0];
  for (const std::string& line : lines) {
    std::smatch m;
    if (std::regex_match(line, m, phase)) section.phases[m[1]] = std::stoull(m[2]);
    if (std::regex_match(line, m, op)) section.operators[{m[4], m[3]}] = {std::stoull(m[1]), std::stoull(m[2])};
    section.input_bound |= line.rfind("  input-bound: ", 0) == 0;
  }
  return section;
}

class PythonMlView : public IntegrationTest {
 protected:
  // Profiles `program` into scratch/D; false (with a skip reason or a
  // failure) when there is no archive. A fixture exits with 3 when it cannot
  // import torch: a skip, if `import_check` fails without the profiler too.
  bool profile_fixture(const std::vector<std::string>& program, const std::string& import_check) {
    if (!file_exists(kDebianPython)) {
      skip_reason = std::string("no ") + kDebianPython;
      return false;
    }
    const RunResult r = profile({"-o", scratch / "D"}, program);
    if (r.exit_code == 3 && r.err.find("torch: cannot import") != std::string::npos) {
      const RunResult plain = run({kDebianPython, "-c", import_check});
      if (plain.exit_code != 0) {
        skip_reason = "'" + import_check + "' fails under " + kDebianPython + ": " + plain.err;
        return false;
      }
      ADD_FAILURE() << import_check << " works without the profiler but not under it\n" << r.describe();
      return false;
    }
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return r.exit_code == 0;
  }

  MlSection ml_report(const std::vector<std::string>& options) {
    std::vector<std::string> argv{report_tool(), "--top", "100000"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(scratch / "D");
    const RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return parse_ml_section(r.out);
  }

  std::string skip_reason;
};

// PyTorch's intra-op parallelism on the CPU is OpenMP (libgomp): with 2
// ATen threads each sine of python_torch_openmp.py is a parallel region on
// the main thread and a libgomp worker. On the main thread the region hangs
// under the Python frame that launched it (intra_op_work), in the calling
// context of the samples taken inside it; the worker runs no Python.
TEST_F(PythonMlView, IntraOpParallelRegionsHangUnderThePythonFramesThatLaunchedThem) {
  const bool profiled = profile_fixture({kDebianPython, python_fixture("python_torch_openmp.py"), "60"}, "import torch");
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_TRUE(profiled);
  const Profile p(scratch / "D");
  const auto is_parallel = [](const std::string& n) { return n.rfind("!$omp parallel @", 0) == 0; };
  const auto is_launcher = [](const std::string& n) { return n.rfind("intra_op_work", 0) == 0; };
  std::map<uint64_t, uint64_t> in_region, under_launcher;  // per thread
  for (const otf2::SampleEvent& e : p.samples()) {
    const std::vector<std::string>& path = p.path_names(e.context);
    const auto region = std::find_if(path.begin(), path.end(), is_parallel);
    if (region == path.end()) continue;
    ++in_region[e.location];
    under_launcher[e.location] += std::find_if(path.begin(), region, is_launcher) != region;
  }
  // The main thread: the one whose in-region samples have Python above them.
  const auto main_thread = std::max_element(under_launcher.begin(), under_launcher.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
  ASSERT_NE(main_thread, under_launcher.end()) << "no sample inside a parallel region";
  ASSERT_GT(main_thread->second, 0u) << "60 sines of 1M elements, half of each on the main thread";
  EXPECT_GE(main_thread->second, in_region[main_thread->first] * 95 / 100)
      << main_thread->second << " of " << in_region[main_thread->first];
  for (const auto& [location, n] : under_launcher) {
    if (location == main_thread->first) continue;
    EXPECT_EQ(n, 0u) << "the worker runs no Python";
  }

  // The regions' enters hang there too: each of the main thread's is made
  // under the Python function that ran the operator (at least one region a
  // sine), the worker's under no Python.
  std::map<uint64_t, uint64_t> enters, enters_under_launcher;
  otf2::ArchiveReader reader(scratch / "D");
  reader.read_events([](const otf2::SampleEvent&) {},
                     [&](const otf2::RegionEvent& e) {
                       if (!e.enter || !is_parallel(p.archive().regions.at(e.region).name)) return;
                       const std::vector<std::string>& path = p.path_names(e.context);
                       ++enters[e.location];
                       enters_under_launcher[e.location] += std::any_of(path.begin(), path.end(), is_launcher);
                     },
                     [](const otf2::MpiEvent&) {}, [](const otf2::ForkJoinEvent&) {});
  EXPECT_GE(enters[main_thread->first], 60u);
  EXPECT_EQ(enters_under_launcher[main_thread->first], enters[main_thread->first]);
  for (const auto& [location, n] : enters_under_launcher) {
    if (location == main_thread->first) continue;
    EXPECT_EQ(n, 0u) << "the worker runs no Python";
  }
}

// The MLP: Linear layers (at::linear -> addmm) forward, autograd's engine
// backward, SGD's step; no DataLoader, so no input pipeline.
TEST_F(PythonMlView, TorchTrainingLoopPhasesAndOperators) {
  const bool profiled =
      profile_fixture({kDebianPython, fixture("python_torch_train.py"), "300"}, "import torch");
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_TRUE(profiled);

  const MlSection all = ml_report({});
  ASSERT_EQ(all.title.rfind("Python ML view (PyTorch): all ", 0), 0u) << "the view shows for a PyTorch job\n"
                                                                      << all.text;
  EXPECT_TRUE(all.has("addmm", "forward") || all.has("linear", "forward")) << all.text;
  EXPECT_GT(all.share("backward"), 0.0) << all.text;
  EXPECT_GT(all.share("optimizer"), 0.0) << all.text;
  EXPECT_EQ(all.share("input pipeline"), 0.0) << all.text;
  EXPECT_FALSE(all.input_bound) << all.text;
  // Backward runs ATen operators too (mm for Linear's gradients, threshold_backward for relu's).
  EXPECT_TRUE(all.has("mm", "backward") || all.has("threshold_backward", "backward")) << all.text;

  // The step: its share of the run is that of the samples with train_step
  // on their path, and inside it nearly everything is one of the three phases.
  std::string error;
  const auto p = load_profile(scratch / "D", &error);
  ASSERT_TRUE(p) << error;
  const uint64_t in_step = p->inclusive_samples("train_step"), total = p->samples().size();
  const MlSection step = ml_report({"--step", "train_step"});
  EXPECT_EQ(step.samples(), in_step) << step.text;
  const std::string share = std::to_string(in_step) + " of " + std::to_string(total) + " samples";
  EXPECT_NE(step.title.find("step train_step, " + share), std::string::npos) << step.title << " / " << share;
  EXPECT_GE(step.share("forward") + step.share("backward") + step.share("optimizer"), 0.9) << step.text;
}

// ResNet-18 with a dataset that works 2e6 Python iterations per image: the
// input pipeline takes most of the training time and the hint says so;
// convolution and batch-norm operators show in both passes.
TEST_F(PythonMlView, InputBoundConvNet) {
  const bool profiled = profile_fixture(
      {kDebianPython, python_fixture("python_torch_convnet.py"), "2", "2000000"}, "import torch");
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_TRUE(profiled);

  const MlSection all = ml_report({});
  ASSERT_FALSE(all.phases.empty()) << "no ML view";
  EXPECT_TRUE(all.input_bound) << all.text;
  const double training = all.share("input pipeline") + all.share("forward") + all.share("backward") +
                          all.share("optimizer");
  EXPECT_GE(all.share("input pipeline"), 0.5 * training) << all.text;
  EXPECT_GT(all.share("forward"), 0.0) << all.text;
  EXPECT_GT(all.share("backward"), 0.0) << all.text;
  // Not the optimizer: two SGD steps take a few milliseconds, 0 to 5
  // samples at 1 kHz (a fresh machine's run had 0). The training loop
  // tests above and below hold it to a share.
  EXPECT_TRUE(all.has("conv2d", "forward")) << all.text;
  EXPECT_TRUE(all.has("convolution_backward", "backward")) << all.text;
  EXPECT_TRUE(all.has("native_batch_norm", "forward")) << all.text;

  // The loop fetches the batch outside train_step: the step alone is not input-bound.
  const MlSection step = ml_report({"--step", "train_step"});
  EXPECT_GT(step.samples(), 0u) << step.text;
  EXPECT_EQ(step.share("input pipeline"), 0.0) << step.text;
  EXPECT_FALSE(step.input_bound) << step.text;
  // The dataset's __getitem__, by its qualified name: all input pipeline.
  const MlSection item = ml_report({"--step", "RandomImages.__getitem__"});
  EXPECT_EQ(item.share("input pipeline"), 1.0) << item.text;
}

// The same net with nothing but the training: its convolutions run in
// oneDNN's JIT kernels (no unwind tables, no frame pointers), yet the
// stacks stay whole: at most 3% incomplete, the kernels named from the perf
// map oneDNN writes for the launcher, train_step on the stack of every
// sample the loop takes outside the DataLoader, and the operator view lists
// convolution, batch norm and the optimizer.
TEST_F(PythonMlView, ConvNetStacksStayWholeThroughJitKernels) {
  const bool profiled =
      profile_fixture({kDebianPython, python_fixture("python_torch_convnet.py"), "8"}, "import torch");
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  ASSERT_TRUE(profiled);
  std::string error;
  const auto p = load_profile(scratch / "D", &error);
  ASSERT_TRUE(p) << error;
  const uint64_t total = p->samples().size();
  ASSERT_GT(total, 0u);
  uint64_t failures = 0, unknown = 0, jit = 0, in_loop = 0, in_step = 0;
  for (const auto& [location, thread] : p->archive().threads) failures += p->thread_property(location, "UNWIND_FAILURES");
  for (const auto& s : p->samples()) {
    const std::vector<std::string>& path = p->path_names(s.context);
    const otf2::RegionInfo* leaf = p->leaf_region(s.context);
    unknown += p->leaf_name(s.context) == "[unknown]";
    jit += leaf != nullptr && leaf->module == "[jit]";
    const bool loop = std::find(path.begin(), path.end(), "train_epoch") != path.end();
    const bool fetching = std::any_of(path.begin(), path.end(), [](const std::string& f) {
      return f.find("DataLoaderIter") != std::string::npos || f.find("_DatasetKind") != std::string::npos;
    });
    if (!loop || fetching) continue;
    ++in_loop;
    in_step += std::find(path.begin(), path.end(), "train_step") != path.end();
  }
  EXPECT_LE(failures * 100, total * 3) << "incomplete unwinds: " << failures << " of " << total;
  EXPECT_LE(unknown * 100, total * 3) << "code in no module and unnamed: " << unknown << " of " << total;
  RecordProperty("jit_share_percent", std::to_string(jit * 100 / total));
  ASSERT_GT(in_loop, 0u);
  EXPECT_GE(in_step * 100, in_loop * 97) << in_step << " of the loop's " << in_loop << " samples are under train_step";
  const MlSection all = ml_report({});
  EXPECT_TRUE(all.has("conv2d", "forward") || all.has("convolution", "forward")) << all.text;
  EXPECT_TRUE(all.has("native_batch_norm", "forward")) << all.text;
  EXPECT_GT(all.share("optimizer"), 0.0) << all.text;
}

}  // namespace
}  // namespace hybridprof::integration
