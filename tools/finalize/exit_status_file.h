// What a launcher saw of its program's end, kept in the run's directory
// (DIR/ended: "PID STATUS", e.g. "4242 exit 0"; under mpirun each rank's
// DIR/rank-N/ended) for whoever writes the archive: the launcher itself,
// the launcher that writes an MPI job's, or hybridprof-merge later.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

namespace hybridprof::finalize {

inline constexpr const char* kExitStatusFile = "ended";

// Writes DIR/ended whole (then renamed into place). False on failure.
bool record_exit_status(const std::string& run_dir, pid_t pid, const std::string& status);

// The statuses recorded in DIR/ended and DIR/rank-*/ended, by pid.
std::map<uint64_t, std::string> recorded_exit_statuses(const std::string& directory);

}  // namespace hybridprof::finalize
