#include "cuda/api_tracer.h"

#include <iterator>
#include <string>

#include "cuda/activity_translator.h"
#include "cuda/cuda_events.h"
#include "trace/records.h"
#include "trace/traced_region.h"

namespace hybridprof::cuda {
namespace {

// The thread's calls open now, outermost first. Plain data: a thread's end
// may come after its thread_local destructors have run.
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
thread_local OpenCalls t_calls;

// The thread's region ids by CUPTI's name string.
struct CachedRegion {
  const char* function = nullptr;
  uint64_t stream = 0;
  uint32_t id = 0;
};
thread_local CachedRegion t_regions[64];

uint32_t region_of(TracingHost& host, const char* function) {
  const uint64_t stream = cuda_regions().stream();
  const auto hash = reinterpret_cast<uintptr_t>(function);
  CachedRegion& c = t_regions[(hash >> 3 ^ hash >> 11) % std::size(t_regions)];
  if (c.function == function && c.stream == stream) return c.id;
  c.function = function;
  c.stream = stream;
  c.id = cuda_region(host.drain(), function ? function : "(CUDA API)");
  return c.id;
}

}  // namespace

void api_enter(bool runtime, const char* function, uint32_t correlation, CorrelationAliases& aliases) {
  OpenCalls& t = t_calls;
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
  call.entered = enter_region(*host, region_of(*host, function),
                              kRegionCarriesEvent | cuda_event_kind(EventKind::kLaunch) << kCarriedEventKindShift | kRegionLaunchesDeviceWork,
                              launch_payload(correlation));
}

void api_exit(bool runtime) {
  OpenCalls& t = t_calls;
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

void api_fork_child() { t_calls = OpenCalls{}; }

}  // namespace hybridprof::cuda
