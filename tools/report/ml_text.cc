#include "ml_text.h"

#include <algorithm>
#include <string>

#include "table.h"

namespace hybridprof::report {
namespace {

using Align = Table::Align;

std::string title(const MlView& view) {
  std::string text = view.torch ? "Python ML view (PyTorch): " : "Python ML view: ";
  if (view.step.empty()) return text + "all " + std::to_string(view.samples) + " samples";
  return text + "step " + view.step + ", " + std::to_string(view.samples) + " of " + std::to_string(view.run_samples) +
         " samples (" + percent(view.samples, view.run_samples) + " of the run)";
}

void print_phases(std::ostream& out, const MlView& view) {
  Table table({{"Phase", Align::kLeft}, {"Samples", Align::kRight}, {"%", Align::kRight}});
  for (size_t p = 0; p < kPhaseCount; ++p) {
    table.add_row({phase_name(static_cast<Phase>(p)), std::to_string(view.phases[p]), percent(view.phases[p], view.samples)});
  }
  table.print(out);
  if (view.other_without_python > 0) {
    out << "  of other: " << view.other_without_python << " samples (" << percent(view.other_without_python, view.samples)
        << ") without any Python frame (native threads such as OpenMP workers, or stacks not unwound "
           "up to Python)\n";
  }
  // With --step the verdict comes from the step's wall time (print_step_time), not from samples.
  if (view.input_bound() && !view.step_time) {
    out << "  input-bound: the input pipeline takes " << percent(view.phase(Phase::kInput), view.training_samples())
        << " of the training phases' samples; more DataLoader workers (num_workers) or prefetching may help\n";
  }
}

// One verdict: "input-bound: 41.0% of step time waits for the input
// pipeline" from kBoundShare of the step's wall time, "not ..." below it.
void print_bound(std::ostream& out, const char* bound, uint64_t ns, uint64_t step_ns, const std::string& what) {
  const bool is = static_cast<double>(ns) >= kBoundShare * static_cast<double>(step_ns);
  out << "  " << (is ? "" : "not ") << bound << ": " << percent(ns, step_ns) << " of step time " << what << "\n";
}

bool over(uint64_t ns, uint64_t step_ns, double share) {
  return static_cast<double>(ns) >= share * static_cast<double>(step_ns);
}

// The step's wall time, the verdicts, and the next steps the measured
// shares point to, each with the figure it rests on.
void print_step_time(std::ostream& out, const MlView& view) {
  if (!view.step_time) return;
  const StepTime& t = *view.step_time;
  out << "\nStep time (wall, on the threads that run " << view.step << "): " << time_text(t.step_ns) << "\n";
  if (t.step_ns == 0) {
    out << "  no stretch of the step was seen (no sample or traced wait under " << view.step << ")\n";
    return;
  }
  Table table({{"Part", Align::kLeft}, {"Time", Align::kRight}, {"%", Align::kRight}});
  const std::pair<const char*, uint64_t> parts[] = {
      {"computing (CPU, or runnable)", t.computing_ns()},
      {"backward on autograd's threads", t.engine_ns},
      {"input pipeline: waiting for batches", t.input_ns},
      {"input pipeline: fetching them (CPU)", t.input_cpu_ns},
      {"waiting for the device", t.device_ns},
      {"communication (MPI, NCCL)", t.communication_ns},
      {"other waits", t.other_wait_ns}};
  for (const auto& [part, ns] : parts) table.add_row({part, time_text(ns), percent(ns, t.step_ns)});
  table.print(out);
  const std::string workers =
      t.dataloader_workers ? " (DataLoader with " + std::to_string(t.dataloader_workers) + " workers)" : "";
  print_bound(out, "input-bound", t.input_total_ns(), t.step_ns,
              "goes to the input pipeline" + workers + ": " + percent(t.input_ns, t.step_ns) + " waiting for batches, " +
                  percent(t.input_cpu_ns, t.step_ns) + " fetching them on the step's thread");
  if (t.device) print_bound(out, "device-bound", t.device_ns, t.step_ns, "waits for the device");
  if (t.communication) print_bound(out, "communication-bound", t.communication_ns, t.step_ns, "is communication");
  // Next steps: only where a measured share points.
  std::vector<std::string> advice;
  if (over(t.input_total_ns(), t.step_ns, kBoundShare)) {
    if (over(t.input_ns, t.step_ns, kBoundShare / 2))
      advice.push_back("more DataLoader workers (num_workers" +
                       (t.dataloader_workers ? ", now " + std::to_string(t.dataloader_workers) : std::string()) +
                       ") or a larger prefetch_factor: the step waits " + percent(t.input_ns, t.step_ns) +
                       " of its time for batches");
    if (over(t.input_cpu_ns, t.step_ns, 0.1))
      advice.push_back("fewer, larger batches, or per-batch work (transforms, collate_fn) moved into the workers: "
                       "fetching batches takes the step's own thread " + percent(t.input_cpu_ns, t.step_ns) +
                       " of step time (receiving and unpickling them, and whatever input work it does itself)");
  }
  if (over(t.device_ns, t.step_ns, kBoundShare))
    advice.push_back("a larger batch per step or mixed precision (torch.autocast) to use the device better, and fewer "
                     "synchronizations in the loop (.item(), .cpu()): the step waits " +
                     percent(t.device_ns, t.step_ns) + " of its time for the device");
  if (over(t.copy_ns, t.step_ns, 0.05))
    advice.push_back("pin_memory=True in the DataLoader and non_blocking copies: synchronous copies to the device take " +
                     percent(t.copy_ns, t.step_ns) + " of step time");
  if (over(t.communication_ns, t.step_ns, kBoundShare))
    advice.push_back("overlap communication with computation (bucketed all-reduce) or communicate less often "
                     "(gradient accumulation): " +
                     percent(t.communication_ns, t.step_ns) + " of step time is communication");
  if (advice.empty())
    advice.push_back("no wait bounds the step: computing takes " + percent(t.computing_ns(), t.step_ns) +
                     " of it; the phases above and the operator table show where");
  out << "  next steps:\n";
  for (const std::string& a : advice) out << "    - " << a << "\n";
}

void print_operators(std::ostream& out, const MlView& view, size_t top) {
  const size_t shown = std::min(top, view.operators.size());
  out << "\nPyTorch operators (" << shown << " of " << view.operators.size()
      << ", by self samples; under an operator: forward "
      << percent(view.under_operator[static_cast<size_t>(Pass::kForward)], view.samples) << ", backward "
      << percent(view.under_operator[static_cast<size_t>(Pass::kBackward)], view.samples) << " of samples)\n";
  Table table({{"Self%", Align::kRight},
               {"Self", Align::kRight},
               {"Incl%", Align::kRight},
               {"Incl", Align::kRight},
               {"Pass", Align::kLeft},
               {"Operator", Align::kLeft}});
  for (size_t i = 0; i < shown; ++i) {
    const OperatorRow& r = view.operators[i];
    table.add_row({percent(r.self, view.samples), std::to_string(r.self), percent(r.inclusive, view.samples),
                   std::to_string(r.inclusive), pass_name(r.pass), r.name});
  }
  table.print(out);
}

}  // namespace

bool show_ml_view(const MlView& view, bool asked) { return view.torch || asked; }

void print_ml_view(std::ostream& out, const MlView& view, size_t top) {
  out << '\n' << title(view) << '\n';
  if (!view.python && !view.torch) {
    out << "  no Python frames in this archive: the view is for Python programs\n";
    return;
  }
  if (view.samples == 0) {
    out << "  no sample has the Python function " << view.step << " on its path\n";
    print_step_time(out, view);
    return;
  }
  print_phases(out, view);
  print_step_time(out, view);
  if (view.operators.empty()) {
    out << "  no PyTorch operator frames (at::_ops::NAME::call) in these samples\n";
  } else {
    print_operators(out, view, top);
  }
}

}  // namespace hybridprof::report
