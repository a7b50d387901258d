// Command line of hybridprof-convert.
#pragma once

#include <string>
#include <vector>

#include "chrome_trace.h"

namespace hybridprof::convert {

struct Options {
  std::string to;       // "chrome"
  std::string archive;  // directory or .otf2 file
  std::string output;   // FILE.json or FILE.json.gz
  otf2::Selection selection;
  bool help = false;
  bool version = false;
};

// Throws std::invalid_argument with a one-line message for bad arguments.
Options parse_options(const std::vector<std::string>& args);

extern const char* const kUsage;

}  // namespace hybridprof::convert
