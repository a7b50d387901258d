#include "unwind/stack_scan.h"

#include <pthread.h>

namespace hybridprof {
namespace {

__thread StackBounds tls_stack __attribute__((tls_model("initial-exec")));

}  // namespace

void remember_thread_stack() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &base, &size) == 0 && base != nullptr) {
    const uint64_t low = reinterpret_cast<uint64_t>(base);
    tls_stack = {low, low + size};
  }
  pthread_attr_destroy(&attr);
}

void remember_thread_stack(size_t stack_bytes, size_t guard_bytes) {
  // glibc puts a thread's descriptor, where the thread pointer points, at
  // the top of its stack block (with the static TLS below or above it, by
  // architecture): from any frame of the thread up to it is mapped. The
  // stack's lowest byte is less than the stack size below it, or less
  // than that plus the guard (older glibc kept the guard inside the stack
  // size); the bound kept is 16 KiB above that (the deepest 16 KiB are
  // not scanned), which also covers the descriptor's own bytes. Small
  // stacks are asked instead.
  constexpr size_t kMargin = 16 * 1024;
  if (stack_bytes < 4 * (guard_bytes + kMargin)) return remember_thread_stack();
  const uint64_t top = reinterpret_cast<uint64_t>(pthread_self());
  tls_stack = {top - stack_bytes + guard_bytes + kMargin, top};
}

StackBounds this_thread_stack() { return tls_stack; }

}  // namespace hybridprof
