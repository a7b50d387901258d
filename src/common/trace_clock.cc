#include "common/trace_clock.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace hybridprof {

bool g_trace_clock_tsc = false;

namespace {

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

bool cpu_has_invariant_tsc() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 5, "flags") != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    bool constant = false, nonstop = false;
    for (std::string w; words >> w;) {
      constant |= w == "constant_tsc";
      nonstop |= w == "nonstop_tsc";
    }
    return constant && nonstop;
  }
  return false;
}

// Median cost in ns of `read` over `n` calls.
template <typename Read>
uint64_t median_cost_ns(int n, Read read) {
  uint64_t costs[64];
  n = std::min(n, 64);
  for (int i = 0; i < n; ++i) {
    const uint64_t t0 = monotonic_ns();
    read();
    costs[i] = monotonic_ns() - t0;
  }
  std::nth_element(costs, costs + n / 2, costs + n);
  return costs[n / 2];
}

// Is clock_gettime answered in the vDSO (without entering the kernel)?
bool clock_read_in_vdso() {
  timespec ts;
  const uint64_t vdso = median_cost_ns(64, [&] { clock_gettime(CLOCK_MONOTONIC, &ts); });
  const uint64_t kernel = median_cost_ns(16, [&] { syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts); });
  return vdso * 3 < kernel;
}

}  // namespace

bool tsc_can_time_calls(const std::string& override_value, std::string* why) {
#if defined(__x86_64__)
  if (override_value == "monotonic") {
    *why = "traced calls timed with CLOCK_MONOTONIC (HYBRIDPROF_TRACE_CLOCK=monotonic)";
    return false;
  }
  if (override_value == "tsc") {
    *why = "traced calls timed with the TSC (HYBRIDPROF_TRACE_CLOCK=tsc)";
    return true;
  }
  if (!cpu_has_invariant_tsc()) {
    *why = "traced calls timed with CLOCK_MONOTONIC: the CPU's TSC is not invariant";
    return false;
  }
  const std::string source = first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  if (source == "tsc") {
    *why = "traced calls timed with the TSC (the kernel's clocksource)";
    return true;
  }
  if (source == "kvm-clock" && clock_read_in_vdso()) {
    *why = "traced calls timed with the TSC (kvm-clock with a stable TSC)";
    return true;
  }
  *why = "traced calls timed with CLOCK_MONOTONIC: the kernel does not keep time with the TSC (clocksource " +
         source + ")";
  return false;
#else
  (void)override_value;
  *why = "traced calls timed with CLOCK_MONOTONIC";
  return false;
#endif
}

TraceClockConverter::Anchor TraceClockConverter::read_anchor() {
  // The pair read closest together of a few: the clock read sits halfway.
  Anchor best;
  uint64_t best_span = UINT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const uint64_t t0 = read_tsc();
    const uint64_t ns = monotonic_ns();
    const uint64_t t1 = read_tsc();
    if (t1 - t0 < best_span) {
      best_span = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

void TraceClockConverter::reset(bool tsc) {
  tsc_ = tsc;
  ns_per_tick_ = 1.0;
  kept_.clear();
  kept_spacing_ns_ = first_spacing_ns_;
  previous_ = Anchor{};
  if (!tsc_) return;
  // A first rate over 200 µs, refined once anchors are 10 ms apart.
  base_ = read_anchor();
  do last_ = read_anchor();
  while (last_.ns - base_.ns < 200000);
  ns_per_tick_ = double(last_.ns - base_.ns) / double(last_.tsc - base_.tsc);
  previous_ = base_;
  keep(base_);
}

void TraceClockConverter::anchor() {
  if (!tsc_) return;
  const Anchor now = read_anchor();
  if (now.tsc <= last_.tsc) return;  // no time between the two: nothing to learn
  previous_ = last_;
  last_ = now;
  if (last_.ns - base_.ns >= kMinRateSpanNs && last_.tsc > base_.tsc) {
    ns_per_tick_ = double(last_.ns - base_.ns) / double(last_.tsc - base_.tsc);
    base_ = last_;
  }
  if (last_.ns - kept_.back().ns >= kept_spacing_ns_) keep(last_);
}

void TraceClockConverter::keep(const Anchor& a) {
  if (kept_.size() >= max_kept_) {
    // Every other one goes (the first stays: the oldest readings need it).
    size_t n = 0;
    for (size_t i = 0; i < kept_.size(); i += 2) kept_[n++] = kept_[i];
    kept_.resize(n);
    kept_spacing_ns_ *= 2;
  }
  kept_.push_back(a);
}

uint64_t TraceClockConverter::older_to_ns(uint64_t reading) const {
  // Between the kept anchor at or before it and the next (or previous_,
  // the anchor the hot path starts from); before them all, back from the
  // first at the current rate.
  auto after = std::upper_bound(kept_.begin(), kept_.end(), reading,
                                [](uint64_t r, const Anchor& a) { return r < a.tsc; });
  const Anchor& from = after == kept_.begin() ? kept_.front() : *(after - 1);
  const Anchor& to = after == kept_.begin() || after == kept_.end() || after->tsc > previous_.tsc ? previous_ : *after;
  const double rate = to.tsc > from.tsc ? double(to.ns - from.ns) / double(to.tsc - from.tsc) : ns_per_tick_;
  const double ticks = static_cast<double>(static_cast<int64_t>(reading - from.tsc));
  return from.ns + static_cast<uint64_t>(static_cast<int64_t>(ticks * rate));
}

}  // namespace hybridprof
