#include "symbolizer/module_debug_info.h"

#include <dwarf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "symbolizer/build_id.h"
#include "symbolizer/dwarf_names.h"
#include "symbolizer/dwarf_scopes.h"

namespace hybridprof::symbolizer {
namespace {

// Null selects libdw's default search path ":.debug:/usr/lib/debug": next to the
// file (via .gnu_debuglink), its .debug/ folder, and the /usr/lib/debug/.build-id
// tree where distributions' -dbg/-dbgsym packages install separate debug files.
char* g_debuginfo_path = nullptr;

// The module's GNU build id in hex, "" when it has none.
std::string build_id_of(Dwfl_Module* module) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int n = dwfl_module_build_id(module, &bits, &vaddr);
  return build_id_hex(bits, n);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Whether libdw's standard search (its default path ":.debug:/usr/lib/debug")
// may find a separate debug file for the module at `file_name`: one named
// by its build id under /usr/lib/debug/.build-id, or its .gnu_debuglink
// name (else its own name plus ".debug") beside it, in .debug/ beside it,
// or under /usr/lib/debug plus its directory. Asked first because libdw
// 0.188's search, when it finds nothing, loads the debuginfod client
// (libcurl and some twenty libraries: ~5 ms a process) even with
// DEBUGINFOD_URLS unset, which the finalizer never uses.
bool debug_file_may_exist(const char* file_name, const char* debuglink_file, const std::string& build_id) {
  if (build_id.size() > 2 && exists("/usr/lib/debug/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug"))
    return true;
  if (file_name == nullptr) return true;  // nothing to look beside: let libdw search
  const std::string path = file_name;
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string name = debuglink_file ? debuglink_file : path.substr(slash + 1) + ".debug";
  std::vector<std::string> dirs{dir};
  if (char* real = realpath(dir.c_str(), nullptr)) {
    if (dir != real) dirs.push_back(real);
    free(real);
  }
  for (const std::string& d : dirs)
    for (const std::string& candidate : {d + "/" + name, d + "/.debug/" + name, "/usr/lib/debug" + d + "/" + name})
      if (exists(candidate)) return true;
  return false;
}

// libdw's standard search for a separate debug file, with the symbol
// cache's decompressed copy of it first (the module's user data: its
// DebugCopies, or null), made at the file's first opening.
int find_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                   const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                   char** debuginfo_file_name) {
  const auto* copies = static_cast<const DebugCopies*>(*userdata);
  if (copies) {
    if (const int fd = open_debug_copy(*copies); fd >= 0) {
      *debuginfo_file_name = strdup(copies->path().c_str());
      return fd;
    }
  }
  if (!debug_file_may_exist(file_name, debuglink_file, build_id_of(module))) {
    errno = ENOENT;
    return -1;
  }
  const int fd = dwfl_standard_find_debuginfo(module, userdata, module_name, base, file_name, debuglink_file,
                                              debuglink_crc, debuginfo_file_name);
  if (fd < 0 || copies == nullptr) return fd;
  const int copy = make_debug_copy(fd, *copies);
  if (copy < 0) return fd;
  close(fd);
  free(*debuginfo_file_name);
  *debuginfo_file_name = strdup(copies->path().c_str());
  return copy;
}

const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,  // unused: we hand the file to dwfl_report_elf
    .find_debuginfo = find_debuginfo,
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

// Narrows [*lo, *hi) to the range of `index` holding `pc`, or to the gap
// between ranges where `pc` lies.
void narrow_to(const RangeIndex& index, Dwarf_Addr pc, Dwarf_Addr* lo, Dwarf_Addr* hi) {
  auto after = std::upper_bound(index.begin(), index.end(), pc,
                                [](Dwarf_Addr a, const DieRange& range) { return a < range.low; });
  if (after != index.end()) *hi = std::min(*hi, after->low);
  if (after == index.begin()) return;
  const DieRange& below = *(after - 1);
  if (pc < below.high) {
    *lo = std::max(*lo, below.low);
    *hi = std::min(*hi, below.high);
  } else {
    *lo = std::max(*lo, below.high);
  }
}

// Appends the edges of `index`'s ranges that lie inside (lo, hi) (ranges
// nested in the one holding an address, as a nested function's).
void append_range_edges(const RangeIndex& index, Dwarf_Addr lo, Dwarf_Addr hi, std::vector<Dwarf_Addr>* edges) {
  auto from = std::lower_bound(index.begin(), index.end(), lo,
                               [](const DieRange& range, Dwarf_Addr a) { return range.low < a; });
  for (auto r = from; r != index.end() && r->low < hi; ++r) {
    if (lo < r->low) edges->push_back(r->low);
    if (lo < r->high && r->high < hi) edges->push_back(r->high);
  }
}

// Appends the addresses of `cu`'s line rows inside (lo, hi) (libdw keeps
// them sorted by address).
void append_line_edges(Dwarf_Die* cu, Dwarf_Addr lo, Dwarf_Addr hi, std::vector<Dwarf_Addr>* edges) {
  Dwarf_Lines* lines = nullptr;
  size_t count = 0;
  if (dwarf_getsrclines(cu, &lines, &count) != 0) return;
  const auto address_of = [lines](size_t i) {
    Dwarf_Addr a = 0;
    Dwarf_Line* row = dwarf_onesrcline(lines, i);
    return row != nullptr && dwarf_lineaddr(row, &a) == 0 ? a : 0;
  };
  size_t first = 0, last = count;  // the first row at or past lo
  while (first < last) {
    const size_t mid = first + (last - first) / 2;
    if (address_of(mid) <= lo) first = mid + 1;
    else last = mid;
  }
  for (size_t i = first; i < count; ++i) {
    const Dwarf_Addr a = address_of(i);
    if (a >= hi) break;
    if (lo < a) edges->push_back(a);
  }
}

}  // namespace

std::unique_ptr<ModuleDebugInfo> ModuleDebugInfo::open(const std::string& path, const DebugCopies* copies) {
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
  std::unique_ptr<ModuleDebugInfo> info(new ModuleDebugInfo(dwfl, module, bias));
  if (copies) {
    // The debug file is looked for at the first DWARF lookup (find_debuginfo).
    info->copies_ = *copies;
    void** userdata = nullptr;
    dwfl_module_info(module, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (userdata) *userdata = &*info->copies_;
  }
  return info;
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
  dwarf_ = dwfl_module_getdwarf(module_, &dwarf_bias_);
  if (dwarf_ == nullptr) return;
  if (given_units_) {
    for (const UnitRange& u : *given_units_) cu_ranges_.push_back({u.low, u.high, Dwarf_Die{}, u.offset});
  } else {
    Dwarf_CU* unit = nullptr;
    uint8_t unit_type = 0;
    Dwarf_Die cu;
    while (dwarf_get_units(dwarf_, unit, &unit, nullptr, &unit_type, &cu, nullptr) == 0) {
      // Not type units, dwz partial units (imported into CUs), or split-DWARF
      // skeletons (-gsplit-dwarf is not supported).
      if (unit_type != DW_UT_compile) continue;
      const size_t first = cu_ranges_.size();
      add_ranges(&cu, &cu_ranges_);
      for (size_t i = first; i < cu_ranges_.size(); ++i) cu_ranges_[i].offset = dwarf_dieoffset(&cu);
    }
  }
  sort_ranges(&cu_ranges_);
}

UnitIndex ModuleDebugInfo::units() const {
  UnitIndex units;
  for (const DieRange& r : cu_ranges_) units.push_back({r.low, r.high, r.offset});
  return units;
}

const DieRange* ModuleDebugInfo::unit_at(Dwarf_Addr dwarf_address, Dwarf_Die* cu) {
  if (!indexed_) index_compilation_units();
  // Ours to fill in: a unit from the cache has its DIE read when first needed.
  auto* found = const_cast<DieRange*>(find_range(cu_ranges_, dwarf_address));
  if (found == nullptr) return nullptr;
  if (found->die.addr == nullptr && dwarf_offdie(dwarf_, found->offset, &found->die) == nullptr) return nullptr;
  *cu = found->die;
  return found;
}

const std::string& ModuleDebugInfo::name_of(Dwarf_Die& function) {
  auto [name, inserted] = function_names_.try_emplace(function.addr);
  if (inserted) name->second = function_name(&function);
  return name->second;
}

const ScopeTree& ModuleDebugInfo::scope_tree(const Dwarf_Die& function) {
  auto [entry, inserted] = scope_trees_.try_emplace(function.addr, function);
  return entry->second;
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
  Dwarf_Die cu{};
  const DieRange* found = unit_at(dwarf_address, &cu);
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

bool ModuleDebugInfo::answers_around(uint64_t elf_vaddr, size_t max_stretches, std::vector<Answer>* out) {
  out->clear();
  const Dwarf_Addr address = elf_vaddr + bias_;
  if (dwfl_addrmodule(dwfl_, address) != module_) return false;
  if (!indexed_) index_compilation_units();
  if (cu_ranges_.empty() || address < dwarf_bias_) return false;
  // Where the module answers (DWARF addresses), in one unit or between
  // units, one function or between functions...
  Dwarf_Addr module_low = 0, module_high = 0;
  dwfl_module_info(module_, nullptr, &module_low, &module_high, nullptr, nullptr, nullptr, nullptr);
  Dwarf_Addr lo = std::max<Dwarf_Addr>(module_low, dwarf_bias_) - dwarf_bias_, hi = module_high - dwarf_bias_;
  const Dwarf_Addr pc = address - dwarf_bias_;
  narrow_to(cu_ranges_, pc, &lo, &hi);
  std::vector<Dwarf_Addr> edges;
  append_range_edges(cu_ranges_, lo, hi, &edges);
  Dwarf_Die cu{};
  bool named_function = false;
  if (unit_at(pc, &cu) != nullptr) {
    const RangeIndex& functions = functions_of(&cu);
    narrow_to(functions, pc, &lo, &hi);
    append_range_edges(functions, lo, hi, &edges);
    if (const DieRange* function = find_range(functions, pc)) {
      scope_tree(function->die).append_edges(lo, hi, &edges);
      Dwarf_Die die = function->die;
      named_function = !name_of(die).empty();
    }
    append_line_edges(&cu, lo, hi, &edges);
  }
  // ... and, where no named DWARF function answers, where the symbol table
  // answers alike (its names stand in; a named function needs no table).
  if (!named_function) {
    if (!symbols_) symbols_ = std::make_unique<SymbolTable>(module_);
    uint64_t symbol_lo = 0, symbol_hi = 0;
    symbols_->constant_range(address, &symbol_lo, &symbol_hi);
    lo = std::max<Dwarf_Addr>(lo, std::max<Dwarf_Addr>(symbol_lo, dwarf_bias_) - dwarf_bias_);
    hi = std::min<Dwarf_Addr>(hi, symbol_hi - dwarf_bias_);
  }
  if (!(lo <= pc && pc < hi)) return false;
  edges.erase(std::remove_if(edges.begin(), edges.end(), [&](Dwarf_Addr e) { return e <= lo || e >= hi; }), edges.end());
  edges.push_back(lo);
  edges.push_back(hi);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  if (edges.size() - 1 > max_stretches) return false;
  // frames_at answers from the symbol, the unit and function, the line row
  // and the scopes holding an address: alike between these edges.
  const uint64_t to_elf = dwarf_bias_ - bias_;  // DWARF address + to_elf = ELF vaddr (wrapping)
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    const uint64_t from = edges[i] + to_elf, to = edges[i + 1] + to_elf;
    std::vector<SourceFrame> frames = frames_at(from);
    if (!out->empty() && out->back().frames == frames)
      out->back().hi = to;
    else
      out->push_back({from, to, std::move(frames)});
  }
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
  if (unit_at(pc, &cu) == nullptr) return false;
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
  std::vector<Dwarf_Die> path = scope_tree(function->die).containing(pc);  // outermost first
  std::vector<SourceFrame> frames;
  Dwarf_Die* callee = nullptr;  // the inlined_subroutine of the previous frame
  for (auto scope = path.rbegin(); scope != path.rend(); ++scope) {  // innermost first
    const int tag = dwarf_tag(&*scope);
    if (!is_function(tag)) continue;  // lexical blocks
    SourceFrame frame;
    frame.function = name_of(*scope);
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
