// Copying memory that may be unmapped with plain loads, surviving the fault
// (HotSpot's SafeFetch, done for a whole copy): a load that faults in
// copy_or_fault() makes the fault handler resume it at a return of false.
//
// A plain copy costs tens of nanoseconds where process_vm_readv costs a
// microsecond and more (plus a third of one per element), which the
// interpreter reads of every sample add up to. It needs what the signal
// path cannot see for itself: a SIGSEGV/SIGBUS handler that calls
// resume_after_fault() first, installed and still the kernel's, and neither
// signal blocked on the thread (a blocked fault signal kills). Whoever
// knows that arms the thread with FaultTolerantReads; safe_read() then
// copies instead of asking the kernel.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hybridprof {

// SIGNAL PATH. Copies `bytes` from `address` to `out` with plain loads;
// false if a load faulted (then `out` holds a part). Only where a fault
// handler resumes it (see above): a fault elsewhere is a crash.
bool copy_or_fault(void* out, uint64_t address, size_t bytes);

// SIGNAL PATH. For a SIGSEGV/SIGBUS handler, first: true when the fault was
// a load of copy_or_fault's, which then returns false once the handler
// returns; false for every other fault (the handler's to deal with).
bool resume_after_fault(void* ucontext);

// While one lives on a thread, safe_read() and safe_read_gather() copy with
// copy_or_fault(). Nests; the creator vouches for the handler and the mask.
class FaultTolerantReads {
 public:
  explicit FaultTolerantReads(bool usable);
  ~FaultTolerantReads();
  FaultTolerantReads(const FaultTolerantReads&) = delete;
  FaultTolerantReads& operator=(const FaultTolerantReads&) = delete;

 private:
  bool armed_;
};

// SIGNAL PATH. Is this thread armed?
bool fault_tolerant_reads();

}  // namespace hybridprof
