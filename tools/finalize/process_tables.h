// A process's calling contexts as definition tables (definition_tree.h),
// the form in which the ranks of a job unify them up a tree: one context
// per frame (a node whose address lies in inlined code is a chain: the
// out-of-line function, then each inlined callee), regions and strings
// each once.
//
// Not the signal path: runs after the program.
#pragma once

#include <cstdint>
#include <vector>

#include "finalize/definition_tree.h"
#include "finalize/process_definitions.h"

namespace hybridprof::finalize {

// `p`'s contexts as tables; `node_contexts` gets, per raw node, its
// innermost context (tree::kNone: the node or its definitions were lost).
// A node whose parent was lost starts at the root, as the archive has it.
tree::Definitions context_tables(const ProcessDefinitions& p, std::vector<uint32_t>* node_contexts);

// The contexts of all `processes` as one set of tables, each entry once;
// `node_contexts[i]` gets, per raw node of processes[i], its innermost
// context there (tree::kNone: lost). A rank's tables, before the job's
// tree; the whole archive's, when one writer writes it.
tree::Definitions merged_context_tables(const std::vector<const ProcessDefinitions*>& processes,
                                        std::vector<std::vector<uint32_t>>* node_contexts);

// `nodes` (contexts of some tables) as contexts of the tables `map` leads to.
void map_contexts(const tree::Map& map, std::vector<uint32_t>* nodes);

// A context of `tables` as the frames it stands for, outermost first.
std::vector<ContextFrame> frames_of(const tree::Definitions& tables, uint32_t context);

}  // namespace hybridprof::finalize
