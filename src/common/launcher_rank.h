// The rank a parallel launcher (mpirun, srun) gave this process, from the
// environment it sets: read the same way by the launcher (one output
// directory per job, the job archive) and by the runtime (the process's
// rank in its raw stream, before MPI_Init).
#pragma once

#include <cstdint>

namespace hybridprof {

// -1 when no launcher set one.
int64_t launcher_rank_from_env();

}  // namespace hybridprof
