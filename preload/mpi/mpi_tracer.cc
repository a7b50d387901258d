#include "preload/mpi/mpi_tracer.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "otf2/types.h"
#include "preload/mpi/pmpi.h"
#include "preload/runtime.h"
#include "trace/records.h"
#include "unwind/caller_stack_cache.h"

namespace hybridprof::preload::mpi {
namespace {

// Nonzero while this thread is inside an intercepted call.
__thread int tls_mpi_depth __attribute__((tls_model("initial-exec"))) = 0;

std::atomic<bool> g_regions_defined{false};
std::mutex g_regions_mutex;

// The wrappers' code ranges, so the drain files frames inside a wrapper
// (samples taken during the real call) under the call's region.
std::vector<Drain::TracedCode> wrapper_code() {
  std::vector<Drain::TracedCode> code;
  const void* functions[] = {
#define MPI_FUNCTION(name, params, args) reinterpret_cast<const void*>(&::name),
#include "mpi/mpi_functions.def"
  };
  for (uint32_t i = 0; i < kMpiFunctionCount; ++i) {
    Dl_info info;
    void* entry = nullptr;
    if (dladdr1(functions[i], &info, &entry, RTLD_DL_SYMENT) == 0) continue;
    const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
    if (symbol &&
        symbol->st_size > 0) {
      const auto start = reinterpret_cast<uint64_t>(info.dli_saddr);
      code.push_back({start, start + symbol->st_size, mpi_region(static_cast<MpiFunction>(i))});
    }
  }
  return code;
}

// Region definitions and wrapper ranges, once per process, at the first call.
__attribute__((noinline)) void define_regions_once(Runtime& rt) {
  std::lock_guard lock(g_regions_mutex);
  if (g_regions_defined.load(std::memory_order_relaxed)) return;
  std::vector<raw::Record> defs;
  for (uint32_t i = 0; i < kMpiFunctionCount; ++i) {
    const auto f = static_cast<MpiFunction>(i);
    defs.push_back(raw::RegionDef{mpi_region(f), mpi_function_name(f), static_cast<uint32_t>(otf2::Paradigm::kMpi)});
  }
  rt.drain.append(defs);
  rt.drain.add_traced_code(wrapper_code());
  g_regions_defined.store(true, std::memory_order_release);
}

inline void define_regions(Runtime& rt) {
  if (!g_regions_defined.load(std::memory_order_acquire)) define_regions_once(rt);
}

}  // namespace

const char* mpi_function_name(MpiFunction f) {
  static const char* const names[] = {
#define MPI_FUNCTION(name, params, args) #name,
#include "mpi/mpi_functions.def"
  };
  const auto i = static_cast<uint32_t>(f);
  return i < kMpiFunctionCount ? names[i] : "MPI_(unknown)";
}

// --- The call -----------------------------------------------------------------

MpiCall::MpiCall(MpiFunction f, bool begins_collective) : function_(f) {
  Runtime* rt = runtime();
  ThreadContext* ctx = this_thread();
  if (tls_mpi_depth++ != 0 || rt == nullptr || ctx == nullptr || !sampling_enabled()) return;
  define_regions(*rt);
  ThreadState& t = *ctx->state;
  BusyScope busy(&t);
  if (!t.caller_stacks) t.caller_stacks = std::make_unique<CallerStackCache>(rt->config.max_depth);
  uint32_t flags = 0;
  CallerStackCache::Ref stack;
  uint32_t depth = t.caller_stacks->capture(t.unwind_scratch, &flags, &stack);
  // A stack the drain has already seen goes by its reference alone.
  if (stack.generation != 0 && !stack.stored) depth = 0;
  enter_ns_ = monotonic_ns();
  RecordHeader* h = t.ring.reserve_exclusive(static_cast<uint32_t>(sizeof(RegionRecord) + 8u * depth),
                                   static_cast<uint16_t>(RecordType::kRegionEnter), static_cast<uint16_t>(depth));
  thread_ = &t;
  if (h == nullptr) {
    // The hooks still run (some talk to the other ranks, which expect it);
    // only this call's region is lost.
    t.dropped_events.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto* r = reinterpret_cast<RegionRecord*>(h);
  r->timestamp_ns = enter_ns_;
  r->region = mpi_region(f);
  r->flags = flags | (begins_collective ? kEnterBeginsCollective : 0u);
  r->stack_slot = stack.slot;
  r->stack_generation = stack.generation;
  std::memcpy(r->ips(), t.unwind_scratch, 8u * depth);
  t.ring.commit_exclusive();
  entered_ = true;
}

MpiCall::~MpiCall() {
  --tls_mpi_depth;
  if (!entered_) return;  // not traced, or the enter was lost: no leave either
  const uint64_t now = end_ns();
  // A program making MPI calls back to back fills its ring faster than the
  // drain's interval empties it.
  if (thread_->wants_early_drain(now))
    if (Runtime* rt = runtime()) rt->drain.wake();
  BusyScope busy(thread_);
  RecordHeader* h = thread_->ring.reserve_exclusive(sizeof(RegionRecord), static_cast<uint16_t>(RecordType::kRegionLeave), 0);
  if (h == nullptr) {
    // The enter is in the stream: a lost leave would leave the region open
    // to the thread's end. The drain closes it there; count it.
    thread_->dropped_events.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto* r = reinterpret_cast<RegionRecord*>(h);
  r->timestamp_ns = now;
  r->region = mpi_region(function_);
  r->flags = 0;
  r->stack_slot = 0;
  r->stack_generation = 0;
  thread_->ring.commit_exclusive();
}

uint64_t MpiCall::end_ns() {
  if (end_ns_ == 0) end_ns_ = monotonic_ns();
  return end_ns_;
}

void MpiCall::emit(raw::MpiEventKind kind, uint64_t timestamp_ns, uint32_t comm, uint32_t peer, uint32_t tag,
                   uint64_t sent, uint64_t received, uint64_t request, uint32_t op) {
  if (thread_ == nullptr) return;
  BusyScope busy(thread_);
  RecordHeader* h = thread_->ring.reserve_exclusive(sizeof(MpiEventRecord), static_cast<uint16_t>(RecordType::kMpiEvent),
                                          static_cast<uint16_t>(kind));
  if (h == nullptr) {
    thread_->dropped_events.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto* e = reinterpret_cast<MpiEventRecord*>(h);
  e->timestamp_ns = timestamp_ns;
  e->comm = comm;
  e->peer = peer;
  e->tag = tag;
  e->op = op;
  e->sent = sent;
  e->received = received;
  e->request = request;
  thread_->ring.commit_exclusive();
}

// --- Sizes ----------------------------------------------------------------------

uint64_t type_bytes(MPI_Datatype type, int64_t count) {
  int size = 0;
  if (count <= 0 || pmpi().Type_size(type, &size) != MPI_SUCCESS || size < 0) return 0;
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

}  // namespace hybridprof::preload::mpi
