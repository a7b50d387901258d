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
    const size_t i = index(key);
    // Streams count from 1 and a process starts a few (its own, a fork's):
    // their low 32 bits tell them apart.
    const auto in_stream = static_cast<uint32_t>(stream);
    for (const Slot& s : sets_[i].ways)
      if (s.stream == in_stream && s.key == key) return s.id;
    Slot& room = sets_[i].ways[next_[i]];
    next_[i] = static_cast<uint8_t>((next_[i] + 1) % kWays);
    room = Slot{key, in_stream, look_up()};
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
    uint32_t stream = 0;  // 0: empty
    uint32_t id = 0;
  };
  static_assert(sizeof(Slot) == 16, "a set is one cache line");
  // A set in one line: the program's work between two constructs evicts
  // the cache, and a lookup then waits for one line, not two or three.
  struct alignas(64) Set {
    Slot ways[kWays];
  };
  Set sets_[Sets];
  uint8_t next_[Sets] = {};  // the way each set's next miss fills
};

}  // namespace hybridprof
