// The symbol cache end to end: a run stores what it named; writing the
// archive again from the same raw data names every library from the cache,
// with names identical to the first; a damaged entry is rebuilt with a
// warning; --no-symbol-cache neither reads nor writes it.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <regex>
#include <tuple>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

namespace fs = std::filesystem;

class SymbolCache : public IntegrationTest {
 protected:
  // A cache of this test's own (the programs and tools inherit it).
  void SetUp() override {
    outer_ = std::getenv("XDG_CACHE_HOME") ? std::getenv("XDG_CACHE_HOME") : "";
    setenv("XDG_CACHE_HOME", (scratch / "cache").c_str(), 1);
  }
  void TearDown() override { setenv("XDG_CACHE_HOME", outer_.c_str(), 1); }
  std::string outer_;

  // Every region of the archive: name, file, line, module.
  static std::set<std::tuple<std::string, std::string, uint32_t, std::string>> regions(const std::string& dir) {
    std::set<std::tuple<std::string, std::string, uint32_t, std::string>> out;
    const otf2::ArchiveReader reader(dir);
    for (const auto& [ref, r] : reader.archive().regions) out.insert({r.name, r.file, r.line, r.module});
    return out;
  }
  // The cache's entries.
  static std::vector<fs::path> entries() {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(std::string(std::getenv("XDG_CACHE_HOME")) + "/hybridprof/symbols-v1", ec))
      out.push_back(e.path());
    return out;
  }
  RunResult merge(const std::string& dir, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{merge_tool(), "--force"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(dir);
    return run(argv);
  }
};

TEST_F(SymbolCache, ASecondArchiveOfTheSameDataNamesEveryLibraryFromTheCache) {
  const std::string d = scratch / "D";
  const RunResult first = profile({"-o", d}, {fixture("split_workload"), "2", "0.3"});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  EXPECT_NE(first.err.find("symbol cache: 0 libraries named from it"), std::string::npos) << "a cold cache: " << first.err;
  EXPECT_TRUE(std::regex_search(first.err, std::regex("read; naming took [0-9]+ ms"))) << first.err;
  ASSERT_FALSE(entries().empty()) << "the run stored what it named";
  const auto names = regions(d);

  const RunResult again = merge(d);
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(again.out, m, std::regex("symbol cache: ([0-9]+) libraries named from it, ([0-9]+) read")))
      << again.out;
  EXPECT_EQ(m[2], "0") << "every library from the cache";
  EXPECT_GE(std::stoi(m[1]), 2) << "the program and libc at least";
  EXPECT_EQ(regions(d), names);

  // A damaged entry: rebuilt, with a warning, and the names still right.
  const auto all = entries();
  for (const auto& path : all) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('\x7f');
  }
  const RunResult damaged = merge(d);
  ASSERT_EQ(damaged.exit_code, 0) << damaged.describe();
  EXPECT_NE(damaged.err.find("was damaged and is rebuilt"), std::string::npos) << damaged.err;
  EXPECT_NE(damaged.out.find("symbol cache: 0 libraries named from it"), std::string::npos) << damaged.out;
  EXPECT_EQ(regions(d), names);
  const RunResult rebuilt = merge(d);
  EXPECT_EQ(rebuilt.out.find("symbol cache: 0 libraries"), std::string::npos) << rebuilt.describe();
  EXPECT_NE(rebuilt.out.find("libraries named from it, 0 read"), std::string::npos) << rebuilt.describe();
  EXPECT_EQ(rebuilt.err.find("damaged"), std::string::npos) << rebuilt.err;
}

TEST_F(SymbolCache, NoSymbolCacheNeitherReadsNorWritesIt) {
  const std::string d = scratch / "D";
  const RunResult r = profile({"--no-symbol-cache", "-o", d}, {fixture("split_workload"), "1", "0.2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(entries().empty());
  const auto names = regions(d);
  ASSERT_EQ(merge(d).exit_code, 0);  // fills it
  ASSERT_FALSE(entries().empty());
  const RunResult bypassed = merge(d, {"--no-symbol-cache"});
  ASSERT_EQ(bypassed.exit_code, 0) << bypassed.describe();
  EXPECT_EQ(bypassed.out.find("symbol cache:"), std::string::npos) << bypassed.out;
  EXPECT_EQ(regions(d), names);
}

}  // namespace
}  // namespace hybridprof::integration
