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

StackBounds this_thread_stack() { return tls_stack; }

}  // namespace hybridprof
