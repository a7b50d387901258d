// A module's ELF symbols sorted by address, answering "which symbol covers
// this address" with a binary search. Internal to the symbolizer.
//
// Why not dwfl_module_addrinfo: libdwfl scans every symbol of the table for
// each address. PyTorch's libraries hold hundreds of thousands of symbols,
// and naming the few thousand addresses a training job's samples reach took
// 26 s of the finalizer's 27 on an H100 node.
//
// The symbol chosen is the one libdwfl chooses (elfutils'
// dwfl_module_addrsym.c): the closest sized symbol at or below the address
// that covers it, global and weak symbols first and local ones only when
// none covers it; at one address the stronger binding (global, weak,
// local), then the first in the table. Failing a sized one, the closest
// sizeless symbol (an assembly label) in the address's own section, when
// no sized symbol below the address reaches past it. (Between sections, at
// a section's very end, libdwfl may name a label where this names none:
// no code is there.)
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace hybridprof::symbolizer {

class SymbolTable {
 public:
  // Reads every named, defined symbol of `module` (its .symtab, else
  // .dynsym, with the MiniDebugInfo table libdwfl adds) once. The names
  // point into the module's ELF data: the table lives no longer than the
  // Dwfl that holds `module`.
  explicit SymbolTable(Dwfl_Module* module);

  // The name of the symbol covering `address` (a Dwfl address), or null.
  const char* name_at(uint64_t address) const;
  // The widest [*lo, *hi) around `address` where name_at answers as it
  // does at `address`: between the nearest symbol starts and ends on
  // either side (the answer changes nowhere else), less a global label's
  // own address, which alone skips the local symbols.
  void constant_range(uint64_t address, uint64_t* lo, uint64_t* hi);
  // Every stretch of [low, high) where name_at answers alike and names a
  // symbol, in address order, as fn(lo, hi, name): the whole table as a
  // list of what name_at would answer (adjacent stretches of one name joined).
  template <typename Fn>
  void each_stretch(uint64_t low, uint64_t high, Fn&& fn) {
    uint64_t start = 0, end = 0;
    const char* name = nullptr;
    for (uint64_t at = low; at < high;) {
      uint64_t lo = 0, hi = 0;
      constant_range(at, &lo, &hi);
      hi = hi > high ? high : hi;
      const char* here = name_at(at);
      if (here != name) {  // a stretch of another symbol (or of none) begins
        if (name != nullptr) fn(start, end, name);
        start = at;
        name = here;
      }
      end = hi;
      at = hi;
    }
    if (name != nullptr) fn(start, end, name);
  }

 private:
  struct Symbol {
    uint64_t start = 0;
    uint64_t end = 0;  // sized: start + size; sizeless: the end of its section (0: none)
    const char* name = nullptr;
    int binding = 0;   // higher wins at one address
    size_t index = 0;  // its place in the module's table: the first wins a tie
  };
  // Symbols of one binding class, each list by start (ties: weakest
  // binding, then latest index first, so a backward walk meets the
  // winner first).
  struct Part {
    std::vector<Symbol> sized;
    std::vector<uint64_t> reach;  // reach[i]: the highest end of sized[0..i]
    std::vector<Symbol> sizeless;
    void sort();
    // The closest sized symbol covering `address`, or null.
    const Symbol* covering(uint64_t address) const;
    // The closest sizeless symbol at or below `address` whose section holds it, or null.
    const Symbol* label_before(uint64_t address) const;
    // The highest end of the sized symbols starting at or below `address` (0: none).
    uint64_t reach_below(uint64_t address) const;
  };
  Part globals_, locals_;
  std::vector<uint64_t> edges_;               // every start and end, sorted (made at the first constant_range)
  std::vector<uint64_t> global_label_starts_;  // sorted
};

}  // namespace hybridprof::symbolizer
