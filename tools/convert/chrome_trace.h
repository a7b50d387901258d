// An archive as Trace Event Format JSON (Chrome's trace viewer, Perfetto's
// ui.perfetto.dev, speedscope): one process per rank or process, one track
// per thread and device stream with its traced regions as slices (MPI call
// attributes in their args), one flame-chart track per thread of its
// samples (consecutive samples with the same frames merged), MPI
// messages as flow arrows from send to receive and CUDA launches from the
// call to the work, a counter of each thread's samples and of each GPU's
// busy share per 10 ms, and the samples again as stackFrames + samples for
// viewers that read those. Timestamps in microseconds from the job's
// start, on the archive's clock.
//
// Streams the archive a location at a time: memory holds the definitions
// and one location's open regions, not the events. Slices are B/E pairs
// written as the records come, so every track runs forward in time in the
// file (complete "X" events would be written at their end, after the
// slices inside them); a message's arrow is named by the two ranks, its
// communicator, tag and place in their order (MPI keeps messages between
// two ranks in order), so each end is written without the other.
#pragma once

#include <cstdint>
#include <string>

#include "json_file.h"
#include "otf2/selection.h"

namespace hybridprof::convert {

struct ChromeTraceCounts {
  uint64_t slices = 0, samples = 0, flow_starts = 0, flow_ends = 0, counters = 0;
  uint64_t marks = 0;  // instant events: marks and capture windows' edges
};

// Writes the JSON of the part of the archive at `archive` (a directory or
// .otf2 file) that `selection` keeps into `out`. Throws std::runtime_error with a one-line message (not an
// archive, damaged, a selection that matches nothing).
ChromeTraceCounts write_chrome_trace(const std::string& archive, const otf2::Selection& selection, JsonFile& out);

}  // namespace hybridprof::convert
