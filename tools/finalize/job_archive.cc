#include "finalize/job_archive.h"

#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "finalize/archive_check.h"
#include "finalize/definition_tree.h"
#include "finalize/finalizer.h"
#include "finalize/process_tables.h"
#include "finalize/result_file.h"
#include "otf2/otf2_error.h"

// OTF2's collective callbacks, over PMPI: the runtime's MPI wrappers must
// not see the profiler's own calls.
#define OTF2_MPI_USE_PMPI
#include <otf2/OTF2_MPI_Collectives.h>

namespace hybridprof::finalize {
namespace {

namespace fs = std::filesystem;
using otf2::ArchiveWriter;

// MPI counts and displacements are ints: a total past 2 GiB is refused
// (every rank that computes it throws alike).
std::vector<int> int_counts(const std::vector<uint64_t>& lengths, std::vector<int>* offsets) {
  std::vector<int> counts;
  uint64_t total = 0;
  for (uint64_t n : lengths) {
    counts.push_back(int(n));
    offsets->push_back(int(total));
    total += n;
  }
  if (total > uint64_t(INT_MAX)) throw std::runtime_error("more than 2 GiB for one rank to receive");
  return counts;
}

// Every rank's `mine`, in rank order (every rank sees the same lengths,
// so a total past 2 GiB throws on all alike).
std::vector<std::string> allgather(MPI_Comm comm, int size, const std::string& mine) {
  uint64_t length = mine.size();
  std::vector<uint64_t> lengths(static_cast<size_t>(size), 0);
  PMPI_Allgather(&length, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, comm);
  std::vector<int> offsets;
  const std::vector<int> counts = int_counts(lengths, &offsets);
  std::string all(size_t(offsets.back()) + lengths.back(), '\0');
  PMPI_Allgatherv(mine.data(), int(length), MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE, comm);
  std::vector<std::string> parts;
  for (int r = 0; r < size; ++r) parts.push_back(all.substr(size_t(offsets[size_t(r)]), lengths[size_t(r)]));
  return parts;
}

// Every rank's `mine` at rank 0, in rank order (elsewhere: none). Rank 0
// alone holds what all sent: the other ranks' memory does not grow with
// the job.
std::vector<std::string> gather_bytes(MPI_Comm comm, int rank, int size, const std::string& mine) {
  uint64_t length = mine.size();
  std::vector<uint64_t> lengths(rank == 0 ? size_t(size) : 0);
  PMPI_Gather(&length, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, 0, comm);
  std::vector<int> offsets;
  std::vector<int> counts;
  std::string all;
  int fits = 1;
  if (rank == 0) {
    try {
      counts = int_counts(lengths, &offsets);
      all.resize(size_t(offsets.back()) + lengths.back());
    } catch (const std::exception&) {
      fits = 0;  // every rank sends nothing: the parts come back empty, which their readers refuse
      counts.assign(size_t(size), 0);
      offsets.assign(size_t(size), 0);
    }
  }
  PMPI_Bcast(&fits, 1, MPI_INT, 0, comm);
  PMPI_Gatherv(mine.data(), fits ? int(length) : 0, MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE, 0,
               comm);
  std::vector<std::string> parts;
  for (int r = 0; rank == 0 && r < size; ++r)
    parts.push_back(fits ? all.substr(size_t(offsets[size_t(r)]), lengths[size_t(r)]) : std::string());
  return parts;
}

// Rank 0's parts[r] at rank r.
std::string scatter_bytes(MPI_Comm comm, int rank, int size, const std::vector<std::string>& parts) {
  std::vector<uint64_t> lengths(size_t(size), 0);
  std::string all;
  std::vector<int> counts, offsets;
  if (rank == 0) {
    for (int r = 0; r < size && size_t(r) < parts.size(); ++r) lengths[size_t(r)] = parts[size_t(r)].size();
    try {
      counts = int_counts(lengths, &offsets);
      for (int r = 0; r < size && size_t(r) < parts.size(); ++r) all += parts[size_t(r)];
    } catch (const std::exception&) {  // every rank gets nothing, which its reader refuses
      lengths.assign(size_t(size), 0);
      counts.assign(size_t(size), 0);
      offsets.assign(size_t(size), 0);
      all.clear();
    }
  }
  uint64_t length = 0;
  PMPI_Scatter(lengths.data(), 1, MPI_UINT64_T, &length, 1, MPI_UINT64_T, 0, comm);
  std::string mine(length, '\0');
  PMPI_Scatterv(all.data(), counts.data(), offsets.data(), MPI_BYTE, mine.data(), int(length), MPI_BYTE, 0, comm);
  return mine;
}

class MpiCollective final : public ArchiveWriter::Collective {
 public:
  MpiCollective(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}

  void install(OTF2_Archive* archive) override {
    otf2::detail::check(OTF2_MPI_Archive_SetCollectiveCallbacks(archive, comm_, MPI_COMM_NULL),
                        "OTF2_MPI_Archive_SetCollectiveCallbacks");
  }
  bool is_master() const override { return rank_ == 0; }
  void reduce(std::vector<uint64_t>& values, Reduce op) override {
    const MPI_Op mpi_op = op == Reduce::kSum ? MPI_SUM : op == Reduce::kMin ? MPI_MIN : MPI_MAX;
    if (PMPI_Allreduce(MPI_IN_PLACE, values.data(), int(values.size()), MPI_UINT64_T, mpi_op, comm_) != MPI_SUCCESS)
      throw std::runtime_error("MPI_Allreduce failed");
  }

  uint32_t writers() const override { return uint32_t(size_); }
  uint32_t writer() const override { return uint32_t(rank_); }
  std::vector<std::string> gather(const std::string& mine) override { return gather_bytes(comm_, rank_, size_, mine); }
  std::string scatter(const std::vector<std::string>& parts) override {
    return scatter_bytes(comm_, rank_, size_, parts);
  }

  // How many ranks say they failed.
  uint64_t failures(bool failed) {
    std::vector<uint64_t> n{failed ? 1u : 0u};
    reduce(n, Reduce::kSum);
    return n[0];
  }

 private:
  MPI_Comm comm_;
  int rank_, size_;
};

// Point to point over PMPI: the length, then the bytes (none past 2 GiB,
// an MPI count's limit: recv_bytes is false then, on both sides alike).
constexpr uint64_t kTooLong = UINT64_MAX;
void send_bytes(MPI_Comm comm, int to, int tag, const std::string& bytes) {
  uint64_t n = bytes.size() <= size_t(INT_MAX) ? bytes.size() : kTooLong;
  PMPI_Send(&n, 1, MPI_UINT64_T, to, tag, comm);
  if (n != kTooLong) PMPI_Send(bytes.data(), int(n), MPI_BYTE, to, tag, comm);
}
bool recv_bytes(MPI_Comm comm, int from, int tag, std::string* bytes) {
  uint64_t n = 0;
  PMPI_Recv(&n, 1, MPI_UINT64_T, from, tag, comm, MPI_STATUS_IGNORE);
  if (n == kTooLong) return false;
  bytes->assign(n, '\0');
  PMPI_Recv(bytes->data(), int(n), MPI_BYTE, from, tag, comm, MPI_STATUS_IGNORE);
  return true;
}
// Rank 0's `bytes` on every rank (false: over 2 GiB, everywhere alike).
bool broadcast_bytes(MPI_Comm comm, std::string* bytes) {
  uint64_t n = bytes->size() <= size_t(INT_MAX) ? bytes->size() : kTooLong;
  PMPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
  if (n == kTooLong) return false;
  bytes->resize(n);
  PMPI_Bcast(bytes->data(), int(n), MPI_BYTE, 0, comm);
  return true;
}

// The ranks' calling contexts unified up a binomial tree
// (definition_tree.h): in round k a rank r with r mod 2^(k+1) == 2^k sends
// its subtree's tables to r - 2^k, which merges them into its own (its own
// entries keep their indices); rank 0 then holds the job's tables and
// sends each child the map from the child's subtree to the job's, down the
// same tree; last, rank 0 broadcasts the job's tables. A rank holds its
// subtree's tables meanwhile, then the job's: for ranks of one program
// about one rank's, however many ranks there are. Every rank makes every
// call whatever arrives, so a rank that cannot read what it got sets
// `*failed` and the ranks give up together after.
struct UnifiedContexts {
  tree::Definitions job;  // the job's tables, the same on every rank
  tree::Map own;          // this rank's tables (given) to the job's
  uint64_t job_bytes = 0;
};
UnifiedContexts unify_contexts(MPI_Comm comm, int rank, int size, tree::Definitions subtree, bool* failed) {
  constexpr int kTablesTag = 0x6870, kMapTag = 0x6871;
  std::vector<std::pair<int, tree::Map>> children;  // each child, and its subtree's map into this one's
  int parent = -1;
  for (int step = 1; step < size; step *= 2) {
    if (rank % (2 * step) == step) {
      parent = rank - step;
      std::string bytes;
      try {
        bytes = serialize_tables(std::move(subtree));
      } catch (const std::exception&) {
        *failed = true;  // sent empty: the parent fails too
      }
      send_bytes(comm, parent, kTablesTag, bytes);
      break;
    }
    if (rank + step >= size) continue;
    std::string bytes;
    tree::Definitions child;
    tree::Map map;
    try {
      if (recv_bytes(comm, rank + step, kTablesTag, &bytes) && parse_tables(bytes, &child))
        map = tree::merge_into(subtree, child);
      else
        *failed = true;
    } catch (const std::exception&) {
      *failed = true;
    }
    children.emplace_back(rank + step, std::move(map));
  }
  UnifiedContexts u;
  std::string bytes;
  try {
    if (parent < 0) {
      u.own = tree::identity(subtree);
    } else if (!recv_bytes(comm, parent, kMapTag, &bytes) || !parse_map(bytes, &u.own)) {
      *failed = true;
    }
  } catch (const std::exception&) {
    *failed = true;
  }
  for (auto& [child, map] : children) {
    bytes.clear();
    try {
      if (!*failed) bytes = serialize_map(tree::compose(map, u.own));
    } catch (const std::exception&) {
      *failed = true;
    }
    send_bytes(comm, child, kMapTag, bytes);  // empty: the child fails too
  }
  bytes.clear();
  try {
    if (rank == 0 && !*failed) bytes = serialize_tables(std::move(subtree));
  } catch (const std::exception&) {
    *failed = true;
  }
  subtree = {};
  if (!broadcast_bytes(comm, &bytes) || !parse_tables(bytes, &u.job)) *failed = true;
  u.job_bytes = bytes.size();
  return u;
}

// The rank of the node that names the library at `path` (FNV-1a: the same
// on every rank).
int owner_of(const std::string& path, int node_size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : path) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return int(h % uint64_t(node_size));
}

// This process's children that have not ended (zombies have).
std::vector<uint64_t> running_children() {
  std::vector<uint64_t> children;
  const std::string self = std::to_string(getpid());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const size_t end_of_comm = stat.rfind(')');
    if (end_of_comm == std::string::npos) continue;
    std::istringstream rest(stat.substr(end_of_comm + 1));
    std::string state, ppid;
    if (rest >> state >> ppid && ppid == self && state != "Z") children.push_back(std::stoull(pid));
  }
  return children;
}

// This rank's raw data: every process image in its directory, each ended,
// and none still to come (a child that runs: its stream may not even exist
// yet, if the child was never scheduled since it was forked). Read, not
// yet symbolized.
std::string read_own(const std::string& rank_dir, std::vector<LocalProcess>* mine) {
  const std::vector<uint64_t> children = running_children();
  const std::vector<std::string> files = raw_files(rank_dir);
  std::vector<std::string> skipped;
  *mine = read_raw_processes(files, &skipped);
  if (!skipped.empty()) return skipped.front();
  if (mine->empty()) return "no raw data in " + rank_dir + "/raw";
  for (const auto& p : *mine) {
    if (!p.raw.end) return "process " + std::to_string(p.raw.begin->pid) + " has not ended (" + p.raw.path + ")";
  }
  if (!children.empty()) return "process " + std::to_string(children.front()) + ", a child of this rank, still runs";
  return {};
}

// The ranks of one node name each library once between them: each sends
// the others what its processes ask about, and names (into the symbol
// cache) the libraries that fall to it, every rank's addresses at once;
// the ranks then find their names there. Nothing without a symbol cache.
// Collective over `comm`: every rank calls it, whatever it read (`mine`
// may be empty); nothing in it throws past the MPI calls.
void name_once_per_node(MPI_Comm comm, const std::vector<LocalProcess>& mine, Result* symbols) {
  // Decided together: a rank that saw no cache (no HOME) and went its own
  // way would leave the others waiting in the node's collectives.
  int enabled = symbol_cache_enabled() ? 1 : 0;
  if (PMPI_Allreduce(MPI_IN_PLACE, &enabled, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS || !enabled) return;
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) != MPI_SUCCESS) return;
  int node_rank = 0, node_size = 1;
  PMPI_Comm_rank(node, &node_rank);
  PMPI_Comm_size(node, &node_size);
  if (node_size > 1) {
    std::string asked;
    try {
      SymbolQueries queries;
      for (const auto& p : mine) add_symbol_queries(p.raw, &queries);
      asked = serialize_queries(std::move(queries));
    } catch (const std::exception&) {
      asked.clear();  // this rank's addresses are named by itself later
    }
    std::vector<std::string> all;
    try {
      all = allgather(node, node_size, asked);
    } catch (const std::exception&) {
      all.clear();  // every rank sees the same total: all give up together
    }
    try {
      SymbolQueries mine_to_name;
      for (const std::string& bytes : all) {
        SymbolQueries q;
        if (!parse_queries(bytes, &q)) continue;
        for (auto& [kind, to] : {std::pair{&q.frames, &mine_to_name.frames}, {&q.statements, &mine_to_name.statements}})
          for (auto& [path, addresses] : *kind)
            if (owner_of(path, node_size) == node_rank) (*to)[path].insert(addresses.begin(), addresses.end());
      }
      name_in_cache(mine_to_name, &symbols->warnings, symbols);
    } catch (const std::exception&) {
      // Not named here: the ranks that ask name it themselves.
    }
    PMPI_Barrier(node);  // every library named before any rank looks
  }
  PMPI_Comm_free(&node);
}

// Rank 0 moves the finished archive from `staging` into `job_dir`, the anchor last.
void move_into_place(const fs::path& staging, const fs::path& job_dir, bool enter_leave, Result* result) {
  std::vector<std::string> parts{"traces", "traces.def"};
  if (enter_leave) parts.push_back("enter-leave");
  parts.push_back("traces.otf2");
  for (const auto& part : parts) fs::rename(staging / part, job_dir / part);
  fs::remove_all(staging);
  result->anchor = (job_dir / "traces.otf2").string();
  if (enter_leave) result->enter_leave_anchor = (job_dir / "enter-leave" / "traces.otf2").string();
}

// Returns "" when written, else why not (prefixed "rank N: " when it is this rank's own reason).
std::string write_job_archive(MPI_Comm comm, const std::string& job_dir, const std::string& rank_dir,
                              bool enter_leave) {
  int rank = 0, size = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  MpiCollective collective(comm, rank, size);
  const fs::path staging = fs::path(job_dir) / ".job-archive";
  // Made by rank 0; a rank that does not see it has another file system at
  // JOB (a node-local path), and its part would never reach the archive.
  const fs::path marker = staging / "made-by-rank-0";
  auto give_up = [&](const std::string& own, uint64_t failed) {
    if (rank == 0) {
      std::error_code ec;
      fs::remove_all(staging, ec);
    }
    if (!own.empty()) return "rank " + std::to_string(rank) + ": " + own;
    return std::to_string(failed) + " rank(s) could not take part";
  };

  // Each phase's time on this rank, ms (Result::phase_*).
  using Clock = std::chrono::steady_clock;
  Clock::time_point phase_start = Clock::now();
  const auto phase_done = [&]() -> uint64_t {
    const Clock::time_point now = Clock::now();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - phase_start).count();
    phase_start = now;
    return uint64_t(ms);
  };
  Result own_result;  // this rank's part of the Result: its use of the symbol cache, its phases

  // 1. Each rank reads and symbolizes its own data; rank 0 prepares the
  // staging directory. All go on, or none.
  std::vector<LocalProcess> mine;
  std::string problem;
  try {
    problem = read_own(rank_dir, &mine);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (!problem.empty()) mine.clear();
  own_result.phase_read_ms = phase_done();
  name_once_per_node(comm, mine, &own_result);
  own_result.phase_node_naming_ms = phase_done();
  try {
    if (problem.empty()) {
      describe_processes(mine, {}, &own_result.warnings, &own_result);
    }
    if (problem.empty() && rank == 0) {
      if (fs::exists(fs::path(job_dir) / "traces.otf2")) {
        problem = "an archive exists already in " + job_dir;
      } else {
        fs::remove_all(staging);
        fs::create_directories(staging);
        std::ofstream(marker).put('\n');
        if (!fs::exists(marker)) problem = "cannot write in " + staging.string();
      }
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  own_result.phase_symbolize_ms = phase_done();
  if (const uint64_t failed = collective.failures(!problem.empty())) return give_up(problem, failed);
  std::error_code ec;  // between two agreements nothing may throw on one rank only
  if (!fs::exists(marker, ec))
    problem = "does not see what rank 0 made in " + job_dir + ": the job directory must be on a file system all ranks share";
  if (const uint64_t failed = collective.failures(!problem.empty())) return give_up(problem, failed);

  // 2. The calling contexts unify up a tree of ranks: every rank gets the
  // job's tables and where its processes' nodes went in them.
  std::vector<std::vector<uint32_t>> node_contexts;
  tree::Definitions own_tables;
  try {
    std::vector<const ProcessDefinitions*> definitions;
    for (const auto& p : mine) definitions.push_back(&p.definitions);
    own_tables = merged_context_tables(definitions, &node_contexts);
    own_result.context_bytes_rank_max = serialize_tables(own_tables).size();
  } catch (const std::exception& e) {
    problem = e.what();  // sends empty tables: its parent fails, and all give up below
  }
  bool unify_failed = !problem.empty();
  UnifiedContexts contexts = unify_contexts(comm, rank, size, std::move(own_tables), &unify_failed);
  own_result.context_bytes_job = contexts.job_bytes;
  try {
    if (!unify_failed)
      for (auto& nodes : node_contexts) map_contexts(contexts.own, &nodes);
  } catch (const std::exception&) {
    unify_failed = true;
  }
  if (const uint64_t failed = collective.failures(unify_failed))
    return give_up(problem.empty() && unify_failed ? "the job's calling contexts did not unify" : problem, failed);
  own_result.phase_unify_ms = phase_done();

  // 3. Rank 0 gets every process's other definitions (it defines them
  // all); every rank keeps its own, and their calling contexts stay home.
  std::vector<ProcessDefinitions> own;
  for (auto& p : mine) {
    std::vector<ContextNode>().swap(p.definitions.contexts);  // in the job's tables now
    own.push_back(p.definitions);
  }
  const std::string own_bytes = serialize(std::move(own));
  own_result.definitions_bytes_rank_max = own_bytes.size();
  std::vector<std::vector<ProcessDefinitions>> by_rank(rank == 0 ? static_cast<size_t>(size) : 0);
  {
    const std::vector<std::string> parts = gather_bytes(comm, rank, size, own_bytes);
    for (size_t r = 0; r < parts.size() && problem.empty(); ++r) {
      own_result.definitions_bytes_job += parts[r].size();
      if (r > 0 && !parse(parts[r], &by_rank[r])) problem = "the definitions of rank " + std::to_string(r) + " did not arrive whole";
    }
  }
  if (const uint64_t failed = collective.failures(!problem.empty())) return give_up(problem, failed);
  std::vector<ArchiveEntry> entries;
  for (size_t i = 0; i < mine.size(); ++i)
    entries.push_back({&mine[i].definitions, &mine[i].raw, &node_contexts[i], uint32_t(rank)});
  for (int r = 1; r < int(by_rank.size()); ++r)  // rank 0: the others' processes, streamed by their ranks
    for (const ProcessDefinitions& p : by_rank[size_t(r)]) entries.push_back({&p, nullptr, nullptr, uint32_t(r)});

  // 4. The archive: every rank its own threads' events, rank 0 the rest.
  Options options;
  options.directory = rank_dir;
  options.archive_directory = staging.string();
  options.enter_leave = enter_leave;
  options.written_by = "the " + std::to_string(size) + " ranks of the MPI job, at MPI_Finalize (at exit)";
  Result result;
  own_result.phase_exchange_ms = phase_done();
  try {
    result.warnings = own_result.warnings;  // this rank's (a damaged cache entry)
    write_archive(options, contexts.job, std::move(entries), &collective, &result);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  // Also a barrier: OTF2's close does not wait for the other writers'
  // files, and rank 0 moves the archive next.
  if (const uint64_t failed = collective.failures(!problem.empty())) return give_up(problem, failed);
  own_result.phase_write_ms = phase_done();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  own_result.rank_peak_rss_kib = uint64_t(usage.ru_maxrss);
  // The job's figures: summed, or the largest rank's. (Every rank reduces: a
  // failure here costs the figures, not the archive.)
  try {
    std::vector<uint64_t> sums{own_result.symbol_modules_cached, own_result.symbol_modules_read};
    std::vector<uint64_t> maxima{own_result.phase_read_ms,      own_result.phase_node_naming_ms,
                                 own_result.phase_symbolize_ms, own_result.phase_unify_ms,
                                 own_result.phase_exchange_ms,  own_result.phase_write_ms,
                                 own_result.rank_peak_rss_kib,  own_result.definitions_bytes_rank_max,
                                 own_result.context_bytes_rank_max, result.definitions_bytes_received_max};
    collective.reduce(sums, MpiCollective::Reduce::kSum);
    collective.reduce(maxima, MpiCollective::Reduce::kMax);
    result.symbol_modules_cached = sums[0];
    result.symbol_modules_read = sums[1];
    result.phase_read_ms = maxima[0];
    result.phase_node_naming_ms = maxima[1];
    result.phase_symbolize_ms = maxima[2];
    result.phase_unify_ms = maxima[3];
    result.phase_exchange_ms = maxima[4];
    result.phase_write_ms = maxima[5];
    result.rank_peak_rss_kib = maxima[6];
    result.definitions_bytes_rank_max = maxima[7];
    result.context_bytes_rank_max = maxima[8];
    result.definitions_bytes_received_max = maxima[9];
    result.definitions_bytes_job = own_result.definitions_bytes_job;  // rank 0's: what it gathered
    result.context_bytes_job = own_result.context_bytes_job;
  } catch (const std::exception&) {
  }

  // 5. Rank 0 moves it into place and leaves the launcher its Result.
  if (rank == 0) {
    if (const std::string incomplete = incomplete_archive_problem(staging.string()); !incomplete.empty())
      return "rank 0: the archive is incomplete: " + incomplete;
    try {
      move_into_place(staging, job_dir, enter_leave, &result);
    } catch (const std::exception& e) {
      return "rank 0: " + std::string(e.what());
    }
    const std::string result_path = (fs::path(job_dir) / kJobArchiveResult).string();
    if (!save_result(result_path, result)) return "rank 0: cannot write " + result_path;
  }
  return {};
}

}  // namespace
}  // namespace hybridprof::finalize

extern "C" int hybridprof_write_job_archive(const char* job_dir, const char* rank_dir, int enter_leave,
                                            char* message, size_t message_size) {
  std::string why;
  MPI_Comm comm = MPI_COMM_NULL;
  if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) {
    why = "MPI_Comm_dup failed";
  } else {
    try {
      why = hybridprof::finalize::write_job_archive(comm, job_dir, rank_dir, enter_leave != 0);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
      why = "unexpected error";  // nothing may cross into the runtime's C call
    }
    PMPI_Comm_free(&comm);
  }
  if (message && message_size) {
    std::strncpy(message, why.c_str(), message_size - 1);
    message[message_size - 1] = '\0';
  }
  return why.empty() ? 0 : 1;
}
