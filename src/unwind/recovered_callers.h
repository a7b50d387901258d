// The callers a stack scan recovered (native_unwinder.cc), remembered for
// the thread's next samples. A sample inside code without unwind tables
// (oneDNN's JIT convolutions under PyTorch, Python's perf trampolines)
// finds its caller by scanning the stack and continuing the table-driven
// unwind from there, frame by frame to the thread's root: on a Python job
// a hundred DWARF steps and more, each with its module looked up afresh
// (libunwind's trace cache cannot start from a recovered frame). The next
// sample in that code usually sits under the same callers: if each
// remembered return-address slot still holds its return address, they are
// the same frames (a frame's place follows from its caller's code and
// position, as CallerStackCache argues for traced calls), and the
// recovery is a load per frame.
//
// SIGNAL PATH: fixed storage (the thread's, made at its start), plain loads
// inside the thread's stack only.
#pragma once

#include <cstdint>

#include "unwind/stack_scan.h"

namespace hybridprof {

class RecoveredCallers {
 public:
  // Frames remembered at most (the default --max-depth); deeper recoveries
  // are not remembered.
  static constexpr uint32_t kFrames = 256;

  // If the remembered callers were recovered for a frame whose stack
  // pointer was `sp` too (the same frame, or one in its place: a frame
  // deeper or shallower has callers of its own first) and are still in
  // place (every slot holding its return address again), appends them to
  // ips[depth...] and returns the new depth; else 0. `depth` + the
  // remembered frames must fit `max_depth`.
  uint32_t recall(uint64_t sp, const StackBounds& stack, uint64_t* ips, uint32_t depth, uint32_t max_depth) const {
    if (count_ == 0 || sp != sp_ || depth + count_ > max_depth) return 0;
    for (uint32_t i = 0; i < count_; ++i)
      if (!stack.contains(slots_[i]) || *reinterpret_cast<const uint64_t*>(slots_[i]) != ips_[i]) return 0;
    for (uint32_t i = 0; i < count_; ++i) ips[depth + i] = ips_[i];
    return depth + count_;
  }

  // Where a recovery's walk records the slot of the frame `index` places
  // past the first recovered one (null past kFrames). The slots are this
  // object's own: recording forgets what was remembered.
  uint64_t* slot_for(uint32_t index) {
    count_ = 0;
    return index < kFrames ? &slots_[index] : nullptr;
  }

  // After a recovery for the frame whose stack pointer is `sp` reached the
  // thread's root: its frames ips[first..end), whose slots were recorded
  // (slot_for), are remembered when each slot holds its frame's return
  // address.
  void remember(uint64_t sp, const uint64_t* ips, uint32_t first, uint32_t end, const StackBounds& stack) {
    count_ = 0;
    sp_ = sp;
    if (end <= first || end - first > kFrames) return;
    for (uint32_t i = 0; i < end - first; ++i) {
      if (!stack.contains(slots_[i]) || *reinterpret_cast<const uint64_t*>(slots_[i]) != ips[first + i]) return;
      ips_[i] = ips[first + i];
    }
    count_ = end - first;
  }

 private:
  uint32_t count_ = 0;
  uint64_t sp_ = 0;  // the stack pointer of the frame they were recovered for
  uint64_t slots_[kFrames] = {};
  uint64_t ips_[kFrames] = {};
};

}  // namespace hybridprof
