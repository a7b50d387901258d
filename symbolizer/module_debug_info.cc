#include "symbolizer/module_debug_info.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

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

// dwarf_formstring/dwarf_formudata accept a null attribute, so lookups chain safely.
const char* string_attribute(Dwarf_Die* die, unsigned int name) {
  Dwarf_Attribute attr;
  // _integrate follows DW_AT_abstract_origin (inlined instances, out-of-line copies
  // of inline functions) and DW_AT_specification (member functions defined outside
  // their class), where the names live.
  return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

// Linkage names demangle to the full qualified signature ("ns::Foo::bar(int)");
// DW_AT_name alone is the bare "bar". C functions only have DW_AT_name.
std::string function_name(Dwarf_Die* die) {
  const char* name = string_attribute(die, DW_AT_linkage_name);
  if (name == nullptr) name = string_attribute(die, DW_AT_MIPS_linkage_name);
  if (name != nullptr) return demangle(name);
  name = string_attribute(die, DW_AT_name);
  return name != nullptr ? name : "";
}

// Line tables of DWARF 5 carry absolute paths; older ones may be relative to the
// compilation directory, which we prepend so all paths look alike.
std::string absolute_path(const char* file, Dwarf_Die* cu) {
  if (file[0] == '/' || cu == nullptr) return file;
  Dwarf_Attribute attr;
  const char* dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
  if (dir == nullptr || dir[0] == '\0') return file;
  return std::string(dir) + "/" + file;
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
  // that is a partial unit, not the CU the address was found in).
  Dwarf_Die cu;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (dwarf_diecu(inlined, &cu, nullptr, nullptr) == nullptr) return;
  if (dwarf_getsrcfiles(&cu, &files, &file_count) != 0 || value >= file_count) return;
  if (const char* file = dwarf_filesrc(files, value, nullptr, nullptr)) {
    caller->file = absolute_path(file, &cu);
  }
}

bool is_function_scope(int tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
         tag == DW_TAG_entry_point;
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
  // (dwfl_report_offline would instead move ET_DYN files to a made-up base.)
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

ModuleDebugInfo::ModuleDebugInfo(Dwfl* dwfl, Dwfl_Module* module, uint64_t bias)
    : dwfl_(dwfl), module_(module), bias_(bias) {}

ModuleDebugInfo::~ModuleDebugInfo() { dwfl_end(dwfl_); }

std::vector<SourceFrame> ModuleDebugInfo::frames_at(uint64_t elf_vaddr) {
  const uint64_t address = elf_vaddr + bias_;
  // The symbol table lookup would happily name the nearest symbol below an address
  // past the end of the file's segments; only answer for addresses the file maps.
  if (dwfl_addrmodule(dwfl_, address) != module_) return {};
  std::vector<SourceFrame> frames = dwarf_frames(address);
  if (!frames.empty()) return frames;
  // No DWARF function (no -g, stripped, assembly): the ELF symbol, and still a line
  // if a line table covers the address (assembly built with -g has one).
  std::string name = symbol_name(address);
  if (name.empty()) return {};
  SourceFrame frame;
  frame.function = std::move(name);
  innermost_line(address, &frame);
  return {std::move(frame)};
}

std::vector<SourceFrame> ModuleDebugInfo::dwarf_frames(uint64_t address) {
  Dwarf_Addr cu_bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(module_, address, &cu_bias);
  if (cu == nullptr) return {};
  Dwarf_Die* scopes = nullptr;
  int count = dwarf_getscopes(cu, address - cu_bias, &scopes);
  if (count <= 0) {
    free(scopes);
    return {};
  }
  // dwarf_getscopes continues from an inlined instance into the scopes of its
  // abstract definition (what name lookup wants); the physical nesting (inlined
  // callee inside its caller) is the DIE tree above the innermost scope.
  Dwarf_Die innermost = scopes[0];
  free(scopes);
  scopes = nullptr;
  count = dwarf_getscopes_die(&innermost, &scopes);

  std::vector<SourceFrame> frames;
  Dwarf_Die* callee = nullptr;  // the inlined_subroutine of the previous frame
  for (int i = 0; i < count; ++i) {
    Dwarf_Die* die = &scopes[i];
    const int tag = dwarf_tag(die);
    if (!is_function_scope(tag)) continue;  // lexical blocks, namespaces, the CU
    SourceFrame frame;
    frame.function = function_name(die);
    frame.inlined = tag == DW_TAG_inlined_subroutine;
    if (callee == nullptr) {
      innermost_line(address, &frame);
    } else {
      call_site(callee, &frame);
    }
    frames.push_back(std::move(frame));
    if (!frames.back().inlined) break;  // reached the out-of-line function
    callee = die;
  }
  free(scopes);
  // Malformed DWARF may leave an inlined instance with no enclosing subprogram;
  // the last frame has nothing to be inlined into, so say it is out of line.
  if (!frames.empty()) frames.back().inlined = false;
  if (!frames.empty() && frames.back().function.empty()) {
    frames.back().function = symbol_name(address);  // nameless DIE: ELF name instead
  }
  for (SourceFrame& frame : frames) {
    if (frame.function.empty()) frame.function = "??";
  }
  return frames;
}

std::string ModuleDebugInfo::symbol_name(uint64_t address) {
  GElf_Off offset = 0;
  GElf_Sym symbol;
  // Uses .symtab when present (also from a separate debug file), else .dynsym.
  const char* name = dwfl_module_addrinfo(module_, address, &offset, &symbol, nullptr,
                                          nullptr, nullptr);
  return name != nullptr && name[0] != '\0' ? demangle(name) : "";
}

void ModuleDebugInfo::innermost_line(uint64_t address, SourceFrame* frame) {
  Dwfl_Line* line = dwfl_module_getsrc(module_, address);
  if (line == nullptr) return;
  int line_number = 0;
  const char* file = dwfl_lineinfo(line, nullptr, &line_number, nullptr, nullptr, nullptr);
  if (file == nullptr) return;
  frame->file = absolute_path(file, dwfl_linecu(line));
  frame->line = line_number > 0 ? static_cast<uint32_t>(line_number) : 0;
}

}  // namespace hybridprof::symbolizer
