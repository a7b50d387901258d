#include "convert_options.h"

#include <stdexcept>

namespace hybridprof::convert {

const char* const kUsage =
    "usage: hybridprof-convert --to chrome ARCHIVE -o FILE.json[.gz] [--time FROM:TO] [--ranks LIST]\n"
    "                          [--threads LIST]\n"
    "\n"
    "Converts a hybridprof archive (a run's directory or its traces.otf2) for other viewers.\n"
    "\n"
    "  --to chrome        Trace Event Format JSON, for ui.perfetto.dev, Chrome's trace viewer\n"
    "                     (chrome://tracing) and speedscope: a process per rank or process, a\n"
    "                     track per thread and GPU stream with its traced regions (MPI, OpenMP,\n"
    "                     CUDA, NVTX) as slices, a flame-chart track per thread of its samples,\n"
    "                     MPI messages as arrows from send to receive, each thread's samples per\n"
    "                     10 ms as a counter, and stackFrames + samples for viewers that read them;\n"
    "                     times in microseconds from the job's start\n"
    "  -o FILE            where to write it; gzip-compressed when FILE ends in .gz. Written\n"
    "                     under a temporary name and renamed when complete\n"
    "  --time FROM:TO     only this window, in seconds from the job's start (either side may be\n"
    "                     left out: 2.5: or :10)\n"
    "  --ranks LIST       only these MPI ranks (processes in the archive's order in a run without\n"
    "                     ranks), e.g. 0,2-3\n"
    "  --threads LIST     only the threads with these TIDs (the report's TID column)\n"
    "  --version          the version and the git commit it was built from\n"
    "  -h, --help         this help\n"
    "\n"
    "Large runs make large files: a viewer copes with a window of them (--time, --ranks).\n";

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--version") {
      o.version = true;
    } else if (a == "--to") {
      o.to = value();
      if (o.to != "chrome") throw std::invalid_argument("--to: unknown format '" + o.to + "' (chrome is known)");
    } else if (a == "-o" || a == "--output") {
      o.output = value();
    } else if (a == "--time") {
      otf2::parse_window(value(), "--time", &o.selection);
    } else if (a == "--ranks") {
      o.selection.ranks = otf2::parse_list(value(), "--ranks");
    } else if (a == "--threads") {
      o.selection.tids = otf2::parse_list(value(), "--threads");
    } else if (!a.empty() && a[0] == '-') {
      throw std::invalid_argument("unknown option " + a);
    } else if (o.archive.empty()) {
      o.archive = a;
    } else {
      throw std::invalid_argument("one archive at a time ('" + a + "' too)");
    }
  }
  if (o.help || o.version) return o;
  if (o.to.empty()) throw std::invalid_argument("say which format: --to chrome");
  if (o.archive.empty()) throw std::invalid_argument("name the archive to convert");
  if (o.output.empty()) throw std::invalid_argument("name the output: -o FILE.json");
  return o;
}

}  // namespace hybridprof::convert
