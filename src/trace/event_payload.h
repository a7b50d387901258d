// What a traced event says beside its thread, time and kind: seven words
// whose meaning the adapter that registered the kind defines (MPI fills
// them with communicator, peer, tag, collective operation, bytes sent,
// bytes received and request; see event_sets.h for kinds). The ring, the
// drain and the raw stream carry it as it is.
#pragma once

#include <cstdint>

namespace hybridprof {

struct EventPayload {
  uint32_t word[4] = {};
  uint64_t wide[3] = {};
  // Word by word: the traced-call path compares payloads at every call,
  // and a call into the C library costs more than the seven compares.
  bool operator==(const EventPayload& o) const {
    return word[0] == o.word[0] && word[1] == o.word[1] && word[2] == o.word[2] && word[3] == o.word[3] &&
           wide[0] == o.wide[0] && wide[1] == o.wide[1] && wide[2] == o.wide[2];
  }
  bool operator!=(const EventPayload& o) const { return !(*this == o); }
};
static_assert(sizeof(EventPayload) == 40, "no padding: the ring and the raw stream carry it as it is");
inline constexpr EventPayload kEmptyPayload{};

// A counting event's payload (RegionFlags' kRegionEventCounts, raw
// CallShape::Event::counts) holds in wide[2] a serial number that the next
// call from the same place is expected to advance by one: an MPI request
// id, numbered in turn. A repeat of such a call (the ring's RepeatRecord,
// the raw stream's repeated Call) stands for the last one with that number
// advanced, so a loop of non-blocking calls repeats as a loop of blocking
// ones does, though no two of its payloads are equal.
inline void count_on(EventPayload& p, int64_t calls = 1) { p.wide[2] += uint64_t(calls); }
inline EventPayload counted_on(EventPayload p, int64_t calls = 1) {
  count_on(p, calls);
  return p;
}

// How an event relates to the last one its thread wrote: it says the same
// (kSame), or the same with its serial number advanced by one (kCounted: a
// Waitall's completions of requests made in turn). The ring (records.h,
// kEventRepeat) and the raw stream (raw_format.h, Tag::kEventRepeat) store
// such an event as its time alone; writer and reader each keep the last
// event by this rule.
enum class EventRepeat : uint8_t { kNone, kSame, kCounted };

struct LastEvent {
  static constexpr uint32_t kNoKind = ~0u;
  uint32_t kind = kNoKind;
  EventPayload payload;

  EventRepeat repeat_of(uint32_t event_kind, const EventPayload& event) const {
    if (event_kind != kind) return EventRepeat::kNone;
    if (event == payload) return EventRepeat::kSame;
    return event == counted_on(payload) ? EventRepeat::kCounted : EventRepeat::kNone;
  }
  void remember(uint32_t event_kind, const EventPayload& event) {
    kind = event_kind;
    payload = event;
  }
  // The payload a repeat `how` stands for, which becomes the last.
  const EventPayload& repeat(EventRepeat how) {
    if (how == EventRepeat::kCounted) payload = counted_on(payload);
    return payload;
  }
  // `count` repeats `how` (a run, count >= 1): the first one's payload;
  // the run's last becomes the last.
  EventPayload repeat_run(EventRepeat how, uint64_t count) {
    const EventPayload first = repeat(how);
    if (how == EventRepeat::kCounted) count_on(payload, int64_t(count - 1));
    return first;
  }
};

}  // namespace hybridprof
