// The MPI tracer: what every intercepted MPI call does around the real one
// (region enter/leave with the caller's stack), and the records the hooks
// (mpi_hooks.h) emit: messages, collectives, requests, communicators.
//
// Not the signal path: wrappers run in the program's thread like any
// library code and may lock and allocate. They hold the thread's busy guard
// only while they touch its ring or its unwind scratch, so samples taken
// inside the real MPI call are recorded.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <type_traits>

#include "mpi/mpi_events.h"
#include "mpi/mpi_functions.h"
#include "sigsafe/reentrancy_guard.h"
#include "trace/drain.h"
#include "trace/raw_format.h"
#include "trace/records.h"
#include "trace/thread_state.h"
#include "trace/traced_call_writer.h"

namespace hybridprof::mpi {

using MpiEventKind = ::hybridprof::mpi::EventKind;

// The process's number for an MPI event kind (trace/event_sets.h): the
// set's base, registered with the regions at the first call, plus the
// kind's index.
extern uint32_t g_mpi_event_base;
inline uint32_t event_kind(MpiEventKind k) { return g_mpi_event_base + static_cast<uint32_t>(k); }

// One intercepted call on the calling thread. The region's enter record is
// written by begin(), just before the real call, so that an event the
// hooks stamp with the enter's time (a send) travels inside it; an event
// stamped with the call's end (a receive) travels inside the leave record.
class MpiCall {
 public:
  // Starts `f`'s region unless this thread is not traced or is already
  // inside an MPI call (MPI calling itself: one region is enough). A
  // blocking collective's enter also begins the collective operation.
  // (Inline, as the Ran one: a call level less under every traced call.)
  explicit MpiCall(MpiFunction f, bool begins_collective = false) : function_(f) { start(begins_collective); }
  // A call recorded after its real call returned (a send whose message has
  // left: see RecordsAfter in mpi_intercept.h): the real call ran from
  // trace clock reading `start` to `end`. Its enter is written now, late
  // (kRegionEnterLate: the drain puts a sample taken in the real call
  // inside it), with its leave.
  // `thread`: the calling thread's state as the host gave it just now (its
  // lookup, a virtual call, made once for the call's profiler work).
  // Scalars, not a struct: 24 bytes go by the stack, and the caller's two
  // 8-byte stores of the times read back as one 16-byte load stalled store
  // forwarding at every eager send (half of MPI_Send's own samples under
  // osu_latency).
  MpiCall(MpiFunction f, uint64_t start_ns, uint64_t end_ns, ThreadState* thread)
      : function_(f), recorded_after_(true), enter_ns_(start_ns), end_ns_(end_ns) {
    start(false, thread);
  }
  ~MpiCall();  // leaves the region
  MpiCall(const MpiCall&) = delete;
  MpiCall& operator=(const MpiCall&) = delete;

  // This call is traced (its hooks run), whether or not its enter record
  // found room in the ring.
  bool recording() const { return thread_ != nullptr; }
  // The calling thread's state while recording() (else null).
  ThreadState* thread() const { return thread_; }
  // Writes the enter record (once; the real call comes next).
  void begin();
  // Times in the trace clock (common/trace_clock.h): the call's start, and
  // its end, which events at the end carry (read once, after the real call).
  uint64_t enter_ns() const { return enter_ns_; }
  uint64_t end_ns();

  // Where a call whose program ignores its status gets it: the tracer
  // needs it to learn who sent a message and how large it was.
  MPI_Status* own_status() { return &own_status_; }

  // An MPI event at `timestamp` (enter_ns(), end_ns()) on this thread, in
  // the order emitted.
  void emit(MpiEventKind kind, uint64_t timestamp, uint32_t comm, uint32_t peer, uint32_t tag,
            uint64_t sent = 0, uint64_t received = 0, uint64_t request = 0, uint32_t op = 0);

 private:
  // An event held back to travel inside the enter or the leave record;
  // its payload waits in held_payload_.
  struct HeldEvent {
    MpiEventKind kind;
    uint64_t timestamp;
    bool counts;  // it names a request: ids are numbered in turn (event_payload.h)
  };
  void hold(MpiEventKind kind, uint64_t timestamp, const EventFields& fields);
  // Whether an event of these fields at `timestamp` repeats the held one
  // (and its repeats so far): the same, or its request the next.
  bool repeats_held(MpiEventKind kind, uint64_t timestamp, const EventFields& fields) const;
  // The constructors' work; `known`: the calling thread's state where the
  // caller has it (null: looked up).
  void start(bool begins_collective, ThreadState* known = nullptr);
  void write_enter(bool carries_held);
  // This call's enter (flags) or leave (0) record, with the held event
  // inside it when `carries_held` (its payload read where it waits).
  RegionView body(uint32_t flags, bool carries_held) const;
  void write_held_event();

  // MPI calling itself (an intercepted call inside another): one region is enough.
  const sigsafe::SectionScope traced_call_{sigsafe::Section::kTracedCall};
  ThreadState* thread_ = nullptr;
  Drain* drain_ = nullptr;  // set with thread_
  bool begun_ = false;    // begin() ran
  bool entered_ = false;  // the enter record is in the ring
  bool held_ = false;     // held_event_ is waiting for a record to travel in
  // Events after the held one that repeat it at its time (a Waitall's
  // completions of requests made in turn): written as one run after it.
  uint32_t held_repeats_ = 0;
  MpiFunction function_;
  uint32_t enter_flags_ = 0;
  bool recorded_after_ = false;  // made by the recorded-after constructor
  uint32_t stack_depth_ = 0;  // addresses in the thread's unwind scratch for the enter
  uint32_t python_depth_ = 0;  // Python frames in the thread's Python scratch for the enter
  CallerStackCache::Ref stack_;
  uint64_t enter_ns_ = 0;
  HeldEvent held_event_;
  // Not next to enter_ns_: the Ran constructor's two were then stored as
  // one 16-byte copy of the argument, spilled 8 bytes at a time (a
  // store-forwarding stall on every call recorded after it ran).
  uint64_t end_ns_ = 0;
  // Built where it waits, and read there (RegionView): not copied on the
  // call's path (a 16-byte copy of fields just written 8 bytes at a time
  // waits for the stores to reach the cache).
  EventPayload held_payload_;
  MPI_Status own_status_;
};

// --- Facts the hooks need --------------------------------------------------

// A handle as a number: a pointer in Open MPI, an integer in MPICH.
template <typename Handle>
uintptr_t handle_key(Handle handle) {
  if constexpr (std::is_pointer_v<Handle>)
    return reinterpret_cast<uintptr_t>(handle);
  else
    return static_cast<uintptr_t>(handle);
}

// This process's comm id for `comm` (registering communicators it has not
// seen, e.g. created before the runtime started, without a job-wide key).
uint32_t comm_id(MPI_Comm comm);
// After a call that created `newcomm` from `parent` (collective over
// `newcomm`'s members): agrees on a job-wide key with the other members and
// records the communicator with its members as world ranks.
void register_comm(MPI_Comm newcomm, MPI_Comm parent, const char* how);
// Before MPI_Comm_free.
void forget_comm(MPI_Comm comm);

// MPI_Init / MPI_Init_thread succeeded: world, self, clocks.
void on_mpi_initialized();
// Before the real MPI_Finalize: clock offsets again, final flush of MPI state.
void before_mpi_finalize();

// MPI_Finalize (mpi_job_exit.cc). In a rank whose launcher asked for the
// job's archive at the end of the job, the real MPI_Finalize waits until
// exit: there the rank closes its raw stream, and all ranks write the
// archive together through MPI before finalizing. Until then the program
// goes on being sampled and sees MPI as finalized.
int finalize_or_defer(int (*real_finalize)());
bool finalize_deferred();

uint64_t type_bytes(MPI_Datatype type, int64_t count);
// The same without a call into MPI, where `type` is a predefined datatype
// type_bytes has seen (their sizes are remembered: they are never freed,
// where a derived type's handle may be freed and reused); false otherwise.
bool known_type_bytes(MPI_Datatype type, int64_t count, uint64_t* bytes);
// The size of the message a completed receive `status` describes.
uint64_t received_bytes(const MPI_Status* status, MPI_Datatype type);
int comm_size(MPI_Comm comm);
int comm_rank(MPI_Comm comm);

// Outstanding non-blocking operations, by handle.
struct PendingRequest {
  enum class Kind : uint8_t { kSend, kRecv, kCollective };
  Kind kind = Kind::kSend;
  bool persistent = false;
  bool active = true;  // false: a persistent request between completion and its next start
  uint32_t comm = 0, peer = 0, tag = 0, op = 0;
  uint64_t sent = 0, received = 0;  // send bytes / collective bytes
  MPI_Datatype recv_type = nullptr;  // receives: the received size comes from the status
  uint64_t id = 0;                   // OTF2 request id, new for every start
};

uint64_t next_request_id();
void track_request(MPI_Request handle, const PendingRequest& request);
// Non-persistent: removes and returns it. Persistent: returns it and marks
// it inactive. False for untracked handles (made before tracing, or by
// functions not intercepted).
bool complete_request(MPI_Request handle, PendingRequest* request);
// complete_request for handles[0..n) in turn (as they were before the
// completion call), each completed one's completion emitted (emit_completion)
// with statuses[i] (null: the statuses were ignored).
void complete_requests(MpiCall& call, const MPI_Request* handles, size_t n, const MPI_Status* statuses);
// MPI_Start: activates a persistent request under a new id.
bool start_request(MPI_Request handle, PendingRequest* request);
// MPI_Request_free.
bool drop_request(MPI_Request handle, PendingRequest* request);
bool peek_request(MPI_Request handle, PendingRequest* request);

// Emits the completion record of `request` (IsendComplete, Irecv with the
// status' sender, tag and size, NonBlockingCollectiveComplete, or
// RequestCancelled).
void emit_completion(MpiCall& call, const PendingRequest& request, const MPI_Status* status);

}  // namespace hybridprof::mpi
