// The report's section of user ranges (NVTX's, and any region of paradigm
// user), in the style of nvprof's NVTX summary: per range, nested under
// the ranges it ran in (on its thread), its calls and total, average,
// shortest and longest time.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "otf2/archive_reader.h"

namespace hybridprof::report {

class RangeStats {
 public:
  explicit RangeStats(const otf2::Archive& archive) : archive_(archive) {}
  // Feed every region event, each location's in time order.
  void add(const otf2::RegionEvent&);

  struct Range {
    uint64_t calls = 0, total_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
  };
  // By path: the names of the ranges it ran in, outermost first, then its own.
  const std::map<std::vector<std::string>, Range>& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }

 private:
  struct Open {
    std::string name;
    uint64_t enter_ns;
  };
  const otf2::Archive& archive_;
  std::map<uint64_t, std::vector<Open>> open_;  // per location
  std::map<std::vector<std::string>, Range> ranges_;
};

void print_range_summary(std::ostream&, const RangeStats&, size_t top);

}  // namespace hybridprof::report
