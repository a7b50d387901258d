// Region ids an adapter keys its own way (a construct at an address, a
// range's name): one id per key for the process, its definition written
// into each raw stream at the key's first use there. A fork child's stream
// is new and holds none of the parent's definitions: the adapter calls
// new_stream() from its EventSource::process_started.
//
// Not the signal path: may lock and allocate. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "trace/region_ids.h"

namespace hybridprof {

template <typename Key>
class StreamRegionTable {
 public:
  // The id of `key`; define(id) writes its definition (Drain::append,
  // define_code_region) once per stream.
  template <typename Define>
  uint32_t id(const Key& key, Define&& define) {
    const uint64_t now = stream();
    std::lock_guard lock(mutex_);
    Entry& e = entries_[key];
    if (e.id == 0) e.id = reserve_region_ids(1);
    if (e.stream != now) {
      define(e.id);
      e.stream = now;
    }
    return e.id;
  }
  // Which stream is being written: a per-thread cache of ids is good for
  // as long as this stays the same.
  uint64_t stream() const { return stream_.load(std::memory_order_acquire); }
  void new_stream() { stream_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  struct Entry {
    uint32_t id = 0;
    uint64_t stream = 0;  // the stream it was last defined in
  };
  std::atomic<uint64_t> stream_{1};
  std::mutex mutex_;
  std::unordered_map<Key, Entry> entries_;
};

// A thread's recent region ids, so that a key met again takes no lock:
// `Sets` sets of four, each entry good while the stream it was found for is
// still the one written (StreamRegionTable::stream()); a set full of other
// keys gives up its entries in turn. Four ways and a multiplicative hash
// because a direct-mapped 64 with the adapter's own hash thrashed on LULESH
// (~100 OpenMP constructs and their waits, 55,000 regions a second a rank:
// a lock and a hash-map lookup at most of them). Plain data: a thread's
// per-thread state (PerThread) holds it. Keys are integers or pointers.
template <typename Key, size_t Sets>
class RecentRegionIds {
  static_assert((Sets & (Sets - 1)) == 0, "a power of two");
  static constexpr uint32_t kWays = 4;

 public:
  // The id of `key` in `stream`; look_up() finds it on a miss
  // (StreamRegionTable::id, or what the adapter wraps it in).
  template <typename LookUp>
  uint32_t id(const Key& key, uint64_t stream, LookUp&& look_up) {
    Set& set = sets_[index(key)];
    for (const Slot& s : set.ways)
      if (s.stream == stream && s.key == key) return s.id;
    Slot& room = set.ways[set.next];
    set.next = (set.next + 1) % kWays;
    room = Slot{key, stream, look_up()};
    return room.id;
  }

 private:
  static size_t index(const Key& key) {
    uint64_t bits;
    if constexpr (std::is_pointer_v<Key>)
      bits = reinterpret_cast<uintptr_t>(key);
    else
      bits = static_cast<uint64_t>(key);
    return size_t((bits * 0x9E3779B97F4A7C15ull) >> 40) & (Sets - 1);
  }
  struct Slot {
    Key key{};
    uint64_t stream = 0;  // 0: empty (streams count from 1)
    uint32_t id = 0;
  };
  struct Set {
    Slot ways[kWays];
    uint32_t next = 0;  // the way the next miss fills
  };
  Set sets_[Sets];
};

}  // namespace hybridprof
