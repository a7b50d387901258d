#include "unwind/native_unwinder.h"

#include <link.h>
#include <sys/auxv.h>
#include <ucontext.h>

#include <cstring>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "trace/records.h"
#include "sigsafe/safe_read.h"
#include "unwind/libunwind_tls.h"
#include "unwind/loader_snapshot.h"
#include "unwind/recovered_callers.h"
#include "unwind/return_address.h"
#include "unwind/stack_scan.h"

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

struct CodeRange {
  uint64_t start = 0, end = 0;
  bool contains(uint64_t ip) const { return ip >= start && ip < end; }
};
CodeRange g_libunwind;  // libunwind's: a thread stopped there may hold its pool's lock
CodeRange g_libc;       // where threads other than the main one start (clone3)

// libunwind's trace cache (unw_backtrace's fast path) exists on this
// thread. Made at the thread's first sample, not at its start: making it
// maps and fills 256 KiB, about 120 us, which a short thread (a pool's task,
// a thread per request) never earns back.
__thread bool tls_trace_cache_ready __attribute__((tls_model("initial-exec"))) = false;

// Where an unwind ended (libunwind's step said "no caller": `step` 0) at
// `ip`: the thread's root? Before the thread's root is known (its first
// unwind), the end libunwind finds in libc's thread start is it.
bool ends_at_root(uint64_t ip, int step) {
  if (is_stack_root(ip)) return true;
  if (step != 0 || tls_root_ip != 0 || !g_libc.contains(ip)) return false;
  tls_root_ip = ip;
  return true;
}

}  // namespace

std::string prepare_unwinder_for_process() {
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  dl_find_object found{};
  if (_dl_find_object(reinterpret_cast<void*>(&unw_backtrace), &found) == 0)
    g_libunwind = {reinterpret_cast<uint64_t>(found.dlfo_map_start), reinterpret_cast<uint64_t>(found.dlfo_map_end)};
  if (_dl_find_object(reinterpret_cast<void*>(&pthread_self), &found) == 0)
    g_libc = {reinterpret_cast<uint64_t>(found.dlfo_map_start), reinterpret_cast<uint64_t>(found.dlfo_map_end)};
  in_program_entry(0);  // its static is set here, not in a handler
  return redirect_libunwind_tls();
}

void prepare_unwinder_for_thread(bool with_trace_cache, size_t stack_bytes, size_t guard_bytes) {
  libunwind_tls_holds_on_this_thread();
  LoaderSnapshot::instance().refresh_if_changed();  // the thread may start in a library just loaded
  remember_thread_stack(stack_bytes, guard_bytes);
  if (!with_trace_cache) return;
  SnapshotLookups lookups;
  void* ips[kMaxDepthLimitForRoot];
  const int n = unw_backtrace(ips, kMaxDepthLimitForRoot);
  if (n > 0 && n < kMaxDepthLimitForRoot) tls_root_ip = reinterpret_cast<uint64_t>(ips[n - 1]);
  tls_trace_cache_ready = true;
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

// How far the step-by-step unwind goes to recover a caller where the
// unwind tables end: scans per sample (a recovery inside a recovery's
// continuation is the next), candidates tried per sample over all of them,
// and the stack window a scan reads above the frame's stack pointer (JIT
// kernels keep spills and locals below their return address).
constexpr int kMaxRecoveries = 4;
constexpr int kMaxCandidates = 32;
constexpr size_t kScanWindowBytes = 16 * 1024;

// Is `ip` in a loaded module, one libunwind may find tables for? Code
// generated at run time and garbage are not. (_dl_find_object is
// lock-free; the snapshot also answers for the vDSO.)
bool in_module(uint64_t ip) {
  dl_find_object found{};
  uint64_t segment = 0;
  return _dl_find_object(reinterpret_cast<void*>(ip), &found) == 0 ||
         LoaderSnapshot::instance().in_executable_code(ip, &segment);
}

// Pages of code outside any module (JIT code) that this thread's unwinds
// found mapped, behind call instructions: a few, most recent first, so a
// stack through the same generated code does not pay a system call per
// frame at every sample.
constexpr int kKnownJitPages = 8;
__thread uint64_t tls_jit_pages[kKnownJitPages] __attribute__((tls_model("initial-exec")));

// SIGNAL PATH. Is `ip`, a return address in no module, one into code that
// exists (generated at run time), rather than garbage a corrupted stack
// gave the tables? Its bytes must be readable (one process_vm_readv, not a
// load: it may be unmapped) and end with a call.
bool is_jit_return_address(uint64_t ip) {
  const uint64_t page = ip >> 12;
  for (uint64_t known : tls_jit_pages)
    if (known == page && ((ip - kLongestCall) >> 12) == page) return true;
  uint8_t code[kLongestCall];
  if (ip < kLongestCall || !safe_read(ip - kLongestCall, code, sizeof code) ||
      call_before(code, sizeof code) == CallKind::kNone)
    return false;
  for (int i = kKnownJitPages - 1; i > 0; --i) tls_jit_pages[i] = tls_jit_pages[i - 1];
  tls_jit_pages[0] = page;
  return true;
}

// Where a walk stopped short of the thread's root: its last frame
// (ips[depth - 1]), whose caller the tables did not give, and the registers
// a continuation from a caller found above it starts with.
struct Break {
  uint32_t depth = 0;
  uint64_t sp = 0;
  bool in_jit = false;  // its code is in no module
  uint64_t rbp = 0, rbx = 0, r12 = 0, r13 = 0, r14 = 0, r15 = 0;
};

// kCorrupt: the tables led to an address that is no code (a return
// address the program overwrote): nothing past it can be trusted, and no
// scan recovers what the stack no longer holds.
enum class WalkEnd { kRoot, kTruncated, kBreak, kCorrupt };

// SIGNAL PATH. Steps `cursor` outward, appending frames at ips[*depth...].
// Stops at the thread's root, at max_depth (having seen one frame more), or
// at a frame it cannot step out of truthfully: one in no module (JIT code:
// libunwind would guess a frame-pointer chain), or one whose step fails or
// ends the stack anywhere but at the root. `first_is_signal_frame`: the
// cursor's first frame is the interrupted instruction, not a return address.
// `record`: where the return-address slots of frames at ips[record_base...]
// are noted (RecoveredCallers::slot_for), or null.
WalkEnd walk(unw_cursor_t* cursor, uint64_t* ips, uint32_t* depth, uint32_t max_depth, bool first_is_signal_frame,
             Break* at_break, RecoveredCallers* record = nullptr, uint32_t record_base = 0) {
  bool first = true;
  for (;;) {
    unw_word_t ip = 0, sp = 0;
    unw_get_reg(cursor, UNW_REG_SP, &sp);  // the CFA: no memory read
    if (unw_get_reg(cursor, UNW_REG_IP, &ip) != 0 || ip == 0) {
      // Stepped past the last frame: the end is the previous one's.
      if (*depth > 0 && is_stack_root(ips[*depth - 1])) return WalkEnd::kRoot;
      *at_break = Break{*depth, sp};
      return WalkEnd::kBreak;
    }
    if (*depth > max_depth) return WalkEnd::kTruncated;
    // The call that made this frame's caller pushed ip just below sp.
    if (record != nullptr && *depth >= record_base)
      if (uint64_t* slot = record->slot_for(*depth - record_base)) *slot = sp - 8;
    ips[(*depth)++] = ip;
    const bool tables = in_module(first && first_is_signal_frame ? ip : ip - 1);
    if (!tables && !first && !is_jit_return_address(ip)) {
      --*depth;
      return WalkEnd::kCorrupt;
    }
    first = false;
    const int step = tables ? unw_step(cursor) : -1;
    if (step > 0) continue;
    if (step == 0 && ends_at_root(ip, step)) return WalkEnd::kRoot;
    // The callee-saved registers as this frame had them (a failed step
    // leaves the cursor where it was).
    *at_break = Break{*depth, sp, !tables};
    unw_word_t value = 0;
    const struct {
      int reg;
      uint64_t* out;
    } saved[] = {{UNW_X86_64_RBP, &at_break->rbp}, {UNW_X86_64_RBX, &at_break->rbx},
                 {UNW_X86_64_R12, &at_break->r12}, {UNW_X86_64_R13, &at_break->r13},
                 {UNW_X86_64_R14, &at_break->r14}, {UNW_X86_64_R15, &at_break->r15}};
    for (const auto& r : saved) *r.out = unw_get_reg(cursor, r.reg, &value) == 0 ? value : 0;
    return WalkEnd::kBreak;
  }
}

// SIGNAL PATH. The frame pointer a caller recovered from a return address
// at `slot` continues with: the broken frame's own `rbp` when it points
// into the stack (code that keeps the caller's, or a frame chain), else
// the word below the return address when that does, above it: code
// generated at run time that pushes rbp first and then uses it as a
// scratch register (as JIT compilers may) saved the caller's there. A
// caller whose unwind rule is rbp-based (any function built with frame
// pointers) steps wrongly from a garbage rbp, and the recovery then
// needs more scans, each of which may take a stale return address for a
// frame (a glibc function between main and its caller, say). Plain loads
// inside the thread's stack only.
uint64_t caller_frame_pointer(uint64_t rbp, uint64_t slot, const StackBounds& stack) {
  if (stack.contains(rbp)) return rbp;
  if (!stack.contains(slot - 8)) return rbp;
  const uint64_t saved = *reinterpret_cast<const uint64_t*>(slot - 8);
  return saved > slot && stack.contains(saved) ? saved : rbp;
}

// SIGNAL PATH. The slow unwind: unw_step frame by frame from the
// interrupted context, each frame's unwind table looked up (in the
// snapshot) afresh. Where the tables end short of the thread's root, a
// caller is recovered by scanning the stack above the last frame for a
// plausible return address (return_address.h) and continuing from it; a
// recovery is kept only when its continuation reaches the root (or fills
// max_depth), and the next candidate is tried otherwise, backtracking
// through nested recoveries. Returns the depth, 0 when it cannot start.
uint32_t step_from_signal_context(const ucontext_t* uc, uint64_t* ips, uint32_t max_depth, uint32_t* flags,
                                  RecoveredCallers* recovered) {
  // On x86-64 Linux libunwind's context is a ucontext_t; a copy, since
  // unw_init_local2 takes it writable (and libunwind reads it while the
  // cursor lives).
  static_assert(sizeof(unw_context_t) == sizeof(ucontext_t));
  unw_context_t context;
  std::memcpy(&context, uc, sizeof context);
  unw_cursor_t cursor;
  if (unw_init_local2(&cursor, &context, UNW_INIT_SIGNAL_FRAME) != 0) return 0;
  uint32_t depth = 0;
  Break pending;  // where the last walk broke
  WalkEnd end = walk(&cursor, ips, &depth, max_depth, true, &pending);
  if (depth == 0) return 0;
  const uint32_t unrecovered_depth = depth;
  const StackBounds stack = this_thread_stack();
  // The callers the last recovery found, if they are still in place.
  if (end == WalkEnd::kBreak && recovered != nullptr)
    if (const uint32_t recalled = recovered->recall(pending.sp, stack, ips, depth, max_depth)) {
      *flags |= kSampleUnwindRecovered;
      return recalled;
    }
  // The recoveries in progress, innermost last: where each walk broke, and
  // its scan, which resumes where it stopped when a candidate fails.
  Break breaks[kMaxRecoveries];
  StackScan scans[kMaxRecoveries];
  int levels = 0, candidates = 0;
  bool new_break = true;
  while (end == WalkEnd::kBreak) {
    // A continuation that breaks beyond the nesting bound just fails.
    if (new_break && levels < kMaxRecoveries) {
      breaks[levels] = pending;
      scans[levels] = StackScan(pending.sp, stack, kScanWindowBytes);
      ++levels;
    }
    new_break = false;
    // The next candidate of the innermost scan that has one left.
    uint64_t slot = 0;
    while (levels > 0 && candidates < kMaxCandidates) {
      const bool callee_is_jit = breaks[levels - 1].in_jit;
      slot = scans[levels - 1].next([&](uint64_t word) { return plausible_return_address(word, callee_is_jit); });
      if (slot != 0) break;
      --levels;
    }
    if (slot == 0) break;
    ++candidates;
    const Break& from = breaks[levels - 1];
    auto& regs = context.uc_mcontext.gregs;
    regs[REG_RIP] = greg_t(*reinterpret_cast<const uint64_t*>(slot));
    regs[REG_RSP] = greg_t(slot + 8);  // as the caller sees it once the call returned
    regs[REG_RBP] = greg_t(caller_frame_pointer(from.rbp, slot, stack));
    regs[REG_RBX] = greg_t(from.rbx);
    regs[REG_R12] = greg_t(from.r12);
    regs[REG_R13] = greg_t(from.r13);
    regs[REG_R14] = greg_t(from.r14);
    regs[REG_R15] = greg_t(from.r15);
    depth = from.depth;
    if (unw_init_local2(&cursor, &context, 0) != 0) continue;
    end = walk(&cursor, ips, &depth, max_depth, false, &pending, recovered, breaks[0].depth);
    new_break = true;
    if (end == WalkEnd::kCorrupt) {  // this candidate led nowhere: the next one
      end = WalkEnd::kBreak;
      new_break = false;
    }
  }
  if (end == WalkEnd::kBreak || end == WalkEnd::kCorrupt) {
    *flags |= kSampleUnwindFailed;
    return unrecovered_depth;  // what the tables gave, before any recovery
  }
  if (levels > 0) {
    *flags |= kSampleUnwindRecovered;
    if (end == WalkEnd::kRoot && recovered != nullptr)
      recovered->remember(breaks[0].sp, ips, breaks[0].depth, depth, stack);
  }
  if (end == WalkEnd::kTruncated) {
    *flags |= kSampleTruncated;
    return max_depth;
  }
  return depth;
}

// SIGNAL PATH. The unwind step by step, over the `depth` frames a fast
// path wrote to ips (if any): the slow path looks every module up afresh,
// so its result is the one to trust. A module the snapshot misses (the
// first the fast path met) is offered to those lookups for this unwind.
uint32_t unwind_step_by_step(const ucontext_t* uc, uint64_t* ips, uint32_t depth, uint32_t max_depth,
                             uint32_t* flags, bool* snapshot_stale, RecoveredCallers* recovered) {
  const uint64_t interrupted = uint64_t(uc->uc_mcontext.gregs[REG_RIP]);
  LoaderSnapshot& snapshot = LoaderSnapshot::instance();
  bool offered = snapshot.offer_missed(interrupted);
  for (uint32_t i = 0; i < depth && !offered; ++i) offered = snapshot.offer_missed(ips[i]);
  if (snapshot_stale) *snapshot_stale = offered;
  uint32_t slow_flags = 0;
  const uint32_t slow_depth = step_from_signal_context(uc, ips, max_depth, &slow_flags, recovered);
  LoaderSnapshot::forget_missed();
  if (slow_depth != 0) {
    *flags |= slow_flags;
    return slow_depth;
  }
  *flags |= kSampleUnwindFailed;  // neither found the interrupted frame's caller
  ips[0] = interrupted;
  return 1;
}

// SIGNAL PATH. A thread's first sample: step by step (no trace cache is
// needed), then the trace cache is made for the next ones, unless the
// thread was stopped inside libunwind: there it may hold the lock of the
// pool the cache comes from (a program that unwinds itself), and making
// the cache would wait for that lock forever. Making it takes no other
// lock and no malloc: libunwind maps the cache's memory, and its masks are
// answered without system calls in the handler.
uint32_t first_unwind_of_thread(const ucontext_t* uc, uint64_t* ips, uint32_t max_depth, uint32_t* flags,
                                bool* snapshot_stale) {
  uint32_t step_flags = 0;
  uint32_t depth = unwind_step_by_step(uc, ips, 0, max_depth, &step_flags, snapshot_stale, nullptr);
  if (step_flags & (kSampleUnwindFailed | kSampleUnwindRecovered)) {
    // Again, with the modules its frames are in offered to the lookups
    // (as the fast path's frames are, on later samples): a module loaded
    // since the snapshot's rebuild breaks the walk where it is met.
    step_flags = 0;
    depth = unwind_step_by_step(uc, ips, depth, max_depth, &step_flags, snapshot_stale, nullptr);
  }
  // Two frames at least: the code that called into libunwind's pool is one
  // step from the interrupted one (in libc's mmap or mutex) at most.
  bool in_libunwind = depth < 2;
  for (uint32_t i = 0; i < depth && !in_libunwind; ++i) in_libunwind = g_libunwind.contains(ips[i]);
  if (!in_libunwind) {
    void* ignored[1];
    unw_backtrace(ignored, 1);
    tls_trace_cache_ready = true;
  }
  *flags |= step_flags;
  return depth;
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
                               bool* snapshot_stale, RecoveredCallers* recovered) {
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  const uint64_t interrupted = uint64_t(uc->uc_mcontext.gregs[REG_RIP]);
  SnapshotLookups lookups;
  if (!tls_trace_cache_ready) return first_unwind_of_thread(uc, ips, max_depth, flags, snapshot_stale);
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
  return unwind_step_by_step(uc, ips, depth, max_depth, flags, snapshot_stale, recovered);
}

bool libunwind_lookups_use_snapshot() { return tls_snapshot_lookups != 0; }

bool is_stack_root(uint64_t ip) { return ip == tls_root_ip || in_program_entry(ip); }

bool called_by_own_unwind(uint64_t ip) { return tls_snapshot_lookups != 0 && g_libunwind.contains(ip); }

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
  if (step < 0 || n == 0 || !ends_at_root(ips[n - 1], step)) *flags |= kSampleUnwindFailed;
  return n;
}

}  // namespace hybridprof
