// Native stack unwinding from inside the sample signal handler.
#pragma once

#include <cstdint>

namespace hybridprof {

// Call once per thread outside any signal handler, so libunwind's per-thread
// caches exist before the first sample needs them.
void prepare_unwinder_for_thread();

// SIGNAL PATH: async-signal-safe (libunwind local unwinding, no allocation
// outside libunwind's own signal-safe pool, no locks). Unwinds the context
// the signal interrupted (`ucontext` from the SA_SIGINFO handler) into
// ips[0..max_depth): ips[0] is the interrupted instruction, later entries are
// return addresses. Sets kSampleTruncated / kSampleUnwindFailed in *flags.
uint32_t unwind_signal_context(void* ucontext, uint64_t* ips, uint32_t max_depth,
                               uint32_t* flags);

}  // namespace hybridprof
