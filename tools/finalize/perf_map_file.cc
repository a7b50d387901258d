#include "finalize/perf_map_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "finalize/finalizer.h"

namespace hybridprof::finalize {
namespace {

namespace fs = std::filesystem;

// File times come from the kernel's coarse clock, up to a tick (≤ 10 ms)
// behind the clock the runtime read at the process's start: a map written
// in the process's first milliseconds may look that much older.
constexpr uint64_t kCoarseClockSlackNs = 20'000'000;

std::string this_host() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

bool stat_file(const std::string& path, struct stat* st) { return stat(path.c_str(), st) == 0 && S_ISREG(st->st_mode); }

// A map in /tmp, where anyone may put one: as perf takes it, a file (not a
// symbolic link to, say, a secret of ours) of this user's or root's.
bool stat_system_map(const std::string& path, struct stat* st) {
  return lstat(path.c_str(), st) == 0 && S_ISREG(st->st_mode) && (st->st_uid == geteuid() || st->st_uid == 0);
}

uint64_t mtime_ns(const struct stat& st) { return uint64_t(st.st_mtim.tv_sec) * 1000000000ull + uint64_t(st.st_mtim.tv_nsec); }

// Copies `from` to `to` whole or not at all (a reader never sees half a copy).
bool copy_whole(const std::string& from, const std::string& to, std::string* why) {
  const std::string partial = to + ".partial";
  std::error_code ec;
  // A killed finalizer's is removed; then created anew (O_EXCL), following no planted link.
  fs::remove(partial, ec);
  fs::copy_file(from, partial, fs::copy_options::none, ec);
  if (!ec) fs::rename(partial, to, ec);
  if (!ec) return true;
  *why = ec.message();
  fs::remove(partial, ec);
  return false;
}

// The host and pid a stream's name gives: <host>.<pid>.<start>.hpr (the
// host may hold dots itself).
bool host_and_pid_of_stream(const std::string& path, std::string* host, uint64_t* pid) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() <= 4) return false;
  const size_t start_dot = name.rfind('.', name.size() - 5);  // before <start>
  if (start_dot == std::string::npos || start_dot == 0) return false;
  const size_t pid_dot = name.rfind('.', start_dot - 1);
  if (pid_dot == std::string::npos || pid_dot + 1 >= start_dot) return false;
  const std::string digits = name.substr(pid_dot + 1, start_dot - pid_dot - 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 19) return false;
  *host = name.substr(0, pid_dot);
  *pid = std::stoull(digits);
  return true;
}

}  // namespace

std::string kept_perf_map_path(const std::string& stream_path) {
  const std::string base = stream_path.size() > 4 && stream_path.compare(stream_path.size() - 4, 4, ".hpr") == 0
                               ? stream_path.substr(0, stream_path.size() - 4)
                               : stream_path;
  return base + ".perf.map";
}

std::string system_perf_map_path(uint64_t pid) { return "/tmp/perf-" + std::to_string(pid) + ".map"; }

std::string find_perf_map(const RawProcess& p, std::vector<std::string>* warnings) {
  const std::string kept = kept_perf_map_path(p.path);
  struct stat st;
  if (stat_file(kept, &st)) return kept;
  // /tmp is per host: a map there names this host's process with that pid.
  if (!p.begin || p.begin->hostname != this_host()) return "";
  const std::string system = system_perf_map_path(p.begin->pid);
  if (!stat_system_map(system, &st)) return "";
  if (mtime_ns(st) + kCoarseClockSlackNs < p.begin->realtime_ns) return "";  // an earlier process's
  std::string why;
  if (copy_whole(system, kept, &why)) return kept;
  warnings->push_back("process " + std::to_string(p.begin->pid) + ": cannot keep " + system + " as " + kept + " (" +
                      why + "); its JIT code was named from " + system + " this time only");
  return system;
}

std::vector<std::string> remove_kept_system_perf_maps(const std::string& directory) {
  std::vector<std::string> removed;
  const std::string host = this_host();
  for (const auto& stream : raw_files(directory)) {
    std::string stream_host;
    uint64_t pid = 0;
    struct stat kept, system;
    if (!host_and_pid_of_stream(stream, &stream_host, &pid) || stream_host != host) continue;
    const std::string system_path = system_perf_map_path(pid);
    if (!stat_file(kept_perf_map_path(stream), &kept) || !stat_system_map(system_path, &system)) continue;
    // Unchanged since the copy: not a later process's with the same pid.
    if (system.st_size != kept.st_size || mtime_ns(system) > mtime_ns(kept)) continue;
    if (unlink(system_path.c_str()) == 0) removed.push_back(system_path);
  }
  return removed;
}

}  // namespace hybridprof::finalize
