// hybridprof-report --diff BASE NEW: what changed between two runs, like
// perf diff but for call paths and traced regions too. Functions match by
// name and module (two builds place them at different addresses), call
// paths by their chain of function names, traced regions (MPI, OpenMP,
// CUDA, NVTX) by paradigm and name. By default each side is a share of its
// own run (functions and paths: of its samples; regions: their time
// against the run's sampled time), so runs of different lengths compare;
// --absolute compares time (samples times the sampling period).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "options.h"
#include "otf2/archive_reader.h"
#include "profile.h"

namespace hybridprof::report {

struct DiffRow {
  std::string name;
  double base = 0, fresh = 0;            // shares in percent, or seconds with --absolute
  uint64_t base_count = 0, new_count = 0;  // samples, or calls for a region
  double change() const { return fresh - base; }
};
struct RunDiff {
  bool absolute = false;
  std::vector<DiffRow> self, inclusive, paths, regions;  // each by |change|, largest first
};

// Traced regions' time and calls, by "PARADIGM: name": a region's time once
// per location however deep it nests in itself.
struct RegionTimes {
  struct Entry {
    double seconds = 0;
    uint64_t calls = 0;
  };
  std::map<std::string, Entry> by_region;
};
RegionTimes region_times(otf2::ArchiveReader& reader, const otf2::Selection& selection);

RunDiff diff_runs(const otf2::Archive& base, const SampleCounts& base_counts, const RegionTimes& base_regions,
                  const otf2::Archive& fresh, const SampleCounts& new_counts, const RegionTimes& new_regions,
                  bool absolute);

void print_diff(std::ostream&, const RunDiff&, const std::string& base_name, const std::string& new_name, size_t top);

// The whole of --diff: 0, or 1 with a line on `err`.
int run_diff(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace hybridprof::report
