// Outstanding non-blocking requests by handle, and what the tracer needs to
// know at their completion.
//
// Handles are looked up in a small open-addressing index (linear probing;
// removal shifts the run back, so no tombstones pile up) of 16-byte
// entries, four to a cache line; what a request needs at its completion
// waits in a pool beside it, and the index names it by number. A message
// loop (OSU's osu_bw) tracks and completes a request per message, ~60 ns a
// message plain: a probe touches a line or two, a request's value moves
// once in and once out. The table is under a spin lock, held for a probe,
// never across a call into MPI; a thread finding it taken spins briefly,
// then yields (a holder may have been preempted on an oversubscribed node).
//
// One handle may stand for several requests at once: a library may give
// every send that completed at once the same predefined complete request
// (Open MPI's ob1 returns &ompi_request_empty for an eager send it finished
// inside MPI_Isend), so an osu_bw window of 64 sends holds one handle 64
// times. A handle's requests are a queue in the order they were made, and
// its completion takes the oldest: the program completes them in turn, as
// it started them. Each step is one probe, however many share the handle.
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
    const uint32_t node = new_node(value);
    if (2 * (used_ + 1) > index_.size()) grow();
    const size_t i = find(key);
    if (i != kNone) {  // held already: the handle's queue gets a later request
      nodes_[index_[i].newest].next = node;
      index_[i].newest = node;
      return;
    }
    place(Entry{key, node, node});
  }

  // Runs fn(Value&) on the oldest request of `key`, under the lock; removes
  // it when fn returns true. False (fn not run) when `key` has none.
  template <typename Fn>
  bool with_oldest(Key key, Fn&& fn) {
    Locked held(lock_);
    return with_oldest_locked(key, fn);
  }

  // The same for keys[0..n) in turn, under one lock (a Waitall's requests:
  // one lock a call, not one a request): fn(i, Value&) for each key that
  // has a request, missing(i) for each that has none. Neither may use the
  // table.
  template <typename Handle, typename Fn, typename Missing>
  void with_oldest_each(const Handle* keys, size_t n, Fn&& fn, Missing&& missing) {
    Locked held(lock_);
    for (size_t i = 0; i < n; ++i) {
      auto one = [&](Value& v) { return fn(i, v); };
      if (!with_oldest_locked(Key(keys[i]), one)) missing(i);
    }
  }

  size_t size() {
    Locked held(lock_);
    return requests_;
  }

 private:
  static constexpr uint32_t kNoNode = 0xffffffffu;
  // A handle's queue of requests: pool nodes oldest..newest, by `next`.
  struct Entry {
    Key key = nullptr;  // null: an empty slot
    uint32_t oldest = kNoNode, newest = kNoNode;
  };
  static_assert(sizeof(Entry) == 16, "four entries a cache line");
  struct Node {
    Value value{};
    uint32_t next = kNoNode;  // the same handle's next request, or the next free node
  };
  static constexpr size_t kNone = ~size_t{0};

  template <typename Fn>
  bool with_oldest_locked(Key key, Fn& fn) {
    if (used_ == 0) return false;
    const size_t i = find(key);
    if (i == kNone) return false;
    Entry& e = index_[i];
    const uint32_t oldest = e.oldest;
    if (!fn(nodes_[oldest].value)) return true;
    if (oldest == e.newest)
      remove(i);  // the handle's only request
    else
      e.oldest = nodes_[oldest].next;
    free_node(oldest);
    return true;
  }

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

  uint32_t new_node(const Value& value) {
    uint32_t n = free_;
    if (n != kNoNode) {
      free_ = nodes_[n].next;
      nodes_[n].value = value;
    } else {
      n = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(Node{value, kNoNode});
    }
    nodes_[n].next = kNoNode;
    ++requests_;
    return n;
  }
  void free_node(uint32_t n) {
    nodes_[n].next = free_;
    free_ = n;
    --requests_;
  }

  size_t home(Key key) const {
    // Handles are heap or static addresses: drop the alignment bits, mix.
    const uint64_t h = (reinterpret_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull;
    return size_t(h >> 32) & (index_.size() - 1);
  }
  size_t find(Key key) const {
    if (index_.empty()) return kNone;
    const size_t mask = index_.size() - 1;
    for (size_t i = home(key); index_[i].key != nullptr; i = (i + 1) & mask)
      if (index_[i].key == key) return i;
    return kNone;
  }
  void place(const Entry& e) {
    const size_t mask = index_.size() - 1;
    size_t i = home(e.key);
    while (index_[i].key != nullptr) i = (i + 1) & mask;
    index_[i] = e;
    ++used_;
  }
  // Empties slot `i` and moves later entries of its run back into the hole
  // where their home allows, so every entry stays reachable from its home.
  void remove(size_t i) {
    const size_t mask = index_.size() - 1;
    size_t hole = i;
    for (size_t j = (i + 1) & mask; index_[j].key != nullptr; j = (j + 1) & mask) {
      const size_t h = home(index_[j].key);
      // j's entry may move to the hole unless its home lies in (hole, j].
      const bool home_after_hole = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (home_after_hole) continue;
      index_[hole] = index_[j];
      hole = j;
    }
    index_[hole] = Entry{};
    --used_;
  }
  void grow() {
    std::vector<Entry> old;
    old.swap(index_);
    index_.assign(old.empty() ? kInitialSlots : 2 * old.size(), Entry{});
    used_ = 0;
    for (const Entry& e : old)
      if (e.key != nullptr) place(e);
  }

  static constexpr size_t kInitialSlots = 1024;
  std::atomic<bool> lock_{false};
  std::vector<Entry> index_;
  size_t used_ = 0;  // handles in index_
  std::vector<Node> nodes_;
  uint32_t free_ = kNoNode;  // the pool's free nodes, by `next`
  size_t requests_ = 0;      // in the pool, not free
};

}  // namespace hybridprof::mpi
