#include "sigsafe/safe_read.h"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

namespace hybridprof {
namespace {

std::atomic<pid_t> g_pid{0};

// SIGNAL PATH.
pid_t self() {
  const pid_t pid = g_pid.load(std::memory_order_relaxed);
  return pid != 0 ? pid : getpid();
}

}  // namespace

void safe_read_remember_pid(pid_t pid) { g_pid.store(pid, std::memory_order_relaxed); }

// SIGNAL PATH. syscall(2) is a thin wrapper around the instruction (it
// only sets errno, which the handler restores); getpid() is
// async-signal-safe, and asked only when the pid is not remembered.
bool safe_read(uint64_t address, void* out, size_t bytes) {
  if (bytes == 0) return true;
  if (address == 0) return false;
  iovec local{out, bytes};
  iovec remote{reinterpret_cast<void*>(address), bytes};
  const long n = syscall(SYS_process_vm_readv, self(), &local, 1ul, &remote, 1ul, 0ul);
  return n == static_cast<long>(bytes);
}

// SIGNAL PATH. process_vm_readv never splits one remote element: the
// bytes it returns end on an element boundary.
size_t safe_read_gather(const iovec* local, const iovec* remote, size_t count) {
  if (count == 0 || count > kMaxGatherReads) return 0;
  const long n = syscall(SYS_process_vm_readv, self(), local, count, remote, count, 0ul);
  if (n <= 0) return 0;
  size_t done = 0, bytes = size_t(n);
  while (done < count && bytes >= remote[done].iov_len) bytes -= remote[done++].iov_len;
  return done;
}

}  // namespace hybridprof
