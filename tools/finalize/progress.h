// What a long archive write is doing, on a terminal: one line on stderr,
// rewritten in place ("hybridprof: symbolizing: process 3 of 8"), once the
// write has taken a second (HYBRIDPROF_PROGRESS_AFTER_MS changes that),
// at most five times a second, and cleared when it is done. Nothing at all
// when stderr is not a terminal (a log, mpirun's forwarding).
#pragma once

#include <cstddef>

namespace hybridprof::finalize {

// `step` is "symbolizing", "writing events"...; `done` of `total` items.
void show_progress(const char* step, size_t done, size_t total);
// Clears the line, if one was shown.
void end_progress();

}  // namespace hybridprof::finalize
