// The symbol cache: answers equal the symbolizer's own, a second symbolizer
// opens nothing, entries from two writers merge, a damaged entry is
// rebuilt (never trusted), and the directory stays under its bound.
#include "symbolizer/symbol_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "symbolizer/symbolizer.h"

namespace {

namespace fs = std::filesystem;
using hybridprof::symbolizer::build_id_of;
using hybridprof::symbolizer::CachedEntry;
using hybridprof::symbolizer::CachedModule;
using hybridprof::symbolizer::SourceFrame;
using hybridprof::symbolizer::SymbolCache;
using hybridprof::symbolizer::Symbolizer;

const std::string kFixture = SYMFIX_LIBRARY;

class SymbolCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hybridprof-symcache-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    // Addresses across the fixture's code around one of its functions
    // (where the code lies depends on the build: sanitizers move it):
    // functions, their middles, gaps.
    void* handle = dlopen(kFixture.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    Dl_info info{};
    ASSERT_NE(dladdr(dlsym(handle, "symfix_call_all"), &info), 0);
    const uint64_t function = reinterpret_cast<uint64_t>(info.dli_saddr) - load_bias(info.dli_fbase);
    dlclose(handle);
    first_ = function > 0x400 ? function - 0x400 : 0;
    last_ = function + 0x400;
    for (uint64_t a = first_; a < last_; a += 13) addresses_.push_back(a);
  }
  // The load bias of the object mapped at `base` (its first segment's
  // address less that segment's vaddr, which is 0 for a shared library).
  static uint64_t load_bias(const void* base) { return reinterpret_cast<uint64_t>(base); }
  // The fixture's function `name`: its ELF address and size.
  struct Function {
    uint64_t start = 0, size = 0;
  };
  static Function function(const char* name) {
    Function f;
    void* handle = dlopen(kFixture.c_str(), RTLD_NOW | RTLD_LOCAL);
    Dl_info info{};
    void* entry = nullptr;
    if (handle && dladdr1(dlsym(handle, name), &info, &entry, RTLD_DL_SYMENT) != 0 && entry) {
      f.start = reinterpret_cast<uint64_t>(info.dli_saddr) - load_bias(info.dli_fbase);
      f.size = static_cast<const ElfW(Sym)*>(entry)->st_size;
    }
    if (handle) dlclose(handle);
    return f;
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::vector<std::vector<SourceFrame>> resolve_all(Symbolizer& s) {
    std::vector<std::vector<SourceFrame>> out;
    for (uint64_t a : addresses_) out.push_back(s.resolve(kFixture, a));
    return out;
  }
  std::string entry() const { return (dir_ / "symbols-v1" / (build_id_of(kFixture) + ".hps")).string(); }

  fs::path dir_;
  uint64_t first_ = 0, last_ = 0;  // the stretch of the fixture's code tried
  std::vector<uint64_t> addresses_;
};

TEST_F(SymbolCacheTest, TheFixtureHasABuildId) {
  EXPECT_EQ(build_id_of(kFixture).size(), 40u) << "GNU build ids are 20 bytes (SHA-1)";
  EXPECT_EQ(build_id_of("/nonexistent/file.so"), "");
  EXPECT_EQ(build_id_of("/proc/self/status"), "") << "not ELF";
}

TEST_F(SymbolCacheTest, ASecondSymbolizerAnswersTheSameWithoutOpeningTheModule) {
  Symbolizer plain;
  const auto expected = resolve_all(plain);
  size_t resolved = 0;
  for (const auto& frames : expected) resolved += frames.front().resolved;
  ASSERT_GE(resolved, 10u) << "addresses in functions";
  ASSERT_GE(addresses_.size() - resolved, 10u) << "and outside them (unresolved answers are cached too)";

  SymbolCache cache(dir_.string());
  {
    Symbolizer cold(&cache);
    EXPECT_EQ(resolve_all(cold), expected);
    EXPECT_TRUE(cold.call_is_statement(kFixture, addresses_[3]) == plain.call_is_statement(kFixture, addresses_[3]));
    EXPECT_EQ(cold.cache_use().modules_read, 1u);
    EXPECT_EQ(cold.cache_use().modules_cached, 0u);
    cold.save();
  }
  ASSERT_TRUE(fs::exists(entry()));
  Symbolizer warm(&cache);
  EXPECT_EQ(resolve_all(warm), expected);
  EXPECT_EQ(warm.call_is_statement(kFixture, addresses_[3]), plain.call_is_statement(kFixture, addresses_[3]));
  EXPECT_EQ(warm.cache_use().modules_read, 0u) << "every answer was in the cache";
  EXPECT_EQ(warm.cache_use().modules_cached, 1u);
  EXPECT_TRUE(cache.take_warnings().empty());
}

// With DWARF, an address's whole function is kept: every address of it,
// cut where lines and inlined calls change, is answered from the cache as
// the module itself answers it; an address in a function no run reached
// opens the module.
TEST_F(SymbolCacheTest, AFunctionWithDwarfIsKeptWholeAtItsFirstAddress) {
  const Function inlined = function("symfix_with_inlined"), other = function("symfix_c_function");
  ASSERT_GT(inlined.size, 16u);
  ASSERT_GT(other.size, 0u);
  Symbolizer plain;
  SymbolCache cache(dir_.string());
  {
    Symbolizer cold(&cache);
    const uint64_t middle = inlined.start + inlined.size / 2;
    EXPECT_EQ(cold.resolve(kFixture, middle), plain.resolve(kFixture, middle));
    cold.save();
  }
  const CachedModule stored = SymbolCache(dir_.string()).load(build_id_of(kFixture));
  EXPECT_TRUE(stored.addresses.empty()) << "kept as the function's stretches, not as the address";
  ASSERT_FALSE(stored.ranges.empty());
  EXPECT_LE(stored.ranges.begin()->first, inlined.start);
  EXPECT_GE(std::prev(stored.ranges.end())->second.end, inlined.start + inlined.size);
  EXPECT_FALSE(stored.units.empty()) << "the units' index, for later openings";

  Symbolizer warm(&cache);
  std::set<std::string> answers;  // each told as its frames' names and lines
  bool inlined_frame = false;
  for (uint64_t a = inlined.start; a < inlined.start + inlined.size; ++a) {
    const auto frames = warm.resolve(kFixture, a);
    ASSERT_EQ(frames, plain.resolve(kFixture, a)) << std::hex << a;
    std::string told;
    for (const SourceFrame& f : frames) told += f.function + ":" + std::to_string(f.line) + (f.inlined ? " inlined; " : "; ");
    answers.insert(told);
    inlined_frame |= frames.front().inlined;
  }
  EXPECT_EQ(warm.cache_use().modules_read, 0u) << "every address of the function from the cache";
  EXPECT_GE(answers.size(), 3u) << "lines and inlined calls differ across the function";
  EXPECT_TRUE(inlined_frame) << "the inlined helper's frames kept too";
  EXPECT_LT(stored.ranges.size(), inlined.size / 2) << "stretches, not addresses";

  // A function no run reached opens the module, whose units come from the
  // cache's index: every address of the fixture's code is still right.
  Symbolizer later(&cache);
  EXPECT_EQ(later.resolve(kFixture, other.start + 1), plain.resolve(kFixture, other.start + 1));
  EXPECT_EQ(later.cache_use().modules_read, 1u) << "a function no run reached";
  for (uint64_t a = first_; a < last_; a += 5) ASSERT_EQ(later.resolve(kFixture, a), plain.resolve(kFixture, a)) << std::hex << a;
}

// Without DWARF the symbol table alone answers, alike over each stretch
// between symbol edges: the cache keeps the whole table at the module's
// first opening, so a later run's address anywhere in the module (in a
// function no run asked about) is answered without opening it, and rightly.
TEST_F(SymbolCacheTest, AModuleWithoutDwarfIsKeptWholeAtItsFirstOpening) {
  const std::string lib = SYMFIX_COPIES_DIR "/symfix_strip_debug.so";
  ASSERT_FALSE(build_id_of(lib).empty());
  Symbolizer plain;
  SymbolCache cache(dir_.string());
  {
    Symbolizer cold(&cache);
    EXPECT_EQ(cold.resolve(lib, addresses_[0]), plain.resolve(lib, addresses_[0]));  // one address asked
    EXPECT_EQ(cold.cache_use().modules_read, 1u);
    for (uint64_t a : addresses_) EXPECT_EQ(cold.resolve(lib, a), plain.resolve(lib, a)) << std::hex << a;
    cold.save();
  }
  const CachedModule stored = SymbolCache(dir_.string()).load(build_id_of(lib));
  EXPECT_TRUE(stored.addresses.empty()) << "no single addresses";
  EXPECT_TRUE(stored.whole_table);
  ASSERT_FALSE(stored.stretches.empty());
  bool has_function = false;
  for (const auto& t : stored.stretches) has_function |= stored.names.substr(t.name, t.name_size) == "symfix_call_all";
  EXPECT_TRUE(has_function) << "the fixture's functions, by their ELF names";

  // Every address of the module's whole span, far beyond what was asked.
  const uint64_t span_end = stored.stretches.back().end + 0x100;
  size_t named = 0;
  Symbolizer warm(&cache);
  for (uint64_t a = 0; a < span_end; a += 3) {
    const auto frames = warm.resolve(lib, a);
    ASSERT_EQ(frames, plain.resolve(lib, a)) << std::hex << a;
    named += frames.front().resolved;
  }
  EXPECT_GT(named, 100u);
  EXPECT_EQ(warm.cache_use().modules_read, 0u) << "answered from the table, never opened";
  EXPECT_EQ(warm.cache_use().modules_cached, 1u);
  EXPECT_LT(stored.stretches.size(), span_end / 16) << "stretches, not addresses";
}

// Whether the ELF file at `path` holds compressed sections, and DWARF.
struct ElfSections {
  bool compressed = false, dwarf = false;
};
ElfSections sections_of(const std::string& path) {
  ElfSections found;
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr;
  size_t names = 0;
  if (elf && elf_getshdrstrndx(elf, &names) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr)) continue;
      found.compressed |= (shdr.sh_flags & SHF_COMPRESSED) != 0;
      const char* name = elf_strptr(elf, names, shdr.sh_name);
      found.dwarf |= name && std::string(name) == ".debug_info" && shdr.sh_type != SHT_NOBITS;
    }
  }
  if (elf) elf_end(elf);
  if (fd >= 0) close(fd);
  return found;
}

// A compressed separate debug file (as distributions ship them) is kept
// decompressed in the cache at its first opening, and later openings read
// the copy: with the original gone, a function no run asked about still
// gets its DWARF answer.
TEST_F(SymbolCacheTest, ACompressedDebugFileIsReadFromItsDecompressedCopy) {
  const fs::path modules = dir_ / "modules";
  fs::create_directories(modules);
  for (const char* name : {"symfix_compressed.so", "symfix_compressed.debug"})
    fs::copy_file(fs::path(SYMFIX_COPIES_DIR) / name, modules / name);
  const std::string lib = (modules / "symfix_compressed.so").string();
  ASSERT_TRUE(sections_of((modules / "symfix_compressed.debug").string()).compressed) << "the fixture is compressed";
  const uint64_t first = function("symfix_c_function").start + 1;
  const Function other = function("symfix_with_inlined");
  const uint64_t last = other.start + other.size / 2;
  Symbolizer plain;
  const auto first_frames = plain.resolve(lib, first), last_frames = plain.resolve(lib, last);
  SymbolCache cache(dir_.string());
  {
    Symbolizer cold(&cache);
    EXPECT_EQ(cold.resolve(lib, first), first_frames);
    cold.save();
  }
  const std::string copy = (dir_ / "symbols-v1" / (build_id_of(lib) + ".debug")).string();
  ASSERT_TRUE(fs::exists(copy));
  EXPECT_FALSE(sections_of(copy).compressed);
  EXPECT_TRUE(sections_of(copy).dwarf);

  // A copy cut short is never trusted: it is made again from the original.
  const uint64_t whole = fs::file_size(copy);
  fs::resize_file(copy, whole / 2);
  {
    Symbolizer again(&cache);
    EXPECT_EQ(again.resolve(lib, last), last_frames) << "from the original, not the damaged copy";
  }
  EXPECT_EQ(fs::file_size(copy), whole) << "made again";

  fs::remove(modules / "symfix_compressed.debug");
  Symbolizer without_cache;
  ASSERT_NE(without_cache.resolve(lib, last), last_frames) << "the original's DWARF is gone";
  Symbolizer warm(&cache);
  EXPECT_EQ(warm.resolve(lib, last), last_frames) << "read from the copy";
  EXPECT_EQ(warm.resolve(lib, first), first_frames);
  EXPECT_TRUE(cache.take_warnings().empty());
}

TEST_F(SymbolCacheTest, WritersOfOneEntryAddToIt) {
  const std::string id = build_id_of(kFixture);
  SymbolCache a(dir_.string()), b(dir_.string());
  CachedModule first, second;
  const std::vector<SourceFrame> one{SourceFrame{"one", "one.c", 1, false, true}};
  const std::vector<SourceFrame> two{SourceFrame{"two", "two.c", 2, true, true}, SourceFrame{"outer", "two.c", 9, false, true}};
  const std::vector<SourceFrame> three{SourceFrame{"three", "two.c", 30, false, true}};
  first.add_address(1, one);
  ASSERT_TRUE(first.add_range(0x100, 0x110, two));
  ASSERT_TRUE(first.add_range(0x110, 0x118, one));
  EXPECT_FALSE(first.add_range(0x108, 0x120, three)) << "overlaps";
  second.add_address(2, two);
  second.statements[2] = true;
  ASSERT_TRUE(second.add_range(0x200, 0x240, three));
  ASSERT_TRUE(second.add_range(0x100, 0x110, two));  // the same function, kept by both
  ASSERT_TRUE(a.store(id, first));
  ASSERT_TRUE(b.store(id, second));
  const CachedModule both = SymbolCache(dir_.string()).load(id);
  ASSERT_EQ(both.addresses.size(), 2u);
  ASSERT_EQ(both.ranges.size(), 3u);
  const auto answer = [&](uint64_t address) {
    std::vector<SourceFrame> found{SourceFrame{"(not kept)", "", 0, false, false}};
    both.find(address, &found);
    return found;
  };
  const std::vector<SourceFrame> not_kept{SourceFrame{"(not kept)", "", 0, false, false}};
  EXPECT_EQ(answer(1), one);
  EXPECT_EQ(answer(2), two);
  EXPECT_EQ(answer(0x100), two);
  EXPECT_EQ(answer(0x10f), two);
  EXPECT_EQ(answer(0x110), one);
  EXPECT_EQ(answer(0x117), one);
  EXPECT_EQ(answer(0x118), not_kept) << "past the ranges";
  EXPECT_EQ(answer(0x23f), three);
  EXPECT_EQ(answer(0x240), not_kept);
  EXPECT_EQ(both.strings.size(), 6u) << "each name and file once: one two outer three one.c two.c";
  EXPECT_TRUE(both.statements.at(2));
  // The entry read where it lies (as the symbolizer reads it) answers alike.
  SymbolCache reader(dir_.string());
  const CachedEntry entry = reader.open(id);
  ASSERT_FALSE(entry.empty());
  for (uint64_t address : {1, 2, 3, 0xff, 0x100, 0x10f, 0x110, 0x117, 0x118, 0x1ff, 0x200, 0x23f, 0x240}) {
    std::vector<SourceFrame> in_place{SourceFrame{"(not kept)", "", 0, false, false}};
    entry.find(address, &in_place);
    EXPECT_EQ(in_place, answer(address)) << std::hex << address;
  }
  EXPECT_EQ(entry.statement(2), std::optional<bool>(true));
  EXPECT_EQ(entry.statement(1), std::nullopt);
  EXPECT_TRUE(reader.take_warnings().empty());
  for (const auto& e : fs::directory_iterator(dir_ / "symbols-v1"))
    EXPECT_EQ(e.path().extension(), ".hps") << "no temporary file left: " << e.path();
}

TEST_F(SymbolCacheTest, ADamagedEntryIsRebuiltNeverTrusted) {
  SymbolCache cache(dir_.string());
  {
    Symbolizer s(&cache);
    resolve_all(s);
    s.save();
  }
  const std::string path = entry();
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 64u);
  for (const bool truncate : {false, true}) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      std::string damaged = bytes;
      if (truncate)
        damaged.resize(damaged.size() / 2);
      else
        damaged[damaged.size() / 2] ^= 0x20;  // one flipped bit in a name
      out << damaged;
    }
    Symbolizer plain, s(&cache);
    EXPECT_EQ(resolve_all(s), resolve_all(plain)) << (truncate ? "truncated" : "flipped");
    EXPECT_EQ(s.cache_use().modules_read, 1u) << "the damaged entry answered nothing";
    const auto warnings = cache.take_warnings();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("damaged"), std::string::npos) << warnings[0];
    EXPECT_FALSE(fs::exists(path)) << "removed";
    s.save();  // rebuilt
    Symbolizer again(&cache);
    EXPECT_EQ(resolve_all(again), resolve_all(plain));
    EXPECT_EQ(again.cache_use().modules_read, 0u);
  }
}

// An older hybridprof's entry (another format, whose checksum may be
// reckoned otherwise too) is a miss, not damage: no warning, and the next
// store writes the entry anew.
TEST_F(SymbolCacheTest, AnEntryOfAnotherFormatIsAQuietMiss) {
  fs::create_directories(dir_ / "symbols-v1");
  {
    std::ofstream out(entry(), std::ios::binary);
    out.write("HPSYMC\0\1", 8);
    const uint32_t older = hybridprof::symbolizer::kSymbolCacheFormat - 1;
    out.write(reinterpret_cast<const char*>(&older), 4);
    out << std::string(64, 'x');
  }
  SymbolCache cache(dir_.string());
  Symbolizer plain, s(&cache);
  EXPECT_EQ(resolve_all(s), resolve_all(plain));
  EXPECT_EQ(s.cache_use().modules_read, 1u);
  EXPECT_TRUE(cache.take_warnings().empty()) << "not damage";
  s.save();
  Symbolizer again(&cache);
  EXPECT_EQ(resolve_all(again), resolve_all(plain));
  EXPECT_EQ(again.cache_use().modules_read, 0u) << "written anew in this format";
}

TEST_F(SymbolCacheTest, AnUnwritableCacheIsSaidOnceAndTheNamesAreStillRight) {
  fs::create_directories(dir_);
  { std::ofstream(dir_ / "symbols-v1") << "a file where the directory goes"; }
  SymbolCache cache(dir_.string());
  Symbolizer plain, s(&cache);
  EXPECT_EQ(s.resolve(kFixture, first_), plain.resolve(kFixture, first_));
  EXPECT_EQ(s.resolve(SYMFIX_COPIES_DIR "/symfix_strip_debug.so", first_),
            plain.resolve(SYMFIX_COPIES_DIR "/symfix_strip_debug.so", first_));
  s.save();
  const auto warnings = cache.take_warnings();
  ASSERT_EQ(warnings.size(), 1u) << "one warning for two libraries";
  EXPECT_NE(warnings[0].find("cannot write"), std::string::npos) << warnings[0];
}

TEST_F(SymbolCacheTest, TheDirectoryStaysUnderItsBoundLeastRecentlyUsedFirst) {
  CachedModule m;
  for (uint64_t a = 0; a < 10; ++a) m.add_address(a, {SourceFrame{std::string(40, 'f'), "file.c", 1, false, true}});
  // Bound to three and a half entries: the fourth store passes it, and
  // trimming goes down to three quarters of it (two entries).
  ASSERT_TRUE(SymbolCache((dir_ / "probe").string()).store("aa", m));
  const uint64_t entry_bytes = fs::file_size(dir_ / "probe/symbols-v1/aa.hps");
  const uint64_t bound = entry_bytes * 7 / 2;
  SymbolCache cache(dir_.string(), bound);
  for (const char* id : {"aa", "bb", "cc"}) ASSERT_TRUE(cache.store(id, m));
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(dir_ / "symbols-v1/aa.hps", old - std::chrono::minutes(1));
  fs::last_write_time(dir_ / "symbols-v1/bb.hps", old);
  fs::last_write_time(dir_ / "symbols-v1/cc.hps", old);
  EXPECT_FALSE(cache.load("bb").empty());  // used now
  ASSERT_TRUE(cache.store("dd", m));
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "symbols-v1")) total += e.file_size();
  EXPECT_LE(total, bound / 4 * 3);
  EXPECT_FALSE(fs::exists(dir_ / "symbols-v1/aa.hps")) << "the least recently used goes first";
  EXPECT_TRUE(fs::exists(dir_ / "symbols-v1/bb.hps")) << "read just now";
  EXPECT_TRUE(fs::exists(dir_ / "symbols-v1/dd.hps")) << "written just now";
}

}  // namespace
