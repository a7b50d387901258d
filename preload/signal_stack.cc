// The sample handler runs on a signal stack of the runtime's own (64 KiB
// under a guard page, one per sampled thread), so that a sample costs the
// program's stack nothing: a thread that runs close to the end of its
// stack is not pushed over it by an unwind. Programs that set signal
// stacks of their own (CPython's faulthandler, stack-overflow handlers)
// keep seeing theirs through sigaltstack(), while the runtime's stays
// installed and serves their SA_ONSTACK handlers as well (it is larger
// than any they may ask for).
//
// Threads whose stacks are too small to start the runtime's part on them
// (kMinSampledStackBytes: libunwind's set-up at the thread's start needs
// about 16 KiB) start it on this stack instead (run_on_stack.h); where
// that cannot be (no memory for it, an architecture without the switch)
// they are left unsampled, counted, and named in a notice.
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)  // Linux 4.7; glibc 2.36's headers do not name it
#endif

#include "common/mapping_pool.h"
#include "preload/real_functions.h"
#include "preload/run_on_stack.h"
#include "preload/runtime.h"

namespace hybridprof::preload {
namespace {

constexpr size_t kSignalStackBytes = 64 * 1024;

size_t page_bytes() {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

size_t mapping_bytes() { return page_bytes() + kSignalStackBytes; }

// Small-stack threads left unsampled, and why (a string literal).
std::atomic<uint64_t> g_small_stack_threads{0};
std::atomic<size_t> g_smallest_stack{SIZE_MAX};
std::atomic<const char*> g_small_stack_reason{nullptr};

void count_unsampled_small_stack(size_t bytes, const char* reason) {
  g_small_stack_threads.fetch_add(1, std::memory_order_relaxed);
  g_small_stack_reason.store(reason, std::memory_order_relaxed);
  size_t smallest = g_smallest_stack.load(std::memory_order_relaxed);
  while (bytes < smallest && !g_smallest_stack.compare_exchange_weak(smallest, bytes)) {
  }
}

// Ended threads' stacks, for the next threads. Constant-initialized: the
// runtime's constructor may start the main thread's before this file's
// dynamic initializers would run.
MappingPool<4> g_kept_stacks;

// A guard page, then the stack: mapped, or an ended thread's.
void* map_signal_stack() {
  g_kept_stacks.set_bytes(mapping_bytes());
  if (void* kept = g_kept_stacks.take(mapping_bytes())) return kept;
  void* map = mmap(nullptr, mapping_bytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) return nullptr;
  if (mprotect(static_cast<unsigned char*>(map) + page_bytes(), kSignalStackBytes, PROT_READ | PROT_WRITE) != 0) {
    munmap(map, mapping_bytes());
    return nullptr;
  }
  return map;
}

void unmap_signal_stack(void* map) {
  if (!g_kept_stacks.give(map, mapping_bytes())) munmap(map, mapping_bytes());
}

}  // namespace

bool install_signal_stack(ThreadContext& ctx, void* mapped) {
  void* map = mapped != nullptr ? mapped : map_signal_stack();
  if (map == nullptr) return false;
  stack_t ss{};
  ss.ss_sp = static_cast<unsigned char*>(map) + page_bytes();
  ss.ss_size = kSignalStackBytes;
  // The program's signal stack, if it set one before the runtime started
  // (the main thread): what sigaltstack() goes on telling it.
  stack_t before{};
  if (real().sigaltstack(&ss, &before) != 0) {
    if (mapped == nullptr) unmap_signal_stack(map);  // else its mapper's (which may be running on it)
    return false;
  }
  before.ss_flags &= SS_DISABLE;
  ctx.signal_stack = map;
  ctx.program_signal_stack = before;
  return true;
}

void remove_signal_stack(ThreadContext& ctx) {
  if (ctx.signal_stack == nullptr) return;
  // The program's own again, if it has one; none otherwise. The kernel
  // refuses (EPERM) while a handler runs on the runtime's (a thread ending
  // inside one): it stays that thread's, leaked.
  stack_t restore = ctx.program_signal_stack;
  if (restore.ss_flags & SS_DISABLE) restore = stack_t{nullptr, SS_DISABLE, 0};
  if (real().sigaltstack(&restore, nullptr) != 0) return;
  unmap_signal_stack(ctx.signal_stack);
  ctx.signal_stack = nullptr;
}

bool stack_too_small_to_sample(size_t bytes) {
  if (bytes == 0 || bytes >= kMinSampledStackBytes || can_run_on_other_stack()) return false;
  count_unsampled_small_stack(bytes, "this architecture cannot start the profiler on a stack of its own");
  return true;
}

void begin_thread_on_signal_stack(KnownStack stack) {
  void* map = map_signal_stack();
  if (map == nullptr) {
    count_unsampled_small_stack(stack.bytes, "no memory was left for the profiler's own stack");
    return;
  }
  struct Start {
    KnownStack stack;
    void* map;
  } start{stack, map};
  hybridprof_run_on_stack(static_cast<unsigned char*>(map) + mapping_bytes(), [](void* p) {
    const auto* s = static_cast<const Start*>(p);
    thread_begin(s->stack, s->map);
  }, &start);
  const ThreadContext* ctx = this_thread();
  if (ctx == nullptr || ctx->signal_stack != map) unmap_signal_stack(map);  // thread_begin did not keep it
}

std::string small_stack_notice() {
  const uint64_t n = g_small_stack_threads.load();
  if (n == 0) return {};
  const char* reason = g_small_stack_reason.load();
  return std::to_string(n) + (n == 1 ? " thread was" : " threads were") + " not sampled: " +
         (n == 1 ? "its stack" : "their stacks") + " (the smallest " + std::to_string(g_smallest_stack.load() / 1024) +
         " KiB) " + (n == 1 ? "is" : "are") + " smaller than the " + std::to_string(kMinSampledStackBytes / 1024) +
         " KiB the profiler needs to start on a thread, and " + (reason ? reason : "?");
}

}  // namespace hybridprof::preload

using namespace hybridprof::preload;

// A thread with the runtime's signal stack: the program's is only
// remembered (and reported back); the runtime's stays. Elsewhere: as is.
extern "C" int sigaltstack(const stack_t* ss, stack_t* old) {
  ThreadContext* ctx = this_thread();
  if (ctx == nullptr || ctx->signal_stack == nullptr) return real().sigaltstack(ss, old);
  stack_t now{};
  if (real().sigaltstack(nullptr, &now) != 0) return -1;
  const bool on_it = (now.ss_flags & SS_ONSTACK) != 0;
  if (ss != nullptr) {
    if (on_it) {  // as the kernel: not while a handler runs on a signal stack
      errno = EPERM;
      return -1;
    }
    if (ss->ss_flags & ~int(SS_DISABLE | SS_AUTODISARM)) {
      errno = EINVAL;
      return -1;
    }
    if (!(ss->ss_flags & SS_DISABLE) && ss->ss_size < size_t(MINSIGSTKSZ)) {
      errno = ENOMEM;
      return -1;
    }
  }
  if (old != nullptr) {
    *old = ctx->program_signal_stack;
    if (on_it) old->ss_flags = SS_ONSTACK;
  }
  if (ss != nullptr) ctx->program_signal_stack = *ss;
  return 0;
}
