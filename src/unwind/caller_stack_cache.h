// The stacks of traced calls (MPI, OpenMP, CUDA and NVTX enters),
// remembered per thread. A program calls a traced function from many
// places (a PyTorch step launches a hundred kernels from as many stacks;
// LULESH enters a dozen OpenMP regions): each stack is unwound once, then
// recognized by reading its return-address slots, a load per frame, never
// by another DWARF walk.
//
// Why reading the slots is enough: capture() knows its own return-address
// slot and value for certain. If they match a remembered frame, the caller
// is the same code at the same stack depth, so its frame (whose size
// follows from its code address) ends where it ended before, and the next
// slot out holds the caller's live return address. Proving each slot
// outwards proves the whole stack, up to frames whose size is not a
// function of their code address (alloca/VLA frames that land the call at
// the same depth with a different frame size: not seen in these codes,
// accepted).
//
// The stacks are kept as a tree grown from the innermost frame outwards:
// a node is a frame (its return address and the slot that holds it), its
// children the frames found beyond it so far, which all sit in one slot
// (the next frame's place follows from this frame's code). The frames one
// capture adds are stored one after another (a run), so recognizing a
// stack is mostly a loop over consecutive (slot, address) pairs, one load
// from the live stack each, with no load waiting on another; where the
// stack leaves a run it turns another way, found by a hash lookup. A
// 200-frame stack costs about 200 loads, whatever the number of stacks
// remembered: 1 call site or 4,096 cost about the same. A stack whose walk
// leaves the tree is unwound and added. Frames shared by many stacks are
// kept once: their inner frames by the tree itself, and their outer ones
// (stacks that part near the innermost frame, under a deep recursion or
// an interpreter's frames) by grafts: a new stack whose outer part, long
// enough, is another's keeps only its inner frames and a graft onto that
// part, so 4,096 stacks of 200 frames are not 819,200 frames (which
// overflowed the tree, and made every call a first call again, until
// 2026-11-29). A stack through grafts is named by the grafts it took and
// its end, looked up in a table.
//
// Consumers key records by the stack (RegionRecord's stack_slot and
// stack_generation) through Ref: each remembered stack has a generation of
// its own, handed out with its addresses the first time (stored), alone
// after that, however many stacks come in between. A generation's top bits
// are the tree's epoch: when the tree starts again empty, every generation
// handed out before is forgotten, and a consumer that sees a new epoch
// forgets them too (epoch_of).
//
// Not the signal path: used from traced-call wrappers, outside handlers,
// under the thread's busy guard (the handler never sees a half-written
// tree). May allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "unwind/frame_sizes.h"

namespace hybridprof {

class CallerStackCache {
 public:
  // Slots a consumer keeps per-stack state in (generation % kEntries), at
  // most: consumers grow theirs as stacks are handed out (trace/stack_slots.h).
  // A RepeatRecord names one in its 16-bit aux.
  static constexpr uint32_t kEntries = 4096;
  // A generation: epoch << kEpochShift | the stack's number in its epoch.
  static constexpr uint32_t kEpochShift = 24;
  static constexpr uint32_t epoch_of(uint32_t generation) { return generation >> kEpochShift; }
  // Frames remembered at most (56 bytes each, and up to 8 of index: 16 MiB a
  // thread at worst); past this the tree starts again empty.
  static constexpr uint32_t kMaxNodes = 1u << 18;
  // Frames reserved up front (768 KiB of address space: 80 stacks of 200
  // frames, 350 of 50); past them the arrays grow.
  static constexpr uint32_t kReservedNodes = 1u << 14;

  // Which remembered stack a capture used or made: its generation, and the
  // slot a consumer keeps its state in. Lets a consumer that saw the stack
  // once (stored: true) map later uses of it (stored: false) without seeing
  // its addresses again. generation 0: not remembered.
  struct Ref {
    uint32_t slot = 0;
    uint32_t generation = 0;
    bool stored = false;  // this capture handed out the stack's addresses, for the first time
  };

  explicit CallerStackCache(uint32_t max_depth);

  // Like unwind_from_caller: the calling thread's return addresses from
  // this function's caller outwards into ips[0..max_depth) (room for
  // max_depth + 1), flags as there. Reuses a remembered stack when every
  // one of its return-address slots still holds the same address; then,
  // with `copy_remembered` false and a Ref the consumer already has, leaves
  // ips alone (a caller that goes by `ref` does not need the addresses
  // again). Returns the depth.
  __attribute__((noinline)) uint32_t capture(uint64_t* ips, uint32_t* flags, Ref* ref = nullptr,
                                             bool copy_remembered = true);

  // A new generation, in the same numbering as the stacks this cache
  // remembers, for a stack its caller remembers itself (a native stack
  // with Python frames above it: trace/python_stack_memo.h). Handed out
  // stored. Past kMaxHandedOut in an epoch the cache starts a new one.
  static constexpr uint32_t kMaxHandedOut = 1u << 16;  // the drain keeps each (with its frames) until the epoch ends
  Ref hand_out();
  uint32_t epoch() const { return epoch_; }

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }  // captures not remembered
  uint64_t read() const { return read_; }      // misses read through known code (FrameSizes), no unwind
  uint64_t hashed() const { return hashed_; }  // turns the walk looked up, not the one it foresaw
  size_t frames_remembered() const { return nodes_.size(); }
  size_t grafts() const { return grafts_.size(); }  // outer frames shared, not copied (below)

  // Once the tree holds kReservedNodes frames, a new stack whose outer
  // part, at least this many frames, is already the outer part of a
  // remembered one (the same slots, the same return addresses, to the same
  // end) keeps only its inner frames and a graft onto the other's. Below
  // either a stack keeps its own copy: a walk through a graft names its
  // stack by a lookup, ~10-25 ns; and a tree within its reserved frames
  // costs no page faults and no copies as it grows.
  static constexpr uint32_t kMinGraftedFrames = 32;
  static constexpr uint32_t kMaxGraftsPerStack = 4;

 private:
  static constexpr uint32_t kNone = 0xffffffffu;
  // What the walk reads, kept apart and packed: node ids index both.
  struct Frame {
    uint64_t slot, ip;
  };
  struct Node {
    uint32_t parent;      // the next frame inwards; kNone: the innermost
    uint32_t depth;       // frames from the innermost, this one included
    uint32_t run_last;    // the last node of the run this one is in (runs end at stack ends)
    uint32_t end_flags;   // unwinder flags of the stack ending here
    uint64_t child_slot;  // where the next frame out keeps its return address; 0: none seen
    uint32_t generation;  // a stack ending here, as handed out; 0: not yet
    bool end;             // a stack ends here (its outermost frame, or its truncation)
    // The child the walk took from here last (kNone: none), and, as a
    // child, the sibling the walk took after it the time before: a loop's
    // calls turn the same ways in the same order each round (LULESH's
    // thirty OpenMP regions from one wrapper frame, a ping-pong's send and
    // receive), so the turn after the last one is found without hashing,
    // however many siblings the loop goes round. (Two children taken last,
    // kept in turn, missed every time in a round of three or more.)
    uint32_t taken_last;   // kGraftEntry set: a graft's target
    uint32_t taken_after;
  };
  // A graft: the frame after node `from` is node `to`, stored as another
  // stack's (so `to`'s parent is not `from`, and the depths it and the
  // frames beyond it count are that stack's). Sound because a frame is
  // known by its slot and its return address alone: the next slot out
  // follows from them, whichever stack stored them.
  struct Graft {
    uint32_t from, to;
    bool operator==(const Graft& o) const { return from == o.from && to == o.to; }
  };
  // A stack through grafts: the grafts it took, in order, and its end.
  struct GraftedStack {
    uint32_t leaf = 0;
    uint32_t grafts = 0;
    Graft taken[kMaxGraftsPerStack] = {};
    bool operator==(const GraftedStack& o) const;
  };
  // How many frames further out than their depths say the nodes after the
  // first `k` grafts of a stack are.
  int64_t offset_after(const Graft* taken, uint32_t k) const;
  struct GraftedStackHash {
    size_t operator()(const GraftedStack& s) const;
  };
  static constexpr uint32_t kGraftEntry = 0x80000000u;  // index_ entries: kGraftEntry | graft's number

  // The child of `parent` (kNone: a root) for a frame (slot, ip), or a
  // graft from `parent` to it; kNone.
  uint32_t find(uint32_t parent, uint64_t slot, uint64_t ip) const;
  // The same for the walk: asks first the child taken after the one
  // taken last, then that one.
  uint32_t find_turn(uint32_t parent, uint64_t slot, uint64_t ip);
  uint32_t find_turn_hashed(uint32_t parent, uint64_t slot, uint64_t ip);  // neither foreseen turn
  // Whether node `id` is stored right after its parent (in its run), and
  // so found there rather than in the index.
  bool follows_parent(uint32_t id) const;
  uint32_t add(uint32_t parent, uint64_t slot, uint64_t ip, uint32_t depth);
  void grow_index();
  // Marks `leaf` the end of a stack; a run that went on past it ends there.
  void mark_end(uint32_t leaf, uint32_t flags);
  void forget_all();
  // The stack the walk found (through its grafts, if any), innermost
  // first, into ips[0..depth).
  void copy_stack(const GraftedStack& stack, uint64_t* ips) const;
  Ref ref_for(uint32_t leaf);
  Ref ref_for_grafted(const GraftedStack& stack);
  Ref name_grafted(const GraftedStack& stack);  // not among the recent ones
  void index_insert(uint64_t hash, uint32_t entry);
  // A new stack (`depth` frames, innermost first) ending where a
  // remembered one ends (`*leaf`: their outermost frame, the thread's
  // first): the node where the frames they share from there inwards begin,
  // own frame `*at`, no further in than `from`; kNone when they share
  // fewer than kMinGraftedFrames.
  uint32_t shared_outer_part(const uint64_t* own_ips, const uint64_t* own_slots, uint32_t depth, uint32_t from,
                             uint32_t* at, uint32_t* leaf) const;
  // A miss's stack read through known code, into the scratch arrays from
  // index 1; its depth counted as the unwinders count (this frame first),
  // 0 when it cannot be read so.
  uint32_t read_known_stack(uint64_t own_slot);

  uint32_t max_depth_;
  std::vector<Frame> frames_;
  std::vector<Node> nodes_;
  // The roots found last and before it: calls that alternate between two
  // wrappers (a ping-pong's MPI_Send and MPI_Recv, whose frames put this
  // function's own slot at two places) find theirs without the index.
  uint32_t root_ = kNone, other_root_ = kNone;
  bool is_root(uint32_t node, uint64_t own_slot, uint64_t own_return) const {
    return node != kNone && frames_[node].slot == own_slot && frames_[node].ip == own_return;
  }
  std::vector<Graft> grafts_;
  std::unordered_map<GraftedStack, uint32_t, GraftedStackHash> grafted_generations_;
  struct RecentGrafted {
    GraftedStack stack;
    uint32_t generation = 0;  // 0: empty
  };
  static constexpr size_t kRecentGrafted = 4096;
  std::vector<RecentGrafted> recent_grafted_;  // by the stack's hash; made at the first graft
  // Stacks' ends with nothing past them (the thread's outermost frame), by
  // their frame: where a new stack's outer part is looked for.
  std::unordered_map<uint64_t, uint32_t> ends_;
  std::vector<uint32_t> index_;  // open addressing: node ids by (parent, slot, ip); kNone: empty
  size_t indexed_ = 0;           // nodes in index_ (those not following their parent)
  std::vector<uint64_t> scratch_ips_, scratch_slots_;
  uint32_t epoch_ = 1;
  uint32_t handed_out_ = 0;  // stacks given a generation in this epoch
  uint32_t next_generation() { return epoch_ << kEpochShift | ++handed_out_; }
  uint64_t hits_ = 0, misses_ = 0, read_ = 0, hashed_ = 0;
  FrameSizes frame_sizes_;  // kept across epochs: code does not change
};

}  // namespace hybridprof
