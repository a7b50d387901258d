#include "unwind/frame_sizes.h"

namespace hybridprof {
namespace {

size_t slot_of(uint64_t ip, size_t mask) {
  uint64_t h = ip * 0x9e3779b97f4a7c15ull;
  return size_t(h >> 20) & mask;
}

}  // namespace

FrameSizes::FrameSizes() : table_(1024) {}

const FrameSizes::Entry* FrameSizes::find(uint64_t ip) const {
  const size_t mask = table_.size() - 1;
  for (size_t i = slot_of(ip, mask);; i = (i + 1) & mask) {
    if (table_[i].ip == ip) return &table_[i];
    if (table_[i].ip == 0) return nullptr;
  }
}

void FrameSizes::put(uint64_t ip, uint32_t next) {
  if (ip == 0) return;
  if (2 * (count_ + 1) > table_.size()) {
    if (count_ >= kMaxEntries) return;
    std::vector<Entry> old(table_.size() * 2);
    old.swap(table_);
    count_ = 0;
    for (const Entry& e : old)
      if (e.ip != 0) put(e.ip, e.next);
  }
  const size_t mask = table_.size() - 1;
  size_t i = slot_of(ip, mask);
  while (table_[i].ip != 0 && table_[i].ip != ip) i = (i + 1) & mask;
  Entry& e = table_[i];
  if (e.ip == 0) {
    e = Entry{ip, next};
    ++count_;
  } else if (e.next != next) {
    e.next = kVaries;
  }
}

void FrameSizes::learn(const uint64_t* ips, const uint64_t* slots, uint32_t depth, bool outermost) {
  for (uint32_t i = 0; i + 1 < depth; ++i) {
    const uint64_t next = slots[i + 1] - slots[i];
    // Increasing slots, and a frame of sane size (else a signal frame or a
    // stack switch lies between them: not a property of the address).
    put(ips[i], next > 0 && next < (uint64_t{1} << 24) ? uint32_t(next) : kVaries);
  }
  if (depth > 0 && outermost) put(ips[depth - 1], kOutermost);
}

// Reads other frames' memory, where a sanitizer's red zones may be.
__attribute__((no_sanitize("address"))) uint32_t FrameSizes::read(uint64_t first, uint64_t end, uint32_t max_depth, uint64_t* ips, uint64_t* slots) const {
  uint64_t slot = first;
  for (uint32_t depth = 0; depth < max_depth && slot + 8 <= end; ++depth) {
    const uint64_t ip = *reinterpret_cast<const volatile uint64_t*>(slot);
    const Entry* e = find(ip);
    if (e == nullptr || e->next == kVaries) return 0;
    ips[depth] = ip;
    slots[depth] = slot;
    if (e->next == kOutermost) return depth + 1;
    slot += e->next;
  }
  return 0;
}

}  // namespace hybridprof
