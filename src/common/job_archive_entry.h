// What the runtime and the tools share about the in-job archive writer
// (tools/finalize/job_archive.h has the whole story): the entry point that
// libhybridprof_job_archive.so exports, which the runtime loads with dlopen
// at a rank's exit, and the names both sides use. Here, in src/, so that
// the runtime never includes the tools.
#pragma once

#include <cstddef>

extern "C" {

// Collective over MPI_COMM_WORLD: every rank calls it, after its raw stream
// is closed and before the real MPI_Finalize. `rank_dir` holds this rank's
// raw/ directory. Returns 0 when the archive was written; otherwise a
// one-line reason in `message` (this rank's, or that another one failed).
int hybridprof_write_job_archive(const char* job_dir, const char* rank_dir, int enter_leave, char* message,
                                 size_t message_size);

}

// The names the runtime and the launcher share.
namespace hybridprof::finalize {
inline constexpr const char* kJobArchiveLibrary = "libhybridprof_job_archive.so";
inline constexpr const char* kJobArchiveFunction = "hybridprof_write_job_archive";
inline constexpr const char* kJobArchiveResult = "job-archive.result";  // in JOB
}  // namespace hybridprof::finalize
