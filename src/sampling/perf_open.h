// Internal to src/sampling: the one place that turns a plan into a
// perf_event_attr, shared by the probe (plan_sampling) and ThreadSampler so
// that what was probed is exactly what is later opened.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

#include "sampling/event_encoding.h"

namespace hybridprof::sampling::detail {

// The smallest period the kernel gives a software clock (perf_swevent_init_hrtimer
// clamps cpu-clock/task-clock to 10 µs); the timer fallback uses the same floor.
inline constexpr uint64_t kMinClockPeriodNs = 10000;

// Per-thread, disabled-at-open sampling attr for `event`, user level and,
// with `kernel`, kernel level too:
//  - frequency mode on a software clock becomes a fixed period of 1e9/Hz ns.
//    The clock is exact, so the kernel's frequency feedback only adds jitter,
//    and a period is not subject to kernel.perf_event_max_sample_rate.
//  - wakeup_events = 1: a wakeup (and so, with O_ASYNC, a signal) per sample.
//  - value 0 is treated as 1: a zero period would silently mean "count only".
//  - with `kernel`, each overflow also writes a bare sample record (no
//    fields: its header's misc says user or kernel mode) into the event's
//    ring buffer, so the handler can tell where the period ran out.
void fill_sampling_attr(const EventSpec& event, uint64_t value, bool frequency, bool kernel, perf_event_attr* attr);

// perf_event_open(attr, this thread, any CPU, no group, close-on-exec).
// Returns the fd, or -errno.
int open_on_this_thread(perf_event_attr* attr);

}  // namespace hybridprof::sampling::detail
