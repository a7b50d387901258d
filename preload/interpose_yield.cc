// sched_yield counts the calling thread's yields for its sampler, which
// leaves its perf event for a CPU-time timer when the thread switches
// itself out (blocks or yields) at very high rates
// (ThreadSampler::after_owned_signal): a perf event costs every switch, and
// a runtime spinning on sched_yield (Open MPI's progress loop on an
// oversubscribed node) switches tens of thousands of times a second. The
// kernel counts a yield that switched as involuntary, like preemption by a
// busy machine, which is not the program's doing: the count tells them
// apart.
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/runtime.h"

using namespace hybridprof::preload;

// Async-signal-safe, as sched_yield is: a TLS load, a store, the system
// call (all glibc's sched_yield is).
extern "C" int sched_yield() {
  if (ThreadContext* ctx = this_thread()) ctx->sampler.count_yield();
  return static_cast<int>(syscall(SYS_sched_yield));
}
