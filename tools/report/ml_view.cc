#include "ml_view.h"

#include "wait_summary.h"
#include "otf2/selection.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

namespace hybridprof::report {
namespace {

// What a frame tells about the phase its sample is in.
enum class Marker {
  kNone,
  kImport,     // the import system: the sample is start-up, whatever runs below
  kInput,      // the DataLoader and its datasets, samplers, collate, workers
  kBackward,   // autograd's engine, or the Python call that starts it
  kOptimizer,  // an optimizer's step or gradient zeroing
  kForward,    // a module call, a forward method, torch.nn.functional
};

struct FrameRole {
  bool python = false;
  bool torch = false;  // an operator, or a Python frame in torch/
  Marker marker = Marker::kNone;
  std::optional<std::string> op;  // the operator this frame is the dispatcher's entry of
};

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Whether `file` lies in `dir` ("torch/optim/") of whatever installation:
// site-packages, dist-packages or a source tree.
bool in_dir(std::string_view file, std::string_view dir) {
  return starts_with(file, dir) || file.find("/" + std::string(dir)) != std::string_view::npos;
}
bool is_file(std::string_view file, std::string_view path) {  // "torch/_tensor.py"
  return file == path || ends_with(file, "/" + std::string(path));
}

// "step" of "SGD.step" and of "step": Python before 3.11 names frames by
// function name only, so rules match the last component.
std::string_view last_component(std::string_view qualname) {
  const size_t dot = qualname.rfind('.');
  return dot == std::string_view::npos ? qualname : qualname.substr(dot + 1);
}

Marker python_marker(std::string_view name, std::string_view file) {
  // Module bodies run at import (torch/utils/data's included): never a phase.
  if (name == "<module>") return Marker::kNone;
  if (starts_with(file, "<frozen importlib")) return Marker::kImport;
  if (in_dir(file, "torch/utils/data/")) return Marker::kInput;
  const std::string_view function = last_component(name);
  if ((is_file(file, "torch/_tensor.py") && function == "backward") ||
      (is_file(file, "torch/autograd/__init__.py") && (function == "backward" || function == "grad")))
    return Marker::kBackward;
  // Module.zero_grad lives with the modules but is the optimizer's bookkeeping.
  if (in_dir(file, "torch/optim/") || function == "zero_grad") return Marker::kOptimizer;
  if ((is_file(file, "torch/nn/modules/module.py") && (function == "_call_impl" || function == "_wrapped_call_impl")) ||
      function == "forward" || is_file(file, "torch/nn/functional.py"))
    return Marker::kForward;
  return Marker::kNone;
}

// Autograd's engine runs the backward pass: on the thread that called
// backward() (its execute / thread_main / evaluate_function frames), or on
// its own device threads (thread_main), with no Python frame there.
bool is_backward_native(std::string_view name) {
  return starts_with(name, "torch::autograd::Engine::") || starts_with(name, "torch::autograd::engine") ||
         starts_with(name, "torch::autograd::python::PythonEngine::") || starts_with(name, "THPEngine_run_backward");
}

FrameRole role_of(const otf2::RegionInfo& region) {
  FrameRole role;
  if (region.paradigm == otf2::Paradigm::kPython) {
    role.python = true;
    role.torch = in_dir(region.file, "torch/");
    role.marker = python_marker(region.name, region.file);
  } else {
    role.op = operator_name(region.name);
    role.torch = role.op.has_value();
    if (is_backward_native(region.name)) role.marker = Marker::kBackward;
  }
  return role;
}

// What one sampled path holds, read root to leaf.
struct PathFacts {
  bool python = false, torch = false, in_step = false;
  bool import = false, input = false, backward = false;
  Marker model = Marker::kNone;  // the innermost forward or optimizer marker
  std::vector<const std::string*> operators;  // root first
};

// The phase rule, first match wins:
//  1. under the import system: other (start-up, even in torch/utils/data);
//  2. a DataLoader frame (torch/utils/data/): input pipeline, even when a
//     dataset's transforms call modules;
//  3. autograd's engine or the Python call into it: backward, even for a
//     forward recomputed there (activation checkpointing);
//  4. the innermost of a module call (Module._call_impl, forward,
//     torch.nn.functional) and an optimizer frame (torch/optim/,
//     zero_grad): forward or optimizer, so a model evaluated in an
//     optimizer's closure (LBFGS) is forward;
//  5. anything else: other. That includes operators outside all of these
//     (model construction's weight init, tensors made in the loop,
//     loss.item()): a bare operator says nothing of the phase. And threads
//     without Python frames (OpenMP workers running a kernel's parallel
//     part): nothing on their stacks links them to the operator.
Phase phase_of(const PathFacts& facts) {
  if (facts.import) return Phase::kOther;
  if (facts.input) return Phase::kInput;
  if (facts.backward) return Phase::kBackward;
  if (facts.model == Marker::kOptimizer) return Phase::kOptimizer;
  if (facts.model == Marker::kForward) return Phase::kForward;
  return Phase::kOther;
}

class Classifier {
 public:
  Classifier(const otf2::Archive& archive, const std::string& step) : archive_(archive), step_(step) {}

  PathFacts facts(uint32_t context) {
    PathFacts facts;
    for (uint32_t c : archive_.context_path(context)) {
      const uint32_t region = archive_.contexts.at(c).region;
      const FrameRole& role = role_of_region(region);
      facts.python |= role.python;
      facts.torch |= role.torch;
      if (role.python && !step_.empty() && !facts.in_step)
        facts.in_step = matches_step(archive_.regions.at(region).name, step_);
      switch (role.marker) {
        case Marker::kImport: facts.import = true; break;
        case Marker::kInput: facts.input = true; break;
        case Marker::kBackward: facts.backward = true; break;
        case Marker::kOptimizer:
        case Marker::kForward: facts.model = role.marker; break;
        case Marker::kNone: break;
      }
      if (role.op) facts.operators.push_back(&*role.op);
    }
    return facts;
  }

 private:
  const FrameRole& role_of_region(uint32_t region) {
    auto [it, added] = roles_.try_emplace(region);
    if (added) {
      auto info = archive_.regions.find(region);
      if (info != archive_.regions.end()) it->second = role_of(info->second);
    }
    return it->second;
  }

  const otf2::Archive& archive_;
  const std::string& step_;
  std::map<uint32_t, FrameRole> roles_;
};

// What a traced region waits for, in a step: "" when it is no wait.
enum class StepWait { kNone, kInput, kDevice, kCopy, kCommunication, kOther };

}  // namespace

struct StepTimer::State {
  State(const otf2::Archive& a, std::string s) : archive(a), step(std::move(s)), classifier(a, step) {}
  const otf2::Archive& archive;
  std::string step;
  Classifier classifier;
  std::map<uint32_t, PathFacts> facts;  // by context, as met
  std::map<uint32_t, StepWait> waits;   // by region, as met
  struct Open {
    uint32_t region;
    uint64_t enter_ns;
    StepWait wait;  // kNone: no wait, or inside one already
    bool in_step;
    bool input;     // under a DataLoader frame
    bool backward;  // under autograd's engine
  };
  struct Thread {
    bool running = false;  // in a stretch of the step
    uint64_t from = 0, to = 0;
    std::vector<Open> open;
  };
  std::map<uint64_t, Thread> threads;
  StepTime time;
  // The time one sample stands for, in the archive's ticks (0: unknown).
  uint64_t period_ticks = uint64_t(otf2::sample_period_seconds(archive) * double(archive.clock.resolution));

  const PathFacts& facts_of(uint32_t context) {
    auto [it, added] = facts.try_emplace(context);
    if (added && archive.contexts.count(context)) it->second = classifier.facts(context);
    return it->second;
  }
  StepWait wait_of(uint32_t region) {
    auto [it, added] = waits.try_emplace(region, StepWait::kNone);
    if (!added) return it->second;
    auto r = archive.regions.find(region);
    if (r == archive.regions.end()) return it->second;
    const std::string kind = WaitStats::kind_of(r->second);
    const std::string& name = r->second.name;
    if (r->second.paradigm == otf2::Paradigm::kCuda) time.device = true;
    if (kind == "MPI" || (r->second.paradigm == otf2::Paradigm::kUser && starts_with(name, "nccl"))) {
      time.communication = true;
      it->second = StepWait::kCommunication;
    } else if (kind == "CUDA sync") {
      it->second = starts_with(name, "cudaMemcpy") || starts_with(name, "cuMemcpy") ? StepWait::kCopy : StepWait::kDevice;
    } else if (!kind.empty()) {
      it->second = StepWait::kOther;
    }
    return it->second;
  }
  // An event of the step at [begin, end]; or outside it at `begin`.
  void touch(Thread& t, bool in_step, uint64_t begin, uint64_t end) {
    if (in_step) {
      if (!t.running) t.running = true, t.from = begin;
      t.to = std::max(t.to, end);
      return;
    }
    // Outside the step, unless a wait of the step is still open.
    for (const Open& o : t.open)
      if (o.in_step) return;
    close(t);
  }
  void close(Thread& t) {
    if (t.running && t.to > t.from) time.step_ns += t.to - t.from;
    t.running = false;
  }
};

StepTimer::StepTimer(const otf2::Archive& archive, std::string step)
    : state_(std::make_unique<State>(archive, std::move(step))) {}
StepTimer::~StepTimer() = default;

void StepTimer::add(const otf2::SampleEvent& s) {
  State::Thread& t = state_->threads[s.location];
  const PathFacts& facts = state_->facts_of(s.context);
  state_->touch(t, facts.in_step, s.timestamp, s.timestamp);
  if (facts.in_step && facts.input) state_->time.input_cpu_ns += state_->period_ticks;
}

void StepTimer::add(const otf2::RegionEvent& e) {
  State& st = *state_;
  auto thread = st.archive.threads.find(e.location);
  if (thread != st.archive.threads.end() && thread->second.device != otf2::kUndefined) return;  // a device's stream
  State::Thread& t = st.threads[e.location];
  const StepWait wait = st.wait_of(e.region);
  if (e.enter) {
    const bool inside_wait =
        std::any_of(t.open.begin(), t.open.end(), [](const State::Open& o) { return o.wait != StepWait::kNone; });
    const PathFacts& facts = st.facts_of(e.context);
    t.open.push_back(
        {e.region, e.timestamp, inside_wait ? StepWait::kNone : wait, facts.in_step, facts.input, facts.backward});
    if (wait != StepWait::kNone) st.touch(t, facts.in_step, e.timestamp, e.timestamp);
    return;
  }
  if (t.open.empty() || t.open.back().region != e.region) return;  // unmatched: ignored
  const State::Open left = t.open.back();
  t.open.pop_back();
  if (left.wait == StepWait::kNone || !left.in_step) return;
  st.touch(t, true, left.enter_ns, e.timestamp);
  const uint64_t ns = e.timestamp > left.enter_ns ? e.timestamp - left.enter_ns : 0;
  StepTime& time = st.time;
  if (left.input) {
    time.input_ns += ns;
    return;
  }
  switch (left.wait) {
    case StepWait::kDevice: time.device_ns += ns; break;
    case StepWait::kCopy: time.device_ns += ns, time.copy_ns += ns; break;
    case StepWait::kCommunication: time.communication_ns += ns; break;
    default: (left.backward ? time.engine_ns : time.other_wait_ns) += ns; break;
  }
}

StepTime StepTimer::result() const {
  StepTime time = state_->time;
  for (const auto& [location, t] : state_->threads)
    if (t.running && t.to > t.from) time.step_ns += t.to - t.from;
  // The DataLoader's workers: processes named for the role, by number.
  std::set<std::string> workers;
  for (const auto& [ref, process] : state_->archive.processes) {
    const size_t at = process.name.find("(DataLoader worker ");
    if (at != std::string::npos) workers.insert(process.name.substr(at));
  }
  time.dataloader_workers = static_cast<uint32_t>(workers.size());
  return time;
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kInput: return "input pipeline";
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kOptimizer: return "optimizer";
    case Phase::kOther: return "other";
  }
  return "?";
}

const char* pass_name(Pass pass) { return pass == Pass::kBackward ? "backward" : "forward"; }

uint64_t MlView::training_samples() const {
  return phase(Phase::kInput) + phase(Phase::kForward) + phase(Phase::kBackward) + phase(Phase::kOptimizer);
}

bool MlView::input_bound() const {
  const uint64_t training = training_samples();
  return training > 0 && static_cast<double>(phase(Phase::kInput)) >= kInputBoundShare * static_cast<double>(training);
}

std::optional<std::string> operator_name(const std::string& region_name) {
  constexpr std::string_view kPrefix = "at::_ops::";
  const std::string_view name = region_name;
  if (!starts_with(name, kPrefix)) return std::nullopt;
  const size_t end = name.find("::", kPrefix.size());
  if (end == std::string_view::npos || end == kPrefix.size()) return std::nullopt;
  // The entry points only: the struct also has schema accessors and such.
  std::string_view entry = name.substr(end + 2);
  entry = entry.substr(0, entry.find('('));
  if (entry != "call" && entry != "redispatch") return std::nullopt;
  return std::string(name.substr(kPrefix.size(), end - kPrefix.size()));
}

bool matches_step(const std::string& qualname, const std::string& step) {
  return !step.empty() && (qualname == step || last_component(qualname) == step);
}

MlView ml_view(const otf2::Archive& archive, const SampleCounts& counts, const std::string& step) {
  MlView view;
  view.step = step;
  view.run_samples = counts.total;
  Classifier classifier(archive, step);
  std::map<std::pair<std::string, Pass>, OperatorRow> operators;
  for (const auto& [context, samples] : counts.by_context) {
    const PathFacts facts = classifier.facts(context);
    // Whether the job is PyTorch is a fact of the run, not of the step.
    view.torch |= facts.torch;
    view.python |= facts.python;
    if (!step.empty() && !facts.in_step) continue;
    view.samples += samples;
    const Phase phase = phase_of(facts);
    view.phases[static_cast<size_t>(phase)] += samples;
    if (phase == Phase::kOther && !facts.python) view.other_without_python += samples;
    if (facts.operators.empty()) continue;
    const Pass pass = facts.backward ? Pass::kBackward : Pass::kForward;
    view.under_operator[static_cast<size_t>(pass)] += samples;
    std::set<std::string_view> seen;
    for (const std::string* op : facts.operators) {
      if (!seen.insert(*op).second) continue;  // call and redispatch, or recursion: once per sample
      OperatorRow& row = operators[{*op, pass}];
      row.inclusive += samples;
    }
    operators[{*facts.operators.back(), pass}].self += samples;
  }
  if (counts.step_timer) view.step_time = counts.step_timer->result();
  for (auto& [key, row] : operators) {
    row.name = key.first;
    row.pass = key.second;
    view.operators.push_back(std::move(row));
  }
  std::sort(view.operators.begin(), view.operators.end(), [](const OperatorRow& a, const OperatorRow& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.inclusive != b.inclusive) return a.inclusive > b.inclusive;
    if (a.name != b.name) return a.name < b.name;
    return a.pass < b.pass;
  });
  return view;
}

}  // namespace hybridprof::report
