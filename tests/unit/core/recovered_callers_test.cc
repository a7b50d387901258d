#include "unwind/recovered_callers.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace hybridprof {
namespace {

// A stack of words standing for a thread's: return addresses in slots.
struct FakeStack {
  std::vector<uint64_t> words = std::vector<uint64_t>(64, 0);
  uint64_t at(size_t i) const { return reinterpret_cast<uint64_t>(&words[i]); }
  StackBounds bounds() const { return {at(0), at(0) + words.size() * 8}; }
};

// A recovery's callers, remembered with their slots, are recalled for the
// frame they were found for while each slot holds its return address; a
// frame in another place, a changed slot, or no room forgets nothing but
// recalls nothing.
TEST(RecoveredCallers, AreRecalledWhileEverySlotStillHoldsItsReturnAddress) {
  FakeStack stack;
  const uint64_t callers[] = {0x401000, 0x402000, 0x403000};
  const size_t slots[] = {10, 20, 30};
  static RecoveredCallers remembered;  // 4 KiB: not on the test's stack
  for (uint32_t i = 0; i < 3; ++i) {
    stack.words[slots[i]] = callers[i];
    *remembered.slot_for(i) = stack.at(slots[i]);
  }
  // ips[0] is the broken frame; the recovery appended the callers after it.
  uint64_t ips[8] = {0x7000, callers[0], callers[1], callers[2]};
  const uint64_t sp = stack.at(4);
  remembered.remember(sp, ips, 1, 4, stack.bounds());

  uint64_t again[8] = {0x7010};
  EXPECT_EQ(remembered.recall(sp, stack.bounds(), again, 1, 8), 4u);
  EXPECT_EQ(std::vector<uint64_t>(again + 1, again + 4), std::vector<uint64_t>(callers, callers + 3));
  EXPECT_EQ(remembered.recall(stack.at(6), stack.bounds(), again, 1, 8), 0u) << "a frame in another place";
  EXPECT_EQ(remembered.recall(sp, stack.bounds(), again, 6, 8), 0u) << "no room for them";
  stack.words[20] = 0x402004;  // another call in the middle frame's place
  EXPECT_EQ(remembered.recall(sp, stack.bounds(), again, 1, 8), 0u);
  stack.words[20] = callers[1];
  EXPECT_EQ(remembered.recall(sp, stack.bounds(), again, 1, 8), 4u);
}

// A frame whose return address is not in the slot the walk noted (a
// signal frame's) is not remembered: the recovery is walked again.
TEST(RecoveredCallers, ARecoveryWhoseSlotsDoNotHoldItsFramesIsNotRemembered) {
  FakeStack stack;
  static RecoveredCallers remembered;
  stack.words[10] = 0x401000;
  *remembered.slot_for(0) = stack.at(10);
  *remembered.slot_for(1) = stack.at(20);  // holds 0, not the frame's address
  const uint64_t ips[] = {0x7000, 0x401000, 0x402000};
  remembered.remember(stack.at(4), ips, 1, 3, stack.bounds());
  uint64_t again[4] = {0x7000};
  EXPECT_EQ(remembered.recall(stack.at(4), stack.bounds(), again, 1, 4), 0u);
}

}  // namespace
}  // namespace hybridprof
