// Symbolizer tests against real binaries: the fixture library (and stripped copies
// of it), a non-PIE program, this PIE test binary and the system libc. Expected
// lines come from __LINE__ markers in the fixtures, never typed by hand.
#include "symbolizer/symbolizer.h"

#include <dlfcn.h>
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace symbolizer_test {
// A function of this test binary (PIE), symbolized through /proc/self/exe.
static volatile int g_sink;
const int kLineOfBinaryFunction = __LINE__ + 1;
__attribute__((noinline)) int binary_function(int x) {
  g_sink = x;
  return g_sink + 1;
}
}  // namespace symbolizer_test

namespace {

using hybridprof::symbolizer::demangle;
using hybridprof::symbolizer::SourceFrame;
using hybridprof::symbolizer::Symbolizer;

const std::string kFixture = SYMFIX_LIBRARY;
const std::string kFixtureBasename = kFixture.substr(kFixture.rfind('/') + 1);
const std::string kStripDebugCopy = SYMFIX_COPIES_DIR "/symfix_strip_debug.so";
const std::string kStripAllCopy = SYMFIX_COPIES_DIR "/symfix_strip_all.so";
const std::string kDebugLinkCopy = SYMFIX_COPIES_DIR "/symfix_debuglink.so";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// The loaded object whose PT_LOAD segments contain `address`, found the way the
// profiler's module map finds it (dlpi_addr is the load bias).
struct LoadedModule {
  bool found = false;
  std::string path;  // "" for the main program
  uint64_t bias = 0;
};

LoadedModule module_containing(const void* address) {
  struct Search {
    uintptr_t address;
    LoadedModule result;
  } search{reinterpret_cast<uintptr_t>(address), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* search = static_cast<Search*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          if (segment.p_type == PT_LOAD && search->address >= start &&
              search->address < start + segment.p_memsz) {
            search->result = {true, info->dlpi_name, info->dlpi_addr};
            return 1;
          }
        }
        return 0;
      },
      &search);
  return search.result;
}

// A function's entry instruction belongs to its opening line if it has a prologue
// (as under sanitizers), else to its first statement; the fixtures put that on the
// next line.
::testing::AssertionResult is_entry_line(uint32_t line, uint32_t opening_line) {
  if (line == opening_line || line == opening_line + 1) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "entry line " << line << " is neither the opening line "
                                       << opening_line << " nor the next one";
}

uint64_t elf_vaddr(const void* runtime_address) {
  return reinterpret_cast<uintptr_t>(runtime_address) - module_containing(runtime_address).bias;
}

uint16_t elf_type(const std::string& path) {
  Elf64_Ehdr header{};
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&header), sizeof header);
  return header.e_type;
}

// Runs `use(elf)` on `path` opened with libelf; a default Result if unreadable.
template <typename Result, typename Use>
Result with_elf(const std::string& path, Use use) {
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Result{};
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  Result result = elf != nullptr ? use(elf) : Result{};
  elf_end(elf);
  close(fd);
  return result;
}

std::optional<uint64_t> section_address(const std::string& path, const std::string& name) {
  return with_elf<std::optional<uint64_t>>(path, [&](Elf* elf) -> std::optional<uint64_t> {
    size_t names_index = 0;
    if (elf_getshdrstrndx(elf, &names_index) != 0) return std::nullopt;
    for (Elf_Scn* section = nullptr; (section = elf_nextscn(elf, section)) != nullptr;) {
      GElf_Shdr header;
      if (gelf_getshdr(section, &header) == nullptr) continue;
      const char* section_name = elf_strptr(elf, names_index, header.sh_name);
      if (section_name != nullptr && name == section_name) return header.sh_addr;
    }
    return std::nullopt;
  });
}

// Where a separate debug file for `path` lives under /usr/lib/debug/.build-id.
std::string build_id_debug_path(const std::string& path) {
  return with_elf<std::string>(path, [](Elf* elf) -> std::string {
    const void* id = nullptr;
    const ssize_t size = dwelf_elf_gnu_build_id(elf, &id);
    if (size < 2) return "";
    std::string text = "/usr/lib/debug/.build-id/";
    for (ssize_t i = 0; i < size; ++i) {
      char byte[3];
      std::snprintf(byte, sizeof byte, "%02x", static_cast<const unsigned char*>(id)[i]);
      text += byte;
      if (i == 0) text += '/';
    }
    return text + ".debug";
  });
}

// Tests on the fixture library, dlopen'ed once.
class SymbolizerFixtureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    handle_ = dlopen(kFixture.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) load_error_ = dlerror();
  }
  static void TearDownTestSuite() {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(handle_, nullptr) << load_error_; }

  static void* symbol(const char* name) {
    void* address = dlsym(handle_, name);
    if (address == nullptr) ADD_FAILURE() << "fixture does not export " << name;
    return address;
  }
  static uint64_t vaddr_of(const char* name) { return elf_vaddr(symbol(name)); }
  static uint32_t line_marker(const char* name) {
    const auto* value = static_cast<const int*>(symbol(name));
    return value != nullptr ? static_cast<uint32_t>(*value) : 0;
  }

  // [start, end) ELF vaddrs of an exported function, from its dynamic symbol.
  static std::pair<uint64_t, uint64_t> vaddr_range(const char* name) {
    Dl_info info;
    void* entry_pointer = nullptr;  // dladdr1 stores a const ElfW(Sym)* here
    void* address = symbol(name);
    if (address == nullptr || dladdr1(address, &info, &entry_pointer, RTLD_DL_SYMENT) == 0 ||
        entry_pointer == nullptr) {
      ADD_FAILURE() << "no symbol entry for " << name;
      return {0, 0};
    }
    const auto* entry = static_cast<const ElfW(Sym)*>(entry_pointer);
    return {elf_vaddr(address), elf_vaddr(address) + entry->st_size};
  }

  static void* handle_;
  static std::string load_error_;
  Symbolizer symbolizer_;
};

void* SymbolizerFixtureTest::handle_ = nullptr;
std::string SymbolizerFixtureTest::load_error_;

struct ExportedFunction {
  const char* symbol;  // as dlsym wants it (mangled for C++)
  const char* name;    // as the symbolizer must print it
  const char* line_marker;
};

const ExportedFunction kExportedFunctions[] = {
    {"symfix_c_function", "symfix_c_function", "symfix_line_c_function"},
    {"_ZN6symfix5scaleEid", "symfix::scale(int, double)", "symfix_line_scale"},
    // Defined out of its class: the name is reached through DW_AT_specification.
    {"_ZN6symfix7Counter3addEi", "symfix::Counter::add(int)", "symfix_line_counter_add"},
};

TEST_F(SymbolizerFixtureTest, FunctionEntryHasDemangledNameFileAndLine) {
  for (const ExportedFunction& function : kExportedFunctions) {
    SCOPED_TRACE(function.name);
    const std::vector<SourceFrame> frames =
        symbolizer_.resolve(kFixture, vaddr_of(function.symbol));
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, function.name);
    EXPECT_TRUE(ends_with(frames[0].file, "/symbolizer_fixture.cc")) << frames[0].file;
    EXPECT_EQ(frames[0].file.front(), '/') << "DWARF has comp_dir, so paths are absolute";
    EXPECT_TRUE(is_entry_line(frames[0].line, line_marker(function.line_marker)));
    EXPECT_TRUE(frames[0].resolved);
    EXPECT_FALSE(frames[0].inlined);
  }
}

TEST_F(SymbolizerFixtureTest, AddressesInInlinedHelperGiveHelperThenCaller) {
  const auto [start, end] = vaddr_range("symfix_with_inlined");
  ASSERT_LT(start, end);
  const uint32_t helper_first = line_marker("symfix_line_helper_first");
  const uint32_t helper_last = line_marker("symfix_line_helper_last");
  int inlined_addresses = 0;
  // Which bytes belong to the inlined copy is the compiler's choice, so scan them all.
  for (uint64_t address = start; address < end; ++address) {
    SCOPED_TRACE(hex(address));
    const std::vector<SourceFrame> frames = symbolizer_.resolve(kFixture, address);
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().function, "symfix_with_inlined");
    EXPECT_FALSE(frames.back().inlined);
    if (frames.size() < 2) continue;
    ++inlined_addresses;
    ASSERT_EQ(frames.size(), 2u);
    const SourceFrame& helper = frames[0];
    const SourceFrame& caller = frames[1];
    EXPECT_TRUE(helper.inlined);
    // Anonymous namespace: no DW_AT_linkage_name, the name is rebuilt from
    // scopes and parameters as a demangled one reads: typedefs resolved,
    // a parameter's own const dropped, "long unsigned int" as "unsigned long".
    EXPECT_EQ(helper.function,
              "symfix::(anonymous namespace)::inlined_helper(int, double const*, unsigned long&)");
    EXPECT_TRUE(ends_with(helper.file, "/symbolizer_fixture.cc")) << helper.file;
    EXPECT_GE(helper.line, helper_first);
    EXPECT_LE(helper.line, helper_last);
    // The caller's line is the call site (DW_AT_call_line), not the helper's body.
    EXPECT_TRUE(ends_with(caller.file, "/symbolizer_fixture.cc")) << caller.file;
    EXPECT_EQ(caller.line, line_marker("symfix_line_inlined_call"));
  }
  EXPECT_GT(inlined_addresses, 0) << "no address of symfix_with_inlined is in the helper";
}

// Without DWARF the ELF symbol tables still name exported functions, demangled.
TEST_F(SymbolizerFixtureTest, StrippedCopiesNameFunctionsFromSymbolTables) {
  // objcopy keeps allocated sections in place: the original's vaddrs hold for copies.
  for (const std::string& copy : {kStripDebugCopy, kStripAllCopy}) {
    for (const ExportedFunction& function : kExportedFunctions) {
      SCOPED_TRACE(copy + " " + function.name);
      const std::vector<SourceFrame> frames = symbolizer_.resolve(copy, vaddr_of(function.symbol));
      ASSERT_EQ(frames.size(), 1u);
      EXPECT_EQ(frames[0].function, function.name);
      EXPECT_EQ(frames[0].file, "");
      EXPECT_EQ(frames[0].line, 0u);
      EXPECT_TRUE(frames[0].resolved);
    }
    // No DWARF, no inline chain: the helper's bytes belong to its caller's symbol.
    const auto [start, end] = vaddr_range("symfix_with_inlined");
    for (uint64_t address = start; address < end; ++address) {
      const std::vector<SourceFrame> frames = symbolizer_.resolve(copy, address);
      ASSERT_EQ(frames.size(), 1u) << copy << " " << hex(address);
      EXPECT_EQ(frames[0].function, "symfix_with_inlined") << copy << " " << hex(address);
    }
  }
}

TEST_F(SymbolizerFixtureTest, DebugDataVariantsResolveLikeTheOriginal) {
  // debuglink: no DWARF inside; libdw's standard search finds the .debug file beside
  // it. no_aranges: no .debug_aranges, as clang emits by default, which
  // dwfl_module_addrdie needs; our own CU index does not.
  const auto [start, end] = vaddr_range("symfix_with_inlined");
  std::vector<uint64_t> addresses;
  for (uint64_t address = start; address < end; ++address) addresses.push_back(address);
  for (const ExportedFunction& function : kExportedFunctions) {
    addresses.push_back(vaddr_of(function.symbol));
  }
  const std::string no_aranges_copy = SYMFIX_COPIES_DIR "/symfix_no_aranges.so";
  ASSERT_TRUE(section_address(kFixture, ".debug_aranges").has_value());
  ASSERT_FALSE(section_address(no_aranges_copy, ".debug_aranges").has_value());
  for (const std::string& copy : {kDebugLinkCopy, no_aranges_copy}) {
    for (uint64_t address : addresses) {
      SCOPED_TRACE(copy + " " + hex(address));
      const std::vector<SourceFrame> from_copy = symbolizer_.resolve(copy, address);
      ASSERT_FALSE(from_copy.empty());
      EXPECT_NE(from_copy[0].line, 0u);
      EXPECT_EQ(from_copy, symbolizer_.resolve(kFixture, address));
    }
  }
}

TEST(SymbolizerFortranTest, ModuleProcedureIsFoundAndQualified) {
#ifndef SYMFIX_FORTRAN_LIBRARY
  GTEST_SKIP() << "no Fortran compiler when this was configured";
#else
  void* handle = dlopen(SYMFIX_FORTRAN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  void* work = dlsym(handle, "__symfix_mod_MOD_work");
  const auto* first = static_cast<const int*>(dlsym(handle, "symfix_f_line_first"));
  const auto* last = static_cast<const int*>(dlsym(handle, "symfix_f_line_last"));
  Dl_info info;
  void* entry_pointer = nullptr;
  ASSERT_TRUE(work != nullptr && first != nullptr && last != nullptr);
  ASSERT_NE(dladdr1(work, &info, &entry_pointer, RTLD_DL_SYMENT), 0);
  const auto* entry = static_cast<const ElfW(Sym)*>(entry_pointer);
  ASSERT_NE(entry, nullptr);
  ASSERT_GT(entry->st_size, 0u);

  Symbolizer symbolizer;
  const uint64_t start = elf_vaddr(work);
  for (uint64_t address = start; address < start + entry->st_size; ++address) {
    SCOPED_TRACE(hex(address));
    const std::vector<SourceFrame> frames = symbolizer.resolve(SYMFIX_FORTRAN_LIBRARY, address);
    ASSERT_EQ(frames.size(), 1u);
    // gfortran's linkage name is the label "__symfix_mod_MOD_work": not what users wrote.
    EXPECT_EQ(frames[0].function, "symfix_mod::work");
    EXPECT_TRUE(ends_with(frames[0].file, "/fortran_fixture.F90")) << frames[0].file;
    EXPECT_GE(frames[0].line, static_cast<uint32_t>(*first));
    EXPECT_LE(frames[0].line, static_cast<uint32_t>(*last));
  }
  dlclose(handle);
#endif
}

TEST_F(SymbolizerFixtureTest, PltAddressHasNoSymbol) {
  // PLT stubs have no symbol and no DWARF, but samples do land in them.
  const std::optional<uint64_t> plt = section_address(kFixture, ".plt");
  ASSERT_TRUE(plt.has_value()) << "fixture has no .plt section";
  const std::vector<SourceFrame> frames = symbolizer_.resolve(kFixture, *plt);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, kFixtureBasename + "+" + hex(*plt));
  EXPECT_FALSE(frames[0].resolved);
  EXPECT_EQ(frames[0].file, "");
  EXPECT_EQ(frames[0].line, 0u);
}

TEST_F(SymbolizerFixtureTest, AddressBeyondModuleHasNoSymbol) {
  // Past every segment: the nearest symbol below must not be claimed.
  const uint64_t address = 0x7fff00000000;
  const std::vector<SourceFrame> frames = symbolizer_.resolve(kFixture, address);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, kFixtureBasename + "+0x7fff00000000");
  EXPECT_FALSE(frames[0].resolved);
}

TEST(SymbolizerFallbackTest, UnopenableModulesGiveFallbackSilently) {
  char directory_template[] = "/tmp/symbolizer_test.XXXXXX";
  const char* directory = mkdtemp(directory_template);
  ASSERT_NE(directory, nullptr);
  const std::string dir = directory;
  const std::string fifo = dir + "/fifo.so";  // opening it for reading must not block
  const std::string empty = dir + "/empty.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(empty).close();

  const std::pair<std::string, std::string> cases[] = {
      {"/nonexistent/dir/libnope.so", "libnope.so+0x1234"},
      {"[vdso]", "[vdso]+0x1234"},
      {"linux-vdso.so.1", "linux-vdso.so.1+0x1234"},
      {"/tmp/libgone.so (deleted)", "libgone.so (deleted)+0x1234"},
      {dir, dir.substr(dir.rfind('/') + 1) + "+0x1234"},
      {fifo, "fifo.so+0x1234"},
      {empty, "empty.so+0x1234"},
      {__FILE__, "symbolizer_test.cc+0x1234"},  // a text file, not ELF
      {"", "??+0x1234"},
  };
  Symbolizer symbolizer;
  testing::internal::CaptureStdout();
  for (const auto& [path, expected] : cases) {
    SCOPED_TRACE(path);
    for (int attempt = 0; attempt < 2; ++attempt) {  // the second one is cached
      const std::vector<SourceFrame> frames = symbolizer.resolve(path, 0x1234);
      ASSERT_EQ(frames.size(), 1u);
      EXPECT_EQ(frames[0].function, expected);
      EXPECT_FALSE(frames[0].resolved);
      EXPECT_FALSE(frames[0].inlined);
      EXPECT_EQ(frames[0].file, "");
      EXPECT_EQ(frames[0].line, 0u);
    }
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  unlink(fifo.c_str());
  unlink(empty.c_str());
  rmdir(directory);
}

TEST(SymbolizerExecutableTest, PieExecutableResolvesThroughProcSelfExe) {
  const void* function = reinterpret_cast<const void*>(&symbolizer_test::binary_function);
  const LoadedModule module = module_containing(function);
  ASSERT_TRUE(module.found);
  EXPECT_EQ(module.path, "") << "the main program has an empty dlpi_name";
  ASSERT_EQ(elf_type("/proc/self/exe"), ET_DYN) << "test binary is not PIE";
  EXPECT_NE(module.bias, 0u) << "a PIE is loaded at a non-zero bias";

  Symbolizer symbolizer;
  const std::vector<SourceFrame> frames =
      symbolizer.resolve("/proc/self/exe", reinterpret_cast<uintptr_t>(function) - module.bias);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "symbolizer_test::binary_function(int)");
  EXPECT_TRUE(ends_with(frames[0].file, "/symbolizer_test.cc")) << frames[0].file;
  EXPECT_TRUE(is_entry_line(frames[0].line, symbolizer_test::kLineOfBinaryFunction));
}

TEST(SymbolizerExecutableTest, NonPieExecutableResolvesRuntimeAddress) {
  const std::string program = SYMFIX_NOPIE_PROGRAM;
  ASSERT_EQ(elf_type(program), ET_EXEC);
  // The program prints its function's runtime address and line; bias is 0 for ET_EXEC.
  FILE* output = popen(program.c_str(), "r");
  ASSERT_NE(output, nullptr);
  void* address = nullptr;
  int line = 0;
  const int fields = std::fscanf(output, "%p %d", &address, &line);
  ASSERT_EQ(pclose(output), 0);
  ASSERT_EQ(fields, 2);

  Symbolizer symbolizer;
  const std::vector<SourceFrame> frames =
      symbolizer.resolve(program, reinterpret_cast<uintptr_t>(address));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "nopie_function(int)");
  EXPECT_TRUE(ends_with(frames[0].file, "/nopie_fixture.cc")) << frames[0].file;
  EXPECT_TRUE(is_entry_line(frames[0].line, static_cast<uint32_t>(line)));
}

TEST(SymbolizerSystemTest, LibcResolvesThroughBuildIdDebugFile) {
  // libc's own qsort, not an interceptor of the same name (as under ASan).
  void* libc_handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc_handle, nullptr);
  void* qsort_address = dlsym(libc_handle, "qsort");
  dlclose(libc_handle);
  ASSERT_NE(qsort_address, nullptr);
  const LoadedModule libc = module_containing(qsort_address);
  ASSERT_TRUE(libc.found);
  ASSERT_FALSE(section_address(libc.path, ".debug_info").has_value())
      << libc.path << " has its own DWARF; this test wants it in a separate file";
  const std::string debug_file = build_id_debug_path(libc.path);
  struct stat st;
  if (debug_file.empty() || stat(debug_file.c_str(), &st) != 0) {
    GTEST_SKIP() << "no separate debug file for " << libc.path << " (install libc6-dbg)";
  }
  Symbolizer symbolizer;
  const std::vector<SourceFrame> frames =
      symbolizer.resolve(libc.path, reinterpret_cast<uintptr_t>(qsort_address) - libc.bias);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().function, "qsort");
  EXPECT_NE(frames.back().file, "") << "line info comes only from " << debug_file;
  EXPECT_GT(frames.back().line, 0u);
}

// Function symbols of `path`'s .symtab whose name contains `part`, with their addresses.
std::vector<std::pair<std::string, uint64_t>> symtab_functions(const std::string& path, const std::string& part) {
  using Found = std::vector<std::pair<std::string, uint64_t>>;
  return with_elf<Found>(path, [&](Elf* elf) {
    Found found;
    for (Elf_Scn* section = nullptr; (section = elf_nextscn(elf, section)) != nullptr;) {
      GElf_Shdr header;
      if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_SYMTAB) continue;
      Elf_Data* data = elf_getdata(section, nullptr);
      for (size_t i = 0; data != nullptr && i < header.sh_size / header.sh_entsize; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, int(i), &sym) == nullptr || GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
        const char* name = elf_strptr(elf, header.sh_link, sym.st_name);
        if (name != nullptr && std::string(name).find(part) != std::string::npos) found.emplace_back(name, sym.st_value);
      }
    }
    return found;
  });
}

// What c++filt prints for `symbol`.
std::string cxxfilt(const std::string& symbol) {
  FILE* output = popen(("c++filt '" + symbol + "'").c_str(), "r");
  if (output == nullptr) return "";
  char line[4096] = {};
  const bool read = std::fgets(line, sizeof line, output) != nullptr;
  pclose(output);
  std::string text = read ? line : "";
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// GCC's outlined OpenMP bodies, nested in the DWARF of the function they
// came from, are named as c++filt names their symbols: "symfix_omp::
// sum(std::vector<double, ...> const&, double&) [clone ._omp_fn.0]", and
// "symfix_omp_run._omp_fn.1" for a C-linkage one (not qualified by the
// enclosing function).
TEST(SymbolizerOpenMpTest, OutlinedBodiesAreNamedAsCxxfiltNamesThem) {
#ifndef SYMFIX_OPENMP_LIBRARY
  GTEST_SKIP() << "no GCC OpenMP when this was configured";
#else
  const std::string library = SYMFIX_OPENMP_LIBRARY;
  const auto outlined = symtab_functions(library, "._omp_fn.");
  ASSERT_GE(outlined.size(), 3u) << "sum's, scale's and symfix_omp_run's bodies";
  Symbolizer symbolizer;
  size_t cxx = 0, c = 0;
  for (const auto& [symbol, vaddr] : outlined) {
    SCOPED_TRACE(symbol);
    const std::vector<SourceFrame> frames = symbolizer.resolve(library, vaddr);
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames[0].function, cxxfilt(symbol));
    EXPECT_TRUE(ends_with(frames[0].file, "/openmp_fixture.cc")) << frames[0].file;
    cxx += symbol.rfind("_Z", 0) == 0;
    c += symbol.rfind("symfix_omp_run.", 0) == 0;
  }
  EXPECT_GE(cxx, 2u);
  EXPECT_GE(c, 1u);
  EXPECT_EQ(cxxfilt("_ZN10symfix_omp3sumERKSt6vectorIdSaIdEERd._omp_fn.0"),
            "symfix_omp::sum(std::vector<double, std::allocator<double> > const&, double&) [clone ._omp_fn.0]")
      << "c++filt itself, for the reader";
#endif
}

TEST(DemangleTest, DemanglesItaniumNamesAndKeepsOthers) {
  EXPECT_EQ(demangle("_ZN2ns3fooEi"), "ns::foo(int)");
  EXPECT_EQ(demangle("_ZN6symfix7Counter3addEi"), "symfix::Counter::add(int)");
  EXPECT_EQ(demangle("main"), "main");
  EXPECT_EQ(demangle("i"), "i") << "a bare type encoding is not a symbol name";
  EXPECT_EQ(demangle("_Z"), "_Z");
  EXPECT_EQ(demangle("_Zbogus!"), "_Zbogus!");
  EXPECT_EQ(demangle(""), "");
  // GCC's clone suffixes, as c++filt prints them.
  EXPECT_EQ(demangle("_Z3fooi.constprop.0.isra.0"), "foo(int) [clone .constprop.0] [clone .isra.0]");
  EXPECT_EQ(demangle("_Z3fooi.cold"), "foo(int) [clone .cold]");
  EXPECT_EQ(demangle("_ZL28CalcFBHourglassForceForElemsR6DomainPdS1_dii._omp_fn.0"),
            "CalcFBHourglassForceForElems(Domain&, double*, double*, double, int, int) [clone ._omp_fn.0]");
}

}  // namespace
