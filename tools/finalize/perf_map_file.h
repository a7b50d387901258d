// Which perf map names a process image's JIT code, and keeping it with the
// run. JIT compilers write /tmp/perf-PID.map when asked (the launcher asks
// oneDNN); /tmp is cleaned and pids are reused, so the finalizer copies the
// map next to the image's raw stream the first time it reads it, and reads
// that copy from then on (hybridprof-merge long after the run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "finalize/raw_process.h"

namespace hybridprof::finalize {

// The module of frames named from a perf map (ContextFrame::module).
inline constexpr const char* kJitModule = "[jit]";

// raw/<host>.<pid>.<start>.hpr -> raw/<host>.<pid>.<start>.perf.map
std::string kept_perf_map_path(const std::string& stream_path);

// Where JIT compilers write a process's map: /tmp/perf-PID.map.
std::string system_perf_map_path(uint64_t pid);

// The map to read for `p` ("" none): its kept copy, or else the system map
// when it is this process's (written on this host since the process
// started: an older file is an earlier process's with the same pid), which
// is then kept. A map that cannot be kept is read where it is, with a
// warning.
std::string find_perf_map(const RawProcess& p, std::vector<std::string>* warnings);

// Removes the system maps of the processes whose streams are under
// `directory` (raw_files) that were kept and have not changed since (same
// size, not written after the copy). For the launcher, which asked for
// them; returns the paths removed.
std::vector<std::string> remove_kept_system_perf_maps(const std::string& directory);

}  // namespace hybridprof::finalize
