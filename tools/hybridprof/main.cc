// hybridprof: runs a program with the sampling runtime preloaded, waits for
// it, turns the raw data into an OTF2 archive and exits with the program's
// status.
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/build_identity.h"
#include "common/runtime_config.h"
#include "finalize/archive_claim.h"
#include "finalize/exit_status_file.h"
#include "finalize/finalizer.h"
#include "finalize/job_archive.h"
#include "finalize/perf_map_file.h"
#include "finalize/result_file.h"
#include "hybridprof/launcher_options.h"
#include "hybridprof/left_processes.h"
#include "hybridprof/mpi_job.h"
#include "hybridprof/output_directory.h"
#include "hybridprof/rank_notices.h"
#include "sampling/sampling.h"

namespace hybridprof::launcher {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "hybridprof: %s\n", message.c_str());
  return 2;
}

std::string directory_of_executable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, size_t(n));
  return path.substr(0, path.find_last_of('/'));
}

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string find_runtime() {
  if (const char* v = std::getenv("HYBRIDPROF_RUNTIME"); v && *v) return v;
  const std::string bin = directory_of_executable();
  for (const std::string& candidate :
       {bin + "/../lib/libhybridprof.so", bin + "/../" HYBRIDPROF_INSTALL_LIBDIR "/libhybridprof.so"}) {
    if (is_file(candidate)) return candidate;
  }
  return "";
}

// execvp's search, done before starting so a typo is an error, not a run.
bool find_program(const std::string& name, std::string* error) {
  auto runnable = [](const std::string& p) { return is_file(p) && access(p.c_str(), X_OK) == 0; };
  if (name.find('/') != std::string::npos) {
    if (runnable(name)) return true;
    *error = "program '" + name + "' " + (is_file(name) ? "is not executable" : "does not exist");
    return false;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    if (runnable(dir + "/" + name)) return true;
    start = end + 1;
  }
  *error = "program '" + name + "' not found in PATH";
  return false;
}

pid_t g_child = -1;

void forward_signal(int signal) {
  if (g_child > 0) kill(g_child, signal);
}

void set_env(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

// JIT code lies in no module. oneDNN (PyTorch's convolutions) names its
// kernels in /tmp/perf-PID.map when asked (2: the perf map alone), and the
// finalizer names JIT frames from it. A user's own setting, under either
// of oneDNN's names, is left alone. True when we asked.
bool ask_for_jit_maps(const LauncherOptions& o) {
  if (!o.jit_map || std::getenv("ONEDNN_JIT_PROFILE") || std::getenv("DNNL_JIT_PROFILE")) return false;
  set_env("ONEDNN_JIT_PROFILE", "2");
  set_env("DNNL_JIT_PROFILE", "2");  // the name DNNL 1.x reads
  return true;
}

int list_events() {
  for (const auto& line : sampling::list_events()) std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

int run(int argc, char** argv) {
  LauncherOptions o;
  std::string error;
  if (!parse_options(std::vector<std::string>(argv + 1, argv + argc), &o, &error)) return fail(error);
  if (o.help) {
    std::fputs(usage(), stdout);
    return 0;
  }
  if (o.version) {
    std::printf("%s\n", version_line("hybridprof").c_str());
    return 0;
  }
  if (o.list_events) return list_events();

  sampling::SamplingRequest request;
  if (!sampling::encode_event(o.event, &request.event, &error)) return fail(error);
  if (!find_program(o.command[0], &error)) return fail(error);
  const std::string runtime = find_runtime();
  if (runtime.empty()) return fail("cannot find libhybridprof.so next to " + directory_of_executable());
  std::string dir;
  if (!prepare_output_directory(o.output, o.command[0], &dir, &error)) return fail(error);

  request.frequency = !o.period.has_value();
  request.value = o.period ? *o.period : o.frequency.value_or(1000);
  request.force_timer = o.timer || env::flag(env::kForceTimer);
  if (o.timer) set_env(env::kForceTimer, "1");  // the runtime's choice too
  request.fixed_period = o.fixed_period || env::flag(env::kFixedPeriod);
  if (o.fixed_period) set_env(env::kFixedPeriod, "1");
  // Capture windows: each process's runtime keeps its own.
  const auto seconds_text = [](uint64_t ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9f", double(ns) / 1e9);
    return std::string(text);
  };
  if (o.delay_ns) set_env(env::kDelay, seconds_text(o.delay_ns));
  if (o.duration_ns) set_env(env::kDuration, seconds_text(o.duration_ns));
  if (o.paused || !o.capture_range.empty()) set_env(env::kPaused, "1");  // a range opens it
  if (!o.capture_range.empty()) set_env(env::kCaptureRange, o.capture_range);
  if (o.capture_range_count) set_env(env::kCaptureRangeCount, std::to_string(o.capture_range_count));
  const sampling::SamplingPlan plan = sampling::plan_sampling(request);
  // A rank of an MPI job: the ranks write the job's archive together at
  // their exit (tools/finalize/job_archive.h); the last launcher reports it.
  const JobRank job = job_rank_from_env(dir);
  // Notices: a rank's wait in its directory for the launcher that ends the
  // job, which says each once for all ranks (rank_notices.h).
  const auto notice = [&](const std::string& line) {
    if (job.rank < 0 || !append_rank_notice(dir, line)) std::fprintf(stderr, "%s\n", line.c_str());
  };
  if (!plan.notice.empty()) notice(plan.notice);

  const char* preload = std::getenv("LD_PRELOAD");
  set_env("LD_PRELOAD", preload && *preload ? std::string(preload) + ":" + runtime : runtime);
  // NVTX loads its injection library from here at a program's first NVTX
  // call; one the user named is theirs (one injection per process).
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  // Switched off (--trace), neither is set: NVTX calls stay the no-ops they
  // are without a tool, and the driver starts no CUPTI.
  if (mask_traces(o.traced, "nvtx")) {
    if (nvtx && *nvtx && std::string(nvtx) != runtime)
      notice("hybridprof: NVTX_INJECTION64_PATH names another tool (" + std::string(nvtx) +
             "): NVTX ranges are not traced");
    else
      set_env("NVTX_INJECTION64_PATH", runtime);
  }
  // The CUDA driver loads its injection library from here when the program
  // initializes CUDA (the runtime then starts CUPTI); again, one per process.
  const char* cuda = std::getenv("CUDA_INJECTION64_PATH");
  if (mask_traces(o.traced, "cuda")) {
    if (cuda && *cuda && std::string(cuda) != runtime)
      notice("hybridprof: CUDA_INJECTION64_PATH names another tool (" + std::string(cuda) +
             "): GPU activity is not traced");
    else
      set_env("CUDA_INJECTION64_PATH", runtime);
  }
  if (o.traced == kAllTracedAdapters)
    unsetenv(env::kTrace);
  else
    set_env(env::kTrace, trace_list_text(o.traced));
  set_env(env::kOsWaitMin, std::to_string(o.os_wait_min_ns));
  set_env(env::kOutputDir, dir);
  set_env(env::kEvent, o.event);
  unsetenv(env::kFrequency);
  unsetenv(env::kPeriod);
  set_env(o.period ? env::kPeriod : env::kFrequency, std::to_string(request.value));
  set_env(env::kMaxDepth, std::to_string(o.max_depth));
  if (!o.signal.empty()) set_env(env::kSignal, o.signal);
  if (o.max_size_bytes != 0) set_env(env::kMaxSize, std::to_string(o.max_size_bytes));
  set_env(env::kQuiet, "1");
  // Read by the finalizer: ours, or the ranks' at the end of an MPI job.
  if (!o.symbol_cache) set_env(env::kNoSymbolCache, "1");
  const bool asked_for_jit_maps = ask_for_jit_maps(o);
  if (job.rank >= 0) {
    set_env(env::kJobArchive, job.job_dir);
    set_env(env::kJobEnterLeave, o.enter_leave ? "1" : "0");
  } else {
    unsetenv(env::kJobArchive);
    unsetenv(env::kJobEnterLeave);
  }

  std::fflush(nullptr);
  become_subreaper();
  g_child = fork();
  if (g_child < 0) return fail(std::string("fork: ") + std::strerror(errno));
  if (g_child == 0) {
    std::vector<char*> args;
    for (auto& a : o.command) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "hybridprof: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  // The terminal's Ctrl-C reaches the program directly; signals sent to us
  // (mpirun's SIGTERM, a batch system's SIGHUP) are passed on.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  for (int sig : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) signal(sig, forward_signal);
  int status = 0;
  while (waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
  }
  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const std::string program_status = status_text(status);
  const std::map<uint64_t, std::string> left_statuses = wait_for_left_processes();
  // The perf maps we asked for, once the finalizer (ours or the ranks')
  // kept them in the run's raw/: /tmp keeps none of them.
  auto remove_jit_maps = [&](const std::string& directory) {
    if (asked_for_jit_maps) finalize::remove_kept_system_perf_maps(directory);
  };

  // A file size limit (ulimit -f) makes writing the archive fail with an
  // error, not kill the launcher.
  signal(SIGXFSZ, SIG_IGN);
  finalize::Options fo;
  fo.directory = dir;
  fo.enter_leave = o.enter_leave;
  // An MPI job has one archive: the ranks wrote it at their exit, or the
  // last rank's launcher writes it from the raw data now.
  finalize::Result result;
  bool written = false;
  // The launcher that claims the job's archive gives the claim up once done.
  struct Claim {
    std::string job_dir;
    ~Claim() {
      if (!job_dir.empty()) finalize::release_archive(job_dir);
    }
  } claim;
  if (job.rank >= 0) {
    if (!end_rank(job, g_child, program_status)) {
      remove_jit_maps(dir);
      return exit_code;
    }
    claim.job_dir = job.job_dir;
    written = finalize::load_result(job.job_dir + "/" + finalize::kJobArchiveResult, &result);
    fo.directory = job.job_dir;
  } else if (!finalize::record_exit_status(dir, g_child, program_status)) {
    // Only hybridprof-merge, should it have to write the archive later, misses it.
    fo.exit_statuses[uint64_t(g_child)] = program_status;
  }
  for (const auto& [pid, status] : finalize::recorded_exit_statuses(fo.directory)) fo.exit_statuses[pid] = status;
  fo.exit_statuses.insert(left_statuses.begin(), left_statuses.end());
  const bool archived = written || finalize::finalize(fo, &result, &error);
  remove_jit_maps(fo.directory);
  // What the raw data lacked, said also when no archive came of it (which
  // stream was unreadable, and why).
  for (const auto& w : result.warnings) std::fprintf(stderr, "hybridprof: warning: %s\n", w.c_str());
  // The ranks' notices, once each.
  if (job.rank >= 0)
    for (const std::string& line : rank_notices(job.job_dir)) {
      const bool prefixed = line.rfind("hybridprof: ", 0) == 0;
      std::fprintf(stderr, "%s%s\n", prefixed ? "" : "hybridprof: ", line.c_str());
    }
  if (!archived) {
    fail("no archive written: " + error);
    return exit_code;
  }
  std::fprintf(stderr, "hybridprof: %llu samples (%llu dropped) from %llu threads in %llu process%s\n",
               (unsigned long long)result.samples, (unsigned long long)result.dropped,
               (unsigned long long)result.threads, (unsigned long long)result.processes,
               result.processes == 1 ? "" : "es");
  // job.size is known to a rank's launcher; one launcher around mpirun sees the ranks only in the data.
  if (result.traced_events && job.size > 0)
    std::fprintf(stderr, "hybridprof: %llu traced events from %d ranks\n", (unsigned long long)result.traced_events,
                 job.size);
  else if (result.traced_events)
    std::fprintf(stderr, "hybridprof: %llu traced events\n", (unsigned long long)result.traced_events);
  if (result.symbol_modules_cached || result.symbol_modules_read)  // the cache was used
    std::fprintf(stderr, "hybridprof: symbol cache: %llu libraries named from it, %llu read; naming took %llu ms\n",
                 (unsigned long long)result.symbol_modules_cached, (unsigned long long)result.symbol_modules_read,
                (unsigned long long)result.phase_symbolize_ms);
  std::fprintf(stderr, "hybridprof: archive %s\n", result.anchor.c_str());
  if (!result.enter_leave_anchor.empty())
    std::fprintf(stderr, "hybridprof: enter/leave archive for viewers %s\n", result.enter_leave_anchor.c_str());
  return exit_code;
}

}  // namespace hybridprof::launcher

int main(int argc, char** argv) { return hybridprof::launcher::run(argc, argv); }
