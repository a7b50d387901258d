// MPI's event set ("mpi", trace/event_sets.h): the kinds of MPI events the
// wrappers record (OTF2's MPI records), and where their fields sit in an
// EventPayload. The wrappers (preload/mpi) write them; the finalizer's MPI
// event writer (mpi_otf2_events.h) turns them into OTF2 records. Nothing
// between them knows these.
#pragma once

#include <cstdint>
#include <string_view>

#include "otf2/types.h"
#include "trace/event_payload.h"

namespace hybridprof::mpi {

inline constexpr std::string_view kEventSetName = "mpi";

// Index in the set. `comm` is a raw::CommDef id of the process.
enum class EventKind : uint32_t {
  kSend, kRecv,                       // blocking: peer, comm, tag, bytes (sent / received)
  kIsend, kIsendComplete,             // + request
  kIrecvRequest, kIrecv,              // request; then peer, comm, tag, received, request
  kRequestTest, kRequestCancelled,    // request
  kCollectiveBegin, kCollectiveEnd,   // end: op, comm, peer = root, sent, received
  kNonBlockingCollectiveRequest,      // request
  kNonBlockingCollectiveComplete,     // op, comm, peer = root, sent, received, request
  kCount
};

// An MPI event's fields. `op`: otf2::CollectiveOp's numbering; `peer` of a
// collective without a root: otf2::kRootNone.
struct EventFields {
  uint32_t comm = 0, peer = 0, tag = 0, op = 0;
  uint64_t sent = 0, received = 0, request = 0;
  bool operator==(const EventFields&) const = default;
};

inline EventPayload payload_of(const EventFields& f) {
  EventPayload p;
  p.word[0] = f.comm, p.word[1] = f.peer, p.word[2] = f.tag, p.word[3] = f.op;
  p.wide[0] = f.sent, p.wide[1] = f.received, p.wide[2] = f.request;
  return p;
}

inline EventFields fields_of(const EventPayload& p) {
  return EventFields{p.word[0], p.word[1], p.word[2], p.word[3], p.wide[0], p.wide[1], p.wide[2]};
}

// Does an event of this kind name a communicator?
inline bool names_comm(EventKind k) {
  return k == EventKind::kSend || k == EventKind::kRecv || k == EventKind::kIsend || k == EventKind::kIrecv ||
         k == EventKind::kCollectiveEnd || k == EventKind::kNonBlockingCollectiveComplete;
}

}  // namespace hybridprof::mpi
