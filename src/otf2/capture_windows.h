// A process's capture windows and marks as the archive keeps them (process
// properties CAPTURE_WINDOWS and MARKS, written by the finalizer), read back
// for the report, the converter and the tests. Times are the archive's
// ticks (otf2::seconds_of makes them seconds from the job's start).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "otf2/archive_reader.h"

namespace hybridprof::otf2 {

struct CaptureWindow {
  uint64_t from = 0, to = 0;
  std::string opened_by, closed_by;  // "run start", "--delay", "hybridprof_stop()", "process end"...
};
struct Mark {
  uint64_t at = 0;
  std::string text;
};

// Malformed lines are skipped.
std::vector<CaptureWindow> capture_windows_of(const ProcessInfo& process);
std::vector<Mark> marks_of(const ProcessInfo& process);
// Whether the process has the CAPTURE_WINDOWS property at all (archives
// from before windows do not: they recorded everything).
bool has_capture_windows(const ProcessInfo& process);

}  // namespace hybridprof::otf2
