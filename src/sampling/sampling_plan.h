// Deciding, once per process, how threads will be sampled: the requested
// event through perf_event, a software clock when the CPU cannot count the
// event, or POSIX CPU-time timers when perf_event_open is refused altogether.
#pragma once

#include <cstdint>
#include <string>

#include "sampling/event_encoding.h"

namespace hybridprof::sampling {

enum class Mechanism { kPerfEvent, kPosixTimer };

// What becomes of CPU time the kernel spends for the program (system calls,
// page faults).
enum class KernelTime {
  kSampled,       // the perf event counts kernel mode too; a sample taken there ends in [kernel]
  kWithUserTime,  // CPU-time timers count it, but cannot tell it from user time
  kNotSampled,    // a user-level perf event: the system refused kernel level
};
// One line for the run summary, e.g. "sampled ([kernel] frames)".
const char* kernel_time_text(KernelTime);

struct SamplingRequest {
  EventSpec event;
  uint64_t value = 1000;    // Hz if frequency, else events per sample (ns for software clocks)
  bool frequency = true;
  bool force_timer = false; // testing/escape hatch: skip perf_event (env HYBRIDPROF_FORCE_TIMER=1 is read by the caller)
  bool kernel = true;       // sample kernel mode too, where the system allows it
  bool fixed_period = false; // every period as asked (--fixed-period), not randomized around it
};

struct SamplingPlan {
  Mechanism mechanism = Mechanism::kPerfEvent;
  EventSpec event;          // what will really be sampled (cpu-clock after a fallback)
  uint64_t value = 0;       // as in SamplingRequest, after any fallback or clamp
  bool frequency = true;
  // For kPosixTimer; for kPerfEvent, what a thread that cannot have its
  // perf event (no descriptor left) is sampled at by a CPU-time timer.
  uint64_t timer_interval_ns = 0;
  KernelTime kernel_time = KernelTime::kSampled;
  std::string notice;       // one line for the user when we fell back, else ""
  // Each thread draws its perf event's periods at random around the plan's
  // (PeriodJitter), unless the request asked for fixed periods. Not:
  //  - a hardware event in the kernel's frequency mode (-F), whose period
  //    the kernel adapts at every overflow itself (the period-update ioctl
  //    sets its frequency there, not its period);
  //  - POSIX CPU-time timers: their signals come at scheduler ticks, which
  //    are the real sampling clock whatever the timer's interval, so a
  //    random interval would not move where samples land.
  bool randomized = false;
  // Where randomized, how many samples run on one drawn period. A draw
  // reprograms the event (a system call, ~15 us in a virtual machine), so
  // at high rates a period serves a few samples; where a draw serves more
  // than one, its samples fall at steps of one period into a loop of about
  // that length and share much of their phase, and the shares of a
  // periodic program converge more slowly (at 100 Hz with every 4th sample
  // drawn, a 50% leaf read 47% in 1,600 samples). So a software clock
  // draws at every sample up to 250 Hz, at most every 4th above, which
  // keeps draws under 250 a second (under 0.4% of a CPU here); other
  // events, whose period is no time, every 4th.
  uint32_t samples_per_draw() const;

  // How many perf signals a thread's switch-rate check waits for
  // (ThreadSampler::after_owned_signal): about 8 ms of a software clock's
  // CPU time (8 signals at 1 kHz, every one at 125 Hz and below, so that a
  // low rate does not leave a thread that yields thousands of times a
  // second on its perf event for seconds); every 8th for other events.
  uint32_t signals_per_switch_check() const;

  // The perf event's period in its own units (ns for software clocks), or
  // 0 in the kernel's frequency mode.
  uint64_t perf_period() const;

 private:
  // How many periods of a software clock make about `ns` (1 to `most`);
  // `most` for an event whose period is no time.
  uint32_t signals_in(uint64_t ns, uint32_t most) const;
};
// "randomized (...)", "fixed" (asked for) or "fixed (why)", for the archive.
const char* periods_text(const SamplingPlan&);

// Probes by perf_event_open'ing the event, exactly as ThreadSampler will, on
// the calling thread (then closes it), at user and kernel level unless the
// request says user level only:
//  - opens → kPerfEvent with the event. A hardware frequency above
//    kernel.perf_event_max_sample_rate (the kernel then says EINVAL) is
//    clamped to that limit, with a notice.
//  - kernel level refused but user level allowed (an unprivileged user
//    under perf_event_paranoid 2) → for a software clock, kPosixTimer,
//    whose CPU-time clock counts system time too; for a hardware event,
//    the event at user level only (kernel time not sampled), with a notice.
//  - refused (EACCES/EPERM: paranoid 3, seccomp, containers; ENOSYS: no
//    perf_event) → kPosixTimer on CLOCK_THREAD_CPUTIME_ID.
//  - any other failure of an event that is not a software clock (ENOENT,
//    EOPNOTSUPP, EINVAL, ENODEV: no such PMU/event here; EBUSY: counters taken)
//    → the same probe with cpu-clock (at the same Hz; a count period becomes
//    1 ms), then the timer if that fails too.
// Timer interval: 1e9/Hz, the period for software clocks, or 1 ms when a
// hardware count period has to fall back; never below 10 µs.
// Note: a POSIX CPU-time timer's expiry is only noticed when a scheduler tick
// interrupts the thread itself, so a timer plan delivers at most CONFIG_HZ
// signals/s per thread (250 on this VM; each stands for 1 + si_overrun
// intervals, see ThreadSampler::sample_weight), and far fewer on a contended
// CPU, where the thread runs in slices between ticks (measured here with the
// 2 cores oversubscribed: 4-7 signals per 300 ms of CPU, si_overrun up to 133).
// The CPU time after the last noticed expiry is never attributed. perf's
// cpu-clock is an hrtimer and stays exact: the timer is only a fallback.
SamplingPlan plan_sampling(const SamplingRequest& request);

}  // namespace hybridprof::sampling
