#include "capture_windows.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "otf2/property_names.h"
#include "otf2/selection.h"
#include "table.h"

namespace hybridprof::report {
namespace {

using Align = Table::Align;

std::string property(const otf2::ProcessInfo& p, const char* name) {
  const auto it = p.properties.find(name);
  return it == p.properties.end() ? "" : it->second;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f s", s);
  return text;
}

}  // namespace

CaptureWindows capture_windows(const otf2::Archive& archive) {
  CaptureWindows c;
  for (const auto& [ref, process] : archive.processes) {
    const std::string text = property(process, otf2::property::kCaptureWindows);
    c.partial |= text.empty() && process.properties.count(otf2::property::kCaptureWindows);  // none opened
    std::istringstream windows(text);
    for (std::string line; std::getline(windows, line);) {
      std::istringstream in(line);
      uint64_t from = 0, to = 0;
      CaptureWindow w;
      if (!(in >> from >> to)) continue;
      in.ignore(1);
      std::getline(in, w.opened_by, '\t');
      std::getline(in, w.closed_by);
      w.process = ref;
      w.from_s = otf2::seconds_of(archive, from);
      w.to_s = otf2::seconds_of(archive, to);
      c.partial |= w.opened_by != "run start" || w.closed_by != "process end";
      c.windows.push_back(w);
    }
    std::istringstream marks(property(process, otf2::property::kMarks));
    for (std::string line; std::getline(marks, line);) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      c.marks.push_back({ref, otf2::seconds_of(archive, std::stoull(line.substr(0, tab))), line.substr(tab + 1)});
    }
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
