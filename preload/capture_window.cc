// Capture windows: the runtime records only while one is open. What opens
// and closes them: the run's start (unless --paused or --delay), the drain
// thread at --delay and --duration (Drain::Options::open_at_ns...), and the
// program through the control API (include/hybridprof/control.h), whose
// symbols this file defines for the program (the preloaded runtime's come
// before libhybridprof_control's no-ops). Marks name points of the run.
#include <atomic>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "hybridprof/control.h"
#include "preload/runtime.h"
#include "trace/event_source.h"

namespace hybridprof::preload {
namespace {

std::mutex g_window_mutex;  // one change at a time: the drain's record, then the sources'
std::atomic<uint64_t> g_changed_nothing[2] = {};  // starts with it open, stops with it closed

uint32_t this_location() {
  const ThreadContext* ctx = this_thread();
  return ctx && ctx->state ? ctx->state->index : raw::kNoLocation;
}

}  // namespace

bool set_capture_window(bool open, const char* cause) {
  Runtime* rt = runtime();
  if (!rt || !profile_open()) return false;
  std::lock_guard lock(g_window_mutex);
  if (!rt->drain.set_window(open, monotonic_ns(), cause, this_location())) {
    g_changed_nothing[open].fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  for_each_event_source([&](EventSource& s) { s.window_changed(open); });
  return true;
}

void capture_mark(const char* text) {
  Runtime* rt = runtime();
  if (!rt || !profile_open() || text == nullptr) return;
  rt->drain.mark(monotonic_ns(), this_location(), text);
}

std::string capture_window_notice() {
  const uint64_t starts = g_changed_nothing[1].load(), stops = g_changed_nothing[0].load();
  if (starts + stops == 0) return {};
  std::string line = "the capture window was ";
  if (starts) line += "already open at " + std::to_string(starts) + " call" + (starts == 1 ? "" : "s") + " to open it";
  if (starts && stops) line += ", and ";
  if (stops) line += "already closed at " + std::to_string(stops) + " call" + (stops == 1 ? "" : "s") + " to close it";
  return line + " (hybridprof_start/stop(), cudaProfilerStart/Stop(), cuProfilerStart/Stop()): they changed nothing";
}

}  // namespace hybridprof::preload

using namespace hybridprof::preload;

extern "C" {
void hybridprof_start(void) { set_capture_window(true, "hybridprof_start()"); }
void hybridprof_stop(void) { set_capture_window(false, "hybridprof_stop()"); }
void hybridprof_mark(const char* text) { capture_mark(text); }
int hybridprof_recording(void) { return sampling_enabled() ? 1 : 0; }
}
