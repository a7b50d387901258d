// PerThread<T>: a thread's own T, made at its first use and freed at the
// thread's end. For an adapter's per-thread state of more than a few
// words: glibc carves a preloaded library's static TLS out of the stack of
// every thread of the program, used or not, so the runtime keeps its
// thread_local data small (a thread on a PTHREAD_STACK_MIN stack must
// still start; see "Tiny stacks" in docs/reliability.md). Costs one TLS pointer
// per type.
//
// Not for the signal path: get() allocates on a thread's first use.
#pragma once

#include <pthread.h>

#include <new>

namespace hybridprof {

template <class T>
class PerThread {
 public:
  // The calling thread's T, made now if it has none; null only when it
  // cannot be made (out of memory): the caller then records nothing.
  static T* get() {
    if (T* t = mine_) return t;
    return make();
  }
  // The calling thread's T if it has one (a thread's end, a fork child).
  static T* peek() { return mine_; }

 private:
  static T* make() {
    static const bool keyed = pthread_key_create(&key_, destroy) == 0;
    T* t = new (std::nothrow) T();
    if (t == nullptr) return nullptr;
    // Without a key (none left) it lives as long as the process.
    if (keyed) pthread_setspecific(key_, t);
    mine_ = t;
    return t;
  }
  // At the thread's end. A later get() there (another key's destructor)
  // makes a new one, which glibc's next round of destructors frees.
  static void destroy(void* t) {
    mine_ = nullptr;
    delete static_cast<T*>(t);
  }

  static inline __thread T* mine_ __attribute__((tls_model("initial-exec"))) = nullptr;
  static inline pthread_key_t key_;
};

}  // namespace hybridprof
