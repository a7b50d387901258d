// Which part of an archive a reader looks at: a window of the job's time,
// some ranks, some threads. Shared by hybridprof-report (--flamegraph,
// --folded and its tables) and hybridprof-convert, which take the same
// --time FROM:TO, --ranks LIST and --threads LIST.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "otf2/archive_reader.h"

namespace hybridprof::otf2 {

struct Selection {
  double from_s = 0, to_s = std::numeric_limits<double>::infinity();  // seconds from the job's start
  std::set<uint64_t> ranks;  // MPI ranks (processes in archive order in a run without ranks); empty: all
  std::set<uint64_t> tids;   // threads by TID; empty: all
  // --time NAME: the capture window a mark NAME opened (hybridprof_mark,
  // Python's hybridprof.window(NAME)); with_window_name() turns it into
  // from_s and to_s.
  std::string window_name;
  bool all() const {
    return from_s == 0 && to_s == std::numeric_limits<double>::infinity() && ranks.empty() && tids.empty() &&
           window_name.empty();
  }
};

// What a heading says the selection covers: "all ranks", "rank 1",
// "ranks 0, 2", then its threads and time if cut ("ranks 0, 2; threads
// 4242; 1.000 s to 2.500 s").
std::string describe(const Selection& selection);

// "FROM:TO" in seconds, either side may be left out ("2.5:", ":10"), or
// the name of a capture window (text without a colon: window_name).
// Throws std::invalid_argument naming `option` for bad text or an empty window.
void parse_window(const std::string& text, const std::string& option, Selection* selection);
// "0,2-3" -> {0, 2, 3}. Throws std::invalid_argument naming `option`.
std::set<uint64_t> parse_list(const std::string& text, const std::string& option);

// `selection` with its window_name made a time window: from the opening of
// the first window that a mark of that name lies in to the closing of the
// last (across processes: each rank's own). Throws std::runtime_error when
// no window is so marked.
Selection with_window_name(const Archive& archive, const Selection& selection);

// The locations (threads, and device streams when no TID is asked for)
// that `selection` keeps. Throws std::runtime_error when it keeps none.
std::set<uint64_t> selected_locations(const Archive& archive, const Selection& selection);

// The time one sample stands for, from the archive's HYBRIDPROF::PERIOD
// ("1000 Hz", "250000 ns"); 0 when the period counts events or is unknown.
double sample_period_seconds(const Archive& archive);

// A timestamp in seconds from the job's start (the archive's first tick).
inline double seconds_of(const Archive& archive, uint64_t timestamp) {
  const uint64_t from = archive.clock.global_offset;
  return double(timestamp > from ? timestamp - from : 0) / double(archive.clock.resolution);
}

}  // namespace hybridprof::otf2
