// The end of a rank whose launcher asked for the job's archive to be
// written by the ranks (HYBRIDPROF_JOB_ARCHIVE): MPI_Finalize only waits
// for every rank (what the program may rely on), and the real one runs at
// exit, after the ranks wrote the archive together through MPI
// (tools/finalize/job_archive.h; the entry point the runtime loads is in
// common/job_archive_entry.h). So what the program does after
// MPI_Finalize is still sampled and in the archive, and a rank that never
// reaches exit leaves its raw data for the launcher, as before. A rank
// leaving by _exit gets there too (TracingHost::at_process_exit).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "common/job_archive_entry.h"
#include "common/runtime_config.h"
#include "mpi/mpi_tracer.h"
#include "mpi/pmpi.h"
#include "trace/tracing_host.h"

namespace hybridprof::mpi {
namespace {

std::atomic<bool> g_deferred{false};
int (*g_real_finalize)() = nullptr;
pid_t g_rank_pid = 0;  // a fork child inherits the exit handler, not the rank's MPI

std::string parent_of(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

// The job archive library, next to this runtime.
decltype(&hybridprof_write_job_archive) load_writer(std::string* error) {
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&load_writer), &self) || !self.dli_fname) {
    *error = "cannot tell where libhybridprof.so is";
    return nullptr;
  }
  const std::string path = parent_of(self.dli_fname) + "/" + finalize::kJobArchiveLibrary;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    *error = dlerror();
    return nullptr;
  }
  auto* write = reinterpret_cast<decltype(&hybridprof_write_job_archive)>(dlsym(library, finalize::kJobArchiveFunction));
  if (!write) *error = std::string(finalize::kJobArchiveLibrary) + " has no " + finalize::kJobArchiveFunction;
  return write;
}

void write_job_archive_at_exit(int status) {
  TracingHost* host = tracing_host();
  if (getpid() != g_rank_pid || host == nullptr) return;
  // This rank's last samples and events go to disk and its stream closes.
  host->finish_process(raw::EndReason::kExit, status);
  const Pmpi& p = pmpi();
  const char* job_dir = std::getenv(env::kJobArchive);
  std::string error;
  auto write = job_dir ? load_writer(&error) : nullptr;
  // All ranks take part, or none: a rank that cannot would leave the
  // others waiting for it.
  int ready = write != nullptr, all_ready = 0;
  if (p.Allreduce(&ready, &all_ready, 1, p.int32, p.op_min, p.comm_world) != MPI_SUCCESS) all_ready = 0;
  if (!write) host->say("cannot load the job archive library: " + error);
  if (all_ready) {
    const char* enter_leave = std::getenv(env::kJobEnterLeave);
    char message[1024] = {};
    const std::string rank_dir = parent_of(host->raw_dir());
    if (write(job_dir, rank_dir.c_str(), enter_leave && *enter_leave == '1', message, sizeof message) != 0)
      host->say("the job's archive was not written at exit (" + std::string(message) +
          "); the launcher writes it from the raw data");
  }
  g_real_finalize();
}

}  // namespace

int finalize_or_defer(int (*real_finalize)()) {
  if (g_deferred.load()) return MPI_SUCCESS;  // called again: it is still to come
  const char* job_dir = std::getenv(env::kJobArchive);
  // The ranks agree (all defer, or none), which also gives the program what
  // MPI_Finalize guarantees it: every rank has reached it.
  TracingHost* host = tracing_host();
  int wanted = job_dir && *job_dir && host && host->drain().recording(), all_want = 0;
  const Pmpi& p = pmpi();
  if (p.Allreduce(&wanted, &all_want, 1, p.int32, p.op_min, p.comm_world) != MPI_SUCCESS || !all_want)
    return real_finalize();
  g_real_finalize = real_finalize;
  g_rank_pid = getpid();
  g_deferred = true;
  // Registered now, so it runs before what MPI registered at init; and
  // for _exit too.
  host->at_process_exit(write_job_archive_at_exit);
  return MPI_SUCCESS;
}

bool finalize_deferred() { return g_deferred.load(); }

}  // namespace hybridprof::mpi
