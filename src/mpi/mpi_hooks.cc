// The out-of-line parts of the hooks (mpi_hooks.h).
#include "mpi/mpi_hooks.h"

#include <algorithm>

#include "common/per_thread.h"

namespace hybridprof::mpi {
namespace {

uint32_t root_field(int root) { return root >= 0 ? uint32_t(root) : otf2::kRootNone; }

}  // namespace

StatusScratch* status_scratch() { return PerThread<StatusScratch>::get(); }

void emit_received(MpiCall& call, MPI_Comm comm, MPI_Datatype type, const MPI_Status* status) {
  if (status->MPI_SOURCE < 0) return;  // MPI_PROC_NULL: no message
  call.emit(MpiEventKind::kRecv, call.end_ns(), comm_id(comm), uint32_t(status->MPI_SOURCE),
            uint32_t(status->MPI_TAG), 0, received_bytes(status, type));
}

void emit_start(MpiCall& call, MPI_Request handle) {
  PendingRequest r;
  if (!start_request(handle, &r)) return;
  if (r.kind == PendingRequest::Kind::kSend)
    call.emit(MpiEventKind::kIsend, call.end_ns(), r.comm, r.peer, r.tag, r.sent, 0, r.id);
  else
    call.emit(MpiEventKind::kIrecvRequest, call.end_ns(), 0, 0, 0, 0, 0, r.id);
}

void complete_at(MpiCall& call, int index, const MPI_Status* status) {
  const StatusScratch* s = status_scratch();
  if (s == nullptr || index < 0 || size_t(index) >= s->handles.size()) return;
  const auto& handles = s->handles;
  PendingRequest r;
  if (complete_request(handles[size_t(index)], &r)) emit_completion(call, r, status);
}

void complete_all(MpiCall& call, int count, const MPI_Status* statuses) {
  const StatusScratch* s = status_scratch();
  if (s == nullptr || count <= 0) return;
  complete_requests(call, s->handles.data(), std::min(size_t(count), s->handles.size()),
                    statuses == MPI_STATUSES_IGNORE ? nullptr : statuses);
}

void tested_at(MpiCall& call, int index) {
  const StatusScratch* s = status_scratch();
  if (s == nullptr || index < 0 || size_t(index) >= s->handles.size()) return;
  const auto& handles = s->handles;
  PendingRequest r;
  if (peek_request(handles[size_t(index)], &r))
    call.emit(MpiEventKind::kRequestTest, call.end_ns(), 0, 0, 0, 0, 0, r.id);
}

void collective(MpiCall& call, CollectiveOp op, MPI_Comm comm, int root, uint64_t sent, uint64_t received) {
  call.emit(MpiEventKind::kCollectiveEnd, call.end_ns(), comm_id(comm), root_field(root), 0, sent, received, 0,
            static_cast<uint32_t>(op));
}

void nonblocking_collective(MpiCall& call, CollectiveOp op, MPI_Comm comm, int root, uint64_t sent,
                            uint64_t received, MPI_Request request) {
  PendingRequest r;
  r.kind = PendingRequest::Kind::kCollective;
  r.comm = comm_id(comm);
  r.peer = root_field(root);
  r.op = static_cast<uint32_t>(op);
  r.sent = sent;
  r.received = received;
  r.id = next_request_id();
  track_request(request, r);
  call.emit(MpiEventKind::kNonBlockingCollectiveRequest, call.end_ns(), 0, 0, 0, 0, 0, r.id);
}

CollectiveBytes bcast_bytes(int count, MPI_Datatype type, int root, MPI_Comm comm) {
  const uint64_t n = type_bytes(type, count);
  return comm_rank(comm) == root ? CollectiveBytes{n, 0} : CollectiveBytes{0, n};
}

CollectiveBytes reduce_bytes(const void* sendbuf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  (void)sendbuf;  // in place at the root: the data still goes into the reduction
  const uint64_t n = type_bytes(type, count);
  return {n, comm_rank(comm) == root ? n : 0};
}

CollectiveBytes gather_bytes(const void* sendbuf, int sendcount, MPI_Datatype sendtype, uint64_t root_receives,
                             int root, MPI_Comm comm) {
  const bool is_root = comm_rank(comm) == root;
  // In place (root only): the root's own block is already in the receive buffer.
  const uint64_t sent = in_place(sendbuf) ? 0 : type_bytes(sendtype, sendcount);
  return {sent, is_root ? root_receives : 0};
}

CollectiveBytes scatter_bytes(uint64_t root_sends, const void* recvbuf, int recvcount, MPI_Datatype recvtype,
                              int root, MPI_Comm comm) {
  const bool is_root = comm_rank(comm) == root;
  const uint64_t received = in_place(recvbuf) ? 0 : type_bytes(recvtype, recvcount);
  return {is_root ? root_sends : 0, received};
}

CollectiveBytes alltoallw_bytes(const void* sendbuf, const int sendcounts[], const MPI_Datatype sendtypes[],
                                const int recvcounts[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  CollectiveBytes b;
  const int n = comm_size(comm);
  for (int i = 0; i < n; ++i) {
    b.received += type_bytes(recvtypes[i], recvcounts[i]);
    b.sent += in_place(sendbuf) ? type_bytes(recvtypes[i], recvcounts[i]) : type_bytes(sendtypes[i], sendcounts[i]);
  }
  return b;
}

}  // namespace hybridprof::mpi
