// The modules (executable, shared libraries, vDSO) mapped into the process,
// with the time span each was loaded, so an address sampled at time t is
// attributed to the module that was really there at t even after dlclose.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "trace/raw_format.h"

namespace hybridprof {

struct ModuleInfo {
  uint32_t id = 0;
  std::string path;
  uint64_t bias = 0, start = 0, end = 0;
  uint64_t load_ns = 0;
  uint64_t unload_ns = UINT64_MAX;  // still loaded
};

class ModuleTable {
 public:
  // Re-reads the loaded modules with dl_iterate_phdr when the loader says
  // something changed (or `force`). A new module gets the time of the
  // previous refresh as its load time: it was absent then, so no sample in
  // it is older. A module gone gets unload time `now_ns`. Changes are
  // appended to *changes. Not for signal handlers.
  //
  // dlopen itself is not interposed: glibc resolves RUNPATH/$ORIGIN and the
  // namespace from dlopen's caller, which a wrapper would replace.
  void refresh(uint64_t now_ns, std::vector<raw::Record>* changes, bool force = false);

  // Every module ever seen, as load records (for a new raw stream after fork).
  std::vector<raw::Record> all_as_records() const;

  // The module containing `address` at time `timestamp_ns`, copied out.
  // Returns false for an address in no module.
  bool find(uint64_t address, uint64_t timestamp_ns, ModuleInfo* out) const;

  // The vDSO exists only in memory, so the symbolizer cannot open it after
  // the run: writes its image to `path` and names the module by that file.
  // Call before the first refresh. False (and nothing changed) on failure.
  bool save_vdso_image(const std::string& path);

  // pthread_atfork hooks (see Drain).
  void prepare_fork() { mutex_.lock(); }
  void after_fork() { mutex_.unlock(); }

  // For tests: adds a module by hand.
  void add(const ModuleInfo& module);

 private:
  mutable std::mutex mutex_;
  std::vector<ModuleInfo> modules_;  // sorted by start
  uint32_t next_id_ = 1;             // 0 is raw::kUnknownModule
  uint64_t last_refresh_ns_ = 0;
  std::string vdso_path_;  // the saved vDSO image, "" if none
  unsigned long long loader_adds_ = 0, loader_subs_ = 0;
};

}  // namespace hybridprof
