// PythonStackMemo: a pair of native and Python stacks is numbered once and
// known by its number after; any difference in either is another stack;
// the numbering is the thread's CallerStackCache's, and its new epoch
// makes every remembered pair new again.
#include "trace/python_stack_memo.h"

#include <gtest/gtest.h>

#include <vector>

namespace hybridprof {
namespace {

struct Stacks {
  std::vector<uint64_t> ips{0x401000, 0x402000, 0x403000};
  std::vector<python::PythonFrame> frames = std::vector<python::PythonFrame>(2);
  Stacks() {
    frames[0].code = 0x7000, frames[0].byte_offset = 10, frames[0].qualname = 0x100;
    frames[1].code = 0x8000, frames[1].byte_offset = 4, frames[1].qualname = 0x200;
  }
};

CallerStackCache::Ref add(PythonStackMemo& memo, const Stacks& s, CallerStackCache& numbers, uint32_t native = 0) {
  return memo.find_or_add(native, s.ips.data(), uint32_t(s.ips.size()), s.frames.data(), uint32_t(s.frames.size()),
                          numbers);
}

TEST(PythonStackMemo, APairIsNumberedOnceAndKnownAfter) {
  CallerStackCache numbers(64);
  PythonStackMemo memo;
  const Stacks s;
  const CallerStackCache::Ref first = add(memo, s, numbers);
  EXPECT_TRUE(first.stored);
  EXPECT_NE(first.generation, 0u);
  for (int i = 0; i < 3; ++i) {
    const CallerStackCache::Ref again = add(memo, s, numbers);
    EXPECT_FALSE(again.stored);
    EXPECT_EQ(again.generation, first.generation);
    EXPECT_EQ(again.slot, first.generation % CallerStackCache::kEntries);
  }
}

TEST(PythonStackMemo, AnyDifferenceIsAnotherStack) {
  CallerStackCache numbers(64);
  PythonStackMemo memo;
  const Stacks base;
  const uint32_t g = add(memo, base, numbers).generation;
  std::vector<Stacks> others(6);
  others[0].ips[1] = 0x402004;            // another native caller
  others[1].ips.pop_back();               // a shorter native stack
  others[2].frames[0].byte_offset = 12;   // another line of the same function
  others[3].frames[1].code = 0x9000;      // another function below
  others[4].frames[0].qualname = 0x300;   // a code object made again at the same address
  others[5].frames.pop_back();            // a shallower Python stack
  for (size_t i = 0; i < others.size(); ++i) {
    const CallerStackCache::Ref r = add(memo, others[i], numbers);
    EXPECT_TRUE(r.stored) << i;
    EXPECT_NE(r.generation, g) << i;
  }
  EXPECT_FALSE(add(memo, base, numbers).stored) << "the first pair is still known";
}

// Where the cache that captured the native stack remembered it, its number
// stands for its addresses (hashing hundreds of them at every call cost
// more than the rest of the lookup); a number of that cache's next epoch
// may name another stack, so a new native epoch forgets every pair.
TEST(PythonStackMemo, ANativeStackIsKnownByItsNumberWhereItHasOne) {
  CallerStackCache numbers(64);
  PythonStackMemo memo;
  const Stacks s;
  const uint32_t native = 1u << CallerStackCache::kEpochShift | 5;
  const CallerStackCache::Ref first = add(memo, s, numbers, native);
  EXPECT_TRUE(first.stored);
  EXPECT_FALSE(add(memo, s, numbers, native).stored);
  EXPECT_EQ(add(memo, s, numbers, native).generation, first.generation);
  EXPECT_TRUE(add(memo, s, numbers, native + 1).stored) << "another native stack";
  EXPECT_TRUE(add(memo, s, numbers).stored) << "the same addresses without a number: keyed apart";
  Stacks other_python = s;
  other_python.frames[0].byte_offset = 12;
  EXPECT_TRUE(add(memo, other_python, numbers, native).stored) << "another Python stack above it";
  const uint32_t next_epoch = 2u << CallerStackCache::kEpochShift | 5;
  EXPECT_TRUE(add(memo, s, numbers, next_epoch).stored);
  EXPECT_TRUE(add(memo, s, numbers, native).stored) << "forgotten with the epoch it was numbered in";
}

TEST(PythonStackMemo, ANewEpochMakesEveryPairNewAgain) {
  CallerStackCache numbers(64);
  PythonStackMemo memo;
  const Stacks s;
  const uint32_t g = add(memo, s, numbers).generation;
  // Hand out the rest of the epoch: the cache starts a new one.
  while (CallerStackCache::epoch_of(numbers.hand_out().generation) == CallerStackCache::epoch_of(g)) {
  }
  const CallerStackCache::Ref r = add(memo, s, numbers);
  EXPECT_TRUE(r.stored);
  EXPECT_NE(CallerStackCache::epoch_of(r.generation), CallerStackCache::epoch_of(g));
}

}  // namespace
}  // namespace hybridprof
