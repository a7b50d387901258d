// A flame graph as one self-contained SVG (no script or font from
// outside, as flamegraph.pl draws them): a frame's width is its samples, its
// colour says what it is (Python, native, kernel, the profiler's own time,
// a traced region: MPI, OpenMP, CUDA, a user range), its full name and
// share show on hover, a click zooms into it (Reset zoom undoes that), and
// Search highlights the frames whose names match and says what share of
// the samples they hold. Inverted (roots at the top) it is an icicle graph.
#pragma once

#include <ostream>
#include <string>

#include "profile.h"

namespace hybridprof::report {

struct FlameGraphOptions {
  bool icicle = false;
  std::string title = "Flame graph";
  std::string subtitle;  // the program, the window
};

void write_flamegraph(std::ostream& out, const otf2::Archive&, const SampleCounts&, FrameView,
                      const FlameGraphOptions&);

}  // namespace hybridprof::report
