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
// copy_or_fault() if it is usable: known at construction, or asked of
// `check(context)` at the first read made under it (a sample that reads
// nothing pays nothing). The creator vouches for the handler and the mask.
// Nests: the innermost one decides.
class FaultTolerantReads {
 public:
  using Check = bool (*)(const void* context);
  explicit FaultTolerantReads(bool usable);
  FaultTolerantReads(Check check, const void* context);
  ~FaultTolerantReads();
  FaultTolerantReads(const FaultTolerantReads&) = delete;
  FaultTolerantReads& operator=(const FaultTolerantReads&) = delete;

  // SIGNAL PATH.
  bool usable();

 private:
  enum class State { kUnknown, kUsable, kNotUsable };
  State state_;
  Check check_ = nullptr;
  const void* context_ = nullptr;
  FaultTolerantReads* outer_;
};

// SIGNAL PATH. May this thread's reads copy now?
bool fault_tolerant_reads();

}  // namespace hybridprof
