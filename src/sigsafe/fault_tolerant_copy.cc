#include "sigsafe/fault_tolerant_copy.h"

#include <ucontext.h>

namespace hybridprof {
namespace {

// The innermost FaultTolerantReads living on this thread, or null.
__thread FaultTolerantReads* tls_reads __attribute__((tls_model("initial-exec"))) = nullptr;

#if !defined(__x86_64__)
constexpr bool kCanCopy = false;  // no copy routine for this architecture: reads stay system calls
#else
constexpr bool kCanCopy = true;
#endif

}  // namespace

#if defined(__x86_64__)

// One instruction loads: `rep movsb`. A fault stops it with the registers
// showing its progress and the instruction pointer on it, which is how the
// handler knows the fault for ours; it moves the instruction pointer to the
// `resume` label, a return of false. Written in assembly because only then
// is the faulting instruction's address known, and the compiler can move
// nothing in or out of it.
asm(R"(
    .pushsection .text
    .p2align 4
    .globl hybridprof_copy_or_fault
    .hidden hybridprof_copy_or_fault
    .type hybridprof_copy_or_fault, @function
hybridprof_copy_or_fault:               # (out = rdi, from = rsi, bytes = rdx)
    .cfi_startproc
    movq %rdx, %rcx
    .globl hybridprof_copy_or_fault_load
    .hidden hybridprof_copy_or_fault_load
hybridprof_copy_or_fault_load:
    rep movsb
    movl $1, %eax
    ret
    .globl hybridprof_copy_or_fault_resume
    .hidden hybridprof_copy_or_fault_resume
hybridprof_copy_or_fault_resume:
    xorl %eax, %eax
    ret
    .cfi_endproc
    .size hybridprof_copy_or_fault, .-hybridprof_copy_or_fault
    .popsection
)");

extern "C" bool hybridprof_copy_or_fault(void* out, const void* from, size_t bytes);
extern "C" const char hybridprof_copy_or_fault_load[];
extern "C" const char hybridprof_copy_or_fault_resume[];

bool copy_or_fault(void* out, uint64_t address, size_t bytes) {
  if (address == 0) return false;
  return hybridprof_copy_or_fault(out, reinterpret_cast<const void*>(address), bytes);
}

bool resume_after_fault(void* ucontext) {
  greg_t& ip = static_cast<ucontext_t*>(ucontext)->uc_mcontext.gregs[REG_RIP];
  if (ip != reinterpret_cast<greg_t>(hybridprof_copy_or_fault_load)) return false;
  ip = reinterpret_cast<greg_t>(hybridprof_copy_or_fault_resume);
  return true;
}

#else  // no copy routine for this architecture

bool copy_or_fault(void*, uint64_t, size_t) { return false; }
bool resume_after_fault(void*) { return false; }

#endif

FaultTolerantReads::FaultTolerantReads(bool usable)
    : state_(usable && kCanCopy ? State::kUsable : State::kNotUsable), outer_(tls_reads) {
  tls_reads = this;
}

FaultTolerantReads::FaultTolerantReads(Check check, const void* context)
    : state_(kCanCopy ? State::kUnknown : State::kNotUsable), check_(check), context_(context), outer_(tls_reads) {
  tls_reads = this;
}

FaultTolerantReads::~FaultTolerantReads() { tls_reads = outer_; }

bool FaultTolerantReads::usable() {
  if (state_ == State::kUnknown) state_ = check_(context_) ? State::kUsable : State::kNotUsable;
  return state_ == State::kUsable;
}

bool fault_tolerant_reads() { return tls_reads != nullptr && tls_reads->usable(); }

}  // namespace hybridprof
