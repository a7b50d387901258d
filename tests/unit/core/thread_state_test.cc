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

namespace hybridprof {
namespace {
int g_recorded = 0;
uint32_t g_recorded_weight = 0;
bool g_recorded_outside = false;
void record(ThreadState& t) {
  ++g_recorded;
  g_recorded_weight += t.sampled.deferred_weight.exchange(0);
  g_recorded_outside = !sigsafe::inside(sigsafe::Section::kRuntime);
}
}  // namespace

// The one reentrancy guard: a sample deferred inside nested runtime
// sections is recorded once, when the outermost ends, outside it.
TEST(ThreadState, DeferredSamplesAreRecordedWhenTheOutermostRuntimeSectionEnds) {
  std::vector<unsigned char> storage(ThreadState::storage_bytes(4096));
  ThreadState t(storage.data(), 4096);
  t.sampled.record_deferred = record;
  g_recorded = 0;
  EXPECT_FALSE(sigsafe::inside(sigsafe::Section::kRuntime));
  {
    BusyScope outer(&t);
    EXPECT_TRUE(sigsafe::inside(sigsafe::Section::kRuntime));
    {
      BusyScope inner(&t);
      t.sampled.deferred_weight.store(3);  // what the sample handler does when it finds the section open
    }
    EXPECT_EQ(g_recorded, 0) << "an inner section's end records nothing";
    EXPECT_TRUE(sigsafe::inside(sigsafe::Section::kRuntime));
    {
      BusyScope none(nullptr);  // no thread state: no section
    }
  }
  EXPECT_EQ(g_recorded, 1);
  EXPECT_EQ(g_recorded_weight, 3u);
  EXPECT_TRUE(g_recorded_outside);
  EXPECT_FALSE(sigsafe::inside(sigsafe::Section::kRuntime));
  { BusyScope quiet(&t); }
  EXPECT_EQ(g_recorded, 1) << "nothing deferred, nothing recorded";
  // Sections are independent of each other.
  const sigsafe::SectionScope call(sigsafe::Section::kTracedCall);
  EXPECT_TRUE(call.outermost());
  const sigsafe::SectionScope nested(sigsafe::Section::kTracedCall);
  EXPECT_FALSE(nested.outermost());
  EXPECT_FALSE(sigsafe::inside(sigsafe::Section::kRuntime));
}

}  // namespace hybridprof
