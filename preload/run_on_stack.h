// Running a function on another stack: a thread started with a stack too
// small for the runtime's set-up (PTHREAD_STACK_MIN, 16 KiB here; libunwind's
// set-up alone takes about 16 KiB) runs that set-up on the runtime's own
// signal stack, which it gets anyway, and its program on its own.
#pragma once

namespace hybridprof::preload {

// Whether this architecture has run_on_stack (x86-64); elsewhere such
// threads are not sampled, and a notice says why.
bool can_run_on_other_stack();

// Calls fn(arg) with the stack pointer just below `stack_top` (aligned
// down to 16 bytes), and returns on the caller's stack. The frames stay
// unwindable (CFI) for debuggers.
extern "C" void hybridprof_run_on_stack(void* stack_top, void (*fn)(void*), void* arg);

}  // namespace hybridprof::preload
