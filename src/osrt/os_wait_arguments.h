// What a recorded OS-runtime wait says of its call beside its name and
// times: the arguments that matter and how it ended, as one event its
// enter carries (event set kEventSetName, one kind per shape below), which
// the archive writes as OTF2 parameters inside the region (viewers show
// them as the slice's attributes). The helpers build it from a wrapper's
// arguments (os_wait_functions.def); they run only for a call recorded.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include <cstdint>

#include "trace/event_payload.h"

namespace hybridprof::osrt {

inline constexpr const char* kEventSetName = "os runtime";

// The shapes, as event kinds of the set. The payload:
//   word[0]  the descriptor (kIo), the descriptors asked for (kPoll), the
//            child asked for (kChild, -1 any)
//   word[1]  errno after a failed call (0: it succeeded)
//   wide[0]  bytes asked for (kIo), the timeout in ns (kPoll, kTimeout;
//            kNoTimeout: none)
//   wide[1]  what the call returned (two's complement)
enum class Shape : uint32_t { kResult, kIo, kPoll, kTimeout, kChild, kCount };
inline constexpr uint64_t kNoTimeout = UINT64_MAX;

struct Arguments {
  Shape shape = Shape::kResult;
  EventPayload payload;
};

namespace detail {
inline Arguments make(Shape shape, uint64_t word0, uint64_t wide0, int64_t result) {
  Arguments a;
  a.shape = shape;
  a.payload.word[0] = uint32_t(word0);
  a.payload.wide[0] = wide0;
  a.payload.wide[1] = uint64_t(result);
  return a;
}
}  // namespace detail

inline Arguments returned(int64_t result) { return detail::make(Shape::kResult, 0, 0, result); }
inline Arguments io(int fd, uint64_t bytes, int64_t result) { return detail::make(Shape::kIo, uint32_t(fd), bytes, result); }
inline Arguments polled(uint64_t descriptors, uint64_t timeout_ns, int64_t result) {
  return detail::make(Shape::kPoll, descriptors, timeout_ns, result);
}
inline Arguments timeout(uint64_t ns) { return detail::make(Shape::kTimeout, 0, ns, 0); }
inline Arguments child(pid_t pid, int64_t result) { return detail::make(Shape::kChild, uint32_t(pid), 0, result); }

inline uint64_t timeout_ms(int ms) { return ms < 0 ? kNoTimeout : uint64_t(ms) * 1000000; }
inline uint64_t timeout_of(const struct timespec* t) {
  return t == nullptr ? kNoTimeout : uint64_t(t->tv_sec) * 1000000000 + uint64_t(t->tv_nsec);
}
inline uint64_t timeout_of(const struct timeval* t) {
  return t == nullptr ? kNoTimeout : uint64_t(t->tv_sec) * 1000000000 + uint64_t(t->tv_usec) * 1000;
}
inline uint64_t bytes_of(const struct iovec* v, int n) {
  uint64_t bytes = 0;
  for (int i = 0; v != nullptr && i < n; ++i) bytes += v[i].iov_len;
  return bytes;
}
inline uint64_t bytes_of(const struct msghdr* m) {
  return m == nullptr ? 0 : bytes_of(m->msg_iov, int(m->msg_iovlen));
}

}  // namespace hybridprof::osrt
