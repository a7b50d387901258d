// The report's view for Python deep-learning jobs (PyTorch): where a
// training step's samples go (input pipeline, forward, backward, optimizer)
// and which ATen operators they ran, the questions TensorFlow's step-time
// view and PyTorch's profiler tables answer first. Built only from what the
// samples carry: native frames (the dispatcher's at::_ops::NAME::call
// entries, autograd's engine), Python frames (paradigm Python, named by
// qualified name, in their file). Pure functions of (definitions, sample
// counts), like profile.h, so the tests check numbers without parsing text.
#pragma once

#include <array>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "otf2/archive_reader.h"
#include "profile.h"

namespace hybridprof::report {

// Each sample is in exactly one phase; see phase_of in ml_view.cc for the rule.
enum class Phase { kInput, kForward, kBackward, kOptimizer, kOther };
inline constexpr size_t kPhaseCount = 5;
const char* phase_name(Phase);  // "input pipeline", "forward", ...

// Whether an operator ran under autograd's engine (backward) or not
// (forward: everything else, the optimizer's operators included).
enum class Pass { kForward, kBackward };
const char* pass_name(Pass);

struct OperatorRow {
  std::string name;  // the at::_ops struct name: "addmm", "sum_dim_IntList", "add__Tensor"
  Pass pass = Pass::kForward;
  uint64_t self = 0;       // samples whose innermost operator this is
  uint64_t inclusive = 0;  // samples with this operator on the path (once per sample)
};

// The input pipeline is said to bound the job when it takes at least this
// share of the samples in the four training phases (input, forward,
// backward, optimizer). Measured against those rather than all samples, so
// start-up, imports and idle OpenMP workers (all "other") do not hide it.
inline constexpr double kInputBoundShare = 0.5;

// With --step: where the step's wall time went, on the threads that run
// it. A thread is in the step from an event whose calling context has the
// step function (a sample, or a traced wait's enter) until an event that
// has not; the time between is the step's. Its traced waits are split by
// what they wait for: the input pipeline (a wait under a DataLoader frame:
// its queue, its workers' pipes), the device (CUDA synchronization and
// synchronous copies), communication (MPI, NCCL's NVTX ranges), autograd's
// engine (a wait under its execute: the backward pass runs on the
// engine's threads meanwhile, as on a GPU) or other. The step thread's own
// CPU time in the input pipeline (its samples under a DataLoader frame,
// a period each: receiving and unpickling batches) is the pipeline's too:
// a step measured around next(batches) counts both. The rest is computing
// (CPU, or runnable).
struct StepTime {
  uint64_t step_ns = 0;
  uint64_t input_ns = 0, device_ns = 0, copy_ns = 0, communication_ns = 0, other_wait_ns = 0;
  uint64_t input_cpu_ns = 0;  // the step's threads' CPU in the input pipeline (samples x period)
  uint64_t engine_ns = 0;     // waits for autograd's engine threads (the backward pass)
  uint32_t dataloader_workers = 0;  // distinct DataLoader worker numbers among the processes
  bool device = false, communication = false;  // the run has CUDA calls / MPI or NCCL regions at all
  uint64_t input_total_ns() const { return input_ns + input_cpu_ns; }
  uint64_t waiting_ns() const { return input_ns + device_ns + communication_ns + other_wait_ns; }
  uint64_t computing_ns() const {
    const uint64_t accounted = waiting_ns() + input_cpu_ns + engine_ns;
    return step_ns > accounted ? step_ns - accounted : 0;
  }
};

// A bound is said from this share of the step's wall time.
inline constexpr double kBoundShare = 0.2;

// Fed every sample and region event, each location's in time order.
class StepTimer {
 public:
  StepTimer(const otf2::Archive& archive, std::string step);
  ~StepTimer();
  void add(const otf2::SampleEvent&);
  void add(const otf2::RegionEvent&);
  StepTime result() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct MlView {
  bool torch = false;     // some sample shows PyTorch: an operator frame or a Python frame in torch/
  bool python = false;    // some sample has a Python frame
  std::string step;       // the --step function, "" for all samples
  uint64_t run_samples = 0;  // all samples of the archive
  uint64_t samples = 0;      // samples in the view: the step's, or all
  std::array<uint64_t, kPhaseCount> phases{};  // indexed by Phase; sums to `samples`
  uint64_t other_without_python = 0;           // of the "other" phase: samples without any Python frame
  std::array<uint64_t, 2> under_operator{};    // indexed by Pass: samples with an operator on the path
  std::vector<OperatorRow> operators;          // by self desc, inclusive desc, name, pass
  std::optional<StepTime> step_time;           // with --step, where the archive was read with a StepTimer

  uint64_t phase(Phase p) const { return phases[static_cast<size_t>(p)]; }
  uint64_t training_samples() const;  // input + forward + backward + optimizer
  bool input_bound() const;           // input >= kInputBoundShare of training_samples(), which is > 0
};

// The view over all samples, or with `step` set only over samples whose path
// has a Python frame of that function (see matches_step).
MlView ml_view(const otf2::Archive&, const SampleCounts&, const std::string& step = "");

// "addmm" for "at::_ops::addmm::call(at::Tensor const&, ...)" or
// "at::_ops::addmm::redispatch(...)", the dispatcher's entry of the
// operator; nullopt for any other name.
std::optional<std::string> operator_name(const std::string& region_name);

// A Python frame named `qualname` is the step function `step` when the
// qualified name is `step`, or its last dotted component is: "train_step"
// matches "train_step" and "Trainer.train_step"; "Trainer.train_step" only
// the latter.
bool matches_step(const std::string& qualname, const std::string& step);

}  // namespace hybridprof::report
