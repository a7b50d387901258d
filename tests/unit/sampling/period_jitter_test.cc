// PeriodJitter: the mean of its periods is the one asked for, none is below
// its documented floor, they spread over the whole range, and threads seeded
// apart draw apart.
#include "sampling/period_jitter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace hybridprof::sampling {
namespace {

TEST(PeriodJitter, MeanIsThePeriodAndNoneIsBelowTheFloor) {
  for (const uint64_t period : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{1000}, uint64_t{1000000},
                                uint64_t{10000000}, uint64_t{2000003}}) {
    PeriodJitter jitter;
    jitter.seed(period);
    constexpr int kDraws = 100000;
    double sum = 0;
    uint64_t low = UINT64_MAX, high = 0;
    for (int i = 0; i < kDraws; ++i) {
      const uint64_t p = jitter.next(period);
      sum += double(p);
      low = std::min(low, p);
      high = std::max(high, p);
    }
    EXPECT_NEAR(sum / kDraws, double(period), 0.005 * double(period)) << period;
    EXPECT_GE(low, PeriodJitter::floor(period)) << period;
    EXPECT_GE(low, (period + 1) / 2) << "the floor is half the period, rounded up";
    EXPECT_LE(high, period + period / 2) << period;
    if (period >= 1000) {
      // The whole range is used: both ends within a thousandth of it.
      EXPECT_LT(double(low), 0.501 * double(period)) << period;
      EXPECT_GT(double(high), 1.499 * double(period)) << period;
    }
  }
}

TEST(PeriodJitter, DrawsAreUniformOverTheRange) {
  PeriodJitter jitter;
  jitter.seed(42);
  constexpr uint64_t kPeriod = 1000000;
  std::array<int, 10> deciles{};
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t p = jitter.next(kPeriod);
    ++deciles[std::min<size_t>(9, (p - kPeriod / 2) * 10 / (kPeriod + 1))];
  }
  for (int n : deciles) EXPECT_NEAR(n, kDraws / 10, kDraws / 100) << "each tenth of the range gets a tenth";
}

TEST(PeriodJitter, ThreadsSeededApartDrawApart) {
  PeriodJitter a, b;
  a.seed(1000);  // consecutive thread ids
  b.seed(1001);
  int same = 0;
  for (int i = 0; i < 1000; ++i) same += a.next(1000000) == b.next(1000000);
  EXPECT_LT(same, 5);
}

}  // namespace
}  // namespace hybridprof::sampling
