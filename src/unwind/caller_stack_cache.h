// The stacks of traced calls (MPI calls now; OpenMP and CUDA enters later),
// remembered per thread. A loop that calls MPI_Send from the same place has
// the same stack every time: unwinding it once and checking that it is
// still there costs a load per frame instead of a DWARF walk.
//
// Why the check is enough: capture() knows its own return-address slot and
// value for certain. If they match an entry, the caller is the same code at
// the same stack depth, so its frame (whose size follows from its code
// address) ends where it ended before, and the next slot out holds the
// caller's live return address. Comparing every slot outwards proves the
// whole stack, up to frames whose size is not a function of their code
// address (alloca/VLA frames that land the call at the same depth with a
// different frame size: not seen in MPI codes, accepted).
//
// Not the signal path: used from traced-call wrappers, outside handlers,
// under the thread's busy guard (the handler never sees a half-written
// entry).
#pragma once

#include <cstdint>
#include <vector>

namespace hybridprof {

class CallerStackCache {
 public:
  static constexpr uint32_t kEntries = 8;

  // Which remembered stack a capture used or made: entry `slot` as it was
  // when stored for the `generation`-th time. Lets a consumer that saw the
  // stack once (stored: true) map later uses of it (stored: false) without
  // seeing its addresses again. generation 0: not remembered.
  struct Ref {
    uint32_t slot = 0;
    uint32_t generation = 0;
    bool stored = false;  // this capture unwound and remembered the stack
  };

  explicit CallerStackCache(uint32_t max_depth);

  // Like unwind_from_caller: the calling thread's return addresses from
  // this function's caller outwards into ips[0..max_depth) (room for
  // max_depth + 1), flags as there. Reuses a remembered stack when every
  // one of its return-address slots still holds the same address; then,
  // with `copy_remembered` false, leaves ips alone (a caller that goes by
  // `ref` does not need the addresses again). Returns the depth.
  __attribute__((noinline)) uint32_t capture(uint64_t* ips, uint32_t* flags, Ref* ref = nullptr,
                                             bool copy_remembered = true);

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    uint32_t depth = 0;  // 0: empty
    uint32_t flags = 0;
    uint32_t generation = 0;
    std::vector<uint64_t> ips, slots;  // ips[0] is capture()'s return address
  };
  bool still_there(const Entry& e, uint64_t own_slot, uint64_t own_return) const;

  uint32_t max_depth_;
  std::vector<Entry> entries_;
  std::vector<uint64_t> scratch_ips_, scratch_slots_;
  uint32_t next_victim_ = 0;
  uint32_t last_hit_ = 0;  // looked at first: a loop calls from the same few places
  uint32_t generations_ = 0;  // entries stored so far
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace hybridprof
