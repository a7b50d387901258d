// The time of calls the OS-runtime adapter interposes when they do not
// wait: an uncontended mutex lock/unlock pair (one interposed call: the
// unlock is not) and a 1-byte write and read through a pipe (two), timed
// as `outer` repetitions of `inner` each; prints the median repetition's
// time per pair:
//   mutex_ns=... pipe_ns=...
// Plain, they are the C library's; under hybridprof each is timed by the
// adapter (two clock reads) and none is recorded (under 20 us).
// benchmarks/os_wait_overhead.sh runs both, interleaved.
//
//   os_wait_bench [INNER=20000] [OUTER=21]
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "median_time.h"

int main(int argc, char** argv) {
  const int inner = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int outer = argc > 2 ? std::atoi(argv[2]) : 21;
  int fds[2];
  if (inner < 1 || outer < 1 || pipe(fds) != 0) {
    std::fprintf(stderr, "usage: os_wait_bench [INNER>=1] [OUTER>=1]\n");
    return 2;
  }
  static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  const double lock = median_ns_per_call(inner, outer, [](int n) {
    for (int i = 0; i < n; ++i) {
      pthread_mutex_lock(&mutex);
      pthread_mutex_unlock(&mutex);
    }
  });
  const double pipe_pair = median_ns_per_call(inner, outer, [&](int n) {
    char byte = 0;
    for (int i = 0; i < n; ++i) {
      if (write(fds[1], &byte, 1) != 1 || read(fds[0], &byte, 1) != 1) std::abort();
    }
  });
  std::printf("mutex_ns=%.1f pipe_ns=%.1f\n", lock, pipe_pair);
  return 0;
}
