// State kept per remembered caller stack, by its slot
// (CallerStackCache::Ref::slot, its generation modulo
// CallerStackCache::kEntries): the producer's last records from each stack
// (TracedCallWriter) and the drain's mirror of them (DrainedThread).
//
// Grown as slots are first used, not made whole: a thread's stacks are
// numbered in turn, so one that calls from a few places keeps a few
// entries (about 100 and 230 bytes each), and one calling from thousands
// keeps thousands, each of which makes its loop's calls repeat records
// again (with 64 entries replaced by number, an MPI loop over 4,096 call
// paths wrote every call in full: ~45 ns a call more, and twice the
// drain's work).
//
// Not the signal path: grows (allocates) on traced-call wrappers' and the
// drain's paths, outside handlers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "unwind/caller_stack_cache.h"

namespace hybridprof {

template <typename Entry>
class StackSlots {
 public:
  // The entry of `slot` if it was ever used, else null (nothing kept).
  Entry* find(uint32_t slot) { return slot < entries_.size() ? &entries_[slot] : nullptr; }
  // The entry of `slot` (< CallerStackCache::kEntries), made if new.
  Entry& at(uint32_t slot) {
    if (slot >= entries_.size()) grow_to_hold(slot);
    return entries_[slot];
  }

 private:
  static constexpr uint32_t kFirstEntries = 64;
  __attribute__((noinline)) void grow_to_hold(uint32_t slot) {
    size_t n = std::max<size_t>(entries_.size(), kFirstEntries);
    while (n <= slot) n *= 2;
    entries_.resize(std::min<size_t>(n, CallerStackCache::kEntries));
  }
  std::vector<Entry> entries_;
};

}  // namespace hybridprof
