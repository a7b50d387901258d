#include "capture_windows.h"

#include <algorithm>
#include <cstdio>

#include "otf2/capture_windows.h"
#include "otf2/selection.h"
#include "table.h"

namespace hybridprof::report {
namespace {

using Align = Table::Align;

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f s", s);
  return text;
}

}  // namespace

CaptureWindows capture_windows(const otf2::Archive& archive) {
  CaptureWindows c;
  for (const auto& [ref, process] : archive.processes) {
    const std::vector<otf2::CaptureWindow> windows = otf2::capture_windows_of(process);
    c.partial |= windows.empty() && otf2::has_capture_windows(process);  // none opened
    for (const otf2::CaptureWindow& w : windows) {
      c.partial |= w.opened_by != "run start" || w.closed_by != "process end";
      c.windows.push_back({ref, otf2::seconds_of(archive, w.from), otf2::seconds_of(archive, w.to), w.opened_by, w.closed_by});
    }
    for (const otf2::Mark& m : otf2::marks_of(process)) c.marks.push_back({ref, otf2::seconds_of(archive, m.at), m.text});
  }
  return c;
}

void print_capture_windows(std::ostream& out, const otf2::Archive& archive, const CaptureWindows& c) {
  if (!c.partial && c.marks.empty()) return;
  out << "\nCapture windows (what was recorded)\n";
  if (c.windows.empty()) out << "  none: no window was opened, nothing was recorded\n";
  Table windows({{"Process", Align::kLeft},
                 {"From", Align::kRight},
                 {"To", Align::kRight},
                 {"Length", Align::kRight},
                 {"Opened by", Align::kLeft},
                 {"Closed by", Align::kLeft}});
  double recorded = 0;
  for (const CaptureWindow& w : c.windows) {
    windows.add_row({archive.processes.at(w.process).name, seconds_text(w.from_s), seconds_text(w.to_s),
                     seconds_text(w.to_s - w.from_s), w.opened_by, w.closed_by});
    recorded += w.to_s - w.from_s;
  }
  if (!windows.empty()) windows.print(out);
  if (!c.windows.empty())
    out << "  " << c.windows.size() << " window" << (c.windows.size() == 1 ? "" : "s") << ", " << seconds_text(recorded)
        << " recorded in all: samples and traced calls come from these only\n";
  if (c.marks.empty()) return;
  out << "\nMarks\n";
  Table marks({{"Process", Align::kLeft}, {"At", Align::kRight}, {"Mark", Align::kLeft}});
  for (const Mark& m : c.marks) marks.add_row({archive.processes.at(m.process).name, seconds_text(m.at_s), m.text});
  marks.print(out);
}

}  // namespace hybridprof::report
