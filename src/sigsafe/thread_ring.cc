#include "sigsafe/thread_ring.h"

namespace hybridprof {

ThreadRing::ThreadRing(void* storage, size_t bytes)
    : base_(static_cast<unsigned char*>(storage)), mask_(bytes - 1) {}

// Signal-safe: atomics only.
RecordHeader* ThreadRing::reserve(uint32_t bytes, uint16_t type, uint16_t aux) {
  const uint64_t size = (uint64_t{bytes} + 7) & ~uint64_t{7};
  writers_.fetch_add(1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (size > (mask_ + 1) / 2) {  // a record may never take more than half the ring
    commit();
    return nullptr;
  }
  uint64_t pos = reserved_.load(std::memory_order_relaxed);
  uint64_t start;
  for (;;) {
    if (!place(pos, size, &start)) {
      commit();
      return nullptr;
    }
    // A nested handler may have reserved in between: retry from its end.
    if (reserved_.compare_exchange_weak(pos, start + size, std::memory_order_relaxed)) break;
  }
  return write_header(pos, start, size, type, aux);
}

// Signal-safe. The outermost writer publishes everything reserved so far,
// including records of handlers that nested inside it.
void ThreadRing::commit() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (writers_.fetch_sub(1, std::memory_order_relaxed) == 1) publish();
}

void ThreadRing::publish() {
  // Monotonic max: a handler that ran between our load and store may already
  // have published further than the value we read.
  const uint64_t end = reserved_.load(std::memory_order_relaxed);
  uint64_t head = head_.load(std::memory_order_relaxed);
  while (head < end &&
         !head_.compare_exchange_weak(head, end, std::memory_order_release,
                                      std::memory_order_relaxed)) {
  }
}

}  // namespace hybridprof
