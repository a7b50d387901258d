// The perf map reader on hand-written lines: every range and name is known.
#include "symbolizer/perf_map.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace {

using hybridprof::symbolizer::PerfMap;

std::string name_at(const PerfMap& map, uint64_t address) {
  const std::string* name = map.find(address);
  return name ? *name : "(none)";
}

TEST(PerfMap, ReadsHexWithAndWithoutPrefix) {
  PerfMap map;
  EXPECT_TRUE(map.add_line("7fb045813000 abb _jit_avx512_common_conv_fwd_kernel"));
  EXPECT_TRUE(map.add_line("0x1000 0x10 with_prefix\n"));
  EXPECT_TRUE(map.add_line("0X2000 0XA0 upper_case_prefix"));
  EXPECT_EQ(name_at(map, 0x7fb045813000), "_jit_avx512_common_conv_fwd_kernel");
  EXPECT_EQ(name_at(map, 0x7fb045813000 + 0xabb - 1), "_jit_avx512_common_conv_fwd_kernel");
  EXPECT_EQ(name_at(map, 0x1008), "with_prefix");
  EXPECT_EQ(name_at(map, 0x2000 + 0x9f), "upper_case_prefix");
  EXPECT_EQ(map.ranges(), 3u);
  EXPECT_EQ(map.malformed_lines(), 0u);
}

TEST(PerfMap, TheNameIsTheRestOfTheLine) {
  PerfMap map;
  ASSERT_TRUE(map.add_line("5000 100 py::train:/src/model.py"));
  ASSERT_TRUE(map.add_line("6000\t100\tLazyCompile:*loop /app/main.js:12\r\n"));
  ASSERT_TRUE(map.add_line("7000 100 void Foo<int, char>::bar()  "));
  EXPECT_EQ(name_at(map, 0x5000), "py::train:/src/model.py");
  EXPECT_EQ(name_at(map, 0x6000), "LazyCompile:*loop /app/main.js:12") << "spaces kept, line end dropped";
  EXPECT_EQ(name_at(map, 0x7000), "void Foo<int, char>::bar()") << "trailing blanks dropped";
}

TEST(PerfMap, ARangeHoldsItsStartAndNotItsEnd) {
  PerfMap map;
  map.add_line("1000 100 kernel");
  EXPECT_EQ(name_at(map, 0x1000), "kernel") << "range start";
  EXPECT_EQ(name_at(map, 0x1080), "kernel") << "inside";
  EXPECT_EQ(name_at(map, 0x10ff), "kernel") << "last byte";
  EXPECT_EQ(name_at(map, 0x1100), "(none)") << "one past the end";
  EXPECT_EQ(name_at(map, 0xfff), "(none)") << "just before";
  EXPECT_EQ(name_at(map, 0), "(none)");
  EXPECT_EQ(name_at(map, UINT64_MAX), "(none)");
}

TEST(PerfMap, LaterLinesWinWhereRangesOverlap) {
  PerfMap map;
  map.add_line("1000 1000 old_big");      // [0x1000, 0x2000)
  map.add_line("1800 100 new_inside");    // splits old_big in two
  map.add_line("1f00 200 new_across_end");  // cuts old_big's tail, reaches beyond
  map.add_line("3000 100 a");
  map.add_line("3100 100 b");
  map.add_line("2f80 300 covers_a_and_b");  // [0x2f80, 0x3280): a and b gone
  map.add_line("4000 100 reused");
  map.add_line("4000 100 reused_again");    // the same range, generated anew
  EXPECT_EQ(name_at(map, 0x1000), "old_big");
  EXPECT_EQ(name_at(map, 0x17ff), "old_big");
  EXPECT_EQ(name_at(map, 0x1800), "new_inside");
  EXPECT_EQ(name_at(map, 0x18ff), "new_inside");
  EXPECT_EQ(name_at(map, 0x1900), "old_big") << "the old range's tail after the new one";
  EXPECT_EQ(name_at(map, 0x1eff), "old_big");
  EXPECT_EQ(name_at(map, 0x1f00), "new_across_end");
  EXPECT_EQ(name_at(map, 0x20ff), "new_across_end");
  EXPECT_EQ(name_at(map, 0x2100), "(none)");
  EXPECT_EQ(name_at(map, 0x3000), "covers_a_and_b");
  EXPECT_EQ(name_at(map, 0x3150), "covers_a_and_b");
  EXPECT_EQ(name_at(map, 0x327f), "covers_a_and_b");
  EXPECT_EQ(name_at(map, 0x3280), "(none)");
  EXPECT_EQ(name_at(map, 0x4000), "reused_again");
  EXPECT_EQ(map.ranges(), 6u) << "old_big head, new_inside, old_big tail, new_across_end, covers_a_and_b, reused_again";
}

TEST(PerfMap, AnEarlierRangeInsideALaterOneKeepsNoPart) {
  PerfMap map;
  map.add_line("1000 10 small");
  map.add_line("f00 200 big");
  EXPECT_EQ(name_at(map, 0x1000), "big");
  EXPECT_EQ(name_at(map, 0x1008), "big");
  EXPECT_EQ(map.ranges(), 1u);
}

TEST(PerfMap, MalformedLinesAreSkippedAndCounted) {
  std::istringstream in(
      "1000 100 good_one\n"
      "\n"                           // blank: not an error
      "zzzz 100 not_hex\n"
      "2000 100\n"                   // no name
      "2000\n"                       // no size
      "3000 1g0 bad_size\n"
      "0x 100 empty_number\n"
      "10000000000000000 10 beyond_64_bits\n"
      "ffffffffffffff00 200 wraps_around\n"
      "4000 0 empty_range\n"         // names nothing, not an error
      "5000 100 good_two");          // no newline at the end
  PerfMap map;
  map.read(in);
  EXPECT_EQ(map.malformed_lines(), 7u);
  EXPECT_EQ(map.ranges(), 2u);
  EXPECT_EQ(name_at(map, 0x1000), "good_one");
  EXPECT_EQ(name_at(map, 0x5000), "good_two");
  EXPECT_EQ(name_at(map, 0x4000), "(none)");
}

TEST(PerfMap, NamesAreKeptOnceEach) {
  PerfMap map;
  for (uint64_t i = 0; i < 1000; ++i) map.add(0x10000 + i * 0x100, 0x80, "regenerated_kernel");
  EXPECT_EQ(map.ranges(), 1000u);
  EXPECT_EQ(map.find(0x10000), map.find(0x10000 + 999 * 0x100)) << "one string for every copy";
}

TEST(PerfMap, LoadsAFileAndReportsAMissingOne) {
  const std::string path = ::testing::TempDir() + "/perf_map_test-" + std::to_string(getpid()) + ".map";
  {
    std::ofstream out(path);
    out << "7f0000001000 40 first\n7f0000002000 40 second name\n";
  }
  PerfMap map;
  ASSERT_TRUE(map.load(path));
  EXPECT_EQ(name_at(map, 0x7f0000002010), "second name");
  std::remove(path.c_str());
  PerfMap missing;
  EXPECT_FALSE(missing.load(path));
  EXPECT_EQ(missing.ranges(), 0u);
}

}  // namespace
