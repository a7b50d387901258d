#include "hybridprof/launcher_options.h"

#include "common/runtime_config.h"

namespace hybridprof::launcher {

const char* usage() {
  return R"(usage: hybridprof [options] [--] program [args...]

Samples every thread of `program` (no rebuild) and writes one OTF2 archive.

  -F, --freq HZ        samples per second per thread (default 1000; 1..100000)
  -c, --period N       one sample every N events (ns for cpu-clock/task-clock)
  -e, --event NAME     cycles (default), instructions, cpu-clock, task-clock,
                       or any libpfm4 event; unsupported events fall back to
                       cpu-clock, and to POSIX CPU timers when perf_event_open
                       is refused
      --timer          sample with POSIX CPU-time timers, not perf_event: for
                       jobs whose threads switch often (MPI ranks sharing
                       cores yield thousands of times a second; a perf event
                       costs every switch, most in a virtual machine). Kernel
                       time then counts under the function that entered it
      --fixed-period   every sampling period exactly as asked, as perf does;
                       by default each is drawn at random between half and
                       one and a half of it (same mean rate), so that a
                       program with a loop in step with the sampler is not
                       sampled at the same points of it every round
      --delay SECONDS  record nothing for the first SECONDS of each process
                       (under mpirun, each rank's own start), then open
                       the capture window
      --duration SECONDS  close the window SECONDS after it opened (after
                       the start, or after --delay); outside the window
                       the samplers are stopped and no call is traced
      --paused         start with the window closed: the program opens it
                       (hybridprof_start() of <hybridprof/control.h>, or
                       cudaProfilerStart())
      --capture-range nvtx:NAME[@DOMAIN]
                       record only inside NVTX ranges of message NAME (in
                       DOMAIN): each opens the window, its end closes it
      --capture-range-count N  only the first N such ranges
  -o, --output DIR     output directory (default: a new hybridprof-<program>-<time>)
      --max-depth N    deepest stack recorded (default 256, at most 512)
      --signal SIG     signal used for samples (default SIGRTMIN+4)
      --max-size SIZE  each process stops recording (with a note in the
                       archive) before its raw data passes SIZE: bytes, or
                       with K, M, G (at least 64K); the program runs on
      --enter-leave    also write DIR/enter-leave/traces.otf2 with samples as
                       Enter/Leave regions, for viewers such as ViTE
      --trace LIST     trace only these adapters, comma-separated: mpi, openmp,
                       cuda, nvtx, os (default: all; sampling is not an adapter)
      --no-trace       trace no adapter: samples only. A switched-off
                       adapter's calls go straight to the real function
      --os-wait-min DURATION
                       record a blocking C library call (lock, condition,
                       read, poll, sleep, waitpid...: the os adapter) only
                       when it lasted this long: 20us (default), 1ms, 0
                       (every call)
      --no-os-waits    record no blocking C library call (--trace without os)
      --no-jit-map     do not ask oneDNN for a perf map of its JIT code (by
                       default ONEDNN_JIT_PROFILE=2 unless set; JIT code is
                       named from /tmp/perf-PID.map files, kept in DIR/raw)
      --no-symbol-cache  symbolize every library afresh, neither reading nor
                       writing the symbol cache ($XDG_CACHE_HOME/hybridprof, or
                       ~/.cache/hybridprof: names found in libraries by their
                       build id, so a second run skips their debug information)
      --list-events    list the events this machine knows
  -h, --help           this text
      --version        the version and the git commit it was built from

Under mpirun each rank writes DIR/rank-N. Afterwards: hybridprof-report DIR
)";
}

namespace {

bool number(const std::string& flag, const std::string& text, uint64_t max, uint64_t* out, std::string* error) {
  if (!parse_uint(text, max, out)) {
    *error = flag + " needs a whole number up to " + std::to_string(max) + ", not '" + text + "'";
    return false;
  }
  return true;
}

}  // namespace

bool parse_options(const std::vector<std::string>& args, LauncherOptions* o, std::string* error) {
  size_t i = 0;
  bool no_os_waits = false;  // applied after --trace, whatever the order
  auto value = [&](const std::string& flag, std::string* out) {
    if (i + 1 >= args.size()) {
      *error = flag + " needs a value";
      return false;
    }
    *out = args[++i];
    return true;
  };
  for (; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string inline_value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      inline_value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_inline = true;
    }
    auto take = [&](std::string* out) {
      if (has_inline) {
        *out = inline_value;
        return true;
      }
      return value(arg, out);
    };
    std::string v;
    uint64_t n;
    if (arg == "--") {
      ++i;
      break;
    } else if (arg == "-F" || arg == "--freq") {
      if (!take(&v) || !number(arg, v, UINT64_MAX >> 1, &n, error)) return false;
      if (n == 0 || n > kMaxFrequencyHz) {
        *error = "frequency " + v + " Hz is out of range (1.." + std::to_string(kMaxFrequencyHz) + ")";
        return false;
      }
      o->frequency = n;
    } else if (arg == "-c" || arg == "--period") {
      if (!take(&v) || !number(arg, v, UINT64_MAX >> 1, &n, error)) return false;
      if (n == 0) {
        *error = "period must be at least 1";
        return false;
      }
      o->period = n;
    } else if (arg == "-e" || arg == "--event") {
      if (!take(&o->event)) return false;
      if (o->event.empty()) {
        *error = "empty event name";
        return false;
      }
    } else if (arg == "-o" || arg == "--output") {
      if (!take(&o->output)) return false;
      if (o->output.empty()) {
        *error = "empty output directory";
        return false;
      }
    } else if (arg == "--max-depth") {
      if (!take(&v) || !number(arg, v, kMaxDepthLimit, &n, error)) return false;
      if (n == 0) {
        *error = "--max-depth must be at least 1";
        return false;
      }
      o->max_depth = static_cast<uint32_t>(n);
    } else if (arg == "--signal") {
      if (!take(&o->signal)) return false;
      int sig;
      if (!parse_signal(o->signal, &sig)) {
        *error = "unknown signal '" + o->signal + "'";
        return false;
      }
    } else if (arg == "--max-size") {
      if (!take(&v)) return false;
      if (!parse_size(v, &o->max_size_bytes) || o->max_size_bytes < kMinMaxSizeBytes) {
        *error = "--max-size needs a size of at least 64K (bytes, or with K, M, G), not '" + v + "'";
        return false;
      }
    } else if (arg == "--enter-leave" && !has_inline) {
      o->enter_leave = true;
    } else if (arg == "--trace") {
      if (!take(&v) || !parse_trace_list(v, &o->traced, error)) return false;
    } else if (arg == "--no-trace" && !has_inline) {
      o->traced = 0;
    } else if (arg == "--no-os-waits" && !has_inline) {
      no_os_waits = true;
    } else if (arg == "--os-wait-min") {
      if (!take(&v)) return false;
      if (!parse_duration(v, &o->os_wait_min_ns) || o->os_wait_min_ns > kMaxOsWaitMinNs) {
        *error = "--os-wait-min needs a duration with its unit (20us, 1ms, 0.5s; or 0), not '" + v + "'";
        return false;
      }
    } else if (arg == "--timer" && !has_inline) {
      o->timer = true;
    } else if (arg == "--fixed-period" && !has_inline) {
      o->fixed_period = true;
    } else if (arg == "--paused" && !has_inline) {
      o->paused = true;
    } else if (arg == "--capture-range") {
      if (!take(&o->capture_range)) return false;
      const size_t name_end = o->capture_range.rfind('@');
      if (o->capture_range.rfind("nvtx:", 0) != 0 || o->capture_range.size() == 5 || name_end == 5) {
        *error = "--capture-range needs nvtx:NAME or nvtx:NAME@DOMAIN, not '" + o->capture_range + "'";
        return false;
      }
    } else if (arg == "--capture-range-count") {
      if (!take(&v) || !number(arg, v, UINT64_MAX >> 1, &o->capture_range_count, error)) return false;
      if (o->capture_range_count == 0) {
        *error = "--capture-range-count must be at least 1";
        return false;
      }
    } else if (arg == "--delay" || arg == "--duration") {
      if (!take(&v)) return false;
      uint64_t* field = arg == "--delay" ? &o->delay_ns : &o->duration_ns;
      if (!parse_seconds(v, field) || (arg == "--duration" && *field == 0)) {
        *error = arg + " needs a number of seconds" + (arg == "--duration" ? " above 0" : "") + ", not '" + v + "'";
        return false;
      }
    } else if (arg == "--no-symbol-cache" && !has_inline) {
      o->symbol_cache = false;
    } else if (arg == "--no-jit-map" && !has_inline) {
      o->jit_map = false;
    } else if (arg == "--list-events" && !has_inline) {
      o->list_events = true;
    } else if ((arg == "-h" || arg == "--help") && !has_inline) {
      o->help = true;
    } else if (arg == "--version" && !has_inline) {
      o->version = true;
    } else if (!arg.empty() && arg[0] == '-') {
      *error = "unknown option '" + args[i] + "' (see --help)";
      return false;
    } else {
      break;
    }
  }
  o->command.assign(args.begin() + static_cast<long>(std::min(i, args.size())), args.end());
  if (no_os_waits) o->traced &= ~trace_mask_of("os");
  if (o->frequency && o->period) {
    *error = "-F/--freq and -c/--period exclude each other";
    return false;
  }
  if (o->capture_range_count && o->capture_range.empty()) {
    *error = "--capture-range-count needs --capture-range";
    return false;
  }
  if (!o->capture_range.empty() && !mask_traces(o->traced, "nvtx")) {
    *error = "--capture-range nvtx:... needs NVTX traced (see --trace)";
    return false;
  }
  if (o->command.empty() && !o->help && !o->version && !o->list_events) {
    *error = "no program given (usage: hybridprof [options] [--] program [args...])";
    return false;
  }
  return true;
}

}  // namespace hybridprof::launcher
