// CallingContextTree: interns stacks into nodes (parent, module, offset) so a
// sample is stored as one node id. Grows with the number of distinct stacks,
// never with run length. Lives in the drain thread.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/raw_format.h"

namespace hybridprof {

class CallingContextTree {
 public:
  CallingContextTree() { clear(); }

  // The child of `parent` for (module, offset); a new node is appended to
  // *new_nodes so the stream defines it before first use.
  uint32_t child(uint32_t parent, uint32_t module, uint64_t offset,
                 std::vector<raw::CctNode>* new_nodes);
  size_t size() const { return size_; }
  void clear();

 private:
  // Open addressing, linear probing, at most half full: a lookup reads one
  // entry where it hashes, mostly. Every frame of every stack interned
  // (each sample's, each new traced-call stack's) is one lookup, and once
  // the tree outgrows the caches a std::unordered_map's bucket and node,
  // apart, were two misses a frame.
  struct Entry {
    uint64_t offset;
    uint32_t parent, module;
    uint32_t id;  // 0: empty (node ids start at raw::kFirstCctNode)
  };
  static size_t hash(uint32_t parent, uint32_t module, uint64_t offset) {
    const uint64_t h = (uint64_t{parent} << 32 | module) * 0x9e3779b97f4a7c15ull ^ offset * 0xc2b2ae3d27d4eb4full;
    return size_t(h ^ h >> 32);
  }
  void grow();

  std::vector<Entry> entries_;
  size_t size_ = 0;
  uint32_t next_id_ = raw::kFirstCctNode;
};

}  // namespace hybridprof
