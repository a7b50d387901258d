// The report's GPU section, in nvprof's summary style: per kernel name and
// per copy or memset kind, its share of the GPU time and its total, calls,
// average, shortest and longest time; the CUDA API calls the host threads
// made, likewise; and per device, the share of its time (from its first
// work to its last) that no stream of it was busy, and how long its work
// waited from the start of the call that launched it to its own start.
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
  explicit GpuStats(const otf2::Archive& archive);
  // Feed every region event, each location's in time order, and every
  // parameter event (launches and work carry their correlation id).
  void add(const otf2::RegionEvent&);
  void add(const otf2::ParameterEvent&);

  struct Timing {
    uint64_t calls = 0, total_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
    void add(uint64_t ns);
  };
  struct Device {
    std::string name;
    uint64_t busy_ns = 0, span_ns = 0;  // the union of its streams' work; first start to last end
    // Launch to start, over its work whose launching call is in the archive.
    uint64_t launched = 0, unlaunched = 0;  // work with and without its call
    uint64_t latency_median_ns = 0, latency_p95_ns = 0, latency_max_ns = 0;
  };
  const std::map<std::string, Timing>& work() const { return work_; }  // kernels, copies, memsets: on a device
  const std::map<std::string, Timing>& api() const { return api_; }    // CUDA calls on host threads
  const std::map<std::string, Timing>& syncs() const { return syncs_; }  // the host waiting on a context's work
  std::vector<Device> devices() const;
  bool empty() const { return work_.empty() && api_.empty() && syncs_.empty(); }

 private:
  const otf2::Archive& archive_;
  std::map<uint64_t, std::vector<std::pair<uint32_t, uint64_t>>> open_;  // per location: region, enter time
  std::map<std::string, Timing> work_, api_, syncs_;
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> intervals_;  // per device: its work's [begin, end)
  // Correlation ids, keyed by process and id (ids are a process's own).
  uint32_t correlation_parameter_ = otf2::kUndefined;
  std::vector<std::pair<uint64_t, uint64_t>> launches_;  // key, the call's start
  struct Started {
    uint64_t key, start_ns;
    uint32_t device;
  };
  std::vector<Started> started_;  // work, as it started
};

void print_gpu_summary(std::ostream&, const GpuStats&, size_t top);

}  // namespace hybridprof::report
