// An MPI job runs one launcher per rank, each writing JOB/rank-N. The ranks
// themselves write the job's one archive (JOB/traces.otf2) at their exit
// (finalize/job_archive.h). Whichever launcher sees every rank ended reports
// it, or writes it from the raw data when the ranks could not: each records
// its rank's end in JOB/rank-N/ended (finalize/exit_status_file.h), then claims the job's finalization
// with an exclusive create, so exactly one does.
// A job killed before that (mpirun kills launchers too) leaves the raw data;
// `hybridprof-merge JOB` writes the archive then.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

namespace hybridprof::launcher {

struct JobRank {
  int rank = -1, size = 0;  // rank -1: not under an MPI launcher
  std::string job_dir, rank_dir;
};

// From the MPI launcher's environment; rank_dir is the launcher's output
// directory (JOB/rank-N).
JobRank job_rank_from_env(const std::string& rank_dir);

// Records this rank's end (pid and status, e.g. "exit 0"). Returns true
// when this launcher is to write the job's archive now.
bool end_rank(const JobRank& job, pid_t pid, const std::string& status);

}  // namespace hybridprof::launcher
