// The request table against a plain model: entries inserted and taken in
// random order (many handles sharing a probe run, handles held several
// times at once, the table growing and wrapping around) are found exactly
// while they are held, a shared handle's oldest first.
#include "mpi/request_table.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <vector>

namespace hybridprof::mpi {
namespace {

using Key = RequestTable<uint64_t>::Key;

Key handle(uint64_t n) { return reinterpret_cast<Key>(uintptr_t{0x10000} + 16 * n); }

TEST(RequestTable, AgreesWithAModelUnderRandomInsertsAndTakes) {
  RequestTable<uint64_t> table;
  std::map<Key, std::deque<uint64_t>> model;  // each handle's values, oldest first
  std::mt19937_64 random(42);
  uint64_t next_value = 1;
  size_t held = 0, peak = 0;
  for (int step = 0; step < 200000; ++step) {
    // Few handles at first (long shared runs), then thousands (growth).
    const uint64_t handles = step < 50000 ? 8 : 4000;
    const Key key = handle(random() % handles);
    if (random() % 100 < 52) {
      table.insert(key, next_value);
      model[key].push_back(next_value++);
      peak = std::max(peak, ++held);
      continue;
    }
    uint64_t taken = 0;
    const bool found = table.with_oldest(key, [&](uint64_t& v) {
      taken = v;
      return true;
    });
    auto it = model.find(key);
    const bool expected = it != model.end() && !it->second.empty();
    ASSERT_EQ(found, expected) << "step " << step;
    if (!expected) continue;
    ASSERT_EQ(taken, it->second.front()) << "step " << step << ": the oldest entry of a handle comes first";
    it->second.pop_front();
    --held;
  }
  EXPECT_EQ(table.size(), held);
  EXPECT_GT(peak, 1024u) << "the table grew past its first size";
  // Everything still held is still found, in order.
  for (auto& [key, values] : model) {
    for (uint64_t v : values) {
      uint64_t taken = 0;
      ASSERT_TRUE(table.with_oldest(key, [&](uint64_t& x) {
        taken = x;
        return true;
      }));
      ASSERT_EQ(taken, v);
    }
    EXPECT_FALSE(table.with_oldest(key, [](uint64_t&) { return true; }));
  }
  EXPECT_EQ(table.size(), 0u);
}

TEST(RequestTable, AnEntryKeptByItsCallbackStaysAndCanChange) {
  RequestTable<uint64_t> table;
  table.insert(handle(1), 5);
  EXPECT_TRUE(table.with_oldest(handle(1), [](uint64_t& v) {
    v = 6;  // a persistent request between its completion and its next start
    return false;
  }));
  uint64_t seen = 0;
  EXPECT_TRUE(table.with_oldest(handle(1), [&](uint64_t& v) {
    seen = v;
    return true;
  }));
  EXPECT_EQ(seen, 6u);
  EXPECT_FALSE(table.with_oldest(handle(1), [](uint64_t&) { return true; }));
  EXPECT_FALSE(table.with_oldest(handle(2), [](uint64_t&) { return true; })) << "never inserted";
}

// A Waitall's handles taken under one lock: each in turn, as with_oldest
// would one by one (a handle held twice gives its oldest, then the next),
// those with nothing reported missing, an entry kept by fn left in place.
TEST(RequestTable, ManyHandlesAreTakenInTurnUnderOneLock) {
  RequestTable<uint64_t> table;
  table.insert(handle(1), 10);
  table.insert(handle(2), 20);
  table.insert(handle(1), 11);  // the same handle again (an eager send's shared one)
  table.insert(handle(3), 30);
  const Key keys[] = {handle(1), handle(4), handle(1), handle(2), handle(1), handle(3)};
  std::vector<uint64_t> taken(6, 0);
  std::vector<bool> missing(6, false);
  table.with_oldest_each(
      keys, 6,
      [&](size_t i, uint64_t& v) {
        taken[i] = v;
        return v != 30;  // 30 stays (a persistent request)
      },
      [&](size_t i) { missing[i] = true; });
  EXPECT_EQ(taken, (std::vector<uint64_t>{10, 0, 11, 20, 0, 30}));
  EXPECT_EQ(missing, (std::vector<bool>{false, true, false, false, true, false}));
  EXPECT_EQ(table.size(), 1u);
  uint64_t left = 0;
  EXPECT_TRUE(table.with_oldest(handle(3), [&](uint64_t& v) {
    left = v;
    return true;
  }));
  EXPECT_EQ(left, 30u);
}

}  // namespace
}  // namespace hybridprof::mpi
