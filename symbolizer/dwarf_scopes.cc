#include "symbolizer/dwarf_scopes.h"

#include <dwarf.h>

#include <algorithm>

namespace hybridprof::symbolizer {
namespace {

// Deeper nesting than this is malformed (or a cycle of imported units).
constexpr int kMaxScopeDepth = 64;

bool has_addresses(Dwarf_Die* die) {
  return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

enum class ScopeKind {
  kCode,       // may own addresses: functions, inlined instances, blocks
  kContainer,  // never has addresses but may hold functions: namespace, class, module
  kImport,     // dwz's DW_TAG_imported_unit: a partial unit's DIEs belong here
  kOther,
};

ScopeKind scope_kind(int tag) {
  switch (tag) {
    case DW_TAG_subprogram:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_entry_point:
    case DW_TAG_lexical_block:
    case DW_TAG_try_block:
    case DW_TAG_catch_block:
      return ScopeKind::kCode;
    case DW_TAG_namespace:
    case DW_TAG_module:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
      return ScopeKind::kContainer;
    case DW_TAG_imported_unit:
      return ScopeKind::kImport;
    default:
      return ScopeKind::kOther;
  }
}

bool imported_unit(Dwarf_Die* import, Dwarf_Die* unit) {
  Dwarf_Attribute attr;
  return dwarf_attr(import, DW_AT_import, &attr) != nullptr &&
         dwarf_formref_die(&attr, unit) != nullptr;
}

// Adds the ranges of every out-of-line function below `parent`: in namespaces,
// classes and modules (gfortran nests module procedures in a DW_TAG_module without
// addresses, which libdw's dwarf_getscopes never enters: it found no Fortran module
// procedure in libdw 0.188), and nested in other functions (Fortran internal
// procedures, GNU C nested functions), whose code lies outside their host's ranges.
void collect_functions(Dwarf_Die* parent, RangeIndex* index, int depth) {
  Dwarf_Die child;
  if (depth > kMaxScopeDepth || dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    Dwarf_Die unit;
    switch (scope_kind(tag)) {
      case ScopeKind::kCode:
        if (tag == DW_TAG_subprogram && has_addresses(&child)) add_ranges(&child, index);
        // Inlined instances are reached from their caller, at lookup.
        if (tag != DW_TAG_inlined_subroutine) collect_functions(&child, index, depth + 1);
        break;
      case ScopeKind::kContainer:
        collect_functions(&child, index, depth + 1);
        break;
      case ScopeKind::kImport:
        if (imported_unit(&child, &unit)) collect_functions(&unit, index, depth + 1);
        break;
      case ScopeKind::kOther:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

// Appends to `path` the scopes below `parent` (a function) whose ranges contain
// `pc`, outermost first: the physical nesting, where an inlined callee sits inside
// its caller. (dwarf_getscopes instead continues from an inlined instance into the
// scopes of its abstract definition, which is what variable lookup wants.)
void append_scopes_containing(Dwarf_Die* parent, Dwarf_Addr pc, std::vector<Dwarf_Die>* path,
                              int depth) {
  Dwarf_Die child;
  if (depth > kMaxScopeDepth || dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (scope_kind(tag) != ScopeKind::kCode) continue;
    if (dwarf_haspc(&child, pc) == 1) {
      path->push_back(child);
      append_scopes_containing(&child, pc, path, depth + 1);
      return;  // sibling scopes do not overlap
    }
    // A block without addresses of its own may still hold scopes that have some.
    if (!is_function(tag) && !has_addresses(&child)) {
      const size_t before = path->size();
      append_scopes_containing(&child, pc, path, depth + 1);
      if (path->size() > before) return;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

void append_edges_below(Dwarf_Die* parent, Dwarf_Addr lo, Dwarf_Addr hi, std::vector<Dwarf_Addr>* edges, int depth) {
  Dwarf_Die child;
  if (depth > kMaxScopeDepth || dwarf_child(parent, &child) != 0) return;
  do {
    if (scope_kind(dwarf_tag(&child)) != ScopeKind::kCode) continue;
    Dwarf_Addr base = 0, low = 0, high = 0;
    for (ptrdiff_t offset = 0; (offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0;) {
      if (lo < low && low < hi) edges->push_back(low);
      if (lo < high && high < hi) edges->push_back(high);
    }
    append_edges_below(&child, lo, hi, edges, depth + 1);
  } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace

bool is_function(int tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
         tag == DW_TAG_entry_point;
}

void add_ranges(Dwarf_Die* die, RangeIndex* index) {
  Dwarf_Addr base = 0, low = 0, high = 0;
  for (ptrdiff_t offset = 0; (offset = dwarf_ranges(die, offset, &base, &low, &high)) > 0;) {
    // Linkers leave code they discarded (--gc-sections, duplicate COMDATs) in the
    // DWARF at a tombstone address: 0 (GNU ld), or -1 (lld) which makes high < low.
    // Keeping those would overlap real ranges; no ELF module has code at 0.
    if (low != 0 && low < high) index->push_back({low, high, *die});
  }
}

void sort_ranges(RangeIndex* index) {
  std::sort(index->begin(), index->end(),
            [](const DieRange& a, const DieRange& b) { return a.low < b.low; });
}

const DieRange* find_range(const RangeIndex& index, Dwarf_Addr address) {
  auto after = std::upper_bound(index.begin(), index.end(), address,
                                [](Dwarf_Addr a, const DieRange& range) { return a < range.low; });
  if (after == index.begin()) return nullptr;
  const DieRange& range = *(after - 1);
  return address < range.high ? &range : nullptr;
}

RangeIndex index_functions(Dwarf_Die* cu) {
  RangeIndex index;
  collect_functions(cu, &index, 0);
  sort_ranges(&index);
  return index;
}

std::vector<Dwarf_Die> scopes_containing(const Dwarf_Die& function, Dwarf_Addr pc) {
  std::vector<Dwarf_Die> path{function};
  Dwarf_Die outer = function;
  append_scopes_containing(&outer, pc, &path, 1);
  return path;
}

void append_scope_edges(const Dwarf_Die& function, Dwarf_Addr lo, Dwarf_Addr hi, std::vector<Dwarf_Addr>* edges) {
  Dwarf_Die outer = function;
  append_edges_below(&outer, lo, hi, edges, 1);
}

}  // namespace hybridprof::symbolizer
