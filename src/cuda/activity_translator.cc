#include "cuda/activity_translator.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "cuda/cuda_events.h"
#include "otf2/types.h"
#include "trace/drain.h"
#include "trace/event_sets.h"

namespace hybridprof::cuda {
namespace {

std::string demangled(const char* name) {
  if (name == nullptr) return "(unnamed kernel)";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

}  // namespace

StreamRegionTable<std::string>& cuda_regions() {
  static auto* table = new StreamRegionTable<std::string>();  // used until the process ends
  return *table;
}

uint32_t cuda_region(Drain& drain, const std::string& name) {
  return cuda_regions().id(name, [&](uint32_t id) {
    drain.append(raw::RegionDef{id, name, static_cast<uint32_t>(otf2::Paradigm::kCuda), 0, 0, {}});
  });
}

uint32_t cuda_event_kind(EventKind kind) {
  static const uint32_t base = register_event_set(kEventSetName, static_cast<uint32_t>(EventKind::kCount));
  return base + static_cast<uint32_t>(kind);
}

void CorrelationAliases::add(uint32_t inner, uint32_t outer) {
  std::lock_guard lock(mutex_);
  if (order_.size() < kMax) {
    order_.push_back(inner);
  } else {
    outer_.erase(order_[next_]);
    order_[next_] = inner;
    next_ = (next_ + 1) % kMax;
  }
  outer_[inner] = outer;
}

uint32_t CorrelationAliases::resolve(uint32_t id) const {
  std::lock_guard lock(mutex_);
  const auto it = outer_.find(id);
  return it == outer_.end() ? id : it->second;
}

std::string ActivityTranslator::memcpy_name(uint32_t copy_kind) {
  static const char* const kNames[] = {"", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  if (copy_kind == 0 || copy_kind >= std::size(kNames)) return "[CUDA memcpy]";
  return std::string("[CUDA memcpy ") + kNames[copy_kind] + "]";
}

std::string ActivityTranslator::sync_name(uint32_t sync_type) {
  switch (sync_type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "[CUDA sync: event]";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "[CUDA sync: stream wait event]";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "[CUDA sync: stream]";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "[CUDA sync: context]";
    default: return "[CUDA sync]";
  }
}

std::string ActivityTranslator::device_name_locked(uint32_t device) {
  auto [it, fresh] = device_names_.try_emplace(device);
  if (fresh) {
    it->second = "GPU " + std::to_string(device);
    if (const auto model = device_models_.find(device); model != device_models_.end())
      it->second += " (" + model->second + ")";
  }
  return it->second;
}

uint32_t ActivityTranslator::stream_location_locked(uint32_t device, uint32_t context, uint32_t stream, uint64_t start) {
  context_devices_.emplace(context, device);
  auto [it, fresh] = streams_.try_emplace({device, context, stream});
  if (fresh)
    it->second = drain_.add_location(raw::LocationKind::kDeviceStream, stream, "CUDA stream " + std::to_string(stream),
                                     device_name_locked(device), clock_.to_host(start));
  return it->second;
}

uint32_t ActivityTranslator::sync_location_locked(uint32_t context, uint64_t start) {
  auto [it, fresh] = sync_locations_.try_emplace(context);
  if (fresh) {
    const auto device = context_devices_.find(context);
    const std::string group = device != context_devices_.end() ? device_name_locked(device->second) : "GPU (context " + std::to_string(context) + ")";
    it->second = drain_.add_location(raw::LocationKind::kDeviceStream, context,
                                     "CUDA synchronization (context " + std::to_string(context) + ")", group,
                                     clock_.to_host(start));
  }
  return it->second;
}

uint32_t ActivityTranslator::launch_key(uint32_t correlation) const {
  return aliases_ ? aliases_->resolve(correlation) : correlation;
}

void ActivityTranslator::add_work_locked(uint32_t location, uint64_t start, uint64_t end, uint32_t region,
                                         uint32_t correlation, EventKind kind, const EventPayload* event) {
  DeviceWork w;
  w.location = location;
  w.begin_ns = clock_.to_host(start);
  w.end_ns = clock_.to_host(std::max(start, end));
  w.region = region;
  w.launch = correlation == 0 ? 0 : launch_key(correlation);
  if (event) {
    w.has_event = true;
    w.event_kind = cuda_event_kind(kind);
    w.event = *event;
    w.event.word[3] = w.launch;  // the id its call carries (a driver call's names its runtime call's)
  }
  batch_.push_back(w);
}

void ActivityTranslator::add_locked(const CUpti_Activity& record) {
  // CUPTI could not time it (start and end 0): counted, left out.
  const auto untimed = [&](uint64_t start, uint64_t end) { return start == 0 && end == 0 && ++counts_.untimed; };
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      if (untimed(k.start, k.end)) return;
      ++counts_.kernels;
      KernelShape shape;
      shape.grid[0] = uint32_t(k.gridX), shape.grid[1] = uint32_t(k.gridY), shape.grid[2] = uint32_t(k.gridZ);
      shape.block[0] = uint32_t(k.blockX), shape.block[1] = uint32_t(k.blockY), shape.block[2] = uint32_t(k.blockZ);
      shape.registers = k.registersPerThread;
      shape.shared_memory = uint32_t(k.staticSharedMemory) + uint32_t(k.dynamicSharedMemory);
      shape.correlation = k.correlationId;
      const EventPayload payload = kernel_payload(shape);
      // CUPTI shares one name string among a kernel's records: demangle once.
      if (kernel_regions_stream_ != cuda_regions().stream()) {
        kernel_regions_.clear();
        kernel_regions_stream_ = cuda_regions().stream();
      }
      const uint32_t location = stream_location_locked(k.deviceId, k.contextId, k.streamId, k.start);
      auto [known, fresh] = kernel_regions_.try_emplace(k.name, 0);
      if (fresh) known->second = cuda_region(drain_, demangled(k.name));
      add_work_locked(location, k.start, k.end, known->second, k.correlationId, EventKind::kKernel, &payload);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(record);
      if (untimed(m.start, m.end)) return;
      ++counts_.memcpys;
      const EventPayload payload = memcpy_payload(m.bytes, m.copyKind, m.srcKind, m.dstKind, m.correlationId);
      const uint32_t location = stream_location_locked(m.deviceId, m.contextId, m.streamId, m.start);
      // A copy made through the runtime names its call there too.
      const uint32_t correlation = m.runtimeCorrelationId != 0 ? m.runtimeCorrelationId : m.correlationId;
      add_work_locked(location, m.start, m.end, cuda_region(drain_, memcpy_name(m.copyKind)), correlation,
                      EventKind::kMemcpy, &payload);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
      if (untimed(m.start, m.end)) return;
      ++counts_.memsets;
      const EventPayload payload = memset_payload(m.bytes, m.value, m.memoryKind, m.correlationId);
      add_work_locked(stream_location_locked(m.deviceId, m.contextId, m.streamId, m.start), m.start, m.end,
                      cuda_region(drain_, "[CUDA memset]"), m.correlationId, EventKind::kMemset, &payload);
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = reinterpret_cast<const CUpti_ActivitySynchronization2&>(record);
      ++counts_.syncs;
      add_work_locked(sync_location_locked(s.contextId, s.start), s.start, s.end,
                      cuda_region(drain_, sync_name(s.type)), s.correlationId, EventKind::kCount, nullptr);
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto& d = reinterpret_cast<const CUpti_ActivityDevice5&>(record);
      device_models_[d.id] = std::string(d.name ? d.name : "unnamed") + ", sm_" +
                             std::to_string(d.computeCapabilityMajor) + std::to_string(d.computeCapabilityMinor);
      return;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& c = reinterpret_cast<const CUpti_ActivityContext3&>(record);
      context_devices_[c.contextId] = c.deviceId;
      return;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& o = reinterpret_cast<const CUpti_ActivityOverhead3&>(record);
      ++counts_.overheads;
      counts_.overhead_ns += o.end > o.start ? o.end - o.start : 0;
      return;
    }
    default:
      ++counts_.other;
      return;
  }
}

void ActivityTranslator::flush_locked() {
  // A buffer holds its streams' work in about the order it finished;
  // sorted here, each buffer's work reaches the drain in time order per
  // location. Buffers overlap in time (CUPTI keeps one per launching
  // thread): the finalizer puts them in order (finalize/device_order.h).
  std::stable_sort(batch_.begin(), batch_.end(), [](const DeviceWork& a, const DeviceWork& b) {
    return std::tie(a.location, a.begin_ns) < std::tie(b.location, b.begin_ns);
  });
  for (const DeviceWork& w : batch_) drain_.append_device_work(w);
  batch_.clear();
}

ActivityTranslator::Counts ActivityTranslator::end(uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  flush_locked();
  for (const auto& [key, location] : streams_) drain_.end_location(location, now_ns);
  for (const auto& [context, location] : sync_locations_) drain_.end_location(location, now_ns);
  streams_.clear();
  sync_locations_.clear();
  return counts_;
}

ActivityTranslator::Counts ActivityTranslator::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void ActivityTranslator::name_device(uint32_t device, const std::string& model) {
  std::lock_guard lock(mutex_);
  device_models_.try_emplace(device, model);
}

void ActivityTranslator::forget_locations() {
  std::lock_guard lock(mutex_);
  streams_.clear();
  sync_locations_.clear();
  device_names_.clear();
  batch_.clear();
}

}  // namespace hybridprof::cuda
