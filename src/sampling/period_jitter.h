// Randomized sampling periods. A sampler that fires at a fixed period
// samples a program whose loop has a period near a multiple of it at the
// same phases round after round, and the error does not shrink with more
// samples (periodicity bias). Each thread instead draws every next period
// at random around the requested one.
//
// The distribution: uniform over the whole numbers in [P - P/2, P + P/2]
// (mean exactly P, never below ceil(P/2)). The jitter of one draw is as
// wide as a period, so after a few samples the phase is spread over any
// loop of period up to about P, and a loop much longer than P is sampled
// at many points of every round anyway. An exponential distribution
// (Poisson sampling) would also remove the bias, but its short draws
// (a tenth of them under P/10) crowd the program with signals that cost
// the same each and tell little.
//
// SIGNAL PATH: next() is a few arithmetic instructions on the thread's own
// state: no libc, no locks, no system calls.
#pragma once

#include <cstdint>

namespace hybridprof::sampling {

class PeriodJitter {
 public:
  constexpr PeriodJitter() = default;

  // Any seed (the thread's id and the time); zero is fine.
  void seed(uint64_t seed) {
    // splitmix64: spreads close seeds (consecutive thread ids) apart.
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    state_ = (z ^ (z >> 31)) | 1;  // xorshift's state must not be zero
  }

  // A period drawn uniformly from [period - period/2, period + period/2].
  uint64_t next(uint64_t period) {
    // xorshift64*: a full-period 64-bit generator, good to its high bits.
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    const uint64_t random = state_ * 0x2545F4914F6CDD1Dull;
    const uint64_t half = period / 2, span = 2 * half + 1;
    // Lemire's multiply-shift maps the draw onto [0, span) without a division.
    const auto offset = static_cast<uint64_t>((static_cast<unsigned __int128>(random) * span) >> 64);
    return period - half + offset;
  }

  // The shortest period next() can return for `period`.
  static constexpr uint64_t floor(uint64_t period) { return period - period / 2; }

 private:
  uint64_t state_ = 0x853C49E6748FEA9Bull;
};

}  // namespace hybridprof::sampling
