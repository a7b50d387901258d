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

ScopeTree::ScopeTree(const Dwarf_Die& function) {
  nodes_.push_back({function, true, true, {}, {}});
  add_children(0, 1);
}

void ScopeTree::add_children(uint32_t parent, int depth) {
  Dwarf_Die child;
  if (depth > kMaxScopeDepth || dwarf_child(&nodes_[parent].die, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (scope_kind(tag) != ScopeKind::kCode) continue;
    Node node{child, is_function(tag), has_addresses(&child), {}, {}};
    Dwarf_Addr base = 0, low = 0, high = 0;
    for (ptrdiff_t offset = 0; (offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0;)
      node.ranges.emplace_back(low, high);
    const auto index = uint32_t(nodes_.size());
    nodes_.push_back(std::move(node));
    nodes_[parent].children.push_back(index);
    add_children(index, depth + 1);
  } while (dwarf_siblingof(&child, &child) == 0);
}

bool ScopeTree::append_containing(uint32_t parent, Dwarf_Addr pc, std::vector<Dwarf_Die>* path, int depth) const {
  if (depth > kMaxScopeDepth) return false;
  for (uint32_t child : nodes_[parent].children) {
    const Node& node = nodes_[child];
    const bool holds = std::any_of(node.ranges.begin(), node.ranges.end(),
                                   [pc](const auto& r) { return r.first <= pc && pc < r.second; });
    if (holds) {
      path->push_back(node.die);
      append_containing(child, pc, path, depth + 1);
      return true;
    }
    if (!node.function && !node.has_addresses) {
      const size_t before = path->size();
      append_containing(child, pc, path, depth + 1);
      if (path->size() > before) return true;
    }
  }
  return false;
}

std::vector<Dwarf_Die> ScopeTree::containing(Dwarf_Addr pc) const {
  std::vector<Dwarf_Die> path{nodes_[0].die};
  append_containing(0, pc, &path, 1);
  return path;
}

void ScopeTree::append_edges(Dwarf_Addr lo, Dwarf_Addr hi, std::vector<Dwarf_Addr>* edges) const {
  for (size_t i = 1; i < nodes_.size(); ++i) {
    for (const auto& [low, high] : nodes_[i].ranges) {
      if (lo < low && low < hi) edges->push_back(low);
      if (lo < high && high < hi) edges->push_back(high);
    }
  }
}

}  // namespace hybridprof::symbolizer
