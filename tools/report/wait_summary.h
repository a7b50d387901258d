// Where the wall time went, not only the CPU time: per thread, its CPU time
// outside traced waits (its samples there times the sampling period), its
// traced waits by kind (MPI
// calls, OpenMP waits, CUDA synchronization, OS-runtime waits by call
// family: lock, read/write, GIL...) and what neither accounts for (time
// runnable but not running, or waits no adapter traces); per process the
// same summed; and the "Waits" section: the call paths that waited
// longest.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "otf2/archive_reader.h"

namespace hybridprof::report {

class WaitStats {
 public:
  explicit WaitStats(const otf2::Archive& archive);
  // Feed every sample and region event, each location's in time order.
  void add(const otf2::SampleEvent&);
  void add(const otf2::RegionEvent&);

  struct Thread {
    uint64_t samples = 0;  // outside traced waits (those inside are the waits' time: MPI's polling)
    uint64_t first_ns = UINT64_MAX, last_ns = 0;  // its first and last event
    std::map<std::string, uint64_t> waits_ns;     // by kind ("MPI", "OS: lock"...)
    uint64_t wall_ns() const { return last_ns > first_ns ? last_ns - first_ns : 0; }
    uint64_t waiting_ns() const;
  };
  struct Path {
    std::string kind;
    uint64_t calls = 0, total_ns = 0, max_ns = 0;
  };
  const std::map<uint64_t, Thread>& threads() const { return threads_; }
  // By the wait's calling context (its enter's).
  const std::map<uint32_t, Path>& paths() const { return paths_; }
  // ns of CPU time a sample stands for; 0 when the period is not a time
  // (a count of hardware events).
  double ns_per_sample() const { return ns_per_sample_; }
  bool empty() const { return paths_.empty(); }
  const otf2::Archive& archive() const { return archive_; }

  // The kind of wait a region is, or "" for none (work, or untraced).
  static std::string kind_of(const otf2::RegionInfo&);

 private:
  const otf2::Archive& archive_;
  double ns_per_sample_ = 0;
  struct Open {
    uint32_t region;
    uint64_t enter_ns;
    uint32_t context;
    bool wait;  // the outermost wait open: counted at its leave
  };
  std::map<uint64_t, std::vector<Open>> open_;  // per location
  std::map<uint64_t, Thread> threads_;
  std::map<uint32_t, Path> paths_;
  std::map<uint32_t, std::string> kinds_;  // region -> kind_of, as met
};

void print_wall_time(std::ostream&, const WaitStats&, size_t top);
void print_waits(std::ostream&, const WaitStats&, size_t top, bool full_paths);

}  // namespace hybridprof::report
