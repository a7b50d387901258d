// One ELF module opened with libdw (one Dwfl session per file), answering
// "what source is at this ELF virtual address". Internal to the symbolizer.
#pragma once

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "symbolizer/debug_copy.h"
#include "symbolizer/dwarf_scopes.h"
#include "symbolizer/symbol_table.h"
#include "symbolizer/symbolizer.h"
#include "symbolizer/unit_index.h"

namespace hybridprof::symbolizer {

class ModuleDebugInfo {
 public:
  // Null when `path` is not a readable regular ELF file ("[vdso]", deleted, a FIFO...).
  // With `copies`, a compressed separate debug file is read from (and
  // kept as) a decompressed copy in the symbol cache (debug_copy.h).
  static std::unique_ptr<ModuleDebugInfo> open(const std::string& path, const DebugCopies* copies = nullptr);
  ~ModuleDebugInfo();
  ModuleDebugInfo(const ModuleDebugInfo&) = delete;
  ModuleDebugInfo& operator=(const ModuleDebugInfo&) = delete;

  // Frames innermost first (see Symbolizer::resolve), from DWARF, else from the
  // ELF symbol table. Empty when the address is covered by neither.
  // [*same_from, *same_to) (ELF vaddrs, when asked): addresses answered
  // alike, wider than the address itself only in a module without DWARF,
  // where the symbol table alone answers.
  std::vector<SourceFrame> frames_at(uint64_t elf_vaddr, uint64_t* same_from = nullptr, uint64_t* same_to = nullptr);
  // See Symbolizer::call_is_statement.
  bool call_is_statement(uint64_t elf_vaddr);

  // What frames_at answers over the whole function around an address
  // (outside DWARF's functions: over the code between them that one
  // symbol covers), cut wherever the answer may change: line rows, the
  // edges of inlined calls and blocks, of functions, units and symbols.
  struct Answer {
    uint64_t lo = 0, hi = 0;  // ELF vaddrs, [lo, hi)
    std::vector<SourceFrame> frames;
  };
  // The answers around `elf_vaddr`, in address order (adjacent stretches
  // that answer alike joined). False (`out` empty) in a module without
  // DWARF (each_symbol_stretch answers for it), outside the module, or
  // where the function would take more than `max_stretches`.
  bool answers_around(uint64_t elf_vaddr, size_t max_stretches, std::vector<Answer>* out);

  // Before the first lookup: the module's units as an earlier opening
  // indexed them (unit_index.h), so that this one reads only those it is
  // asked about.
  void use_units(UnitIndex units) { given_units_ = std::move(units); }
  // The units indexed (empty without DWARF, or before the first lookup).
  UnitIndex units() const;
  // A module without DWARF, whose symbol table alone answers frames_at:
  // every stretch of its loadable code answered alike and naming a symbol,
  // as fn(lo, hi, raw name) in ELF vaddrs and address order. False (fn not
  // called) for a module with DWARF.
  template <typename Fn>
  bool each_symbol_stretch(Fn&& fn) {
    if (!indexed_) index_compilation_units();
    if (!cu_ranges_.empty()) return false;
    if (!symbols_) symbols_ = std::make_unique<SymbolTable>(module_);
    Dwarf_Addr low = 0, high = 0;
    dwfl_module_info(module_, nullptr, &low, &high, nullptr, nullptr, nullptr, nullptr);
    symbols_->each_stretch(low, high, [&](uint64_t lo, uint64_t hi, const char* name) { fn(lo - bias_, hi - bias_, name); });
    return true;
  }

 private:
  ModuleDebugInfo(Dwfl* dwfl, Dwfl_Module* module, Dwarf_Addr bias);
  void index_compilation_units();
  const RangeIndex& functions_of(Dwarf_Die* cu);
  const ScopeTree& scope_tree(const Dwarf_Die& function);
  // A function's (or inlined instance's) qualified name, "" when DWARF gives none.
  const std::string& name_of(Dwarf_Die& function);
  std::vector<SourceFrame> dwarf_frames(Dwarf_Die* cu, Dwarf_Addr dwarf_address);
  std::string symbol_name(uint64_t dwfl_address);
  // The unit whose ranges hold `dwarf_address`, and its DIE in *cu (read
  // now if the index came from the cache); null when none does.
  const DieRange* unit_at(Dwarf_Addr dwarf_address, Dwarf_Die* cu);

  Dwfl* dwfl_;
  Dwfl_Module* module_;
  Dwarf_Addr bias_;  // Dwfl address = ELF vaddr + bias_ (0 with how open() reports the file)
  Dwarf_Addr dwarf_bias_ = 0;  // DWARF address = Dwfl address - dwarf_bias_
  bool indexed_ = false;
  Dwarf* dwarf_ = nullptr;
  RangeIndex cu_ranges_;  // empty without DWARF
  std::optional<UnitIndex> given_units_;  // use_units
  // Per CU (by its DIE's address in the debug data), the out-of-line functions:
  // one pass over the CU, then each address costs a binary search plus a walk of
  // one function's subtree instead of a walk of the whole CU.
  std::unordered_map<const void*, RangeIndex> functions_by_cu_;
  // Function names by DIE (its address in the loaded debug data, stable while dwfl_
  // lives): many sampled addresses share a function, and qualifying a name walks a CU.
  std::unordered_map<const void*, std::string> function_names_;
  // Scope trees of the functions asked about, by DIE (as function_names_).
  std::unordered_map<const void*, ScopeTree> scope_trees_;
  std::unique_ptr<SymbolTable> symbols_;  // read at the first symbol lookup
  std::optional<DebugCopies> copies_;      // the module's user data for find_debuginfo
};

}  // namespace hybridprof::symbolizer
