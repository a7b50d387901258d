// Every thread the program creates is sampled from its first instruction of
// user code: pthread_create starts it through a trampoline that sets up its
// ring and sampler. Its end is seen by a pthread key destructor, which also
// runs on pthread_exit and after thread_local destructors. A thread whose
// stack is too small for that set-up runs as is, unsampled (and counted).
#include <pthread.h>

#include <cstdlib>

#include "preload/real_functions.h"
#include "preload/runtime.h"

namespace hybridprof::preload {
namespace {

struct StartRequest {
  void* (*routine)(void*);
  void* arg;
};

void* trampoline(void* raw) {
  StartRequest request = *static_cast<StartRequest*>(raw);
  std::free(raw);
  thread_begin();
  return request.routine(request.arg);
}

// The stack a thread created with `attr` gets; 0 when unknown.
size_t stack_bytes(const pthread_attr_t* attr) {
  size_t bytes = 0;
  if (attr != nullptr) {
    pthread_attr_getstacksize(attr, &bytes);
    return bytes;
  }
  pthread_attr_t defaults;
  if (pthread_getattr_default_np(&defaults) != 0) return 0;
  pthread_attr_getstacksize(&defaults, &bytes);
  pthread_attr_destroy(&defaults);
  return bytes;
}

}  // namespace
}  // namespace hybridprof::preload

using namespace hybridprof::preload;

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*),
                              void* arg) {
  if (!runtime() || !sampling_enabled() || stack_too_small_to_sample(stack_bytes(attr)))
    return real().pthread_create(thread, attr, routine, arg);
  auto* request = static_cast<StartRequest*>(std::malloc(sizeof(StartRequest)));
  if (!request) return real().pthread_create(thread, attr, routine, arg);
  *request = {routine, arg};
  const int rc = real().pthread_create(thread, attr, trampoline, request);
  if (rc != 0) std::free(request);
  return rc;
}
