#include "sampling/sampling_plan.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sampling/perf_open.h"

namespace hybridprof::sampling {
namespace {

constexpr uint64_t kFallbackPeriodNs = 1000000;  // 1 ms: what a count period becomes on a clock

std::string errno_text(int err) {
  char buffer[128];
  return strerror_r(err, buffer, sizeof buffer);  // GNU variant: returns the text
}

// The kernel's answer when it will not let us use perf_event at all, whatever
// the event: trying cpu-clock would only be refused again.
bool is_refusal(int err) { return err == EACCES || err == EPERM || err == ENOSYS; }

// The kernel's answers for "this CPU/PMU has no such event".
bool is_unsupported(int err) { return err == ENOENT || err == EOPNOTSUPP || err == EINVAL || err == ENODEV; }

// 0 when `event` opens as ThreadSampler would open it, else the errno.
int probe(const EventSpec& event, uint64_t value, bool frequency, bool kernel) {
  perf_event_attr attr;
  detail::fill_sampling_attr(event, value, frequency, kernel, &attr);
  int fd = detail::open_on_this_thread(&attr);
  if (fd < 0) return -fd;
  close(fd);
  return 0;
}

// kernel.perf_event_max_sample_rate, which the kernel lowers at run time when
// sampling interrupts take too long; 0 if unreadable.
uint64_t max_sample_rate() {
  int fd = open("/proc/sys/kernel/perf_event_max_sample_rate", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[32] = {};
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  return n > 0 ? strtoull(text, nullptr, 10) : 0;
}

std::string quoted(const EventSpec& event) { return "'" + event.name + "'"; }

// " every 1 ms instead of every N events" when a hardware count period had to
// become a clock period, else "".
std::string period_change(const SamplingRequest& request) {
  if (request.frequency || request.event.software_clock) return "";
  return " every 1 ms instead of every " + std::to_string(request.value) + " events";
}

// A CPU-time timer's interval for `value` (Hz, or a period: ns for a
// software clock, else events, which become 1 ms).
uint64_t timer_interval_ns(bool frequency, uint64_t value, bool software_clock) {
  const uint64_t interval = frequency ? 1000000000ull / value : software_clock ? value : kFallbackPeriodNs;
  return std::max<uint64_t>(interval, detail::kMinClockPeriodNs);
}

SamplingPlan timer_plan(const SamplingRequest& request, std::string notice) {
  SamplingPlan plan;
  plan.mechanism = Mechanism::kPosixTimer;
  // A thread CPU-time timer measures CPU time: that is cpu-clock, unless the
  // user asked for task-clock, which on one thread is the same quantity.
  plan.event = request.event.software_clock ? request.event : cpu_clock_event();
  uint64_t value = request.value > 0 ? request.value : 1;
  if (request.frequency) {
    plan.frequency = true;
    plan.value = value;
  } else if (request.event.software_clock) {
    plan.frequency = false;
    plan.value = value;
  } else {
    plan.frequency = false;
    plan.value = kFallbackPeriodNs;
  }
  plan.timer_interval_ns = timer_interval_ns(plan.frequency, plan.value, request.event.software_clock);
  plan.kernel_time = KernelTime::kWithUserTime;
  plan.notice = std::move(notice);
  return plan;
}

// A perf plan for `event`, at kernel level too when `kernel`.
SamplingPlan perf_plan(const EventSpec& event, uint64_t value, bool frequency, bool kernel, std::string notice) {
  SamplingPlan plan;
  plan.mechanism = Mechanism::kPerfEvent;
  plan.event = event;
  plan.value = value;
  plan.frequency = frequency;
  plan.kernel_time = kernel ? KernelTime::kSampled : KernelTime::kNotSampled;
  // For a thread whose perf event cannot be had (no descriptor left).
  plan.timer_interval_ns = timer_interval_ns(frequency, value > 0 ? value : 1, event.software_clock);
  plan.notice = std::move(notice);
  return plan;
}

// Opens `event` at kernel level when `*kernel`; when only that is refused,
// at user level, clearing *kernel. 0 or the errno.
int probe_levels(const EventSpec& event, uint64_t value, bool frequency, bool* kernel, int* kernel_err) {
  int err = probe(event, value, frequency, *kernel);
  if (err != 0 && *kernel && is_refusal(err)) {
    *kernel_err = err;
    err = probe(event, value, frequency, false);
    if (err == 0) *kernel = false;
  }
  return err;
}

// "" or " instead of 'cycles'" + period change, for notices about timers.
std::string timer_differences(const SamplingRequest& request) {
  if (request.event.software_clock) return "";
  return " (CPU time instead of " + quoted(request.event) + period_change(request) + ")";
}


// The mechanism, event and period that this system allows for `request`.
SamplingPlan choose_mechanism(const SamplingRequest& request) {
  const EventSpec& event = request.event;
  if (request.force_timer) {
    std::string notice;
    if (!event.software_clock)
      notice = "hybridprof: POSIX timer sampling forced; sampling CPU time instead of " + quoted(event) +
               period_change(request);
    return timer_plan(request, std::move(notice));
  }

  uint64_t value = request.value > 0 ? request.value : 1;
  std::string clamp_notice;
  if (request.frequency && !event.software_clock) {
    uint64_t limit = max_sample_rate();
    if (limit > 0 && value > limit) {
      clamp_notice = "hybridprof: " + std::to_string(value) + " Hz is above kernel.perf_event_max_sample_rate; sampling " +
                     quoted(event) + " at " + std::to_string(limit) + " Hz";
      value = limit;
    }
  }

  bool kernel = request.kernel;
  int kernel_err = 0;
  int err = probe_levels(event, value, request.frequency, &kernel, &kernel_err);
  if (err == 0 && kernel == request.kernel) return perf_plan(event, value, request.frequency, kernel, std::move(clamp_notice));
  const std::string refused = "hybridprof: kernel-level sampling refused (" + errno_text(kernel_err) + ")";
  if (err == 0) {
    // Only kernel level was refused. A CPU-time timer still counts system time.
    if (event.software_clock)
      return timer_plan(request, refused + "; sampling with POSIX CPU-time timers, which count system time too");
    return perf_plan(event, value, request.frequency, false,
                     refused + "; sampling " + quoted(event) + " at user level only: time in the kernel is not sampled");
  }
  if (is_refusal(err)) {
    return timer_plan(request, "hybridprof: perf_event_open refused (" + errno_text(err) +
                                   "); sampling with POSIX CPU-time timers" + timer_differences(request));
  }
  if (event.software_clock) {
    // Nothing simpler to fall back to on perf_event.
    return timer_plan(request, "hybridprof: perf_event_open failed for " + quoted(event) + " (" + errno_text(err) +
                                   "); sampling with POSIX CPU-time timers");
  }

  std::string why = is_unsupported(err) ? "is not supported on this CPU"
                                        : "could not be opened (" + errno_text(err) + ")";
  const uint64_t clock_value = request.frequency ? (request.value > 0 ? request.value : 1) : kFallbackPeriodNs;
  bool clock_kernel = request.kernel;
  int clock_kernel_err = 0;
  int clock_err = probe_levels(cpu_clock_event(), clock_value, request.frequency, &clock_kernel, &clock_kernel_err);
  const std::string change = period_change(request);  // " every 1 ms instead of every N events" or ""
  const std::string fell_back = "hybridprof: event " + quoted(event) + " " + why;
  if (clock_err == 0 && clock_kernel == request.kernel)
    return perf_plan(cpu_clock_event(), clock_value, request.frequency, clock_kernel,
                     fell_back + "; sampling cpu-clock" + (change.empty() ? " instead" : change));
  if (clock_err == 0) {
    return timer_plan(request, fell_back + " and kernel-level sampling refused (" + errno_text(clock_kernel_err) +
                                   "); sampling with POSIX CPU-time timers, which count system time too" +
                                   timer_differences(request));
  }
  std::string clock_failure = is_refusal(clock_err) ? "perf_event_open refused cpu-clock (" : "perf_event_open failed for cpu-clock (";
  return timer_plan(request, "hybridprof: event " + quoted(event) + " " + why + " and " + clock_failure +
                                 errno_text(clock_err) + "); sampling with POSIX CPU-time timers" +
                                 timer_differences(request));
}

}  // namespace

const char* kernel_time_text(KernelTime k) {
  switch (k) {
    case KernelTime::kSampled: return "sampled ([kernel] frames)";
    case KernelTime::kWithUserTime: return "counted with user time (CPU-time timers)";
    case KernelTime::kNotSampled: return "not sampled (user-level event)";
  }
  return "-";
}

uint64_t SamplingPlan::perf_period() const {
  const uint64_t v = value > 0 ? value : 1;
  if (!frequency) return v;
  if (!event.software_clock) return 0;
  return 1000000000ull / v > 0 ? 1000000000ull / v : 1;  // as fill_sampling_attr opens it
}

uint32_t SamplingPlan::signals_in(uint64_t ns, uint32_t most) const {
  const uint64_t period = perf_period();
  if (!event.software_clock || period == 0) return most;
  return uint32_t(std::clamp<uint64_t>(ns / period, 1, most));
}

uint32_t SamplingPlan::samples_per_draw() const { return signals_in(4000000, 4); }

uint32_t SamplingPlan::signals_per_switch_check() const { return signals_in(8000000, 8); }

const char* periods_text(const SamplingPlan& plan) {
  if (plan.randomized) return "randomized (uniform from half to one and a half of the period)";
  if (plan.mechanism == Mechanism::kPosixTimer) return "fixed (CPU-time timers: samples come at scheduler ticks)";
  if (plan.perf_period() == 0) return "fixed (the kernel's frequency mode: -c N randomizes a hardware event's)";
  return "fixed";
}

SamplingPlan plan_sampling(const SamplingRequest& request) {
  SamplingPlan plan = choose_mechanism(request);
  plan.randomized = !request.fixed_period && plan.mechanism == Mechanism::kPerfEvent && plan.perf_period() > 0;
  return plan;
}

}  // namespace hybridprof::sampling
