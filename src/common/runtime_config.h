// RuntimeConfig: how the launcher tells the preloaded runtime what to do.
// Everything travels in HYBRIDPROF_* environment variables so that exec'd
// programs, fork children and MPI ranks inherit it unchanged.
#pragma once

#include <cstdint>
#include <string>

namespace hybridprof {

namespace env {
inline constexpr const char* kOutputDir = "HYBRIDPROF_OUTPUT_DIR";
inline constexpr const char* kEvent = "HYBRIDPROF_EVENT";
inline constexpr const char* kFrequency = "HYBRIDPROF_FREQ";
inline constexpr const char* kPeriod = "HYBRIDPROF_PERIOD";
inline constexpr const char* kMaxDepth = "HYBRIDPROF_MAX_DEPTH";
inline constexpr const char* kSignal = "HYBRIDPROF_SIGNAL";
inline constexpr const char* kRingKiB = "HYBRIDPROF_RING_KB";
inline constexpr const char* kFlushMs = "HYBRIDPROF_FLUSH_MS";
inline constexpr const char* kForceTimer = "HYBRIDPROF_FORCE_TIMER";
inline constexpr const char* kFixedPeriod = "HYBRIDPROF_FIXED_PERIOD";  // no randomized sampling periods
// Capture windows: seconds (decimal) from each process's start until one
// opens, and how long it stays open; and whether the run starts with none.
inline constexpr const char* kDelay = "HYBRIDPROF_DELAY";
inline constexpr const char* kDuration = "HYBRIDPROF_DURATION";
inline constexpr const char* kPaused = "HYBRIDPROF_PAUSED";
// A capture range, "nvtx:NAME" or "nvtx:NAME@DOMAIN": ranges of that
// message open the window and their end closes it (the first COUNT only,
// when HYBRIDPROF_CAPTURE_RANGE_COUNT is set).
inline constexpr const char* kCaptureRange = "HYBRIDPROF_CAPTURE_RANGE";
inline constexpr const char* kCaptureRangeCount = "HYBRIDPROF_CAPTURE_RANGE_COUNT";
inline constexpr const char* kMaxSize = "HYBRIDPROF_MAX_SIZE";  // bytes, or with K, M, G (parse_size)
// Set by a rank's launcher: the job's directory, where the ranks write the
// job's archive together at exit; and whether to add the enter/leave one.
inline constexpr const char* kJobArchive = "HYBRIDPROF_JOB_ARCHIVE";
inline constexpr const char* kJobEnterLeave = "HYBRIDPROF_JOB_ENTER_LEAVE";
// "1": the finalizer neither reads nor writes the symbol cache
// (symbolizer/symbol_cache.h): --no-symbol-cache.
inline constexpr const char* kNoSymbolCache = "HYBRIDPROF_NO_SYMBOL_CACHE";
inline constexpr const char* kQuiet = "HYBRIDPROF_QUIET";  // the launcher already printed notices
inline constexpr const char* kTraceClock = "HYBRIDPROF_TRACE_CLOCK";  // tsc | monotonic (default: decide)
// The shortest OS-runtime wait recorded, in ns (--os-wait-min; 0: every call).
inline constexpr const char* kOsWaitMin = "HYBRIDPROF_OS_WAIT_MIN_NS";
// A yes/no variable (HYBRIDPROF_FORCE_TIMER, HYBRIDPROF_QUIET): set,
// non-empty and not "0". The launcher and the runtime read them alike.
bool flag(const char* name);
}  // namespace env

inline constexpr uint32_t kMaxDepthLimit = 512;
// Deep enough for PyTorch: a training step's native stacks reach 190 frames
// (a resnet18 job here: 1% of samples were cut at 128, none at 256).
inline constexpr uint32_t kDefaultMaxDepth = 256;
// An MPI rank's main thread makes the MPI calls: a loop of small messages
// writes hundreds of MB of records a second, more than the default ring
// holds between two drain passes.
inline constexpr uint32_t kMpiMainThreadRingKiB = 4096;
inline constexpr uint64_t kMaxFrequencyHz = 100000;
// OS-runtime waits shorter than this are not recorded (--os-wait-min).
inline constexpr uint64_t kDefaultOsWaitMinNs = 20000;
inline constexpr uint64_t kMaxOsWaitMinNs = 3600ull * 1000000000;
// --max-size: a process's stream starts with its modules and definitions
// (10 to 100 KiB); below this little room would be left for samples.
inline constexpr uint64_t kMinMaxSizeBytes = 64 << 10;

struct RuntimeConfig {
  std::string output_dir;        // empty: hybridprof-<program>-<pid> in the working directory
  std::string event = "cycles";
  uint64_t value = 1000;         // Hz when frequency, else a period
  bool frequency = true;
  uint32_t max_depth = kDefaultMaxDepth;
  int signal = 0;                // 0: SIGRTMIN+4
  uint32_t ring_kib = 256;
  bool ring_kib_given = false;   // HYBRIDPROF_RING_KB was set (then every thread gets ring_kib)
  uint32_t flush_ms = 50;
  bool force_timer = false;
  bool fixed_period = false;     // HYBRIDPROF_FIXED_PERIOD (--fixed-period)
  uint64_t delay_ns = 0;         // HYBRIDPROF_DELAY (--delay): 0 none
  uint64_t duration_ns = 0;      // HYBRIDPROF_DURATION (--duration): 0 none
  bool paused = false;           // HYBRIDPROF_PAUSED (--paused)
  std::string capture_range;     // HYBRIDPROF_CAPTURE_RANGE (--capture-range): "" none
  uint64_t capture_range_count = 0;  // HYBRIDPROF_CAPTURE_RANGE_COUNT: 0 every range
  uint64_t max_size_bytes = 0;   // the raw data one process may write; 0: no limit
  bool quiet = false;
  std::string trace_clock;       // "", "tsc" or "monotonic" (common/trace_clock.h)
  uint64_t os_wait_min_ns = kDefaultOsWaitMinNs;  // HYBRIDPROF_OS_WAIT_MIN_NS (--os-wait-min)
};

// A duration with its unit: "20us" ("µs" too), "1.5ms", "2s", "500ns";
// "0" alone. False when malformed, unitless (but for 0) or negative.
bool parse_duration(const std::string& text, uint64_t* ns);

// Reads HYBRIDPROF_* from the environment. Returns false with a one-line
// reason on a malformed value (the runtime then stays off, loudly).
bool runtime_config_from_env(RuntimeConfig* config, std::string* error);

// Parses "SIGPROF", "PROF", "RTMIN+4", "SIGRTMIN+4" or a number.
bool parse_signal(const std::string& text, int* signal);

// Seconds as "2", "0.5" or "1e-3" (not negative, at most a year) to ns.
bool parse_seconds(const std::string& text, uint64_t* ns);

// Strict unsigned decimal parse with an upper bound.
bool parse_uint(const std::string& text, uint64_t max, uint64_t* out);

// A byte count: a whole number, optionally with K, M, G or T (powers of
// 1024; "KiB", "MB"... are read the same). False when malformed or zero.
bool parse_size(const std::string& text, uint64_t* bytes);

}  // namespace hybridprof
