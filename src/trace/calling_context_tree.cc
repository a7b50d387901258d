#include "trace/calling_context_tree.h"

namespace hybridprof {

uint32_t CallingContextTree::child(uint32_t parent, uint32_t module, uint64_t offset,
                                   std::vector<raw::CctNode>* new_nodes) {
  auto [it, inserted] = children_.try_emplace(Key{parent, module, offset}, next_id_);
  if (inserted) {
    ++next_id_;
    new_nodes->push_back(raw::CctNode{it->second, parent, module, offset});
  }
  return it->second;
}

}  // namespace hybridprof
