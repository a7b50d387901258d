#include "mpi/mpi_tracer.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "common/trace_clock.h"
#include "common/trace_switch.h"
#include "mpi/pmpi.h"
#include "otf2/types.h"
#include "trace/event_source.h"
#include "trace/event_sets.h"
#include "trace/records.h"
#include "trace/region_ids.h"
#include "trace/traced_region.h"
#include "trace/tracing_host.h"
#include "unwind/caller_stack_cache.h"

namespace hybridprof::mpi {
namespace {

std::atomic<bool> g_regions_defined{false};
std::mutex g_regions_mutex;

// The interposers' entry points (set_wrapper_entries), whose code ranges
// the drain files frames under (samples taken during the real call).
const void* const* g_wrapper_entries = nullptr;

std::vector<Drain::TracedCode> wrapper_code() {
  std::vector<Drain::TracedCode> code;
  for (uint32_t i = 0; g_wrapper_entries && i < kMpiFunctionCount; ++i) {
    Dl_info info;
    void* entry = nullptr;
    if (dladdr1(g_wrapper_entries[i], &info, &entry, RTLD_DL_SYMENT) == 0) continue;
    const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
    if (symbol && symbol->st_size > 0) {
      const auto start = reinterpret_cast<uint64_t>(info.dli_saddr);
      code.push_back({start, start + symbol->st_size, mpi_region(static_cast<MpiFunction>(i))});
    }
  }
  return code;
}

// Region definitions, at the first call, once per raw stream (a fork
// child's stream starts without them); the wrappers' code ranges and the
// choice of trace clock once per address space.
__attribute__((noinline)) void define_regions_once(TracingHost& host) {
  std::lock_guard lock(g_regions_mutex);
  if (g_regions_defined.load(std::memory_order_relaxed)) return;
  static std::once_flag code_known;
  std::call_once(code_known, [&] {
    g_mpi_region_base = reserve_region_ids(kMpiFunctionCount);
    g_mpi_event_base =
        register_event_set(::hybridprof::mpi::kEventSetName, static_cast<uint32_t>(MpiEventKind::kCount));
    host.drain().add_traced_code(wrapper_code());
  });
  const std::string& clock_note = prepare_trace_clock(host);
  std::vector<raw::Record> defs;
  for (uint32_t i = 0; i < kMpiFunctionCount; ++i) {
    const auto f = static_cast<MpiFunction>(i);
    defs.push_back(raw::RegionDef{mpi_region(f), mpi_function_name(f), static_cast<uint32_t>(otf2::Paradigm::kMpi),
                                   raw::kUnknownModule, 0, {}});
  }
  defs.push_back(raw::Notice{"MPI: " + clock_note});
  host.drain().append(defs);
  g_regions_defined.store(true, std::memory_order_release);
}

// MPI as an event source (trace/event_source.h). Its records come from
// the wrappers, as the program calls MPI; the lifecycle keeps the
// per-stream state right: a new raw stream (the process's first, a fork
// child's) has none of MPI's region definitions until the next call.
class MpiSource final : public EventSource {
 public:
  const char* name() const override { return "mpi"; }
  void process_started(Drain&) override { g_regions_defined.store(false, std::memory_order_release); }
};
HYBRIDPROF_EVENT_SOURCE(MpiSource)

inline void define_regions(TracingHost& host) {
  if (!g_regions_defined.load(std::memory_order_acquire)) define_regions_once(host);
}

}  // namespace

uint32_t g_mpi_region_base = 0;
uint32_t g_mpi_event_base = 0;

void set_wrapper_entries(const void* const* entries) { g_wrapper_entries = entries; }

const char* mpi_function_name(MpiFunction f) {
  static const char* const names[] = {
#define MPI_FUNCTION(name, params, args) #name,
#include "mpi/mpi_functions.def"
  };
  const auto i = static_cast<uint32_t>(f);
  return i < kMpiFunctionCount ? names[i] : "MPI_(unknown)";
}

// --- The call -----------------------------------------------------------------

void MpiCall::start(bool begins_collective, ThreadState* known) {
  static const bool switched_on = adapter_traced("mpi");  // --trace
  TracingHost* host = tracing_host();
  if (!switched_on || !traced_call_.outermost() || host == nullptr) return;
  ThreadState* t = known ? known : host->current_thread();  // null too once the process is past its end
  if (t == nullptr) return;
  define_regions(*host);
  thread_ = t;
  drain_ = &host->drain();
  BusyScope busy(t);
  const CallerStack stack = capture_caller_stack(*host, *t);
  stack_ = stack.ref;
  stack_depth_ = stack.depth;
  python_depth_ = stack.python_depth;
  uint32_t flags = stack.flags;
  // A blocking collective's begin is at the enter's time: the enter carries it.
  if (begins_collective && g_mpi_event_base != kNoEventSet)
    flags |= kRegionCarriesEmptyEvent | event_kind(MpiEventKind::kCollectiveBegin) << kEmptyEventKindShift;
  if (recorded_after_) flags |= kRegionEnterLate;
  enter_flags_ = flags;
  if (!recorded_after_) enter_ns_ = trace_clock_now();
  // Addresses and Python frames wait in the thread's scratch, which a
  // sample may reuse once the busy guard is gone: a new stack's enter
  // cannot wait for begin().
  if (stack_depth_ != 0 || python_depth_ != 0) write_enter(false);
}

RegionView MpiCall::body(uint32_t flags, bool carries_held) const {
  if (!carries_held) return RegionView{mpi_region(function_), flags, nullptr};
  flags |= kRegionCarriesEvent | event_kind(held_event_.kind) << kCarriedEventKindShift |
           (held_event_.counts ? kRegionEventCounts : 0u);
  return RegionView{mpi_region(function_), flags, &held_payload_};
}

void MpiCall::begin() {
  if (thread_ == nullptr || begun_) return;
  // A held event is stamped with the enter's time (see emit).
  write_enter(held_);
  held_ = false;
}

void MpiCall::write_enter(bool carries_held) {
  begun_ = true;
  ThreadState& t = *thread_;
  BusyScope busy(&t);
  const RegionView enter = body(enter_flags_, carries_held);
  // A repeat of the last call from this stack, of a function that does not
  // wait (or of a call recorded after it ran), waits for its leave, which
  // then writes the call as one record, or for whatever the thread writes
  // first (a sample taken inside the real call, an event).
  if ((returns_at_once(function_) || recorded_after_) &&
      t.traced.calls.defer_enter(enter_ns_, enter, stack_, stack_depth_, python_depth_)) {
    entered_ = true;
    return;
  }
  // Every record of a traced call goes through write_or_flush: a full ring
  // is written out, not a lost event. (The writes inline: they are the
  // wrappers' common path.)
  if (!drain_->write_or_flush(t, [&]() __attribute__((always_inline)) {
        return t.traced.calls.enter(t.ring, enter_ns_, enter, stack_, t.unwind_scratch, stack_depth_,
                                    t.sampled.python_scratch, python_depth_);
      })) {
    // A record larger than the ring: the hooks still run (some talk to the
    // other ranks, which expect it); only this call's region (and the event
    // it carried) is lost.
    t.traced.dropped_events.fetch_add(carries_held ? 2 : 1, std::memory_order_relaxed);
    return;
  }
  entered_ = true;
}

MpiCall::~MpiCall() {
  if (thread_ == nullptr) return;
  begin();  // a call whose hooks never reached it
  const uint64_t now = end_ns();
  if (!entered_) {
    // The enter was lost: no leave either, but events still count.
    write_held_event();
    return;
  }
  // A program making MPI calls back to back fills its ring faster than the
  // drain's interval empties it.
  if (thread_->traced_call_wants_early_drain(now)) drain_->wake();
  const bool carries = held_ && held_event_.timestamp == now && held_repeats_ == 0;
  if (!carries) write_held_event();
  BusyScope busy(thread_);
  ThreadState& t = *thread_;
  const RegionView leave = body(0, carries);
  if (!drain_->write_or_flush(
          t, [&]() __attribute__((always_inline)) { return t.traced.calls.leave(t.ring, now, leave, stack_); })) {
    // The enter is in the stream: a lost leave would leave the region open
    // to the thread's end. The drain closes it there; count it.
    thread_->traced.dropped_events.fetch_add(carries ? 2 : 1, std::memory_order_relaxed);
  }
}

uint64_t MpiCall::end_ns() {
  if (end_ns_ == 0) end_ns_ = trace_clock_now();
  return end_ns_;
}

// Events keep the order they were emitted in. The first one stamped with
// the enter's time before begin() waits for the enter record; one stamped
// with the end's time waits for the leave record, until another comes.
void MpiCall::emit(MpiEventKind kind, uint64_t timestamp, uint32_t comm, uint32_t peer, uint32_t tag,
                   uint64_t sent, uint64_t received, uint64_t request, uint32_t op) {
  if (thread_ == nullptr || g_mpi_event_base == kNoEventSet) return;  // no kinds left to number them (never so far)
  const EventFields fields{comm, peer, tag, op, sent, received, request};
  if (!begun_) {
    if (!held_ && timestamp == enter_ns_) return hold(kind, timestamp, fields);
    begin();
  }
  if (held_ && repeats_held(kind, timestamp, fields)) {
    ++held_repeats_;
    return;
  }
  write_held_event();
  if (end_ns_ != 0 && timestamp == end_ns_) return hold(kind, timestamp, fields);
  write_traced_event(*drain_, *thread_, event_kind(kind), timestamp, ::hybridprof::mpi::payload_of(fields));
}

void MpiCall::hold(MpiEventKind kind, uint64_t timestamp, const EventFields& fields) {
  held_event_ = HeldEvent{kind, timestamp, fields.request != 0};
  held_payload_ = ::hybridprof::mpi::payload_of(fields);  // built where it waits, not copied there
  held_ = true;
  held_repeats_ = 0;
}

bool MpiCall::repeats_held(MpiEventKind kind, uint64_t timestamp, const EventFields& fields) const {
  if (kind != held_event_.kind || timestamp != held_event_.timestamp ||
      held_repeats_ + 1 >= raw::kMaxEventRun)  // a run is at most that long: the next starts a new one
    return false;
  EventPayload p = ::hybridprof::mpi::payload_of(fields);
  // A counting event's request is the held one's advanced once per repeat.
  if (held_event_.counts) count_on(p, -int64_t(held_repeats_) - 1);
  return p == held_payload_;
}

void MpiCall::write_held_event() {
  if (!held_) return;
  held_ = false;
  const EventRepeat how = held_event_.counts ? EventRepeat::kCounted : EventRepeat::kSame;
  write_traced_event_run(*drain_, *thread_, event_kind(held_event_.kind), held_event_.timestamp, held_payload_, how,
                         held_repeats_);
  held_repeats_ = 0;
}

// --- Sizes ----------------------------------------------------------------------

namespace {

// Predefined datatypes' sizes, written once each and read without a lock
// (a send asks before its real call). A program uses a handful.
struct KnownTypeSize {
  std::atomic<uintptr_t> type{0};  // 0: free
  std::atomic<int> size{0};
};
constexpr size_t kKnownTypes = 64;
KnownTypeSize g_known_types[kKnownTypes];
std::mutex g_known_types_mutex;  // writers

size_t first_slot(uintptr_t key) { return (key >> 4 ^ key >> 12) % kKnownTypes; }

int known_type_size(uintptr_t key) {
  for (size_t n = 0, i = first_slot(key); n < kKnownTypes; ++n, i = (i + 1) % kKnownTypes) {
    const uintptr_t at = g_known_types[i].type.load(std::memory_order_acquire);
    if (at == key) return g_known_types[i].size.load(std::memory_order_relaxed);
    if (at == 0) break;
  }
  return -1;
}

void remember_type_size(uintptr_t key, int size) {
  std::lock_guard lock(g_known_types_mutex);
  for (size_t n = 0, i = first_slot(key); n < kKnownTypes; ++n, i = (i + 1) % kKnownTypes) {
    const uintptr_t at = g_known_types[i].type.load(std::memory_order_relaxed);
    if (at == key) return;
    if (at != 0) continue;
    g_known_types[i].size.store(size, std::memory_order_relaxed);
    g_known_types[i].type.store(key, std::memory_order_release);
    return;
  }  // full: asked every time
}

bool predefined(MPI_Datatype type) {
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  return pmpi().Type_get_envelope != nullptr &&
         pmpi().Type_get_envelope(type, &integers, &addresses, &types, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

}  // namespace

bool known_type_bytes(MPI_Datatype type, int64_t count, uint64_t* bytes) {
  const uintptr_t key = handle_key(type);
  const int size = key != 0 ? known_type_size(key) : -1;
  if (size < 0) return false;
  *bytes = count <= 0 ? 0 : static_cast<uint64_t>(size) * static_cast<uint64_t>(count);
  return true;
}

uint64_t type_bytes(MPI_Datatype type, int64_t count) {
  if (count <= 0) return 0;
  uint64_t bytes = 0;
  if (known_type_bytes(type, count, &bytes)) return bytes;
  int size = 0;
  if (pmpi().Type_size(type, &size) != MPI_SUCCESS || size < 0) return 0;
  if (handle_key(type) != 0 && predefined(type)) remember_type_size(handle_key(type), size);
  return static_cast<uint64_t>(size) * static_cast<uint64_t>(count);
}

uint64_t received_bytes(const MPI_Status* status, MPI_Datatype type) {
#ifdef OPEN_MPI
  // Open MPI's status holds the byte count itself (MPI_Get_count divides
  // it by the type's size): no two calls into the library per receive.
  (void)type;
  return status->_ucount;
#else
  int count = 0;
  if (pmpi().Get_count(status, type, &count) != MPI_SUCCESS || count < 0) return 0;
  return type_bytes(type, count);
#endif
}

int comm_size(MPI_Comm comm) {
  int n = 0;
  return pmpi().Comm_size(comm, &n) == MPI_SUCCESS ? n : 0;
}

int comm_rank(MPI_Comm comm) {
  int r = -1;
  return pmpi().Comm_rank(comm, &r) == MPI_SUCCESS ? r : -1;
}

}  // namespace hybridprof::mpi
