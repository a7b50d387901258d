// What each return address says of the stack around it, learned from the
// stacks one thread unwound: how far the next return-address slot out is
// from its own (the calling function's frame at that call, a function of
// the address for frames without alloca), or that the stack ends there.
// With it CallerStackCache reads a stack it has not seen, through code it
// has, slot by slot: a load and a table lookup a frame, no DWARF unwind
// and no system call (a new call path through a solver's known routines).
//
// Not the signal path: used from traced-call wrappers. May allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hybridprof {

class FrameSizes {
 public:
  FrameSizes();

  // A stack as the unwinder found it: return addresses ips[0..depth) in
  // slots[0..depth) (increasing). `outermost`: the unwinder ended at its
  // last frame (no error, not cut at the depth limit). An address seen with
  // two frame sizes (alloca) is not used again.
  void learn(const uint64_t* ips, const uint64_t* slots, uint32_t depth, bool outermost);

  // The stack whose innermost return address is in slot `first`, read
  // below `end` (the thread's stack top): its return addresses and slots
  // into ips and slots, as the unwinder would find them, and its depth; 0
  // when an address on the way was not learned, or past max_depth frames.
  uint32_t read(uint64_t first, uint64_t end, uint32_t max_depth, uint64_t* ips, uint64_t* slots) const;

  size_t size() const { return count_; }

 private:
  static constexpr uint32_t kOutermost = 0;           // the stack ends after this frame
  static constexpr uint32_t kVaries = 0xffffffffu;    // seen with two sizes
  static constexpr size_t kMaxEntries = size_t{1} << 20;  // return addresses learned at most
  struct Entry {
    uint64_t ip = 0;     // 0: empty
    uint32_t next = 0;   // bytes to the next slot out, or kOutermost / kVaries
  };
  const Entry* find(uint64_t ip) const;
  void put(uint64_t ip, uint32_t next);

  std::vector<Entry> table_;  // open addressing, at most half full
  size_t count_ = 0;
};

}  // namespace hybridprof
