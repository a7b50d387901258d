#include "text_report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "capture_windows.h"
#include "common/build_identity.h"
#include "diff.h"
#include "ml_text.h"
#include "ml_view.h"
#include "otf2/property_names.h"
#include "flamegraph.h"
#include "function_names.h"
#include "table.h"

namespace hybridprof::report {
namespace property = otf2::property;
using Align = Table::Align;

namespace {

constexpr size_t kMaxFunctionWidth = 70;  // longer (template) names are shortened in the flat profile
constexpr size_t kMaxFrameWidth = 40;     // ... and in call paths, which hold many of them

std::string archive_property(const otf2::Archive& archive, const char* name) {
  auto it = archive.properties.find(name);
  return it == archive.properties.end() || it->second.empty() ? "-" : it->second;
}

std::string or_dash(const std::optional<uint64_t>& value) { return value ? std::to_string(*value) : "-"; }

std::optional<uint64_t> thread_property(const otf2::ThreadInfo& thread, const char* name) {
  auto it = thread.properties.find(name);
  if (it == thread.properties.end()) return std::nullopt;
  return it->second;
}

// Sum over threads; absent when no thread has the property (never measured
// is not the same as zero).
std::optional<uint64_t> sum_thread_property(const otf2::Archive& archive, const char* name) {
  std::optional<uint64_t> sum;
  for (const auto& [location, thread] : archive.threads) {
    if (auto value = thread_property(thread, name)) sum = sum.value_or(0) + *value;
  }
  return sum;
}

std::string process_property(const otf2::ProcessInfo& process, const char* name) {
  auto it = process.properties.find(name);
  return it == process.properties.end() || it->second.empty() ? "-" : it->second;
}

// A process property that is a whole number; none when absent or not one.
std::optional<uint64_t> number_property(const otf2::ProcessInfo& process, const char* name) {
  const std::string text = process_property(process, name);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> sum_process_property(const otf2::Archive& archive, const char* name) {
  std::optional<uint64_t> sum;
  for (const auto& [ref, process] : archive.processes)
    if (const auto value = number_property(process, name)) sum = sum.value_or(0) + *value;
  return sum;
}

// The Python versions whose frames were read, "3.11" or "3.11, 3.12";
// empty when no process ran Python (or none was readable).
std::string python_versions(const otf2::Archive& archive) {
  std::set<std::string> versions;
  for (const auto& [ref, process] : archive.processes) {
    const std::string version = process_property(process, property::kPython);
    if (version != "-") versions.insert(version);
  }
  std::string text;
  for (const std::string& v : versions) text += (text.empty() ? "" : ", ") + v;
  return text;
}

// Whether any thread counts incomplete Python stacks: only threads of
// processes that ran Python do.
bool any_python_threads(const otf2::Archive& archive) {
  for (const auto& [location, thread] : archive.threads)
    if (thread.properties.count(property::kPythonIncomplete)) return true;
  return false;
}

std::string duration_text(const otf2::ClockInfo& clock) {
  if (clock.resolution == 0 || clock.trace_length == 0) return "-";
  const double seconds = static_cast<double>(clock.trace_length) / static_cast<double>(clock.resolution);
  char buffer[64];
  if (seconds >= 1.0) {
    std::snprintf(buffer, sizeof buffer, "%.3f s", seconds);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3f ms", seconds * 1e3);
  }
  return buffer;
}

// The sample handler's cost: its mean time a signal and, where the period
// is a rate (each sample one 1/rate of the thread's CPU time), its share of
// the sampled threads' CPU time. The kernel's delivery of each signal comes
// on top (about a microsecond, more in a virtual machine). Handlers that
// took over 250 us (the thread switched out meanwhile) are counted apart,
// their time left out.
std::string sample_handler_text(const otf2::Archive& archive, const std::string& period) {
  const uint64_t signals = sum_thread_property(archive, property::kSampleSignals).value_or(0);
  const uint64_t handler_ns = sum_thread_property(archive, property::kSampleHandlerNs).value_or(0);
  const uint64_t slow = std::min(signals, sum_thread_property(archive, property::kSampleHandlerSlow).value_or(0));
  if (signals == slow) return signals == 0 ? "-" : std::to_string(slow) + " samples, every one over 250 us (switched out)";
  char buffer[256];
  int n = std::snprintf(buffer, sizeof buffer, "%.1f us a sample (mean of %llu", 1e-3 * double(handler_ns) / double(signals - slow),
                        static_cast<unsigned long long>(signals - slow));
  if (slow > 0)
    n += std::snprintf(buffer + n, sizeof buffer - size_t(n), "; %llu more over 250 us, switched out meanwhile, left out",
                       static_cast<unsigned long long>(slow));
  n += std::snprintf(buffer + n, sizeof buffer - size_t(n), ")");
  const uint64_t taken = sum_thread_property(archive, property::kSamples).value_or(0);
  const double hz = std::strtod(period.c_str(), nullptr);
  if (taken > 0 && hz > 0 && period.find(" Hz") != std::string::npos) {
    const double sampled_ns = double(taken) * 1e9 / hz;
    std::snprintf(buffer + n, sizeof buffer - size_t(n), ", %.1f%% of the sampled threads' CPU time",
                  100.0 * double(handler_ns) / sampled_ns);
  }
  return buffer;
}

// Where samples stand for more periods than signals came (CPU-time
// timers: they fire at scheduler ticks, each signal weighted by the
// periods it covers), how many signals: the shares are only as certain as
// that many samples'. On a loaded machine a thread that reads its own CPU
// clock often ran between ticks: 133 signals stood for 1,492 samples
// there, and the shares of a 50/30/20 split moved by ten points.
std::string weighted_samples_text(const otf2::Archive& archive, uint64_t taken) {
  const uint64_t signals = sum_thread_property(archive, property::kSampleSignals).value_or(0);
  if (signals == 0 || signals * 5 >= taken * 4) return "";
  return "; from " + std::to_string(signals) +
         " signals, each weighted by the periods it covered (CPU-time timers fire at scheduler ticks): shares are as "
         "certain as " +
         std::to_string(signals) + " samples'";
}

// What share of samples the profiler took ([hybridprof] leaves): in all,
// and per process (each one's when there are few, else the range and the
// process that took the most).
std::string profiler_share_text(const otf2::Archive& archive, const SampleCounts& counts) {
  uint64_t own = 0;
  for (const auto& [process, n] : counts.profiler_by_process) own += n;
  std::string text = percent(own, counts.total) + " of samples ([hybridprof] frames)";
  if (counts.by_process.size() < 2) return text;
  std::vector<std::pair<double, uint32_t>> shares;  // (share, process)
  for (const auto& [process, n] : counts.by_process) {
    auto it = counts.profiler_by_process.find(process);
    shares.emplace_back(double(it == counts.profiler_by_process.end() ? 0 : it->second) / double(n), process);
  }
  std::sort(shares.begin(), shares.end());
  auto share = [](double s) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.1f%%", 100.0 * s);
    return std::string(buffer);
  };
  if (shares.size() <= 4) {
    text += "; per process:";
    for (const auto& [s, process] : shares) text += " " + process_label(archive, process) + " " + share(s) + ",";
    text.pop_back();
    return text;
  }
  return text + "; per process " + share(shares.front().first) + " to " + share(shares.back().first) + " (most: " +
         process_label(archive, shares.back().second) + ")";
}

// Events the archive writer moved later to keep their thread's order
// (property::kOutOfOrderEvents): shown when one moved a microsecond or
// more (a few nanoseconds are the rounding between the samples' clock and
// the traced calls'), else "".
std::string out_of_order_text(const otf2::Archive& archive) {
  uint64_t most_ns = 0;
  for (const auto& [location, thread] : archive.threads)
    most_ns = std::max(most_ns, thread_property(thread, property::kOutOfOrderNs).value_or(0));
  if (most_ns < 1000) return "";
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "%llu, written at their thread's previous time, up to %.1f us after their own",
                static_cast<unsigned long long>(sum_thread_property(archive, property::kOutOfOrderEvents).value_or(0)),
                1e-3 * double(most_ns));
  return buffer;
}

void heading(std::ostream& out, const std::string& title) { out << '\n' << title << '\n'; }

FrameView frame_view(const Options& options) {
  return {.python_only = options.python_only, .python_functions = options.python_functions};
}

}  // namespace

void print_summary(std::ostream& out, const otf2::Archive& archive, const SampleCounts& counts) {
  out << "hybridprof report: " << archive.anchor << '\n';
  heading(out, "Run");
  const std::string event = archive_property(archive, property::kEvent);
  const std::string period = archive_property(archive, property::kPeriod);
  std::string samples = std::to_string(counts.total) + " in archive";
  if (auto taken = sum_thread_property(archive, property::kSamples)) {
    samples += " (threads report " + std::to_string(*taken) + " taken" + weighted_samples_text(archive, *taken) + ")";
  }
  Table table({{"", Align::kLeft}, {"", Align::kLeft}});
  table.add_row({"Program", archive_property(archive, property::kProgram)});
  table.add_row({"Duration", duration_text(archive.clock)});
  table.add_row({"Event", period == "-" ? event : event + " at " + period});
  table.add_row({"Periods", archive_property(archive, property::kPeriods)});
  table.add_row({"Mechanism", archive_property(archive, property::kMechanism)});
  table.add_row({"Kernel time", archive_property(archive, property::kKernelTime)});
  table.add_row({"Processes", std::to_string(archive.processes.size())});
  const size_t streams = static_cast<size_t>(std::count_if(archive.threads.begin(), archive.threads.end(),
                                                          [](const auto& t) { return t.second.device != otf2::kUndefined; }));
  const uint64_t quiet = sum_process_property(archive, property::kQuietThreads).value_or(0);
  table.add_row({"Threads", std::to_string(archive.threads.size() - streams + quiet) +
                                (quiet ? " (" + std::to_string(quiet) + " recorded nothing: no location of their own)" : "")});
  if (streams) table.add_row({"Device streams", std::to_string(streams)});
  table.add_row({"Samples", samples});
  table.add_row({"Dropped samples", or_dash(sum_thread_property(archive, property::kDropped))});
  table.add_row({"Unwind failures", or_dash(sum_thread_property(archive, property::kUnwindFailures))});
  if (const uint64_t recovered = sum_thread_property(archive, property::kUnwindRecovered).value_or(0)) {
    // Stacks continued past code without unwind tables (JIT kernels) from a
    // caller found on the stack.
    table.add_row({"Recovered unwinds", std::to_string(recovered) + " (" + percent(recovered, counts.total) +
                                            " of samples, past code without unwind tables)"});
  }
  table.add_row({"Truncated stacks", or_dash(sum_thread_property(archive, property::kTruncated))});
  if (const std::string moved = out_of_order_text(archive); !moved.empty()) table.add_row({"Events out of order", moved});
  table.add_row({"Profiler's own time", profiler_share_text(archive, counts)});
  table.add_row({"Sample handler", sample_handler_text(archive, period)});
  table.add_row({"Samples without thread", or_dash(sum_process_property(archive, property::kSamplesWithoutThread))});
  if (const std::string python = python_versions(archive); !python.empty()) table.add_row({"Python", python});
  if (any_python_threads(archive)) {
    // Their Python frames are what could be read and placed: the stack may
    // lack outer Python frames, or keep an interpreter frame in their place.
    const uint64_t incomplete = sum_thread_property(archive, property::kPythonIncomplete).value_or(0);
    table.add_row({"Incomplete Python stacks", std::to_string(incomplete) + " (" + percent(incomplete, counts.total) +
                                                   " of samples)"});
  }
  table.add_row({"Archive written by", archive_property(archive, property::kWrittenBy)});
  const std::string commit = archive_property(archive, property::kCommit);
  table.add_row({"hybridprof version",
                 archive_property(archive, property::kVersion) + (commit.empty() ? "" : " (commit " + commit + ")")});
  std::ostringstream lines;
  table.print(lines);
  // The title row of a key/value table is blank: skip it.
  const std::string text = lines.str();
  out << text.substr(text.find('\n') + 1);

  const std::string notices = archive_property(archive, property::kNotices);
  if (notices != "-") {
    heading(out, "Notices");
    std::istringstream in(notices);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out << "  " << line << '\n';
    }
  }
}

void print_flat_profile(std::ostream& out, const otf2::Archive& archive, const SampleCounts& counts, size_t top,
                        FrameView view, size_t name_width) {
  const std::vector<FunctionRow> rows = flat_profile(archive, counts, view);
  heading(out, "Flat profile (" + std::to_string(std::min(top, rows.size())) + " of " + std::to_string(rows.size()) +
                   " functions, by self samples)");
  Table table({{"Self%", Align::kRight},
               {"Self", Align::kRight},
               {"Incl%", Align::kRight},
               {"Incl", Align::kRight},
               {"Function", Align::kLeft},
               {"Module", Align::kLeft},
               {"Source", Align::kLeft}});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const FunctionRow& r = rows[i];
    table.add_row({percent(r.self, counts.total), std::to_string(r.self), percent(r.inclusive, counts.total),
                   std::to_string(r.inclusive), shorten_function_name(r.name, name_width),
                   r.module.empty() ? "-" : r.module, r.source});
  }
  table.print(out);
}

void print_hottest_paths(std::ostream& out, const otf2::Archive& archive, const SampleCounts& counts, size_t top,
                         bool full_paths, FrameView view) {
  const std::vector<PathRow> rows = hottest_paths(archive, counts, view);
  heading(out, "Hottest call paths (" + std::to_string(std::min(top, rows.size())) + " of " +
                   std::to_string(rows.size()) + ", root → leaf)");
  Table table({{"Samples", Align::kRight}, {"%", Align::kRight}, {"Path", Align::kLeft}});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    std::string path;
    for (const std::string& frame : abbreviate(rows[i].frames, full_paths)) {
      path += (path.empty() ? "" : " → ") + (full_paths ? frame : truncate_display(frame, kMaxFrameWidth));
    }
    table.add_row({std::to_string(rows[i].samples), percent(rows[i].samples, counts.total), path});
  }
  table.print(out);
}

void print_processes_and_threads(std::ostream& out, const otf2::Archive& archive, const SampleCounts& counts,
                                 size_t top) {
  heading(out, "Processes");
  Table processes({{"Process", Align::kLeft},
                   {"PID", Align::kRight},
                   {"Parent", Align::kRight},
                   {"Exit status", Align::kRight},
                   {"Threads", Align::kRight},
                   {"Samples", Align::kRight},
                   {"Without thread", Align::kRight}});
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> per_process;  // threads, samples
  for (const auto& [location, thread] : archive.threads) {
    if (thread.device != otf2::kUndefined) continue;  // a device's stream: not a thread of the process
    auto& [threads, samples] = per_process[thread.process];
    ++threads;
    auto it = counts.by_thread.find(location);
    if (it != counts.by_thread.end()) samples += it->second;
  }
  // A parent in the run by its PID; one outside it (the launcher) not.
  std::set<std::string> pids;
  for (const auto& [ref, process] : archive.processes) pids.insert(process_property(process, property::kPid));
  size_t shown = 0;
  for (const auto& [ref, process] : archive.processes) {
    if (shown++ == top) break;
    const std::string parent = process_property(process, property::kParentPid);
    processes.add_row({process.name, process_property(process, property::kPid), pids.count(parent) ? parent : "-",
                       process_property(process, property::kExitStatus),
                       std::to_string(per_process[ref].first +
                                      number_property(process, property::kQuietThreads).value_or(0)),
                       std::to_string(per_process[ref].second),
                       process_property(process, property::kSamplesWithoutThread)});
  }
  processes.print(out);
  if (archive.processes.size() > top) out << "  … and " << archive.processes.size() - top << " more processes\n";

  heading(out, "Threads (by samples)");
  std::vector<std::pair<uint64_t, uint64_t>> order;  // samples, location
  for (const auto& [location, thread] : archive.threads) {
    if (thread.device != otf2::kUndefined) continue;
    auto it = counts.by_thread.find(location);
    order.emplace_back(it == counts.by_thread.end() ? 0 : it->second, location);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const bool python = any_python_threads(archive);
  std::vector<Table::Column> columns = {{"Process", Align::kLeft},         {"Thread", Align::kLeft},
                                        {"TID", Align::kRight},            {"Samples", Align::kRight},
                                        {"%", Align::kRight},              {"Dropped", Align::kRight},
                                        {"Unwind failures", Align::kRight}, {"Truncated", Align::kRight}};
  if (python) columns.push_back({"Python incomplete", Align::kRight});
  Table threads(std::move(columns));
  for (size_t i = 0; i < order.size() && i < top; ++i) {
    const otf2::ThreadInfo& t = archive.threads.at(order[i].second);
    std::vector<std::string> row = {process_label(archive, t.process), t.name,
                                    or_dash(thread_property(t, property::kTid)), std::to_string(order[i].first),
                                    percent(order[i].first, counts.total), or_dash(thread_property(t, property::kDropped)),
                                    or_dash(thread_property(t, property::kUnwindFailures)),
                                    or_dash(thread_property(t, property::kTruncated))};
    if (python) row.push_back(or_dash(thread_property(t, property::kPythonIncomplete)));
    threads.add_row(std::move(row));
  }
  threads.print(out);
  if (order.size() > top) out << "  … and " << order.size() - top << " more threads\n";
  if (const uint64_t quiet = sum_process_property(archive, property::kQuietThreads).value_or(0))
    out << "  " << quiet << (quiet == 1 ? " thread" : " threads") << " recorded nothing (no sample, no traced event)\n";
}

void print_report(std::ostream& out, const otf2::Archive& archive, const SampleCounts& counts,
                  const Options& options) {
  print_summary(out, archive, counts);
  print_capture_windows(out, archive, capture_windows(archive));
  if (counts.total == 0) {
    out << '\n';
    if (counts.region_events > 0 && (!counts.mpi || counts.mpi->empty()) && (!counts.openmp || counts.openmp->empty()) &&
        (!counts.ranges || counts.ranges->empty()) && (!counts.gpu || counts.gpu->empty()) &&
        (!counts.waits || counts.waits->empty())) {
      out << "No samples in this archive: it holds " << counts.region_events
          << " Enter/Leave events instead (an archive written in enter/leave\n"
             "mode for trace viewers), from which this report derives no profile yet.\n";
    } else {
      out << "No samples in this archive.\n";
    }
  } else {
    const FrameView view = frame_view(options);
    print_flat_profile(out, archive, counts, options.top_functions, view, options.wide ? 0 : kMaxFunctionWidth);
    if (options.top_paths > 0) print_hottest_paths(out, archive, counts, options.top_paths, options.full_paths, view);
    const MlView ml = ml_view(archive, counts, options.step);
    if (show_ml_view(ml, options.ml)) print_ml_view(out, ml, options.top_functions);
  }
  if (counts.mpi) print_mpi_summary(out, *counts.mpi, options.top_functions, otf2::describe(options.selection));
  if (counts.openmp) print_openmp_summary(out, *counts.openmp, options.top_functions);
  if (counts.ranges) print_range_summary(out, *counts.ranges, options.top_functions);
  if (counts.gpu) print_gpu_summary(out, *counts.gpu, options.top_functions);
  if (counts.waits && !counts.waits->empty()) {
    print_wall_time(out, *counts.waits, options.top_functions);
    print_waits(out, *counts.waits, options.top_functions, options.full_paths);
  }
  print_processes_and_threads(out, archive, counts, options.top_functions);
}

void print_folded(std::ostream& out, const otf2::Archive& archive, const SampleCounts& counts, FrameView view) {
  for (const std::string& line : folded_stacks(archive, counts, view)) out << line << '\n';
}

// The flame graph, written under a temporary name and renamed when whole.
void write_flamegraph_file(const Options& options, const otf2::Archive& archive, const SampleCounts& counts) {
  const std::string temporary = options.flamegraph + ".partial." + std::to_string(getpid());
  {
    std::ofstream file(temporary, std::ios::binary);
    if (!file) throw std::runtime_error("cannot write " + options.flamegraph + ": " + std::strerror(errno));
    FlameGraphOptions fg;
    fg.icicle = options.icicle;
    fg.title = options.icicle ? "Icicle graph" : "Flame graph";
    const auto program = archive.properties.find(property::kProgram);
    fg.subtitle = (program == archive.properties.end() ? std::string() : program->second) + " — " +
                  std::to_string(counts.total) + " samples";
    write_flamegraph(file, archive, counts, frame_view(options), fg);
    file.flush();
    if (!file) {
      file.close();
      std::remove(temporary.c_str());
      throw std::runtime_error("cannot write " + options.flamegraph + " (disk full?)");
    }
  }
  if (std::rename(temporary.c_str(), options.flamegraph.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot write " + options.flamegraph + ": " + why);
  }
}

int run_report(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto fail = [&](std::string message) {
    std::replace(message.begin(), message.end(), '\n', ' ');
    err << "hybridprof-report: error: " << message << '\n';
    return 1;
  };
  try {
    const Options options = parse_options(args);
    if (options.help) {
      out << kUsage;
      return 0;
    }
    if (options.version) {
      out << version_line("hybridprof-report") << '\n';
      return 0;
    }
    if (!options.diff_base.empty()) return run_diff(options, out, err) == 0 ? 0 : fail("cannot write the report");
    otf2::ArchiveReader reader(options.archive);
    const SampleCounts counts = count_samples(reader, options.selection, options.step);
    if (!options.flamegraph.empty()) {
      write_flamegraph_file(options, reader.archive(), counts);
      if (counts.total == 0) err << "hybridprof-report: no samples in " << reader.archive().anchor << '\n';
      return 0;
    }
    if (options.folded) {
      print_folded(out, reader.archive(), counts, frame_view(options));
      if (counts.total == 0) err << "hybridprof-report: no samples in " << reader.archive().anchor << '\n';
    } else {
      print_report(out, reader.archive(), counts, options);
    }
    out.flush();
    return out ? 0 : fail("cannot write the report");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace hybridprof::report
