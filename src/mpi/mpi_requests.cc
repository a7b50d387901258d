// Outstanding non-blocking operations by request handle, and the records
// their completion writes.
#include <algorithm>
#include <atomic>
#include <type_traits>

#include "mpi/mpi_tracer.h"
#include "mpi/pmpi.h"
#include "mpi/request_table.h"

namespace hybridprof::mpi {
namespace {

RequestTable<PendingRequest>& requests() {
  static auto* r = new RequestTable<PendingRequest>();  // leaked: used until the process ends
  return *r;
}

std::atomic<uint64_t> g_next_request_id{1};

}  // namespace

uint64_t next_request_id() { return g_next_request_id.fetch_add(1, std::memory_order_relaxed); }

void track_request(MPI_Request handle, const PendingRequest& request) {
  if (handle == nullptr || handle == pmpi().request_null) return;
  requests().insert(handle, request);
}

namespace {

// A completion of `r` (its table entry): *taken is its copy when it was
// active. Returns whether the entry goes (a non-persistent request); a
// persistent one stays, inactive until its next start.
bool take_completed(PendingRequest& r, PendingRequest* taken, bool* completed) {
  *completed = r.active;
  if (!r.active) return false;
  *taken = r;
  if (!r.persistent) return true;
  r.active = false;
  return false;
}

}  // namespace

bool complete_request(MPI_Request handle, PendingRequest* request) {
  bool completed = false;
  requests().with_oldest(handle, [&](PendingRequest& r) { return take_completed(r, request, &completed); });
  return completed;
}

void complete_requests(MpiCall& call, const MPI_Request* handles, size_t n, const MPI_Status* statuses) {
  // Taken in batches, each under one lock; their completions are written
  // once it is released (writing may flush the thread's ring).
  constexpr size_t kBatch = 32;
  // Left uninitialized (a Waitall of one request would otherwise zero all
  // 32 at every call): each is assigned before it is read.
  union Taken {
    PendingRequest request;
    Taken() {}
  };
  static_assert(std::is_trivially_copyable_v<PendingRequest> && std::is_trivially_destructible_v<PendingRequest>);
  Taken taken[kBatch];
  bool completed[kBatch];
  for (size_t first = 0; first < n; first += kBatch) {
    const size_t batch = std::min(kBatch, n - first);
    requests().with_oldest_each(
        handles + first, batch,
        [&](size_t i, PendingRequest& r) { return take_completed(r, &taken[i].request, &completed[i]); },
        [&](size_t i) { completed[i] = false; });
    for (size_t i = 0; i < batch; ++i)
      if (completed[i]) emit_completion(call, taken[i].request, statuses ? &statuses[first + i] : nullptr);
  }
}

bool start_request(MPI_Request handle, PendingRequest* request) {
  bool started = false;
  requests().with_oldest(handle, [&](PendingRequest& r) {
    if (!r.persistent) return false;
    r.active = true;
    r.id = next_request_id();
    *request = r;
    started = true;
    return false;
  });
  return started;
}

bool drop_request(MPI_Request handle, PendingRequest* request) {
  return requests().with_oldest(handle, [&](PendingRequest& r) {
    *request = r;
    return true;
  });
}

bool peek_request(MPI_Request handle, PendingRequest* request) {
  bool active = false;
  requests().with_oldest(handle, [&](PendingRequest& r) {
    active = r.active;
    if (active) *request = r;
    return false;
  });
  return active;
}

void emit_completion(MpiCall& call, const PendingRequest& request, const MPI_Status* status) {
  const uint64_t now = call.end_ns();
  int cancelled = 0;
#ifdef OPEN_MPI
  // Open MPI's status holds the flag itself: no call into the library per
  // completion (as received_bytes reads its byte count).
  if (status != nullptr) cancelled = status->_cancelled;
#else
  if (status != nullptr) pmpi().Test_cancelled(status, &cancelled);
#endif
  if (cancelled) {
    call.emit(MpiEventKind::kRequestCancelled, now, 0, 0, 0, 0, 0, request.id);
    return;
  }
  switch (request.kind) {
    case PendingRequest::Kind::kSend:
      call.emit(MpiEventKind::kIsendComplete, now, 0, 0, 0, 0, 0, request.id);
      break;
    case PendingRequest::Kind::kRecv: {
      uint32_t peer = request.peer, tag = request.tag;
      uint64_t bytes = request.received;
      if (status != nullptr) {
        peer = static_cast<uint32_t>(status->MPI_SOURCE);
        tag = static_cast<uint32_t>(status->MPI_TAG);
        bytes = received_bytes(status, request.recv_type);
      }
      call.emit(MpiEventKind::kIrecv, now, request.comm, peer, tag, 0, bytes, request.id);
      break;
    }
    case PendingRequest::Kind::kCollective:
      call.emit(MpiEventKind::kNonBlockingCollectiveComplete, now, request.comm, request.peer, 0, request.sent,
                request.received, request.id, request.op);
      break;
  }
}

}  // namespace hybridprof::mpi
