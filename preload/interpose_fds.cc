// The program's descriptor calls never close or replace the profiler's own
// descriptors (common/own_fds.h): close() of one of ours succeeds without
// closing it, close_range() and closefrom() close everything around ours,
// and dup2()/dup3() onto one of ours move ours away first. The program
// sees what it would without the profiler; its numbers are never ours.
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "common/own_fds.h"
#include "preload/real_functions.h"

namespace hybridprof::preload {
namespace {

// close_range(2) itself (glibc's closefrom() calls it internally, past
// any interposer); where the kernel has none, one close at a time.
int close_range_directly(unsigned first, unsigned last, int flags) {
  if (syscall(SYS_close_range, first, last, flags) == 0) return 0;
  if (errno != ENOSYS || flags != 0) return -1;
  const long limit = sysconf(_SC_OPEN_MAX);
  for (unsigned fd = first; fd <= last && long(fd) < limit; ++fd) syscall(SYS_close, fd);
  return 0;
}

// [first, last] less our descriptors.
int close_range_around_ours(unsigned first, unsigned last, int flags) {
  if (first > last) {
    errno = EINVAL;
    return -1;
  }
  unsigned from = first;
  for (int ours = own_fds::next_owned(int(std::min<unsigned>(from, INT_MAX))); ours >= 0 && unsigned(ours) <= last;
       ours = own_fds::next_owned(ours + 1)) {
    if (unsigned(ours) > from && close_range_directly(from, unsigned(ours) - 1, flags) != 0) return -1;
    from = unsigned(ours) + 1;
    if (from == 0) return 0;  // wrapped past UINT_MAX
  }
  return from <= last ? close_range_directly(from, last, flags) : 0;
}

}  // namespace
}  // namespace hybridprof::preload

using namespace hybridprof::preload;

extern "C" {

int close(int fd) {
  if (hybridprof::own_fds::owned(fd)) return 0;  // as if closed: the number is never given out again to it
  return real().close(fd);
}

int close_range(unsigned first, unsigned last, int flags) { return close_range_around_ours(first, last, flags); }

void closefrom(int lowest) {
  if (lowest < 0) lowest = 0;
  close_range_around_ours(unsigned(lowest), UINT_MAX, 0);
}

int dup2(int old_fd, int new_fd) {
  if (old_fd != new_fd) hybridprof::own_fds::make_way(new_fd);
  return real().dup2(old_fd, new_fd);
}

int dup3(int old_fd, int new_fd, int flags) {
  if (old_fd != new_fd) hybridprof::own_fds::make_way(new_fd);
  return real().dup3(old_fd, new_fd, flags);
}

}  // extern "C"
