// The last words of a wrapper that cannot go on (the real function it
// stands for does not exist): "hybridprof: " and `parts` on stderr, then
// abort. No stdio or allocation: it may run with the program's locks held.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace hybridprof {

[[noreturn]] inline void die_plainly(std::initializer_list<const char*> parts) {
  [[maybe_unused]] ssize_t w = write(STDERR_FILENO, "hybridprof: ", 12);
  for (const char* p : parts) w = write(STDERR_FILENO, p, strlen(p));
  w = write(STDERR_FILENO, "\n", 1);
  abort();
}

}  // namespace hybridprof
