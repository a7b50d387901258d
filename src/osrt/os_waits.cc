#include "osrt/os_waits.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/auxv.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>

#include "common/trace_switch.h"
#include "otf2/types.h"
#include "sigsafe/reentrancy_guard.h"
#include "trace/event_sets.h"
#include "trace/event_source.h"
#include "trace/region_ids.h"
#include "trace/traced_region.h"

namespace hybridprof::osrt {

std::atomic<uint64_t> g_min_ticks{0};

namespace {

// Region ids, once per address space; their definitions, once per raw
// stream (a fork child's is new: OsRuntimeSource::fork_child).
uint32_t g_region_base = 0;
uint32_t g_event_base = kNoEventSet;
std::atomic<bool> g_defined{false};
std::mutex g_define_mutex;

// Set while this thread decides the adapter's threshold: the runtime's own
// calls meanwhile (locks, reads) go untimed.
__thread bool tls_getting_ready __attribute__((tls_model("initial-exec"))) = false;

__attribute__((noinline)) void define_once(TracingHost& host) {
  std::lock_guard lock(g_define_mutex);
  if (g_defined.load(std::memory_order_relaxed)) return;
  static std::once_flag numbered;
  std::call_once(numbered, [] {
    g_region_base = reserve_region_ids(kOsWaitCount);
    g_event_base = register_event_set(kEventSetName, static_cast<uint32_t>(Shape::kCount));
  });
  for (uint32_t i = 0; i < kOsWaitCount; ++i)
    host.drain().append(raw::RegionDef{g_region_base + i, kOsWaitFunctions[i].region,
                                       static_cast<uint32_t>(otf2::Paradigm::kOsRuntime), 0, 0, {}});
  g_defined.store(true, std::memory_order_release);
}

bool is_condition_wait(OsWait f) {
  return f == OsWait::pthread_cond_wait || f == OsWait::pthread_cond_timedwait || f == OsWait::pthread_cond_clockwait;
}

// Whether code at `caller` is CPython's interpreter (libpython3.x.so, or a
// python3.x executable built with it). On Linux the interpreter waits on
// a condition of its own in one place, take_gil (its locks are
// semaphores), so such a wait is for the GIL. Remembered per caller.
bool interpreter_waits(const void* caller) {
  static std::mutex mutex;
  static std::array<std::pair<const void*, bool>, 16> known{};
  static size_t next = 0;
  std::lock_guard lock(mutex);
  for (const auto& [address, verdict] : known)
    if (address == caller) return verdict;
  // The loader's lock-free lookup, not dladdr: the thread may hold the
  // condition's mutex, which a thread inside dlopen (holding the loader's
  // lock) could be waiting for. The executable's link map has no name.
  bool verdict = false;
  dl_find_object found;
  if (_dl_find_object(const_cast<void*>(caller), &found) == 0 && found.dlfo_link_map != nullptr) {
    const char* path = found.dlfo_link_map->l_name;
    if (path == nullptr || *path == '\0') path = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
    if (path != nullptr) {
      const char* base = std::strrchr(path, '/');
      base = base ? base + 1 : path;
      verdict = std::strncmp(base, "libpython3", 10) == 0 || std::strncmp(base, "python3", 7) == 0;
    }
  }
  known[next++ % known.size()] = {caller, verdict};
  return verdict;
}

// Is `caller` the runtime's own code? Its locks (the drain's, taken from a
// dlclose() interposer, say) are not the program's waits; and recording
// one while holding the drain's lock, the first recording of the process
// (which appends the regions' definitions to the drain), waited for that
// lock itself: the program hung (dlopen_workload, 1 run in 70 under load).
bool own_code(const void* caller) {
  static const auto range = [] {
    dl_find_object found{};
    const bool known = _dl_find_object(reinterpret_cast<void*>(&own_code), &found) == 0;
    return std::pair<uintptr_t, uintptr_t>(known ? uintptr_t(found.dlfo_map_start) : 0,
                                           known ? uintptr_t(found.dlfo_map_end) : 0);
  }();
  const auto at = reinterpret_cast<uintptr_t>(caller);
  return at >= range.first && at < range.second;
}

// Not recorded from these: the profiler's own work and signal handlers
// (the recording may allocate), another traced call (its region has this
// time already).
bool may_record_here() {
  using sigsafe::Section;
  return !sigsafe::inside(Section::kRuntime) && !sigsafe::inside(Section::kSampleHandler) &&
         !sigsafe::inside(Section::kDeferredSamples) && !sigsafe::inside(Section::kTracedCall) &&
         !sigsafe::inside(Section::kProgramHandler);
}

class OsRuntimeSource final : public EventSource {
 public:
  const char* name() const override { return "os runtime"; }
  void fork_child() override { g_defined.store(false, std::memory_order_relaxed); }
};
HYBRIDPROF_EVENT_SOURCE(OsRuntimeSource)

}  // namespace

uint64_t get_ready() {
  // Not from a signal handler or the profiler's own code (the sample
  // handler's write to the drain comes here first): what follows reads the
  // environment and files, and may allocate.
  if (tls_getting_ready || !may_record_here()) return 0;
  // Called before the program's call, which must find errno as it was.
  const int saved_errno = errno;
  struct RestoreErrno {
    int value;
    ~RestoreErrno() { errno = value; }
  } restore{saved_errno};
  static const bool switched_on = adapter_traced("os");
  if (!switched_on) {
    g_min_ticks.store(kOff, std::memory_order_relaxed);
    return kOff;
  }
  TracingHost* host = tracing_host();
  // Decided on one of the program's threads (the drain's has none, and may
  // hold its lock in a poll).
  if (host == nullptr || !host->tracing() || host->current_thread() == nullptr) return 0;
  tls_getting_ready = true;
  prepare_trace_clock(*host);
  const double ns_per_tick = host->drain().trace_clock_ns_per_tick();
  const uint64_t min_ns = host->config().os_wait_min_ns;
  const uint64_t ticks = ns_per_tick > 0 ? uint64_t(double(min_ns) / ns_per_tick) : min_ns;
  const uint64_t min = std::max<uint64_t>(ticks, 1);  // 0 is "not ready"; every call lasts a tick
  g_min_ticks.store(min, std::memory_order_relaxed);
  tls_getting_ready = false;
  return min;
}

__attribute__((noinline)) void record(OsWait f, uint64_t begin, uint64_t end, const void* caller,
                                      Arguments arguments, int result_errno) {
  if (!may_record_here() || own_code(caller)) return;
  TracingHost* host = traced_host();
  ThreadState* t = host ? host->current_thread() : nullptr;
  if (t == nullptr) return;
  BusyScope busy(t);  // the profiler's time from here; its own calls are not recorded
  if (!g_defined.load(std::memory_order_acquire)) define_once(*host);
  if (g_event_base == kNoEventSet) return;
  if (is_condition_wait(f) && interpreter_waits(caller)) f = OsWait::gil;
  if (static_cast<int64_t>(arguments.payload.wide[1]) == -1) arguments.payload.word[1] = uint32_t(result_errno);
  const uint32_t kind = g_event_base + static_cast<uint32_t>(arguments.shape);
  const uint32_t region = g_region_base + static_cast<uint32_t>(f);
  const EnteredRegion r = enter_region_at(*host, region, begin, kRegionCarriesEvent | kind << kCarriedEventKindShift,
                                          arguments.payload);
  leave_region_at(*host, r, end);
}

}  // namespace hybridprof::osrt
