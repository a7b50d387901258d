// Command line of hybridprof-report.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "otf2/selection.h"

namespace hybridprof::report {

struct Options {
  std::string archive;      // directory or anchor
  size_t top_functions = 25;
  size_t top_paths = 10;
  bool full_paths = false;
  bool wide = false;  // function names whole in the flat profile
  bool folded = false;
  bool python_only = false;       // only Python frames in the profile and paths
  bool python_functions = false;  // one frame per Python function, whatever its line
  bool ml = false;                // the Python ML view even when the samples show no PyTorch
  std::string step;               // the ML view covers only this Python function's samples ("" = all)
  std::string flamegraph;         // write a flame graph SVG here instead of the report ("" = none)
  bool icicle = false;            // the flame graph upside down: roots at the top
  otf2::Selection selection;      // --time, --ranks, --threads: the samples and events counted
  std::string diff_base;          // --diff BASE NEW: compare BASE (this) with `archive` (NEW)
  bool absolute = false;          // --absolute: a diff in time, not in shares of each run
  bool help = false;
  bool version = false;
};

// Throws std::invalid_argument with a one-line message for bad arguments.
Options parse_options(const std::vector<std::string>& args);

extern const char* const kUsage;

}  // namespace hybridprof::report
