#include "otf2/capture_windows.h"

#include <sstream>

#include "otf2/property_names.h"

namespace hybridprof::otf2 {
namespace {
std::string text_of(const ProcessInfo& p, const char* name) {
  const auto it = p.properties.find(name);
  return it == p.properties.end() ? "" : it->second;
}
}  // namespace

bool has_capture_windows(const ProcessInfo& process) { return process.properties.count(property::kCaptureWindows) != 0; }

// "FROM TO\tOPENED BY\tCLOSED BY" a line.
std::vector<CaptureWindow> capture_windows_of(const ProcessInfo& process) {
  std::vector<CaptureWindow> windows;
  std::istringstream lines(text_of(process, property::kCaptureWindows));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    CaptureWindow w;
    if (!(in >> w.from >> w.to) || in.get() != '\t') continue;
    std::getline(in, w.opened_by, '\t');
    std::getline(in, w.closed_by);
    windows.push_back(w);
  }
  return windows;
}

// "AT\tTEXT" a line.
std::vector<Mark> marks_of(const ProcessInfo& process) {
  std::vector<Mark> marks;
  std::istringstream lines(text_of(process, property::kMarks));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    Mark m;
    if (!(in >> m.at) || in.get() != '\t') continue;
    std::getline(in, m.text);
    marks.push_back(m);
  }
  return marks;
}

}  // namespace hybridprof::otf2
