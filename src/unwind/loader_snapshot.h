// The loaded modules as dl_iterate_phdr describes them, copied where the
// sample handler can read them without the dynamic loader's lock.
//
// Why: libunwind looks up the unwind tables of a frame it has not cached
// with dl_iterate_phdr, which takes the loader's lock. A sample that lands
// while its thread is taking or releasing that lock (inside dlopen, as
// Open MPI's MPI_Init does dozens of times) then waits for itself forever,
// and every other thread that unwinds waits behind libunwind's own lock.
// Nor may any of the runtime's unwinds outside handlers look modules up
// through the loader: libunwind (Debian's build has no per-thread cache)
// holds its global lock during the lookup, so one waiting for the loader's
// lock blocks a handler on another thread whose thread holds that lock.
// The runtime's dl_iterate_phdr (preload/interpose_loader.cc) answers calls
// made from inside the runtime's unwinds from this snapshot instead.
//
// The snapshot is rebuilt outside handlers whenever the loader's counters
// say a module came or went: by ModuleTable::refresh, and before every
// unwind outside a handler. A module loaded since is missing until then
// (a sample's unwind stops at its frames); a module unloaded since is
// skipped: every entry is checked with _dl_find_object, which is lock-free
// and async-signal-safe, before its callback sees it.
#pragma once

#include <link.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace hybridprof {

class LoaderSnapshot {
 public:
  using Callback = int (*)(dl_phdr_info*, size_t, void*);

  static LoaderSnapshot& instance();

  // Outside signal handlers: re-reads every module with dl_iterate_phdr.
  void rebuild();
  // The same when the loader's counters changed since the last rebuild.
  void refresh_if_changed();

  // SIGNAL PATH: async-signal-safe (atomics, _dl_find_object, the callback).
  // Calls `callback` for every module of the snapshot still loaded, like
  // dl_iterate_phdr; stops at and returns the first nonzero result.
  int iterate(Callback callback, void* data);

  // SIGNAL PATH: async-signal-safe. For this thread's next lookups: the
  // module `ip` is in, when the snapshot misses it (loaded since its last
  // rebuild: a rebuild is due), described from the loader's lock-free
  // lookup and its ELF headers in memory, and offered by iterate() after
  // the snapshot's own (a few at a time). So an unwind through a module
  // loaded a moment ago need not wait for the next rebuild. Returns whether
  // it offers one for `ip`. forget_missed() withdraws them all: they are
  // good only while the unwind that asked runs.
  bool offer_missed(uint64_t ip);
  static void forget_missed();

  // SIGNAL PATH: async-signal-safe (a binary search, _dl_find_object).
  // True when `address` lies in an executable segment of a module the
  // snapshot holds that is still loaded; *segment_start is then where that
  // segment starts (its bytes from there to `address` are mapped).
  bool in_executable_code(uint64_t address, uint64_t* segment_start);

  // In a fork child (one thread): no reader can still be inside.
  void after_fork_child();

  size_t size_for_testing();

 private:
  struct Module {
    dl_phdr_info info{};   // dlpi_phdr and dlpi_name point into this snapshot
    uint64_t probe = 0;    // an address inside the module's first segment
    void* link_map = nullptr;  // what _dl_find_object said of `probe` at rebuild
    // SIGNAL PATH. Still loaded: the loader's lock-free lookup of `address`
    // (inside the module) names the same module (unknown ones pass).
    bool still_loaded(uint64_t address) const;
  };
  // An executable PT_LOAD segment, for in_executable_code().
  struct CodeRange {
    uint64_t start = 0, end = 0;
    uint32_t module = 0;  // index in Buffer::modules
  };
  struct Buffer {
    std::vector<Module> modules;
    std::vector<CodeRange> code;  // sorted by start
    std::vector<ElfW(Phdr)> headers;
    std::vector<std::string> names;
  };
  static int collect(dl_phdr_info* info, size_t size, void* data);
  // SIGNAL PATH: the current buffer's index, counted as read until release().
  int acquire();
  void release(int i) { readers_[i].fetch_sub(1, std::memory_order_release); }
  // SIGNAL PATH: is the module with this link map in the current buffer?
  bool holds(const void* link_map);

  std::mutex rebuild_mutex_;
  Buffer buffers_[2];
  std::atomic<int> current_{0};
  std::atomic<int> readers_[2] = {};
  std::atomic<unsigned long long> adds_{0}, subs_{0};  // the loader's counters at the last rebuild
};

// True while this thread runs one of the runtime's unwinds (native_unwinder.cc).
bool libunwind_lookups_use_snapshot();

}  // namespace hybridprof
