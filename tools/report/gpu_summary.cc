#include "gpu_summary.h"

#include <algorithm>

#include "table.h"

namespace hybridprof::report {

void GpuStats::Timing::add(uint64_t ns) {
  ++calls;
  total_ns += ns;
  min_ns = std::min(min_ns, ns);
  max_ns = std::max(max_ns, ns);
}

void GpuStats::add(const otf2::RegionEvent& e) {
  const auto region = archive_.regions.find(e.region);
  if (region == archive_.regions.end() || region->second.paradigm != otf2::Paradigm::kCuda) return;
  auto& open = open_[e.location];
  if (e.enter) {
    open.emplace_back(e.region, e.timestamp);
    return;
  }
  if (open.empty() || open.back().first != e.region) return;  // its enter is not in the archive
  const uint64_t begin = open.back().second, ns = e.timestamp > begin ? e.timestamp - begin : 0;
  open.pop_back();
  const auto location = archive_.threads.find(e.location);
  const uint32_t device = location == archive_.threads.end() ? otf2::kUndefined : location->second.device;
  if (device == otf2::kUndefined) {
    api_[region->second.name].add(ns);
    return;
  }
  work_[region->second.name].add(ns);
  // A context's synchronizations are the host waiting, not the device working.
  if (location->second.name.rfind("CUDA synchronization", 0) != 0) intervals_[device].emplace_back(begin, e.timestamp);
}

std::vector<GpuStats::Device> GpuStats::devices() const {
  std::vector<Device> out;
  for (auto [device, intervals] : intervals_) {
    std::sort(intervals.begin(), intervals.end());
    Device d;
    const auto info = archive_.devices.find(device);
    d.name = info == archive_.devices.end() ? "device " + std::to_string(device) : info->second.name;
    uint64_t first = intervals.front().first, last = 0, covered_to = 0;
    for (const auto& [begin, end] : intervals) {
      const uint64_t from = std::max(begin, covered_to);
      if (end > from) d.busy_ns += end - from;
      covered_to = std::max(covered_to, end);
      last = std::max(last, end);
    }
    d.span_ns = last > first ? last - first : 0;
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

// Rows by total time, nvprof's columns.
void print_timings(std::ostream& out, const std::map<std::string, GpuStats::Timing>& timings, const char* what,
                   size_t top) {
  using A = Table::Align;
  uint64_t all = 0;
  for (const auto& [name, t] : timings) all += t.total_ns;
  std::vector<const std::pair<const std::string, GpuStats::Timing>*> rows;
  for (const auto& row : timings) rows.push_back(&row);
  std::sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
    return a->second.total_ns != b->second.total_ns ? a->second.total_ns > b->second.total_ns : a->first < b->first;
  });
  Table table({{"Time%", A::kRight}, {"Total", A::kRight}, {"Calls", A::kRight}, {"Avg", A::kRight},
               {"Min", A::kRight}, {"Max", A::kRight}, {what, A::kLeft}});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const auto& [name, t] = *rows[i];
    table.add_row({percent(t.total_ns, all), time_text(t.total_ns), std::to_string(t.calls), time_text(t.total_ns / t.calls),
                   time_text(t.min_ns), time_text(t.max_ns), name});
  }
  table.print(out);
  if (rows.size() > top) out << "  … and " << rows.size() - top << " more\n";
}

}  // namespace

void print_gpu_summary(std::ostream& out, const GpuStats& stats, size_t top) {
  if (stats.empty()) return;
  if (!stats.work().empty()) {
    out << "\nGPU activities (CUDA; Time%: of all GPU work's time)\n";
    print_timings(out, stats.work(), "Kernel, copy or memset", top);
    for (const GpuStats::Device& d : stats.devices())
      out << "  " << d.name << ": idle " << percent(d.span_ns - std::min(d.span_ns, d.busy_ns), d.span_ns)
          << " of " << time_text(d.span_ns) << " from its first work to its last\n";
  }
  if (!stats.api().empty()) {
    out << "\nCUDA API calls (on host threads; Time%: of all CUDA calls' time)\n";
    print_timings(out, stats.api(), "Call", top);
  }
}

}  // namespace hybridprof::report
