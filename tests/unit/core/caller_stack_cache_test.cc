// CallerStackCache: a remembered stack is reused only while every return
// address on it is still in place; otherwise the thread is unwound again.
#include "unwind/caller_stack_cache.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "trace/records.h"
#include "unwind/native_unwinder.h"

namespace hybridprof {
namespace {

constexpr uint32_t kMaxDepth = 64;
// Room for what a capture or a fresh unwind may write (a deeper cache's).
constexpr uint32_t kRoom = 256;
// How deep via<K>'s fresh unwinds go (a test of deep stacks raises it).
uint32_t g_fresh_max_depth = kMaxDepth;

// What one capture saw, and the return addresses its callers saw themselves.
struct Seen {
  std::vector<uint64_t> ips;
  uint32_t flags = 0;
  uint64_t into_caller = 0;       // the capturing function's return address
  uint64_t into_grandcaller = 0;  // its caller's
  CallerStackCache::Ref ref;
};

volatile int g_sink;

__attribute__((noinline)) void capture_here(CallerStackCache* cache, Seen* seen) {
  std::vector<uint64_t> ips(kRoom + 1);
  const uint32_t n = cache->capture(ips.data(), &seen->flags, &seen->ref);
  ips.resize(n);
  seen->ips = ips;
  seen->into_caller = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  g_sink = g_sink + 1;  // no tail call
}

// A caller that goes by the reference: remembered addresses are not copied.
__attribute__((noinline)) void capture_by_reference(CallerStackCache* cache, Seen* seen) {
  std::vector<uint64_t> ips(kMaxDepth + 1, 0xdead);
  const uint32_t n = cache->capture(ips.data(), &seen->flags, &seen->ref, /*copy_remembered=*/false);
  ips.resize(n);
  seen->ips = ips;
  g_sink = g_sink + 1;
}

__attribute__((noinline)) void small_frame(CallerStackCache* cache, Seen* seen) {
  capture_here(cache, seen);
  seen->into_grandcaller = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  g_sink = g_sink + 1;
}

// The same frame as small_frame (so capture_here runs at the same stack
// depth and its own slot matches), a different function: only the slots
// further out tell the two stacks apart.
__attribute__((noinline)) void twin_frame(CallerStackCache* cache, Seen* seen) {
  capture_here(cache, seen);
  seen->into_grandcaller = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  g_sink = g_sink + 2;  // not folded into small_frame
}

// More twins: the same frame again, each a function of its own.
template <int K>
__attribute__((noinline)) void twin_of(CallerStackCache* cache, Seen* seen) {
  capture_here(cache, seen);
  seen->into_grandcaller = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  g_sink = g_sink + K;
}

__attribute__((noinline)) void at_depth(int depth, CallerStackCache* cache, Seen* seen) {
  if (depth == 0) {
    capture_here(cache, seen);
  } else {
    at_depth(depth - 1, cache, seen);
  }
  g_sink = g_sink + 1;
}

// ips[0] is the return into capture_here, ips[1] into its caller, ...
void expect_callers(const Seen& s) {
  ASSERT_GE(s.ips.size(), 3u);
  EXPECT_EQ(s.ips[1], s.into_caller);
  if (s.into_grandcaller) {
    EXPECT_EQ(s.ips[2], s.into_grandcaller);
  }
  EXPECT_EQ(s.flags & kSampleUnwindFailed, 0u) << "the unwind reaches the thread's root";
}

class CallerStacks : public ::testing::Test {
 protected:
  void SetUp() override {
    prepare_unwinder_for_process();
    prepare_unwinder_for_thread(true);
  }
  CallerStackCache cache{kMaxDepth};
};

TEST_F(CallerStacks, ALoopUnwindsOnceAndGetsTheSameStackEveryTime) {
  std::vector<Seen> seen(101);
  for (Seen& s : seen) small_frame(&cache, &s);  // one call site
  expect_callers(seen[0]);
  for (const Seen& s : seen) EXPECT_EQ(s.ips, seen[0].ips);
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_EQ(cache.hits(), 100u);
}

TEST_F(CallerStacks, ADifferentCallerAtTheSameCallSiteIsUnwoundAgain) {
  // Both callers leave their return address where the other's was.
  void (*const callers[])(CallerStackCache*, Seen*) = {small_frame, twin_frame, small_frame, twin_frame};
  std::vector<Seen> seen(4);
  for (int i = 0; i < 4; ++i) {
    callers[i](&cache, &seen[size_t(i)]);
    expect_callers(seen[size_t(i)]);
  }
  EXPECT_NE(seen[0].ips, seen[1].ips);
  EXPECT_EQ(seen[0].ips, seen[2].ips);
  EXPECT_EQ(seen[1].ips, seen[3].ips);
  EXPECT_EQ(cache.misses(), 2u);
  EXPECT_EQ(cache.hits(), 2u);
  // What a consumer keys the stacks by: made once each, then referred to.
  EXPECT_TRUE(seen[0].ref.stored);
  EXPECT_TRUE(seen[1].ref.stored);
  EXPECT_FALSE(seen[2].ref.stored);
  EXPECT_FALSE(seen[3].ref.stored);
  EXPECT_NE(seen[0].ref.generation, seen[1].ref.generation);
  for (int i : {0, 1}) {
    EXPECT_NE(seen[size_t(i)].ref.generation, 0u);
    EXPECT_EQ(seen[size_t(i) + 2].ref.slot, seen[size_t(i)].ref.slot);
    EXPECT_EQ(seen[size_t(i) + 2].ref.generation, seen[size_t(i)].ref.generation);
  }
}

// A loop calling from two places in turn (a ping-pong's send and
// receive) parts at the same frame every time: after the first round each
// turn is one the walk took last, found without the hash index.
TEST_F(CallerStacks, ALoopAlternatingTwoCallersTurnsWithoutHashing) {
  void (*const callers[])(CallerStackCache*, Seen*) = {small_frame, twin_frame};
  std::vector<Seen> first(2);
  uint64_t hashed = 0;
  for (int round = 0; round < 50; ++round) {
    if (round == 2) hashed = cache.hashed();
    for (int i = 0; i < 2; ++i) {
      Seen s;
      callers[i](&cache, &s);  // one call site: the stacks differ only at the caller
      if (round == 0) first[size_t(i)] = s;
      ASSERT_EQ(s.ips, first[size_t(i)].ips) << "round " << round << ", caller " << i;
    }
  }
  EXPECT_NE(first[0].ips, first[1].ips);
  EXPECT_EQ(cache.hashed(), hashed);
  EXPECT_EQ(cache.misses(), 2u);
}

// A loop calling from five places in turn, all parting at the same frame
// (LULESH's OpenMP regions, from one wrapper frame): after the first round
// each turn is the one that followed the last, found without the index.
TEST_F(CallerStacks, ALoopGoingRoundFiveCallersTurnsWithoutHashing) {
  void (*const callers[])(CallerStackCache*, Seen*) = {twin_of<3>, twin_of<4>, twin_of<5>, twin_of<6>, twin_of<7>};
  constexpr size_t kCallers = std::size(callers);
  // 50 rounds in order, then out of order: one loop, so one call site.
  std::vector<size_t> order;
  for (int round = 0; round < 50; ++round)
    for (size_t i = 0; i < kCallers; ++i) order.push_back(i);
  const size_t in_order = order.size();
  for (size_t i : {3u, 0u, 4u, 4u, 1u, 2u}) order.push_back(i);
  std::vector<Seen> first(kCallers);
  uint64_t hashed_at_round_3 = 0, hashed_in_order = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    // Round 0 unwinds, round 1 looks each turn up, round 2's first turn
    // (from the last caller round to the first) too.
    if (n == 3 * kCallers) hashed_at_round_3 = cache.hashed();
    if (n == in_order) hashed_in_order = cache.hashed();
    const size_t i = order[n];
    Seen s;
    callers[i](&cache, &s);
    if (n < kCallers) {
      expect_callers(s);
      first[i] = s;
    }
    ASSERT_EQ(s.ips, first[i].ips) << "call " << n << ", caller " << i;
  }
  EXPECT_EQ(std::set<std::vector<uint64_t>>({first[0].ips, first[1].ips, first[2].ips, first[3].ips, first[4].ips})
                .size(),
            kCallers);
  EXPECT_EQ(hashed_in_order, hashed_at_round_3);
  // Out of order each is still found, through the index.
  EXPECT_GT(cache.hashed(), hashed_in_order);
  EXPECT_EQ(cache.misses(), kCallers);
}

TEST_F(CallerStacks, ACallerGoingByReferenceGetsNoCopyOfARememberedStack) {
  std::vector<Seen> seen(3);
  for (Seen& s : seen) capture_by_reference(&cache, &s);  // one call site
  EXPECT_TRUE(seen[0].ref.stored);
  EXPECT_NE(seen[0].ips[0], 0xdeadu) << "a stack seen the first time is unwound into ips";
  for (int i : {1, 2}) {
    EXPECT_FALSE(seen[size_t(i)].ref.stored);
    EXPECT_EQ(seen[size_t(i)].ref.generation, seen[0].ref.generation);
    EXPECT_EQ(seen[size_t(i)].ips.size(), seen[0].ips.size()) << "the depth is still returned";
    for (uint64_t ip : seen[size_t(i)].ips) EXPECT_EQ(ip, 0xdeadu);
  }
  EXPECT_EQ(cache.hits(), 2u);
}

TEST_F(CallerStacks, RecursionDepthIsNeverConfused) {
  std::vector<size_t> depths;
  for (int round = 0; round < 2; ++round) {
    for (int depth : {3, 5, 3, 7}) {
      Seen s;
      at_depth(depth, &cache, &s);
      expect_callers(s);
      depths.push_back(s.ips.size());
    }
  }
  EXPECT_EQ(depths[1], depths[0] + 2);
  EXPECT_EQ(depths[3], depths[0] + 4);
  EXPECT_EQ(depths[2], depths[0]);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(depths[i + 4], depths[i]);
  EXPECT_EQ(cache.misses(), 3u);  // depths 3, 5 and 7, each once
}

TEST_F(CallerStacks, MoreCallSitesThanEntriesStillGiveTheRightStacks) {
  const int kSites = int(CallerStackCache::kEntries) + 3;
  for (int round = 0; round < 3; ++round) {
    for (int depth = 0; depth < kSites; ++depth) {
      Seen s;
      at_depth(depth, &cache, &s);
      expect_callers(s);
    }
  }
  EXPECT_EQ(cache.hits() + cache.misses(), uint64_t(3 * kSites));
}

// Call paths three levels deep, one of ten functions at each level: 1,000
// stacks, each its own. site(n) captures from path n (n < 1000).
void dispatch(const int* digits, int level, CallerStackCache* cache, Seen* seen, std::vector<uint64_t>* fresh);
template <int K>
__attribute__((noinline)) void via(const int* digits, int level, CallerStackCache* cache, Seen* seen,
                                   std::vector<uint64_t>* fresh) {
  if (level == 3) {
    capture_here(cache, seen);
    // A fresh unwind from here: the same callers as capture_here's.
    std::vector<uint64_t> ips(kRoom + 1);
    uint32_t flags = 0;
    ips.resize(unwind_from_caller(ips.data(), nullptr, g_fresh_max_depth, &flags));
    *fresh = ips;
  } else {
    dispatch(digits, level + 1, cache, seen, fresh);
  }
  g_sink = g_sink + K;
}
__attribute__((noinline)) void dispatch(const int* digits, int level, CallerStackCache* cache, Seen* seen,
                                        std::vector<uint64_t>* fresh) {
  switch (digits[level]) {
    case 0: via<0>(digits, level, cache, seen, fresh); break;
    case 1: via<1>(digits, level, cache, seen, fresh); break;
    case 2: via<2>(digits, level, cache, seen, fresh); break;
    case 3: via<3>(digits, level, cache, seen, fresh); break;
    case 4: via<4>(digits, level, cache, seen, fresh); break;
    case 5: via<5>(digits, level, cache, seen, fresh); break;
    case 6: via<6>(digits, level, cache, seen, fresh); break;
    case 7: via<7>(digits, level, cache, seen, fresh); break;
    case 8: via<8>(digits, level, cache, seen, fresh); break;
    default: via<9>(digits, level, cache, seen, fresh); break;
  }
  g_sink = g_sink + 1;
}
void site(int n, CallerStackCache* cache, Seen* seen, std::vector<uint64_t>* fresh) {
  const int digits[4] = {0, n / 100 % 10, n / 10 % 10, n % 10};
  dispatch(digits, 1, cache, seen, fresh);
}

// site(n) under `depth` frames of recursion.
__attribute__((noinline)) void site_at_depth(int depth, int n, CallerStackCache* cache, Seen* seen,
                                             std::vector<uint64_t>* fresh) {
  if (depth > 0)
    site_at_depth(depth - 1, n, cache, seen, fresh);
  else
    site(n, cache, seen, fresh);
  g_sink = g_sink + 1;
}

// From 1, 9, 64 and 1,000 call sites called in turn: each stack is unwound
// in the first round only, and every capture is the stack a fresh unwind
// finds (the capture's own frame aside).
TEST_F(CallerStacks, EachCallSiteIsUnwoundOnceHoweverManyThereAre) {
  for (int sites : {1, 9, 64, 1000}) {
    CallerStackCache c(kMaxDepth);
    for (int round = 0; round < 3; ++round) {
      for (int n = 0; n < sites; ++n) {
        Seen s;
        std::vector<uint64_t> fresh;
        site(n * (1000 / sites), &c, &s, &fresh);
        // s.ips[0] returns into capture_here, s.ips[1] and fresh[0] into
        // via<K> (from two calls), and from there on both are via<K>'s callers.
        ASSERT_EQ(s.ips.size(), fresh.size() + 1) << sites << " sites, round " << round << ", site " << n;
        ASSERT_GE(fresh.size(), 8u);
        for (size_t i = 1; i < fresh.size(); ++i)
          ASSERT_EQ(s.ips[i + 1], fresh[i]) << sites << " sites, round " << round << ", site " << n << ", frame " << i;
        EXPECT_EQ(s.flags & (kSampleUnwindFailed | kSampleTruncated), 0u);
      }
      EXPECT_EQ(c.misses(), uint64_t(sites)) << "after round " << round << " of " << sites << " sites";
    }
    EXPECT_EQ(c.hits(), 2u * uint64_t(sites));
  }
}

// 300 stacks that part only in their innermost frames, under 120 frames
// of recursion they share: once the tree holds its reserved frames, each
// new stack keeps its own inner frames and a graft onto the outer part
// another stored, not a copy of it, and every stack is the one a fresh
// unwind finds, with a generation of its own, handed out stored once.
TEST_F(CallerStacks, StacksPartingNearTheInnermostFrameShareTheirOuterFrames) {
  constexpr uint32_t kDeep = 200;
  constexpr int kSites = 300, kRecursion = 120;
  struct FreshUnwindsGoDeep {  // for this test only, however it ends
    FreshUnwindsGoDeep() { g_fresh_max_depth = kDeep; }
    ~FreshUnwindsGoDeep() { g_fresh_max_depth = kMaxDepth; }
  } deep;
  CallerStackCache c(kDeep);
  std::vector<uint32_t> generation(kSites);
  uint64_t misses = 0;
  for (int round = 0; round < 3; ++round) {
    for (int n = 0; n < kSites; ++n) {
      Seen s;
      std::vector<uint64_t> fresh;
      site_at_depth(kRecursion, n * 3, &c, &s, &fresh);
      ASSERT_EQ(s.ips.size(), fresh.size() + 1) << "round " << round << ", site " << n;
      ASSERT_GT(fresh.size(), size_t(kRecursion));
      for (size_t i = 1; i < fresh.size(); ++i)
        ASSERT_EQ(s.ips[i + 1], fresh[i]) << "round " << round << ", site " << n << ", frame " << i;
      EXPECT_EQ(s.flags & (kSampleUnwindFailed | kSampleTruncated), 0u);
      ASSERT_NE(s.ref.generation, 0u);
      if (round == 0) {
        EXPECT_TRUE(s.ref.stored) << "site " << n;
        generation[size_t(n)] = s.ref.generation;
      } else {
        EXPECT_FALSE(s.ref.stored) << "round " << round << ", site " << n;
        EXPECT_EQ(s.ref.generation, generation[size_t(n)]) << "round " << round << ", site " << n;
      }
    }
    if (round == 0) misses = c.misses();
    EXPECT_EQ(c.misses(), misses) << "after round " << round;
  }
  EXPECT_EQ(std::set<uint32_t>(generation.begin(), generation.end()).size(), size_t(kSites));
  // Unwound at most once each: a new stack made of parts seen before (a
  // site's innermost call, another's middle one) is read through the
  // grafts, not unwound.
  EXPECT_LE(misses, uint64_t(kSites));
  // Stacks are grafted once the tree holds its reserved frames (~125 of
  // these stacks), each then with about the eight frames of its own
  // (without grafts: 300 of 130 and more, 39,000 frames).
  EXPECT_GT(c.grafts(), size_t(misses / 2));
  EXPECT_LT(c.frames_remembered(), size_t(CallerStackCache::kReservedNodes + kRecursion + 40 + 10 * kSites));
}

// A stack never seen before, through code seen before (each level's
// function and call site were on some earlier stack), is read slot by
// slot from what the earlier stacks taught (FrameSizes), not unwound, and
// is the stack a fresh unwind finds.
TEST_F(CallerStacks, AStackNeverSeenThroughCodeSeenIsReadNotUnwound) {
  CallerStackCache c(kMaxDepth);
  auto expect_fresh = [&](int n) {
    Seen s;
    std::vector<uint64_t> fresh;
    site(n, &c, &s, &fresh);
    ASSERT_EQ(s.ips.size(), fresh.size() + 1) << "site " << n;
    for (size_t i = 1; i < fresh.size(); ++i) ASSERT_EQ(s.ips[i + 1], fresh[i]) << "site " << n << ", frame " << i;
    EXPECT_EQ(s.flags & (kSampleUnwindFailed | kSampleTruncated), 0u);
  };
  // One loop, so that every stack comes through the same call sites here.
  const std::vector<std::vector<int>> rounds = {{111, 222, 333}, {123, 321, 213, 132, 312, 231}, {123, 111}, {444}};
  const uint64_t read_after[] = {0, 6, 6, 6}, misses_after[] = {3, 9, 9, 10};
  for (size_t r = 0; r < rounds.size(); ++r) {
    for (int n : rounds[r]) expect_fresh(n);
    // The first stacks are unwound; stacks of known code are read, and
    // remembered like the others; via<4> was never seen: unwound.
    EXPECT_EQ(c.read(), read_after[r]) << "after round " << r;
    EXPECT_EQ(c.misses(), misses_after[r]) << "after round " << r;
  }
}

// Past kEntries stacks in turn, a consumer going by reference gets each
// stack's addresses once, with a generation of its own, and its generation
// alone after that.
TEST_F(CallerStacks, AConsumerGetsEachStacksAddressesOnceHoweverManyComeBetween) {
  constexpr int kSites = int(CallerStackCache::kEntries) + 4;  // 1,000 paths, under 0 to 4 frames of recursion
  std::map<int, Seen> first;
  std::set<uint32_t> generations;
  for (int round = 0; round < 3; ++round) {
    for (int n = 0; n < kSites; ++n) {
      Seen s;
      std::vector<uint64_t> fresh;
      site_at_depth(n / 1000, n % 1000, &cache, &s, &fresh);
      ASSERT_NE(s.ref.generation, 0u);
      EXPECT_EQ(s.ref.slot, s.ref.generation % CallerStackCache::kEntries);
      if (round == 0) {
        EXPECT_TRUE(s.ref.stored) << "site " << n;
        first[n] = s;
        generations.insert(s.ref.generation);
      } else {
        EXPECT_FALSE(s.ref.stored) << "round " << round << ", site " << n;
        EXPECT_EQ(s.ref.generation, first[n].ref.generation) << "round " << round << ", site " << n;
        EXPECT_EQ(s.ips, first[n].ips);
      }
    }
  }
  EXPECT_EQ(generations.size(), size_t(kSites));
  EXPECT_EQ(cache.misses(), uint64_t(kSites));
}

TEST_F(CallerStacks, TooDeepIsTruncated) {
  CallerStackCache shallow(4);
  Seen s;
  std::vector<uint64_t> ips(5);
  uint32_t flags = 0;
  EXPECT_EQ(shallow.capture(ips.data(), &flags), 4u);
  EXPECT_NE(flags & kSampleTruncated, 0u);
  flags = 0;
  EXPECT_EQ(shallow.capture(ips.data(), &flags), 4u);  // a remembered truncated stack keeps its flag
  EXPECT_NE(flags & kSampleTruncated, 0u);
}

}  // namespace
}  // namespace hybridprof
