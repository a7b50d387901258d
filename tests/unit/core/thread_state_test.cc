#include "trace/thread_state.h"

#include <gtest/gtest.h>

#include <vector>

namespace hybridprof {
namespace {

void fill(ThreadRing& ring, size_t bytes) {
  for (size_t done = 0; done < bytes; done += 64) {
    ASSERT_NE(ring.reserve_exclusive(64, 1), nullptr);
    ring.commit_exclusive();
  }
}

// A thread asks the drain for an early pass once its ring is a quarter
// full, or when told it is urgent; never twice within a millisecond.
TEST(ThreadState, AsksForAnEarlyDrainAtAQuarterFullAtMostOnceAMillisecond) {
  constexpr size_t kRing = 64 * 1024;
  std::vector<unsigned char> storage(ThreadState::storage_bytes(kRing) + 64);
  ThreadState t(storage.data(), kRing);
  const uint64_t ms = ThreadState::kEarlyDrainIntervalNs;
  uint64_t now = 10 * ms;
  fill(t.ring, kRing / 4);
  EXPECT_FALSE(t.wants_early_drain(now)) << "exactly a quarter";
  fill(t.ring, 64);
  EXPECT_TRUE(t.wants_early_drain(now));
  EXPECT_FALSE(t.wants_early_drain(now + ms / 2)) << "asked half a millisecond ago";
  EXPECT_FALSE(t.wants_early_drain(now + ms / 2, true)) << "urgent, but asked half a millisecond ago";
  EXPECT_TRUE(t.wants_early_drain(now + 2 * ms));
  t.ring.consume([](const RecordHeader&) {});
  now += 10 * ms;
  EXPECT_FALSE(t.wants_early_drain(now)) << "empty";
  EXPECT_TRUE(t.wants_early_drain(now, true)) << "urgent";
}

}  // namespace
}  // namespace hybridprof
