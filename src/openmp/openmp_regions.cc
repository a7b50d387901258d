#include "openmp/openmp_regions.h"

#include <atomic>
#include <new>
#include <string>

#include "common/per_thread.h"
#include "openmp/openmp_events.h"
#include "otf2/types.h"
#include "trace/drain.h"
#include "trace/event_sets.h"
#include "trace/event_source.h"
#include "trace/stream_region_table.h"
#include "trace/traced_region.h"
#include "trace/tracing_host.h"

namespace hybridprof::openmp {
namespace {

const char* construct_name(Construct c) {
  switch (c) {
    case Construct::kParallel: return "!$omp parallel";
    case Construct::kLoop: return "!$omp for";
    case Construct::kSections: return "!$omp sections";
    case Construct::kSingle: return "!$omp single";
    case Construct::kBarrier: return "!$omp barrier";
    case Construct::kImplicitBarrier: return "!$omp implicit barrier";
    case Construct::kCritical: return "!$omp critical";
    case Construct::kAtomic: return "!$omp atomic";
    case Construct::kOrdered: return "!$omp ordered";
    case Construct::kLock: return "omp_set_lock";
    case Construct::kTask: return "!$omp task";
    case Construct::kTaskwait: return "!$omp taskwait";
    case Construct::kTaskgroup: return "!$omp taskgroup";
    case Construct::kMasked: return "!$omp masked";
    case Construct::kDistribute: return "!$omp distribute";
    case Construct::kTaskloop: return "!$omp taskloop";
    case Construct::kWorkshare: return "!$omp workshare";
    case Construct::kReduction: return "!$omp reduction";
    case Construct::kIdle: return kIdleRegionName;
    case Construct::kBarrierCall: return "!$omp barrier";
  }
  return "!$omp";
}

// A region is a construct, or a construct's wait (kind + kConstructs).
uint32_t kind_of(Construct c, bool waiting) { return static_cast<uint32_t>(c) + (waiting ? kConstructs : 0); }

std::string region_name(uint32_t kind) {
  const auto c = static_cast<Construct>(kind % kConstructs);
  if (kind < kConstructs) return construct_name(c);
  // A loop's or sections' wait at its end is its implicit barrier.
  if (c == Construct::kLoop || c == Construct::kSections) return construct_name(Construct::kImplicitBarrier);
  return std::string(construct_name(c)) + " (waiting)";
}

// Region ids by (kind, code address), one per construct in the code.
StreamRegionTable<uint64_t>& regions() {
  static auto* table = new StreamRegionTable<uint64_t>();  // used until the process ends
  return *table;
}
uint64_t key_of(uint32_t kind, uint64_t code) { return code << 6 | kind; }
static_assert(2 * kConstructs <= 64, "a kind fits the key's low 6 bits");

class OpenMpSource final : public EventSource {
 public:
  const char* name() const override { return "openmp"; }
  void process_started(Drain&) override { regions().new_stream(); }
};
HYBRIDPROF_EVENT_SOURCE(OpenMpSource)

// The thread's recent lookups, so a construct met again takes no lock.
using RegionCache = RecentRegionIds<uint64_t, 128>;

uint32_t region_id(TracingHost& host, uint32_t kind, uint64_t code, RegionCache& cache) {
  const uint64_t key = key_of(kind, code);
  return cache.id(key, regions().stream(), [&] {
    return regions().id(key, [&](uint32_t fresh) {
      const bool either = kind == kind_of(Construct::kBarrierCall, false);
      host.drain().define_code_region(fresh, region_name(kind), static_cast<uint32_t>(otf2::Paradigm::kOpenMp), code,
                                      either ? construct_name(Construct::kImplicitBarrier) : "");
    });
  });
}

// The regions open on this thread that a later call closes, innermost last.
struct OpenRegion {
  uint32_t kind;
  EnteredRegion region;
  uint32_t leave_flags;  // what its leave carries: its team's join
};
struct OpenRegions {
  static constexpr uint32_t kMax = 64;
  OpenRegion open[kMax];
  uint32_t depth = 0;
};

// A thread's OpenMP state (PerThread: over 10 KiB, too much for static TLS).
struct OpenMpThread {
  OpenRegions open;
  RegionCache cache;
  // A team this thread forked whose parallel region it has not entered yet.
  bool fork_pending = false;
  uint32_t fork_requested_threads = 0;
};
// What the thread has open; none when it never opened a region.
OpenRegions* open_regions() {
  OpenMpThread* me = PerThread<OpenMpThread>::peek();
  return me ? &me->open : nullptr;
}

// The kind of a fork or join in the process's numbering; kNoEventSet when
// the numbering is full (never so far: then there are none).
uint32_t event_kind(EventKind k) {
  static const uint32_t base = register_event_set(kEventSetName, static_cast<uint32_t>(EventKind::kCount));
  return base == kNoEventSet ? kNoEventSet : base + static_cast<uint32_t>(k);
}

// A team's fork and join ride on its master's enter and leave of the
// parallel region, outside it (kRegionEventsOutside): one record each way
// for what would be four; a loop of regions repeats them whole.
// (Worked out once: every parallel region asks for both.)
uint32_t fork_flags() {
  static const uint32_t flags = [] {
    const uint32_t kind = event_kind(EventKind::kFork);
    return kind == kNoEventSet ? 0 : kRegionCarriesEvent | kRegionEventsOutside | kind << kCarriedEventKindShift;
  }();
  return flags;
}
uint32_t join_flags() {
  static const uint32_t flags = [] {
    const uint32_t kind = event_kind(EventKind::kJoin);
    return kind == kNoEventSet ? 0 : kRegionCarriesEmptyEvent | kRegionEventsOutside | kind << kEmptyEventKindShift;
  }();
  return flags;
}

void close_innermost(OpenRegions& open) {
  const OpenRegion& r = open.open[--open.depth];
  if (TracingHost* host = tracing_host()) leave_region(*host, r.region, r.leave_flags);
}

}  // namespace

void open(TracingHost& host, Construct c, bool waiting, uint64_t code) {
  open_on(host, host.current_thread(), c, waiting, code);
}

void open_on(TracingHost& host, ThreadState* thread, Construct c, bool waiting, uint64_t code) {
  OpenMpThread* me = thread ? PerThread<OpenMpThread>::get() : nullptr;
  if (me == nullptr) return;
  const uint32_t kind = kind_of(c, waiting);
  uint32_t flags = 0, leave_flags = 0;
  EventPayload event;
  if (c == Construct::kParallel && !waiting && me->fork_pending) {  // the master enters its team's region
    me->fork_pending = false;
    flags = fork_flags();
    leave_flags = join_flags();
    set_fork_payload(event, me->fork_requested_threads);  // in place: a copy would wait for its stores
  }
  const uint32_t region = region_id(host, kind, code, me->cache);
  OpenRegions& open = me->open;
  if (open.depth == OpenRegions::kMax) {  // deeper than any program nests: not kept open
    leave_region(host, enter_region_on(host, thread, region, flags, event), leave_flags);
    return;
  }
  // Made where it is kept (the entered region, a prvalue, is not copied
  // there: a copy of what was just written field by field reads it back
  // sixteen bytes at a time, which waits for the stores to reach the cache).
  const OpenRegion* made = ::new (static_cast<void*>(&open.open[open.depth]))
      OpenRegion{kind, enter_region_on(host, thread, region, flags, event), leave_flags};
  if (made->region.thread != nullptr) ++open.depth;
}

bool close(Construct c, bool waiting) {
  OpenRegions* open = open_regions();
  if (open == nullptr || open->depth == 0 || open->open[open->depth - 1].kind != kind_of(c, waiting)) return false;
  close_innermost(*open);
  return true;
}

bool close_through(Construct c, bool waiting) {
  OpenRegions* open = open_regions();
  if (open == nullptr) return false;
  const uint32_t kind = kind_of(c, waiting);
  for (uint32_t d = open->depth; d-- > 0;) {
    if (open->open[d].kind != kind) continue;
    close_above(d);
    return true;
  }
  return false;
}

void fork(uint32_t requested_threads) {
  OpenMpThread* me = PerThread<OpenMpThread>::get();
  if (me == nullptr) return;
  me->fork_pending = true;
  me->fork_requested_threads = requested_threads;
}

void join() {
  // The team's region carried its join; a fork it never entered is dropped.
  if (OpenMpThread* me = PerThread<OpenMpThread>::peek()) me->fork_pending = false;
}

// One idle region per process, at no code of the program's.
void worker_idle(TracingHost& host, ThreadState* thread) { open_on(host, thread, Construct::kIdle, false, 0); }
void worker_busy() { close(Construct::kIdle, false); }

uint32_t open_depth() {
  const OpenRegions* open = open_regions();
  return open ? open->depth : 0;
}

void close_above(uint32_t depth) {
  if (OpenRegions* open = open_regions())
    while (open->depth > depth) close_innermost(*open);
}

}  // namespace hybridprof::openmp
