// What an intercepted MPI call records besides its region: one Hooks<F>
// specialization per function (or family) that sends, receives, completes,
// collects or makes communicators. before() runs ahead of the real call and
// may redirect an ignored status to the tracer's own; after() runs once the
// real call returned `rc`. Parameters are the wrapper's own, by reference,
// with the exact types of the list (a mismatch does not compile).
//
// Byte counts of collectives are this rank's buffers as the call describes
// them: `sent` the send buffer (the root's whole buffer for bcast/scatter),
// `received` the receive buffer (the root's whole buffer for gather/reduce).
#pragma once

#include <mpi.h>

#include <vector>

#include "mpi/mpi_functions.h"
#include "mpi/mpi_tracer.h"
#include "mpi/pmpi.h"
#include "trace/traced_region.h"

namespace hybridprof::mpi {

using otf2::CollectiveOp;

// Functions that only have a region.
template <MpiFunction F>
struct Hooks {
  template <typename... A>
  static void before(MpiCall&, A&...) {}
  template <typename... A>
  static void after(MpiCall&, int, A&...) {}
};

// --- helpers ------------------------------------------------------------------

inline bool in_place(const void* buffer) { return buffer == MPI_IN_PLACE; }
inline bool real_peer(int rank) { return rank >= 0; }  // not MPI_PROC_NULL / MPI_ANY_SOURCE
inline uint64_t sum_bytes(const int counts[], int n, MPI_Datatype type) {
  int64_t total = 0;
  for (int i = 0; counts && i < n; ++i) total += counts[i];
  return type_bytes(type, total);
}

// Storage for statuses the program ignores: the tracer needs them to learn
// who sent a message and how large it was.
struct StatusScratch {
  std::vector<MPI_Status> many;
  std::vector<MPI_Request> handles;  // requests as they were before a completion call
  MPI_Status* array(int n) {
    if (many.size() < size_t(n)) many.resize(size_t(n));
    return many.data();
  }
};
// The calling thread's (PerThread: a load, where a thread_local object
// cost a __tls_get_addr call and a guard at every completion); null when
// it cannot be made (out of memory): statuses stay ignored and no
// completion is recorded.
StatusScratch* status_scratch();

inline void keep_status(MpiCall& call, MPI_Status*& status) {
  if (status == MPI_STATUS_IGNORE) status = call.own_status();
}
inline void keep_statuses(MPI_Status*& statuses, int n) {
  if (statuses != MPI_STATUSES_IGNORE || n <= 0) return;
  if (StatusScratch* s = status_scratch()) statuses = s->array(n);
}
// Status i of an array the program passed (null: it ignored them and none were kept).
inline const MPI_Status* status_at(const MPI_Status* statuses, int i) {
  return statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[i];
}
inline void remember_handles(const MPI_Request* requests, int n) {
  if (StatusScratch* s = status_scratch()) s->handles.assign(requests, requests + (n > 0 ? n : 0));
}

void emit_received(MpiCall& call, MPI_Comm comm, MPI_Datatype type, const MPI_Status* status);

// --- point-to-point -------------------------------------------------------------

struct BlockingSend {
  static void before(MpiCall& c, const void*&, int& count, MPI_Datatype& type, int& dest, int& tag, MPI_Comm& comm) {
    if (real_peer(dest))
      c.emit(MpiEventKind::kSend, c.enter_ns(), comm_id(comm), uint32_t(dest), uint32_t(tag), type_bytes(type, count));
  }
  template <typename... A>
  static void after(MpiCall&, int, A&...) {}
};
// A standard or ready send this small is sent eagerly (Open MPI's shared
// memory and TCP transports, MPICH's, UCX's: 4 KiB or more): it completes
// without its receiver, so it is recorded after it ran (RecordsAfter in
// mpi_intercept.h). Larger ones may wait for the receiver, and a
// synchronous send always does: their enter is written before they wait.
inline constexpr uint64_t kEagerSendBytes = 4096;
struct EagerSend : BlockingSend {
  static constexpr bool kRecordsAfter = true;
  // Decided before the real call and its region's start: a predefined
  // type's size without a call into MPI; another's asked as the profiler's
  // own work (a sample that lands in that call is [hybridprof]'s time).
  static bool records_after(const void*&, int& count, MPI_Datatype& type, int&, int&, MPI_Comm&) {
    uint64_t bytes = 0;
    if (!known_type_bytes(type, count, &bytes)) {
      const ProfilerWork work;
      bytes = type_bytes(type, count);
    }
    return bytes <= kEagerSendBytes;
  }
};
// Calls that never wait for their receiver, whatever they send.
struct AlwaysRecordedAfter {
  static constexpr bool kRecordsAfter = true;
  template <typename... A>
  static bool records_after(A&...) {
    return true;
  }
};
// A buffered send copies its message and returns.
struct BufferedSend : BlockingSend, AlwaysRecordedAfter {};
template <> struct Hooks<MpiFunction::MPI_Send> : EagerSend {};
template <> struct Hooks<MpiFunction::MPI_Bsend> : BufferedSend {};
template <> struct Hooks<MpiFunction::MPI_Ssend> : BlockingSend {};
template <> struct Hooks<MpiFunction::MPI_Rsend> : EagerSend {};

template <>
struct Hooks<MpiFunction::MPI_Recv> {
  static void before(MpiCall& c, void*&, int&, MPI_Datatype&, int&, int&, MPI_Comm&, MPI_Status*& status) {
    keep_status(c, status);
  }
  static void after(MpiCall& c, int rc, void*&, int&, MPI_Datatype& type, int&, int&, MPI_Comm& comm,
                    MPI_Status*& status) {
    if (rc == MPI_SUCCESS) emit_received(c, comm, type, status);
  }
};

template <>
struct Hooks<MpiFunction::MPI_Sendrecv> {
  static void before(MpiCall& c, const void*&, int& sendcount, MPI_Datatype& sendtype, int& dest, int& sendtag, void*&,
                     int&, MPI_Datatype&, int&, int&, MPI_Comm& comm, MPI_Status*& status) {
    keep_status(c, status);
    if (real_peer(dest))
      c.emit(MpiEventKind::kSend, c.enter_ns(), comm_id(comm), uint32_t(dest), uint32_t(sendtag),
             type_bytes(sendtype, sendcount));
  }
  static void after(MpiCall& c, int rc, const void*&, int&, MPI_Datatype&, int&, int&, void*&, int&,
                    MPI_Datatype& recvtype, int&, int&, MPI_Comm& comm, MPI_Status*& status) {
    if (rc == MPI_SUCCESS) emit_received(c, comm, recvtype, status);
  }
};

template <>
struct Hooks<MpiFunction::MPI_Sendrecv_replace> {
  static void before(MpiCall& c, void*&, int& count, MPI_Datatype& type, int& dest, int& sendtag, int&, int&,
                     MPI_Comm& comm, MPI_Status*& status) {
    keep_status(c, status);
    if (real_peer(dest))
      c.emit(MpiEventKind::kSend, c.enter_ns(), comm_id(comm), uint32_t(dest), uint32_t(sendtag), type_bytes(type, count));
  }
  static void after(MpiCall& c, int rc, void*&, int&, MPI_Datatype& type, int&, int&, int&, int&, MPI_Comm& comm,
                    MPI_Status*& status) {
    if (rc == MPI_SUCCESS) emit_received(c, comm, type, status);
  }
};

// Returns at once, whatever it sends: recorded after it ran.
struct NonBlockingSend : AlwaysRecordedAfter {
  template <typename... A>
  static void before(MpiCall&, A&...) {}
  static void after(MpiCall& c, int rc, const void*&, int& count, MPI_Datatype& type, int& dest, int& tag,
                    MPI_Comm& comm, MPI_Request*& request) {
    if (rc != MPI_SUCCESS || !real_peer(dest)) return;
    PendingRequest r;
    r.kind = PendingRequest::Kind::kSend;
    r.comm = comm_id(comm);
    r.peer = uint32_t(dest);
    r.tag = uint32_t(tag);
    r.sent = type_bytes(type, count);
    r.id = next_request_id();
    track_request(*request, r);
    c.emit(MpiEventKind::kIsend, c.end_ns(), r.comm, r.peer, r.tag, r.sent, 0, r.id);
  }
};
template <> struct Hooks<MpiFunction::MPI_Isend> : NonBlockingSend {};
template <> struct Hooks<MpiFunction::MPI_Ibsend> : NonBlockingSend {};
template <> struct Hooks<MpiFunction::MPI_Issend> : NonBlockingSend {};
template <> struct Hooks<MpiFunction::MPI_Irsend> : NonBlockingSend {};

template <>
struct Hooks<MpiFunction::MPI_Irecv> {
  template <typename... A>
  static void before(MpiCall&, A&...) {}
  static void after(MpiCall& c, int rc, void*&, int& count, MPI_Datatype& type, int& source, int& tag,
                    MPI_Comm& comm, MPI_Request*& request) {
    if (rc != MPI_SUCCESS || source == MPI_PROC_NULL) return;
    PendingRequest r;
    r.kind = PendingRequest::Kind::kRecv;
    r.comm = comm_id(comm);
    r.peer = uint32_t(source);
    r.tag = uint32_t(tag);
    r.received = type_bytes(type, count);
    r.recv_type = type;
    r.id = next_request_id();
    track_request(*request, r);
    c.emit(MpiEventKind::kIrecvRequest, c.end_ns(), 0, 0, 0, 0, 0, r.id);
  }
};

// Persistent requests: tracked at init, recorded at each start.
template <PendingRequest::Kind K>
struct PersistentInit {
  template <typename... A>
  static void before(MpiCall&, A&...) {}
  template <typename Buffer>
  static void after(MpiCall&, int rc, Buffer&, int& count, MPI_Datatype& type, int& peer, int& tag, MPI_Comm& comm,
                    MPI_Request*& request) {
    if (rc != MPI_SUCCESS || peer == MPI_PROC_NULL) return;
    PendingRequest r;
    r.kind = K;
    r.persistent = true;
    r.active = false;
    r.comm = comm_id(comm);
    r.peer = uint32_t(peer);
    r.tag = uint32_t(tag);
    (K == PendingRequest::Kind::kSend ? r.sent : r.received) = type_bytes(type, count);
    r.recv_type = type;
    track_request(*request, r);
  }
};
template <> struct Hooks<MpiFunction::MPI_Send_init> : PersistentInit<PendingRequest::Kind::kSend> {};
template <> struct Hooks<MpiFunction::MPI_Bsend_init> : PersistentInit<PendingRequest::Kind::kSend> {};
template <> struct Hooks<MpiFunction::MPI_Ssend_init> : PersistentInit<PendingRequest::Kind::kSend> {};
template <> struct Hooks<MpiFunction::MPI_Rsend_init> : PersistentInit<PendingRequest::Kind::kSend> {};
template <> struct Hooks<MpiFunction::MPI_Recv_init> : PersistentInit<PendingRequest::Kind::kRecv> {};

void emit_start(MpiCall& call, MPI_Request handle);

template <>
struct Hooks<MpiFunction::MPI_Start> {
  static void before(MpiCall&, MPI_Request*&) {}
  static void after(MpiCall& c, int rc, MPI_Request*& request) {
    if (rc == MPI_SUCCESS) emit_start(c, *request);
  }
};
template <>
struct Hooks<MpiFunction::MPI_Startall> {
  static void before(MpiCall&, int&, MPI_Request*&) {}
  static void after(MpiCall& c, int rc, int& count, MPI_Request*& requests) {
    if (rc != MPI_SUCCESS) return;
    for (int i = 0; i < count; ++i) emit_start(c, requests[i]);
  }
};

// --- completion -----------------------------------------------------------------

// Completion of the request that was handles[index] before the call.
void complete_at(MpiCall& call, int index, const MPI_Status* status);
// Completion of every request that was in handles[0..count) (statuses as
// the program passed them: MPI_STATUSES_IGNORE, or one a request).
void complete_all(MpiCall& call, int count, const MPI_Status* statuses);
// A test that found handles[index] not complete.
void tested_at(MpiCall& call, int index);

template <>
struct Hooks<MpiFunction::MPI_Wait> {
  static void before(MpiCall& c, MPI_Request*& request, MPI_Status*& status) {
    keep_status(c, status);
    remember_handles(request, 1);
  }
  static void after(MpiCall& c, int rc, MPI_Request*&, MPI_Status*& status) {
    if (rc == MPI_SUCCESS) complete_at(c, 0, status);
  }
};
template <>
struct Hooks<MpiFunction::MPI_Test> {
  static void before(MpiCall& c, MPI_Request*& request, int*&, MPI_Status*& status) {
    keep_status(c, status);
    remember_handles(request, 1);
  }
  static void after(MpiCall& c, int rc, MPI_Request*&, int*& flag, MPI_Status*& status) {
    if (rc != MPI_SUCCESS) return;
    if (*flag)
      complete_at(c, 0, status);
    else
      tested_at(c, 0);
  }
};
template <>
struct Hooks<MpiFunction::MPI_Waitall> {
  static void before(MpiCall&, int& count, MPI_Request*& requests, MPI_Status*& statuses) {
    keep_statuses(statuses, count);
    remember_handles(requests, count);
  }
  static void after(MpiCall& c, int rc, int& count, MPI_Request*&, MPI_Status*& statuses) {
    if (rc == MPI_SUCCESS) complete_all(c, count, statuses);
  }
};
template <>
struct Hooks<MpiFunction::MPI_Testall> {
  static void before(MpiCall&, int& count, MPI_Request*& requests, int*&, MPI_Status*& statuses) {
    keep_statuses(statuses, count);
    remember_handles(requests, count);
  }
  static void after(MpiCall& c, int rc, int& count, MPI_Request*&, int*& flag, MPI_Status*& statuses) {
    if (rc != MPI_SUCCESS) return;
    if (*flag) return complete_all(c, count, statuses);
    for (int i = 0; i < count; ++i) tested_at(c, i);
  }
};
template <>
struct Hooks<MpiFunction::MPI_Waitany> {
  static void before(MpiCall& c, int& count, MPI_Request*& requests, int*&, MPI_Status*& status) {
    keep_status(c, status);
    remember_handles(requests, count);
  }
  static void after(MpiCall& c, int rc, int&, MPI_Request*&, int*& index, MPI_Status*& status) {
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) complete_at(c, *index, status);
  }
};
template <>
struct Hooks<MpiFunction::MPI_Testany> {
  static void before(MpiCall& c, int& count, MPI_Request*& requests, int*&, int*&, MPI_Status*& status) {
    keep_status(c, status);
    remember_handles(requests, count);
  }
  static void after(MpiCall& c, int rc, int& count, MPI_Request*&, int*& index, int*& flag, MPI_Status*& status) {
    if (rc != MPI_SUCCESS) return;
    if (*flag && *index != MPI_UNDEFINED) {
      complete_at(c, *index, status);
    } else if (!*flag) {
      for (int i = 0; i < count; ++i) tested_at(c, i);
    }
  }
};
struct SomeCompletion {
  static void before(MpiCall&, int& incount, MPI_Request*& requests, int*&, int*&, MPI_Status*& statuses) {
    keep_statuses(statuses, incount);
    remember_handles(requests, incount);
  }
  static void after(MpiCall& c, int rc, int& incount, MPI_Request*&, int*& outcount, int*& indices,
                    MPI_Status*& statuses) {
    if (rc != MPI_SUCCESS || *outcount == MPI_UNDEFINED) return;
    std::vector<bool> done(size_t(incount > 0 ? incount : 0));
    for (int i = 0; i < *outcount; ++i) {
      complete_at(c, indices[i], status_at(statuses, i));
      if (indices[i] >= 0 && indices[i] < incount) done[size_t(indices[i])] = true;
    }
    for (int i = 0; i < incount; ++i)
      if (!done[size_t(i)]) tested_at(c, i);
  }
};
template <> struct Hooks<MpiFunction::MPI_Waitsome> : SomeCompletion {};
template <> struct Hooks<MpiFunction::MPI_Testsome> : SomeCompletion {};

template <>
struct Hooks<MpiFunction::MPI_Request_free> {
  static void before(MpiCall& c, MPI_Request*& request) {
    PendingRequest r;
    // A send released before completion: OTF2 records the release as its completion.
    if (drop_request(*request, &r) && r.active && r.kind == PendingRequest::Kind::kSend)
      c.emit(MpiEventKind::kIsendComplete, c.enter_ns(), 0, 0, 0, 0, 0, r.id);
  }
  static void after(MpiCall&, int, MPI_Request*&) {}
};

// --- collectives ------------------------------------------------------------------

// MpiCollectiveBegin at the enter (carried by the enter record, see
// kBeginsCollective), MpiCollectiveEnd at its end.
void collective(MpiCall& call, CollectiveOp op, MPI_Comm comm, int root, uint64_t sent, uint64_t received);
// Non-blocking: the request now, the completion at its wait/test.
void nonblocking_collective(MpiCall& call, CollectiveOp op, MPI_Comm comm, int root, uint64_t sent,
                            uint64_t received, MPI_Request request);

// Sizes of each collective on this rank: (sent, received).
struct CollectiveBytes {
  uint64_t sent = 0, received = 0;
};
CollectiveBytes bcast_bytes(int count, MPI_Datatype type, int root, MPI_Comm comm);
CollectiveBytes reduce_bytes(const void* sendbuf, int count, MPI_Datatype type, int root, MPI_Comm comm);
CollectiveBytes gather_bytes(const void* sendbuf, int sendcount, MPI_Datatype sendtype, uint64_t root_receives,
                             int root, MPI_Comm comm);
CollectiveBytes scatter_bytes(uint64_t root_sends, const void* recvbuf, int recvcount, MPI_Datatype recvtype,
                              int root, MPI_Comm comm);

// Each collective family: computes its bytes, then blocking or not.
#define HYBRIDPROF_COLLECTIVE_HOOKS(NAME, INAME, OP, PARAMS, ROOT, BYTES)                              \
  template <>                                                                                          \
  struct Hooks<MpiFunction::NAME> {                                                                    \
    static constexpr bool kBeginsCollective = true; /* the enter record begins it */                  \
    template <typename... A>                                                                           \
    static void before(MpiCall&, A&...) {}                                                             \
    static void after(MpiCall& c, int rc, HYBRIDPROF_UNPAREN PARAMS) {                                 \
      if (rc != MPI_SUCCESS) return;                                                                   \
      const CollectiveBytes b = BYTES;                                                                 \
      collective(c, OP, comm, ROOT, b.sent, b.received);                                               \
    }                                                                                                  \
  };                                                                                                   \
  template <>                                                                                          \
  struct Hooks<MpiFunction::INAME> {                                                                   \
    template <typename... A>                                                                           \
    static void before(MpiCall&, A&...) {}                                                             \
    static void after(MpiCall& c, int rc, HYBRIDPROF_UNPAREN PARAMS, MPI_Request*& request) {         \
      if (rc != MPI_SUCCESS) return;                                                                   \
      const CollectiveBytes b = BYTES;                                                                 \
      nonblocking_collective(c, OP, comm, ROOT, b.sent, b.received, *request);                         \
    }                                                                                                  \
  };
#define HYBRIDPROF_UNPAREN(...) __VA_ARGS__

HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Barrier, MPI_Ibarrier, CollectiveOp::kBarrier, (MPI_Comm & comm), -1,
                            (CollectiveBytes{}))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Bcast, MPI_Ibcast, CollectiveOp::kBcast,
                            (void*&, int& count, MPI_Datatype& type, int& root, MPI_Comm& comm), root,
                            bcast_bytes(count, type, root, comm))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Reduce, MPI_Ireduce, CollectiveOp::kReduce,
                            (const void*& sendbuf, void*&, int& count, MPI_Datatype& type, MPI_Op&, int& root,
                             MPI_Comm& comm),
                            root, reduce_bytes(sendbuf, count, type, root, comm))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Allreduce, MPI_Iallreduce, CollectiveOp::kAllreduce,
                            (const void*&, void*&, int& count, MPI_Datatype& type, MPI_Op&, MPI_Comm& comm), -1,
                            (CollectiveBytes{type_bytes(type, count), type_bytes(type, count)}))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Gather, MPI_Igather, CollectiveOp::kGather,
                            (const void*& sendbuf, int& sendcount, MPI_Datatype& sendtype, void*&, int& recvcount,
                             MPI_Datatype& recvtype, int& root, MPI_Comm& comm),
                            root,
                            gather_bytes(sendbuf, sendcount, sendtype,
                                         type_bytes(recvtype, int64_t(recvcount) * comm_size(comm)), root, comm))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Gatherv, MPI_Igatherv, CollectiveOp::kGatherv,
                            (const void*& sendbuf, int& sendcount, MPI_Datatype& sendtype, void*&,
                             const int*& recvcounts, const int*&, MPI_Datatype& recvtype, int& root, MPI_Comm& comm),
                            root,
                            gather_bytes(sendbuf, sendcount, sendtype,
                                         comm_rank(comm) == root ? sum_bytes(recvcounts, comm_size(comm), recvtype) : 0,
                                         root, comm))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Scatter, MPI_Iscatter, CollectiveOp::kScatter,
                            (const void*&, int& sendcount, MPI_Datatype& sendtype, void*& recvbuf, int& recvcount,
                             MPI_Datatype& recvtype, int& root, MPI_Comm& comm),
                            root,
                            scatter_bytes(type_bytes(sendtype, int64_t(sendcount) * comm_size(comm)), recvbuf,
                                          recvcount, recvtype, root, comm))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Scatterv, MPI_Iscatterv, CollectiveOp::kScatterv,
                            (const void*&, const int*& sendcounts, const int*&, MPI_Datatype& sendtype,
                             void*& recvbuf, int& recvcount, MPI_Datatype& recvtype, int& root, MPI_Comm& comm),
                            root,
                            scatter_bytes(comm_rank(comm) == root ? sum_bytes(sendcounts, comm_size(comm), sendtype)
                                                                  : 0,
                                          recvbuf, recvcount, recvtype, root, comm))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Allgather, MPI_Iallgather, CollectiveOp::kAllgather,
                            (const void*& sendbuf, int& sendcount, MPI_Datatype& sendtype, void*&, int& recvcount,
                             MPI_Datatype& recvtype, MPI_Comm& comm),
                            -1,
                            (CollectiveBytes{in_place(sendbuf) ? type_bytes(recvtype, recvcount)
                                                               : type_bytes(sendtype, sendcount),
                                             type_bytes(recvtype, int64_t(recvcount) * comm_size(comm))}))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Allgatherv, MPI_Iallgatherv, CollectiveOp::kAllgatherv,
                            (const void*& sendbuf, int& sendcount, MPI_Datatype& sendtype, void*&,
                             const int*& recvcounts, const int*&, MPI_Datatype& recvtype, MPI_Comm& comm),
                            -1,
                            (CollectiveBytes{in_place(sendbuf) ? type_bytes(recvtype, recvcounts[comm_rank(comm)])
                                                               : type_bytes(sendtype, sendcount),
                                             sum_bytes(recvcounts, comm_size(comm), recvtype)}))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Alltoall, MPI_Ialltoall, CollectiveOp::kAlltoall,
                            (const void*& sendbuf, int& sendcount, MPI_Datatype& sendtype, void*&, int& recvcount,
                             MPI_Datatype& recvtype, MPI_Comm& comm),
                            -1,
                            (CollectiveBytes{in_place(sendbuf)
                                                 ? type_bytes(recvtype, int64_t(recvcount) * comm_size(comm))
                                                 : type_bytes(sendtype, int64_t(sendcount) * comm_size(comm)),
                                             type_bytes(recvtype, int64_t(recvcount) * comm_size(comm))}))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Alltoallv, MPI_Ialltoallv, CollectiveOp::kAlltoallv,
                            (const void*& sendbuf, const int*& sendcounts, const int*&, MPI_Datatype& sendtype,
                             void*&, const int*& recvcounts, const int*&, MPI_Datatype& recvtype, MPI_Comm& comm),
                            -1,
                            (CollectiveBytes{in_place(sendbuf) ? sum_bytes(recvcounts, comm_size(comm), recvtype)
                                                               : sum_bytes(sendcounts, comm_size(comm), sendtype),
                                             sum_bytes(recvcounts, comm_size(comm), recvtype)}))
CollectiveBytes alltoallw_bytes(const void* sendbuf, const int sendcounts[], const MPI_Datatype sendtypes[],
                                const int recvcounts[], const MPI_Datatype recvtypes[], MPI_Comm comm);
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Alltoallw, MPI_Ialltoallw, CollectiveOp::kAlltoallw,
                            (const void*& sendbuf, const int*& sendcounts, const int*&, const MPI_Datatype*& sendtypes,
                             void*&, const int*& recvcounts, const int*&, const MPI_Datatype*& recvtypes,
                             MPI_Comm& comm),
                            -1, alltoallw_bytes(sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, comm))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Reduce_scatter, MPI_Ireduce_scatter, CollectiveOp::kReduceScatter,
                            (const void*&, void*&, const int*& recvcounts, MPI_Datatype& type, MPI_Op&,
                             MPI_Comm& comm),
                            -1,
                            (CollectiveBytes{sum_bytes(recvcounts, comm_size(comm), type),
                                             type_bytes(type, recvcounts[comm_rank(comm)])}))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, CollectiveOp::kReduceScatterBlock,
                            (const void*&, void*&, int& recvcount, MPI_Datatype& type, MPI_Op&, MPI_Comm& comm), -1,
                            (CollectiveBytes{type_bytes(type, int64_t(recvcount) * comm_size(comm)),
                                             type_bytes(type, recvcount)}))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Scan, MPI_Iscan, CollectiveOp::kScan,
                            (const void*&, void*&, int& count, MPI_Datatype& type, MPI_Op&, MPI_Comm& comm), -1,
                            (CollectiveBytes{type_bytes(type, count), type_bytes(type, count)}))
HYBRIDPROF_COLLECTIVE_HOOKS(MPI_Exscan, MPI_Iexscan, CollectiveOp::kExscan,
                            (const void*&, void*&, int& count, MPI_Datatype& type, MPI_Op&, MPI_Comm& comm), -1,
                            (CollectiveBytes{type_bytes(type, count), type_bytes(type, count)}))

#undef HYBRIDPROF_COLLECTIVE_HOOKS

// --- communicators ------------------------------------------------------------------

// Calls that make one communicator from `parent` into the last parameter.
// Run on every call, recorded or not: registering it is collective over the
// new communicator (its members agree on a key), so a rank whose capture
// window is closed must take part as the others do, and its events name
// the communicator once a window opens.
template <MpiFunction F>
struct CommCreation {
  static constexpr bool kRunsUntraced = true;
  template <typename... A>
  static void before(MpiCall&, A&...) {}
  template <typename... A>
  static void after(MpiCall&, int rc, MPI_Comm& parent, A&... rest) {
    if (rc != MPI_SUCCESS) return;
    MPI_Comm* out = last_of(rest...);
    register_comm(*out, parent, mpi_function_name(F));
  }
  template <typename Last>
  static Last last_of(Last& last) { return last; }
  template <typename First, typename... Rest>
  static auto last_of(First&, Rest&... rest) { return last_of(rest...); }
};
template <> struct Hooks<MpiFunction::MPI_Comm_dup> : CommCreation<MpiFunction::MPI_Comm_dup> {};
template <> struct Hooks<MpiFunction::MPI_Comm_dup_with_info> : CommCreation<MpiFunction::MPI_Comm_dup_with_info> {};
template <> struct Hooks<MpiFunction::MPI_Comm_split> : CommCreation<MpiFunction::MPI_Comm_split> {};
template <> struct Hooks<MpiFunction::MPI_Comm_split_type> : CommCreation<MpiFunction::MPI_Comm_split_type> {};
template <> struct Hooks<MpiFunction::MPI_Comm_create> : CommCreation<MpiFunction::MPI_Comm_create> {};
template <> struct Hooks<MpiFunction::MPI_Comm_create_group> : CommCreation<MpiFunction::MPI_Comm_create_group> {};
template <> struct Hooks<MpiFunction::MPI_Cart_create> : CommCreation<MpiFunction::MPI_Cart_create> {};
template <> struct Hooks<MpiFunction::MPI_Cart_sub> : CommCreation<MpiFunction::MPI_Cart_sub> {};
template <> struct Hooks<MpiFunction::MPI_Graph_create> : CommCreation<MpiFunction::MPI_Graph_create> {};
template <> struct Hooks<MpiFunction::MPI_Dist_graph_create> : CommCreation<MpiFunction::MPI_Dist_graph_create> {};
template <>
struct Hooks<MpiFunction::MPI_Dist_graph_create_adjacent>
    : CommCreation<MpiFunction::MPI_Dist_graph_create_adjacent> {};
template <> struct Hooks<MpiFunction::MPI_Intercomm_create> : CommCreation<MpiFunction::MPI_Intercomm_create> {};
template <> struct Hooks<MpiFunction::MPI_Intercomm_merge> : CommCreation<MpiFunction::MPI_Intercomm_merge> {};

template <>
struct Hooks<MpiFunction::MPI_Comm_free> {
  static constexpr bool kRunsUntraced = true;  // as its creation (above)
  static void before(MpiCall&, MPI_Comm*& comm) { forget_comm(*comm); }
  static void after(MpiCall&, int, MPI_Comm*&) {}
};

// --- start-up and shut-down -------------------------------------------------------------

template <>
struct Hooks<MpiFunction::MPI_Init> {
  static constexpr bool kRunsUntraced = true;
  static void before(MpiCall&, int*&, char***&) {}
  static void after(MpiCall&, int rc, int*&, char***&) {
    if (rc == MPI_SUCCESS) on_mpi_initialized();
  }
};
template <>
struct Hooks<MpiFunction::MPI_Init_thread> {
  static constexpr bool kRunsUntraced = true;
  static void before(MpiCall&, int*&, char***&, int&, int*&) {}
  static void after(MpiCall&, int rc, int*&, char***&, int&, int*&) {
    if (rc == MPI_SUCCESS) on_mpi_initialized();
  }
};
template <>
struct Hooks<MpiFunction::MPI_Finalize> {
  static constexpr bool kRunsUntraced = true;
  static void before(MpiCall&) { before_mpi_finalize(); }
  static void after(MpiCall&, int) {}
  // The real MPI_Finalize may wait for the job's archive (mpi_job_exit.cc).
  static constexpr bool kReplacesCall = true;
  static int call(int (*real)()) { return finalize_or_defer(real); }
};
template <>
struct Hooks<MpiFunction::MPI_Finalized> {
  template <typename... A>
  static void before(MpiCall&, A&...) {}
  template <typename... A>
  static void after(MpiCall&, int, A&...) {}
  // After a deferred MPI_Finalize the program is told what it expects.
  static constexpr bool kReplacesCall = true;
  static int call(int (*real)(int*), int*& flag) {
    const int rc = real(flag);
    if (rc == MPI_SUCCESS && finalize_deferred()) *flag = 1;
    return rc;
  }
};

}  // namespace hybridprof::mpi
