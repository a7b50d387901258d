#include "preload/run_on_stack.h"

namespace hybridprof::preload {

#if defined(__x86_64__)
bool can_run_on_other_stack() { return true; }

// rdi: stack_top, rsi: fn, rdx: arg. The caller's stack pointer is kept in
// rbp (callee-saved), which also frames the call for unwinders.
asm(R"(
  .text
  .globl hybridprof_run_on_stack
  .hidden hybridprof_run_on_stack
  .type hybridprof_run_on_stack, @function
hybridprof_run_on_stack:
  .cfi_startproc
  pushq %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  movq %rsp, %rbp
  .cfi_def_cfa_register %rbp
  andq $-16, %rdi
  movq %rdi, %rsp
  movq %rdx, %rdi
  callq *%rsi
  movq %rbp, %rsp
  .cfi_def_cfa_register %rsp
  popq %rbp
  .cfi_def_cfa_offset 8
  retq
  .cfi_endproc
  .size hybridprof_run_on_stack, .-hybridprof_run_on_stack
)");
#else
bool can_run_on_other_stack() { return false; }
extern "C" void hybridprof_run_on_stack(void*, void (*fn)(void*), void* arg) { fn(arg); }
#endif

}  // namespace hybridprof::preload
