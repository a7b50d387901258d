// The OpenMP section of the report (in the style of nvprof's summary): per
// parallel region its calls, total and average time, its teams' size and
// how unevenly their threads worked (max / mean of each thread's time in it
// outside waits, within one process's team) and the share of its threads'
// time spent in barriers; then where threads waited: barriers, critical
// sections, locks, taskwaits; then how long each team's worker threads
// waited for work between parallel regions (OpenMP idle).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "otf2/archive_reader.h"

namespace hybridprof::report {

// Whether an OpenMP region of this name is a thread waiting for others
// (a barrier, a taskwait, a lock's or an ordered wait, a worker idle),
// not working.
bool is_openmp_wait(const std::string& region_name);

class OpenMpStats {
 public:
  explicit OpenMpStats(const otf2::Archive& archive) : archive_(archive) {}
  // Feed every region event and fork, each location's in time order.
  void add(const otf2::RegionEvent&);
  void add(const otf2::ForkJoinEvent&);

  // One thread's share of one parallel region (all its instances).
  struct ThreadShare {
    uint32_t process = 0;  // the thread's (archive's ThreadInfo; 0 when not known)
    uint64_t enters = 0, time_ns = 0, wait_ns = 0, barrier_ns = 0;
  };
  struct ParallelRegion {
    std::map<uint64_t, ThreadShare> threads;  // by location
    uint64_t forked = 0;                      // entered right after a fork: an instance each
    // Instances: the forks of it (inner regions of nested parallelism are
    // forked by several threads); without forks in the archive, the most
    // any thread entered it.
    uint64_t calls() const;
    uint64_t thread_average_ns() const;       // a thread's mean time in one instance
    uint64_t total_ns() const;                // the longest thread's time in it
    // A team is one process's threads: in an MPI job each rank forks its
    // own. The largest team that ran it, and the most uneven: per process,
    // max / mean of its threads' work (time outside waits), the highest.
    size_t team_threads() const;
    double imbalance() const;
    uint64_t thread_ns() const;               // summed over its threads
    uint64_t barrier_ns() const;
  };
  struct Wait {
    uint64_t count = 0, total_ns = 0;
  };
  const std::map<std::string, ParallelRegion>& parallel_regions() const { return parallel_; }
  const std::map<std::string, Wait>& waits() const { return waits_; }
  // A worker thread's time in the idle region (openmp_events.h), and its
  // time from its first OpenMP region to its last event.
  struct Idle {
    uint64_t count = 0, total_ns = 0, span_ns = 0;
  };
  std::map<uint64_t, Idle> idle() const;  // by location
  bool empty() const { return parallel_.empty() && waits_.empty() && idle_.empty(); }
  const otf2::Archive& archive() const { return archive_; }

 private:
  struct Open {
    uint32_t region;
    uint64_t enter_ns;
    uint64_t wait_ns = 0, barrier_ns = 0;  // a parallel region's, so far
  };
  const otf2::Archive& archive_;
  std::map<uint64_t, std::vector<Open>> open_;  // per location: OpenMP regions entered, not left
  std::map<uint64_t, bool> forked_;             // per location: forked a team, its region not yet entered
  std::map<std::string, ParallelRegion> parallel_;
  std::map<std::string, Wait> waits_;
  std::map<uint64_t, Wait> idle_;  // by location
  struct Span {
    uint64_t first_openmp = UINT64_MAX, last = 0;
  };
  std::map<uint64_t, Span> spans_;  // by location
};

void print_openmp_summary(std::ostream&, const OpenMpStats&, size_t top);

}  // namespace hybridprof::report
