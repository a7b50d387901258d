// The text of the report's Python ML view (see ml_view.h): the phases of
// the step, the input-bound hint, the operator table.
#pragma once

#include <ostream>

#include "ml_view.h"

namespace hybridprof::report {

// Whether the report shows the view: when the samples show PyTorch, or when
// asked (--ml, --step) even for a job without it.
bool show_ml_view(const MlView&, bool asked);

// At most `top` operator rows.
void print_ml_view(std::ostream&, const MlView&, size_t top);

}  // namespace hybridprof::report
