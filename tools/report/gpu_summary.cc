#include "gpu_summary.h"

#include <algorithm>

#include "cuda/cuda_otf2_events.h"
#include "table.h"

namespace hybridprof::report {

GpuStats::GpuStats(const otf2::Archive& archive) : archive_(archive) {
  for (const auto& [ref, name] : archive.parameters)
    if (name == cuda::kCorrelationParameter) correlation_parameter_ = ref;
}

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
  // A context's synchronizations are the host waiting, not the device working.
  if (location->second.name.rfind("CUDA synchronization", 0) == 0) {
    syncs_[region->second.name].add(ns);
    return;
  }
  work_[region->second.name].add(ns);
  intervals_[device].emplace_back(begin, e.timestamp);
}

void GpuStats::add(const otf2::ParameterEvent& e) {
  if (e.parameter != correlation_parameter_ || e.value == 0) return;  // 0: CUPTI named no call
  const auto location = archive_.threads.find(e.location);
  if (location == archive_.threads.end()) return;
  const otf2::ThreadInfo& t = location->second;
  const uint64_t key = uint64_t{t.process} << 32 | uint32_t(e.value);
  if (t.device == otf2::kUndefined)
    launches_.emplace_back(key, e.timestamp);
  else
    started_.push_back({key, e.timestamp, t.device});
}

std::vector<GpuStats::Device> GpuStats::devices() const {
  // Each work's wait since its call started, per device.
  std::vector<std::pair<uint64_t, uint64_t>> launches = launches_;
  std::sort(launches.begin(), launches.end());
  std::map<uint32_t, std::vector<uint64_t>> waits;
  std::map<uint32_t, uint64_t> unlaunched;
  for (const Started& w : started_) {
    const auto first = std::lower_bound(launches.begin(), launches.end(), std::make_pair(w.key, uint64_t{0}));
    if (first == launches.end() || first->first != w.key) {
      ++unlaunched[w.device];
      continue;
    }
    // The latest call with its id that started before it (ids are unique
    // in a process until they wrap); a start before its call's is the two
    // clocks disagreeing, a wait of 0.
    auto call = std::upper_bound(first, launches.end(), std::make_pair(w.key, w.start_ns));
    if (call != first) --call;
    waits[w.device].push_back(w.start_ns > call->second ? w.start_ns - call->second : 0);
  }

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
    d.unlaunched = unlaunched[device];
    if (auto& w = waits[device]; !w.empty()) {
      std::sort(w.begin(), w.end());
      d.launched = w.size();
      // Nearest rank: the smallest wait at least `pct` percent of all are at most.
      const auto rank = [&](size_t pct) { return w[(pct * w.size() + 99) / 100 - 1]; };
      d.latency_median_ns = rank(50);
      d.latency_p95_ns = rank(95);
      d.latency_max_ns = w.back();
    }
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
    for (const GpuStats::Device& d : stats.devices()) {
      out << "  " << d.name << ": idle " << percent(d.span_ns - std::min(d.span_ns, d.busy_ns), d.span_ns)
          << " of " << time_text(d.span_ns) << " from its first work to its last\n";
      if (d.launched > 0)
        out << "    launch to start (from the call's start to the work's): median " << time_text(d.latency_median_ns)
            << ", 95th percentile " << time_text(d.latency_p95_ns) << ", max " << time_text(d.latency_max_ns)
            << " over " << d.launched << " launches\n";
      if (d.unlaunched > 0) out << "    " << d.unlaunched << " of its kernels, copies and memsets have no launching call in the archive\n";
    }
  }
  if (!stats.api().empty()) {
    out << "\nCUDA API calls (on host threads; Time%: of all CUDA calls' time)\n";
    print_timings(out, stats.api(), "Call", top);
  }
  if (!stats.syncs().empty()) {
    out << "\nCUDA synchronization (host threads waiting on device work; Time%: of all waits' time)\n";
    print_timings(out, stats.syncs(), "Wait", top);
  }
}

}  // namespace hybridprof::report
