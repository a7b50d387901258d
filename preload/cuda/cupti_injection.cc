// CUDA's injection: the CUDA driver loads the library CUDA_INJECTION64_PATH
// names (the launcher names the runtime) when the program initializes
// CUDA, and calls its InitializeInjection. The runtime then loads CUPTI
// (never linked: a CPU program never loads it), subscribes to the runtime
// and driver API calls that launch, copy, set, synchronize and allocate
// (cuda/api_tracer.h), and collects activity into bounded buffers that
// CUPTI hands back full (cuda/activity_translator.h). When CUPTI cannot
// start (no driver, no permission, another profiler), the program runs on
// with host profiling and one line says why. Nothing here changes what a
// CUDA call returns.
//
// Not the signal path: CUPTI's callbacks run on the program's threads and
// CUPTI's own, outside signal handlers; they may lock and allocate, and
// never throw (they are C callbacks).
#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/trace_switch.h"
#include "cuda/activity_translator.h"
#include "cuda/api_tracer.h"
#include "preload/cuda/cuda_profiler_api.h"
#include "trace/drain.h"
#include "trace/event_source.h"
#include "trace/traced_region.h"
#include "trace/tracing_host.h"

namespace hybridprof::cuda {
namespace {

struct Cupti {
#define CUPTI_FUNCTION(name, required) decltype(&::name) name = nullptr;
#include "preload/cuda/cupti_functions.def"
#undef CUPTI_FUNCTION
};
Cupti g_cupti;
std::atomic<bool> g_started{false};
// A fork child of a process that traced CUDA: the CUPTI state it inherited
// is the parent's, and CUDA does not work in a fork child; calling CUPTI
// there (its flush waits for threads the child does not have) hung
// PyTorch's DataLoader workers until their parent killed them.
std::atomic<bool> g_inherited{false};

// Both live as long as the process: CUPTI may call back until it ends.
CorrelationAliases& aliases() {
  static auto* a = new CorrelationAliases();
  return *a;
}
std::atomic<ActivityTranslator*> g_translator{nullptr};

// Activity buffers: CUPTI fills one, hands it back, asks for another. At
// most kMaxBuffers are out at once; past that CUPTI drops records, and
// counts them.
constexpr size_t kBufferBytes = 4u << 20;
constexpr int kMaxBuffers = 16;
std::atomic<int> g_buffers{0};

// One line on stderr and in the archive.
void notify(TracingHost& host, const std::string& line) {
  host.say(line);
  host.drain().append(raw::Notice{line});
}

std::string result_text(CUptiResult r) {
  const char* text = nullptr;
  if (g_cupti.cuptiGetResultString == nullptr || g_cupti.cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text)
    return "CUPTI error " + std::to_string(int(r));
  std::string s = text;
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      return s + " (GPU profiling is restricted to administrators: NVreg_RestrictProfilingToAdminUsers=0 lifts it)";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return s + " (another profiler holds CUPTI)";
    case CUPTI_ERROR_NOT_INITIALIZED:
      return s + " (no usable CUDA driver or device)";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return s + " (this device, its driver or its virtualization does not let CUPTI trace it)";
    default:
      return s;
  }
}

// The path of a module the process has loaded whose file name starts with
// `prefix` ("libcudart.so"), or "".
std::string loaded_module(const char* prefix) {
  struct Search {
    const char* prefix;
    std::string path;
  } search{prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        const char* name = info->dlpi_name ? info->dlpi_name : "";
        const char* base = std::strrchr(name, '/');
        base = base ? base + 1 : name;
        if (std::strncmp(base, s->prefix, std::strlen(s->prefix)) != 0) return 0;
        s->path = name;
        return 1;
      },
      &search);
  return search.path;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// Where libcupti may be, first found first: the user's choice; one the
// program already loaded (PyTorch links its own); beside the program's
// CUDA runtime (a Python environment's nvidia/ packages, a toolkit's lib64
// or its extras/CUPTI/lib64); the toolkit this runtime was built with; the
// library path; the toolkit at CUDA_HOME or /usr/local/cuda.
std::vector<std::string> cupti_candidates() {
  const std::string soname = "libcupti.so." HYBRIDPROF_CUPTI_MAJOR;
  std::vector<std::string> paths;
  if (const char* v = std::getenv("HYBRIDPROF_CUPTI_LIBRARY")) paths.emplace_back(v);
  paths.push_back(loaded_module("libcupti.so"));
  if (const std::string runtime = directory_of(loaded_module("libcudart.so")); !runtime.empty()) {
    paths.push_back(runtime + soname);
    paths.push_back(runtime + "../extras/CUPTI/lib64/" + soname);
  }
  paths.emplace_back(HYBRIDPROF_CUPTI_DEFAULT_LIBRARY);
  paths.push_back(soname);
  for (const char* root : {static_cast<const char*>(std::getenv("CUDA_HOME")), static_cast<const char*>(std::getenv("CUDA_PATH")), "/usr/local/cuda"})
    if (root != nullptr && *root != '\0')
      for (const char* dir : {"/extras/CUPTI/lib64/", "/lib64/", "/lib/"}) paths.push_back(root + std::string(dir) + soname);
  return paths;
}

// Loads libcupti and its functions; an error text on failure.
std::string load_cupti() {
  std::string tried;
  void* handle = nullptr;
  const char* chosen = std::getenv("HYBRIDPROF_CUPTI_LIBRARY");
  for (const std::string& path : cupti_candidates()) {
    if (path.empty()) continue;
    // Guessed paths that do not exist are not worth a line in the error.
    if ((chosen == nullptr || path != chosen) && path.find('/') != std::string::npos && access(path.c_str(), R_OK) != 0)
      continue;
    if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  if (handle == nullptr) return "cannot load CUPTI: " + (tried.empty() ? "no libcupti.so." HYBRIDPROF_CUPTI_MAJOR " found" : tried);
#define CUPTI_FUNCTION(name, required)                                           \
  g_cupti.name = reinterpret_cast<decltype(g_cupti.name)>(dlsym(handle, #name)); \
  if ((required) && g_cupti.name == nullptr) return "CUPTI has no " #name;
#include "preload/cuda/cupti_functions.def"
#undef CUPTI_FUNCTION
  // CUPTI calls back into the runtime from its own code: its frames are
  // the profiler's, not the program's.
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) {
    struct Range {
      uint64_t base, start = UINT64_MAX, end = 0;
    } range{map->l_addr};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
          auto* r = static_cast<Range*>(data);
          if (info->dlpi_addr != r->base) return 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& p = info->dlpi_phdr[i];
            if (p.p_type != PT_LOAD || !(p.p_flags & PF_X)) continue;
            r->start = std::min<uint64_t>(r->start, info->dlpi_addr + p.p_vaddr);
            r->end = std::max<uint64_t>(r->end, info->dlpi_addr + p.p_vaddr + p.p_memsz);
          }
          return 1;
        },
        &range);
    if (range.start < range.end)
      if (TracingHost* host = tracing_host()) host->drain().add_tool_code(range.start, range.end);
  }
  return {};
}

uint64_t CUPTIAPI host_timestamp() { return monotonic_ns(); }

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  *buffer = nullptr;
  *size = 0;
  if (g_buffers.fetch_add(1) >= kMaxBuffers) {
    g_buffers.fetch_sub(1);
    return;
  }
  // Owned by CUPTI until buffer_completed hands it back (a C interface).
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  if (*buffer == nullptr)
    g_buffers.fetch_sub(1);
  else
    *size = kBufferBytes;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  size_t dropped = 0;
  if (g_cupti.cuptiActivityGetNumDroppedRecords(context, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  if (ActivityTranslator* translator = g_translator.load(std::memory_order_acquire)) {
    CUpti_Activity* record = nullptr;
    translator->translate_buffer(
        [&]() -> const CUpti_Activity* {
          return g_cupti.cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS ? record : nullptr;
        },
        dropped);
  }
  std::free(buffer);
  g_buffers.fetch_sub(1);
}

// A new context's device, named as the driver names it ("NVIDIA H100 80GB
// HBM3, sm_90"), for its streams' group.
void name_context_device(CUcontext context) {
  ActivityTranslator* translator = g_translator.load(std::memory_order_acquire);
  uint32_t device = 0;
  if (translator == nullptr || g_cupti.cuptiGetDeviceId == nullptr ||
      g_cupti.cuptiGetDeviceId(context, &device) != CUPTI_SUCCESS)
    return;
  void* driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (driver == nullptr) return;
  const auto get = reinterpret_cast<decltype(&cuDeviceGet)>(dlsym(driver, "cuDeviceGet"));
  const auto get_name = reinterpret_cast<decltype(&cuDeviceGetName)>(dlsym(driver, "cuDeviceGetName"));
  const auto get_attribute = reinterpret_cast<decltype(&cuDeviceGetAttribute)>(dlsym(driver, "cuDeviceGetAttribute"));
  CUdevice handle = 0;
  char name[256] = {};
  int major = 0, minor = 0;
  if (get && get_name && get_attribute && get(&handle, int(device)) == CUDA_SUCCESS &&
      get_name(name, sizeof name - 1, handle) == CUDA_SUCCESS &&
      get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle) == CUDA_SUCCESS &&
      get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle) == CUDA_SUCCESS)
    translator->name_device(device, std::string(name) + ", sm_" + std::to_string(major) + std::to_string(minor));
  dlclose(driver);
}

// The profiler API's calls, which open and close the capture window
// (preload/cuda/cuda_profiler_api.h): through CUPTI, a statically linked
// CUDA runtime's calls too.
struct ProfilerApiCall {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  bool start;
  const char* cause;
};
constexpr ProfilerApiCall kProfilerApiCalls[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, true, "cudaProfilerStart()"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, false, "cudaProfilerStop()"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, true, "cuProfilerStart()"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, false, "cuProfilerStop()"},
};

const ProfilerApiCall* profiler_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  for (const ProfilerApiCall& call : kProfilerApiCalls)
    if (call.domain == domain && call.cbid == cbid) return &call;
  return nullptr;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    // A context's work is delivered before the context goes.
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) g_cupti.cuptiActivityFlushAll(0);
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
      name_context_device(static_cast<const CUpti_ResourceData*>(data)->context);
    return;
  }
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (const ProfilerApiCall* call = profiler_api_call(domain, cbid)) {
    if (info->callbackSite == CUPTI_API_ENTER)
      preload::profiler_api_enter(call->start, call->cause);
    else
      preload::profiler_api_exit();
    return;
  }
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (info->callbackSite == CUPTI_API_ENTER)
    api_enter(runtime, info->functionName, info->correlationId, aliases());
  else
    api_exit(runtime);
}

// The API calls traced, by the start of their names (every version of each).
constexpr const char* kRuntimeCalls[] = {
    "cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset", "cudaMalloc", "cudaFree", "cudaHostAlloc",
    "cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    "cudaStreamWaitEvent"};
constexpr const char* kDriverCalls[] = {
    "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset", "cuMemAlloc", "cuMemFree", "cuMemHostAlloc",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuStreamWaitEvent"};

template <size_t N>
CUptiResult enable_calls(CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain, uint32_t count,
                         const char* const (&prefixes)[N]) {
  for (uint32_t cbid = 1; cbid < count; ++cbid) {
    const char* name = nullptr;
    if (g_cupti.cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    for (const char* prefix : prefixes) {
      if (std::strncmp(name, prefix, std::strlen(prefix)) != 0) continue;
      if (const CUptiResult r = g_cupti.cuptiEnableCallback(1, subscriber, domain, cbid); r != CUPTI_SUCCESS) return r;
      break;
    }
  }
  return CUPTI_SUCCESS;
}

// Everything CUPTI is asked for; the first refusal's text, or empty.
std::string start_cupti(TracingHost& host, GpuClock* clock) {
  uint32_t version = 0;
  if (const CUptiResult r = g_cupti.cuptiGetVersion(&version); r != CUPTI_SUCCESS) return result_text(r);
  // Activity records are laid out as this build's headers say.
  if (version / 10000 != CUPTI_API_VERSION / 10000)
    return "CUPTI API version " + std::to_string(version) + ", built for " + std::to_string(CUPTI_API_VERSION);
  // CUPTI stamps activity with the host's clock when it can; else the two
  // clocks' offset is measured once.
  if (g_cupti.cuptiActivityRegisterTimestampCallback == nullptr ||
      g_cupti.cuptiActivityRegisterTimestampCallback(&host_timestamp) != CUPTI_SUCCESS) {
    const uint64_t before = monotonic_ns();
    uint64_t cupti = 0;
    g_cupti.cuptiGetTimestamp(&cupti);
    const uint64_t after = monotonic_ns();
    clock->offset_ns = int64_t(before + (after - before) / 2) - int64_t(cupti);
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  const auto check = [](CUptiResult r, const char* what) {
    return r == CUPTI_SUCCESS ? std::string() : std::string(what) + ": " + result_text(r);
  };
  std::string error = check(g_cupti.cuptiSubscribe(&subscriber, &on_callback, nullptr), "cuptiSubscribe");
  if (error.empty())
    error = check(enable_calls(subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, kRuntimeCalls),
                  "cuptiEnableCallback");
  if (error.empty())
    error = check(enable_calls(subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, kDriverCalls),
                  "cuptiEnableCallback");
  for (const ProfilerApiCall& call : kProfilerApiCalls)
    if (error.empty())
      error = check(g_cupti.cuptiEnableCallback(1, subscriber, call.domain, call.cbid), "cuptiEnableCallback");
  for (const CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING})
    if (error.empty())
      error = check(g_cupti.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid), "cuptiEnableCallback");
  if (error.empty())
    error = check(g_cupti.cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed),
                  "cuptiActivityRegisterCallbacks");
  for (const CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
        CUPTI_ACTIVITY_KIND_OVERHEAD})
    if (error.empty()) error = check(g_cupti.cuptiActivityEnable(kind), "cuptiActivityEnable");
  // Delivered at the runtime's flush interval rather than when a buffer fills.
  if (error.empty() && g_cupti.cuptiActivityFlushPeriod) g_cupti.cuptiActivityFlushPeriod(host.config().flush_ms);
  return error;
}

void start() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The process is profiled, whether or not a capture window is open
    // now: CUDA initializes once, often before the window opens (--delay,
    // --paused), and its calls and work are recorded once it does.
    TracingHost* host = tracing_host();
    if (host == nullptr) return;
    std::string error = load_cupti();
    GpuClock clock;
    if (error.empty()) error = start_cupti(*host, &clock);
    if (!error.empty()) {
      notify(*host, "CUDA: GPU activity is not traced: " + error + "; host profiling goes on");
      return;
    }
    g_translator.store(new ActivityTranslator(host->drain(), clock, &aliases()), std::memory_order_release);
    g_started.store(true, std::memory_order_release);
  });
}

// A CUDA runtime library among the process's modules ("libcudart.so.13"), or "".
std::string loaded_cuda_runtime() {
  const std::string path = loaded_module("libcudart.so");
  return path.substr(directory_of(path).size());
}

class CudaSource final : public EventSource {
 public:
  const char* name() const override { return "cuda"; }
  void process_started(Drain&) override { cuda_regions().new_stream(); }
  void fork_child() override {
    api_fork_child();
    if (ActivityTranslator* t = g_translator.load()) t->forget_locations();
    if (g_started.load(std::memory_order_acquire)) g_inherited.store(true, std::memory_order_release);
  }
  void process_ending(raw::EndReason) override {
    TracingHost* host = tracing_host();
    if (host == nullptr || g_inherited.load(std::memory_order_acquire)) return;
    if (!g_started.load(std::memory_order_acquire)) {
      // CUDA never started the injection: say why when the program meant to use it.
      const std::string runtime = loaded_cuda_runtime();
      if (!runtime.empty() && dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY) == nullptr)
        notify(*host, "CUDA: the program loaded " + runtime +
                          " but no CUDA driver (libcuda.so.1): GPU activity is not traced; host profiling goes on");
      return;
    }
    g_cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const ActivityTranslator::Counts c = g_translator.load()->end(monotonic_ns());
    host->drain().append(raw::Notice{
        "CUDA: " + std::to_string(c.kernels) + " kernels, " + std::to_string(c.memcpys) + " copies, " +
        std::to_string(c.memsets) + " memsets, " + std::to_string(c.syncs) + " synchronizations; CUPTI overhead " +
        std::to_string(c.overheads) + " records, " + std::to_string(c.overhead_ns / 1000) + " us"});
    if (c.dropped > 0)
      notify(*host, "CUDA: CUPTI dropped " + std::to_string(c.dropped) +
                        " activity records (its buffers were full): the GPU timeline has gaps");
    if (c.untimed > 0)
      notify(*host, "CUDA: " + std::to_string(c.untimed) + " activity records without timestamps were left out");
  }
};
HYBRIDPROF_EVENT_SOURCE(CudaSource)

}  // namespace
}  // namespace hybridprof::cuda

// Called by the CUDA driver at the program's cuInit (CUDA_INJECTION64_PATH).
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (hybridprof::adapter_traced("cuda")) hybridprof::cuda::start();  // else switched off (--trace)
  return 1;
}
