// One ELF module opened with libdw (one Dwfl session per file), answering
// "what source is at this ELF virtual address". Internal to the symbolizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "symbolizer/symbolizer.h"

struct Dwfl;
struct Dwfl_Module;

namespace hybridprof::symbolizer {

class ModuleDebugInfo {
 public:
  // Null when `path` is not a readable regular ELF file ("[vdso]", deleted, a FIFO...).
  static std::unique_ptr<ModuleDebugInfo> open(const std::string& path);
  ~ModuleDebugInfo();
  ModuleDebugInfo(const ModuleDebugInfo&) = delete;
  ModuleDebugInfo& operator=(const ModuleDebugInfo&) = delete;

  // Frames innermost first (see Symbolizer::resolve), from DWARF, else from the
  // ELF symbol table. Empty when the address is covered by neither.
  std::vector<SourceFrame> frames_at(uint64_t elf_vaddr);

 private:
  ModuleDebugInfo(Dwfl* dwfl, Dwfl_Module* module, uint64_t bias);
  std::vector<SourceFrame> dwarf_frames(uint64_t dwfl_address);
  std::string symbol_name(uint64_t dwfl_address);
  void innermost_line(uint64_t dwfl_address, SourceFrame* frame);

  Dwfl* dwfl_;
  Dwfl_Module* module_;
  uint64_t bias_;  // Dwfl address = ELF vaddr + bias_ (0 with how open() reports the file)
};

}  // namespace hybridprof::symbolizer
