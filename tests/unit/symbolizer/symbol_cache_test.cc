// The symbol cache: answers equal the symbolizer's own, a second symbolizer
// opens nothing, entries from two writers merge, a damaged entry is
// rebuilt (never trusted), and the directory stays under its bound.
#include "symbolizer/symbol_cache.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "symbolizer/symbolizer.h"

namespace {

namespace fs = std::filesystem;
using hybridprof::symbolizer::build_id_of;
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
  // An address no run asked about opens the module, and is right.
  Symbolizer later(&cache);
  EXPECT_EQ(later.resolve(kFixture, last_ + 1), plain.resolve(kFixture, last_ + 1));
  EXPECT_EQ(later.cache_use().modules_read, 1u);
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
  EXPECT_TRUE(stored.frames.empty()) << "no single addresses";
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

TEST_F(SymbolCacheTest, WritersOfOneEntryAddToIt) {
  const std::string id = build_id_of(kFixture);
  SymbolCache a(dir_.string()), b(dir_.string());
  CachedModule first, second;
  first.frames[1] = {SourceFrame{"one", "one.c", 1, false, true}};
  second.frames[2] = {SourceFrame{"two", "two.c", 2, true, true}, SourceFrame{"outer", "two.c", 9, false, true}};
  second.statements[2] = true;
  ASSERT_TRUE(a.store(id, first));
  ASSERT_TRUE(b.store(id, second));
  const CachedModule both = SymbolCache(dir_.string()).load(id);
  ASSERT_EQ(both.frames.size(), 2u);
  EXPECT_EQ(both.frames.at(1), first.frames.at(1));
  EXPECT_EQ(both.frames.at(2), second.frames.at(2));
  EXPECT_TRUE(both.statements.at(2));
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
  SymbolCache cache(dir_.string(), 2600);
  CachedModule m;
  for (uint64_t a = 0; a < 10; ++a) m.frames[a] = {SourceFrame{std::string(40, 'f'), "file.c", 1, false, true}};
  // Each entry is 752 bytes: the fourth store passes the bound, and trimming
  // goes down to three quarters of it (two entries).
  for (const char* id : {"aa", "bb", "cc"}) ASSERT_TRUE(cache.store(id, m));
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(dir_ / "symbols-v1/aa.hps", old - std::chrono::minutes(1));
  fs::last_write_time(dir_ / "symbols-v1/bb.hps", old);
  fs::last_write_time(dir_ / "symbols-v1/cc.hps", old);
  EXPECT_FALSE(cache.load("bb").empty());  // used now
  ASSERT_TRUE(cache.store("dd", m));
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "symbols-v1")) total += e.file_size();
  EXPECT_LE(total, 2600u / 4 * 3);
  EXPECT_FALSE(fs::exists(dir_ / "symbols-v1/aa.hps")) << "the least recently used goes first";
  EXPECT_TRUE(fs::exists(dir_ / "symbols-v1/bb.hps")) << "read just now";
  EXPECT_TRUE(fs::exists(dir_ / "symbols-v1/dd.hps")) << "written just now";
}

}  // namespace
