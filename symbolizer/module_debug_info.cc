#include "symbolizer/module_debug_info.h"

#include <dwarf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "symbolizer/dwarf_names.h"
#include "symbolizer/dwarf_scopes.h"

namespace hybridprof::symbolizer {
namespace {

// Null selects libdw's default search path ":.debug:/usr/lib/debug": next to the
// file (via .gnu_debuglink), its .debug/ folder, and the /usr/lib/debug/.build-id
// tree where distributions' -dbg/-dbgsym packages install separate debug files.
char* g_debuginfo_path = nullptr;

const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,  // unused: we hand the file to dwfl_report_elf
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,  // only for ET_REL, never ours
    .debuginfo_path = &g_debuginfo_path,
};

// Line tables of DWARF 5 carry absolute paths; older ones may be relative to the
// compilation directory, which we prepend so all paths look alike.
std::string absolute_path(const char* file, Dwarf_Die* cu) {
  if (file[0] == '/') return file;
  Dwarf_Attribute attr;
  const char* dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
  if (dir == nullptr || dir[0] == '\0') return file;
  return std::string(dir) + "/" + file;
}

// The line of the instruction at `pc` itself (for the innermost frame).
void innermost_line(Dwarf_Die* cu, Dwarf_Addr pc, SourceFrame* frame) {
  Dwarf_Line* line = dwarf_getsrc_die(cu, pc);
  if (line == nullptr) return;
  const char* file = dwarf_linesrc(line, nullptr, nullptr);
  int number = 0;
  if (file == nullptr || dwarf_lineno(line, &number) != 0) return;
  frame->file = absolute_path(file, cu);
  frame->line = number > 0 ? static_cast<uint32_t>(number) : 0;
}

// Where `inlined` was called from, i.e. the line in the frame it was inlined into.
void call_site(Dwarf_Die* inlined, SourceFrame* caller) {
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0) {
    caller->line = static_cast<uint32_t>(value);
  }
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) != 0) return;
  // The file index refers to the line table of the unit holding this DIE (with dwz
  // that may be a partial unit, not the CU the address was found in).
  Dwarf_Die cu;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (dwarf_diecu(inlined, &cu, nullptr, nullptr) == nullptr) return;
  if (dwarf_getsrcfiles(&cu, &files, &file_count) != 0 || value >= file_count) return;
  if (const char* file = dwarf_filesrc(files, value, nullptr, nullptr)) {
    caller->file = absolute_path(file, &cu);
  }
}

}  // namespace

std::unique_ptr<ModuleDebugInfo> ModuleDebugInfo::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  // Only regular files: device nodes (GPU drivers map /dev/...) are not ELF files
  // and reading them may have side effects.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return nullptr;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return nullptr;
  }
  Dwfl* dwfl = dwfl_begin(&kCallbacks);
  if (dwfl == nullptr) {
    close(fd);
    return nullptr;
  }
  // ET_DYN with base 0 and add_p_vaddr=true places the file at its own p_vaddr, so
  // Dwfl addresses equal ELF vaddrs (bias 0); ET_EXEC is always at its p_vaddr.
  // (dwfl_report_offline would move ET_DYN files to 0x10000, a made-up base.)
  dwfl_report_begin(dwfl);
  Dwfl_Module* module = dwfl_report_elf(dwfl, path.c_str(), path.c_str(), fd,
                                        /*base=*/0, /*add_p_vaddr=*/true);
  dwfl_report_end(dwfl, nullptr, nullptr);
  if (module == nullptr) {  // not ELF, or no loadable segments; fd is still ours
    close(fd);
    dwfl_end(dwfl);
    return nullptr;
  }
  Dwarf_Addr bias = 0;  // fd is owned by libdw from here on
  if (dwfl_module_getelf(module, &bias) == nullptr) {
    dwfl_end(dwfl);
    return nullptr;
  }
  return std::unique_ptr<ModuleDebugInfo>(new ModuleDebugInfo(dwfl, module, bias));
}

ModuleDebugInfo::ModuleDebugInfo(Dwfl* dwfl, Dwfl_Module* module, Dwarf_Addr bias)
    : dwfl_(dwfl), module_(module), bias_(bias) {}

ModuleDebugInfo::~ModuleDebugInfo() { dwfl_end(dwfl_); }

// Our own address -> CU table, instead of dwfl_module_addrdie: that one reads only
// .debug_aranges, which clang does not emit by default, so every address of a
// clang-built module came back without DWARF (libdw 0.188).
void ModuleDebugInfo::index_compilation_units() {
  indexed_ = true;
  // Loads the DWARF, from the file itself or a separate debug file.
  Dwarf* dwarf = dwfl_module_getdwarf(module_, &dwarf_bias_);
  if (dwarf == nullptr) return;
  Dwarf_CU* unit = nullptr;
  uint8_t unit_type = 0;
  Dwarf_Die cu;
  while (dwarf_get_units(dwarf, unit, &unit, nullptr, &unit_type, &cu, nullptr) == 0) {
    // Not type units, dwz partial units (imported into CUs), or split-DWARF
    // skeletons (-gsplit-dwarf is not supported).
    if (unit_type == DW_UT_compile) add_ranges(&cu, &cu_ranges_);
  }
  sort_ranges(&cu_ranges_);
}

const RangeIndex& ModuleDebugInfo::functions_of(Dwarf_Die* cu) {
  auto [entry, inserted] = functions_by_cu_.try_emplace(cu->addr);
  if (inserted) entry->second = index_functions(cu);
  return entry->second;
}

std::vector<SourceFrame> ModuleDebugInfo::frames_at(uint64_t elf_vaddr, uint64_t* same_from, uint64_t* same_to) {
  if (same_from) *same_from = elf_vaddr;
  if (same_to) *same_to = elf_vaddr + 1;
  const Dwarf_Addr address = elf_vaddr + bias_;
  // Only addresses inside the file's loadable segments are this module's.
  if (dwfl_addrmodule(dwfl_, address) != module_) return {};
  if (!indexed_) index_compilation_units();
  if (cu_ranges_.empty() && same_from && same_to) {
    std::string name = symbol_name(address);
    Dwarf_Addr low = 0, high = 0;
    dwfl_module_info(module_, nullptr, &low, &high, nullptr, nullptr, nullptr, nullptr);
    uint64_t lo = 0, hi = 0;
    symbols_->constant_range(address, &lo, &hi);
    lo = std::max<uint64_t>(lo, low);
    hi = std::min<uint64_t>(hi, high);
    if (lo <= address && address < hi) {
      *same_from = lo - bias_;
      *same_to = hi - bias_;
    }
    if (name.empty()) return {};
    SourceFrame frame;
    frame.function = std::move(name);
    return {std::move(frame)};
  }
  const Dwarf_Addr dwarf_address = address - dwarf_bias_;
  const DieRange* found = find_range(cu_ranges_, dwarf_address);
  Dwarf_Die cu = found != nullptr ? found->die : Dwarf_Die{};
  if (found != nullptr) {
    std::vector<SourceFrame> frames = dwarf_frames(&cu, dwarf_address);
    if (!frames.empty()) return frames;
  }
  // No DWARF function (no -g, stripped, assembly): the ELF symbol, and still a line
  // if a line table covers the address (assembly built with -g has one).
  std::string name = symbol_name(address);
  if (name.empty()) return {};
  SourceFrame frame;
  frame.function = std::move(name);
  if (found != nullptr) innermost_line(&cu, dwarf_address, &frame);
  return {std::move(frame)};
}

bool ModuleDebugInfo::cu_at(Dwarf_Addr dwarf_address, Dwarf_Die* cu) {
  if (!indexed_) index_compilation_units();
  const DieRange* found = find_range(cu_ranges_, dwarf_address);
  if (found == nullptr) return false;
  *cu = found->die;
  return true;
}

bool ModuleDebugInfo::call_is_statement(uint64_t elf_vaddr) {
  // x86-64 calls are 5 bytes (rel32), 6 through the GOT (-fno-plt), at
  // most 7 with a prefix: a statement that begins further back holds more
  // than the call.
  constexpr Dwarf_Addr kLongestCall = 7;
  const Dwarf_Addr address = elf_vaddr + bias_;
  if (dwfl_addrmodule(dwfl_, address) != module_) return false;
  Dwarf_Die cu;
  const Dwarf_Addr pc = address - dwarf_bias_;
  if (!cu_at(pc, &cu)) return false;
  Dwarf_Lines* lines = nullptr;
  size_t count = 0;
  if (dwarf_getsrclines(&cu, &lines, &count) != 0) return false;
  // The rows that begin where the one holding `pc` begins (a statement row
  // and a zero-length row for its discriminator may share an address).
  Dwarf_Line* here = dwarf_getsrc_die(&cu, pc);
  Dwarf_Addr begin = 0;
  if (here == nullptr || dwarf_lineaddr(here, &begin) != 0 || pc + 1 - begin > kLongestCall) return false;
  for (size_t i = 0; i < count; ++i) {
    Dwarf_Line* row = dwarf_onesrcline(lines, i);
    Dwarf_Addr at = 0;
    bool statement = false;
    if (row != nullptr && dwarf_lineaddr(row, &at) == 0 && at == begin && dwarf_linebeginstatement(row, &statement) == 0 &&
        statement)
      return true;
  }
  return false;
}

std::vector<SourceFrame> ModuleDebugInfo::dwarf_frames(Dwarf_Die* cu, Dwarf_Addr pc) {
  const DieRange* function = find_range(functions_of(cu), pc);
  if (function == nullptr) return {};
  std::vector<Dwarf_Die> path = scopes_containing(function->die, pc);  // outermost first
  std::vector<SourceFrame> frames;
  Dwarf_Die* callee = nullptr;  // the inlined_subroutine of the previous frame
  for (auto scope = path.rbegin(); scope != path.rend(); ++scope) {  // innermost first
    const int tag = dwarf_tag(&*scope);
    if (!is_function(tag)) continue;  // lexical blocks
    SourceFrame frame;
    auto [name, inserted] = function_names_.try_emplace(scope->addr);
    if (inserted) name->second = function_name(&*scope);
    frame.function = name->second;
    frame.inlined = tag == DW_TAG_inlined_subroutine;
    if (callee == nullptr) {
      innermost_line(cu, pc, &frame);
    } else {
      call_site(callee, &frame);
    }
    frames.push_back(std::move(frame));
    if (!frames.back().inlined) break;  // reached the out-of-line function
    callee = &*scope;
  }
  // path[0] is a subprogram, so the last frame is out of line.
  if (!frames.empty() && frames.back().function.empty()) {
    frames.back().function = symbol_name(pc + dwarf_bias_);  // nameless DIE: ELF name
  }
  for (SourceFrame& frame : frames) {
    if (frame.function.empty()) frame.function = "??";
  }
  return frames;
}

std::string ModuleDebugInfo::symbol_name(uint64_t address) {
  // .symtab when present (also from a separate debug file), else .dynsym.
  if (!symbols_) symbols_ = std::make_unique<SymbolTable>(module_);
  const char* name = symbols_->name_at(address);
  return name != nullptr ? demangle(name) : "";
}

}  // namespace hybridprof::symbolizer
