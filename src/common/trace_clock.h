// The clock of traced-call records. An MPI wrapper reads it twice per call,
// millions of times a second, so its cost is a large share of the tracing
// cost: clock_gettime through the vDSO takes ~29 ns on the reference VM,
// reading the CPU's time-stamp counter ~11 ns.
//
// Where the kernel itself keeps time from a time-stamp counter that runs at
// a constant rate and agrees across CPUs, the wrappers read the counter
// (TSC mode) and the drain converts readings to CLOCK_MONOTONIC nanoseconds
// (TraceClockConverter); everywhere else, and in everything but traced-call
// records, time is CLOCK_MONOTONIC.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace hybridprof {

#if defined(__x86_64__)
inline uint64_t read_tsc() { return __rdtsc(); }
#else
inline uint64_t read_tsc() { return 0; }  // never chosen: tsc_can_time_calls() says no
#endif

// Set once, at the first MPI call, before that call reads it (mpi_tracer.cc).
extern bool g_trace_clock_tsc;

// A reading of the traced-call clock (ticks in TSC mode, else ns).
inline uint64_t trace_clock_now() { return g_trace_clock_tsc ? read_tsc() : monotonic_ns(); }

// Whether the TSC can time traced calls on this machine: the CPU's counter
// is invariant (constant_tsc and nonstop_tsc) and the kernel keeps time with
// it, either as its clocksource ("tsc") or through kvm-clock read in the
// vDSO, which the kernel only does when the hypervisor guarantees a stable,
// synchronized TSC (PVCLOCK_TSC_STABLE_BIT; without it every clock_gettime
// is a system call). `override_value` is HYBRIDPROF_TRACE_CLOCK: "tsc",
// "monotonic" or empty (decide). `why` says what was decided and why.
bool tsc_can_time_calls(const std::string& override_value, std::string* why);

// Drain side: readings to CLOCK_MONOTONIC ns. In TSC mode the drain anchors
// the counter to the clock at every pass (a pair read back to back) and
// converts with the rate measured between anchors at least 10 ms apart, so
// NTP's slewing of CLOCK_MONOTONIC is followed. Otherwise the identity.
//
// A reading from before the previous pass (a region recorded at its end,
// an OS wait of minutes) is placed between the kept anchors around it, not
// carried back from the newest at today's rate: that rate's error grew
// with the reading's age (3-6 us over a 2-minute wait here, which put the
// wait's start before the end of the one it followed).
class TraceClockConverter {
 public:
  explicit TraceClockConverter(bool tsc = false) { reset(tsc); }
  void reset(bool tsc);
  // Takes an anchor now (the drain, at each pass).
  void anchor();
  // Inline: the drain converts two readings a call (its hot path).
  __attribute__((always_inline)) uint64_t to_ns(uint64_t reading) const {
    if (!tsc_) return reading;
    if (__builtin_expect(reading < previous_.tsc, 0)) return older_to_ns(reading);
    const double ticks = static_cast<double>(static_cast<int64_t>(reading - last_.tsc));
    return last_.ns + static_cast<uint64_t>(static_cast<int64_t>(ticks * ns_per_tick_));
  }
  double ns_per_tick() const { return ns_per_tick_; }

  // The rate is measured over at least this span between anchors.
  static constexpr uint64_t kMinRateSpanNs = 10000000;
  // Anchors kept for older readings: at least this far apart, and at most
  // this many (then every other one goes, and the spacing doubles: 64 KiB
  // of anchors span 6.8 minutes at 100 ms, then 13.6 at 200 ms...).
  static constexpr uint64_t kKeptAnchorSpacingNs = 100000000;
  static constexpr size_t kMaxKeptAnchors = 4096;
  // Other values than those (tests: many anchors in a short time), before
  // reset(); at least 2 kept, so that thinning leaves room.
  void keep_anchors(uint64_t spacing_ns, size_t max) { first_spacing_ns_ = spacing_ns, max_kept_ = max < 2 ? 2 : max; }

 private:
  struct Anchor {
    uint64_t tsc = 0, ns = 0;
  };
  static Anchor read_anchor();
  __attribute__((noinline, cold)) uint64_t older_to_ns(uint64_t reading) const;
  void keep(const Anchor& a);
  bool tsc_ = false;
  Anchor base_, last_;  // the rate is measured from base_ to last_
  Anchor previous_;     // the anchor before last_: readings before it are older_to_ns's
  double ns_per_tick_ = 1.0;
  std::vector<Anchor> kept_;  // in time order
  uint64_t first_spacing_ns_ = kKeptAnchorSpacingNs, kept_spacing_ns_ = kKeptAnchorSpacingNs;
  size_t max_kept_ = kMaxKeptAnchors;
};

}  // namespace hybridprof
