// Per-thread set-up cost: N short threads, each created and joined in
// turn (a thread pool that does not pool). Prints "loop_ns N", the time of
// the creation loop alone (timing.sh), so that the ratio is the threads'
// cost and not the profiler's start or its archive.
#include <pthread.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {
void* nothing(void*) { return nullptr; }
}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 10000;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, nullptr, nothing, nullptr) != 0) return 1;
    pthread_join(t, nullptr);
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  std::printf("loop_ns %lld\n", static_cast<long long>(ns.count()));
  return 0;
}
