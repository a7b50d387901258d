// hybridprof-merge: builds the archive from a run's raw data by hand: after
// a crash, a kill, or a run under plain LD_PRELOAD without the launcher.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "common/build_identity.h"
#include "common/runtime_config.h"
#include "finalize/archive_claim.h"
#include "finalize/exit_status_file.h"
#include "finalize/finalizer.h"
#include "finalize/job_archive.h"

namespace {

const char* kUsage = R"(usage: hybridprof-merge [--enter-leave] [--force] [--no-symbol-cache] DIR

Writes DIR/traces.otf2 from the raw data in DIR/raw (one file per process),
or, for an MPI job's directory, from every DIR/rank-N/raw: one archive for
the job, with a warning for each rank whose data is missing.
  --enter-leave      also write DIR/enter-leave/traces.otf2 for viewers such as ViTE
  --force            replace an archive already in DIR
  --no-symbol-cache  symbolize every library afresh, neither reading nor
                     writing the symbol cache ($XDG_CACHE_HOME/hybridprof or
                     ~/.cache/hybridprof)
  --version          the version and the git commit it was built from
)";

int fail(const std::string& message) {
  std::fprintf(stderr, "hybridprof-merge: %s\n", message.c_str());
  return 1;
}

int merge(int argc, char** argv) {
  hybridprof::finalize::Options options;
  bool force = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--enter-leave") {
      options.enter_leave = true;
    } else if (arg == "--force") {
      force = true;
    } else if (arg == "--no-symbol-cache") {
      setenv(hybridprof::env::kNoSymbolCache, "1", 1);  // read by the finalizer
    } else if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--version") {
      std::printf("%s\n", hybridprof::version_line("hybridprof-merge").c_str());
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return fail("unknown option '" + arg + "' (see --help)");
    } else if (options.directory.empty()) {
      options.directory = arg;
    } else {
      return fail("one directory at a time");
    }
  }
  if (options.directory.empty()) return fail("no directory given (see --help)");
  namespace fs = std::filesystem;
  const fs::path dir(options.directory);
  bool has_raw = fs::is_directory(dir / "raw");
  std::error_code scan_error;
  for (const auto& e : fs::directory_iterator(dir, scan_error))
    has_raw = has_raw || (e.path().filename().string().rfind("rank-", 0) == 0 && fs::is_directory(e.path() / "raw"));
  if (!has_raw) return fail(options.directory + " has no raw/ or rank-N/raw/ data from a hybridprof run");
  // A rank's launcher may still be writing the job's archive (mpirun
  // stopped the job, not the launcher that saw the last rank end).
  if (const pid_t writer = hybridprof::finalize::archive_writer(options.directory)) {
    std::fprintf(stderr, "hybridprof-merge: waiting for hybridprof (pid %d), which is writing the archive\n", int(writer));
    while (hybridprof::finalize::archive_writer(options.directory)) usleep(100 * 1000);
  }
  std::error_code ec;
  // What the ranks of an MPI job left when they were stopped while writing the archive at exit.
  fs::remove_all(dir / ".job-archive", ec);
  if (!fs::exists(dir / "traces.otf2") && (fs::exists(dir / "traces") || fs::exists(dir / "traces.def"))) {
    std::fprintf(stderr, "hybridprof-merge: removing the incomplete archive of an interrupted writer\n");
    hybridprof::finalize::remove_archive(options.directory);
  }
  if (fs::exists(dir / "traces.otf2")) {
    if (!force) return fail(options.directory + " already has an archive (use --force to rebuild it)");
    hybridprof::finalize::remove_archive(options.directory);
    fs::remove_all(dir / hybridprof::finalize::kJobArchiveResult, ec);
  }
  options.written_by = "hybridprof-merge, from the raw data";
  options.exit_statuses = hybridprof::finalize::recorded_exit_statuses(options.directory);
  signal(SIGXFSZ, SIG_IGN);  // a file size limit: an error, not a death
  hybridprof::finalize::Result result;
  std::string error;
  const bool written = hybridprof::finalize::finalize(options, &result, &error);
  // Also when nothing was written: they name the files that were skipped, and why.
  for (const auto& w : result.warnings) std::fprintf(stderr, "hybridprof-merge: warning: %s\n", w.c_str());
  if (!written) return fail(error);
  std::printf("%llu samples from %llu threads in %llu process%s\n", (unsigned long long)result.samples,
              (unsigned long long)result.threads, (unsigned long long)result.processes,
              result.processes == 1 ? "" : "es");
  if (result.traced_events || result.missing_ranks)
    std::printf("%llu traced events; %llu rank%s missing\n", (unsigned long long)result.traced_events,
                (unsigned long long)result.missing_ranks, result.missing_ranks == 1 ? "" : "s");
  if (result.symbol_modules_cached || result.symbol_modules_read)  // the cache was used
    std::printf("symbol cache: %llu libraries named from it, %llu read; naming took %llu ms\n",
                (unsigned long long)result.symbol_modules_cached, (unsigned long long)result.symbol_modules_read,
                (unsigned long long)result.phase_symbolize_ms);
  std::printf("archive: %s\n", result.anchor.c_str());
  if (!result.enter_leave_anchor.empty()) std::printf("enter/leave archive for viewers: %s\n", result.enter_leave_anchor.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // std::filesystem throws where a directory cannot be read (no permission).
  try {
    return merge(argc, argv);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
