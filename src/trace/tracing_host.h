// What an adapter's producers (MPI wrappers, OpenMP and CUDA callbacks)
// reach of the process they run in: the calling thread's state, the drain,
// the settings and the process's end. The preloaded runtime is the host in
// a program (preload/runtime.cc); a unit test installs its own stand-in, so
// an adapter's translation runs without the runtime (tests/unit/mpi).
//
// Not the signal path: producers run on the program's threads, outside
// handlers, and may lock and allocate.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "common/runtime_config.h"
#include "trace/raw_format.h"

namespace hybridprof {

class Drain;
struct ThreadState;

class TracingHost {
 public:
  // `drain` and `config` are the host's own (members of the derived host
  // may be passed before they are made): they outlive it.
  TracingHost(Drain& drain, const RuntimeConfig& config) : drain_of_host_(drain), config_of_host_(config) {}
  virtual ~TracingHost() = default;
  TracingHost(const TracingHost&) = delete;
  TracingHost& operator=(const TracingHost&) = delete;
  // The process is being traced (false before the start and from its end).
  virtual bool tracing() const = 0;
  // The calling thread's state; null when it is not traced (started before
  // the runtime, already ended, or the process past its end).
  virtual ThreadState* current_thread() = 0;
  // Not virtual: every traced enter and leave asks, and a call through
  // the vtable each time is a few nanoseconds of a ~100 ns budget.
  Drain& drain() { return drain_of_host_; }
  const RuntimeConfig& config() const { return config_of_host_; }
  // Where this process's raw stream is written.
  virtual std::string raw_dir() const = 0;
  // One line on stderr, "hybridprof: " first.
  virtual void say(const std::string& line) = 0;
  // Opens or closes the process's capture window (an adapter's capture
  // range: --capture-range nvtx:NAME); `cause` says what did. False when
  // it was already so. Not the signal path.
  virtual bool set_capture_window(bool /*open*/, const std::string& /*cause*/) { return false; }
  // The process ends now: every source's last records, the stream closed
  // (once; later calls do nothing).
  virtual void finish_process(raw::EndReason reason, int64_t status) = 0;
  // The calling thread's Python frames now, innermost first, into
  // t.sampled.python_scratch (t is the calling thread's state, under its
  // busy guard): how many; 0 when it runs no Python (or the program is no
  // Python we can read). Sets kSamplePythonIncomplete in *flags when the
  // chain could not be read to its end. Asked only for a thread made with
  // a Python read window (t.sampled.python_window).
  virtual uint32_t read_python_frames(ThreadState& t, uint32_t* flags) {
    (void)t, (void)flags;
    return 0;
  }
  // Runs `hook` once as the process leaves, by exit or by _exit (which
  // skips atexit handlers), with the exit status.
  virtual void at_process_exit(void (*hook)(int status)) = 0;

 private:
  Drain& drain_of_host_;
  const RuntimeConfig& config_of_host_;
};

namespace detail {
extern std::atomic<TracingHost*> g_tracing_host;
}
// Null until a host is installed. Inline: every traced call asks, often
// more than once.
inline TracingHost* tracing_host() { return detail::g_tracing_host.load(std::memory_order_acquire); }
// Installs `host` (not owned; it outlives every producer). Null removes it.
void set_tracing_host(TracingHost* host);

}  // namespace hybridprof
