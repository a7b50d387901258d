#include "openmp/gomp_tracer.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/fatal.h"
#include "otf2/types.h"
#include "trace/drain.h"
#include "trace/event_source.h"
#include "trace/region_ids.h"
#include "trace/traced_region.h"
#include "trace/tracing_host.h"

namespace hybridprof::openmp {
namespace {

constexpr uint32_t kConstructs = static_cast<uint32_t>(Construct::kTaskgroup) + 1;

const char* construct_name(Construct c) {
  switch (c) {
    case Construct::kParallel: return "!$omp parallel";
    case Construct::kLoop: return "!$omp for";
    case Construct::kSections: return "!$omp sections";
    case Construct::kSingle: return "!$omp single";
    case Construct::kBarrier: return "!$omp barrier";
    case Construct::kCritical: return "!$omp critical";
    case Construct::kAtomic: return "!$omp atomic";
    case Construct::kOrdered: return "!$omp ordered";
    case Construct::kTask: return "!$omp task";
    case Construct::kTaskwait: return "!$omp taskwait";
    case Construct::kTaskgroup: return "!$omp taskgroup";
  }
  return "!$omp";
}

// A region is a construct, or a construct's wait (kind + kConstructs).
uint32_t kind_of(Construct c, bool waiting) { return static_cast<uint32_t>(c) + (waiting ? kConstructs : 0); }

std::string region_name(uint32_t kind) {
  const auto c = static_cast<Construct>(kind % kConstructs);
  if (kind < kConstructs) return construct_name(c);
  if (c == Construct::kLoop || c == Construct::kSections) return "!$omp implicit barrier";
  return std::string(construct_name(c)) + " (waiting)";
}

// A new raw stream (the process's, a fork child's) has none of the
// regions' definitions: each is defined again at its next use.
std::atomic<uint64_t> g_stream{1};

class OpenMpSource final : public EventSource {
 public:
  const char* name() const override { return "openmp"; }
  void process_started(Drain&) override { g_stream.fetch_add(1, std::memory_order_acq_rel); }
};
HYBRIDPROF_EVENT_SOURCE(OpenMpSource)

// Region ids by (kind, code address), one per construct in the code.
class RegionTable {
 public:
  uint32_t id(TracingHost& host, uint32_t kind, uint64_t code) {
    const uint64_t stream = g_stream.load(std::memory_order_acquire);
    std::lock_guard lock(mutex_);
    Entry& e = entries_[key(kind, code)];
    if (e.id == 0) e.id = reserve_region_ids(1);
    if (e.stream != stream) {
      host.drain().define_code_region(e.id, region_name(kind), static_cast<uint32_t>(otf2::Paradigm::kOpenMp), code);
      e.stream = stream;
    }
    return e.id;
  }
  static uint64_t key(uint32_t kind, uint64_t code) { return code << 6 | kind; }

 private:
  struct Entry {
    uint32_t id = 0;
    uint64_t stream = 0;  // the raw stream it was defined in
  };
  std::mutex mutex_;
  std::unordered_map<uint64_t, Entry> entries_;
};

RegionTable& regions() {
  static RegionTable* table = new RegionTable();  // leaked: used until the process ends
  return *table;
}

// The thread's recent lookups, so a construct met again takes no lock.
struct CachedRegion {
  uint64_t key = 0, stream = 0;
  uint32_t id = 0;
};
thread_local CachedRegion t_cache[64];

uint32_t region_id(TracingHost& host, uint32_t kind, uint64_t code) {
  const uint64_t key = RegionTable::key(kind, code);
  const uint64_t stream = g_stream.load(std::memory_order_acquire);
  CachedRegion& c = t_cache[(key ^ key >> 17) % 64];
  if (c.key == key && c.stream == stream) return c.id;
  c = {key, stream, regions().id(host, kind, code)};
  return c.id;
}

// The regions open on this thread that a later call closes, innermost last.
struct OpenRegion {
  uint32_t kind;
  EnteredRegion region;
};
struct OpenRegions {
  static constexpr uint32_t kMax = 64;
  OpenRegion open[kMax];
  uint32_t depth = 0;
  ForkPacket packets[16];  // kForkStart's, until their kJoin
  uint32_t packet_depth = 0;
};
thread_local OpenRegions t_open;

TracingHost* traced_host() {
  TracingHost* host = tracing_host();
  if (host == nullptr || !host->tracing()) return nullptr;
  prepare_trace_clock(*host);
  return host;
}

void open(TracingHost& host, uint32_t kind, uint64_t code) {
  const EnteredRegion r = enter_region(host, region_id(host, kind, code));
  if (r.thread == nullptr) return;
  if (t_open.depth == OpenRegions::kMax) {  // deeper than any program nests: not kept open
    leave_region(host, r);
    return;
  }
  t_open.open[t_open.depth++] = {kind, r};
}

// Closes the innermost open region if it is of `kind` (a call whose start
// was not seen, before tracing began, closes nothing).
void close(uint32_t kind) {
  if (t_open.depth == 0 || t_open.open[t_open.depth - 1].kind != kind) return;
  const OpenRegion& r = t_open.open[--t_open.depth];
  if (TracingHost* host = tracing_host()) leave_region(*host, r.region);
}

void close_above(uint32_t depth) {
  while (t_open.depth > depth) close(t_open.open[t_open.depth - 1].kind);
}

void* find_in_loaded_libgomp(const char* name) {
  // Not in the global scope (a wheel's own libgomp-<hash>.so.1, loaded
  // RTLD_LOCAL with the extension that needs it): look it up by its path.
  struct Search {
    const char* name;
    void* found;
  } search{name, nullptr};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "libgomp") == nullptr) return 0;
        if (void* h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD)) {
          s->found = dlsym(h, s->name);
          dlclose(h);
        }
        return s->found != nullptr ? 1 : 0;
      },
      &search);
  return search.found;
}

}  // namespace

void* require_gomp_function(const char* name) {
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  if (void* p = find_in_loaded_libgomp(name)) return p;
  die_plainly({"an OpenMP function was called but no libgomp defines ", name});
}

void traced_body(void* p) {
  const auto* packet = static_cast<const ForkPacket*>(p);
  TracingHost* host = traced_host();
  if (host == nullptr) return packet->fn(packet->data);
  const uint32_t depth = t_open.depth;
  const auto body = reinterpret_cast<uint64_t>(packet->fn);
  open(*host, kind_of(Construct::kParallel, false), body);
  if (packet->construct != Construct::kParallel) open(*host, kind_of(packet->construct, false), body);
  packet->fn(packet->data);
  // A combined loop's nowait end closed the loop; what the body left open closes with it.
  close_above(depth);
}

ForkPacket* keep_fork_packet(const ForkPacket& packet) {
  if (t_open.packet_depth == std::size(t_open.packets))
    die_plainly({"GOMP_parallel_start nested deeper than the runtime keeps (16)"});
  ForkPacket* kept = &t_open.packets[t_open.packet_depth++];
  *kept = packet;
  return kept;
}

void after_fork_start(ForkPacket* packet) {
  // The master runs the body itself, between the start and the end.
  if (TracingHost* host = traced_host()) open(*host, kind_of(Construct::kParallel, false), reinterpret_cast<uint64_t>(packet->fn));
}

void before_call(Construct c, Role r, const void* site) {
  TracingHost* host = traced_host();
  if (host == nullptr) return;
  // The call's own line: the return address is just after it.
  const uint64_t code = reinterpret_cast<uint64_t>(site) - 1;
  switch (r) {
    case Role::kCall:
    case Role::kStart:
      open(*host, kind_of(c, false), code);
      break;
    case Role::kStartWaiting:
      open(*host, kind_of(c, false), code);
      open(*host, kind_of(c, true), code);
      break;
    case Role::kFinishWaiting:
      open(*host, kind_of(c, true), code);
      break;
    default:
      break;
  }
}

void after_call(Construct c, Role r) {
  switch (r) {
    case Role::kCall:
    case Role::kFinish:
      close(kind_of(c, false));
      break;
    case Role::kStartWaiting:
      close(kind_of(c, true));
      break;
    case Role::kFinishWaiting:
      close(kind_of(c, true));
      close(kind_of(c, false));
      break;
    case Role::kJoin:
      close(kind_of(Construct::kParallel, false));
      if (t_open.packet_depth > 0) --t_open.packet_depth;
      break;
    default:
      break;
  }
}

}  // namespace hybridprof::openmp
