// The signal path.
//
// SIGNAL PATH RULES (every function in this file):
//   1. No allocation, no locks, no stdio, no C library call that is not
//      async-signal-safe. libunwind's local unwinder is the one exception we
//      rely on: it allocates from its own pool (mmap), and at a thread's
//      first sample it makes the thread's trace cache from that pool, under
//      the pool's lock (native_unwinder.cc, first_unwind_of_thread: never
//      where the interrupted thread may hold that lock itself; another
//      thread holds it for a few instructions, with signals blocked).
//   2. errno is preserved.
//   3. A signal that is not ours goes to the program's own disposition.
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/runtime_config.h"
#include "preload/runtime.h"
#include "sigsafe/fault_tolerant_copy.h"
#include "sigsafe/reentrancy_guard.h"
#include "trace/records.h"
#include "unwind/native_unwinder.h"

namespace hybridprof::preload {
namespace {

// Does this look like a profiler signal even though no thread state claims
// it (thread starting or ending)?
bool looks_like_sample(const siginfo_t* info) {
  return info->si_code == POLL_IN || info->si_code == POLL_HUP ||
         (info->si_code == SI_TIMER && info->si_value.sival_int == sampling::kTimerCookie);
}

// SIGNAL PATH (and the deferred path), under the busy guard. Writes a
// sample of `weight` periods: the native stack in t.unwind_scratch[0..depth)
// and the Python frames in t.sampled.python_scratch[0..python_depth).
void write_sample(Runtime& rt, ThreadState& t, uint64_t now, uint32_t depth, uint32_t python_depth, uint32_t flags,
                  uint32_t weight, bool snapshot_stale) {
  const uint64_t* const ips = t.unwind_scratch;
  const bool mixed = python_depth > 0;
  // A traced call's enter held back (TracedCallWriter::defer_enter) goes
  // first: this sample was taken inside the call. No room for it, none for
  // the sample either.
  if (!t.traced.calls.write_deferred_enter_shared(t.ring)) {
    t.sampled.dropped.fetch_add(weight, std::memory_order_relaxed);
    return;
  }
  RecordHeader* h = mixed ? t.ring.reserve(mixed_sample_record_bytes(depth, python_depth),
                                           static_cast<uint16_t>(RecordType::kMixedSample), static_cast<uint16_t>(depth))
                          : t.ring.reserve(sample_record_bytes(depth), static_cast<uint16_t>(RecordType::kSample),
                                           static_cast<uint16_t>(depth));
  if (h == nullptr) {
    t.sampled.dropped.fetch_add(weight, std::memory_order_relaxed);
    return;
  }
  // Both records start with the same fields (static_asserts in records.h).
  auto* s = reinterpret_cast<SampleRecord*>(h);
  s->timestamp_ns = now;
  s->flags = flags;
  s->weight = weight;
  uint64_t* out = mixed ? reinterpret_cast<MixedSampleRecord*>(h)->ips() : s->ips();
  for (uint32_t i = 0; i < depth; ++i) out[i] = ips[i];
  if (mixed) {
    auto* m = reinterpret_cast<MixedSampleRecord*>(h);
    m->python_depth = python_depth;
    m->reserved = 0;
    auto* frames = reinterpret_cast<python::PythonFrame*>(m->python_frames());
    for (uint32_t i = 0; i < python_depth; ++i) frames[i] = t.sampled.python_scratch[i];
  }
  t.ring.commit();
  // Wake the drain before its interval when this thread needs it sooner:
  // Python code it has not shown before may be freed within milliseconds (a
  // module's body) and must be named first; a module loaded since the
  // loader snapshot was taken costs every unwind through it a second, slow
  // one until the drain's pass rebuilds the snapshot; a filling ring (deep
  // mixed stacks are a few KiB a sample) would soon drop samples.
  bool urgent = snapshot_stale;
  if (mixed && t.sampled.python_seen_codes) {
    for (uint32_t i = 0; i < python_depth; ++i) urgent |= t.sampled.python_seen_codes->insert(t.sampled.python_scratch[i]);
  }
  if (t.wants_early_drain(now, urgent)) rt.drain.wake();  // write(2) on an eventfd
  t.sampled.samples.fetch_add(weight, std::memory_order_relaxed);
  if (flags & kSampleTruncated) t.sampled.truncated.fetch_add(1, std::memory_order_relaxed);
  if (flags & kSampleUnwindFailed) t.sampled.unwind_failed.fetch_add(1, std::memory_order_relaxed);
  if (flags & kSampleUnwindRecovered) t.sampled.unwind_recovered.fetch_add(1, std::memory_order_relaxed);
}

// The handler's time on this sample, from `since` (its start) to now
// (SampledThread::handler_ns says why a slow one is counted apart).
void count_handler_time(ThreadState& t, uint64_t since) {
  constexpr auto relaxed = std::memory_order_relaxed;
  SampledThread& s = t.sampled;
  s.signals.store(s.signals.load(relaxed) + 1, relaxed);
  const uint64_t took = monotonic_ns() - since;
  if (took > SampledThread::kSlowHandlerNs)
    s.slow_handlers.store(s.slow_handlers.load(relaxed) + 1, relaxed);
  else
    s.handler_ns.store(s.handler_ns.load(relaxed) + took, relaxed);
}

void record_sample(Runtime& rt, ThreadState& t, const siginfo_t* info, void* ucontext, bool in_kernel) {
  const uint64_t now = monotonic_ns();
  // A POSIX CPU timer only fires on scheduler ticks; its overruns say how
  // many periods this one sample covers.
  const uint32_t weight = sampling::ThreadSampler::sample_weight(info);
  if (sigsafe::inside(sigsafe::Section::kRuntime)) {
    // The runtime's own section (an MPI wrapper's bookkeeping, say): its end
    // records this sample (record_deferred_samples).
    t.sampled.deferred_weight.store(t.sampled.deferred_weight.load(std::memory_order_relaxed) + weight, std::memory_order_relaxed);
    if (in_kernel) t.sampled.deferred_flags.store(kSampleInKernel, std::memory_order_relaxed);
    count_handler_time(t, now);
    return;
  }
  BusyScope busy(&t);
  // The memory reads below (the interpreter's frames, JIT code) copy with
  // plain loads where a fault in one is caught; system calls otherwise.
  // Checked at the first read: a sample that reads nothing pays nothing.
  FaultTolerantReads reads(fault_tolerant_reads_usable, ucontext);
  static_assert(kMaxDepthLimit + kUnwindScratchFrames <= kUnwindScratchEntries);
  uint32_t flags = in_kernel ? uint32_t{kSampleInKernel} : 0u;
  if (sigsafe::inside(sigsafe::Section::kTracedCall)) flags |= kSampleInTracedCall;
  bool snapshot_stale = false;
  const uint32_t depth = unwind_signal_context(ucontext, t.unwind_scratch, rt.config.max_depth, &flags, &snapshot_stale,
                                               &t.sampled.recovered_callers);
  const uint32_t python_depth = read_python_frames(rt, t, &flags);
  write_sample(rt, t, now, depth, python_depth, flags, weight, snapshot_stale);
  count_handler_time(t, now);
}

}  // namespace

// SIGNAL PATH (and the deferred and traced paths), under the busy guard.
uint32_t read_python_frames(Runtime& rt, ThreadState& t, uint32_t* flags) {
  if (!rt.python.enabled() || !t.sampled.python_window) return 0;
  bool complete = true;
  // pthread_self() reads the thread pointer: safe here; CPython keys its
  // thread states by the same value.
  const uint32_t n = rt.python.read(uint64_t(pthread_self()), &t.sampled.python_thread_state, t.sampled.python_window.get(),
                                    t.sampled.python_scratch, kPythonScratchFrames, &complete);
  if (!complete) *flags |= kSamplePythonIncomplete;
  return n;
}

// Not a signal handler: the thread itself, where its outermost busy section
// ended (ThreadState::record_deferred). The samples that landed in it are
// recorded as one of their summed weight, with the stack the thread has now
// (inside the wrapper whose bookkeeping they interrupted: the drain charges
// them to its region) and the time now, which keeps the ring in time order.
// Samples landing while this runs wait for the next round. Never from the
// sample handler (whose busy section may end with samples still waiting,
// when it interrupted the end of another): the section it interrupted
// records them once the handler has returned.
void record_deferred_samples(ThreadState& t) {
  // The runtime section it opens must not call it again when it ends.
  if (sigsafe::inside(sigsafe::Section::kDeferredSamples) || recording_sample()) return;
  const sigsafe::SectionScope recording(sigsafe::Section::kDeferredSamples);
  Runtime* rt = runtime();
  for (int round = 0; round < 4 && t.sampled.deferred_weight.load(std::memory_order_relaxed) != 0; ++round) {
    BusyScope busy(&t);
    const uint32_t weight = t.sampled.deferred_weight.exchange(0, std::memory_order_relaxed);
    uint32_t flags = t.sampled.deferred_flags.exchange(0, std::memory_order_relaxed) | kSampleInProfiler;
    if (sigsafe::inside(sigsafe::Section::kTracedCall)) flags |= kSampleInTracedCall;
    if (rt == nullptr || !sampling_enabled()) {
      t.sampled.dropped.fetch_add(weight, std::memory_order_relaxed);
      continue;
    }
    const uint32_t depth = unwind_from_caller(t.unwind_scratch, nullptr, rt->config.max_depth, &flags);
    const uint32_t python_depth = read_python_frames(*rt, t, &flags);
    write_sample(*rt, t, monotonic_ns(), depth, python_depth, flags, weight, false);
  }
}

// SIGNAL PATH entry: see the rules at the top of this file.
void on_sample_signal(int signal, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  Runtime* rt = runtime();
  ThreadContext* ctx = this_thread();
  if (rt && ctx && ctx->sampler.owns(info)) {
    // Its record in the event's ring is consumed whatever becomes of the sample.
    const bool in_kernel = ctx->sampler.sample_was_in_kernel();
    if (sampling_enabled()) {
      ctx->sampler.draw_next_period(info);  // first: until it has run, the event counts toward no period
      const sigsafe::SectionScope recording(sigsafe::Section::kSampleHandler);
      record_sample(*rt, *ctx->state, info, ucontext, in_kernel);
      ctx->sampler.after_owned_signal(info);  // a thread's first period starts its perf event
    } else if (profile_open()) {
      // Recording stopped for good, or the capture window closed: no more
      // signals. A window that opened meanwhile resumed the samplers it
      // saw before this pause: this one resumes itself.
      ctx->sampler.pause();
      if (sampling_enabled()) ctx->sampler.resume();
    }
  } else if (rt && looks_like_sample(info) && !program_handles(signal)) {
    // A sample for a thread that is starting or ending, or one still queued
    // after its sampler stopped: count it; the default action would kill.
    rt->samples_without_thread.fetch_add(1, std::memory_order_relaxed);
  } else {
    forward_to_program(signal, info, ucontext);
  }
  errno = saved_errno;
}

sigset_t sample_handler_mask() {
  sigset_t mask;
  sigfillset(&mask);
  for (int fault : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) sigdelset(&mask, fault);
  return mask;
}

bool recording_sample() { return sigsafe::inside(sigsafe::Section::kSampleHandler); }

// SIGNAL PATH entry for the terminating signals (runtime.h) while the program keeps the
// default action: hand the final flush to the drain thread, which then
// re-raises the signal. Only an atomic store and write(2) here.
void on_terminate_signal(int signal, siginfo_t*, void*) {
  const int saved_errno = errno;
  if (Runtime* rt = runtime(); rt && profile_open()) {
    rt->drain.request_terminate_from_signal(signal);
  } else {
    // Runtime off: behave as the default action would.
    signal_default_and_raise(signal);
  }
  errno = saved_errno;
}

}  // namespace hybridprof::preload
