#include "mpi_summary.h"

#include <algorithm>
#include <cstdio>

#include "otf2/capture_windows.h"
#include "table.h"

namespace hybridprof::report {
namespace {

std::string bytes_text(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1ull << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)bytes);
  return buf;
}

}  // namespace

MpiStats::MpiStats(const otf2::Archive& archive) : archive_(archive) {
  auto world = archive.comm_locations.find(otf2::Paradigm::kMpi);
  if (world == archive.comm_locations.end()) return;
  for (size_t rank = 0; rank < world->second.size(); ++rank) {
    auto it = archive.threads.find(world->second[rank]);
    if (it == archive.threads.end()) continue;
    rank_of_process_[it->second.process] = int(rank);
    process_of_rank_[int(rank)] = it->second.process;
  }
}

int MpiStats::rank_of(uint64_t location) const {
  auto t = archive_.threads.find(location);
  if (t == archive_.threads.end()) return -1;
  auto r = rank_of_process_.find(t->second.process);
  return r == rank_of_process_.end() ? -1 : r->second;
}

uint64_t MpiStats::traced_ns(int rank) const {
  const auto r = ranks_.find(rank);
  if (r == ranks_.end() || r->second.last_ns <= r->second.first_ns) return 0;
  const uint64_t first = r->second.first_ns, last = r->second.last_ns;
  const auto process = process_of_rank_.find(rank);
  if (process == process_of_rank_.end() || !otf2::has_capture_windows(archive_.processes.at(process->second)))
    return last - first;
  uint64_t inside = 0;
  for (const otf2::CaptureWindow& w : otf2::capture_windows_of(archive_.processes.at(process->second))) {
    const uint64_t from = std::max(w.from, first), to = std::min(w.to, last);
    if (to > from) inside += to - from;
  }
  return inside;
}

void MpiStats::extend_time(uint64_t location, uint64_t timestamp) {
  const int rank = rank_of(location);
  if (rank < 0) return;
  Rank& r = ranks_[rank];
  r.first_ns = std::min(r.first_ns, timestamp);
  r.last_ns = std::max(r.last_ns, timestamp);
}

void MpiStats::add(const otf2::SampleEvent& e) { extend_time(e.location, e.timestamp); }

void MpiStats::add(const otf2::RegionEvent& e) {
  const int rank = rank_of(e.location);
  extend_time(e.location, e.timestamp);
  auto region = archive_.regions.find(e.region);
  if (region == archive_.regions.end() || region->second.paradigm != otf2::Paradigm::kMpi) return;
  auto& open = open_[e.location];
  if (e.enter) {
    open.push_back({region->second.name, e.timestamp});
    return;
  }
  if (open.empty() || open.back().name != region->second.name) return;  // unmatched: ignored
  const uint64_t ns = e.timestamp - open.back().enter_ns;
  open.pop_back();
  Function& f = functions_[region->second.name];
  ++f.calls;
  f.total_ns += ns;
  f.min_ns = std::min(f.min_ns, ns);
  f.max_ns = std::max(f.max_ns, ns);
  if (rank >= 0 && open.empty()) ranks_[rank].mpi_ns += ns;
}

void MpiStats::add(const otf2::MpiEvent& e) {
  using K = otf2::MpiEventKind;
  uint64_t sent = 0, received = 0;
  switch (e.kind) {
    case K::kSend: case K::kIsend: sent = e.bytes; break;
    case K::kRecv: case K::kIrecv: received = e.bytes; break;
    case K::kCollectiveEnd: case K::kNonBlockingCollectiveComplete: sent = e.sent, received = e.received; break;
    default: break;
  }
  // Bytes go to the MPI call they happen in (a wait, for completions).
  auto open = open_.find(e.location);
  if ((sent || received) && open != open_.end() && !open->second.empty()) {
    Function& f = functions_[open->second.back().name];
    f.sent += sent;
    f.received += received;
  }
  if (e.kind != K::kSend && e.kind != K::kIsend) return;
  auto comm = archive_.comms.find(e.comm);
  const int from = rank_of(e.location);
  if (comm == archive_.comms.end() || from < 0) return;
  const int to = comm->second.self ? from
                 : e.peer < comm->second.members.size() ? int(comm->second.members[e.peer])
                                                             : -1;
  if (to >= 0) matrix_[{from, to}] += e.bytes;
}

void print_mpi_summary(std::ostream& out, const MpiStats& stats, size_t top, const std::string& scope) {
  if (stats.empty()) return;
  out << "\nMPI (" << scope << "; time inside each call, from its enter to its leave; bytes its calls sent and\n"
         "received: a receive's in the wait that completes it, a collective's send and receive buffers)\n";
  std::vector<std::pair<std::string, MpiStats::Function>> rows(stats.functions().begin(), stats.functions().end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns != b.second.total_ns ? a.second.total_ns > b.second.total_ns : a.first < b.first;
  });
  uint64_t all = 0;
  for (const auto& [name, f] : rows) all += f.total_ns;
  using A = Table::Align;
  Table table({{"Time%", A::kRight}, {"Time", A::kRight}, {"Calls", A::kRight}, {"Avg", A::kRight},
               {"Min", A::kRight}, {"Max", A::kRight}, {"Sent", A::kRight}, {"Received", A::kRight},
               {"Name", A::kLeft}});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const auto& [name, f] = rows[i];
    table.add_row({percent(f.total_ns, all), time_text(f.total_ns), std::to_string(f.calls),
                   time_text(f.calls ? f.total_ns / f.calls : 0), time_text(f.min_ns), time_text(f.max_ns),
                   f.sent ? bytes_text(f.sent) : "-", f.received ? bytes_text(f.received) : "-", name});
  }
  table.print(out);
  if (rows.size() > top) out << "  … and " << rows.size() - top << " more MPI functions\n";

  out << "\nTime in MPI per rank (of the rank's traced time)\n";
  Table ranks({{"Rank", A::kRight}, {"In MPI", A::kRight}, {"Share", A::kRight}, {"Traced", A::kRight}});
  uint64_t max_ns = 0, sum_ns = 0;
  for (const auto& [rank, r] : stats.ranks()) {
    const uint64_t traced = stats.traced_ns(rank);
    ranks.add_row({std::to_string(rank), time_text(r.mpi_ns), percent(r.mpi_ns, traced), time_text(traced)});
    max_ns = std::max(max_ns, r.mpi_ns);
    sum_ns += r.mpi_ns;
  }
  ranks.print(out);
  if (!stats.ranks().empty() && sum_ns > 0) {
    char line[96];
    std::snprintf(line, sizeof line, "  imbalance: the busiest rank spends %.2fx the mean time in MPI\n",
                  double(max_ns) * double(stats.ranks().size()) / double(sum_ns));
    out << line;
  }

  if (stats.matrix().empty()) return;
  out << "\nPoint-to-point bytes sent (row: sender rank, column: receiver rank)\n";
  int n = 0;
  for (const auto& [pair, bytes] : stats.matrix()) n = std::max({n, pair.first + 1, pair.second + 1});
  if (n > 32) {
    out << "  " << n << " ranks: too many to show; the largest pairs:\n";
    std::vector<std::pair<uint64_t, std::pair<int, int>>> pairs;
    for (const auto& [pair, bytes] : stats.matrix()) pairs.push_back({bytes, pair});
    std::sort(pairs.rbegin(), pairs.rend());
    for (size_t i = 0; i < pairs.size() && i < top; ++i)
      out << "  " << pairs[i].second.first << " -> " << pairs[i].second.second << ": " << bytes_text(pairs[i].first) << '\n';
    return;
  }
  std::vector<Table::Column> columns{{"", A::kRight}};
  for (int to = 0; to < n; ++to) columns.push_back({std::to_string(to), A::kRight});
  Table matrix(columns);
  for (int from = 0; from < n; ++from) {
    std::vector<std::string> row{std::to_string(from)};
    for (int to = 0; to < n; ++to) {
      auto it = stats.matrix().find({from, to});
      row.push_back(it == stats.matrix().end() ? "." : bytes_text(it->second));
    }
    matrix.add_row(row);
  }
  matrix.print(out);
}

}  // namespace hybridprof::report
