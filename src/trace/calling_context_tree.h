// CallingContextTree: interns stacks into nodes (parent, module, offset) so a
// sample is stored as one node id. Grows with the number of distinct stacks,
// never with run length. Lives in the drain thread.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "trace/raw_format.h"

namespace hybridprof {

class CallingContextTree {
 public:
  // The child of `parent` for (module, offset); a new node is appended to
  // *new_nodes so the stream defines it before first use.
  uint32_t child(uint32_t parent, uint32_t module, uint64_t offset,
                 std::vector<raw::CctNode>* new_nodes);
  size_t size() const { return children_.size(); }
  void clear() { children_.clear(); next_id_ = raw::kFirstCctNode; }

 private:
  struct Key {
    uint32_t parent, module;
    uint64_t offset;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = (uint64_t{k.parent} << 32 | k.module) * 0x9e3779b97f4a7c15ull;
      return h ^ (k.offset * 0xc2b2ae3d27d4eb4full) ^ (h >> 29);
    }
  };
  std::unordered_map<Key, uint32_t, KeyHash> children_;
  uint32_t next_id_ = raw::kFirstCctNode;
};

}  // namespace hybridprof
