// Scanning a stack for return addresses: how the unwinder finds a caller
// where the unwind tables end (code generated at run time, assembly
// without CFI), as hpcrun does. A scan reads the words from a frame's stack
// pointer upward, inside the thread's stack and a bounded window, and
// offers each that passes a test (plausible_return_address) as the slot a
// caller's return address may be in; the unwinder continues from there and
// keeps the result only if the continuation holds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hybridprof {

// The calling thread's stack: [low, high), high the end it grows away from.
struct StackBounds {
  uint64_t low = 0, high = 0;
  bool contains(uint64_t address) const { return address >= low && address < high; }
};

// Outside signal handlers, once per thread at its start: remembers the
// thread's stack (pthread_getattr_np) for this_thread_stack().
void remember_thread_stack();
// The same for a thread that glibc's pthread_create started with a stack
// of `stack_bytes` (its attribute's stack size, its own stack or not) and
// a guard of `guard_bytes`, without pthread_getattr_np (which asks the
// kernel for the thread's CPU affinity, and mallocs: on a new thread that
// makes it a malloc arena). 0 bytes: as remember_thread_stack().
void remember_thread_stack(size_t stack_bytes, size_t guard_bytes);
// SIGNAL PATH: a thread-local read. Empty before remember_thread_stack().
StackBounds this_thread_stack();

// SIGNAL PATH: plain loads only, and only of words inside `stack`: every
// word from the first 8-byte slot at or above `sp` up to `window_bytes`
// above it or the stack's end, whichever comes first. A stack pointer
// outside `stack` (a signal stack, a fiber's) gives an empty scan: its
// extent is unknown, so no word of it is safe to read.
class StackScan {
 public:
  StackScan() = default;  // empty
  StackScan(uint64_t sp, StackBounds stack, size_t window_bytes) {
    if (!stack.contains(sp)) return;
    next_ = (sp + 7) & ~uint64_t{7};
    const uint64_t room = stack.high - next_;
    end_ = next_ + (room < window_bytes ? room : window_bytes);
    end_ &= ~uint64_t{7};
  }

  // The address of the next slot whose word `accept(word)` takes, or 0
  // when none is left in the window. Each slot is offered once.
  template <typename Accept>
  uint64_t next(Accept&& accept) {
    while (next_ < end_) {
      const uint64_t slot = next_;
      next_ += 8;
      if (accept(*reinterpret_cast<const uint64_t*>(slot))) return slot;
    }
    return 0;
  }

 private:
  uint64_t next_ = 0, end_ = 0;
};

}  // namespace hybridprof
