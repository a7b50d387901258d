// The stacks of traced calls made with Python frames above them, remembered
// as the native ones are (CallerStackCache): one native stack runs many
// Python ones, so the pair is what is remembered, by two independent
// 64-bit hashes of its native stack (its number in the cache that captured
// it, or its return addresses where that did not remember it) and its
// Python frames (code object, instruction, and the code's stamp, so a code
// object freed and another made at its address is another stack). A stack seen before is
// written as its generation alone (no addresses, no Python frames), and
// a loop's calls from it as repeats: before this, every traced call from
// Python wrote its whole native and Python stack (~1 KiB on PyTorch) and
// the drain walked it into the tree again.
//
// Generations come from the thread's CallerStackCache, one numbering per
// thread (the drain keys remembered stacks by it); an entry of an older
// epoch is stale. Direct-mapped: a stack evicted and met again gets a new
// generation (the drain keeps both, until the epoch ends).
//
// Not the signal path: traced-call producers, under the thread's busy guard.
#pragma once

#include <array>
#include <cstdint>

#include "unwind/caller_stack_cache.h"
#include "unwind/python/python_stack.h"

namespace hybridprof {

class PythonStackMemo {
 public:
  static constexpr uint32_t kEntries = 1024;

  // The generation of this stack (ips[0..depth) below frames[0..python_depth)),
  // stored: false when it was handed out before in `numbers`' epoch; else
  // a new one, stored: true (the caller writes the whole stack once).
  // `native`: the native stack's generation in the cache that captured it
  // (0: not remembered there), which then stands for its addresses.
  CallerStackCache::Ref find_or_add(uint32_t native, const uint64_t* ips, uint32_t depth,
                                    const python::PythonFrame* frames, uint32_t python_depth,
                                    CallerStackCache& numbers) {
    Hash h;
    if (native != 0) {
      // A generation names one stack until its cache starts a new epoch,
      // whose numbers may come round again: what was kept by them goes.
      if (CallerStackCache::epoch_of(native) != native_epoch_) {
        entries_.fill(Entry{});
        native_epoch_ = CallerStackCache::epoch_of(native);
      }
      h.add(native, kNativeGeneration, depth, 0);
    } else {
      uint32_t i = 0;
      for (; i + 4 <= depth; i += 4) h.add(ips[i], ips[i + 1], ips[i + 2], ips[i + 3]);
      for (; i < depth; ++i) h.add(ips[i], 0, 0, 0);
    }
    for (uint32_t i = 0; i < python_depth; ++i) {
      const python::PythonFrame& f = frames[i];
      h.add(f.code, uint64_t(uint32_t(f.byte_offset)) << 32 | f.flags, f.qualname,
            f.filename ^ uint64_t(uint32_t(f.firstlineno)) << 32);
    }
    h.add(uint64_t{depth} << 32 | python_depth, 0, 0, 0);
    const Hash::Sums sums = h.sums();
    Entry& e = entries_[sums.a % kEntries];
    if (e.generation != 0 && e.a == sums.a && e.b == sums.b &&
        CallerStackCache::epoch_of(e.generation) == numbers.epoch())
      return CallerStackCache::Ref{e.generation % CallerStackCache::kEntries, e.generation, false};
    const CallerStackCache::Ref fresh = numbers.hand_out();
    e = Entry{sums.a, sums.b, fresh.generation};
    return fresh;
  }

 private:
  // Marks a native stack named by its generation, not its addresses.
  static constexpr uint64_t kNativeGeneration = 0x6e61746976656765ull;
  // Two hashes over the same words, mixed apart (a collision of both, at
  // 2^-128, would name one stack for another). Four lanes of each, a word
  // of four to each lane: a Python frame is four words, and one chain of
  // multiplies over a deep stack's hundreds of words waited on each
  // multiply in turn (~0.3 us of a 40-frame call's 1.1).
  struct Hash {
    uint64_t a[4] = {0x9e3779b97f4a7c15ull, 0x3c6ef372fe94f82aull, 0xdaa66d2c7ddf743full, 0x78dde6e5fd29f054ull};
    uint64_t b[4] = {0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull, 0x85ebca77c2b2ae63ull};
    static uint64_t step_a(uint64_t a, uint64_t w) {
      a = (a ^ w) * 0x100000001b3ull;
      return a ^ a >> 29;
    }
    static uint64_t step_b(uint64_t b, uint64_t w) {
      b = b + w * 0xff51afd7ed558ccdull;
      return (b << 31 | b >> 33) * 0xc4ceb9fe1a85ec53ull;
    }
    void add(uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3) {
      a[0] = step_a(a[0], w0), a[1] = step_a(a[1], w1), a[2] = step_a(a[2], w2), a[3] = step_a(a[3], w3);
      b[0] = step_b(b[0], w0), b[1] = step_b(b[1], w1), b[2] = step_b(b[2], w2), b[3] = step_b(b[3], w3);
    }
    struct Sums {
      uint64_t a, b;
    };
    // The lanes folded, each through the same step: a word's lane counts.
    Sums sums() const {
      uint64_t x = a[0], y = b[0];
      for (int i = 1; i < 4; ++i) x = step_a(step_a(x, a[i]), uint64_t(i)), y = step_b(step_b(y, b[i]), uint64_t(i));
      return {x, y};
    }
  };
  struct Entry {
    uint64_t a = 0, b = 0;
    uint32_t generation = 0;  // 0: empty
  };
  std::array<Entry, kEntries> entries_{};
  uint32_t native_epoch_ = 0;  // of the native generations kept
};

}  // namespace hybridprof
