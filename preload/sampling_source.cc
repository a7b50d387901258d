// The sampler as an event source (trace/event_source.h): each thread's
// perf_event (or POSIX timer) is opened when the thread starts and closed
// when it ends or the process does. The samples themselves are written by
// the signal handler (sample_handler.cc).
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
    if (!ctx->sampler.start(rt->plan, rt->sample_signal, &error, t.tid))
      rt->drain.append(raw::Notice{"thread " + std::to_string(t.tid) + ": " + error});
  }
  void thread_ending(ThreadState&) override { stop_this_thread(); }
  void process_ending(raw::EndReason) override { stop_this_thread(); }
  // The forking thread's sampler counts the parent's thread.
  void fork_child() override {
    if (ThreadContext* ctx = this_thread()) ctx->sampler.reset_after_fork();
  }

 private:
  static void stop_this_thread() {
    if (ThreadContext* ctx = this_thread()) ctx->sampler.stop();
  }
};

HYBRIDPROF_EVENT_SOURCE(SamplingSource)

}  // namespace
}  // namespace hybridprof::preload
