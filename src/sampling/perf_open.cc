#include "sampling/perf_open.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hybridprof::sampling::detail {

void fill_sampling_attr(const EventSpec& event, uint64_t value, bool frequency, bool kernel, perf_event_attr* attr) {
  memset(attr, 0, sizeof *attr);
  attr->size = sizeof *attr;
  attr->type = event.type;
  attr->config = event.config;
  attr->config1 = event.config1;
  attr->config2 = event.config2;
  attr->precise_ip = event.precise_ip;
  if (value == 0) value = 1;
  if (frequency && event.software_clock) {
    uint64_t period = 1000000000ull / value;
    attr->sample_period = period > 0 ? period : 1;
  } else if (frequency) {
    attr->freq = 1;
    attr->sample_freq = value;
  } else {
    attr->sample_period = value;
  }
  attr->wakeup_events = 1;
  // Counting from the open: until the signal routing is in place (F_SETOWN_EX,
  // F_SETSIG, O_ASYNC, a few us later) an overflow raises no signal and is
  // simply no sample. Opening it disabled and enabling it after cost every
  // thread an ioctl of 5 us (a cross-call into the event's context).
  attr->disabled = 0;
  // perf_event_paranoid 2 allows kernel level to privileged users only.
  attr->exclude_kernel = kernel ? 0 : 1;
  attr->sample_type = 0;  // a record's header is all the handler reads
  attr->exclude_hv = 1;
}

int open_on_this_thread(perf_event_attr* attr) {
  // glibc has no wrapper. pid 0 + cpu -1: this thread, wherever it runs;
  // inherit stays 0 so each thread gets (and owns) its own event.
  long fd = syscall(SYS_perf_event_open, attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  return fd >= 0 ? int(fd) : -errno;
}

}  // namespace hybridprof::sampling::detail
