// SampledThread: what the sampling source's signal path keeps per thread.
// Written only by the sample handler (and the deferred-sample path, which
// runs on the same thread as a runtime section ends); the counters are read
// by the drain when the thread ends. The signal path allocates nothing: the
// Python window and cache are made when the thread starts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "unwind/python/python_stack.h"
#include "unwind/recovered_callers.h"

namespace hybridprof {

struct ThreadState;

// Python frames read by the handler before they are copied into the ring.
inline constexpr size_t kPythonScratchFrames = 256;
static_assert(kPythonScratchFrames <= python::PythonReadWindow::kMaxStampedFrames, "every frame read gets its stamp");

struct SampledThread {
  explicit SampledThread(python::PythonFrame* scratch) : python_scratch(scratch) {}

  python::PythonFrame* const python_scratch;  // kPythonScratchFrames, in the thread's storage
  uint64_t python_thread_state = 0;           // the handler's cache of this thread's PyThreadState
  std::unique_ptr<python::PythonReadWindow> python_window;  // Python programs: made at the thread's start
  std::unique_ptr<python::SeenCodes> python_seen_codes;     // ... with this
  // The callers the handler's last stack scan recovered (4 KiB: in the
  // thread's storage, not in static TLS, which a dlopen()ed runtime could
  // not get).
  RecoveredCallers recovered_callers;

  std::atomic<uint64_t> samples{0}, dropped{0}, unwind_failed{0}, truncated{0}, unwind_recovered{0};
  // The handler's own cost: the signals it took and the time it spent on
  // them, entry to return (what a sample costs the thread, less the
  // kernel's signal delivery), but for handlers that took longer than
  // kSlowHandlerNs: counted in slow_handlers, their time left out. The
  // clock is the wall's: a handler the scheduler switched out meanwhile (a
  // loaded machine, more threads than cores) reads milliseconds, and a
  // few such made the mean of a PyTorch job's handlers 40-90 us against
  // 4 us unloaded.
  static constexpr uint64_t kSlowHandlerNs = 250000;
  std::atomic<uint64_t> signals{0}, handler_ns{0}, slow_handlers{0};

  // Samples landing while profiler code runs on this thread (the
  // reentrancy guard's kRuntime section, see BusyScope) are deferred: their
  // weight (and kSampleInKernel) wait here, and the end of the outermost
  // section records them with the stack it has then (record_deferred, set
  // by the runtime).
  std::atomic<uint32_t> deferred_weight{0}, deferred_flags{0};
  void (*record_deferred)(ThreadState&) = nullptr;
};

}  // namespace hybridprof
