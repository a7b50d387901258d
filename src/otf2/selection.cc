#include "otf2/selection.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "otf2/capture_windows.h"
#include "otf2/property_names.h"

namespace hybridprof::otf2 {
namespace {

double seconds(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw std::invalid_argument(option + ": '" + text + "' is not a number of seconds");
  return v;
}

uint64_t whole(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || text[0] == '-' || text[0] == '+')
    throw std::invalid_argument(option + ": '" + text + "' is not a number");
  return v;
}

// "rank N" -> N; -1 for a process without a rank.
int64_t rank_of(const std::string& process_name) {
  if (process_name.rfind("rank ", 0) != 0) return -1;
  char* end = nullptr;
  const long long v = std::strtoll(process_name.c_str() + 5, &end, 10);
  return end == process_name.c_str() + 5 ? -1 : v;
}

}  // namespace

void parse_window(const std::string& text, const std::string& option, Selection* selection) {
  const size_t colon = text.find(':');
  if (text.empty()) throw std::invalid_argument(option + ": FROM:TO in seconds (e.g. 2.5:10), or a window's name");
  if (colon == std::string::npos) {
    selection->window_name = text;
    return;
  }
  if (colon > 0) selection->from_s = seconds(text.substr(0, colon), option);
  if (colon + 1 < text.size()) selection->to_s = seconds(text.substr(colon + 1), option);
  if (selection->to_s <= selection->from_s) throw std::invalid_argument(option + ": an empty window '" + text + "'");
}

double sample_period_seconds(const Archive& archive) {
  const auto p = archive.properties.find(property::kPeriod);
  if (p == archive.properties.end()) return 0;
  const double value = std::atof(p->second.c_str());
  if (value <= 0) return 0;
  const auto ends_with = [&](const char* unit) {
    const size_t n = std::strlen(unit);
    return p->second.size() >= n && p->second.compare(p->second.size() - n, n, unit) == 0;
  };
  if (ends_with(" Hz")) return 1 / value;
  if (ends_with(" ns")) return value * 1e-9;
  return 0;
}

Selection with_window_name(const Archive& archive, const Selection& selection) {
  if (selection.window_name.empty()) return selection;
  Selection s = selection;
  bool found = false;
  for (const auto& [ref, process] : archive.processes) {
    const std::vector<CaptureWindow> windows = capture_windows_of(process);
    for (const Mark& m : marks_of(process)) {
      if (m.text != selection.window_name) continue;
      for (const CaptureWindow& w : windows) {
        if (m.at < w.from || m.at > w.to) continue;
        const double from = seconds_of(archive, w.from), to = seconds_of(archive, w.to);
        s.from_s = found ? std::min(s.from_s, from) : from;
        s.to_s = found ? std::max(s.to_s, to) : to;
        found = true;
      }
    }
  }
  if (!found)
    throw std::runtime_error("--time: no capture window is marked '" + selection.window_name +
                             "' (hybridprof_mark, Python's hybridprof.window)");
  s.window_name.clear();
  return s;
}

std::set<uint64_t> parse_list(const std::string& text, const std::string& option) {
  std::set<uint64_t> values;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t dash = item.find('-', 1);
    if (dash == std::string::npos) {
      values.insert(whole(item, option));
    } else {
      const uint64_t first = whole(item.substr(0, dash), option), last = whole(item.substr(dash + 1), option);
      if (last < first || last - first > 1'000'000) throw std::invalid_argument(option + ": bad range '" + item + "'");
      for (uint64_t v = first; v <= last; ++v) values.insert(v);
    }
    at = comma + 1;
  }
  return values;
}

std::set<uint64_t> selected_locations(const Archive& archive, const Selection& selection) {
  bool any_rank = false;
  for (const auto& [ref, p] : archive.processes) any_rank |= rank_of(p.name) >= 0;
  std::set<uint32_t> processes;
  uint64_t index = 0;
  for (const auto& [ref, p] : archive.processes) {
    const int64_t rank = any_rank ? rank_of(p.name) : static_cast<int64_t>(index);
    ++index;
    if (selection.ranks.empty() || (rank >= 0 && selection.ranks.count(static_cast<uint64_t>(rank))))
      processes.insert(ref);
  }
  std::set<uint64_t> locations;
  for (const auto& [location, t] : archive.threads) {
    if (!processes.count(t.process)) continue;
    if (!selection.tids.empty()) {
      const auto tid = t.properties.find(property::kTid);
      if (t.device != kUndefined || tid == t.properties.end() || !selection.tids.count(tid->second)) continue;
    }
    locations.insert(location);
  }
  if (locations.empty()) throw std::runtime_error("no thread of the archive matches --ranks / --threads");
  return locations;
}

std::string describe(const Selection& selection) {
  const auto list = [](const std::set<uint64_t>& values) {
    std::string text;
    for (uint64_t v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
    return text;
  };
  std::string text = selection.ranks.empty()       ? "all ranks"
                     : selection.ranks.size() == 1 ? "rank " + list(selection.ranks)
                                                   : "ranks " + list(selection.ranks);
  if (!selection.tids.empty()) text += std::string(selection.tids.size() == 1 ? "; thread " : "; threads ") + list(selection.tids);
  if (!selection.window_name.empty()) {
    text += "; window " + selection.window_name;
  } else if (selection.from_s > 0 || selection.to_s != std::numeric_limits<double>::infinity()) {
    char window[96];
    if (selection.to_s == std::numeric_limits<double>::infinity())
      std::snprintf(window, sizeof window, "; from %.3f s", selection.from_s);
    else
      std::snprintf(window, sizeof window, "; %.3f s to %.3f s", selection.from_s, selection.to_s);
    text += window;
  }
  return text;
}

}  // namespace hybridprof::otf2
