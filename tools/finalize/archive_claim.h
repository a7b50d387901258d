// Who is writing a job's archive. In an MPI job the last launcher to see
// every rank end writes JOB/traces.otf2; it claims that with an exclusive
// create of JOB/.finalizing, which holds its pid. hybridprof-merge, run on
// the same job (say after mpirun killed it), waits for a live writer
// instead of racing it.
#pragma once

#include <sys/types.h>

#include <string>

namespace hybridprof::finalize {

// True when this process now holds the claim (nobody held it before).
bool claim_archive(const std::string& job_dir);
// Gives up a claim this process holds: its archive is written (or will not
// be), and nothing is left in the job's directory.
void release_archive(const std::string& job_dir);

// The pid of the live hybridprof process holding the claim, or 0 (no
// claim, or its holder is gone).
pid_t archive_writer(const std::string& job_dir);

}  // namespace hybridprof::finalize
