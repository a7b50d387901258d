// ThreadRing: the per-thread buffer between a sampled thread and the drain.
//
// One producer context (a thread, plus any signal handlers that interrupt it
// on that same thread) and one consumer (the drain thread). Signal-path rules:
//   1. reserve()/commit() never allocate, lock, or call the C library.
//   2. A handler may interrupt the thread between its own reserve() and
//      commit(); the nested record is reserved after the outer one with a CAS
//      and becomes visible only when the outermost writer commits, so the
//      consumer never sees a half-written record.
//   3. When there is no room, reserve() returns nullptr and the caller counts
//      a drop; nothing blocks.
// Records are 8-byte aligned and start with a RecordHeader; a record never
// wraps: the tail of the buffer is covered by a padding record instead.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hybridprof {

struct RecordHeader {
  uint32_t size;  // bytes including this header, multiple of 8
  uint16_t type;  // RecordType (src/trace/records.h); 0 = padding
  uint16_t aux;   // type-specific small field
};
static_assert(sizeof(RecordHeader) == 8);

constexpr uint16_t kPaddingRecord = 0;

class ThreadRing {
 public:
  // `storage` must be a power-of-two number of bytes, at least 64, 8-aligned.
  // The ring does not own it (the runtime maps it; tests use arrays).
  ThreadRing(void* storage, size_t bytes);
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;

  // Producer side (async-signal-safe). Returns a pointer to `bytes` bytes
  // (rounded up to 8, header included) or nullptr when the ring is full.
  // Every successful reserve() must be followed by commit() on the same
  // thread before the thread's outermost writer returns.
  RecordHeader* reserve(uint32_t bytes, uint16_t type, uint16_t aux = 0);
  void commit();

  // The same without atomic read-modify-writes, for a producer that no
  // handler on its thread can interrupt with a write to this ring (it holds
  // the thread's busy guard, which the sample handler checks first). The
  // hot path of traced calls: five locked instructions fewer per record.
  // Inline: a traced call makes two of each.
  RecordHeader* reserve_exclusive(uint32_t bytes, uint16_t type, uint16_t aux = 0) {
    const uint64_t size = (uint64_t{bytes} + 7) & ~uint64_t{7};
    if (size > (mask_ + 1) / 2) return nullptr;
    const uint64_t pos = reserved_.load(std::memory_order_relaxed);
    uint64_t start;
    if (!place(pos, size, &start)) return nullptr;
    reserved_.store(start + size, std::memory_order_relaxed);
    return write_header(pos, start, size, type, aux);
  }
  void commit_exclusive() {
    head_.store(reserved_.load(std::memory_order_relaxed), std::memory_order_release);
  }

  // Consumer side. Calls fn(const RecordHeader&) for every published record
  // in order, then frees their space. Returns the number of records.
  template <typename Fn>
  size_t consume(Fn&& fn) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    size_t n = 0;
    uint64_t released = tail;
    while (tail < head) {
      // The producer wrote these lines on another core: ask for the ones
      // a few records on while this one is handled, not one at a time as
      // each header is read.
      __builtin_prefetch(base_ + ((tail + kPrefetchBytes) & mask_));
      const auto* h = reinterpret_cast<const RecordHeader*>(base_ + (tail & mask_));
      if (h->type != kPaddingRecord) {
        fn(*h);
        ++n;
      }
      tail += h->size;
      // Space goes back to the producer as it is consumed, not only at the
      // end: a busy producer keeps writing during a long pass.
      if (tail - released >= kReleaseBytes) {
        tail_.store(tail, std::memory_order_release);
        released = tail;
      }
    }
    tail_.store(tail, std::memory_order_release);
    return n;
  }

  size_t capacity() const { return mask_ + 1; }
  // How much consume() reads before it frees what it has read.
  static constexpr uint64_t kReleaseBytes = 64 * 1024;
  // How far ahead of the record it reads consume() asks for the ring's lines.
  static constexpr uint64_t kPrefetchBytes = 512;
  // Bytes published and not yet consumed (consumer's view).
  size_t pending_bytes() const {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_relaxed);
  }

 private:
  void publish();
  // Where a record of `size` bytes goes when reserved at `pos` (after a
  // skipped tail), or false when the ring has no room.
  bool place(uint64_t pos, uint64_t size, uint64_t* start) const {
    const uint64_t cap = mask_ + 1;
    const uint64_t offset = pos & mask_;
    *start = (offset + size > cap) ? pos + (cap - offset) : pos;  // skip the tail
    return *start + size - tail_.load(std::memory_order_acquire) <= cap;
  }
  RecordHeader* write_header(uint64_t pos, uint64_t start, uint64_t size, uint16_t type, uint16_t aux) {
    if (start != pos) {  // cover the skipped tail with a padding record
      auto* pad = reinterpret_cast<RecordHeader*>(base_ + (pos & mask_));
      pad->size = static_cast<uint32_t>(start - pos);
      pad->type = kPaddingRecord;
      pad->aux = 0;
    }
    auto* h = reinterpret_cast<RecordHeader*>(base_ + (start & mask_));
    h->size = static_cast<uint32_t>(size);
    h->type = type;
    h->aux = aux;
    return h;
  }

  unsigned char* base_;
  uint64_t mask_;
  std::atomic<uint64_t> reserved_{0};   // producer: end of reserved space
  std::atomic<uint64_t> head_{0};       // published end, read by the consumer
  std::atomic<uint64_t> tail_{0};       // consumer: start of unconsumed data
  std::atomic<int> writers_{0};         // producer nesting depth
};

static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "the signal path needs lock-free 64-bit atomics");

}  // namespace hybridprof
