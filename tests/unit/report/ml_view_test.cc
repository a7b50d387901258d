// The Python ML view on synthetic calling-context trees shaped like what
// hybridprof records for a PyTorch training loop (names as the archive of
// tests/fixtures/python/python_torch_train.py has them).
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "ml_text.h"
#include "ml_view.h"
#include "options.h"
#include "otf2/archive_reader.h"
#include "test_support.h"
#include "text_report.h"

namespace hybridprof::report {
namespace {

using otf2::ArchiveWriter;
using otf2::kUndefined;
using otf2::Paradigm;
using otf2::testing::TempDir;

// An archive built from paths. A frame is a native function name, or
// "py:QUALNAME@FILE" for a Python frame.
class PathArchive {
 public:
  explicit PathArchive(const std::string& dir) : writer_({.directory = dir}) {
    const uint32_t process = writer_.define_process("python3", writer_.define_system_tree_node("h", "node", kUndefined));
    main_ = writer_.define_thread(process, "main");
    worker_ = writer_.define_thread(process, "worker");
  }
  void add(const std::vector<std::string>& frames, int samples, bool on_worker = false) {
    uint32_t context = kUndefined;
    for (const std::string& frame : frames) context = context_of(region_of(frame), context);
    for (int i = 0; i < samples; ++i) writer_.write_sample(on_worker ? worker_ : main_, time_ += 1'000'000, context, 1, kUndefined);
  }
  // A traced wait of `ns` on the main thread: an OS-runtime call `name`
  // under `frames` (its calling context's leaf).
  void wait(const std::vector<std::string>& frames, const std::string& name, uint64_t ns) {
    uint32_t context = kUndefined;
    for (const std::string& frame : frames) context = context_of(region_of(frame), context);
    auto [it, added] = regions_.try_emplace("wait:" + name);
    if (added) it->second = writer_.define_region(name, "", 0, Paradigm::kOsRuntime);
    context = context_of(it->second, context);
    writer_.write_context_enter(main_, time_ += 1'000, context, 1);
    writer_.write_context_leave(main_, time_ += ns, context);
  }
  void set_property(const std::string& name, const std::string& value) { writer_.set_property(name, value); }
  void close() { writer_.close({}); }

 private:
  uint32_t context_of(uint32_t region, uint32_t parent) {
    auto [it, added] = contexts_.try_emplace({region, parent});
    if (added) it->second = writer_.define_calling_context(region, kUndefined, parent);
    return it->second;
  }
  uint32_t region_of(const std::string& frame) {
    auto [it, added] = regions_.try_emplace(frame);
    if (!added) return it->second;
    if (frame.rfind("py:", 0) == 0) {
      const size_t at = frame.find('@');
      it->second = writer_.define_region(frame.substr(3, at - 3), frame.substr(at + 1), 1, Paradigm::kPython);
    } else {
      it->second = writer_.define_region(frame, "", 0, Paradigm::kSampling);
    }
    return it->second;
  }

  ArchiveWriter writer_;
  uint64_t main_ = 0, worker_ = 0, time_ = 1'000'000;
  std::map<std::string, uint32_t> regions_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> contexts_;
};

using Path = std::vector<std::string>;
Path operator+(Path a, const Path& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::string kTorch = "/usr/lib/python3/dist-packages/torch/";
const Path kMain = {"Py_RunMain", "py:<module>@/src/train.py", "py:main@/src/train.py"};
const Path kStep = kMain + Path{"py:train_step@/src/train.py"};
const std::string kCall = "py:Module._call_impl@" + kTorch + "nn/modules/module.py";
const Path kBackward = {"py:Tensor.backward@" + kTorch + "_tensor.py",
                        "py:backward@" + kTorch + "autograd/__init__.py",
                        "THPEngine_run_backward(_object*, _object*, _object*)",
                        "torch::autograd::python::PythonEngine::execute(std::vector<torch::autograd::Edge> const&)",
                        "torch::autograd::Engine::execute(std::vector<torch::autograd::Edge> const&)",
                        "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
                        "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&)",
                        "[libtorch_cpu.so.1.13]"};
const Path kDataLoader = {"py:_BaseDataLoaderIter.__next__@" + kTorch + "utils/data/dataloader.py",
                          "py:_SingleProcessDataLoaderIter._next_data@" + kTorch + "utils/data/dataloader.py",
                          "py:_MapDatasetFetcher.fetch@" + kTorch + "utils/data/_utils/fetch.py"};
const Path kCollateStack = {"py:default_collate@" + kTorch + "utils/data/_utils/collate.py",
                            "at::_ops::stack::call(c10::ArrayRef<at::Tensor>, long)", "[kernel]"};
const Path kOpenMpWorker = {"clone3", "start_thread", "[libgomp.so.1]"};

// A training loop (130 samples):
//   forward:  Linear.forward -> linear -> addmm (call, redispatch) -> sgemm_     30
//             Linear.forward -> linear -> addmm -> copy_ -> [kernel]             10
//             Net.forward -> relu -> clamp_min -> [jit]                          10
//   backward: Tensor.backward -> engine -> mm -> sgemm_                          25
//             engine, no operator                                                 5
//   optimizer: SGD.step -> add__Tensor                                            8
//             Optimizer.zero_grad                                                 2
//   other in train_step: train_step itself                                        5
//   outside train_step: DataLoader -> collate -> stack                           12
//             importing torch.utils.data (a decorator in torch/utils/data)        3
//             an OpenMP worker thread (no Python frame)                          20
void write_training_archive(const std::string& dir) {
  PathArchive a(dir);
  const Path linear = kStep + Path{kCall, "py:Net.forward@/src/train.py", kCall,
                                   "py:Linear.forward@" + kTorch + "nn/modules/linear.py",
                                   "at::_ops::linear::call(at::Tensor const&, at::Tensor const&)",
                                   "at::native::linear(at::Tensor const&, at::Tensor const&)",
                                   "at::_ops::addmm::call(at::Tensor const&, at::Tensor const&)"};
  a.add(linear + Path{"[libtorch_cpu.so.1.13]", "at::_ops::addmm::redispatch(c10::DispatchKeySet, at::Tensor const&)",
                      "sgemm_"},
        30);
  a.add(linear + Path{"at::_ops::copy_::call(at::Tensor&, at::Tensor const&, bool)", "[kernel]"}, 10);
  a.add(kStep + Path{kCall, "py:Net.forward@/src/train.py", "at::_ops::relu::call(at::Tensor const&)",
                     "at::_ops::clamp_min::call(at::Tensor const&, c10::Scalar const&)", "[jit]"},
        10);
  a.add(kStep + kBackward + Path{"at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", "sgemm_"}, 25);
  a.add(kStep + kBackward + Path{"torch::autograd::InputBuffer::add(unsigned long, at::Tensor&&)"}, 5);
  a.add(kStep + Path{"py:Optimizer._hook_for_profile.<locals>.profile_hook_step.<locals>.wrapper@" + kTorch +
                         "optim/optimizer.py",
                     "py:SGD.step@" + kTorch + "optim/sgd.py", "py:_single_tensor_sgd@" + kTorch + "optim/sgd.py",
                     "at::_ops::add__Tensor::call(at::Tensor&, at::Tensor const&, c10::Scalar const&)"},
        8);
  a.add(kStep + Path{"py:Optimizer.zero_grad@" + kTorch + "optim/optimizer.py"}, 2);
  a.add(kStep, 5);
  a.add(kMain + kDataLoader + kCollateStack, 12);
  a.add(kMain + Path{"py:_find_and_load@<frozen importlib._bootstrap>", "py:<module>@" + kTorch + "utils/data/__init__.py",
                     "py:functional_datapipe.__call__@" + kTorch + "utils/data/datapipes/_decorator.py"},
        3);
  a.add(kOpenMpWorker, 20, /*on_worker=*/true);
  a.close();
}

struct Loaded {
  explicit Loaded(const std::string& dir) : reader(dir), counts(count_samples(reader)) {}
  otf2::ArchiveReader reader;
  SampleCounts counts;
  MlView view(const std::string& step = "") const { return ml_view(reader.archive(), counts, step); }
};

const OperatorRow* row_of(const MlView& view, const std::string& name, Pass pass) {
  for (const OperatorRow& row : view.operators)
    if (row.name == name && row.pass == pass) return &row;
  return nullptr;
}

std::string report_text(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  EXPECT_EQ(run_report(args, out, err), 0) << err.str();
  return out.str();
}

TEST(MlOperators, InnermostOperatorGetsTheSelfSamples) {
  TempDir dir;
  write_training_archive(dir.path());
  const MlView view = Loaded(dir.path()).view();
  ASSERT_TRUE(view.torch);
  ASSERT_EQ(view.samples, 130u);
  // Sorted by self: addmm 30, mm 25, stack 12, copy_ 10, clamp_min 10, add__Tensor 8, then linear and relu.
  ASSERT_EQ(view.operators.size(), 8u);
  EXPECT_EQ(view.operators[0].name, "addmm");
  EXPECT_EQ(view.operators[0].pass, Pass::kForward);
  EXPECT_EQ(view.operators[1].name, "mm");
  EXPECT_EQ(view.operators[1].pass, Pass::kBackward);
  const auto expect = [&](const std::string& name, Pass pass, uint64_t self, uint64_t inclusive) {
    const OperatorRow* row = row_of(view, name, pass);
    ASSERT_NE(row, nullptr) << name;
    EXPECT_EQ(row->self, self) << name;
    EXPECT_EQ(row->inclusive, inclusive) << name;
  };
  // addmm: its own 30 (call and redispatch on one path count once) plus the
  // 10 where copy_ runs inside it; linear only dispatches to addmm.
  expect("addmm", Pass::kForward, 30, 40);
  expect("copy_", Pass::kForward, 10, 10);
  expect("linear", Pass::kForward, 0, 40);
  expect("relu", Pass::kForward, 0, 10);
  expect("clamp_min", Pass::kForward, 10, 10);  // relu is clamp_min inside: the [jit] kernel is clamp_min's
  expect("mm", Pass::kBackward, 25, 25);
  expect("add__Tensor", Pass::kForward, 8, 8);  // not under autograd's engine: forward pass
  expect("stack", Pass::kForward, 12, 12);
  EXPECT_EQ(row_of(view, "mm", Pass::kForward), nullptr);
  EXPECT_EQ(view.under_operator[size_t(Pass::kForward)], 70u);
  EXPECT_EQ(view.under_operator[size_t(Pass::kBackward)], 25u);
}

TEST(MlOperators, NamesAreTheDispatcherEntries) {
  EXPECT_EQ(operator_name("at::_ops::addmm::call(at::Tensor const&, at::Tensor const&)"), "addmm");
  EXPECT_EQ(operator_name("at::_ops::native_batch_norm::redispatch(c10::DispatchKeySet, at::Tensor const&)"),
            "native_batch_norm");
  EXPECT_EQ(operator_name("at::_ops::sum_dim_IntList::call"), "sum_dim_IntList");  // no argument list
  EXPECT_EQ(operator_name("at::_ops::addmm::schema()"), std::nullopt);
  EXPECT_EQ(operator_name("at::_ops::addmm"), std::nullopt);
  EXPECT_EQ(operator_name("at::_ops::::call()"), std::nullopt);
  EXPECT_EQ(operator_name("at::native::addmm(at::Tensor const&)"), std::nullopt);
  EXPECT_EQ(operator_name("[libtorch_cpu.so.1.13]"), std::nullopt);
}

TEST(MlPhases, EachSampleInExactlyOnePhase) {
  TempDir dir;
  write_training_archive(dir.path());
  const MlView view = Loaded(dir.path()).view();
  EXPECT_EQ(view.phase(Phase::kInput), 12u);
  EXPECT_EQ(view.phase(Phase::kForward), 50u);
  EXPECT_EQ(view.phase(Phase::kBackward), 30u);
  EXPECT_EQ(view.phase(Phase::kOptimizer), 10u) << "SGD.step and zero_grad";
  EXPECT_EQ(view.phase(Phase::kOther), 28u) << "train_step's own 5, the import's 3, the OpenMP worker's 20";
  EXPECT_EQ(view.other_without_python, 20u);
  uint64_t sum = 0;
  for (uint64_t n : view.phases) sum += n;
  EXPECT_EQ(sum, view.samples);
  EXPECT_EQ(view.training_samples(), 102u);
  EXPECT_FALSE(view.input_bound());
}

// One path per rule of the phase decision, the later rule losing.
TEST(MlPhases, RulesInOrder) {
  TempDir dir;
  PathArchive a(dir.path());
  const std::string lbfgs = "py:LBFGS.step@" + kTorch + "optim/lbfgs.py";
  const std::string addmm = "at::_ops::addmm::call(at::Tensor const&)";
  a.add(kStep + Path{lbfgs, "py:train_step.<locals>.closure@/src/train.py", kCall, addmm}, 1);  // forward
  a.add(kStep + Path{lbfgs, "py:train_step.<locals>.closure@/src/train.py"} + kBackward, 2);   // backward
  a.add(kStep + Path{lbfgs, "at::_ops::mul_::call()"}, 4);                                      // optimizer
  a.add(kStep + Path{kCall, "py:Module.zero_grad@" + kTorch + "nn/modules/module.py"}, 8);      // optimizer
  a.add(kMain + kDataLoader + Path{"py:Dataset.__getitem__@/src/data.py", kCall, addmm}, 16);    // input
  a.add(kStep + Path{"at::_ops::randn::call()"}, 32);                    // an operator outside modules: other
  a.add(kStep + Path{"py:checkpoint@/src/train.py"} + kBackward + Path{kCall, addmm}, 64);  // recomputed: backward
  a.add(kMain + Path{"py:_find_and_load@<frozen importlib._bootstrap>", kCall, addmm}, 128);  // import: other
  a.close();
  const MlView view = Loaded(dir.path()).view();
  EXPECT_EQ(view.phase(Phase::kForward), 1u);
  EXPECT_EQ(view.phase(Phase::kBackward), 2u + 64u);
  EXPECT_EQ(view.phase(Phase::kOptimizer), 4u + 8u);
  EXPECT_EQ(view.phase(Phase::kInput), 16u);
  EXPECT_EQ(view.phase(Phase::kOther), 32u + 128u);
}

// Before 3.11 Python frames carry the function name only: the rules go by
// file and last component, so the phases are the same.
TEST(MlPhases, FunctionNamesOfOlderPythons) {
  TempDir dir;
  PathArchive a(dir.path());
  const Path step = {"Py_RunMain", "py:<module>@/src/train.py", "py:train_step@/src/train.py"};
  a.add(step + Path{"py:_call_impl@" + kTorch + "nn/modules/module.py", "py:forward@/src/train.py"}, 3);
  a.add(step + Path{"py:backward@" + kTorch + "_tensor.py", "py:backward@" + kTorch + "autograd/__init__.py"}, 5);
  a.add(step + Path{"py:step@" + kTorch + "optim/sgd.py"}, 7);
  a.add(step + Path{"py:__next__@" + kTorch + "utils/data/dataloader.py"}, 11);
  a.close();
  const MlView view = Loaded(dir.path()).view();
  EXPECT_EQ(view.phase(Phase::kForward), 3u);
  EXPECT_EQ(view.phase(Phase::kBackward), 5u);
  EXPECT_EQ(view.phase(Phase::kOptimizer), 7u);
  EXPECT_EQ(view.phase(Phase::kInput), 11u);
  EXPECT_EQ(view.phase(Phase::kOther), 0u);
}

// input samples and forward samples, plus idle OpenMP workers.
void write_loader_archive(const std::string& dir, int input, int forward, int idle_workers) {
  PathArchive a(dir);
  a.add(kMain + kDataLoader + kCollateStack, input);
  a.add(kStep + Path{kCall, "at::_ops::convolution::call(at::Tensor const&)", "[jit]"}, forward);
  a.add(kOpenMpWorker, idle_workers, /*on_worker=*/true);
  a.close();
}

TEST(MlHint, InputBoundFromHalfOfTheTrainingSamples) {
  struct Case {
    int input, forward, idle;
    bool bound;
  };
  for (const Case& c : {Case{60, 40, 0, true}, Case{50, 50, 0, true}, Case{49, 51, 0, false},
                        Case{60, 40, 400, true} /* idle workers are other, not training */, Case{0, 10, 0, false}}) {
    TempDir dir;
    write_loader_archive(dir.path(), c.input, c.forward, c.idle);
    const MlView view = Loaded(dir.path()).view();
    EXPECT_EQ(view.input_bound(), c.bound) << c.input << " input, " << c.forward << " forward, " << c.idle << " idle";
    const std::string text = report_text({dir.path()});
    EXPECT_EQ(text.find("input-bound:") != std::string::npos, c.bound) << text;
    if (c.input == 60) {
      EXPECT_NE(text.find("  input-bound: the input pipeline takes 60.0% of the training phases' samples; more "
                          "DataLoader workers (num_workers) or prefetching may help\n"),
                std::string::npos)
          << text;
    }
  }
}

TEST(MlStep, RestrictsTheViewToTheStepFunction) {
  TempDir dir;
  write_training_archive(dir.path());
  Loaded loaded(dir.path());
  const MlView view = loaded.view("train_step");
  EXPECT_EQ(view.run_samples, 130u);
  EXPECT_EQ(view.samples, 95u);
  EXPECT_EQ(view.phase(Phase::kInput), 0u) << "the DataLoader runs outside train_step";
  EXPECT_EQ(view.phase(Phase::kForward), 50u);
  EXPECT_EQ(view.phase(Phase::kBackward), 30u);
  EXPECT_EQ(view.phase(Phase::kOptimizer), 10u);
  EXPECT_EQ(view.phase(Phase::kOther), 5u);
  EXPECT_EQ(view.other_without_python, 0u);
  EXPECT_EQ(row_of(view, "stack", Pass::kForward), nullptr);
  EXPECT_EQ(row_of(view, "addmm", Pass::kForward)->self, 30u);
  // A qualname's last component matches; a whole qualname matches only itself.
  EXPECT_EQ(loaded.view("step").samples, 8u) << "SGD.step";
  EXPECT_EQ(loaded.view("SGD.step").samples, 8u);
  EXPECT_EQ(loaded.view("Optimizer.step").samples, 0u);
  EXPECT_EQ(loaded.view("forward").samples, 50u) << "Net.forward and Linear.forward";
  EXPECT_EQ(loaded.view("Linear.forward").samples, 40u);
  EXPECT_EQ(loaded.view("sgemm_").samples, 0u) << "native frames are no step";
  EXPECT_TRUE(matches_step("a.<locals>.train_step", "train_step"));
  EXPECT_FALSE(matches_step("train_step_fast", "train_step"));
  EXPECT_FALSE(matches_step("train_step", ""));

  const std::string text = report_text({"--step", "train_step", dir.path()});
  EXPECT_NE(text.find("\nPython ML view (PyTorch): step train_step, 95 of 130 samples (73.1% of the run)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  backward             30  31.6%\n"), std::string::npos) << text;
  const std::string none = report_text({"--step=nowhere", dir.path()});
  EXPECT_NE(none.find("  no sample has the Python function nowhere on its path\n"), std::string::npos) << none;
}

// The step's time in the input pipeline is its waits there and the step
// thread's own CPU there (samples under a DataLoader frame, a period
// each); a wait under autograd's engine is the backward pass running on
// the engine's threads, not an "other" wait.
TEST(MlStep, TheInputPipelinesCpuAndAutogradsEngineAreTheirOwnParts) {
  TempDir dir;
  {
    PathArchive a(dir.path());
    a.set_property("HYBRIDPROF::PERIOD", "1000 Hz");
    const Path next = kStep + kDataLoader;
    const Path engine = kStep + kBackward;
    a.add(kStep + Path{kCall, "py:Net.forward@/src/train.py"}, 10);  // 10 ms computing
    a.add(next + Path{"py:_ForkingPickler.loads@/usr/lib/python3.12/multiprocessing/reduction.py"}, 5);  // 5 ms fetching
    a.wait(next, "poll", 4'000'000);                                  // 4 ms waiting for a batch
    a.wait(engine, "pthread_cond_wait", 6'000'000);                   // 6 ms of backward elsewhere
    a.add(kStep, 1);
    a.close();
  }
  const std::string text = report_text({"--step", "train_step", dir.path()});
  EXPECT_NE(text.find("  computing (CPU, or runnable)         10.002 ms  40.0%\n"
                      "  backward on autograd's threads        6.000 ms  24.0%\n"
                      "  input pipeline: waiting for batches   4.000 ms  16.0%\n"
                      "  input pipeline: fetching them (CPU)   5.000 ms  20.0%\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  other waits                           0.000 us   0.0%\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  input-bound: 36.0% of step time goes to the input pipeline: 16.0% waiting for batches, "
                      "20.0% fetching them on the step's thread\n"),
            std::string::npos)
      << text;
}

TEST(MlText, SectionFollowsTheExistingOnes) {
  TempDir dir;
  write_training_archive(dir.path());
  const std::string text = report_text({dir.path()});
  const size_t paths = text.find("Hottest call paths"), ml = text.find("Python ML view (PyTorch): all 130 samples");
  ASSERT_NE(ml, std::string::npos) << text;
  EXPECT_LT(paths, ml);
  EXPECT_LT(ml, text.find("Threads (by samples)"));
  EXPECT_NE(text.find("  Phase           Samples      %\n"
                      "  input pipeline       12   9.2%\n"
                      "  forward              50  38.5%\n"
                      "  backward             30  23.1%\n"
                      "  optimizer            10   7.7%\n"
                      "  other                28  21.5%\n"
                      "  of other: 20 samples (15.4%) without any Python frame (native threads such as OpenMP "
                      "workers, or stacks not unwound up to Python)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("PyTorch operators (8 of 8, by self samples; under an operator: forward 53.8%, backward 19.2% "
                      "of samples)\n"
                      "  Self%  Self  Incl%  Incl  Pass      Operator\n"
                      "  23.1%    30  30.8%    40  forward   addmm\n"
                      "  19.2%    25  19.2%    25  backward  mm\n"),
            std::string::npos)
      << text;
  // --top limits the operators as it does the functions.
  EXPECT_NE(report_text({"--top", "2", dir.path()}).find("PyTorch operators (2 of 8"), std::string::npos);
}

// Python without torch, and native code: no view unless asked for.
TEST(MlText, NoViewForJobsWithoutPyTorch) {
  TempDir python, native;
  {
    PathArchive a(python.path());
    a.add(kStep + Path{"py:work@/src/train.py", "hash"}, 10);
    a.close();
  }
  {
    ArchiveWriter w({.directory = native.path()});
    const uint64_t t = w.define_thread(w.define_process("app", w.define_system_tree_node("h", "node", kUndefined)), "main");
    const uint32_t main = w.define_calling_context(w.define_region("main", "main.cc", 3, Paradigm::kSampling), kUndefined,
                                                   kUndefined);
    w.write_sample(t, 2'000'000, main, 1, kUndefined);
    w.close({});
  }
  const MlView python_view = Loaded(python.path()).view(), native_view = Loaded(native.path()).view();
  EXPECT_FALSE(python_view.torch);
  EXPECT_TRUE(python_view.python);
  EXPECT_FALSE(show_ml_view(python_view, false));
  EXPECT_FALSE(native_view.torch);
  EXPECT_FALSE(native_view.python);
  EXPECT_FALSE(show_ml_view(native_view, false));
  EXPECT_TRUE(show_ml_view(native_view, true));
  for (const std::string& dir : {python.path(), native.path()})
    EXPECT_EQ(report_text({dir}).find("ML view"), std::string::npos);
  // Asked for: the Python job gets its phases (all other), the native one a line saying why not.
  const std::string asked = report_text({"--ml", python.path()});
  EXPECT_NE(asked.find("\nPython ML view: all 10 samples\n"), std::string::npos) << asked;
  EXPECT_NE(asked.find("  other                10  100.0%\n"), std::string::npos) << asked;
  EXPECT_NE(asked.find("no PyTorch operator frames"), std::string::npos) << asked;
  const std::string native_text = report_text({"--ml", native.path()});
  EXPECT_NE(native_text.find("  no Python frames in this archive: the view is for Python programs\n"), std::string::npos)
      << native_text;
}

TEST(MlOptions, MlAndStep) {
  EXPECT_FALSE(parse_options({"dir"}).ml);
  EXPECT_TRUE(parse_options({"--ml", "dir"}).ml);
  const Options step = parse_options({"--step", "train_step", "dir"});
  EXPECT_EQ(step.step, "train_step");
  EXPECT_TRUE(step.ml) << "--step implies --ml";
  EXPECT_EQ(parse_options({"--step=Trainer.step", "dir"}).step, "Trainer.step");
  EXPECT_THROW(parse_options({"dir", "--step"}), std::invalid_argument);
  EXPECT_THROW(parse_options({"--step=", "dir"}), std::invalid_argument);
}

}  // namespace
}  // namespace hybridprof::report
