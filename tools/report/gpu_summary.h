// The report's GPU section, in nvprof's summary style: per kernel name and
// per copy or memset kind, its share of the GPU time and its total, calls,
// average, shortest and longest time; the CUDA API calls the host threads
// made, likewise; and per device, the share of its time (from its first
// work to its last) that no stream of it was busy.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "otf2/archive_reader.h"

namespace hybridprof::report {

class GpuStats {
 public:
  explicit GpuStats(const otf2::Archive& archive) : archive_(archive) {}
  // Feed every region event, each location's in time order.
  void add(const otf2::RegionEvent&);

  struct Timing {
    uint64_t calls = 0, total_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
    void add(uint64_t ns);
  };
  struct Device {
    std::string name;
    uint64_t busy_ns = 0, span_ns = 0;  // the union of its streams' work; first start to last end
  };
  const std::map<std::string, Timing>& work() const { return work_; }  // kernels, copies, memsets: on a device
  const std::map<std::string, Timing>& api() const { return api_; }    // CUDA calls on host threads
  std::vector<Device> devices() const;
  bool empty() const { return work_.empty() && api_.empty(); }

 private:
  const otf2::Archive& archive_;
  std::map<uint64_t, std::vector<std::pair<uint32_t, uint64_t>>> open_;  // per location: region, enter time
  std::map<std::string, Timing> work_, api_;
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> intervals_;  // per device: its work's [begin, end)
};

void print_gpu_summary(std::ostream&, const GpuStats&, size_t top);

}  // namespace hybridprof::report
