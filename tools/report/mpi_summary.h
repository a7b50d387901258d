// The MPI section of the report: time per MPI function across ranks (in the
// style of nvprof's summary), time in MPI per rank (load imbalance), and the
// bytes each rank pair exchanged point-to-point.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "otf2/archive_reader.h"

namespace hybridprof::report {

class MpiStats {
 public:
  explicit MpiStats(const otf2::Archive& archive);
  // Feed every region and MPI event, each location's in time order.
  void add(const otf2::RegionEvent&);
  void add(const otf2::MpiEvent&);
  void add(const otf2::SampleEvent&);  // samples only extend the rank's traced time

  struct Function {
    uint64_t calls = 0, total_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
    // Bytes its calls sent and received: a send's message, a receive's
    // (counted in the wait that completes it), a collective's send and
    // receive buffers on this rank.
    uint64_t sent = 0, received = 0;
  };
  struct Rank {
    uint64_t mpi_ns = 0, first_ns = UINT64_MAX, last_ns = 0;
  };
  const std::map<std::string, Function>& functions() const { return functions_; }
  const std::map<int, Rank>& ranks() const { return ranks_; }
  // The rank's traced time: from its first event to its last, less what
  // fell outside its capture windows (nothing was recorded there).
  uint64_t traced_ns(int rank) const;
  // (sender world rank, receiver world rank) -> bytes sent point-to-point.
  const std::map<std::pair<int, int>, uint64_t>& matrix() const { return matrix_; }
  bool empty() const { return functions_.empty(); }

 private:
  int rank_of(uint64_t location) const;
  void extend_time(uint64_t location, uint64_t timestamp);
  const otf2::Archive& archive_;
  std::map<uint32_t, int> rank_of_process_;
  std::map<int, uint32_t> process_of_rank_;
  struct Open { std::string name; uint64_t enter_ns; };
  std::map<uint64_t, std::vector<Open>> open_;  // per location: MPI calls in progress
  std::map<std::string, Function> functions_;
  std::map<int, Rank> ranks_;
  std::map<std::pair<int, int>, uint64_t> matrix_;
};

// `scope`: what the counted events cover ("all ranks", otf2::describe).
void print_mpi_summary(std::ostream&, const MpiStats&, size_t top, const std::string& scope);

}  // namespace hybridprof::report
