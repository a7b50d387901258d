#include "sigsafe/fault_tolerant_copy.h"

#include <ucontext.h>

namespace hybridprof {
namespace {

// Nonzero while a FaultTolerantReads lives on this thread.
__thread int tls_armed __attribute__((tls_model("initial-exec"))) = 0;

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

FaultTolerantReads::FaultTolerantReads(bool usable) : armed_(usable) {
  if (armed_) ++tls_armed;
}

#else  // no copy routine for this architecture: reads stay system calls

bool copy_or_fault(void*, uint64_t, size_t) { return false; }
bool resume_after_fault(void*) { return false; }
FaultTolerantReads::FaultTolerantReads(bool) : armed_(false) {}

#endif

FaultTolerantReads::~FaultTolerantReads() {
  if (armed_) --tls_armed;
}

bool fault_tolerant_reads() { return tls_armed != 0; }

}  // namespace hybridprof
