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

  void thread_started(ThreadState& t) override {
    Runtime* rt = runtime();
    ThreadContext* ctx = this_thread();
    if (!rt || !ctx) return;
    std::string error;
    if (!ctx->sampler.start(rt->plan, rt->sample_signal, &error))
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
