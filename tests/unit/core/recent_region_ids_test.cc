// A thread's cache of region ids: a loop over a program's constructs (a
// hundred OpenMP constructs and their waits, as in LULESH) finds nearly all
// of them without the table's lock after the first round, always with the
// id the table gave, and nothing of a stream that is no longer written.
#include "trace/stream_region_table.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace hybridprof {
namespace {

TEST(RecentRegionIds, AHundredConstructsInALoopAreFoundWithoutTheTable) {
  RecentRegionIds<uint64_t, 128> cache;  // as the OpenMP adapter's
  std::map<uint64_t, uint32_t> table;  // the ids the table hands out
  size_t look_ups = 0;
  auto id_of = [&](uint64_t key, uint64_t stream) {
    return cache.id(key, stream, [&] {
      ++look_ups;
      auto [it, fresh] = table.emplace(key, uint32_t(table.size() + 1));
      return it->second;
    });
  };
  // Keys as the OpenMP adapter makes them: code address << 6 | kind, the
  // constructs 0x40-0x400 bytes apart in one function after another.
  std::vector<uint64_t> keys;
  uint64_t code = 0x401000;
  for (int i = 0; i < 100; ++i) {
    code += 0x40 + (i * 0x97) % 0x3c0;
    keys.push_back(code << 6 | uint64_t(i % 3));
  }
  for (uint64_t k : keys) {
    const uint32_t id = id_of(k, 1);
    ASSERT_EQ(id, table.at(k));
  }
  ASSERT_EQ(look_ups, keys.size());
  look_ups = 0;
  for (int round = 0; round < 100; ++round)
    for (uint64_t k : keys) {
      const uint32_t id = id_of(k, 1);
      ASSERT_EQ(id, table.at(k));
    }
  EXPECT_LT(look_ups, 100u * keys.size() / 20) << "more than 5% of the loop's lookups went to the table";
  // A new stream: every key is looked up again (its definition is new there).
  look_ups = 0;
  for (uint64_t k : keys) id_of(k, 2);
  EXPECT_EQ(look_ups, keys.size());
}

}  // namespace
}  // namespace hybridprof
