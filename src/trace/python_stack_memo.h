// The stacks of traced calls made with Python frames above them, remembered
// as the native ones are (CallerStackCache): one native stack runs many
// Python ones, so the pair is what is remembered, by two independent
// 64-bit hashes of its native return addresses and its Python frames (code
// object, instruction, and the code's stamp, so a code object freed and
// another made at its address is another stack). A stack seen before is
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
  CallerStackCache::Ref find_or_add(const uint64_t* ips, uint32_t depth, const python::PythonFrame* frames,
                                    uint32_t python_depth, CallerStackCache& numbers) {
    Hash h;
    for (uint32_t i = 0; i < depth; ++i) h.add(ips[i]);
    for (uint32_t i = 0; i < python_depth; ++i) {
      const python::PythonFrame& f = frames[i];
      h.add(f.code);
      h.add(uint64_t(uint32_t(f.byte_offset)) << 32 | f.flags);
      h.add(f.qualname);
      h.add(f.filename ^ uint64_t(uint32_t(f.firstlineno)) << 32);
    }
    h.add(uint64_t{depth} << 32 | python_depth);
    Entry& e = entries_[h.a % kEntries];
    if (e.generation != 0 && e.a == h.a && e.b == h.b &&
        CallerStackCache::epoch_of(e.generation) == numbers.epoch())
      return CallerStackCache::Ref{e.generation % CallerStackCache::kEntries, e.generation, false};
    const CallerStackCache::Ref fresh = numbers.hand_out();
    e = Entry{h.a, h.b, fresh.generation};
    return fresh;
  }

 private:
  // Two hashes over the same words, mixed apart (a collision of both, at
  // 2^-128, would name one stack for another).
  struct Hash {
    uint64_t a = 0x9e3779b97f4a7c15ull, b = 0xc2b2ae3d27d4eb4full;
    void add(uint64_t w) {
      a = (a ^ w) * 0x100000001b3ull;
      a ^= a >> 29;
      b = (b + w * 0xff51afd7ed558ccdull);
      b = (b << 31 | b >> 33) * 0xc4ceb9fe1a85ec53ull;
    }
  };
  struct Entry {
    uint64_t a = 0, b = 0;
    uint32_t generation = 0;  // 0: empty
  };
  std::array<Entry, kEntries> entries_{};
};

}  // namespace hybridprof
