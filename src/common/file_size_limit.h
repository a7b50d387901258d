// The process's file size limit (ulimit -f). A write past it raises
// SIGXFSZ, whose default action ends the process: the profiler's own writes
// into the program's process check first and fail with EFBIG instead, so
// that its data, not the program, is what the limit stops.
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace hybridprof {

// True when a file written up to `end` bytes would pass the limit.
inline bool passes_file_size_limit(uint64_t end) {
  rlimit limit{};
  return getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && end > limit.rlim_cur;
}

}  // namespace hybridprof
