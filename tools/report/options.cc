#include "options.h"

#include <charconv>
#include <stdexcept>

namespace hybridprof::report {

const char* const kUsage =
    "usage: hybridprof-report [options] <archive-dir-or-anchor>\n"
    "\n"
    "Summarises a hybridprof OTF2 archive: run summary, flat profile, hottest\n"
    "call paths and per-thread samples.\n"
    "\n"
    "options:\n"
    "  --top N        functions in the flat profile and threads listed (default 25)\n"
    "  --paths N      hottest call paths listed (default 10; 0: none)\n"
    "  --full-paths   print call paths whole (default: paths deeper than 12 show\n"
    "                 their first 3 and last 8 frames, names cut at 40 characters)\n"
    "  --wide         print the flat profile's function names whole (default: cut to 70\n"
    "                 characters from the middle of their argument lists and\n"
    "                 qualifiers, keeping their own name and any clone suffix)\n"
    "  --folded       print folded stacks instead (\"root;caller;leaf count\" per line),\n"
    "                 for flamegraph.pl or speedscope\n"
    "  --flamegraph FILE.svg\n"
    "                 write a flame graph instead: a self-contained SVG (widths by samples,\n"
    "                 Python, native, kernel and traced frames in their own colours, full\n"
    "                 names on hover, click to zoom, Search to highlight)\n"
    "  --icicle       the flame graph with its roots at the top\n"
    "  --time FROM:TO only the samples and events in this window (seconds from the job's\n"
    "                 start; 2.5: or :10 leave a side open); --time NAME: the capture\n"
    "                 window marked NAME (hybridprof_mark, Python's hybridprof.window)\n"
    "  --ranks LIST   only these MPI ranks (processes in order in a run without ranks),\n"
    "                 e.g. 0,2-3\n"
    "  --threads LIST only the threads with these TIDs (the Threads table's TID)\n"
    "  --python-only  show Python frames only (flat profile, call paths, folded stacks)\n"
    "  --python-functions\n"
    "                 one frame per Python function: frames of one function (qualified\n"
    "                 name and file) merge whatever line they were at, and read\n"
    "                 \"qualname (file)\" instead of \"qualname (file:line)\" in call\n"
    "                 paths and folded stacks; combines with --python-only\n"
    "  --ml           the Python ML view: phases (input pipeline, forward, backward,\n"
    "                 optimizer, other) and PyTorch operators; shown without asking\n"
    "                 when the samples show PyTorch\n"
    "  --step FUNC    the ML view covers only samples with the Python function FUNC on\n"
    "                 their path (its qualified name, or its last dotted component:\n"
    "                 train_step matches Trainer.train_step); implies --ml. Adds the\n"
    "                 step's wall time: computing, waiting for the input pipeline, for\n"
    "                 the device, communication, other waits; the input-, device- and\n"
    "                 communication-bound verdicts (from 20% of step time) and the next\n"
    "                 steps each measured share points to\n"
    "  --diff BASE NEW\n"
    "                 compare two runs: the functions (self and inclusive), call paths and\n"
    "                 traced regions (MPI, OpenMP, CUDA, NVTX) whose time changed most,\n"
    "                 as shares of each run (its samples; a region's time against the\n"
    "                 sampled time), like perf diff; functions match by name and module\n"
    "  --absolute     with --diff: compare time (samples x period), not shares\n"
    "  --version      the version and the git commit it was built from\n"
    "  -h, --help     this help\n"
    "\n"
    "sections, each printed where the archive has what it needs:\n"
    "  Run                     the program, the sampling source, samples taken and lost,\n"
    "                          the profiler's own share of them and its handler's cost\n"
    "  Notices                 what the runtime said (fallbacks, limits, switches)\n"
    "  Capture windows         what each process recorded (--delay, --duration, --paused,\n"
    "                          the control API, NVTX capture ranges), when not all of it\n"
    "  Marks                   the points the program named (hybridprof_mark)\n"
    "  Flat profile            functions by self samples, with inclusive samples and source\n"
    "  Hottest call paths      the call paths with the most samples, root to leaf\n"
    "  Python ML view          phases of a training step (input pipeline, forward, backward,\n"
    "                          optimizer) and PyTorch operators, then the input-bound hint\n"
    "  Step time               with --step: the step's wall time by what it waits for, the\n"
    "                          input-, device- and communication-bound verdicts, next steps\n"
    "  MPI                     per MPI function: calls, time, bytes sent and received\n"
    "  Time in MPI per rank    each rank's share of its traced time in MPI\n"
    "  Point-to-point bytes sent  the communication matrix, sender by receiver\n"
    "  OpenMP parallel regions per region: calls, time, team size, imbalance, barrier wait\n"
    "  OpenMP waits            barriers, critical sections, locks and taskwaits\n"
    "  OpenMP idle             each worker thread's time waiting for work between regions\n"
    "  User ranges             NVTX ranges, nested as they ran\n"
    "  GPU activities          kernels, copies and memsets on the device\n"
    "  CUDA API calls          CUDA calls on host threads\n"
    "  CUDA synchronization    host threads waiting on device work\n"
    "  Wall time               each thread's and process's wall time: CPU (samples), traced\n"
    "                          waits by kind (MPI, OpenMP, CUDA sync, lock, read/write,\n"
    "                          GIL...), and the rest unaccounted\n"
    "  Waits                   the call paths that waited longest, Python frames included\n"
    "  Processes               each process: PID, parent, exit status, threads, samples\n"
    "  Threads                 each thread: samples, drops, unwind failures\n";

namespace {

// A count flag's value; 0 only where it means "none" (`zero_allowed`).
size_t parse_count(const std::string& flag, const std::string& text, bool zero_allowed = false) {
  size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || (value == 0 && !zero_allowed)) {
    throw std::invalid_argument(flag + " needs a " + (zero_allowed ? "number" : "positive number") + ", got '" +
                                text + "'");
  }
  return value;
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options options;
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value_of = [&](const std::string& flag) -> std::string {
      if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
      return args[++i];
    };
    if (only_positional || arg.empty() || arg[0] != '-') {
      if (!options.archive.empty()) throw std::invalid_argument("more than one archive given ('" + arg + "')");
      options.archive = arg;
    } else if (arg == "--") {
      only_positional = true;
    } else if (arg == "-h" || arg == "--help") {
      options.help = true;
    } else if (arg == "--version") {
      options.version = true;
    } else if (arg == "--top") {
      options.top_functions = parse_count(arg, value_of(arg));
    } else if (arg.rfind("--top=", 0) == 0) {
      options.top_functions = parse_count("--top", arg.substr(6));
    } else if (arg == "--paths") {
      options.top_paths = parse_count(arg, value_of(arg), /*zero_allowed=*/true);
    } else if (arg.rfind("--paths=", 0) == 0) {
      options.top_paths = parse_count("--paths", arg.substr(8), /*zero_allowed=*/true);
    } else if (arg == "--full-paths") {
      options.full_paths = true;
    } else if (arg == "--wide") {
      options.wide = true;
    } else if (arg == "--folded") {
      options.folded = true;
    } else if (arg == "--python-only") {
      options.python_only = true;
    } else if (arg == "--python-functions") {
      options.python_functions = true;
    } else if (arg == "--ml") {
      options.ml = true;
    } else if (arg == "--step" || arg.rfind("--step=", 0) == 0) {
      options.step = arg == "--step" ? value_of(arg) : arg.substr(7);
      if (options.step.empty()) throw std::invalid_argument("--step needs a Python function name");
      options.ml = true;
    } else if (arg == "--flamegraph") {
      options.flamegraph = value_of(arg);
    } else if (arg == "--icicle") {
      options.icicle = true;
    } else if (arg == "--diff") {
      options.diff_base = value_of(arg);
    } else if (arg == "--absolute") {
      options.absolute = true;
    } else if (arg == "--time") {
      otf2::parse_window(value_of(arg), arg, &options.selection);
    } else if (arg == "--ranks") {
      options.selection.ranks = otf2::parse_list(value_of(arg), arg);
    } else if (arg == "--threads") {
      options.selection.tids = otf2::parse_list(value_of(arg), arg);
    } else {
      throw std::invalid_argument("unknown option '" + arg + "' (try --help)");
    }
  }
  if (!options.help && !options.version && options.archive.empty()) throw std::invalid_argument("no archive given (try --help)");
  if (options.icicle && options.flamegraph.empty()) throw std::invalid_argument("--icicle is a form of --flamegraph FILE.svg");
  if (!options.flamegraph.empty() && options.folded) throw std::invalid_argument("--folded or --flamegraph, not both");
  if (options.absolute && options.diff_base.empty()) throw std::invalid_argument("--absolute is a form of --diff BASE NEW");
  if (!options.diff_base.empty() && (options.folded || !options.flamegraph.empty()))
    throw std::invalid_argument("--diff prints its own report: not with --folded or --flamegraph");
  return options;
}

}  // namespace hybridprof::report
