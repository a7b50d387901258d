// Fixed-layout records that producers (the sample handler, and later the
// traced-event adapters) write into a thread's ThreadRing. The drain turns
// them into the raw stream (raw_format.h); nothing here outlives a drain.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sigsafe/thread_ring.h"
#include "trace/event_payload.h"
#include "unwind/python/python_stack.h"

namespace hybridprof {

enum class RecordType : uint16_t {
  kPadding = kPaddingRecord,
  kSample = 1,        // SampleRecord
  kRegionEnter = 2,   // RegionRecord + the caller's stack [+ EventPayload]
  kRegionLeave = 3,   // RegionRecord [+ EventPayload]
  kEvent = 4,         // EventRecord
  kMixedSample = 5,   // MixedSampleRecord: native IPs and Python frames
  kRegionEnterRepeat = 6,  // RepeatRecord: the last enter from its caller stack again (RegionBody::count_on)
  kRegionLeaveRepeat = 7,  // RepeatRecord: the last leave of a call from there again
  kRingFlush = 8,     // RingFlushRecord: the thread waited while its full ring was written out
  kEventRepeat = 9,   // RepeatRecord: the thread's last event again (LastEvent; aux: kind | kEventRepeatCounts)
  kEventRun = 10,     // EventRunRecord: the thread's last event again, `count` times (aux as kEventRepeat)
  kCallRepeat = 11,   // CallRepeatRecord: a kRegionEnterRepeat and its kRegionLeaveRepeat, nothing between
};

// Bit of a kEventRepeat or kEventRun record's aux: the repeat is the last event with its
// serial number advanced (EventRepeat::kCounted), not the same. Event kinds
// are below 256.
inline constexpr uint16_t kEventRepeatCounts = 1u << 8;
// A repeat record's aux for `kind` repeated `how`, and back.
inline uint16_t event_repeat_aux(uint32_t kind, EventRepeat how) {
  return static_cast<uint16_t>(kind | (how == EventRepeat::kCounted ? kEventRepeatCounts : 0));
}
inline uint32_t event_repeat_kind(uint16_t aux) { return aux & ~kEventRepeatCounts; }
inline EventRepeat event_repeat_how(uint16_t aux) {
  return (aux & kEventRepeatCounts) != 0 ? EventRepeat::kCounted : EventRepeat::kSame;
}

// Bits of SampleRecord::flags.
enum SampleFlags : uint32_t {
  kSampleTruncated = 1u << 0,     // the unwind hit --max-depth
  kSampleUnwindFailed = 1u << 1,  // the unwinder stopped with an error
  kSamplePythonIncomplete = 1u << 2,  // the Python frame chain could not be read to its end
  // The unwind tables ended short of the thread's root (code generated at
  // run time, assembly without CFI) and a caller found by scanning the
  // stack continued it there (unwind/stack_scan.h).
  kSampleUnwindRecovered = 1u << 3,
  // The sampling period ran out while the kernel worked for the thread (a
  // system call, a page fault); the stack is the user stack that entered it.
  kSampleInKernel = 1u << 4,
  // The period ran out while the thread was in the profiler's own section
  // (a wrapper's bookkeeping, an unwind, a ring write): recorded at the
  // section's end, it is the profiler's time ([hybridprof]), not the program's.
  kSampleInProfiler = 1u << 5,
  // Taken inside an MPI call (sigsafe::Section::kTracedCall). A call
  // recorded after it ran (kRegionEnterLate) has its enter written after
  // such a sample, which the drain then puts inside it whatever the two
  // clocks say (a sample's monotonic time and a call's trace clock reading
  // may disagree by more than a short call lasts).
  kSampleInTracedCall = 1u << 6,
};

// A native stack sample. header.aux = number of IPs that follow; ips[0] is the
// interrupted instruction, the rest are return addresses, outermost last.
struct SampleRecord {
  RecordHeader header;
  uint64_t timestamp_ns;  // CLOCK_MONOTONIC
  uint32_t flags;         // SampleFlags
  uint32_t weight;        // periods this sample stands for (>1 when a POSIX timer overran)
  // uint64_t ips[header.aux];
  const uint64_t* ips() const { return reinterpret_cast<const uint64_t*>(this + 1); }
  uint64_t* ips() { return reinterpret_cast<uint64_t*>(this + 1); }
};
static_assert(sizeof(SampleRecord) == 24);

constexpr uint32_t sample_record_bytes(uint32_t depth) {
  return static_cast<uint32_t>(sizeof(SampleRecord)) + 8u * depth;
}

// A sample of a thread running Python: the native stack as in SampleRecord
// (header.aux IPs), then python_depth Python frames (python::PythonFrame,
// 40 bytes each: code object, instruction offset, flags, the code's stamp),
// innermost first.
// The drain merges the two.
struct MixedSampleRecord {
  RecordHeader header;
  uint64_t timestamp_ns;
  uint32_t flags;
  uint32_t weight;
  uint32_t python_depth;
  uint32_t reserved;
  const uint64_t* ips() const { return reinterpret_cast<const uint64_t*>(this + 1); }
  uint64_t* ips() { return reinterpret_cast<uint64_t*>(this + 1); }
  // Python frames start after the IPs.
  const unsigned char* python_frames() const { return reinterpret_cast<const unsigned char*>(ips() + header.aux); }
  unsigned char* python_frames() { return reinterpret_cast<unsigned char*>(ips() + header.aux); }
};
static_assert(sizeof(MixedSampleRecord) == 32);
// The sample handler fills the fields both records share through SampleRecord.
static_assert(offsetof(MixedSampleRecord, timestamp_ns) == offsetof(SampleRecord, timestamp_ns) &&
              offsetof(MixedSampleRecord, flags) == offsetof(SampleRecord, flags) &&
              offsetof(MixedSampleRecord, weight) == offsetof(SampleRecord, weight));

constexpr uint32_t mixed_sample_record_bytes(uint32_t depth, uint32_t python_depth) {
  return static_cast<uint32_t>(sizeof(MixedSampleRecord)) + 8u * depth +
         static_cast<uint32_t>(sizeof(python::PythonFrame)) * python_depth;
}

// Enter/leave of a traced region (MPI call, OpenMP construct, NVTX range...).
// A record may carry the events of its region that happen at its own time
// (RegionFlags), so a call is one record each way.
// An enter is followed by header.aux return addresses: the stack the region
// was entered from, innermost first (frames of the runtime itself included;
// the drain maps or drops them). A leave has none.
//
// An enter's stack comes in one of three forms (CallerStackCache::Ref):
//   header.aux IPs, stack_generation 0      a stack not remembered
//   header.aux IPs, stack_generation g      remembered as entry stack_slot, g
//   no IPs (aux 0), stack_generation g      the same stack as that entry
// The third saves the copy of the addresses into the ring (and the drain
// the interning of them) when a loop calls from one place. A leave names
// its call's stack the same way (slot and generation, never addresses).
struct RegionRecord {
  RecordHeader header;
  uint64_t timestamp;  // a trace clock reading (common/trace_clock.h)
  uint32_t region;  // RegionDef id
  uint32_t flags;   // SampleFlags of the enter's unwind, and RegionFlags
  uint32_t stack_slot;
  uint32_t stack_generation;
  const uint64_t* ips() const { return reinterpret_cast<const uint64_t*>(this + 1); }
  uint64_t* ips() { return reinterpret_cast<uint64_t*>(this + 1); }
};
static_assert(sizeof(RegionRecord) == 32);

// Bits of RegionRecord::flags beside the SampleFlags. Event kinds are the
// process's numbering (trace/event_sets.h), below 256.
enum RegionFlags : uint32_t {
  // The record carries an event of kind (flags >> kEmptyEventKindShift) &
  // 0xff whose payload is all zero, so it is not stored (an MPI
  // collective's begin at its enter). It comes before a carried event.
  kRegionCarriesEmptyEvent = 1u << 16,
  // The record carries an event of kind flags >> kCarriedEventKindShift
  // with its payload (an MPI send at the enter, a receive at the leave):
  // the EventPayload follows the record (after an enter's stack).
  kRegionCarriesEvent = 1u << 17,
  // The region stands for a stretch of the program's code (an OpenMP
  // construct, a user range) rather than a call into the runtime: samples
  // the thread takes inside it, from the frame that entered it or deeper,
  // get the region in their calling context at that frame. (A traced call's
  // samples find its region by its wrapper's frame: Drain::TracedCode.)
  kRegionEnclosesCode = 1u << 18,
  // An enter made on a thread running Python: the Python frames of its
  // caller follow the record (region_python_frames), after the carried
  // event, so the region hangs under the Python code that reached it as a
  // sample there would. Such a stack is never remembered (one native stack
  // runs many Python stacks): generation 0, the native IPs in full.
  kRegionPythonFrames = 1u << 19,
  // The call launches work on a device (a CUDA kernel launch): its carried
  // event's payload wide[0] is the launch's key, which the device's work
  // names (trace/device_work.h), so that work hangs under this enter's
  // context.
  kRegionLaunchesDeviceWork = 1u << 20,
  // The carried event counts (event_payload.h, counted_on): a repeat of
  // this record stands for it with the serial number advanced by one.
  kRegionEventCounts = 1u << 21,
  // The record's carried events happen outside its region: an enter's just
  // before it, a leave's just after it (an OpenMP team's fork before its
  // master enters the parallel region, its join after the master leaves),
  // so that one record each way stands for what would be four.
  kRegionEventsOutside = 1u << 22,
  // The enter was written at the region's end, with the time it began (an
  // OS-runtime wait, recorded only once it proved long enough; a small MPI
  // send, recorded after its message left): a sample
  // the thread took meanwhile (the kernel's time entering or leaving the
  // wait, a send polling its transport) is before it in the ring. The
  // drain holds each thread's last samples back until its next record, so
  // that such an enter is written first and the samples inside the region
  // (DrainedThread::held_samples).
  kRegionEnterLate = 1u << 23,
};
inline constexpr uint32_t kEmptyEventKindShift = 8;
inline constexpr uint32_t kCarriedEventKindShift = 24;

// How many events a region record with these flags carries.
inline constexpr uint32_t carried_event_count(uint32_t flags) {
  return ((flags & kRegionCarriesEmptyEvent) ? 1u : 0u) + ((flags & kRegionCarriesEvent) ? 1u : 0u);
}

// Where a region record's carried event payload is (kRegionCarriesEvent).
inline const EventPayload* carried_event(const RegionRecord& r) {
  return reinterpret_cast<const EventPayload*>(r.ips() + r.header.aux);
}
inline EventPayload* carried_event(RegionRecord& r) { return reinterpret_cast<EventPayload*>(r.ips() + r.header.aux); }

// An enter's Python frames (kRegionPythonFrames): their count, then the
// frames (python::PythonFrame, innermost first, as a mixed sample's).
struct RegionPythonFrames {
  uint32_t depth;
  uint32_t reserved;
  const python::PythonFrame* frames() const { return reinterpret_cast<const python::PythonFrame*>(this + 1); }
  python::PythonFrame* frames() { return reinterpret_cast<python::PythonFrame*>(this + 1); }
};
static_assert(sizeof(RegionPythonFrames) == 8);
inline RegionPythonFrames* region_python_frames(RegionRecord& r) {
  return reinterpret_cast<RegionPythonFrames*>(reinterpret_cast<unsigned char*>(r.ips() + r.header.aux) +
                                               ((r.flags & kRegionCarriesEvent) ? sizeof(EventPayload) : 0));
}
inline const RegionPythonFrames* region_python_frames(const RegionRecord& r) {
  return region_python_frames(const_cast<RegionRecord&>(r));
}
inline constexpr uint32_t region_python_frames_bytes(uint32_t python_depth) {
  return python_depth == 0 ? 0u
                           : static_cast<uint32_t>(sizeof(RegionPythonFrames) + sizeof(python::PythonFrame) * python_depth);
}

// A region's enter or leave that says exactly what the last one written in
// full from the same remembered caller stack said (region, flags, carried
// event), at another time; header.aux = the stack's slot. The producer
// (TracedCallWriter) and the drain keep the last full records per slot by
// the same rule, so 16 bytes stand for up to 72. A full enter from a stack
// starts its "last" records afresh, the leave's too. The MPI wrappers write
// no other kind of record for a loop's calls after its first (but for the
// CallRepeatRecord that stands for both, below).
struct RepeatRecord {
  RecordHeader header;
  uint64_t timestamp;  // a trace clock reading
};
static_assert(sizeof(RepeatRecord) == 16);

// A whole call that repeats the last from its remembered caller stack: the
// kRegionEnterRepeat at `enter` and the kRegionLeaveRepeat at `leave` of
// slot header.aux, with nothing written on the thread between them (no
// sample, no event: TracedCallWriter::defer_enter). One record a loop's
// call, not two.
struct CallRepeatRecord {
  RecordHeader header;
  uint64_t enter, leave;  // trace clock readings
};
static_assert(sizeof(CallRepeatRecord) == 24);

// A traced-event producer found its thread's ring full and waited while the
// ring was written out (Drain::write_or_flush), from `begin` to `end` (trace
// clock readings). Written after the record that found the ring full, so
// the interval is later than everything before it on the thread.
struct RingFlushRecord {
  RecordHeader header;
  uint64_t begin, end;
};
static_assert(sizeof(RingFlushRecord) == 24);

// A traced event at its own time; header.aux = its kind. One that says
// what the thread's last EventRecord said (LastEvent, event_payload.h) is
// a 16-byte RepeatRecord of type kEventRepeat instead.
struct EventRecord {
  RecordHeader header;
  uint64_t timestamp;  // a trace clock reading
  EventPayload payload;
};
static_assert(sizeof(EventRecord) == 56);

// The thread's last event repeated `count` times at `timestamp`, each time
// as a kEventRepeat would (header.aux the same): a completion call's
// requests made in turn (an MPI_Waitall of 64 sends) in one record instead
// of one each.
struct EventRunRecord {
  RecordHeader header;
  uint64_t timestamp;  // a trace clock reading
  uint64_t count;
};
static_assert(sizeof(EventRunRecord) == 24);

}  // namespace hybridprof
