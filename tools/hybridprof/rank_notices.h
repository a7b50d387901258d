// The notices of an MPI job's ranks (each rank's launcher keeps its own in
// JOB/rank-N/notices instead of printing them), said once each by the
// launcher that ends the job: "event 'cycles' is not
// supported on this CPU; sampling cpu-clock instead (8 ranks)". A notice
// only some ranks gave says which.
#pragma once

#include <string>
#include <vector>

namespace hybridprof::launcher {

// Keeps `line` in the rank directory `rank_dir`; false when it cannot (then
// say it now).
bool append_rank_notice(const std::string& rank_dir, const std::string& line);

// The lines to print, in the order first seen (ranks in order): each
// distinct notice with "(N ranks)", or "(rank R)" / "(ranks R, S)" when
// fewer than all ranks said it.
std::vector<std::string> rank_notices(const std::string& job_dir);

}  // namespace hybridprof::launcher
