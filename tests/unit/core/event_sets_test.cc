// The process's numbering of event kinds: each adapter's set gets its own
// block, the same name gets the same block, and the numbering is bounded
// by the 8 bits a region record carries a kind in.
#include "trace/event_sets.h"

#include <gtest/gtest.h>

#include <string>

namespace hybridprof {
namespace {

TEST(EventSets, SetsGetDisjointBlocksAndKeepThem) {
  const size_t before = registered_event_set_count();
  const uint32_t a = register_event_set("sets-test-a", 3);
  const uint32_t b = register_event_set("sets-test-b", 5);
  ASSERT_NE(a, kNoEventSet);
  ASSERT_NE(b, kNoEventSet);
  EXPECT_EQ(b, a + 3) << "blocks follow each other";
  EXPECT_EQ(register_event_set("sets-test-a", 3), a) << "the same set again: the same block";
  EXPECT_EQ(register_event_set("sets-test-a", 4), kNoEventSet) << "the same name with other kinds";
  EXPECT_EQ(register_event_set("", 1), kNoEventSet);
  EXPECT_EQ(register_event_set("sets-test-c", 0), kNoEventSet);
  EXPECT_EQ(register_event_set(std::string(kMaxEventSetName + 1, 'x'), 1), kNoEventSet);
  EXPECT_EQ(register_event_set("sets-test-huge", kMaxEventKinds), kNoEventSet) << "beyond 8 bits of kinds";
  ASSERT_EQ(registered_event_set_count(), before + 2);
  const auto sets = registered_event_sets();
  EXPECT_EQ(sets[before].name, "sets-test-a");
  EXPECT_EQ(sets[before].base, a);
  EXPECT_EQ(sets[before].kinds, 3u);
  EXPECT_EQ(sets[before + 1].name, "sets-test-b");
  EXPECT_EQ(sets[before + 1].base, b);
}

}  // namespace
}  // namespace hybridprof
