#include "openmp/gomp_tracer.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>

#include "common/fatal.h"
#include "common/trace_switch.h"
#include "openmp/ompt_tool.h"
#include "openmp/openmp_regions.h"
#include "trace/drain.h"
#include "trace/traced_region.h"

namespace hybridprof::openmp {
namespace {

// kForkStart's packets, until their kJoin.
struct KeptPackets {
  ForkPacket packets[16];
  uint32_t depth = 0;
};
// (Constant-initialized and initial-exec, as t_running_body below: no
// guard, no __tls_get_addr call, at every region.)
constinit thread_local KeptPackets t_packets __attribute__((tls_model("initial-exec"))){};

// The program's outlined function (a parallel body, a task) that this
// thread runs from the runtime's trampolines (traced_body, traced_task),
// innermost; null outside them.
// (initial-exec: the runtime is preloaded, its TLS static; a load, not a
// __tls_get_addr call, at every region.)
thread_local void (*t_running_body)(void*) __attribute__((tls_model("initial-exec"))) = nullptr;

// Runs `fn(data)` as the thread's running body.
void run_body(void (*fn)(void*), void* data) {
  void (*const outer)(void*) = t_running_body;
  t_running_body = fn;
  fn(data);
  t_running_body = outer;
}

// Where a call of the program's was made: `site` is the wrapper's return
// address. An outlined body that ends in a tail call (GCC's `jmp
// GOMP_barrier` after a loop that ran no iterations) returns from the
// runtime into whoever called the body, here the runtime's own trampoline:
// the call is then named after the body (`tail_called`), in the program's
// source, never after the profiler's.
struct ProgramCode {
  uint64_t code;
  bool tail_called;
};
ProgramCode program_code(TracingHost& host, const void* site) {
  const uint64_t code = reinterpret_cast<uint64_t>(site) - 1;  // the call's own line
  if (!host.drain().runtime_code(code) || t_running_body == nullptr) return {code, false};
  return {reinterpret_cast<uint64_t>(t_running_body), true};
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

void* require_gomp_function(const char* name) {
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  if (void* p = find_in_loaded_libgomp(name)) return p;
  die_plainly({"an OpenMP function was called but no libgomp defines ", name});
}

// LLVM's libomp, Intel's libiomp5: runtimes with OMPT that also define
// the GOMP_ entry points.
bool in_ompt_runtime(void* function) {
  Dl_info info;
  if (dladdr(function, &info) == 0 || info.dli_fname == nullptr) return false;
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  return std::strncmp(base, "libomp", 6) == 0 || std::strncmp(base, "libiomp", 7) == 0;
}

}  // namespace

const void* this_thread_token() { return &t_packets; }

RealGompFunction::RealGompFunction(const char* name)
    : function(require_gomp_function(name)),
      in_ompt_runtime(openmp::in_ompt_runtime(function)),
      switched_on(adapter_traced("openmp")) {}

namespace {

// What a traced task's data begins with: libgomp copies it with the
// program's own data, which follows at `offset`.
struct TaskHeader {
  void (*fn)(void*);
  uint64_t code;
  uint64_t offset;
};

void traced_task(void* arg) {
  const auto* header = static_cast<const TaskHeader*>(arg);
  void* data = static_cast<char*>(arg) + header->offset;
  TracingHost* host = traced_host();
  if (host == nullptr) return header->fn(data);
  const uint32_t depth = open_depth();
  open(*host, Construct::kTask, false, header->code);
  run_body(header->fn, data);
  close_above(depth);
}

constexpr unsigned kTaskDetach = 1u << 13;  // libgomp's GOMP_TASK_FLAG_DETACH

}  // namespace

void create_task(const RealGompFunction& real, const void* site, void (*fn)(void*), void* data,
                 void (*cpyfn)(void*, void*), long arg_size, long arg_align, bool if_clause, unsigned flags,
                 void** depend, int priority, void* detach) {
  const auto real_task = reinterpret_cast<GompTaskFunction>(real.function);
  if (!real.traced() || cpyfn != nullptr || (flags & kTaskDetach) != 0 || arg_size < 0 || arg_align <= 0 ||
      traced_host() == nullptr)
    return real_task(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach);
  // The header, then the program's data at its own alignment. libgomp
  // copies both before GOMP_task returns (or runs the task right away).
  const long align = std::max<long>(arg_align, alignof(TaskHeader));
  const long offset = (static_cast<long>(sizeof(TaskHeader)) + align - 1) / align * align;
  const long size = offset + arg_size;
  alignas(64) char local[256];
  std::unique_ptr<char[]> heap;
  char* arg = local;
  if (size > static_cast<long>(sizeof local) || align > 64) {
    heap = std::make_unique<char[]>(static_cast<size_t>(size + align));
    const auto at = reinterpret_cast<uintptr_t>(heap.get());
    arg = heap.get() + ((at + align - 1) / align * align - at);
  }
  *reinterpret_cast<TaskHeader*>(arg) = {fn, reinterpret_cast<uint64_t>(site) - 1, static_cast<uint64_t>(offset)};
  if (arg_size > 0) std::memcpy(arg + offset, data, static_cast<size_t>(arg_size));
  real_task(&traced_task, arg, nullptr, size, align, if_clause, flags, depend, priority, detach);
}

void before_fork(const ForkPacket& packet, unsigned num_threads) {
  // Under the wrapper's ProfilerWork (gomp_wrappers.cc).
  if (!packet.traced || packet.forker_state == nullptr) return;
  if (num_threads == 0) {
    static const RealGompFunction max_threads("omp_get_max_threads");
    num_threads = static_cast<unsigned>(reinterpret_cast<int (*)()>(max_threads.function)());
  }
  fork(num_threads);
}

void after_fork(const ForkPacket& packet) {
  if (packet.traced) join();
}

void traced_body(void* p) {
  const auto* packet = static_cast<const ForkPacket*>(p);
  // A worker runs bodies between waits for work; its master forked them
  // and looked itself up as it did.
  const bool worker = packet->forker != this_thread_token();
  TracingHost* host = nullptr;
  ThreadState* thread = nullptr;
  if (packet->traced && !worker) {
    thread = packet->forker_state;
    host = tracing_host();
  } else if (packet->traced && (host = traced_host()) != nullptr) {
    thread = host->current_thread();
  }
  if (host == nullptr || thread == nullptr) return run_body(packet->fn, packet->data);
  uint32_t depth = 0;
  {
    const ProfilerWork work(thread);  // not around the body: its samples are the program's
    if (worker) worker_busy();
    depth = open_depth();
    const auto body = reinterpret_cast<uint64_t>(packet->fn);
    open_on(*host, thread, Construct::kParallel, false, body);
    if (packet->construct != Construct::kParallel) open_on(*host, thread, packet->construct, false, body);
  }
  run_body(packet->fn, packet->data);
  // A combined loop's nowait end closed the loop; what the body left open closes with it.
  const ProfilerWork work(thread);
  close_above(depth);
  if (!worker) return;
  if (TracingHost* now = traced_host()) worker_idle(*now, thread);
}

ForkPacket* keep_fork_packet(const ForkPacket& packet) {
  if (t_packets.depth == std::size(t_packets.packets))
    die_plainly({"GOMP_parallel_start nested deeper than the runtime keeps (16)"});
  ForkPacket* kept = &t_packets.packets[t_packets.depth++];
  *kept = packet;
  return kept;
}

void after_fork_start(ForkPacket* packet) {
  // The master runs the body itself, between the start and the end.
  if (!packet->traced) return;
  const ProfilerWork work;
  if (TracingHost* host = traced_host()) open(*host, Construct::kParallel, false, reinterpret_cast<uint64_t>(packet->fn));
}

void before_call(Construct c, Role r, const void* site) {
  TracingHost* host = traced_host();
  if (host == nullptr) return;
  const auto [code, tail_called] = program_code(*host, site);
  switch (r) {
    case Role::kCall:
      // A barrier the body ends with is the implicit one closing its last
      // loop: an explicit barrier there would only repeat the region's own.
      open(*host, c == Construct::kBarrierCall && tail_called ? Construct::kImplicitBarrier : c, false, code);
      break;
    case Role::kStart:
      open(*host, c, false, code);
      break;
    case Role::kStartWaiting:
      open(*host, c, false, code);
      open(*host, c, true, code);
      break;
    case Role::kFinishWaiting:
      open(*host, c, true, code);
      break;
    default:
      break;
  }
}

void after_call(Construct c, Role r) {
  switch (r) {
    case Role::kCall:
      if (!close(c, false) && c == Construct::kBarrierCall) close(Construct::kImplicitBarrier, false);
      break;
    case Role::kFinish:
      close(c, false);
      break;
    case Role::kStartWaiting:
      close(c, true);
      break;
    case Role::kFinishWaiting:
      close(c, true);
      close(c, false);
      break;
    case Role::kJoin:
      close(Construct::kParallel, false);
      if (t_packets.depth > 0) after_fork(t_packets.packets[--t_packets.depth]);
      break;
    default:
      break;
  }
}

}  // namespace hybridprof::openmp
