// Where a run's data goes: a new directory per run (never an existing
// archive), and DIR/rank-N per rank under an MPI launcher.
#pragma once

#include <string>

namespace hybridprof::launcher {

// `requested` is -o (or ""). `program` names the default directory. Creates
// the directory and returns its absolute path, or false with `error`. An
// existing directory must be the user's own, not a symbolic link, and not
// writable by every user; new ones are rwxrwxr-x less the umask.
bool prepare_output_directory(const std::string& requested, const std::string& program, std::string* path,
                              std::string* error);

}  // namespace hybridprof::launcher
