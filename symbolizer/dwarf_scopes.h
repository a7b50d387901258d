// Finding code in a DWARF DIE tree: which function covers an address, and the
// scopes (inlined instances, blocks) nested in it there. Internal to the symbolizer.
#pragma once

#include <elfutils/libdw.h>

#include <vector>

namespace hybridprof::symbolizer {

// Code covered by a DIE (a CU, or a function), in DWARF addresses.
struct DieRange {
  Dwarf_Addr low;
  Dwarf_Addr high;  // exclusive
  Dwarf_Die die;
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

// `function` and the scopes inside it containing `pc`, outermost first.
std::vector<Dwarf_Die> scopes_containing(const Dwarf_Die& function, Dwarf_Addr pc);

// Appends the edges (starts and ends) of every scope inside `function`
// (inlined instances, blocks) that lie in [lo, hi): the addresses where
// scopes_containing may answer differently.
void append_scope_edges(const Dwarf_Die& function, Dwarf_Addr lo, Dwarf_Addr hi, std::vector<Dwarf_Addr>* edges);

}  // namespace hybridprof::symbolizer
