// Outstanding non-blocking operations by request handle, and the records
// their completion writes.
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "mpi/mpi_tracer.h"
#include "mpi/pmpi.h"

namespace hybridprof::mpi {
namespace {

struct Requests {
  std::mutex mutex;
  std::unordered_map<MPI_Request, PendingRequest> pending;
};

Requests& requests() {
  static Requests* r = new Requests();  // leaked: used until the process ends
  return *r;
}

std::atomic<uint64_t> g_next_request_id{1};

}  // namespace

uint64_t next_request_id() { return g_next_request_id.fetch_add(1, std::memory_order_relaxed); }

void track_request(MPI_Request handle, const PendingRequest& request) {
  if (handle == nullptr || handle == pmpi().request_null) return;
  Requests& r = requests();
  std::lock_guard lock(r.mutex);
  r.pending[handle] = request;
}

// Runs `fn` on the entry of `handle` under the table's lock; false if untracked.
template <typename Fn>
bool with_request(MPI_Request handle, Fn&& fn) {
  Requests& r = requests();
  std::lock_guard lock(r.mutex);
  auto it = r.pending.find(handle);
  return it != r.pending.end() && fn(r.pending, it);
}

bool complete_request(MPI_Request handle, PendingRequest* request) {
  return with_request(handle, [&](auto& pending, auto it) {
    if (!it->second.active) return false;
    *request = it->second;
    if (it->second.persistent)
      it->second.active = false;
    else
      pending.erase(it);
    return true;
  });
}

bool start_request(MPI_Request handle, PendingRequest* request) {
  return with_request(handle, [&](auto&, auto it) {
    if (!it->second.persistent) return false;
    it->second.active = true;
    it->second.id = next_request_id();
    *request = it->second;
    return true;
  });
}

bool drop_request(MPI_Request handle, PendingRequest* request) {
  return with_request(handle, [&](auto& pending, auto it) {
    *request = it->second;
    pending.erase(it);
    return true;
  });
}

bool peek_request(MPI_Request handle, PendingRequest* request) {
  return with_request(handle, [&](auto&, auto it) {
    if (!it->second.active) return false;
    *request = it->second;
    return true;
  });
}

void emit_completion(MpiCall& call, const PendingRequest& request, const MPI_Status* status) {
  const uint64_t now = call.end_ns();
  int cancelled = 0;
  if (status != nullptr) pmpi().Test_cancelled(status, &cancelled);
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
