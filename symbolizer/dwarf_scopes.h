// Finding code in a DWARF DIE tree: which function covers an address, and the
// scopes (inlined instances, blocks) nested in it there. Internal to the symbolizer.
#pragma once

#include <elfutils/libdw.h>

#include <utility>
#include <vector>

namespace hybridprof::symbolizer {

// Code covered by a DIE (a CU, or a function), in DWARF addresses.
struct DieRange {
  Dwarf_Addr low;
  Dwarf_Addr high;  // exclusive
  Dwarf_Die die;
  Dwarf_Off offset = 0;  // a unit's: its DIE's offset (the DIE is read when first needed)
};
using RangeIndex = std::vector<DieRange>;  // sorted by low, disjoint

bool is_function(int tag);  // subprogram, inlined_subroutine or entry_point

// Appends each address range of `die` (DW_AT_low_pc/high_pc or DW_AT_ranges).
void add_ranges(Dwarf_Die* die, RangeIndex* index);
void sort_ranges(RangeIndex* index);
// The range containing `address`, or null.
const DieRange* find_range(const RangeIndex& index, Dwarf_Addr address);

// The out-of-line functions of a CU, wherever the DIE tree nests them.
RangeIndex index_functions(Dwarf_Die* cu);

// A function's scopes (inlined instances, blocks), their ranges read once
// for all the addresses asked about in it.
class ScopeTree {
 public:
  explicit ScopeTree(const Dwarf_Die& function);
  // The function and the scopes inside it containing `pc`, outermost
  // first: the physical nesting, where an inlined callee sits inside its
  // caller. (dwarf_getscopes instead continues from an inlined instance
  // into the scopes of its abstract definition, which is what variable
  // lookup wants.) A block without addresses of its own may still hold
  // scopes that have some; sibling scopes do not overlap.
  std::vector<Dwarf_Die> containing(Dwarf_Addr pc) const;
  // Appends the edges (starts and ends) of the scopes' ranges inside
  // (lo, hi): the addresses where containing() may answer differently.
  void append_edges(Dwarf_Addr lo, Dwarf_Addr hi, std::vector<Dwarf_Addr>* edges) const;

 private:
  struct Node {
    Dwarf_Die die;
    bool function = false;       // is_function(its tag)
    bool has_addresses = false;  // low_pc or ranges
    std::vector<std::pair<Dwarf_Addr, Dwarf_Addr>> ranges;
    std::vector<uint32_t> children;  // code scopes, in DIE order
  };
  void add_children(uint32_t parent, int depth);
  bool append_containing(uint32_t parent, Dwarf_Addr pc, std::vector<Dwarf_Die>* path, int depth) const;
  std::vector<Node> nodes_;  // [0]: the function
};

}  // namespace hybridprof::symbolizer
