#include "unwind/caller_stack_cache.h"

#include <algorithm>
#include <cstring>

#include "unwind/native_unwinder.h"

namespace hybridprof {

CallerStackCache::CallerStackCache(uint32_t max_depth)
    : max_depth_(max_depth), entries_(kEntries), scratch_ips_(max_depth + 3), scratch_slots_(max_depth + 3) {}

bool CallerStackCache::still_there(const Entry& e, uint64_t own_slot, uint64_t own_return) const {
  if (e.depth == 0 || e.slots[0] != own_slot || e.ips[0] != own_return) return false;
  for (uint32_t i = 1; i < e.depth; ++i) {
    if (*reinterpret_cast<const volatile uint64_t*>(e.slots[i]) != e.ips[i]) return false;
  }
  return true;
}

uint32_t CallerStackCache::capture(uint64_t* ips, uint32_t* flags, Ref* ref, bool copy_remembered) {
  // This function keeps a frame pointer (it asks for its frame address):
  // its return address sits just above the saved frame pointer.
  const uint64_t own_slot = reinterpret_cast<uint64_t>(__builtin_frame_address(0)) + 8;
  const uint64_t own_return = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  for (uint32_t k = 0, i = last_hit_; k < kEntries; ++k, i = (i + 1) % kEntries) {
    const Entry& e = entries_[i];
    if (still_there(e, own_slot, own_return)) {
      ++hits_;
      last_hit_ = i;
      if (copy_remembered) std::memcpy(ips, e.ips.data(), 8u * e.depth);
      *flags |= e.flags;
      if (ref) *ref = Ref{i, e.generation, false};
      return e.depth;
    }
  }
  ++misses_;
  if (ref) *ref = Ref{};
  // The unwind starts in this function (its return address into here comes
  // first): one frame more, dropped.
  uint32_t unwind_flags = 0;
  uint32_t depth = unwind_from_caller(scratch_ips_.data(), scratch_slots_.data(), max_depth_ + 1, &unwind_flags);
  depth = depth > 0 ? depth - 1 : 0;
  const uint64_t* own_ips = scratch_ips_.data() + 1;
  const uint64_t* own_slots = scratch_slots_.data() + 1;
  std::memcpy(ips, own_ips, 8u * depth);
  *flags |= unwind_flags;
  // Remembered only when every return address is on the stack, in order
  // outwards, starting at this function's own slot (no signal frames, no
  // stack switches in between: the slots are all in the live stack above
  // this frame).
  if (depth == 0 || own_slots[0] != own_slot || own_ips[0] != own_return) return depth;
  for (uint32_t i = 1; i < depth; ++i) {
    if (own_slots[i] <= own_slots[i - 1]) return depth;
  }
  const uint32_t slot = next_victim_;
  next_victim_ = (next_victim_ + 1) % kEntries;
  Entry& e = entries_[slot];
  e.ips.assign(own_ips, own_ips + depth);
  e.slots.assign(own_slots, own_slots + depth);
  e.flags = unwind_flags;
  e.depth = depth;
  if (++generations_ == 0) generations_ = 1;  // 0 means "not remembered"
  e.generation = generations_;
  if (ref) *ref = Ref{slot, e.generation, true};
  return depth;
}

}  // namespace hybridprof
