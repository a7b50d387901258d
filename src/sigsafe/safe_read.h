// Reading memory that may have gone away (another thread's interpreter
// frames, a code object being freed): process_vm_readv on our own pid
// returns an error for an unmapped address where a plain load would crash.
// On a thread armed with FaultTolerantReads (fault_tolerant_copy.h) the
// same reads are plain copies whose faults are caught, many times cheaper.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace hybridprof {

// SIGNAL PATH: async-signal-safe (one system call, no allocation). Copies
// `bytes` from `address` into `out`; false if any of it is not readable.
bool safe_read(uint64_t address, void* out, size_t bytes);

// SIGNAL PATH: many small reads in one system call: remote[i] into
// local[i], each pair of the same length, at most kMaxGatherReads of them.
// Returns how many were read whole, counted from the first: the kernel
// stops at the first one that is not readable.
inline constexpr size_t kMaxGatherReads = 1024;  // IOV_MAX
size_t safe_read_gather(const iovec* local, const iovec* remote, size_t count);

// The pid the reads name (the caller's getpid()), cached so that a read is one system call, not
// two (getpid is a system call too, and on a VM each costs microseconds).
// Call at start and in the child after a fork; until then, and in a process
// that never calls it, every read asks getpid. A child made by a raw clone
// system call that skips the fork handlers would read its parent's memory:
// such a child is not sampled (timers are not inherited).
void safe_read_remember_pid(pid_t pid);

template <typename T>
bool safe_read_value(uint64_t address, T* out) {
  return safe_read(address, out, sizeof(T));
}

}  // namespace hybridprof
