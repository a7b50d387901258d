#include "trace/calling_context_tree.h"

namespace hybridprof {

uint32_t CallingContextTree::child(uint32_t parent, uint32_t module, uint64_t offset,
                                   std::vector<raw::CctNode>* new_nodes) {
  // Room for one more first (at most half full), so that the probe below
  // ends where the node goes if it is new.
  if (2 * (size_ + 1) > entries_.size()) grow();
  const size_t mask = entries_.size() - 1;
  size_t i = hash(parent, module, offset) & mask;
  for (; entries_[i].id != 0; i = (i + 1) & mask) {
    const Entry& e = entries_[i];
    if (e.offset == offset && e.parent == parent && e.module == module) return e.id;
  }
  const uint32_t id = next_id_++;
  entries_[i] = Entry{offset, parent, module, id};
  ++size_;
  new_nodes->push_back(raw::CctNode{id, parent, module, offset});
  return id;
}

void CallingContextTree::grow() {
  std::vector<Entry> old(entries_.size() * 2);
  old.swap(entries_);
  const size_t mask = entries_.size() - 1;
  for (const Entry& e : old) {
    if (e.id == 0) continue;
    size_t i = hash(e.parent, e.module, e.offset) & mask;
    while (entries_[i].id != 0) i = (i + 1) & mask;
    entries_[i] = e;
  }
}

void CallingContextTree::clear() {
  entries_.assign(1024, Entry{});
  size_ = 0;
  next_id_ = raw::kFirstCctNode;
}

}  // namespace hybridprof
