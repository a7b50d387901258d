#include "openmp_summary.h"

#include <algorithm>
#include <cstdio>

#include "openmp/openmp_events.h"
#include "table.h"

namespace hybridprof::report {
namespace {

// The construct of a region name ("!$omp for @a.c:3" -> "!$omp for").
std::string construct_of(const std::string& name) { return name.substr(0, name.find(" @")); }

bool is_parallel(const std::string& construct) { return construct == "!$omp parallel"; }
bool is_barrier(const std::string& construct) {
  return construct == "!$omp barrier" || construct == "!$omp implicit barrier";
}
// Time a thread spends waiting for others, not working.
bool is_wait(const std::string& construct) {
  const std::string waiting = " (waiting)";
  return is_barrier(construct) || construct == "!$omp taskwait" ||
         (construct.size() > waiting.size() &&
          construct.compare(construct.size() - waiting.size(), waiting.size(), waiting) == 0);
}

}  // namespace

bool is_openmp_wait(const std::string& region_name) {
  const std::string construct = construct_of(region_name);
  return is_wait(construct) || construct == openmp::kIdleRegionName;
}

uint64_t OpenMpStats::ParallelRegion::calls() const {
  if (forked != 0) return forked;
  uint64_t n = 0;
  for (const auto& [location, t] : threads) n = std::max(n, t.enters);
  return n;
}

uint64_t OpenMpStats::ParallelRegion::thread_average_ns() const {
  uint64_t enters = 0;
  for (const auto& [location, t] : threads) enters += t.enters;
  return enters ? thread_ns() / enters : 0;
}

uint64_t OpenMpStats::ParallelRegion::total_ns() const {
  uint64_t n = 0;
  for (const auto& [location, t] : threads) n = std::max(n, t.time_ns);
  return n;
}

size_t OpenMpStats::ParallelRegion::team_threads() const {
  std::map<uint32_t, size_t> per_process;
  size_t most = 0;
  for (const auto& [location, t] : threads) most = std::max(most, ++per_process[t.process]);
  return most;
}

double OpenMpStats::ParallelRegion::imbalance() const {
  struct Team {
    uint64_t most = 0, sum = 0, threads = 0;
  };
  std::map<uint32_t, Team> teams;
  for (const auto& [location, t] : threads) {
    const uint64_t work = t.time_ns > t.wait_ns ? t.time_ns - t.wait_ns : 0;
    Team& team = teams[t.process];
    team.most = std::max(team.most, work);
    team.sum += work;
    ++team.threads;
  }
  double worst = 0;
  for (const auto& [process, team] : teams)
    if (team.sum != 0) worst = std::max(worst, double(team.most) * double(team.threads) / double(team.sum));
  return worst;
}

uint64_t OpenMpStats::ParallelRegion::thread_ns() const {
  uint64_t n = 0;
  for (const auto& [location, t] : threads) n += t.time_ns;
  return n;
}

uint64_t OpenMpStats::ParallelRegion::barrier_ns() const {
  uint64_t n = 0;
  for (const auto& [location, t] : threads) n += t.barrier_ns;
  return n;
}

void OpenMpStats::add(const otf2::ForkJoinEvent& e) {
  if (e.paradigm == otf2::Paradigm::kOpenMp) forked_[e.location] = e.fork;
}

std::map<uint64_t, OpenMpStats::Idle> OpenMpStats::idle() const {
  std::map<uint64_t, Idle> idle;
  for (const auto& [location, w] : idle_) {
    const Span& span = spans_.at(location);
    idle[location] = {w.count, w.total_ns, span.last > span.first_openmp ? span.last - span.first_openmp : 0};
  }
  return idle;
}

void OpenMpStats::add(const otf2::RegionEvent& e) {
  auto region = archive_.regions.find(e.region);
  Span& span = spans_[e.location];
  span.last = std::max(span.last, e.timestamp);
  if (region == archive_.regions.end() || region->second.paradigm != otf2::Paradigm::kOpenMp) return;
  span.first_openmp = std::min(span.first_openmp, e.timestamp);
  std::vector<Open>& open = open_[e.location];
  if (e.enter) {
    open.push_back({e.region, e.timestamp});
    // The forking thread enters the region it forked first.
    bool& forked = forked_[e.location];
    if (forked && is_parallel(construct_of(region->second.name))) ++parallel_[region->second.name].forked;
    forked = false;
    return;
  }
  if (open.empty() || open.back().region != e.region) return;  // unmatched: ignored
  const Open left = open.back();
  open.pop_back();
  const uint64_t ns = e.timestamp > left.enter_ns ? e.timestamp - left.enter_ns : 0;
  const std::string& name = region->second.name;
  const std::string construct = construct_of(name);
  if (construct == openmp::kIdleRegionName) {
    Wait& w = idle_[e.location];
    ++w.count;
    w.total_ns += ns;
    return;
  }
  if (is_parallel(construct)) {
    ThreadShare& t = parallel_[name].threads[e.location];
    const auto thread = archive_.threads.find(e.location);
    t.process = thread == archive_.threads.end() ? 0 : thread->second.process;
    ++t.enters;
    t.time_ns += ns;
    t.wait_ns += left.wait_ns;
    t.barrier_ns += left.barrier_ns;
    return;
  }
  if (!is_wait(construct)) return;
  Wait& w = waits_[name];
  ++w.count;
  w.total_ns += ns;
  // Into the innermost parallel region the thread is in.
  for (auto it = open.rbegin(); it != open.rend(); ++it) {
    if (!is_parallel(construct_of(archive_.regions.at(it->region).name))) continue;
    it->wait_ns += ns;
    if (is_barrier(construct)) it->barrier_ns += ns;
    break;
  }
}

namespace {

void print_waits(std::ostream& out, const OpenMpStats& stats, size_t top) {
  using A = Table::Align;
  out << "\nOpenMP waits (all threads)\n";
  std::vector<std::pair<std::string, OpenMpStats::Wait>> waits(stats.waits().begin(), stats.waits().end());
  std::sort(waits.begin(), waits.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns != b.second.total_ns ? a.second.total_ns > b.second.total_ns : a.first < b.first;
  });
  Table table({{"Time", A::kRight}, {"Count", A::kRight}, {"Avg", A::kRight}, {"Name", A::kLeft}});
  for (size_t i = 0; i < waits.size() && i < top; ++i) {
    const auto& [name, w] = waits[i];
    table.add_row({time_text(w.total_ns), std::to_string(w.count), time_text(w.count ? w.total_ns / w.count : 0), name});
  }
  table.print(out);
  if (waits.size() > top) out << "  … and " << waits.size() - top << " more\n";
}

// Per worker thread, how long it waited for work between regions.
void print_idle(std::ostream& out, const OpenMpStats& stats, size_t top) {
  const otf2::Archive& archive = stats.archive();
  const std::map<uint64_t, OpenMpStats::Idle> idle = stats.idle();
  if (idle.empty()) return;
  using A = Table::Align;
  out << "\n" << openmp::kIdleRegionName << ": worker threads between parallel regions (Idle%: of the\n"
      << "thread's time from its first OpenMP region to its end; a spinning worker's samples are under it)\n";
  std::vector<std::pair<uint64_t, OpenMpStats::Idle>> rows(idle.begin(), idle.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns != b.second.total_ns ? a.second.total_ns > b.second.total_ns : a.first < b.first;
  });
  const bool processes = archive.processes.size() > 1;
  Table table({{"Idle", A::kRight}, {"Idle%", A::kRight}, {"Waits", A::kRight}, {"Avg", A::kRight},
               {"Thread", A::kLeft}});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const auto& [location, w] = rows[i];
    std::string thread = "location " + std::to_string(location);
    if (const auto t = archive.threads.find(location); t != archive.threads.end()) {
      thread = t->second.name;
      if (const auto p = archive.processes.find(t->second.process); processes && p != archive.processes.end())
        thread = p->second.name + " / " + thread;
    }
    table.add_row({time_text(w.total_ns), percent(w.total_ns, w.span_ns), std::to_string(w.count),
                   time_text(w.count ? w.total_ns / w.count : 0), thread});
  }
  table.print(out);
  if (rows.size() > top) out << "  … and " << rows.size() - top << " more threads\n";
}

}  // namespace

void print_openmp_summary(std::ostream& out, const OpenMpStats& stats, size_t top) {
  if (stats.empty()) return;
  using A = Table::Align;
  if (!stats.parallel_regions().empty()) {
    out << "\nOpenMP parallel regions (a region's time is its longest thread's; Avg: a thread's time in one\n"
           "call; Threads: its largest team, one process's; Imbalance: max / mean of a team's threads' work,\n"
           "its time outside barriers and other waits, the most uneven process's)\n";
    std::vector<std::pair<std::string, const OpenMpStats::ParallelRegion*>> rows;
    uint64_t all = 0;
    for (const auto& [name, r] : stats.parallel_regions()) {
      rows.push_back({name, &r});
      all += r.total_ns();
    }
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.second->total_ns() != b.second->total_ns() ? a.second->total_ns() > b.second->total_ns()
                                                          : a.first < b.first;
    });
    Table table({{"Time%", A::kRight}, {"Time", A::kRight}, {"Calls", A::kRight}, {"Avg", A::kRight},
                 {"Threads", A::kRight}, {"Imbalance", A::kRight}, {"Barrier wait", A::kRight}, {"Name", A::kLeft}});
    for (size_t i = 0; i < rows.size() && i < top; ++i) {
      const OpenMpStats::ParallelRegion& r = *rows[i].second;
      char imbalance[32];
      std::snprintf(imbalance, sizeof imbalance, "%.2fx", r.imbalance());
      const uint64_t calls = r.calls();
      table.add_row({percent(r.total_ns(), all), time_text(r.total_ns()), std::to_string(calls),
                     time_text(r.thread_average_ns()), std::to_string(r.team_threads()), imbalance,
                     percent(r.barrier_ns(), r.thread_ns()), rows[i].first});
    }
    table.print(out);
    if (rows.size() > top) out << "  … and " << rows.size() - top << " more parallel regions\n";
  }
  if (!stats.waits().empty()) print_waits(out, stats, top);
  print_idle(out, stats, top);
}

}  // namespace hybridprof::report
