#include "unwind/native_unwinder.h"

#include <sys/auxv.h>
#include <ucontext.h>

#include <cstring>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "trace/records.h"
#include "unwind/loader_snapshot.h"

namespace hybridprof {
namespace {

// Frames of the handler itself (this function, the sample handler, the
// kernel's signal trampoline) above the interrupted frame; unw_backtrace
// starts at its caller, so a few slots more than --max-depth are asked for.
constexpr uint32_t kHandlerFrames = kUnwindScratchFrames;
constexpr int kMaxDepthLimitForRoot = 1024;

// The outermost frame of the calling thread, as the first unwind on it sees
// it: threads end their unwind there when it is complete.
__thread uint64_t tls_root_ip __attribute__((tls_model("initial-exec"))) = 0;

// Nonzero while one of the unwinds below runs on this thread: libunwind's
// module lookups then go to LoaderSnapshot (see loader_snapshot.h).
__thread int tls_snapshot_lookups __attribute__((tls_model("initial-exec"))) = 0;

// For the length of an unwind. Also outside handlers: libunwind holds its
// own lock while it looks a module up, and a handler on another thread may
// need that lock while its thread holds the loader's.
struct SnapshotLookups {
  SnapshotLookups() { ++tls_snapshot_lookups; }
  ~SnapshotLookups() { --tls_snapshot_lookups; }
};

bool in_program_entry(uint64_t ip) {
  // The main thread ends in the executable's _start (a few dozen bytes).
  static const uint64_t entry = getauxval(AT_ENTRY);
  return ip >= entry && ip < entry + 64;
}

}  // namespace

void prepare_unwinder_for_thread() {
  // Per-thread caching avoids libunwind's global cache lock in the handler,
  // and this first unwind creates the thread's trace cache outside of it.
  static bool policy_set = false;
  if (!policy_set) {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    policy_set = true;
  }
  LoaderSnapshot::instance().refresh_if_changed();  // the thread may start in a library just loaded
  in_program_entry(0);  // its static is set here, not in a handler
  SnapshotLookups lookups;
  void* ips[kMaxDepthLimitForRoot];
  const int n = unw_backtrace(ips, kMaxDepthLimitForRoot);
  if (n > 0 && n < kMaxDepthLimitForRoot) tls_root_ip = reinterpret_cast<uint64_t>(ips[n - 1]);
}

namespace {

// Sets kSampleTruncated / kSampleUnwindFailed for an unwind of `depth`
// frames (`ips`) that stopped where it stopped; `full` = it filled the room
// it had.
void judge_end(const uint64_t* ips, uint32_t depth, bool full, uint32_t* flags) {
  const uint64_t last = ips[depth - 1];
  if (last == tls_root_ip || in_program_entry(last)) return;
  *flags |= full ? kSampleTruncated : kSampleUnwindFailed;
}

// SIGNAL PATH. The slow unwind: unw_step frame by frame from the
// interrupted context, each frame's unwind table looked up (in the
// snapshot) afresh. Returns the depth, 0 when it cannot start.
uint32_t step_from_signal_context(const ucontext_t* uc, uint64_t* ips, uint32_t max_depth, uint32_t* flags) {
  // On x86-64 Linux libunwind's context is a ucontext_t; a copy, since
  // unw_init_local2 takes it writable.
  static_assert(sizeof(unw_context_t) == sizeof(ucontext_t));
  unw_context_t context;
  std::memcpy(&context, uc, sizeof context);
  unw_cursor_t cursor;
  if (unw_init_local2(&cursor, &context, UNW_INIT_SIGNAL_FRAME) != 0) return 0;
  uint32_t n = 0;
  int step = 1;
  while (n <= max_depth && step > 0) {
    unw_word_t ip = 0;
    if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
    ips[n++] = ip;
    step = unw_step(&cursor);
  }
  if (n == 0) return 0;
  if (n > max_depth) {
    *flags |= kSampleTruncated;
    return max_depth;
  }
  if (step < 0) *flags |= kSampleUnwindFailed;
  else judge_end(ips, n, false, flags);
  return n;
}

}  // namespace

// SIGNAL PATH: see header. unw_backtrace is libunwind's fast path: it walks
// with cached frame descriptions (the trace cache made in
// prepare_unwinder_for_thread) and only falls back to DWARF unw_step for
// frames it has not seen. It starts here, so the handler's own frames are
// skipped up to the interrupted instruction.
//
// The trace cache never forgets: a frame first met while its module was
// missing from the snapshot (loaded since the last rebuild) was described
// by a guess, and every later unwind through that address would go wrong
// the same way for the thread's life. So an unwind that does not end at
// the thread's root is done again step by step, which looks the module up
// again (only then: it costs several times the fast path).
uint32_t unwind_signal_context(void* ucontext, uint64_t* ips, uint32_t max_depth, uint32_t* flags,
                               bool* snapshot_stale) {
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  const uint64_t interrupted = uint64_t(uc->uc_mcontext.gregs[REG_RIP]);
  SnapshotLookups lookups;
  void** raw = reinterpret_cast<void**>(ips);
  const int n = unw_backtrace(raw, static_cast<int>(max_depth + kHandlerFrames));
  int first = 0;
  while (first < n && reinterpret_cast<uint64_t>(raw[first]) != interrupted) ++first;
  uint32_t depth = 0, fast_flags = 0;
  if (first < n) {
    depth = static_cast<uint32_t>(n - first);
    if (depth > max_depth) {
      depth = max_depth;
      fast_flags |= kSampleTruncated;
    }
    for (uint32_t i = 0; i < depth; ++i) ips[i] = reinterpret_cast<uint64_t>(raw[first + i]);
    if (!(fast_flags & kSampleTruncated))
      judge_end(ips, depth, static_cast<uint32_t>(n) == max_depth + kHandlerFrames, &fast_flags);
    if (!(fast_flags & kSampleUnwindFailed)) {
      *flags |= fast_flags;
      return depth;
    }
  }
  // Step by step, over what the fast path wrote: the slow path looks every
  // module up afresh, so its result is the one to trust. A module the
  // snapshot misses (the first the fast path met) is offered to those
  // lookups for this unwind.
  LoaderSnapshot& snapshot = LoaderSnapshot::instance();
  bool offered = snapshot.offer_missed(interrupted);
  for (uint32_t i = 0; i < depth && !offered; ++i) offered = snapshot.offer_missed(ips[i]);
  if (snapshot_stale) *snapshot_stale = offered;
  uint32_t slow_flags = 0;
  const uint32_t slow_depth = step_from_signal_context(uc, ips, max_depth, &slow_flags);
  LoaderSnapshot::forget_missed();
  if (slow_depth != 0) {
    *flags |= slow_flags;
    return slow_depth;
  }
  *flags |= kSampleUnwindFailed;  // neither found the interrupted frame's caller
  ips[0] = interrupted;
  return 1;
}

bool libunwind_lookups_use_snapshot() { return tls_snapshot_lookups != 0; }

bool is_stack_root(uint64_t ip) { return ip == tls_root_ip || in_program_entry(ip); }

// unw_step rather than unw_backtrace: the stack pointer of every frame is
// needed for the slots. Frame 0 is this function and is not kept.
uint32_t unwind_from_caller(uint64_t* ips, uint64_t* slots, uint32_t max_depth, uint32_t* flags) {
  LoaderSnapshot::instance().refresh_if_changed();
  SnapshotLookups lookups;
  unw_context_t context;
  unw_cursor_t cursor;
  if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0) {
    *flags |= kSampleUnwindFailed;
    return 0;
  }
  // One frame more than kept, to tell a stack of exactly max_depth frames
  // from a longer (truncated) one.
  uint32_t n = 0;
  int step = 0;
  while (n <= max_depth && (step = unw_step(&cursor)) > 0) {
    unw_word_t ip = 0, sp = 0;
    unw_get_reg(&cursor, UNW_REG_IP, &ip);
    unw_get_reg(&cursor, UNW_REG_SP, &sp);
    ips[n] = ip;
    // The call pushed the return address just below the caller's stack
    // pointer as it is once the callee returned.
    if (slots) slots[n] = *reinterpret_cast<const uint64_t*>(sp - 8) == ip ? sp - 8 : 0;
    ++n;
  }
  if (n > max_depth) {
    *flags |= kSampleTruncated;
    return max_depth;
  }
  if (step < 0 || n == 0 || !is_stack_root(ips[n - 1])) *flags |= kSampleUnwindFailed;
  return n;
}

}  // namespace hybridprof
