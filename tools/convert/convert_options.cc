#include "convert_options.h"

#include <cmath>
#include <cstdlib>
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
    "  -h, --help         this help\n"
    "\n"
    "Large runs make large files: a viewer copes with a window of them (--time, --ranks).\n";

namespace {

double seconds(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw std::invalid_argument(what + ": '" + text + "' is not a number of seconds");
  return v;
}

uint64_t whole(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || text[0] == '-') throw std::invalid_argument(what + ": '" + text + "' is not a number");
  return v;
}

// "0,2-3" -> {0, 2, 3}.
std::set<uint64_t> list(const std::string& text, const std::string& what) {
  std::set<uint64_t> values;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t dash = item.find('-', 1);
    if (dash == std::string::npos) {
      values.insert(whole(item, what));
    } else {
      const uint64_t first = whole(item.substr(0, dash), what), last = whole(item.substr(dash + 1), what);
      if (last < first || last - first > 1'000'000) throw std::invalid_argument(what + ": bad range '" + item + "'");
      for (uint64_t v = first; v <= last; ++v) values.insert(v);
    }
    at = comma + 1;
  }
  return values;
}

}  // namespace

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
    } else if (a == "--to") {
      o.to = value();
      if (o.to != "chrome") throw std::invalid_argument("--to: unknown format '" + o.to + "' (chrome is known)");
    } else if (a == "-o" || a == "--output") {
      o.output = value();
    } else if (a == "--time") {
      const std::string& w = value();
      const size_t colon = w.find(':');
      if (colon == std::string::npos) throw std::invalid_argument("--time: FROM:TO, e.g. 2.5:10");
      if (colon > 0) o.selection.from_s = seconds(w.substr(0, colon), "--time");
      if (colon + 1 < w.size()) o.selection.to_s = seconds(w.substr(colon + 1), "--time");
      if (o.selection.to_s <= o.selection.from_s) throw std::invalid_argument("--time: an empty window '" + w + "'");
    } else if (a == "--ranks") {
      o.selection.ranks = list(value(), "--ranks");
    } else if (a == "--threads") {
      o.selection.tids = list(value(), "--threads");
    } else if (!a.empty() && a[0] == '-') {
      throw std::invalid_argument("unknown option " + a);
    } else if (o.archive.empty()) {
      o.archive = a;
    } else {
      throw std::invalid_argument("one archive at a time ('" + a + "' too)");
    }
  }
  if (o.help) return o;
  if (o.to.empty()) throw std::invalid_argument("say which format: --to chrome");
  if (o.archive.empty()) throw std::invalid_argument("name the archive to convert");
  if (o.output.empty()) throw std::invalid_argument("name the output: -o FILE.json");
  return o;
}

}  // namespace hybridprof::convert
