// Command line of the launcher, in perf record's spirit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/runtime_config.h"
#include "common/trace_switch.h"

namespace hybridprof::launcher {

struct LauncherOptions {
  std::optional<uint64_t> frequency;  // -F/--freq
  std::optional<uint64_t> period;     // -c/--period
  std::string event = "cycles";       // -e/--event
  std::string output;                 // -o/--output ("" = a new unique directory)
  uint32_t max_depth = kDefaultMaxDepth;  // --max-depth
  std::string signal;                 // --signal ("" = SIGRTMIN+4)
  uint64_t max_size_bytes = 0;        // --max-size (0 = no limit)
  bool enter_leave = false;           // --enter-leave
  uint32_t traced = kAllTracedAdapters;  // --trace LIST / --no-trace: a mask over kTracedAdapters
  bool jit_map = true;                // false: --no-jit-map (do not ask JIT compilers for perf maps)
  bool symbol_cache = true;           // false: --no-symbol-cache
  bool timer = false;                 // --timer: POSIX CPU-time timers instead of perf_event
  bool fixed_period = false;          // --fixed-period: no randomized periods
  uint64_t os_wait_min_ns = kDefaultOsWaitMinNs;  // --os-wait-min: the shortest OS-runtime wait recorded
  // Capture windows (ns; 0: none): --delay, --duration, --paused.
  uint64_t delay_ns = 0, duration_ns = 0;
  bool paused = false;
  std::string capture_range;          // --capture-range nvtx:NAME[@DOMAIN] ("" none)
  uint64_t capture_range_count = 0;   // --capture-range-count N (0: every range)
  bool list_events = false, help = false, version = false;
  std::vector<std::string> command;   // program and its arguments
};

// Parses argv (without argv[0]). Returns false with a one-line `error` that
// names the problem; nothing is started then.
bool parse_options(const std::vector<std::string>& args, LauncherOptions* options, std::string* error);

const char* usage();

}  // namespace hybridprof::launcher
