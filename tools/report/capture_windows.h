// The report's capture windows and marks: what each process recorded
// (--delay, --duration, --paused, the control API) and the points it named
// (hybridprof_mark), from its CAPTURE_WINDOWS and MARKS properties.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "otf2/archive_reader.h"

namespace hybridprof::report {

struct CaptureWindow {
  uint32_t process = 0;
  double from_s = 0, to_s = 0;  // seconds from the job's start
  std::string opened_by, closed_by;
};
struct Mark {
  uint32_t process = 0;
  double at_s = 0;
  std::string text;
};
struct CaptureWindows {
  std::vector<CaptureWindow> windows;
  std::vector<Mark> marks;
  // Whether anything was left out: a window that did not span its process
  // from the run's start to its end (then the section is printed).
  bool partial = false;
};
CaptureWindows capture_windows(const otf2::Archive&);

// The section, when something was left out or marked; nothing otherwise.
void print_capture_windows(std::ostream&, const otf2::Archive&, const CaptureWindows&);

}  // namespace hybridprof::report
