#include "unwind/native_unwinder.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "trace/records.h"

namespace hybridprof {

void prepare_unwinder_for_thread() {
  // Per-thread caching avoids libunwind's global cache lock in the handler.
  static bool policy_set = false;
  if (!policy_set) {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    policy_set = true;
  }
  unw_context_t context;
  unw_cursor_t cursor;
  unw_getcontext(&context);
  if (unw_init_local(&cursor, &context) == 0) {
    while (unw_step(&cursor) > 0) {
    }
  }
}

// SIGNAL PATH: see header.
uint32_t unwind_signal_context(void* ucontext, uint64_t* ips, uint32_t max_depth,
                               uint32_t* flags) {
  unw_cursor_t cursor;
  // On x86-64 Linux, unw_context_t is ucontext_t: the signal's context is the
  // interrupted frame, and UNW_INIT_SIGNAL_FRAME keeps its IP unadjusted.
  if (unw_init_local2(&cursor, static_cast<unw_context_t*>(ucontext), UNW_INIT_SIGNAL_FRAME) != 0) {
    *flags |= kSampleUnwindFailed;
    return 0;
  }
  uint32_t depth = 0;
  while (depth < max_depth) {
    unw_word_t ip = 0;
    if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
    ips[depth++] = ip;
    const int step = unw_step(&cursor);
    if (step == 0) return depth;  // reached the outermost frame
    if (step < 0) {
      *flags |= kSampleUnwindFailed;
      return depth;
    }
  }
  if (depth == max_depth) *flags |= kSampleTruncated;
  return depth;
}

}  // namespace hybridprof
