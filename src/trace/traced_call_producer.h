// TracedCallProducer: what traced-event producers (the MPI wrappers, and
// the OpenMP and CUDA callbacks to come) keep per thread. Used only on the
// thread itself, outside signal handlers, under the reentrancy guard's
// kRuntime section.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "trace/traced_call_writer.h"
#include "unwind/caller_stack_cache.h"

namespace hybridprof {

struct TracedCallProducer {
  // The stacks of the thread's recent traced calls. Made at the first one.
  std::unique_ptr<CallerStackCache> caller_stacks;
  TracedCallWriter calls;  // ... and how they write enters and leaves
  // Events lost: the ring was full and could not be written out (the
  // record larger than the ring, or the drain stopped). Read by the drain.
  std::atomic<uint64_t> dropped_events{0};
};

}  // namespace hybridprof
