#include "common/own_fds.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <unordered_map>

namespace hybridprof::own_fds {
namespace {

// Which numbers are ours: a bitmap read without a lock (the interposers
// ask for every close the program makes); numbers beyond it are never
// ours (adopt() leaves such a descriptor unregistered).
constexpr int kMaxFd = 1 << 16;
std::atomic<uint64_t> g_owned[kMaxFd / 64];

void mark(int fd, bool owned) {
  const uint64_t bit = uint64_t{1} << (fd % 64);
  if (owned)
    g_owned[fd / 64].fetch_or(bit, std::memory_order_release);
  else
    g_owned[fd / 64].fetch_and(~bit, std::memory_order_release);
}

// Where each moved descriptor's user keeps its number.
std::mutex g_mutex;
std::unordered_map<int, std::atomic<int>*>& slots() {
  static auto* map = new std::unordered_map<int, std::atomic<int>*>();  // used until the process ends
  return *map;
}

// close(2) itself: the runtime's own calls to close() reach its interposer.
void close_directly(int fd) { syscall(SYS_close, fd); }

}  // namespace

int adopt(int fd, std::atomic<int>* slot) {
  if (fd < 0) return fd;
  int moved = fd >= kLowest ? fd : fcntl(fd, F_DUPFD_CLOEXEC, kLowest);
  if (moved < 0) moved = fd;  // a low limit on descriptors: it stays where it is
  if (moved != fd) close_directly(fd);
  if (moved >= kMaxFd) return moved;
  std::lock_guard lock(g_mutex);
  if (slot) slots()[moved] = slot;
  mark(moved, true);
  return moved;
}

int adopt_out_of_reach(int fd) {
  if (fd < 0) return fd;
  const int moved = fd >= kLowest ? fd : fcntl(fd, F_DUPFD_CLOEXEC, kLowest);
  if (moved != fd) close_directly(fd);
  if (moved < 0) return -EMFILE;
  // No slot: the bitmap is all that says it is ours (make_way gives such a
  // descriptor up to the program by clearing its bit).
  if (moved < kMaxFd) mark(moved, true);
  return moved;
}

bool close_out_of_reach(int fd) {
  if (fd < 0 || (fd < kMaxFd && !owned(fd))) return false;
  if (fd < kMaxFd) mark(fd, false);
  close_directly(fd);
  return true;
}

bool release(int fd) {
  if (fd < 0 || fd >= kMaxFd) return fd >= 0;
  if (!owned(fd)) return false;
  std::lock_guard lock(g_mutex);
  mark(fd, false);
  slots().erase(fd);
  return true;
}

bool owned(int fd) {
  return fd >= 0 && fd < kMaxFd && (g_owned[fd / 64].load(std::memory_order_acquire) >> (fd % 64) & 1) != 0;
}

int next_owned(int from) {
  if (from < 0) from = 0;
  for (int word = from / 64; word < kMaxFd / 64; ++word) {
    uint64_t bits = g_owned[word].load(std::memory_order_acquire);
    if (word == from / 64) bits &= ~uint64_t{0} << (from % 64);
    if (bits != 0) return word * 64 + __builtin_ctzll(bits);
  }
  return -1;
}

void make_way(int fd) {
  if (!owned(fd)) return;
  std::lock_guard lock(g_mutex);
  mark(fd, false);
  const auto it = slots().find(fd);
  if (it == slots().end()) return;  // given up: the program's now
  std::atomic<int>* slot = it->second;
  slots().erase(it);
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, kLowest);
  if (moved < 0 || moved >= kMaxFd) {
    slot->store(-1);  // its user stops writing there
    return;
  }
  slots()[moved] = slot;
  mark(moved, true);
  slot->store(moved);
}

}  // namespace hybridprof::own_fds
