// The blocking C library calls the OS-runtime adapter interposes: those of
// src/osrt/os_wait_functions.def, generated, and the variadic ones (open,
// openat, syscall's futex waits) by hand. Each is intercept()
// (osrt/os_waits.h) over the C library's function, found with
// dlsym(RTLD_NEXT) before the program runs (a constructor: the sample
// handler reaches some of these through the runtime's own calls, where
// dlsym could not be called), or at the first call when another library's
// constructor calls first.
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "osrt/os_waits.h"

namespace hybridprof::osrt {
namespace {

template <typename Fn>
Fn next_function(std::atomic<Fn>& slot, const char* name) {
  Fn f = slot.load(std::memory_order_relaxed);
  if (__builtin_expect(f != nullptr, 1)) return f;
  f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  slot.store(f, std::memory_order_relaxed);
  return f;
}

// Locks that are most often free are tried first: one taken at once reads
// no clock (it cannot have lasted the threshold). Open MPI's progress loop
// takes a free mutex at every turn, so the two clock reads were on the
// path of every message a rank waits for. What the lock returns for a
// free lock (0, or an error it would return alike: a robust mutex's dead
// owner, a recursive count at its limit) the try returns; a busy lock
// (EBUSY, also an error-checking mutex the caller holds, which the lock
// then refuses) goes on to the real call, timed.
template <OsWait F>
struct TryFirst {
  static constexpr bool kTries = false;
};
template <>
struct TryFirst<OsWait::pthread_mutex_lock> {
  static constexpr bool kTries = true;
  static int attempt(pthread_mutex_t* m) { return pthread_mutex_trylock(m); }
};
template <>
struct TryFirst<OsWait::pthread_rwlock_rdlock> {
  static constexpr bool kTries = true;
  static int attempt(pthread_rwlock_t* l) { return pthread_rwlock_tryrdlock(l); }
};
template <>
struct TryFirst<OsWait::pthread_rwlock_wrlock> {
  static constexpr bool kTries = true;
  static int attempt(pthread_rwlock_t* l) { return pthread_rwlock_trywrlock(l); }
};

// True (with what the try returned) when F's lock was tried and was not
// busy. Not with --os-wait-min 0: every call is recorded, a free lock's too.
template <OsWait F, typename... Args>
bool tried_first(int* result, Args... args) {
  if constexpr (TryFirst<F>::kTries) {
    if (g_min_ticks.load(std::memory_order_relaxed) == 1) return false;
    *result = TryFirst<F>::attempt(args...);
    return *result != EBUSY;
  } else {
    return false;
  }
}

}  // namespace
}  // namespace hybridprof::osrt

#define HYBRIDPROF_ARGS(...) __VA_ARGS__
#define OS_WAIT(name, family, ret, params, args, describe) \
  namespace hybridprof::osrt {                              \
  namespace {                                               \
  std::atomic<ret(*) params> g_real_##name{nullptr};        \
  }                                                         \
  }
#include "osrt/os_wait_functions.def"
#undef OS_WAIT

namespace hybridprof::osrt {
namespace {
std::atomic<int (*)(const char*, int, ...)> g_real_open{nullptr}, g_real_open64{nullptr};
std::atomic<int (*)(int, const char*, int, ...)> g_real_openat{nullptr}, g_real_openat64{nullptr};
std::atomic<long (*)(long, ...)> g_real_syscall{nullptr};

__attribute__((constructor(101))) void resolve_real_functions() {
#define OS_WAIT(name, ...) next_function(g_real_##name, #name);
#include "osrt/os_wait_functions.def"
#undef OS_WAIT
  next_function(g_real_open, "open");
  next_function(g_real_open64, "open64");
  next_function(g_real_openat, "openat");
  next_function(g_real_openat64, "openat64");
  next_function(g_real_syscall, "syscall");
}

// open's mode argument is there only when the flags create a file.
bool has_mode(int flags) { return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE; }

// A futex operation that waits (the others wake, or requeue, at once).
bool futex_waits(long op) {
  switch (op & FUTEX_CMD_MASK) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
    case FUTEX_WAIT_REQUEUE_PI:
    case FUTEX_LOCK_PI:
#ifdef FUTEX_LOCK_PI2
    case FUTEX_LOCK_PI2:
#endif
      return true;
    default:
      return false;
  }
}

}  // namespace
}  // namespace hybridprof::osrt

// Each a frame of its own: `caller`, its return address, is the program's
// call site (the GIL's is the interpreter's).
#define OS_WAIT(name, family, ret, params, args, describe)                         \
  extern "C" __attribute__((noinline)) ret name params {                           \
    namespace hpo = hybridprof::osrt;                                              \
    if (int tried = 0; hpo::tried_first<hpo::OsWait::name>(&tried, HYBRIDPROF_ARGS args)) \
      return tried;                                                                \
    const auto real = hpo::next_function(hpo::g_real_##name, #name);               \
    return hpo::intercept<hpo::OsWait::name>(                                      \
        __builtin_return_address(0), real,                                         \
        [&](ret result) __attribute__((always_inline)) {                           \
          using namespace hybridprof::osrt;                                        \
          (void)result;                                                            \
          return describe;                                                         \
        },                                                                         \
        HYBRIDPROF_ARGS args);                                                     \
  }
#include "osrt/os_wait_functions.def"
#undef OS_WAIT

namespace {

// open and openat: what is recorded of them is the descriptor they return.
template <hybridprof::osrt::OsWait F, typename Real, typename... Args>
__attribute__((always_inline)) inline int open_file(const void* caller, Real real, Args... args) {
  return hybridprof::osrt::intercept<F>(
      caller, real, [](int fd) __attribute__((always_inline)) { return hybridprof::osrt::io(fd, 0, fd); }, args...);
}

}  // namespace

#define HYBRIDPROF_MODE(flags)                                                        \
  mode_t mode = 0;                                                                    \
  if (hybridprof::osrt::has_mode(flags)) {                                            \
    va_list list;                                                                     \
    va_start(list, flags);                                                            \
    mode = va_arg(list, mode_t);                                                      \
    va_end(list);                                                                     \
  }

extern "C" {

__attribute__((noinline)) int open(const char* path, int flags, ...) {
  HYBRIDPROF_MODE(flags)
  namespace hpo = hybridprof::osrt;
  return open_file<hpo::OsWait::open>(__builtin_return_address(0), hpo::next_function(hpo::g_real_open, "open"), path,
                                    flags, mode);
}

__attribute__((noinline)) int open64(const char* path, int flags, ...) {
  HYBRIDPROF_MODE(flags)
  namespace hpo = hybridprof::osrt;
  return open_file<hpo::OsWait::open64>(__builtin_return_address(0), hpo::next_function(hpo::g_real_open64, "open64"),
                                      path, flags, mode);
}

__attribute__((noinline)) int openat(int dir, const char* path, int flags, ...) {
  HYBRIDPROF_MODE(flags)
  namespace hpo = hybridprof::osrt;
  return open_file<hpo::OsWait::openat>(__builtin_return_address(0), hpo::next_function(hpo::g_real_openat, "openat"),
                                         dir, path, flags, mode);
}

__attribute__((noinline)) int openat64(int dir, const char* path, int flags, ...) {
  HYBRIDPROF_MODE(flags)
  namespace hpo = hybridprof::osrt;
  return open_file<hpo::OsWait::openat64>(__builtin_return_address(0),
                                           hpo::next_function(hpo::g_real_openat64, "openat64"), dir, path, flags, mode);
}

// syscall(2) passes six words whatever the call takes (as the C library's
// own does); only futex waits are timed.
__attribute__((noinline)) long syscall(long number, ...) {
  va_list list;
  va_start(list, number);
  long a[6];
  for (long& word : a) word = va_arg(list, long);
  va_end(list);
  namespace hpo = hybridprof::osrt;
  const auto real = hpo::next_function(hpo::g_real_syscall, "syscall");
  if (number != SYS_futex || !hpo::futex_waits(a[1])) return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  const auto timed = [real](long n, long a0, long a1, long a2, long a3, long a4, long a5) {
    return real(n, a0, a1, a2, a3, a4, a5);
  };
  return hpo::intercept<hpo::OsWait::futex>(
      __builtin_return_address(0), timed,
      [](long result) __attribute__((always_inline)) { return hybridprof::osrt::returned(result); }, number, a[0],
      a[1], a[2], a[3], a[4], a[5]);
}

}  // extern "C"
