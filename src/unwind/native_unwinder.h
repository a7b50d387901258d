// Native stack unwinding from inside the sample signal handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hybridprof {

// Once per process, outside any signal handler, before the first thread's
// prepare_unwinder_for_thread. Empty, or what keeps the handler's unwinds
// from being safe after a dlopen() (unwind/libunwind_tls.h).
std::string prepare_unwinder_for_process();

// Once per thread outside any signal handler, at the thread's start: its
// stack's bounds, and the loader's modules as they are now. The thread's
// outermost frame is remembered at its first unwind: an unwind that does
// not end there (or in the program's entry point) is counted as failed.
// `with_trace_cache`: libunwind's per-thread trace cache (unw_backtrace's
// fast path) is made now (a thread expected to live: the main thread);
// otherwise the first sample makes it (see first_unwind_of_thread).
// `stack_bytes` and `guard_bytes`: for a thread pthread_create started, its
// attribute's (remember_thread_stack); 0: asked.
void prepare_unwinder_for_thread(bool with_trace_cache = false, size_t stack_bytes = 0, size_t guard_bytes = 0);

// SIGNAL PATH: async-signal-safe (libunwind local unwinding, no allocation
// outside libunwind's own signal-safe pool; no locks but that pool's, taken
// once per thread at its first sample, when its trace cache is made, and
// only where the thread cannot be holding it). Unwinds the context
// the signal interrupted (`ucontext` from the SA_SIGINFO handler) into
// ips[0..max_depth): ips[0] is the interrupted instruction, later entries are
// return addresses. Sets kSampleTruncated / kSampleUnwindFailed in *flags.
// `ips` must have room for max_depth + 8 entries (the handler's own frames
// are unwound first and dropped). Sets *snapshot_stale when the unwind went
// through a module loaded since LoaderSnapshot's last rebuild (found all
// the same, at a cost, until the snapshot is rebuilt). `recovered`: the
// thread's RecoveredCallers (recovered_callers.h), or null to remember none.
inline constexpr uint32_t kUnwindScratchFrames = 8;
class RecoveredCallers;
uint32_t unwind_signal_context(void* ucontext, uint64_t* ips, uint32_t max_depth, uint32_t* flags,
                               bool* snapshot_stale = nullptr, RecoveredCallers* recovered = nullptr);

// Outside signal handlers (traced-region enters): unwinds the calling
// thread from this function's caller outwards into ips[0..max_depth); every
// entry is a return address. Same flags as above. `ips` needs max_depth + 1
// entries. With `slots` (same size), slots[i] is the stack address that
// holds ips[i] (x86-64: just below the caller's frame), or 0 where the
// return address is not on the stack there (a signal frame): what
// CallerStackCache checks to reuse the stack.
uint32_t unwind_from_caller(uint64_t* ips, uint64_t* slots, uint32_t max_depth, uint32_t* flags);

// The outermost frame a complete unwind of this thread ends in.
bool is_stack_root(uint64_t ip);

// Async-signal-safe: libunwind's own code made a call returning to `ip`,
// inside one of the runtime's unwinds on this thread (its table lookups
// are answered from the loader snapshot then: libunwind_lookups_use_snapshot).
bool called_by_own_unwind(uint64_t ip);

}  // namespace hybridprof
