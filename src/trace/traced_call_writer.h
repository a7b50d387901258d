// The producer side of traced-call records (records.h): writes a region's
// enter and leave into its thread's ring, as a 16-byte RepeatRecord when
// the record would say what the last one from the same remembered caller
// stack said (a counting event's number advanced by one:
// RegionBody::count_on), and an event of its own, as a repeat when it says
// what the thread's last event said (LastEvent). A loop calling MPI_Send
// from one place then puts 32 bytes a call into the ring instead of ~100,
// and the drain writes the call without looking at what it says (it keeps
// the same "last" records by the same rule, Drain::convert_*_locked).
//
// A call that repeats the last from its stack may hold its enter back
// (defer_enter) and write itself whole at its leave, as one 24-byte
// CallRepeatRecord, when nothing was written on the thread in between: a
// loop's MPI_Isend then writes nothing before the real call. Whatever is
// written first on the thread writes the held enter before it: every
// method here, and the sample handler (write_deferred_enter_shared), so the
// ring stays in the order things happened.
//
// Not the signal path: called by traced-call wrappers on their own thread,
// under its busy guard (a sample handler never sees a half-written record),
// but for write_deferred_enter_shared, which the sample handler calls where
// the thread is not busy.
#pragma once

#include <cstdint>
#include <cstring>

#include "sigsafe/thread_ring.h"
#include "trace/records.h"
#include "trace/stack_slots.h"
#include "unwind/caller_stack_cache.h"

namespace hybridprof {

// What an enter or leave record says beside its time and stack.
struct RegionBody {
  uint32_t region = 0;
  uint32_t flags = 0;   // RegionRecord::flags
  EventPayload event{};  // meaningful with kRegionCarriesEvent

  bool carries() const { return (flags & kRegionCarriesEvent) != 0; }
  bool counts() const { return carries() && (flags & kRegionEventCounts) != 0; }
  bool operator==(const RegionBody& o) const {
    return region == o.region && flags == o.flags && (!carries() || event == o.event);
  }
  // Becomes what a repeat of this record stands for: the same, a counting
  // event's serial number advanced (event_payload.h). In place: a loop's
  // every call does it.
  void count_on() {
    if (counts()) ::hybridprof::count_on(event);
  }
};

// What an enter or leave record says, as its writer hands it over: the
// payload stays where the writer keeps it. A repeat (a loop's call: the
// common case) is then recognized with no copy of the payload, and the
// record is built from registers: a copy of a struct just written field
// by field reads it back sixteen bytes at a time, which the processor
// cannot forward from the narrower stores, and the copy waits for them to
// reach the cache (~10 ns each; several a call before this was a view).
struct RegionView {
  uint32_t region;
  uint32_t flags;
  const EventPayload* event;  // what a record with kRegionCarriesEvent carries

  // `event` null: an empty payload.
  RegionView(uint32_t region, uint32_t flags, const EventPayload* event)
      : region(region), flags(flags), event(event ? event : &kEmptyPayload) {}
  RegionView(const RegionBody& b) : region(b.region), flags(b.flags), event(&b.event) {}  // NOLINT: implicit, a view

  bool carries() const { return (flags & kRegionCarriesEvent) != 0; }
  bool counts() const { return carries() && (flags & kRegionEventCounts) != 0; }
  RegionBody body() const { return RegionBody{region, flags, *event}; }
  // This is what `last` repeated stands for (RegionBody::count_on).
  bool repeats(const RegionBody& last) const {
    if (region != last.region || flags != last.flags) return false;
    if (!carries()) return true;
    if (!counts()) return *event == last.event;
    return counted_on(last.event) == *event;
  }
};

class TracedCallWriter {
 public:
  // The enter of `body.region` at `timestamp` (a trace clock reading), made
  // from caller stack `stack`; its return addresses ips[0..depth) go into
  // the record when the drain has not seen the stack (depth 0: it has).
  // A caller running Python adds its Python frames python[0..python_depth)
  // (its stack is then not remembered: kRegionPythonFrames).
  // False when the ring had no room (nothing written). Enter and leave are
  // forced inline: they are the traced-call path, and a wrapper's rare
  // full-ring retry (Drain::write_or_flush) makes a second use of them.
  __attribute__((always_inline)) bool enter(ThreadRing& ring, uint64_t timestamp, RegionView body, CallerStackCache::Ref stack,
             const uint64_t* ips, uint32_t depth, const python::PythonFrame* python = nullptr,
             uint32_t python_depth = 0) {
    if (deferred_.held && !write_deferred_enter(ring)) return false;
    const bool has_site = remembered(stack);
    if (has_site && depth == 0) {
      Site* s = sites_.find(stack.slot);
      if (s && s->generation == stack.generation && body.repeats(s->enter))
        return repeat(ring, RecordType::kRegionEnterRepeat, timestamp, stack.slot, &s->enter);
    }
    const uint32_t bytes = uint32_t(sizeof(RegionRecord) + 8u * depth + (body.carries() ? sizeof(EventPayload) : 0) +
                                    region_python_frames_bytes(python_depth));
    auto* r = reinterpret_cast<RegionRecord*>(
        ring.reserve_exclusive(bytes, static_cast<uint16_t>(RecordType::kRegionEnter), static_cast<uint16_t>(depth)));
    if (r == nullptr) return false;
    fill(*r, timestamp, body, stack);
    if (depth != 0) std::memcpy(r->ips(), ips, 8u * depth);  // ips may be null then
    if (body.carries()) *carried_event(*r) = *body.event;
    if (python_depth != 0) {
      r->flags |= kRegionPythonFrames;
      RegionPythonFrames* p = region_python_frames(*r);
      p->depth = python_depth;
      p->reserved = 0;
      std::memcpy(static_cast<void*>(p->frames()), python, sizeof(python::PythonFrame) * python_depth);
    }
    ring.commit_exclusive();
    if (has_site) {
      Site& s = sites_.at(stack.slot);
      s.generation = stack.generation;
      s.leave_known = false;
      s.enter = body.body();
    }
    return true;
  }

  // The leave of a call whose enter enter() wrote from `stack`.
  __attribute__((always_inline)) bool leave(ThreadRing& ring, uint64_t timestamp, RegionView body, CallerStackCache::Ref stack) {
    Site* s = remembered(stack) ? sites_.find(stack.slot) : nullptr;
    if (s && s->generation != stack.generation) s = nullptr;
    const bool repeats = s && s->leave_known && body.repeats(s->leave);
    // Its own enter, held back, and nothing since (anything written since
    // wrote it, and calls nest): the call in one record.
    if (repeats && deferred_.held && deferred_.slot == stack.slot) return whole_call(ring, timestamp, &s->leave);
    if (deferred_.held && !write_deferred_enter(ring)) return false;
    if (repeats) return repeat(ring, RecordType::kRegionLeaveRepeat, timestamp, stack.slot, &s->leave);
    const uint32_t bytes = uint32_t(sizeof(RegionRecord) + (body.carries() ? sizeof(EventPayload) : 0));
    auto* r = reinterpret_cast<RegionRecord*>(
        ring.reserve_exclusive(bytes, static_cast<uint16_t>(RecordType::kRegionLeave), 0));
    if (r == nullptr) return false;
    fill(*r, timestamp, body, stack);
    if (body.carries()) *carried_event(*r) = *body.event;
    ring.commit_exclusive();
    if (s) {
      s->leave_known = true;
      s->leave = body.body();
    }
    return true;
  }

  // An event of its own at `timestamp`: a repeat when it says what the
  // last one written said, or that with its serial number advanced
  // (LastEvent: a Waitall's completions are one full record, then repeats).
  __attribute__((always_inline)) bool event(ThreadRing& ring, uint64_t timestamp, uint32_t kind,
                                            const EventPayload& payload) {
    if (deferred_.held && !write_deferred_enter(ring)) return false;
    const EventRepeat how = last_event_.repeat_of(kind, payload);
    if (how != EventRepeat::kNone) {
      if (!write_repeat(ring, RecordType::kEventRepeat, event_repeat_aux(kind, how), timestamp)) return false;
    } else {
      auto* r = reinterpret_cast<EventRecord*>(ring.reserve_exclusive(
          sizeof(EventRecord), static_cast<uint16_t>(RecordType::kEvent), static_cast<uint16_t>(kind)));
      if (r == nullptr) return false;
      r->timestamp = timestamp;
      r->payload = payload;
      ring.commit_exclusive();
    }
    last_event_.remember(kind, payload);
    return true;
  }
  // The last event written (by event()), of `kind`, repeated `count` more
  // times `how` at `timestamp`, in one record (EventRunRecord). False when
  // the ring had no room, or when the last event is not of `kind` (then
  // nothing is written: write each with event()).
  bool event_run(ThreadRing& ring, uint64_t timestamp, uint32_t kind, EventRepeat how, uint64_t count) {
    if (last_event_.kind != kind || how == EventRepeat::kNone || count == 0) return false;
    if (deferred_.held && !write_deferred_enter(ring)) return false;
    const uint16_t aux = event_repeat_aux(kind, how);
    auto* r = reinterpret_cast<EventRunRecord*>(
        ring.reserve_exclusive(sizeof(EventRunRecord), static_cast<uint16_t>(RecordType::kEventRun), aux));
    if (r == nullptr) return false;
    r->timestamp = timestamp;
    r->count = count;
    ring.commit_exclusive();
    last_event_.repeat_run(how, count);
    return true;
  }

  // Holds back the enter enter() would write now when it would be a repeat
  // record (the stack and what the enter says as last time): nothing goes
  // into the ring until the next write on the thread, which writes it
  // first, or the call's leave, which writes both as one record. False
  // (nothing held) otherwise, or when an enter is held already; then
  // write it with enter(). The site's state moves on as if it was written.
  bool defer_enter(uint64_t timestamp, RegionView body, CallerStackCache::Ref stack, uint32_t depth,
                   uint32_t python_depth) {
    if (deferred_.held || depth != 0 || python_depth != 0 || !remembered(stack)) return false;
    Site* site = sites_.find(stack.slot);
    if (site == nullptr || site->generation != stack.generation || !body.repeats(site->enter)) return false;
    site->enter.count_on();
    deferred_.timestamp = timestamp;
    deferred_.slot = stack.slot;
    deferred_.held = true;
    return true;
  }
  bool enter_deferred() const { return deferred_.held; }
  // The held enter into the ring now (nothing held: true). False when the
  // ring had no room (it stays held). write_deferred_enter_shared is for
  // the sample handler and the thread's deferred samples, outside any
  // method here (the thread not busy, or finishing its busy section): it
  // reserves as a handler may, with atomics.
  bool write_deferred_enter(ThreadRing& ring) {
    if (!deferred_.held) return true;
    if (!write_repeat(ring, RecordType::kRegionEnterRepeat, static_cast<uint16_t>(deferred_.slot), deferred_.timestamp))
      return false;
    deferred_.held = false;
    return true;
  }
  bool write_deferred_enter_shared(ThreadRing& ring) {
    if (!deferred_.held) return true;
    auto* r = reinterpret_cast<RepeatRecord*>(ring.reserve(
        sizeof(RepeatRecord), static_cast<uint16_t>(RecordType::kRegionEnterRepeat), static_cast<uint16_t>(deferred_.slot)));
    if (r == nullptr) return false;
    r->timestamp = deferred_.timestamp;
    ring.commit();
    deferred_.held = false;
    return true;
  }

 private:
  struct DeferredEnter {
    uint64_t timestamp = 0;
    uint32_t slot = 0;
    bool held = false;
  };

  // The held enter and this leave (repeating `last_leave`) as one record.
  bool whole_call(ThreadRing& ring, uint64_t timestamp, RegionBody* last_leave) {
    auto* r = reinterpret_cast<CallRepeatRecord*>(ring.reserve_exclusive(
        sizeof(CallRepeatRecord), static_cast<uint16_t>(RecordType::kCallRepeat), static_cast<uint16_t>(deferred_.slot)));
    if (r == nullptr) return false;
    r->enter = deferred_.timestamp;
    r->leave = timestamp;
    ring.commit_exclusive();
    deferred_.held = false;
    last_leave->count_on();
    return true;
  }

  // The last full records from one remembered stack (CallerStackCache slot).
  struct Site {
    uint32_t generation = 0;  // the stack's; 0: nothing written from it
    bool leave_known = false;  // a full leave was written since the last full enter
    RegionBody enter, leave;
  };

  static bool remembered(CallerStackCache::Ref stack) {
    return stack.generation != 0 && stack.slot < CallerStackCache::kEntries;
  }
  // A repeat record for what `*last` repeated stands for, which becomes
  // the last: a counting event's number moves on in place (the view it
  // repeats is not copied: see RegionView).
  static bool repeat(ThreadRing& ring, RecordType type, uint64_t timestamp, uint32_t slot, RegionBody* last) {
    if (!write_repeat(ring, type, static_cast<uint16_t>(slot), timestamp)) return false;
    last->count_on();
    return true;
  }
  // A RepeatRecord of `type` (aux: its stack's slot, or its event's kind
  // and how it repeats) at `timestamp`.
  static bool write_repeat(ThreadRing& ring, RecordType type, uint16_t aux, uint64_t timestamp) {
    auto* r = reinterpret_cast<RepeatRecord*>(ring.reserve_exclusive(sizeof(RepeatRecord), static_cast<uint16_t>(type), aux));
    if (r == nullptr) return false;
    r->timestamp = timestamp;
    ring.commit_exclusive();
    return true;
  }
  static void fill(RegionRecord& r, uint64_t timestamp, RegionView body, CallerStackCache::Ref stack) {
    r.timestamp = timestamp;
    r.region = body.region;
    r.flags = body.flags;
    r.stack_slot = stack.slot;
    r.stack_generation = stack.generation;
  }

  StackSlots<Site> sites_;
  LastEvent last_event_;  // of event()
  DeferredEnter deferred_;  // defer_enter's
};

}  // namespace hybridprof
