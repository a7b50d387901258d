#include "range_summary.h"

#include <algorithm>

#include "table.h"

namespace hybridprof::report {

void RangeStats::add(const otf2::RegionEvent& e) {
  const auto region = archive_.regions.find(e.region);
  if (region == archive_.regions.end() || region->second.paradigm != otf2::Paradigm::kUser) return;
  std::vector<Open>& open = open_[e.location];
  if (e.enter) {
    open.push_back({region->second.name, e.timestamp});
    return;
  }
  // A leave closes the innermost range of its name (regions nest on a
  // location; one whose enter is not in the archive is skipped).
  const auto it = std::find_if(open.rbegin(), open.rend(), [&](const Open& o) { return o.name == region->second.name; });
  if (it == open.rend()) return;
  const size_t at = static_cast<size_t>(open.rend() - it) - 1;
  std::vector<std::string> path;
  for (size_t i = 0; i <= at; ++i) path.push_back(open[i].name);
  const uint64_t ns = e.timestamp > open[at].enter_ns ? e.timestamp - open[at].enter_ns : 0;
  Range& r = ranges_[path];
  ++r.calls;
  r.total_ns += ns;
  r.min_ns = std::min(r.min_ns, ns);
  r.max_ns = std::max(r.max_ns, ns);
  open.erase(open.begin() + static_cast<std::ptrdiff_t>(at), open.end());
}

void print_range_summary(std::ostream& out, const RangeStats& stats, size_t top) {
  if (stats.empty()) return;
  using A = Table::Align;
  out << "\nUser ranges (NVTX; nested under the ranges they ran in, on their thread; Time%: of all\n"
         "outermost ranges' time)\n";
  uint64_t all = 0;
  for (const auto& [path, r] : stats.ranges())
    if (path.size() == 1) all += r.total_ns;
  // Depth first, each level by total time.
  std::map<std::vector<std::string>, std::vector<const std::vector<std::string>*>> children;
  for (const auto& [path, r] : stats.ranges())
    children[std::vector<std::string>(path.begin(), path.end() - 1)].push_back(&path);
  Table table({{"Time%", A::kRight}, {"Total", A::kRight}, {"Calls", A::kRight}, {"Avg", A::kRight},
               {"Min", A::kRight}, {"Max", A::kRight}, {"Range", A::kLeft}});
  size_t rows = 0;
  const auto print_level = [&](const std::vector<std::string>& parent, auto& self) -> void {
    auto level = children.find(parent);
    if (level == children.end()) return;
    std::vector<const std::vector<std::string>*> paths = level->second;
    std::sort(paths.begin(), paths.end(), [&](const auto* a, const auto* b) {
      const uint64_t ta = stats.ranges().at(*a).total_ns, tb = stats.ranges().at(*b).total_ns;
      return ta != tb ? ta > tb : *a < *b;
    });
    for (const auto* path : paths) {
      if (rows++ >= top) return;
      const RangeStats::Range& r = stats.ranges().at(*path);
      table.add_row({percent(r.total_ns, all), time_text(r.total_ns), std::to_string(r.calls),
                     time_text(r.total_ns / r.calls), time_text(r.min_ns), time_text(r.max_ns),
                     std::string(2 * (path->size() - 1), ' ') + path->back()});
      self(*path, self);
    }
  };
  print_level({}, print_level);
  table.print(out);
  if (stats.ranges().size() > top) out << "  … and " << stats.ranges().size() - top << " more ranges\n";
}

}  // namespace hybridprof::report
