// The numbers hybridprof-report prints, computed from an archive read through
// otf2::ArchiveReader. Pure functions of (definitions, sample counts), so the
// tests can check them without parsing text.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mpi_summary.h"
#include "openmp_summary.h"
#include "gpu_summary.h"
#include "range_summary.h"
#include "wait_summary.h"
#include "otf2/archive_reader.h"
#include "otf2/selection.h"

namespace hybridprof::report {

// What the events say, counted in one pass; everything else derives from it.
class StepTimer;  // ml_view.h

struct SampleCounts {
  uint64_t total = 0;
  std::map<uint32_t, uint64_t> by_context;  // leaf calling context -> samples
  std::map<uint64_t, uint64_t> by_thread;   // location -> samples
  // process -> its samples, and those that are the profiler's own time
  // (whose leaf is [hybridprof])
  std::map<uint32_t, uint64_t> by_process, profiler_by_process;
  uint64_t region_events = 0;               // Enter/Leave records (enter_leave archives, traced regions)
  std::shared_ptr<MpiStats> mpi;            // MPI calls and messages
  std::shared_ptr<OpenMpStats> openmp;      // OpenMP constructs
  std::shared_ptr<RangeStats> ranges;       // user ranges (NVTX)
  std::shared_ptr<GpuStats> gpu;            // CUDA work and calls
  std::shared_ptr<WaitStats> waits;         // wall time: CPU, traced waits
  std::shared_ptr<StepTimer> step_timer;    // with a step function: its wall time
};
// Counts the events of the locations and the window `selection` keeps (all
// by default); with `step` (a Python function, --step) also times it.
SampleCounts count_samples(otf2::ArchiveReader&, const otf2::Selection& selection = {}, const std::string& step = "");

// The frame a sample ends in when it is the profiler's own time.
inline constexpr const char* kProfilerFrame = "[hybridprof]";

// Which frames the profile shows, and how Python frames are named.
struct FrameView {
  // Only Python frames (a sample without any then counts toward the total
  // but shows in no row).
  bool python_only = false;
  // One frame per Python function: frames of the same function (qualified
  // name and file) are one whatever line they were at, read "qualname
  // (file)" instead of "qualname (file:line)" in paths and folded stacks.
  bool python_functions = false;
};

struct FunctionRow {
  uint32_t region = 0;
  std::string name;
  std::string source;      // "file:line" of its hottest line, "file" or "-"
  std::string module;      // basename of the executable or library, "" if unknown
  uint64_t self = 0;       // samples with this function as leaf
  uint64_t inclusive = 0;  // samples with this function anywhere on the path (once per sample)
};
// All functions with samples, by self desc, then inclusive desc, then name.
std::vector<FunctionRow> flat_profile(const otf2::Archive&, const SampleCounts&, FrameView = {});

struct PathRow {
  std::vector<std::string> frames;  // function names, root first
  uint64_t samples = 0;
};
// Leaf contexts merged by their function chain (contexts that differ only in
// call-site lines read the same), by samples desc, then frames.
std::vector<PathRow> hottest_paths(const otf2::Archive&, const SampleCounts&, FrameView = {});

// "root;caller;leaf count" per distinct chain, sorted: flamegraph.pl and
// speedscope input. ';' inside names becomes ':' and line breaks spaces.
std::vector<std::string> folded_stacks(const otf2::Archive&, const SampleCounts&, FrameView = {});

// The contexts along the path of `context` that the view shows, root
// first: function_chain's frames, one for one.
std::vector<uint32_t> view_path(const otf2::Archive&, uint32_t context, FrameView = {});

// Display names along the path of `context`, root first ("<unknown ...>" for
// refs the archive does not define).
std::vector<std::string> function_chain(const otf2::Archive&, uint32_t context, FrameView = {});

// "name [pid]" of a process (location group).
std::string process_label(const otf2::Archive&, uint32_t process);

// More than 12 frames: the first 3, "…", the last 8 (unless `full`).
std::vector<std::string> abbreviate(const std::vector<std::string>& frames, bool full);

}  // namespace hybridprof::report
