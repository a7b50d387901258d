// MappingPool: a few anonymous mappings of one size, kept for reuse when
// their thread ends (its ring, its signal stack) instead of going back to
// the kernel. A program that starts and ends threads by the thousand then
// pays no mmap, no page faults on fresh pages and no munmap (whose TLB
// shootdown interrupts every core the process runs on) per thread.
//
// Lock-free slots: safe across fork (a child keeps its copies of the kept
// mappings) and from signal handlers.
#pragma once

#include <atomic>
#include <cstddef>

namespace hybridprof {

template <size_t kSlots>
class MappingPool {
 public:
  // The size of the mappings kept; 0 (the start) keeps none.
  void set_bytes(size_t bytes) { bytes_.store(bytes, std::memory_order_relaxed); }
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  // A kept mapping of `bytes`, or null (then map one).
  void* take(size_t bytes) {
    if (bytes == 0 || bytes != this->bytes()) return nullptr;
    for (auto& slot : slots_)
      if (void* map = slot.exchange(nullptr, std::memory_order_acquire)) return map;
    return nullptr;
  }

  // How many are kept now (a moment's count: others may take and give).
  size_t kept() const {
    size_t n = 0;
    for (const auto& slot : slots_) n += slot.load(std::memory_order_relaxed) != nullptr;
    return n;
  }
  static constexpr size_t slots() { return kSlots; }

  // Keeps `map` (of `bytes`) for take(); false when it is not kept (another
  // size, or every slot taken): then unmap it.
  bool give(void* map, size_t bytes) {
    if (bytes == 0 || bytes != this->bytes()) return false;
    for (auto& slot : slots_) {
      void* empty = nullptr;
      if (slot.compare_exchange_strong(empty, map, std::memory_order_release)) return true;
    }
    return false;
  }

 private:
  std::atomic<size_t> bytes_{0};
  std::atomic<void*> slots_[kSlots] = {};
};

}  // namespace hybridprof
