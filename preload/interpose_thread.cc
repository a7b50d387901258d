// Every thread the program creates is sampled from its first instruction of
// user code: pthread_create starts it through a trampoline that sets up its
// ring and sampler (on the runtime's signal stack when the thread's own is
// too small for it). Its end is seen by a pthread key destructor, which
// also runs on pthread_exit and after thread_local destructors.
//
// The new thread neither mallocs nor frees on the profiler's behalf: a
// thread that calls either gets a malloc arena of its own, set up and
// grown at its first call, which cost a short thread more than the rest of
// its set-up (thread churn).
#include <pthread.h>

#include <atomic>

#include "preload/real_functions.h"
#include "preload/runtime.h"

namespace hybridprof::preload {
namespace {

// What the creator hands its new thread. In one of a few slots, taken by
// the creator and given back by the new thread as soon as it has read it;
// when every slot is in use (that many threads starting at once), on the
// heap, and freed by the new thread.
struct StartRequest {
  void* (*routine)(void*) = nullptr;
  void* arg = nullptr;
  KnownStack stack;
  bool on_heap = false;
  std::atomic<bool> taken{false};
};
StartRequest g_slots[64];

StartRequest* take_request() {
  for (StartRequest& slot : g_slots) {
    bool free = false;
    if (slot.taken.compare_exchange_strong(free, true, std::memory_order_acquire)) return &slot;
  }
  auto* request = new (std::nothrow) StartRequest();
  if (request) request->on_heap = true;
  return request;
}

void give_back(StartRequest* request) {
  if (request->on_heap) delete request;
  else request->taken.store(false, std::memory_order_release);
}

void* trampoline(void* raw) {
  auto* request = static_cast<StartRequest*>(raw);
  void* (*const routine)(void*) = request->routine;
  void* const arg = request->arg;
  const KnownStack stack = request->stack;
  give_back(request);
  if (stack.bytes != 0 && stack.bytes < kMinSampledStackBytes)
    begin_thread_on_signal_stack(stack);
  else
    thread_begin(stack);
  return routine(arg);
}

// The stack a thread created with `attr` gets; zero sizes when unknown.
KnownStack stack_of(const pthread_attr_t* attr) {
  KnownStack stack;
  pthread_attr_t defaults;
  if (attr == nullptr) {
    if (pthread_getattr_default_np(&defaults) != 0) return stack;
    attr = &defaults;
  }
  pthread_attr_getstacksize(attr, &stack.bytes);
  pthread_attr_getguardsize(attr, &stack.guard_bytes);
  if (attr == &defaults) pthread_attr_destroy(&defaults);
  return stack;
}

}  // namespace
}  // namespace hybridprof::preload

using namespace hybridprof::preload;

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*),
                              void* arg) {
  if (!runtime() || !profile_recording()) return real().pthread_create(thread, attr, routine, arg);
  const KnownStack stack = stack_of(attr);
  StartRequest* request = stack_too_small_to_sample(stack.bytes) ? nullptr : take_request();
  if (!request) return real().pthread_create(thread, attr, routine, arg);
  request->routine = routine;
  request->arg = arg;
  request->stack = stack;
  const int rc = real().pthread_create(thread, attr, trampoline, request);
  if (rc != 0) give_back(request);
  return rc;
}
