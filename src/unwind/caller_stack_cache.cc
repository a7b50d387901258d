#include "unwind/caller_stack_cache.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "unwind/native_unwinder.h"
#include "unwind/stack_scan.h"

namespace hybridprof {
namespace {

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

uint64_t key_hash(uint32_t parent, uint64_t slot, uint64_t ip) {
  return mix(ip ^ mix(slot + parent));
}

}  // namespace

CallerStackCache::CallerStackCache(uint32_t max_depth)
    : max_depth_(max_depth), index_(256, kNone), scratch_ips_(max_depth + 3), scratch_slots_(max_depth + 3) {
  // Address space for the frames most threads keep, touched only as frames
  // come: growing by copies faults each page in twice and copies it (a
  // first call from a new stack paid about 1 us for that). Not all of
  // kMaxNodes: a program may have thousands of threads.
  frames_.reserve(kReservedNodes);
  nodes_.reserve(kReservedNodes);
}

bool CallerStackCache::follows_parent(uint32_t id) const {
  return nodes_[id].parent != kNone && nodes_[id].parent == id - 1;
}

// Inlined into capture(): a call level less under every traced call.
__attribute__((always_inline)) inline uint32_t CallerStackCache::find(uint32_t parent, uint64_t slot,
                                                                      uint64_t ip) const {
  // The child stored right after its parent is not in the index.
  const uint32_t next = parent + 1;
  if (parent != kNone && next < nodes_.size() && nodes_[next].parent == parent && frames_[next].slot == slot &&
      frames_[next].ip == ip)
    return next;
  const size_t mask = index_.size() - 1;
  for (size_t i = key_hash(parent, slot, ip) & mask;; i = (i + 1) & mask) {
    const uint32_t entry = index_[i];
    if (entry == kNone) return kNone;
    if (entry & kGraftEntry) {
      const Graft& g = grafts_[entry & ~kGraftEntry];
      if (g.from == parent && frames_[g.to].slot == slot && frames_[g.to].ip == ip) return g.to;
    } else if (nodes_[entry].parent == parent && frames_[entry].slot == slot && frames_[entry].ip == ip) {
      return entry;
    }
  }
}

// Inlined into capture(), the hashing apart: a loop's walk turns where it
// turned the round before, and each call level under a traced call costs
// a deep caller mispredicted returns (trace/traced_region.h).
__attribute__((always_inline)) inline uint32_t CallerStackCache::find_turn(uint32_t parent, uint64_t slot,
                                                                           uint64_t ip) {
  // A turn from `parent` is a child of it or a graft from it. The one
  // taken last is one (it was found so); the one foreseen after it, when
  // that was a child, is a child too: only children are linked in turn (a
  // graft's target is another stack's node, its links that stack's). A
  // frame found elsewhere in the tree, though it would read the stack
  // right, would name it by another route: a stack's generation must not
  // depend on the walk's history.
  const auto matches = [&](uint32_t id) { return frames_[id].slot == slot && frames_[id].ip == ip; };
  Node& p = nodes_[parent];
  const uint32_t taken = p.taken_last;
  if (taken != kNone) {
    const uint32_t last = taken & ~kGraftEntry;
    if ((taken & kGraftEntry) == 0) {
      const uint32_t next = nodes_[last].taken_after;
      if (next != kNone && matches(next)) return p.taken_last = next;
    }
    if (matches(last)) return last;
  }
  return find_turn_hashed(parent, slot, ip);
}

uint32_t CallerStackCache::find_turn_hashed(uint32_t parent, uint64_t slot, uint64_t ip) {
  ++hashed_;
  const uint32_t id = find(parent, slot, ip);
  if (id == kNone) return id;
  Node& p = nodes_[parent];
  const uint32_t taken = p.taken_last;
  const bool graft = nodes_[id].parent != parent;
  if (!graft && taken != kNone && (taken & kGraftEntry) == 0) nodes_[taken].taken_after = id;
  p.taken_last = graft ? id | kGraftEntry : id;
  return id;
}

void CallerStackCache::grow_index() {
  index_.assign(index_.size() * 2, kNone);
  for (uint32_t id = 0; id < nodes_.size(); ++id) {
    if (!follows_parent(id)) index_insert(key_hash(nodes_[id].parent, frames_[id].slot, frames_[id].ip), id);
  }
  for (uint32_t g = 0; g < grafts_.size(); ++g) {
    const Graft& graft = grafts_[g];
    index_insert(key_hash(graft.from, frames_[graft.to].slot, frames_[graft.to].ip), kGraftEntry | g);
  }
}

void CallerStackCache::index_insert(uint64_t hash, uint32_t entry) {
  const size_t mask = index_.size() - 1;
  size_t i = hash & mask;
  while (index_[i] != kNone) i = (i + 1) & mask;
  index_[i] = entry;
}

uint32_t CallerStackCache::add(uint32_t parent, uint64_t slot, uint64_t ip, uint32_t depth) {
  const uint32_t id = uint32_t(nodes_.size());
  frames_.push_back(Frame{slot, ip});
  // A run goes on when the frame follows the one added before it (and that
  // one ends no stack); capture() sets the run's last node once it is whole.
  nodes_.push_back(Node{parent, depth, id, 0, 0, 0, false, kNone, kNone});
  // Only a run's first frame is indexed: the rest are found next to their
  // parent (an insertion is then one random write, not one a frame).
  if (!follows_parent(id)) {
    if (2 * ++indexed_ > index_.size()) grow_index();  // at most half full
    index_insert(key_hash(parent, slot, ip), id);
  }
  if (parent != kNone && nodes_[parent].child_slot == 0) nodes_[parent].child_slot = slot;
  return id;
}

void CallerStackCache::mark_end(uint32_t leaf, uint32_t flags) {
  Node& n = nodes_[leaf];
  n.end_flags = flags;
  if (n.end) return;
  n.end = true;
  // The walk stops at the first stack end it reaches: a run that went on
  // past this frame now ends here.
  const uint32_t last = n.run_last;
  for (uint32_t id = leaf; nodes_[id].run_last == last; --id) {
    nodes_[id].run_last = leaf;
    if (id == 0 || nodes_[id].parent != id - 1) break;  // the run's first node
  }
}

void CallerStackCache::forget_all() {
  nodes_.clear();
  frames_.clear();
  grafts_.clear();
  grafted_generations_.clear();
  recent_grafted_.clear();
  ends_.clear();
  indexed_ = 0;
  root_ = other_root_ = kNone;
  index_.assign(256, kNone);
  // A new epoch: consumers forget the generations of the last one.
  epoch_ = (epoch_ + 1) & ((1u << (32 - kEpochShift)) - 1);
  if (epoch_ == 0) epoch_ = 1;  // generation 0 means "not remembered"
  handed_out_ = 0;
}

__attribute__((always_inline)) inline int64_t CallerStackCache::offset_after(const Graft* taken, uint32_t k) const {
  int64_t offset = 0;
  for (uint32_t i = 0; i < k; ++i) offset += int64_t{nodes_[taken[i].from].depth} + 1 - nodes_[taken[i].to].depth;
  return offset;
}

void CallerStackCache::copy_stack(const GraftedStack& stack, uint64_t* ips) const {
  // Piece k runs inwards from the next graft's start (or the end) to graft
  // k's end (or the root), in its own stack's depths; with no graft, one
  // piece from the end to the root.
  for (uint32_t k = 0; k <= stack.grafts; ++k) {
    const int64_t offset = offset_after(stack.taken, k);
    const uint32_t first = k == 0 ? kNone : stack.taken[k - 1].to;
    for (uint32_t id = k < stack.grafts ? stack.taken[k].from : stack.leaf;; id = nodes_[id].parent) {
      ips[nodes_[id].depth - 1 + offset] = frames_[id].ip;
      if (id == first || nodes_[id].parent == kNone) break;
    }
  }
}

__attribute__((always_inline)) inline bool CallerStackCache::GraftedStack::operator==(const GraftedStack& o) const {
  if (leaf != o.leaf || grafts != o.grafts) return false;
  for (uint32_t k = 0; k < grafts; ++k)
    if (!(taken[k] == o.taken[k])) return false;
  return true;
}

__attribute__((always_inline)) inline size_t CallerStackCache::GraftedStackHash::operator()(
    const GraftedStack& s) const {
  uint64_t h = mix(s.leaf);
  for (uint32_t k = 0; k < s.grafts; ++k) h = mix(h ^ (uint64_t{s.taken[k].from} << 32 | s.taken[k].to));
  return size_t(h);
}

CallerStackCache::Ref CallerStackCache::hand_out() {
  if (handed_out_ >= kMaxHandedOut) forget_all();
  const uint32_t generation = next_generation();
  return Ref{generation % kEntries, generation, true};
}

CallerStackCache::Ref CallerStackCache::ref_for(uint32_t leaf) {
  Node& n = nodes_[leaf];
  const bool first = n.generation == 0;
  // Fewer leaves than nodes in an epoch, and hand_out's share bounded: the
  // number fits below the epoch.
  // (Grafted stacks have their own bound, kMaxHandedOut, in capture().)
  static_assert(2 * kMaxHandedOut + kMaxNodes < (1u << kEpochShift));
  if (first) n.generation = next_generation();
  return Ref{n.generation % kEntries, n.generation, first};
}

// Inlined into capture(), as offset_after and the hash: each call level
// under a traced call costs a deep caller (see trace/traced_region.h).
__attribute__((always_inline)) inline CallerStackCache::Ref CallerStackCache::ref_for_grafted(
    const GraftedStack& stack) {
  // The stacks named last first: a loop's, without the table's hashing
  // and its buckets' misses at every call.
  if (!recent_grafted_.empty()) {
    const RecentGrafted& recent = recent_grafted_[GraftedStackHash{}(stack) & (kRecentGrafted - 1)];
    if (recent.generation != 0 && recent.stack == stack)
      return Ref{recent.generation % kEntries, recent.generation, false};
  }
  return name_grafted(stack);
}

CallerStackCache::Ref CallerStackCache::name_grafted(const GraftedStack& stack) {
  uint32_t& generation = grafted_generations_[stack];
  const bool first = generation == 0;
  if (first) generation = next_generation();
  if (recent_grafted_.empty()) recent_grafted_.resize(kRecentGrafted);
  recent_grafted_[GraftedStackHash{}(stack) & (kRecentGrafted - 1)] = RecentGrafted{stack, generation};
  return Ref{generation % kEntries, generation, first};
}

uint32_t CallerStackCache::shared_outer_part(const uint64_t* own_ips, const uint64_t* own_slots, uint32_t depth,
                                             uint32_t from, uint32_t* at, uint32_t* leaf) const {
  if (depth < from + kMinGraftedFrames) return kNone;
  const auto end = ends_.find(mix(own_slots[depth - 1] ^ mix(own_ips[depth - 1])));
  if (end == ends_.end()) return kNone;
  uint32_t shared = kNone;
  uint32_t i = depth;
  for (uint32_t id = end->second; id != kNone && i > from; id = nodes_[id].parent) {
    if (frames_[id].slot != own_slots[i - 1] || frames_[id].ip != own_ips[i - 1]) break;
    shared = id;
    --i;
  }
  if (shared == kNone || depth - i < kMinGraftedFrames) return kNone;
  *at = i;
  *leaf = end->second;
  return shared;
}

uint32_t CallerStackCache::read_known_stack(uint64_t own_slot) {
  // The thread's stack as the runtime remembered it at the thread's start
  // (a thread it did not see start, or none: here, once). Reads stay in it.
  StackBounds stack = this_thread_stack();
  if (stack.high == 0) {
    remember_thread_stack();
    stack = this_thread_stack();
  }
  // Not on the thread's own stack (a signal stack, a coroutine's): unwound.
  if (!stack.contains(own_slot)) return 0;
  const uint32_t depth =
      frame_sizes_.read(own_slot, stack.high, max_depth_, scratch_ips_.data() + 1, scratch_slots_.data() + 1);
  if (depth == 0) return 0;
  ++read_;
  return depth + 1;  // as the unwinders count: this function's frame first
}

// Reads other frames' memory (their return-address slots, where a
// sanitizer's red zones may be once the stack has moved on).
__attribute__((no_sanitize("address"))) uint32_t CallerStackCache::capture(uint64_t* ips, uint32_t* flags, Ref* ref,
                                                                           bool copy_remembered) {
  // This function keeps a frame pointer (it asks for its frame address):
  // its return address sits just above the saved frame pointer.
  const uint64_t own_slot = reinterpret_cast<uint64_t>(__builtin_frame_address(0)) + 8;
  const uint64_t own_return = reinterpret_cast<uint64_t>(__builtin_return_address(0));

  // Walk the tree as far as the live stack matches it: along a run, a
  // load per frame and nothing that waits on it but the loop's exit; at
  // a run's end or a frame that differs, the node whose frame the live
  // stack holds next.
  if (!is_root(root_, own_slot, own_return)) {
    std::swap(root_, other_root_);
    if (!is_root(root_, own_slot, own_return)) root_ = find(kNone, own_slot, own_return);
  }
  uint32_t node = root_;
  uint32_t matched = kNone;  // the outermost frame the live stack shares with the tree
  GraftedStack path;         // the grafts the walk took to get there
  while (node != kNone && !nodes_[node].end) {
    // By pointer, not index: 7 instructions a frame where the index's
    // widening and scaling made 12 (the walk is most of a deep capture).
    const Frame* const frames = frames_.data();
    const Frame* const run_end = frames + nodes_[node].run_last + 1;
    const Frame* f = frames + node + 1;
    while (f != run_end && *reinterpret_cast<const volatile uint64_t*>(f->slot) == f->ip) ++f;
    node = matched = uint32_t(f - frames) - 1;
    const Node& n = nodes_[node];
    if (n.end || n.child_slot == 0) break;
    const uint32_t from = node;
    node = find_turn(node, n.child_slot, *reinterpret_cast<const volatile uint64_t*>(n.child_slot));
    if (node != kNone && nodes_[node].parent != from) {  // onto another stack's outer part
      if (path.grafts == kMaxGraftsPerStack) {
        node = kNone;
        break;
      }
      path.taken[path.grafts++] = Graft{from, node};
    }
  }
  if (node != kNone && nodes_[node].end) {
    const Node& leaf = nodes_[node];
    path.leaf = node;
    const int64_t depth = int64_t{leaf.depth} + offset_after(path.taken, path.grafts);
    // Through grafts, the end must be the thread's outermost frame: a
    // truncated stack's end is where its own depth ran out, not this one's.
    if (path.grafts == 0 || (leaf.end_flags == 0 && depth <= max_depth_)) {
      ++hits_;
      *flags |= leaf.end_flags;
      const Ref r = !ref ? Ref{} : path.grafts == 0 ? ref_for(node) : ref_for_grafted(path);
      if (ref) *ref = r;
      if (copy_remembered || !ref || r.stored) copy_stack(path, ips);
      return uint32_t(depth);
    }
  }

  ++misses_;
  if (ref) *ref = Ref{};
  // A stack through code never seen: a DWARF unwind, which knows every
  // frame's slot (it starts in this function: one frame more, dropped).
  // Finding the slots by scanning the stack for the return addresses is
  // cheaper but not sound: in a recursion every frame returns to the same
  // address, and a stale copy of it in a frame's padding took a slot
  // (a stack remembered wrong, missed again at every call).
  uint32_t unwind_flags = 0;
  // A stack through code seen before reads itself: each return address
  // says where the next one is (frame_sizes.h).
  uint32_t depth = read_known_stack(own_slot);
  const bool read_through_known_code = depth != 0;
  if (depth == 0) depth = unwind_from_caller(scratch_ips_.data(), scratch_slots_.data(), max_depth_ + 1, &unwind_flags);
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
  if (!read_through_known_code) frame_sizes_.learn(own_ips, own_slots, depth, unwind_flags == 0 && depth < max_depth_);
  if (nodes_.size() + depth > kMaxNodes || grafted_generations_.size() >= kMaxHandedOut) {
    forget_all();
    matched = kNone;
  }
  // The frames the walk matched are in the tree already (when the stack
  // found agrees with them); the ones after are new, one after another.
  uint32_t parent = kNone, shared = 0;
  if (matched == kNone || nodes_[matched].end) {
    path.grafts = 0;
  } else {
    // Its frames count from the innermost of the stack that stored them.
    const int64_t d = int64_t{nodes_[matched].depth} + offset_after(path.taken, path.grafts);
    if (d <= depth && own_slots[d - 1] == frames_[matched].slot && own_ips[d - 1] == frames_[matched].ip) {
      parent = matched;
      shared = uint32_t(d);
    } else {
      path.grafts = 0;
    }
  }
  // The outer part, when another stack that ends where this one does has
  // it already: only the frames before it are added.
  uint32_t outer_at = depth, outer_leaf = kNone;
  const uint32_t outer = nodes_.size() >= kReservedNodes && unwind_flags == 0 && depth < max_depth_ &&
                                 path.grafts < kMaxGraftsPerStack
                             ? shared_outer_part(own_ips, own_slots, depth, shared, &outer_at, &outer_leaf)
                             : kNone;
  const uint32_t first_added = uint32_t(nodes_.size());
  // False when the stack would take more grafts than a stack may: then it
  // is not remembered (a frame kept beside a graft from the same node
  // would give one stack two routes, and two names).
  const auto add_frames = [&](uint32_t from, uint32_t to) {
    for (uint32_t i = from; i < to; ++i) {
      uint32_t id = parent == kNone || parent < first_added ? find(parent, own_slots[i], own_ips[i]) : kNone;
      if (id != kNone && parent != kNone && nodes_[id].parent != parent) {  // a graft the walk did not take
        if (path.grafts == kMaxGraftsPerStack) return false;
        path.taken[path.grafts++] = Graft{parent, id};
      }
      // Depths count on from the parent's, in the numbering of the stack it was stored for.
      if (id == kNone) id = add(parent, own_slots[i], own_ips[i], parent == kNone ? 1 : nodes_[parent].depth + 1);
      parent = id;
    }
    return true;
  };
  bool remembered = add_frames(shared, outer_at);
  const bool grafted = remembered && outer != kNone && parent != kNone && path.grafts < kMaxGraftsPerStack &&
                       (nodes_[parent].child_slot == 0 || nodes_[parent].child_slot == own_slots[outer_at]);
  if (remembered && !grafted) remembered = add_frames(outer_at, depth);
  // The frames added are one run, outwards from the first (a stack's
  // frames found in the tree come first, the new ones after them).
  for (uint32_t id = first_added; id < nodes_.size(); ++id) nodes_[id].run_last = parent;
  if (!remembered) return depth;
  if (grafted) {
    nodes_[parent].child_slot = own_slots[outer_at];
    grafts_.push_back(Graft{parent, outer});
    path.taken[path.grafts++] = grafts_.back();
    if (2 * ++indexed_ > index_.size())
      grow_index();
    else
      index_insert(key_hash(parent, own_slots[outer_at], own_ips[outer_at]), kGraftEntry | uint32_t(grafts_.size() - 1));
    path.leaf = outer_leaf;  // the end is the other stack's
    if (ref) *ref = ref_for_grafted(path);
    return depth;
  }
  mark_end(parent, unwind_flags);
  if (unwind_flags == 0 && depth < max_depth_) ends_[mix(frames_[parent].slot ^ mix(frames_[parent].ip))] = parent;
  path.leaf = parent;
  if (ref) *ref = path.grafts == 0 ? ref_for(parent) : ref_for_grafted(path);
  return depth;
}

}  // namespace hybridprof
