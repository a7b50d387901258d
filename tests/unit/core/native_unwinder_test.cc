// The signal path's unwinder (unwind/native_unwinder.h) with the runtime's
// module lookups: a separate program, since it stands in for the loader's
// dl_iterate_phdr as the preloaded runtime does.
#include "unwind/native_unwinder.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <thread>
#include <link.h>
#include <signal.h>

#include "trace/records.h"
#include "unwind/libunwind_tls.h"
#include "unwind/loader_snapshot.h"

// As preload/interpose_loader.cc: libunwind's lookups during the runtime's
// unwinds are answered from the snapshot.
extern "C" int dl_iterate_phdr(int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  if (hybridprof::libunwind_lookups_use_snapshot())
    return hybridprof::LoaderSnapshot::instance().iterate(callback, data);
  using Real = int (*)(int (*)(dl_phdr_info*, size_t, void*), void*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "dl_iterate_phdr"));
  return real(callback, data);
}

namespace hybridprof {
namespace {

constexpr uint32_t kMaxDepth = 128;
uint64_t g_ips[kMaxDepth + kUnwindScratchFrames];
uint32_t g_depth = 0, g_flags = 0;
bool g_snapshot_stale = false;

void on_signal(int, siginfo_t*, void* ucontext) {
  g_flags = 0;
  g_snapshot_stale = false;
  g_depth = unwind_signal_context(ucontext, g_ips, kMaxDepth, &g_flags, &g_snapshot_stale);
}

__attribute__((noinline)) void interrupt_here() {
  raise(SIGUSR2);
  asm volatile("" ::: "memory");  // not a tail call: this frame stays
}

// The test's samples: SIGUSR2 into on_signal, on this thread.
void install_sample_handler() {
  prepare_unwinder_for_process();
  prepare_unwinder_for_thread(/*with_trace_cache=*/true);
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  ASSERT_EQ(sigaction(SIGUSR2, &sa, nullptr), 0);
}

// Does the last unwind pass through the module that holds `symbol`?
bool passes_through(const void* symbol) {
  Dl_info want{};
  if (dladdr(symbol, &want) == 0) return false;
  for (uint32_t i = 0; i < g_depth; ++i) {
    Dl_info at{};
    if (dladdr(reinterpret_cast<void*>(g_ips[i] - 1), &at) != 0 && at.dli_fbase == want.dli_fbase) return true;
  }
  return false;
}

// A sample that lands while a module is missing from the snapshot (loaded
// since its last rebuild) unwinds through the module's frames all the same
// (the module is described from the loader's lock-free lookup), and so do
// samples through the same addresses once the snapshot knows it. (The fast
// path's frame cache keeps what it first made of an address: without a
// second look, its guess would stay for the thread's life.)
TEST(NativeUnwinder, AFrameMetBeforeItsModuleWasKnownUnwindsOnceItIs) {
  install_sample_handler();
  LoaderSnapshot::instance().rebuild();
  void* module = dlopen(HYBRIDPROF_LATE_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(module, nullptr) << dlerror();
  auto late_call = reinterpret_cast<int (*)(void (*)())>(dlsym(module, "late_call"));
  ASSERT_NE(late_call, nullptr);

  late_call(interrupt_here);  // the snapshot does not know the module yet
  EXPECT_EQ(g_flags & kSampleUnwindFailed, 0u) << "before the rebuild: " << g_depth << " frames";
  EXPECT_TRUE(passes_through(reinterpret_cast<void*>(late_call))) << "before the rebuild";
  EXPECT_TRUE(g_snapshot_stale) << "the caller is told a rebuild is due";

  LoaderSnapshot::instance().rebuild();
  for (int i = 0; i < 3; ++i) {
    late_call(interrupt_here);
    EXPECT_EQ(g_flags & kSampleUnwindFailed, 0u) << "call " << i << ": " << g_depth << " frames";
    EXPECT_FALSE(g_snapshot_stale) << "call " << i;
    EXPECT_TRUE(passes_through(reinterpret_cast<void*>(late_call))) << "call " << i;
    EXPECT_TRUE(passes_through(reinterpret_cast<void*>(&on_signal))) << "and on into this program";
  }
}

// Unwinds that need no second look take the fast path's result as it is.
TEST(NativeUnwinder, AnUnwindOfKnownCodeEndsAtTheThreadsRoot) {
  install_sample_handler();
  interrupt_here();
  EXPECT_EQ(g_flags, 0u);
  ASSERT_GT(g_depth, 2u);
  EXPECT_TRUE(is_stack_root(g_ips[g_depth - 1]));
}

// A thread's first sample makes its trace cache (not its start): that
// unwind, step by step, and the next, on the fast path, both end at the
// thread's root, which the first found.
TEST(NativeUnwinder, AThreadsFirstUnwindIsWholeAndSoAreTheNext) {
  install_sample_handler();
  std::thread([] {
    prepare_unwinder_for_thread(/*with_trace_cache=*/false);
    for (int i = 0; i < 3; ++i) {
      interrupt_here();
      EXPECT_EQ(g_flags, 0u) << "sample " << i << ": " << g_depth << " frames";
      ASSERT_GT(g_depth, 2u);
      EXPECT_TRUE(is_stack_root(g_ips[g_depth - 1])) << "sample " << i;
      EXPECT_TRUE(passes_through(reinterpret_cast<void*>(&on_signal))) << "sample " << i;
    }
  }).join();
}

// libunwind, loaded with this program, has static TLS: its imports of
// __tls_get_addr are answered without the loader (unwind/libunwind_tls.h),
// the same address the loader gives, on every thread; unwinds still work.
TEST(NativeUnwinder, LibunwindsTlsIsReachedWithoutTheLoader) {
  EXPECT_EQ(prepare_unwinder_for_process(), "");
  EXPECT_TRUE(libunwind_tls_redirected());
  EXPECT_TRUE(libunwind_tls_holds_on_this_thread());
  install_sample_handler();
  std::thread([] {
    EXPECT_TRUE(libunwind_tls_holds_on_this_thread());
    prepare_unwinder_for_thread(/*with_trace_cache=*/false);
    for (int i = 0; i < 2; ++i) {  // the first makes the trace cache (libunwind's TLS), the second uses it
      interrupt_here();
      EXPECT_EQ(g_flags, 0u) << "sample " << i;
      ASSERT_GT(g_depth, 2u);
      EXPECT_TRUE(is_stack_root(g_ips[g_depth - 1])) << "sample " << i;
    }
  }).join();
  EXPECT_TRUE(libunwind_tls_redirected());
}

}  // namespace
}  // namespace hybridprof
