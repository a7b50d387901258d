// Outstanding non-blocking requests by handle, and what the tracer needs to
// know at their completion.
//
// An open-addressing table (linear probing; removal shifts the run back, so
// no tombstones pile up) under a spin lock. A message loop (OSU's osu_bw)
// tracks and completes a request per message, ~60 ns a message plain; a
// std::unordered_map under a std::mutex cost ~35 ns of that per request
// (a node allocated and freed, two lock round trips); this is a few loads
// and one atomic exchange. The lock is held for a probe, never across a
// call into MPI; a thread finding it taken spins briefly, then yields (a
// holder may have been preempted on an oversubscribed node).
//
// One handle may stand for several requests at once: a library may give
// every send that completed at once the same predefined complete request
// (Open MPI's ob1 returns &ompi_request_empty for an eager send it finished
// inside MPI_Isend), so an osu_bw window of 64 sends holds one handle 64
// times. A handle's entries are kept in the order they were made (the
// first under the handle, the later ones under the handle and their number),
// and its completion takes the oldest: the program completes them in turn,
// as it started them; each step finds one entry, however many share it.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hybridprof::mpi {

template <typename Value>
class RequestTable {
 public:
  using Key = const void*;  // a request handle; never null

  void insert(Key key, const Value& value) {
    Locked held(lock_);
    if (2 * (used_ + 1) > slots_.size()) grow();
    const size_t head = find({key, 0});
    if (head == kNone) {
      place({key, 0}, value);
      return;
    }
    // Held already: a later entry of the handle, numbered after the head's.
    const uint32_t n = ++slots_[head].last;
    place({key, n}, value);
  }

  // Runs fn(Value&) on the oldest entry of `key`, under the lock; removes
  // it when fn returns true. False (fn not run) when `key` has none.
  template <typename Fn>
  bool with_oldest(Key key, Fn&& fn) {
    Locked held(lock_);
    if (used_ == 0) return false;
    size_t head = find({key, 0});
    if (head == kNone) return false;
    if (!fn(slots_[head].value)) return true;
    Slot& h = slots_[head];
    if (h.next > h.last) {  // the handle's only entry
      remove(head);
      return true;
    }
    // The next entry of the handle takes the head's place.
    const uint32_t next = h.next, last = h.last;
    const size_t later = find({key, next});
    if (later == kNone) {  // never so: each of next..last is held
      remove(head);
      return true;
    }
    const Value value = slots_[later].value;
    remove(later);  // may move the head back in its run
    head = find({key, 0});
    slots_[head].value = value;
    slots_[head].next = next + 1;
    slots_[head].last = last;
    return true;
  }

  size_t size() {
    Locked held(lock_);
    return used_;
  }

 private:
  // An entry's name: its handle and its place among the handle's entries
  // (0: the head, holding the oldest; later ones 1, 2, ... as made).
  struct Name {
    Key key = nullptr;  // null: an empty slot
    uint32_t place = 0;
    bool operator==(const Name& o) const { return key == o.key && place == o.place; }
  };
  struct Slot {
    Name name;
    uint32_t next = 1, last = 0;  // the head's: places of its later entries still held, next..last
    Value value{};
  };
  static constexpr size_t kNone = ~size_t{0};

  class Locked {
   public:
    explicit Locked(std::atomic<bool>& lock) : lock_(lock) {
      for (unsigned spins = 0; lock_.exchange(true, std::memory_order_acquire);) {
        while (lock_.load(std::memory_order_relaxed))
          if (++spins % 128 == 0) sched_yield();
      }
    }
    ~Locked() { lock_.store(false, std::memory_order_release); }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

   private:
    std::atomic<bool>& lock_;
  };

  size_t home(const Name& n) const {
    // Handles are heap or static addresses: drop the alignment bits, mix.
    const uint64_t h = ((reinterpret_cast<uintptr_t>(n.key) >> 4) + n.place * 0xD6E8FEB86659FD93ull) *
                       0x9E3779B97F4A7C15ull;
    return size_t(h >> 32) & (slots_.size() - 1);
  }
  size_t find(const Name& n) const {
    if (slots_.empty()) return kNone;
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(n); slots_[i].name.key != nullptr; i = (i + 1) & mask)
      if (slots_[i].name == n) return i;
    return kNone;
  }
  void place(const Name& n, const Value& value) {
    const size_t mask = slots_.size() - 1;
    size_t i = home(n);
    while (slots_[i].name.key != nullptr) i = (i + 1) & mask;
    slots_[i] = Slot{n, 1, 0, value};
    ++used_;
  }
  // Empties slot `i` and moves later entries of its run back into the hole
  // where their home allows, so every entry stays reachable from its home.
  void remove(size_t i) {
    const size_t mask = slots_.size() - 1;
    size_t hole = i;
    for (size_t j = (i + 1) & mask; slots_[j].name.key != nullptr; j = (j + 1) & mask) {
      const size_t h = home(slots_[j].name);
      // j's entry may move to the hole unless its home lies in (hole, j].
      const bool home_after_hole = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (home_after_hole) continue;
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole] = Slot{};
    --used_;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? kInitialSlots : 2 * old.size(), Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.name.key == nullptr) continue;
      size_t i = home(s.name);
      while (slots_[i].name.key != nullptr) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  static constexpr size_t kInitialSlots = 1024;
  std::atomic<bool> lock_{false};
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

}  // namespace hybridprof::mpi
