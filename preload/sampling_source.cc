// The sampler as an event source (trace/event_source.h): each thread's
// perf_event (or POSIX timer) is opened when the thread starts and closed
// when it ends or the process does. The samples themselves are written by
// the signal handler (sample_handler.cc).
#include <atomic>
#include <mutex>
#include <string>

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
    begin.period = perf_event ? rt->plan.value : rt->plan.timer_interval_ns;
    begin.frequency = perf_event && rt->plan.frequency;
    begin.max_depth = rt->config.max_depth;
    begin.signal = uint64_t(rt->sample_signal);
  }

  void thread_started(ThreadState& t) override {
    Runtime* rt = runtime();
    ThreadContext* ctx = this_thread();
    if (!rt || !ctx) return;
    std::string error;
    if (!ctx->sampler.start(rt->plan, rt->sample_signal, &error, t.tid)) {
      // Said once, at the end, however many threads (a program of
      // thousands of threads must not fill the archive with notices).
      if (unsampled_.fetch_add(1) == 0) {
        std::lock_guard lock(mutex_);
        first_error_ = "thread " + std::to_string(t.tid) + ": " + error;
      }
    } else if (ctx->sampler.mechanism() != rt->plan.mechanism) {
      timer_sampled_.fetch_add(1);
    }
  }
  void thread_ending(ThreadState&) override { stop_this_thread(); }
  void process_ending(raw::EndReason) override {
    stop_this_thread();
    Runtime* rt = runtime();
    if (!rt) return;
    if (const uint64_t n = timer_sampled_.load())
      notice(*rt, std::to_string(n) + " thread" + (n == 1 ? " was" : "s were") +
                              " sampled by CPU-time timers, not perf events: no descriptor was left for theirs "
                              "(the profiler takes none below 512, the program's; see ulimit -n)");
    std::lock_guard lock(mutex_);
    if (const uint64_t n = unsampled_.load())
      notice(*rt, std::to_string(n) + " thread" + (n == 1 ? " was" : "s were") + " not sampled (" +
                              first_error_ + (n > 1 ? ", and more" : "") + ")");
  }
  // The forking thread's sampler counts the parent's thread.
  void fork_child() override {
    if (ThreadContext* ctx = this_thread()) ctx->sampler.reset_after_fork();
  }

 private:
  static void stop_this_thread() {
    if (ThreadContext* ctx = this_thread()) ctx->sampler.stop();
  }

  std::atomic<uint64_t> timer_sampled_{0}, unsampled_{0};
  std::mutex mutex_;
  std::string first_error_;  // of the first thread not sampled
};

HYBRIDPROF_EVENT_SOURCE(SamplingSource)

}  // namespace
}  // namespace hybridprof::preload
