// CUPTI's activity records as the archive's GPU timeline: each stream a
// location of its device (Drain::add_location), each kernel, copy and
// memset a region on it from its start to its end, hung under the API
// call that launched it (trace/device_work.h), with its launch
// configuration or bytes as an event of the "cuda" set (cuda_events.h);
// synchronizations a region on their context's synchronization location;
// device and context records name the devices; overhead records and the
// records CUPTI dropped are counted and said at the end.
//
// Fed a completed buffer at a time (CUPTI's buffer-completed callback, on
// CUPTI's thread or at a flush), records as CUPTI lays them out: the
// tests build them from CUPTI's own structs, no GPU needed.
//
// Not the signal path: may lock and allocate. Thread-safe.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cuda/cuda_events.h"
#include "trace/device_work.h"
#include "trace/stream_region_table.h"

namespace hybridprof {
class Drain;
}

namespace hybridprof::cuda {

// CUPTI's timestamps to the host's CLOCK_MONOTONIC: host = CUPTI + offset.
// 0 when CUPTI reads the host's clock itself (cuptiActivityRegisterTimestampCallback).
struct GpuClock {
  int64_t offset_ns = 0;
  uint64_t to_host(uint64_t cupti_ns) const { return uint64_t(int64_t(cupti_ns) + offset_ns); }
};

// A driver API call's correlation id made inside a runtime API call, to
// the runtime call's: work may name either. Thread-safe; bounded.
class CorrelationAliases {
 public:
  void add(uint32_t inner, uint32_t outer);
  uint32_t resolve(uint32_t id) const;

 private:
  static constexpr size_t kMax = 1u << 16;
  mutable std::mutex mutex_;
  std::unordered_map<uint32_t, uint32_t> outer_;
  std::vector<uint32_t> order_;  // a ring of the ids added, to forget the oldest
  size_t next_ = 0;
};

class ActivityTranslator {
 public:
  struct Counts {
    uint64_t kernels = 0, memcpys = 0, memsets = 0, syncs = 0;
    uint64_t overheads = 0, overhead_ns = 0;  // CUPTI's own overhead records, their time
    uint64_t untimed = 0;   // records without timestamps (CUPTI could not collect them)
    uint64_t other = 0;     // records of kinds not translated
    uint64_t dropped = 0;   // records CUPTI dropped (no buffer space)
  };

  ActivityTranslator(Drain& drain, GpuClock clock, const CorrelationAliases* aliases = nullptr)
      : drain_(drain), clock_(clock), aliases_(aliases) {}

  // One completed buffer: `next()` returns its records one by one, then
  // null; `dropped` records of it were lost.
  template <typename Next>
  void translate_buffer(Next&& next, uint64_t dropped) {
    std::lock_guard lock(mutex_);
    while (const CUpti_Activity* record = next()) add_locked(*record);
    counts_.dropped += dropped;
    flush_locked();
  }
  // The streams end at `now_ns` (CLOCK_MONOTONIC); returns what was
  // counted, for the notice. Later buffers start them again.
  Counts end(uint64_t now_ns);
  Counts counts() const;
  // A fork child's stream is new: forget the parent's locations.
  void forget_locations();
  // A device's model ("NVIDIA H100 80GB HBM3, sm_90") as the host learned
  // it: CUPTI's own device record may come after the device's first work
  // (in another thread's buffer), too late to name its streams' group.
  void name_device(uint32_t device, const std::string& model);

  // Region names, as nvprof names them.
  static std::string memcpy_name(uint32_t copy_kind);
  static std::string sync_name(uint32_t sync_type);

 private:
  void add_locked(const CUpti_Activity& record);
  void flush_locked();
  // The location of a stream, or of a context's synchronizations, begun
  // at `start` (CUPTI's clock) when new.
  uint32_t stream_location_locked(uint32_t device, uint32_t context, uint32_t stream, uint64_t start);
  uint32_t sync_location_locked(uint32_t context, uint64_t start);
  std::string device_name_locked(uint32_t device);
  uint32_t launch_key(uint32_t correlation) const;
  // `event`, of `kind`, at its start; none when null.
  void add_work_locked(uint32_t location, uint64_t start, uint64_t end, uint32_t region, uint32_t correlation,
                       EventKind kind, const EventPayload* event);

  Drain& drain_;
  const GpuClock clock_;
  const CorrelationAliases* aliases_;
  mutable std::mutex mutex_;  // guards all below
  Counts counts_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> streams_;  // (device, context, stream) -> location
  std::map<uint32_t, uint32_t> sync_locations_;  // context -> location
  std::map<uint32_t, uint32_t> context_devices_;  // context -> device
  std::map<uint32_t, std::string> device_names_;  // device -> its group's name, fixed at its first stream
  std::map<uint32_t, std::string> device_models_;  // device -> "NVIDIA H100 80GB HBM3, sm_90"
  std::unordered_map<const char*, uint32_t> kernel_regions_;  // CUPTI's name pointer -> region (this stream)
  uint64_t kernel_regions_stream_ = 0;
  std::vector<DeviceWork> batch_;  // the buffer's work, appended in time order at its end
};

// Region ids by name for CUDA's regions (kernels, copies, API calls), one
// per name in the process, defined in each raw stream at first use.
StreamRegionTable<std::string>& cuda_regions();
// The id of CUDA region `name`, its definition in `drain`'s stream at first use there.
uint32_t cuda_region(Drain& drain, const std::string& name);
// `kind`'s number in the process (trace/event_sets.h).
uint32_t cuda_event_kind(EventKind kind);

}  // namespace hybridprof::cuda
