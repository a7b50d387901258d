#include "common/launcher_rank.h"

#include <cstdlib>
#include <initializer_list>

namespace hybridprof {

int64_t launcher_rank_from_env() {
  // Open MPI, PMIx launchers, MPICH/Hydra and Slurm, in that order.
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long long rank = std::strtoll(v, &end, 10);
    if (*end == '\0' && rank >= 0) return rank;
  }
  return -1;
}

}  // namespace hybridprof
