// The sampler as an event source (trace/event_source.h): each thread's
// perf_event (or POSIX timer) is started with the thread, the perf event
// at its first sampling period, and closed when the thread ends or the
// process does. The samples themselves are written by the signal handler
// (sample_handler.cc).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "preload/runtime.h"
#include "trace/event_source.h"

namespace hybridprof::preload {
namespace {

class SamplingSource final : public EventSource {
 public:
  const char* name() const override { return "sampling"; }

  // What is sampled, how, how often, and how deep.
  void describe(raw::ProcessBegin& begin) const override {
    const Runtime* rt = runtime();
    if (!rt) return;
    const bool perf_event = rt->plan.mechanism == sampling::Mechanism::kPerfEvent;
    begin.event = rt->plan.event.name;
    begin.mechanism = perf_event ? "perf_event" : "posix-timer";
    begin.kernel_time = sampling::kernel_time_text(rt->plan.kernel_time);
    begin.periods = sampling::periods_text(rt->plan);
    begin.period = perf_event ? rt->plan.value : rt->plan.timer_interval_ns;
    begin.frequency = perf_event && rt->plan.frequency;
    begin.max_depth = rt->config.max_depth;
    begin.signal = uint64_t(rt->sample_signal);
  }

  // A process's first threads (the main thread, its workers, an OpenMP
  // team, an MPI library's progress thread: few, and long-lived) open
  // their perf event at once. Later ones wait for their first sampling
  // period (ThreadSampler::start_at_first_period): short threads are
  // common (thread pools that do not pool start thousands), and one that
  // ends within its first period then opens nothing. That period is seen
  // by a CPU-time timer, which fires only at a scheduler tick that finds
  // the thread running: on a loaded machine a thread may run on for a
  // long time unsampled (this 2-core VM under two busy loops: 26 of 240
  // threads ran 50 ms of CPU time, 1 of 160 ran 150 ms, without a timer
  // signal).
  void thread_started(ThreadState& t) override {
    Runtime* rt = runtime();
    ThreadContext* ctx = this_thread();
    if (!rt || !ctx) return;
    if (threads_started_.fetch_add(1, std::memory_order_relaxed) < kThreadsStartedAtOnce)
      ctx->sampler.start_now(rt->plan, rt->sample_signal, t.tid, &failures_);
    else
      ctx->sampler.start_at_first_period(rt->plan, rt->sample_signal, t.tid, &failures_);
    std::lock_guard lock(samplers_mutex_);
    samplers_.push_back(&ctx->sampler);
  }
  void thread_ending(ThreadState&) override {
    stop_this_thread();
    if (ThreadContext* ctx = this_thread()) {
      std::lock_guard lock(samplers_mutex_);
      samplers_.erase(std::remove(samplers_.begin(), samplers_.end(), &ctx->sampler), samplers_.end());
    }
  }
  // A closed window stops each thread's sampler at its next signal (the
  // handler sees recording off and pauses it: one signal more, on the
  // thread that owns it); an opening one starts them all again from here.
  void window_changed(bool open) override {
    if (!open) return;
    std::lock_guard lock(samplers_mutex_);
    for (const sampling::ThreadSampler* sampler : samplers_) sampler->resume();
  }
  // Said once, at the end, however many threads (a program of thousands of
  // threads must not fill the archive with notices).
  void process_ending(raw::EndReason) override {
    stop_this_thread();
    Runtime* rt = runtime();
    if (!rt) return;
    if (const uint64_t n = failures_.timer_instead_count())
      notice(*rt, std::to_string(n) + " thread" + (n == 1 ? " was" : "s were") +
                      " sampled by CPU-time timers, not perf events (" + failures_.first_timer_instead() +
                      (n > 1 ? ", and more" : "") +
                      "; the profiler takes no descriptor below 512, the program's: see ulimit -n)");
    // No thread id or rate in it: the ranks of a job say the same line,
    // which the archive then says once.
    if (const uint64_t n = failures_.left_perf_count())
      notice(*rt, std::to_string(n) + " thread" + (n == 1 ? "" : "s") +
                      " switched from perf events to CPU-time timers, blocking or yielding more than " +
                      std::to_string(sampling::ThreadSampler::kMaxOwnSwitchesPerCpuSecond) +
                      " times a second of CPU time, where a perf event costs every switch; their kernel time "
                      "counts under the function that entered the kernel (--timer does so for every thread)");
    if (const uint64_t n = failures_.unsampled_count())
      notice(*rt, std::to_string(n) + " thread" + (n == 1 ? " was" : "s were") + " not sampled (" +
                      failures_.first_unsampled() + (n > 1 ? ", and more" : "") + ")");
  }
  // The forking thread's sampler counts the parent's thread.
  void fork_child() override {
    // Another thread may have held the lock at the fork: the child's is new.
    new (&samplers_mutex_) std::mutex();
    samplers_.clear();  // the parent's other threads do not exist here
    if (ThreadContext* ctx = this_thread()) {
      ctx->sampler.reset_after_fork();
      samplers_.push_back(&ctx->sampler);
    }
  }

 private:
  static void stop_this_thread() {
    if (ThreadContext* ctx = this_thread()) ctx->sampler.stop();
  }

  static constexpr uint64_t kThreadsStartedAtOnce = 64;
  std::atomic<uint64_t> threads_started_{0};  // in this process (a fork child counts on from its parent's)
  sampling::StartFailures failures_;
  // Every live thread's sampler, for window_changed (not the signal path).
  std::mutex samplers_mutex_;
  std::vector<const sampling::ThreadSampler*> samplers_;
};

HYBRIDPROF_EVENT_SOURCE(SamplingSource)

}  // namespace
}  // namespace hybridprof::preload
