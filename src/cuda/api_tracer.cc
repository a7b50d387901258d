#include "cuda/api_tracer.h"

#include <new>
#include <string>

#include "common/per_thread.h"
#include "cuda/activity_translator.h"
#include "cuda/cuda_events.h"
#include "trace/records.h"
#include "trace/traced_region.h"

namespace hybridprof::cuda {
namespace {

// The thread's calls open now, outermost first.
struct OpenCall {
  bool runtime;
  bool traced;  // a region was entered (a driver call inside a runtime one has none)
  uint32_t correlation;
  EnteredRegion entered;
};
struct OpenCalls {
  static constexpr uint32_t kMax = 16;
  OpenCall open[kMax];
  uint32_t depth = 0;
  uint32_t runtime_depth = 0;  // of them, runtime calls
  uint32_t overflow = 0;       // calls nested deeper than kMax, not kept
};

// The thread's region ids by CUPTI's name string (one per function).
using RegionCache = RecentRegionIds<const char*, 16>;

// A thread's CUDA calls (PerThread: 3 KiB, too much for static TLS).
struct CudaThread {
  OpenCalls calls;
  RegionCache regions;
};

uint32_t region_of(TracingHost& host, const char* function, RegionCache& regions) {
  return regions.id(function, cuda_regions().stream(),
                    [&] { return cuda_region(host.drain(), function ? function : "(CUDA API)"); });
}

}  // namespace

void api_enter(bool runtime, const char* function, uint32_t correlation, CorrelationAliases& aliases) {
  const ProfilerWork work;  // the tracer's own time ([hybridprof])
  CudaThread* me = PerThread<CudaThread>::get();
  if (me == nullptr) return;
  OpenCalls& t = me->calls;
  if (t.depth == OpenCalls::kMax) {
    ++t.overflow;
    return;
  }
  OpenCall& call = t.open[t.depth++];
  call = OpenCall{runtime, false, correlation, {}};
  if (!runtime && t.runtime_depth > 0) {
    // The runtime call's doing: its work may name this id.
    for (uint32_t i = t.depth - 1; i-- > 0;)
      if (t.open[i].runtime) {
        aliases.add(correlation, t.open[i].correlation);
        break;
      }
    return;
  }
  t.runtime_depth += runtime;
  TracingHost* host = traced_host();
  if (host == nullptr) return;
  call.traced = true;
  // Made where it is kept: an assigned copy of the entered region, just
  // written field by field, would wait on a store-forwarding stall (see
  // nvtx_ranges.cc's open).
  ::new (static_cast<void*>(&call.entered)) EnteredRegion(
      enter_region(*host, region_of(*host, function, me->regions),
                   kRegionCarriesEvent | cuda_event_kind(EventKind::kLaunch) << kCarriedEventKindShift | kRegionLaunchesDeviceWork,
                   launch_payload(correlation)));
}

void api_exit(bool runtime) {
  const ProfilerWork work;
  CudaThread* me = PerThread<CudaThread>::peek();
  if (me == nullptr) return;  // entered before tracing began
  OpenCalls& t = me->calls;
  if (t.overflow > 0) {
    --t.overflow;
    return;
  }
  if (t.depth == 0 || t.open[t.depth - 1].runtime != runtime) return;  // entered before tracing began
  const OpenCall& call = t.open[--t.depth];
  if (call.runtime) --t.runtime_depth;
  if (!call.traced) return;
  if (TracingHost* host = tracing_host()) leave_region(*host, call.entered);
}

void api_fork_child() {
  if (CudaThread* me = PerThread<CudaThread>::peek()) me->calls = OpenCalls{};
}

}  // namespace hybridprof::cuda
