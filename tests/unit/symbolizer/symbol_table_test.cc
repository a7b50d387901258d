// SymbolTable names every address as libdwfl's own lookup
// (dwfl_module_addrinfo) does, on real modules: this test binary (a full
// .symtab with local symbols), the fixture and its stripped copies, the
// non-PIE program, and every library loaded into this process (libc's
// .dynsym, libstdc++, libdw...).
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "symbolizer/symbol_table.h"

namespace hybridprof::symbolizer {
namespace {

char* g_no_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_no_debuginfo_path,
};

struct OpenModule {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  explicit OpenModule(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    dwfl = dwfl_begin(&kCallbacks);
    dwfl_report_begin(dwfl);
    module = dwfl_report_elf(dwfl, path.c_str(), path.c_str(), fd, 0, true);
    dwfl_report_end(dwfl, nullptr, nullptr);
    if (module == nullptr) close(fd);
  }
  ~OpenModule() {
    if (dwfl) dwfl_end(dwfl);
  }
};

std::string text(const char* name) { return name ? name : "(none)"; }

// The address ranges of the module's code (its allocated, executable
// sections): the addresses samples name. (Between sections and at a
// section's end, where no code is, the two may differ.)
std::vector<std::pair<uint64_t, uint64_t>> code_ranges(Dwfl_Module* module) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  Dwarf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module, &bias);
  for (Elf_Scn* section = elf ? elf_nextscn(elf, nullptr) : nullptr; section; section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) && header.sh_type == SHT_PROGBITS && (header.sh_flags & SHF_ALLOC) &&
        (header.sh_flags & SHF_EXECINSTR) && header.sh_size > 0)
      ranges.emplace_back(header.sh_addr + bias, header.sh_addr + bias + header.sh_size);
  }
  return ranges;
}

// Compares the two in the module's code on the edges of every symbol (its
// start, one past it, its middle, its last byte, its end, the byte before
// it) and on random addresses, at most `limit` addresses (libdwfl's lookup
// is linear: a large table would make this test slow).
void expect_same_names(const std::string& path, size_t limit = 6000) {
  SCOPED_TRACE(path);
  OpenModule m(path);
  ASSERT_NE(m.module, nullptr);
  const SymbolTable table(m.module);
  const auto code = code_ranges(m.module);
  ASSERT_FALSE(code.empty());
  auto in_code = [&](uint64_t a) {
    for (const auto& [low, high] : code)
      if (a >= low && a < high) return true;
    return false;
  };
  std::vector<uint64_t> probes;
  const int count = dwfl_module_getsymtab(m.module);
  for (int i = 1; i < count; ++i) {
    GElf_Sym sym;
    GElf_Addr address = 0;
    if (dwfl_module_getsym_info(m.module, i, &sym, &address, nullptr, nullptr, nullptr) == nullptr) continue;
    for (uint64_t a : {address, address + 1, address + sym.st_size / 2, address + sym.st_size - 1,
                       address + sym.st_size, address - 1})
      if (in_code(a)) probes.push_back(a);
  }
  std::mt19937_64 random(42);
  for (const auto& [low, high] : code)
    for (int i = 0; i < 500; ++i) probes.push_back(low + random() % (high - low));
  if (probes.size() > limit) {  // an even spread over the whole module
    std::vector<uint64_t> spread;
    for (size_t i = 0; i < limit; ++i) spread.push_back(probes[i * probes.size() / limit]);
    probes.swap(spread);
  }
  size_t named = 0, differing = 0;
  for (uint64_t address : probes) {
    GElf_Off offset = 0;
    GElf_Sym sym;
    const char* theirs = dwfl_module_addrinfo(m.module, address, &offset, &sym, nullptr, nullptr, nullptr);
    if (theirs != nullptr && theirs[0] == '\0') theirs = nullptr;
    const char* ours = table.name_at(address);
    named += ours != nullptr;
    if (text(ours) != text(theirs) && ++differing <= 5)
      ADD_FAILURE() << std::hex << "at 0x" << address << ": ours " << text(ours) << ", libdwfl's " << text(theirs);
  }
  EXPECT_EQ(differing, 0u) << "of " << probes.size() << " addresses";
  EXPECT_GT(named, 0u) << "no address named at all";
}

TEST(SymbolTable, NamesTheSymbolLibdwflNamesInThisProgram) { expect_same_names("/proc/self/exe"); }

TEST(SymbolTable, NamesTheSymbolLibdwflNamesInTheFixtureAndItsStrippedCopies) {
  expect_same_names(SYMFIX_LIBRARY);
  for (const char* copy : {"symfix_strip_debug.so", "symfix_strip_all.so", "symfix_no_aranges.so"})
    expect_same_names(std::string(SYMFIX_COPIES_DIR) + "/" + copy);
  expect_same_names(SYMFIX_NOPIE_PROGRAM);
}

TEST(SymbolTable, NamesTheSymbolLibdwflNamesInEveryLoadedLibrary) {
  std::vector<std::string> libraries;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const char* name = info->dlpi_name;
        if (name && name[0] == '/' && access(name, R_OK) == 0) static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &libraries);
  ASSERT_GE(libraries.size(), 3u);  // libc, libstdc++, libdw at least
  for (const auto& library : libraries) expect_same_names(library);
}

TEST(SymbolTable, AModuleWithoutSymbolsNamesNothing) {
  // The fixture's debug-only copy holds NOBITS code: symbols, but the
  // lookup of an address outside every symbol still gives none.
  OpenModule m("/proc/self/exe");
  ASSERT_NE(m.module, nullptr);
  const SymbolTable table(m.module);
  EXPECT_EQ(table.name_at(0), nullptr);
  EXPECT_EQ(table.name_at(~uint64_t{0}), nullptr);
}

}  // namespace
}  // namespace hybridprof::symbolizer
