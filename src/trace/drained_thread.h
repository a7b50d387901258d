// DrainedThread: what the drain keeps per thread while it converts the
// thread's ring into the raw stream. Touched only by the drain, under its
// lock; no producer reads or writes it.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <optional>
#include <vector>

#include "trace/raw_format.h"
#include "trace/recent_calls.h"
#include "trace/stack_slots.h"
#include "trace/traced_call_writer.h"
#include "unwind/caller_stack_cache.h"

namespace hybridprof {

struct DrainedThread {
  // RingFlushRecords seen, and the time they span.
  uint64_t ring_flushes = 0, ring_flush_ns = 0;
  // The traced regions this thread is inside, outermost first: a leave
  // names the context its enter had, and a sample taken inside a region
  // that encloses code (kRegionEnclosesCode) gets the region in its path.
  struct OpenRegion {
    uint32_t node = 0;    // the enter's context
    uint32_t region = 0;
    bool encloses = false;
    // Enclosing only: the enter's return addresses from the program's frame
    // that entered it outwards (innermost first; none when its unwind fell
    // short). Where a sample's stack shares them, the region goes in.
    std::vector<uint64_t> frames;
  };
  std::vector<OpenRegion> open_regions;
  // The thread's last samples, held back until its next record is read: a
  // late enter (kRegionEnterLate: an OS-runtime wait or an eager send,
  // written at its end) that began before them is written first, so that
  // samples taken inside the call (the kernel's CPU time entering or
  // leaving a wait, a send polling its transport) stay inside it and the
  // stream stays in time order. One sample, or a run of samples taken
  // inside traced calls (kSampleInTracedCall: a call that ran for several
  // sampling periods), at most kMaxHeldSamples: past that the oldest is
  // written. And the time of the last sample written: an enter or a leave
  // read after it starts no earlier.
  static constexpr uint32_t kMaxHeldSamples = 16;
  std::array<raw::Sample, kMaxHeldSamples> held_samples;
  uint32_t samples_held = 0;
  const raw::Sample& oldest_held_sample() const { return held_samples[0]; }
  uint64_t last_sample_ns = 0;
  // Regions a capture window's close ended (Drain::set_window) whose leave
  // has not come yet: a leave with none open is one of them, dropped.
  uint32_t window_orphans = 0;
  // A traced call whose enter was read and not yet written. If its leave is
  // the next record but for its events, the drain writes the whole call as
  // one raw::Call; anything else writes the enter first.
  struct UnwrittenCall {
    raw::CallShape shape;
    uint64_t enter_ns = 0;
    std::array<uint64_t, raw::Call::kMaxEvents> event_ns{};
    uint32_t site = kNoSite;     // its caller stack's entry in call_sites
    bool encloses = false;       // kRegionEnclosesCode: `frames` are its enter's
    std::vector<uint64_t> frames;
    uint32_t frames_of = 0;      // not 0: its frames are instead this remembered stack's (a repeated enter)
    // Its enter repeated the site's, and nothing has come since: its shape
    // is the site's enter_shape (events at enter_ns), not copied yet.
    bool shape_at_site = false;
  };
  UnwrittenCall unwritten_call;
  bool call_unwritten = false;
  // A repeated enter read with nothing held or unwritten, kept for one
  // record: when that is its leave (a blocking call that returned within
  // the pass), the pair is written as the call repeat a deferred enter
  // makes, without converting each (Drain::drain_thread_locked).
  struct PendingEnterRepeat {
    uint32_t slot = 0;
    uint64_t timestamp = 0;
  };
  std::optional<PendingEnterRepeat> pending_enter_repeat;
  // Per remembered caller stack (CallerStackCache entry), the last enter and
  // leave records written in full from it, kept by the producer's rule
  // (TracedCallWriter) so that a RepeatRecord stands for them; the call's
  // shape so far after that enter; and where the stream writer keeps the
  // shape of a whole call from there, so a loop's next call is written as a
  // repeat without being converted again.
  struct CallSite {
    uint32_t generation = 0;  // the stack's; 0: none
    bool leave_known = false;
    RegionBody enter, leave;
    raw::CallShape enter_shape;
    raw::RecentCalls::Handle written;  // of enter and leave together
    // A whole repeat of the site's call went by: its counting events'
    // numbers move on, as at the producer (TracedCallWriter).
    void count_on_call() {
      if (enter.counts()) {
        enter.count_on();
        enter_shape.count_on();
      }
      leave.count_on();
    }
  };
  static constexpr uint32_t kNoSite = CallerStackCache::kEntries;
  StackSlots<CallSite> call_sites;
  // The native stack interned last (Drain::intern_stack_locked), outermost
  // frame first: the address interned for each frame and the node it led
  // to. A thread's stacks share their outer frames (its main loop, a
  // solver's levels), so the next one is interned from where the two part,
  // not from its root: looking up every frame of a deep stack was most of
  // what the drain spent on a sample or a new traced-call stack. Valid for
  // the drain's `version` of what interning reads (modules, traced code).
  struct InternedFrame {
    uint64_t address;
    uint32_t node;
    uint32_t innermost_region;  // as intern_stack_locked's, this frame the innermost
  };
  struct LastInterned {
    uint32_t root = 0;
    uint64_t version = 0;  // 0: none
    std::vector<InternedFrame> frames;
  };
  LastInterned last_interned;
  // The last EventRecord read or repeated, kept by the producer's rule
  // (TracedCallWriter::event) so that a kEventRepeat stands for it.
  LastEvent last_event;
  // The context of each stack the thread's CallerStackCache handed out
  // (RegionRecord's stack_generation): regions of several kinds may be
  // entered from one stack. Those of the cache's current epoch only.
  struct RememberedStack {
    uint32_t node = 0;  // the stack's, without the region entered from it
    uint32_t innermost_region = 0;  // the traced region of its innermost frame kept, if any
    std::vector<uint64_t> frames;  // as OpenRegion::frames
  };
  // The stack handed out as `generation` (not 0), made when new.
  RememberedStack& remember(uint32_t generation) {
    forget_older_epochs(generation);
    return remembered_stacks[generation];
  }
  // The stack handed out as `generation`, or null (0, or its enter was lost).
  const RememberedStack* remembered(uint32_t generation) {
    if (generation == 0) return nullptr;
    forget_older_epochs(generation);
    const auto it = remembered_stacks.find(generation);
    return it == remembered_stacks.end() ? nullptr : &it->second;
  }

 private:
  // A generation of a new epoch: the cache forgot every stack before it.
  void forget_older_epochs(uint32_t generation) {
    const uint32_t epoch = CallerStackCache::epoch_of(generation);
    if (epoch == remembered_epoch_) return;
    remembered_stacks.clear();
    remembered_epoch_ = epoch;
  }
  std::unordered_map<uint32_t, RememberedStack> remembered_stacks;
  uint32_t remembered_epoch_ = 0;
};

}  // namespace hybridprof
