#include "trace/thread_state.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace hybridprof {
namespace {

// A thread's state in storage of its own, as the drain maps it (page-aligned).
class OwnedState {
 public:
  explicit OwnedState(size_t ring_bytes)
      : bytes_((ThreadState::storage_bytes(ring_bytes) + 4095) / 4096 * 4096),
        storage_(std::aligned_alloc(4096, bytes_)),
        state_(ThreadState::create(storage_, ring_bytes)) {}
  ~OwnedState() {
    ThreadState::destroy(state_);
    std::free(storage_);
  }
  OwnedState(const OwnedState&) = delete;
  OwnedState& operator=(const OwnedState&) = delete;
  ThreadState& operator*() { return *state_; }

 private:
  size_t bytes_;
  void* storage_;
  ThreadState* state_;
};

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
  OwnedState state(kRing);
  ThreadState& t = *state;
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
  OwnedState state(4096);
  ThreadState& t = *state;
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
