// The finalizer: turns the raw streams a run left in its output directory
// (raw/*.hpr, one per process image; for an MPI job rank-N/raw/*.hpr for
// every rank) into one OTF2 archive, definitions unified across processes. Runs after the
// program (the launcher calls it when the program ends; hybridprof-merge
// runs it by hand after a crash), so symbolization never touches the run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hybridprof::finalize {

struct Options {
  std::string directory;            // the run's output directory (contains raw/)
  std::string archive_directory;    // where the archive goes; default: `directory`
  bool enter_leave = false;         // also write <archive>/enter-leave/ for ViTE
  // Exit statuses the launcher saw, by pid ("exit 0", "signal 15").
  std::map<uint64_t, std::string> exit_statuses;
};

struct Result {
  std::string anchor;                 // path of traces.otf2
  std::string enter_leave_anchor;     // when requested
  uint64_t processes = 0, threads = 0, samples = 0;
  uint64_t dropped = 0, unwind_failed = 0, truncated = 0;
  uint64_t python_incomplete = 0;  // samples with an incomplete Python stack
  uint64_t mpi_events = 0;
  uint64_t mpi_events_without_comm = 0;  // skipped: their communicator's definition was lost
  uint64_t missing_ranks = 0;            // MPI ranks with no raw data at all
  std::vector<std::string> warnings;  // data found missing or damaged
};

// Returns false with a one-line `error` when no archive could be written
// (no raw data, unwritable directory, archive already there).
bool finalize(const Options& options, Result* result, std::string* error);

}  // namespace hybridprof::finalize
