// TracedCallProducer: what traced-event producers (the MPI wrappers, the
// OpenMP and CUDA callbacks) keep per thread. Used only on the
// thread itself, outside signal handlers, under the reentrancy guard's
// kRuntime section; but a held-back enter (TracedCallWriter::defer_enter),
// which the sample handler writes before its sample where the thread is
// not in that section.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "trace/python_stack_memo.h"
#include "trace/traced_call_writer.h"
#include "unwind/caller_stack_cache.h"

namespace hybridprof {

struct TracedCallProducer {
  // The stacks of the thread's recent traced calls. Made at the first one.
  std::unique_ptr<CallerStackCache> caller_stacks;
  // The same for calls made with Python frames above them: it spares the
  // unwind, its entries are never named to the drain; the pair of native
  // and Python stacks is remembered by python_stacks, numbered by
  // caller_stacks. Made at the first.
  std::unique_ptr<CallerStackCache> python_caller_stacks;
  std::unique_ptr<PythonStackMemo> python_stacks;
  // A thread not yet seen running Python is looked up in the interpreter's
  // thread list again from this time on (monotonic ns), not at every call.
  uint64_t python_lookup_after_ns = 0;
  TracedCallWriter calls;  // ... and how they write enters and leaves
  // Events lost: the ring was full and could not be written out (the
  // record larger than the ring, or the drain stopped). Read by the drain.
  std::atomic<uint64_t> dropped_events{0};
};

}  // namespace hybridprof
