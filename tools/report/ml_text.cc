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
  if (view.input_bound()) {
    out << "  input-bound: the input pipeline takes " << percent(view.phase(Phase::kInput), view.training_samples())
        << " of the training phases' samples; more DataLoader workers (num_workers) or prefetching may help\n";
  }
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
    return;
  }
  print_phases(out, view);
  if (view.operators.empty()) {
    out << "  no PyTorch operator frames (at::_ops::NAME::call) in these samples\n";
  } else {
    print_operators(out, view, top);
  }
}

}  // namespace hybridprof::report
