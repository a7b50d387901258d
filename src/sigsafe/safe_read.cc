#include "sigsafe/safe_read.h"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

#include "sigsafe/fault_tolerant_copy.h"

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

// SIGNAL PATH. Plain loads where the thread is armed for faults
// (fault_tolerant_copy.h), process_vm_readv otherwise. syscall(2) is a thin
// wrapper around the instruction (it only sets errno, which the handler
// restores); getpid() is async-signal-safe, and asked only when the pid is
// not remembered.
bool safe_read(uint64_t address, void* out, size_t bytes) {
  if (bytes == 0) return true;
  if (address == 0) return false;
  if (fault_tolerant_reads()) return copy_or_fault(out, address, bytes);
  iovec local{out, bytes};
  iovec remote{reinterpret_cast<void*>(address), bytes};
  const long n = syscall(SYS_process_vm_readv, self(), &local, 1ul, &remote, 1ul, 0ul);
  return n == static_cast<long>(bytes);
}

// SIGNAL PATH. process_vm_readv never splits one remote element: the
// bytes it returns end on an element boundary. Copies stop at the same
// place.
size_t safe_read_gather(const iovec* local, const iovec* remote, size_t count) {
  if (count == 0 || count > kMaxGatherReads) return 0;
  if (fault_tolerant_reads()) {
    size_t done = 0;
    while (done < count && remote[done].iov_len == local[done].iov_len &&
           copy_or_fault(local[done].iov_base, reinterpret_cast<uint64_t>(remote[done].iov_base),
                         remote[done].iov_len))
      ++done;
    return done;
  }
  const long n = syscall(SYS_process_vm_readv, self(), local, count, remote, count, 0ul);
  if (n <= 0) return 0;
  size_t done = 0, bytes = size_t(n);
  while (done < count && bytes >= remote[done].iov_len) bytes -= remote[done++].iov_len;
  return done;
}

}  // namespace hybridprof
