#include "hybridprof/mpi_job.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/launcher_rank.h"
#include "finalize/archive_claim.h"
#include "finalize/exit_status_file.h"
#include "hybridprof/output_directory.h"

namespace hybridprof::launcher {
namespace {

int world_size_from_env() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  }
  return 0;
}

int ended_ranks(const std::string& job_dir) {
  int n = 0;
  if (DIR* d = opendir(job_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("rank-", 0) == 0 && access((job_dir + "/" + name + "/" + finalize::kExitStatusFile).c_str(), F_OK) == 0) ++n;
    }
    closedir(d);
  }
  return n;
}

}  // namespace

JobRank job_rank_from_env(const std::string& rank_dir) {
  JobRank job;
  job.rank = static_cast<int>(launcher_rank_from_env());
  if (job.rank < 0) return job;
  job.size = world_size_from_env();
  job.rank_dir = rank_dir;
  job.job_dir = rank_dir.substr(0, rank_dir.find_last_of('/'));
  return job;
}

bool end_rank(const JobRank& job, pid_t pid, const std::string& status) {
  if (!finalize::record_exit_status(job.rank_dir, pid, status)) return false;
  if (job.size <= 0 || ended_ranks(job.job_dir) < job.size) return false;
  // Two launchers may both see every rank ended; the first to make this
  // file ends the job. (The archive's claim is not enough: it is given up
  // when done, and a launcher that looks a moment later could take it
  // again and say everything twice.)
  const int fd = open((job.job_dir + "/.job-ended").c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  close(fd);
  return finalize::claim_archive(job.job_dir);
}

}  // namespace hybridprof::launcher
