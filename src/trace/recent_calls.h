// The raw stream's memory of recent traced calls: a loop's calls differ
// only in their times (same region, context, event payloads: an MPI call's
// peer, tag, size), so a call
// whose shape matches one of its thread's last few distinct shapes is
// written as a reference to it plus its times. The writer and the reader
// keep identical tables: both remember every call written out in full, in
// the same slots, and forget everything at each chunk start (chunks decode
// on their own).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "trace/raw_format.h"

namespace hybridprof::raw {

// A Call without its thread and times. Plain bytes (padding spelled out and
// unused events zeroed), so equality is a memcmp.
struct CallShape {
  struct Event {
    uint32_t kind = 0;
    uint8_t at_leave = 0;  // stamped with the leave's time, not the enter's
    uint8_t counts = 0;    // a counting event (event_payload.h): a repeat advances it
    uint8_t outside = 0;   // before the enter / after the leave (Call::outside)
    uint8_t unused = 0;
    EventPayload payload;
  };
  uint32_t region = 0, node = 0;
  uint32_t event_count = 0, unused = 0;
  std::array<Event, Call::kMaxEvents> events;

  static CallShape of(const Call& c) {
    CallShape s;
    s.region = c.region;
    s.node = c.node;
    s.event_count = c.event_count;
    for (uint32_t i = 0; i < c.event_count; ++i) {
      const raw::Event& e = c.events[i];
      s.events[i] = Event{e.kind, e.timestamp_ns != c.enter_ns, uint8_t((c.counting >> i) & 1u),
                          uint8_t((c.outside >> i) & 1u), 0, e.payload};
    }
    return s;
  }
  // Event `i` as a record of `thread` at `timestamp_ns`.
  raw::Event event(uint32_t i, uint32_t thread, uint64_t timestamp_ns) const {
    return raw::Event{thread, timestamp_ns, events[i].kind, events[i].payload};
  }
  Call at(uint32_t thread, uint64_t enter_ns, uint64_t leave_ns) const {
    Call c;
    c.location = thread;
    c.enter_ns = enter_ns;
    c.leave_ns = leave_ns;
    c.region = region;
    c.node = node;
    c.event_count = event_count;
    for (uint32_t i = 0; i < event_count; ++i) {
      c.events[i] = event(i, thread, events[i].at_leave ? leave_ns : enter_ns);
      c.counting |= uint32_t{events[i].counts != 0} << i;
      c.outside |= uint32_t{events[i].outside != 0} << i;
    }
    return c;
  }
  bool counting() const {
    for (uint32_t i = 0; i < event_count; ++i)
      if (events[i].counts) return true;
    return false;
  }
  // The call this one would repeat: its counting events back by one
  // (count_on: forwards, what a repeat stands for).
  CallShape repeat_of() const { return counted(-1); }
  CallShape counted(int64_t calls) const {
    CallShape s = *this;
    s.count_on(calls);
    return s;
  }
  // Becomes what a repeat of this call stands for: its counting events
  // advanced, in place (a loop's calls: no copy of the shape at each).
  void count_on(int64_t calls = 1) {
    for (uint32_t i = 0; i < event_count; ++i)
      if (events[i].counts) ::hybridprof::count_on(events[i].payload, calls);
  }
  // Fixed-size compares the compiler inlines; unused events are not looked at.
  bool operator==(const CallShape& o) const {
    if (std::memcmp(this, &o, offsetof(CallShape, events)) != 0) return false;
    for (uint32_t i = 0; i < event_count; ++i)
      if (std::memcmp(&events[i], &o.events[i], sizeof(Event)) != 0) return false;
    return true;
  }
};
static_assert(sizeof(CallShape) == 16 + Call::kMaxEvents * 48, "no hidden padding");

// Set-associative by the call's region and context, so a loop over many
// call sites keeps each site's recent shapes (a table replaced in turn
// forgets them all once there are more sites than slots: the cliff of
// issue 32); a site whose calls differ (an MPI call to each neighbour in
// turn) shares its set's ways.
class RecentCalls {
 public:
  static constexpr uint32_t kWays = 8, kSets = 16;
  static constexpr uint32_t kSlots = kWays * kSets;
  static constexpr uint32_t kNone = kSlots;
  // Where a shape is kept, for as long as that slot keeps it (until it is
  // replaced, or forgotten at a chunk start).
  struct Handle {
    uint32_t slot = kNone;
    uint64_t version = 0;
  };

  void forget_all() { threads_.clear(); }

  // The slot of `thread` whose shape, repeated (CallShape::count_on), is
  // `shape`, which it then holds; or kNone.
  uint32_t find_repeat(uint32_t thread, const CallShape& shape) {
    const uint32_t set_index = set_of(shape);
    Set* set = find_set(thread, set_index);
    if (set == nullptr) return kNone;
    const bool counting = shape.counting();
    CallShape back;
    if (counting) back = shape.repeat_of();
    const CallShape& unmoved = counting ? back : shape;
    for (uint32_t way = 0; way < set->used; ++way) {
      if (set->shapes[way] == unmoved) {
        if (counting) set->shapes[way] = shape;
        return set_index * kWays + way;
      }
    }
    return kNone;
  }
  // A repeat of the call in `slot`: the shape it stands for, which the slot
  // then holds; nullptr when that slot holds none.
  const CallShape* repeat_at(uint32_t thread, uint64_t slot) {
    if (slot >= kSlots) return nullptr;
    Set* set = find_set(thread, static_cast<uint32_t>(slot / kWays));
    if (set == nullptr || slot % kWays >= set->used) return nullptr;
    CallShape& s = set->shapes[slot % kWays];
    s.count_on();
    return &s;
  }
  // Remembers `shape` in the next way of its set for `thread` (oldest
  // first once all are used); returns the slot.
  uint32_t remember(uint32_t thread, const CallShape& shape) {
    if (thread >= threads_.size()) threads_.resize(size_t(thread) + 1);
    const uint32_t set_index = set_of(shape);
    std::unique_ptr<Set>& set = threads_[thread].sets[set_index];
    if (!set) set = std::make_unique<Set>();
    const uint32_t way = set->next;
    set->shapes[way] = shape;
    set->versions[way] = ++stored_;
    set->next = static_cast<uint8_t>((way + 1) % kWays);
    if (set->used < kWays) ++set->used;
    return set_index * kWays + way;
  }
  Handle handle(uint32_t thread, uint32_t slot) const {
    return {slot, threads_[thread].sets[slot / kWays]->versions[slot % kWays]};
  }
  bool keeps(uint32_t thread, Handle h) const {
    if (thread >= threads_.size() || h.slot >= kSlots) return false;
    const std::unique_ptr<Set>& set = threads_[thread].sets[h.slot / kWays];
    return set && set->versions[h.slot % kWays] == h.version;
  }

 private:
  // A counting event's number is not in the set's key: its repeats stay in
  // the set of the call they repeat.
  static uint32_t set_of(const CallShape& s) {
    return ((s.region * 0x9e3779b1u) ^ (s.node * 0x85ebca77u)) >> 28;
  }
  static_assert(kSets == 16, "set_of keeps the top 4 bits");
  // Made at a set's first shape: a chunk naming many threads (or a corrupt
  // one) costs memory by the calls it holds, not by threads x slots.
  struct Set {
    std::array<CallShape, kWays> shapes;
    std::array<uint64_t, kWays> versions{};  // 0: never stored
    uint8_t used = 0, next = 0;
  };
  struct PerThread {
    std::array<std::unique_ptr<Set>, kSets> sets;
  };
  Set* find_set(uint32_t thread, uint32_t set) {
    return thread < threads_.size() ? threads_[thread].sets[set].get() : nullptr;
  }
  std::vector<PerThread> threads_;
  uint64_t stored_ = 0;  // shapes remembered so far: versions are never reused
};

}  // namespace hybridprof::raw
