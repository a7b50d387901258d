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
#include <vector>

#include "trace/raw_format.h"

namespace hybridprof::raw {

// A Call without its thread and times. Plain bytes (padding spelled out and
// unused events zeroed), so equality is a memcmp.
struct CallShape {
  struct Event {
    uint32_t kind = 0;
    uint16_t at_leave = 0;  // stamped with the leave's time, not the enter's
    uint16_t counts = 0;    // a counting event (event_payload.h): a repeat advances it
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
      s.events[i] = Event{e.kind, e.timestamp_ns != c.enter_ns, uint16_t((c.counting >> i) & 1u), e.payload};
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
    }
    return c;
  }
  bool counting() const {
    for (uint32_t i = 0; i < event_count; ++i)
      if (events[i].counts) return true;
    return false;
  }
  // What a repeat of this call stands for: its counting events advanced;
  // and back, the call this one would repeat.
  CallShape repeated() const { return counted(+1); }
  CallShape repeat_of() const { return counted(-1); }
  CallShape counted(int64_t calls) const {
    CallShape s = *this;
    for (uint32_t i = 0; i < event_count; ++i)
      if (s.events[i].counts) s.events[i].payload = counted_on(s.events[i].payload, calls);
    return s;
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

class RecentCalls {
 public:
  static constexpr uint32_t kSlots = 4;
  static constexpr uint32_t kNone = kSlots;
  // Where a shape is kept, for as long as that slot keeps it (until it is
  // replaced, or forgotten at a chunk start).
  struct Handle {
    uint32_t slot = kNone;
    uint64_t version = 0;
  };

  void forget_all() { threads_.clear(); }

  // The slot of `thread` whose shape, repeated (CallShape::repeated), is
  // `shape`, which it then holds; or kNone. Looks first where a loop's next
  // call would be: the slot after the last one found.
  uint32_t find_repeat(uint32_t thread, const CallShape& shape) {
    if (thread >= threads_.size()) return kNone;
    PerThread& t = threads_[thread];
    const bool counting = shape.counting();
    CallShape back;
    if (counting) back = shape.repeat_of();
    const CallShape& unmoved = counting ? back : shape;
    uint32_t i = t.last_found;
    for (uint32_t k = 0; k < t.used; ++k) {
      if (++i >= t.used) i = 0;  // not %: a division costs more than the compare
      if (t.slots[i] == unmoved) {
        if (counting) t.slots[i] = shape;
        return t.last_found = i;
      }
    }
    return kNone;
  }
  // A repeat of the call in `slot`: the shape it stands for, which the slot
  // then holds; nullptr when that slot holds none.
  const CallShape* repeat_at(uint32_t thread, uint64_t slot) {
    if (thread >= threads_.size() || slot >= threads_[thread].used) return nullptr;
    CallShape& s = threads_[thread].slots[slot];
    if (s.counting()) s = s.repeated();
    return &s;
  }
  // Remembers `shape` in `thread`'s next slot (oldest first once all are
  // used); returns the slot.
  uint32_t remember(uint32_t thread, const CallShape& shape) {
    if (thread >= threads_.size()) threads_.resize(size_t(thread) + 1);
    PerThread& t = threads_[thread];
    const uint32_t slot = t.next;
    t.slots[slot] = shape;
    t.versions[slot] = ++stored_;
    t.next = (t.next + 1) % kSlots;
    if (t.used < kSlots) ++t.used;
    return slot;
  }
  Handle handle(uint32_t thread, uint32_t slot) const { return {slot, threads_[thread].versions[slot]}; }
  bool keeps(uint32_t thread, Handle h) const {
    return thread < threads_.size() && h.slot < threads_[thread].used && threads_[thread].versions[h.slot] == h.version;
  }

 private:
  struct PerThread {
    std::array<CallShape, kSlots> slots;
    std::array<uint64_t, kSlots> versions{};
    uint32_t used = 0, next = 0, last_found = 0;
  };
  std::vector<PerThread> threads_;
  uint64_t stored_ = 0;  // shapes remembered so far: versions are never reused
};

}  // namespace hybridprof::raw
