// What a traced event says beside its thread, time and kind: seven words
// whose meaning the adapter that registered the kind defines (MPI fills
// them with communicator, peer, tag, collective operation, bytes sent,
// bytes received and request; see event_sets.h for kinds). The ring, the
// drain and the raw stream carry it as it is.
#pragma once

#include <cstdint>
#include <cstring>

namespace hybridprof {

struct EventPayload {
  uint32_t word[4] = {};
  uint64_t wide[3] = {};
  bool operator==(const EventPayload& o) const { return std::memcmp(this, &o, sizeof o) == 0; }
  bool operator!=(const EventPayload& o) const { return !(*this == o); }
};
static_assert(sizeof(EventPayload) == 40, "no padding: payloads compare as bytes");

}  // namespace hybridprof
