#include "wait_summary.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "openmp_summary.h"
#include "osrt/os_wait_functions.h"
#include "otf2/property_names.h"
#include "profile.h"
#include "table.h"

namespace hybridprof::report {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// A CUDA call that makes the host wait for the device.
bool is_cuda_sync(const std::string& name) {
  if (name.find("Synchronize") != std::string::npos) return true;
  return (starts_with(name, "cudaMemcpy") || starts_with(name, "cudaMemset") || starts_with(name, "cuMemcpy")) &&
         name.find("Async") == std::string::npos;
}

// "12.5% read/write, 3.0% lock": the kinds by share of `total`, largest first.
std::string kinds_text(const std::map<std::string, uint64_t>& waits, uint64_t total, size_t most = 4) {
  std::vector<std::pair<uint64_t, std::string>> kinds;
  for (const auto& [kind, ns] : waits) kinds.push_back({ns, kind});
  std::sort(kinds.rbegin(), kinds.rend());
  std::string text;
  for (size_t i = 0; i < kinds.size() && i < most; ++i) text += (i ? ", " : "") + kinds[i].second + " " + percent(kinds[i].first, total);
  if (kinds.size() > most) text += ", …";
  return text;
}

}  // namespace

uint64_t WaitStats::Thread::waiting_ns() const {
  return std::accumulate(waits_ns.begin(), waits_ns.end(), uint64_t{0},
                         [](uint64_t sum, const auto& kind) { return sum + kind.second; });
}

WaitStats::WaitStats(const otf2::Archive& archive) : archive_(archive) {
  auto period = archive.properties.find(otf2::property::kPeriod);
  if (period != archive.properties.end() && period->second.find(" Hz") != std::string::npos) {
    const double hz = std::strtod(period->second.c_str(), nullptr);
    if (hz > 0) ns_per_sample_ = 1e9 / hz;
  }
}

std::string WaitStats::kind_of(const otf2::RegionInfo& r) {
  switch (r.paradigm) {
    case otf2::Paradigm::kMpi: return "MPI";
    case otf2::Paradigm::kOpenMp: return is_openmp_wait(r.name) ? "OpenMP wait" : "";
    case otf2::Paradigm::kCuda: return is_cuda_sync(r.name) ? "CUDA sync" : "";
    case otf2::Paradigm::kOsRuntime: {
      const std::string_view family = osrt::os_wait_family(r.name);
      return family.empty() ? "OS runtime" : std::string(family);
    }
    default: return "";
  }
}

void WaitStats::add(const otf2::SampleEvent& s) {
  Thread& t = threads_[s.location];
  const std::vector<Open>& open = open_[s.location];
  // A sample inside a wait (an MPI call polling, a read copying) is that
  // wait's time, already counted: CPU and waits add up to the wall time.
  if (std::none_of(open.begin(), open.end(), [](const Open& o) { return o.wait; })) ++t.samples;
  t.first_ns = std::min(t.first_ns, s.timestamp);
  t.last_ns = std::max(t.last_ns, s.timestamp);
}

void WaitStats::add(const otf2::RegionEvent& e) {
  auto thread = archive_.threads.find(e.location);
  if (thread != archive_.threads.end() && thread->second.device != otf2::kUndefined) return;  // a device's stream
  Thread& t = threads_[e.location];
  t.first_ns = std::min(t.first_ns, e.timestamp);
  t.last_ns = std::max(t.last_ns, e.timestamp);
  std::vector<Open>& open = open_[e.location];
  auto kind = kinds_.find(e.region);
  if (kind == kinds_.end()) {
    auto region = archive_.regions.find(e.region);
    kind = kinds_.emplace(e.region, region == archive_.regions.end() ? "" : kind_of(region->second)).first;
  }
  if (e.enter) {
    const bool inside_wait = std::any_of(open.begin(), open.end(), [](const Open& o) { return o.wait; });
    open.push_back({e.region, e.timestamp, e.context, !kind->second.empty() && !inside_wait});
    return;
  }
  if (open.empty() || open.back().region != e.region) return;  // unmatched: ignored
  const Open left = open.back();
  open.pop_back();
  if (!left.wait) return;
  const uint64_t ns = e.timestamp > left.enter_ns ? e.timestamp - left.enter_ns : 0;
  t.waits_ns[kind->second] += ns;
  Path& p = paths_[left.context];
  p.kind = kind->second;
  ++p.calls;
  p.total_ns += ns;
  p.max_ns = std::max(p.max_ns, ns);
}

void print_wall_time(std::ostream& out, const WaitStats& stats, size_t top) {
  struct Row {
    std::string process, thread;
    uint64_t wall = 0, cpu = 0, waiting = 0;
    std::map<std::string, uint64_t> waits;
    bool cpu_known = true;
  };
  const otf2::Archive& archive = stats.archive();
  std::vector<Row> threads;
  std::map<uint32_t, Row> processes;
  std::map<uint32_t, size_t> threads_of;
  for (const auto& [location, t] : stats.threads()) {
    auto info = archive.threads.find(location);
    const uint32_t process = info == archive.threads.end() ? otf2::kUndefined : info->second.process;
    Row r;
    r.process = process_label(archive, process);
    r.thread = info == archive.threads.end() ? "?" : info->second.name;
    r.wall = t.wall_ns();
    r.cpu_known = stats.ns_per_sample() > 0;
    r.cpu = std::min(r.wall, uint64_t(double(t.samples) * stats.ns_per_sample()));
    r.waiting = std::min(r.wall, t.waiting_ns());
    r.waits = t.waits_ns;
    threads.push_back(r);
    Row& p = processes[process];
    p.process = r.process;
    p.wall += r.wall;
    p.cpu += r.cpu;
    p.waiting += r.waiting;
    p.cpu_known = r.cpu_known;
    for (const auto& [kind, ns] : r.waits) p.waits[kind] += ns;
    ++threads_of[process];
  }
  if (threads.empty()) return;
  std::sort(threads.begin(), threads.end(), [](const Row& a, const Row& b) { return a.wall > b.wall; });
  const auto unaccounted = [](const Row& r) {
    return r.cpu_known ? percent(r.wall - std::min(r.wall, r.cpu + r.waiting), r.wall) : std::string("-");
  };
  out << "\nWall time (CPU outside traced waits, from samples; traced waits; the rest unaccounted: runnable "
         "but not running, or untraced waits; "
      << std::min(top, threads.size()) << " of " << threads.size() << " threads, by wall time)\n";
  // Process, then the thread (or the count of threads), then the shares.
  const auto table_of = [](const char* second, Table::Align align) {
    return Table({{"Process", Table::Align::kLeft},
                  {second, align},
                  {"Wall", Table::Align::kRight},
                  {"CPU", Table::Align::kRight},
                  {"Waiting", Table::Align::kRight},
                  {"Unaccounted", Table::Align::kRight},
                  {"Waits by kind (share of wall)", Table::Align::kLeft}});
  };
  const auto cells = [&](const Row& r, std::string second) {
    return std::vector<std::string>{r.process,
                                    std::move(second),
                                    time_text(r.wall),
                                    r.cpu_known ? percent(r.cpu, r.wall) : "-",
                                    percent(r.waiting, r.wall),
                                    unaccounted(r),
                                    kinds_text(r.waits, r.wall)};
  };
  Table table = table_of("Thread", Table::Align::kLeft);
  for (size_t i = 0; i < threads.size() && i < top; ++i) table.add_row(cells(threads[i], threads[i].thread));
  table.print(out);
  if (processes.size() < 2) return;
  std::vector<std::pair<uint32_t, Row>> by_wall(processes.begin(), processes.end());
  std::sort(by_wall.begin(), by_wall.end(), [](const auto& a, const auto& b) { return a.second.wall > b.second.wall; });
  out << "\n  Per process (its threads' wall time summed; " << std::min(top, by_wall.size()) << " of " << by_wall.size()
      << ")\n";
  Table per_process = table_of("Threads", Table::Align::kRight);
  for (size_t i = 0; i < by_wall.size() && i < top; ++i)
    per_process.add_row(cells(by_wall[i].second, std::to_string(threads_of[by_wall[i].first])));
  per_process.print(out);
}

void print_waits(std::ostream& out, const WaitStats& stats, size_t top, bool full_paths) {
  if (stats.empty()) return;
  std::vector<std::pair<uint32_t, WaitStats::Path>> rows(stats.paths().begin(), stats.paths().end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns != b.second.total_ns ? a.second.total_ns > b.second.total_ns : a.first < b.first;
  });
  out << "\nWaits (the call paths that waited longest, " << std::min(top, rows.size()) << " of " << rows.size()
      << "; all threads)\n";
  Table table({{"Total", Table::Align::kRight},
               {"Calls", Table::Align::kRight},
               {"Longest", Table::Align::kRight},
               {"Kind", Table::Align::kLeft},
               {"Call path (root → the wait)", Table::Align::kLeft}});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const auto& [context, p] = rows[i];
    std::string path;
    for (const std::string& frame : abbreviate(function_chain(stats.archive(), context), full_paths))
      path += (path.empty() ? "" : " → ") + frame;
    table.add_row({time_text(p.total_ns), std::to_string(p.calls), time_text(p.max_ns), p.kind, path});
  }
  table.print(out);
}

}  // namespace hybridprof::report
