// MPI's event set ("mpi", trace/event_sets.h): the kinds of MPI events the
// wrappers record (OTF2's MPI records) and where their fields sit in an
// EventPayload, and the communicators they name (raw::Definitions of the
// set). The translation (mpi_tracer.h) writes them; the finalizer's MPI
// writers (mpi_otf2_events.h) turn them into OTF2 definitions and records.
// Nothing between them knows these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "otf2/types.h"
#include "trace/event_payload.h"
#include "trace/raw_format.h"

namespace hybridprof::mpi {

inline constexpr std::string_view kEventSetName = "mpi";

// Index in the set. `comm` is the id of a CommDefinition of the process.
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

// The request goes where a counting event's serial number is
// (event_payload.h): ids are numbered in turn, so an event naming one
// counts (MpiCall::emit) and a loop's Isend repeats.
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

// A communicator as this process knows it (a raw::Definition of the set).
// `key` names it across the job (all members record the same key for the
// same communicator); `members` are its ranks in MPI_COMM_WORLD, in
// communicator rank order (the world's are implied: all, in order).
struct CommDefinition {
  uint32_t id = 0;
  uint64_t key = 0;
  uint32_t parent = 0;  // a CommDefinition id, or kNoParentComm
  std::string name;
  std::vector<uint32_t> members;
  bool operator==(const CommDefinition&) const = default;
};
inline constexpr uint32_t kNoParentComm = 0xffffffffu;
// Keys of the predefined communicators (created keys have a rank in the
// upper half, so they never collide with these).
inline constexpr uint64_t kCommWorldKey = 1, kCommSelfKey = 2;

// values: key, parent, then the members.
inline raw::Definition definition_of(const CommDefinition& c) {
  raw::Definition d{std::string(kEventSetName), c.id, c.name, {c.key, c.parent}};
  d.values.insert(d.values.end(), c.members.begin(), c.members.end());
  return d;
}

// nullopt for a definition of another set, or one no build wrote.
inline std::optional<CommDefinition> comm_of(const raw::Definition& d) {
  if (d.set != kEventSetName || d.values.size() < 2 || d.values[1] > UINT32_MAX) return std::nullopt;
  CommDefinition c{d.id, d.values[0], uint32_t(d.values[1]), d.name, {}};
  for (size_t i = 2; i < d.values.size(); ++i) {
    if (d.values[i] > UINT32_MAX) return std::nullopt;
    c.members.push_back(uint32_t(d.values[i]));
  }
  return c;
}

}  // namespace hybridprof::mpi
