#include "openmp/ompt_tool.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/trace_switch.h"
#include "openmp/openmp_regions.h"

#if __has_include(<omp-tools.h>)
#include <omp-tools.h>

#include "trace/drain.h"
#include "trace/traced_region.h"
#include "trace/tracing_host.h"
#define HYBRIDPROF_HAVE_OMPT 1
#endif

namespace hybridprof::openmp {
namespace {
std::atomic<bool> g_reports{false};
}  // namespace

bool ompt_reports() { return g_reports.load(std::memory_order_relaxed); }

#ifdef HYBRIDPROF_HAVE_OMPT

namespace {

// The code a construct is at: just before the runtime call the compiler
// made for it (codeptr_ra is that call's return address); 0 if not given.
uint64_t code_at(const void* codeptr_ra) {
  return codeptr_ra ? reinterpret_cast<uint64_t>(codeptr_ra) - 1 : 0;
}

// Opens or closes construct `c` (and optionally its wait) as `endpoint` says.
void scope(ompt_scope_endpoint_t endpoint, Construct c, uint64_t code) {
  if (endpoint == ompt_scope_begin) {
    if (TracingHost* host = traced_host()) open(*host, c, false, code);
  } else if (endpoint == ompt_scope_end) {
    close_through(c, false);
  }
}

// ompt_data_t values hybridprof keeps: a task's code, shifted left one bit
// and tagged in bit 0 with what it is.
//   explicit task   (code << 1) | 1: its code, to name it where it runs;
//   other tasks     code << 1: the code of the parallel region it forked
//                   last, for that region's workers to read (below);
//   parallel        the region's code, untagged.
ompt_get_task_info_t g_get_task_info = nullptr;

void on_parallel_begin(ompt_data_t* encountering, const ompt_frame_t*, ompt_data_t* parallel, unsigned requested,
                       int flags, const void* codeptr_ra) {
  const ProfilerWork work;  // the tool's own time ([hybridprof])
  const uint64_t code = code_at(codeptr_ra);
  if (parallel) parallel->value = code;
  if (encountering && !(encountering->value & 1)) encountering->value = code << 1;
  if (flags & ompt_parallel_team)
    if (traced_host() != nullptr) fork(requested);
}

void on_parallel_end(ompt_data_t*, ompt_data_t*, int flags, const void*) {
  const ProfilerWork work;
  if (flags & ompt_parallel_team)
    if (traced_host() != nullptr) join();
}

// The code of the parallel region a worker's implicit task begins. The
// region's own data can still hold the previous region's when a reused
// team's worker starts before its master has copied the new one in
// (libomp 14), so a worker reads what the encountering task (its parent)
// forked last.
uint64_t forked_code(ompt_data_t* parallel, unsigned index) {
  if (index != 0 && g_get_task_info) {
    ompt_data_t* parent = nullptr;
    if (g_get_task_info(1, nullptr, &parent, nullptr, nullptr, nullptr) == 2 && parent && parent->value != 0 &&
        !(parent->value & 1))
      return parent->value >> 1;
  }
  return parallel ? parallel->value : 0;
}

// How many parallel regions this thread left at their join barrier whose
// implicit task has not ended yet: libomp reports a worker's end only when
// the team next wakes it (or never, at exit), so its region ends when it
// starts waiting at the join instead, as with libgomp.
// (initial-exec: the runtime is preloaded, its TLS static; a load, not a
// __tls_get_addr call, at every region. As t_team_index.)
thread_local uint32_t t_left_at_join __attribute__((tls_model("initial-exec"))) = 0;
// This thread's number in the team of its innermost implicit task: 0 for
// a master, which is never idle between regions.
thread_local unsigned t_team_index __attribute__((tls_model("initial-exec"))) = 0;

// A worker has finished its part of a region: it waits for work.
void left_region(TracingHost* host) {
  if (t_team_index != 0 && host != nullptr) worker_idle(*host, host->current_thread());
}

void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t* parallel, ompt_data_t*, unsigned, unsigned index,
                      int flags) {
  const ProfilerWork work;
  if (flags & ompt_task_initial) return;  // a thread's initial task, not a parallel region
  if (endpoint == ompt_scope_begin) {
    t_team_index = index;
    if (TracingHost* host = traced_host()) {
      if (index != 0) worker_busy();
      open(*host, Construct::kParallel, false, forked_code(parallel, index));
    }
  } else if (endpoint == ompt_scope_end) {
    if (t_left_at_join > 0) {
      --t_left_at_join;
    } else if (close_through(Construct::kParallel, false)) {
      left_region(traced_host());
    }
  }
}

// A parallel region's closing barrier: OpenMP 5.1's kind, or (libomp 14)
// an implicit barrier with no code (a worker's) or at the region's own code
// (its master's).
bool join_barrier(ompt_sync_region_t kind, const ompt_data_t* parallel, const void* codeptr_ra) {
  if (kind == ompt_sync_region_barrier_implicit_parallel) return true;
  return kind == ompt_sync_region_barrier_implicit &&
         (codeptr_ra == nullptr || (parallel && parallel->value == code_at(codeptr_ra)));
}

Construct work_construct(ompt_work_t type) {
  switch (type) {
    case ompt_work_loop: return Construct::kLoop;
    case ompt_work_sections: return Construct::kSections;
    case ompt_work_single_executor:
    case ompt_work_single_other: return Construct::kSingle;
    case ompt_work_workshare: return Construct::kWorkshare;
    case ompt_work_distribute: return Construct::kDistribute;
    case ompt_work_taskloop: return Construct::kTaskloop;
    default: return Construct::kLoop;  // newer loop kinds (5.2's loop schedules)
  }
}

void on_work(ompt_work_t type, ompt_scope_endpoint_t endpoint, ompt_data_t*, ompt_data_t*, uint64_t,
             const void* codeptr_ra) {
  const ProfilerWork work;
  scope(endpoint, work_construct(type), code_at(codeptr_ra));
}

Construct sync_construct(ompt_sync_region_t kind) {
  switch (kind) {
    case ompt_sync_region_barrier_explicit: return Construct::kBarrier;
    case ompt_sync_region_taskwait: return Construct::kTaskwait;
    case ompt_sync_region_taskgroup: return Construct::kTaskgroup;
    case ompt_sync_region_reduction: return Construct::kReduction;
    default: return Construct::kImplicitBarrier;  // implicit, implementation's, teams'
  }
}

void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint, ompt_data_t* parallel, ompt_data_t*,
                    const void* codeptr_ra) {
  const ProfilerWork work;
  if (join_barrier(kind, parallel, codeptr_ra)) {
    if (endpoint == ompt_scope_begin && close_through(Construct::kParallel, false)) {
      ++t_left_at_join;
      left_region(traced_host());
    }
    return;
  }
  scope(endpoint, sync_construct(kind), code_at(codeptr_ra));
}

void on_masked(ompt_scope_endpoint_t endpoint, ompt_data_t*, ompt_data_t*, const void* codeptr_ra) {
  const ProfilerWork work;
  scope(endpoint, Construct::kMasked, code_at(codeptr_ra));
}

// An explicit task's data holds its code, to name it where it runs; an
// implicit or initial task's stays 0.
void on_task_create(ompt_data_t*, const ompt_frame_t*, ompt_data_t* task, int flags, int, const void* codeptr_ra) {
  const ProfilerWork work;
  if (task && (flags & ompt_task_explicit)) task->value = code_at(codeptr_ra) << 1 | 1;
}

void on_task_schedule(ompt_data_t* prior, ompt_task_status_t status, ompt_data_t* next) {
  const ProfilerWork work;
  // A detached task's fulfilment is not a switch.
  if (status == ompt_task_early_fulfill || status == ompt_task_late_fulfill) return;
  if (prior && (prior->value & 1)) close_through(Construct::kTask, false);
  if (next && (next->value & 1))
    if (TracingHost* host = traced_host()) open(*host, Construct::kTask, false, next->value >> 1);
}

// A mutex's construct; test locks have none while acquiring (the attempt
// may fail, and then nothing is acquired).
bool mutex_construct(ompt_mutex_t kind, Construct* c) {
  switch (kind) {
    case ompt_mutex_lock:
    case ompt_mutex_nest_lock: *c = Construct::kLock; return true;
    case ompt_mutex_critical: *c = Construct::kCritical; return true;
    case ompt_mutex_atomic: *c = Construct::kAtomic; return true;
    case ompt_mutex_ordered: *c = Construct::kOrdered; return true;
    default: *c = Construct::kLock; return false;
  }
}

void on_mutex_acquire(ompt_mutex_t kind, unsigned, unsigned, ompt_wait_id_t, const void* codeptr_ra) {
  const ProfilerWork work;
  Construct c;
  if (!mutex_construct(kind, &c)) return;
  if (TracingHost* host = traced_host()) {
    open(*host, c, false, code_at(codeptr_ra));
    open(*host, c, true, code_at(codeptr_ra));
  }
}

void on_mutex_acquired(ompt_mutex_t kind, ompt_wait_id_t, const void* codeptr_ra) {
  const ProfilerWork work;
  Construct c;
  if (mutex_construct(kind, &c)) {
    close(c, true);
  } else if (TracingHost* host = traced_host()) {
    open(*host, c, false, code_at(codeptr_ra));  // a test lock, taken
  }
}

void on_mutex_released(ompt_mutex_t kind, ompt_wait_id_t, const void*) {
  const ProfilerWork work;
  Construct c;
  mutex_construct(kind, &c);
  close_through(c, false);
}

// What the thread left open (a runtime shutting down mid-region) ends with it.
void on_thread_end(ompt_data_t*) { close_above(0); }

int initialize(ompt_function_lookup_t lookup, int, ompt_data_t*) {
  auto set_callback = reinterpret_cast<ompt_set_callback_t>(lookup("ompt_set_callback"));
  if (set_callback == nullptr) return 0;
  g_get_task_info = reinterpret_cast<ompt_get_task_info_t>(lookup("ompt_get_task_info"));
  const auto set = [&](ompt_callbacks_t which, auto callback) {
    const ompt_set_result_t r = set_callback(which, reinterpret_cast<ompt_callback_t>(callback));
    return r != ompt_set_error && r != ompt_set_never;
  };
  // Without parallel regions nothing else would have a place: leave the
  // GOMP_ entry points to their wrappers then.
  if (!set(ompt_callback_parallel_begin, &on_parallel_begin) || !set(ompt_callback_implicit_task, &on_implicit_task))
    return 0;
  set(ompt_callback_parallel_end, &on_parallel_end);
  set(ompt_callback_thread_end, &on_thread_end);
  set(ompt_callback_work, &on_work);
  set(ompt_callback_sync_region, &on_sync_region);
  set(ompt_callback_masked, &on_masked);
  set(ompt_callback_task_create, &on_task_create);
  set(ompt_callback_task_schedule, &on_task_schedule);
  set(ompt_callback_mutex_acquire, &on_mutex_acquire);
  set(ompt_callback_mutex_acquired, &on_mutex_acquired);
  set(ompt_callback_mutex_released, &on_mutex_released);
  g_reports.store(true, std::memory_order_relaxed);
  return 1;  // keep the tool
}

void finalize(ompt_data_t*) { g_reports.store(false, std::memory_order_relaxed); }

}  // namespace

void* start_ompt_tool(unsigned, const char*) {
  if (!adapter_traced("openmp")) return nullptr;  // --trace: the runtime runs with no tool
  // A runtime serves one tool: one the user asked for by name goes first.
  const char* others = std::getenv("OMP_TOOL_LIBRARIES");
  if (others != nullptr && *others != '\0') {
    const std::string line = std::string("OpenMP: OMP_TOOL_LIBRARIES names another OMPT tool (") + others +
                             "); it gets the runtime's events and OpenMP constructs are not traced";
    if (TracingHost* host = tracing_host()) {
      host->say(line);
      host->drain().append(raw::Notice{line});
    }
    return nullptr;
  }
  static ompt_start_tool_result_t result{&initialize, &finalize, ompt_data_t{}};
  return &result;
}

#endif

}  // namespace hybridprof::openmp
