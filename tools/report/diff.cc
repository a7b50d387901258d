#include "diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "otf2/paradigm.h"
#include "otf2/property_names.h"
#include "otf2/selection.h"
#include "table.h"

namespace hybridprof::report {
namespace {

using Align = Table::Align;

std::string program_of(const otf2::Archive& a) {
  const auto p = a.properties.find(otf2::property::kProgram);
  return p == a.properties.end() ? "" : p->second.substr(0, p->second.find(' '));
}

// Largest change first (either way), then by name.
void sort_by_change(std::vector<DiffRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::fabs(x.change()) != std::fabs(y.change()) ? std::fabs(x.change()) > std::fabs(y.change()) : x.name < y.name;
  });
}

// Rows for the keys of either side, a side's count times its scale making
// its share or time; sorted by the size of the change.
std::vector<DiffRow> rows_of(const std::map<std::string, uint64_t>& base, const std::map<std::string, uint64_t>& fresh,
                             double base_scale, double new_scale) {
  std::set<std::string> keys;
  for (const auto& [k, n] : base) keys.insert(k);
  for (const auto& [k, n] : fresh) keys.insert(k);
  std::vector<DiffRow> rows;
  for (const std::string& k : keys) {
    DiffRow r;
    r.name = k;
    if (const auto b = base.find(k); b != base.end()) r.base_count = b->second;
    if (const auto n = fresh.find(k); n != fresh.end()) r.new_count = n->second;
    r.base = double(r.base_count) * base_scale;
    r.fresh = double(r.new_count) * new_scale;
    rows.push_back(r);
  }
  sort_by_change(rows);
  return rows;
}

// A function's name and module, the same in two runs (the profile names
// the vDSO [vdso] in every process).
std::string function_key(const FunctionRow& f) { return f.name + (f.module.empty() ? "" : " (" + f.module + ")"); }

std::string value_text(double v, bool absolute) {
  char text[32];
  if (absolute) std::snprintf(text, sizeof text, "%.3f s", v);
  else std::snprintf(text, sizeof text, "%.1f%%", v);
  return text;
}

std::string change_text(const DiffRow& r, bool absolute) {
  char text[32];
  if (absolute) std::snprintf(text, sizeof text, "%+.3f s", r.change());
  else std::snprintf(text, sizeof text, "%+.1f pts", r.change());
  return text;
}

std::string relative_text(const DiffRow& r) {
  if (r.base == 0) return r.fresh == 0 ? "-" : "new";
  if (r.fresh == 0) return "gone";
  char text[32];
  std::snprintf(text, sizeof text, "%+.0f%%", 100 * r.change() / r.base);
  return text;
}

void print_rows(std::ostream& out, const std::string& title, const std::vector<DiffRow>& rows, bool absolute,
                const char* count_title, size_t top) {
  if (rows.empty()) return;
  out << '\n' << title << '\n';
  Table table({{"Change", Align::kRight},
               {"Relative", Align::kRight},
               {"Base", Align::kRight},
               {"New", Align::kRight},
               {std::string("Base ") + count_title, Align::kRight},
               {std::string("New ") + count_title, Align::kRight},
               {"Name", Align::kLeft}});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const DiffRow& r = rows[i];
    table.add_row({change_text(r, absolute), relative_text(r), value_text(r.base, absolute), value_text(r.fresh, absolute),
                   std::to_string(r.base_count), std::to_string(r.new_count), r.name});
  }
  table.print(out);
}

}  // namespace

RegionTimes region_times(otf2::ArchiveReader& reader, const otf2::Selection& asked) {
  const otf2::Archive& a = reader.archive();
  const otf2::Selection selection = otf2::with_window_name(a, asked);
  const std::set<uint64_t> locations = selection.all() ? std::set<uint64_t>{} : otf2::selected_locations(a, selection);
  RegionTimes times;
  std::map<uint64_t, std::vector<std::pair<uint32_t, uint64_t>>> open;  // per location: region, enter
  reader.read_events({}, [&](const otf2::RegionEvent& e) {
    if (!selection.all()) {
      const double t = otf2::seconds_of(a, e.timestamp);
      if (!locations.count(e.location) || t < selection.from_s || t > selection.to_s) return;
    }
    const auto region = a.regions.find(e.region);
    if (region == a.regions.end() || region->second.paradigm == otf2::Paradigm::kSampling ||
        region->second.paradigm == otf2::Paradigm::kPython)
      return;
    auto& stack = open[e.location];
    if (e.enter) {
      stack.emplace_back(e.region, e.timestamp);
      return;
    }
    if (stack.empty() || stack.back().first != e.region) return;  // unmatched
    const uint64_t entered = stack.back().second;
    stack.pop_back();
    // Inside itself (a recursion, nested ranges of one name): counted once, outermost.
    if (std::any_of(stack.begin(), stack.end(), [&](const auto& o) { return o.first == e.region; })) return;
    RegionTimes::Entry& entry =
        times.by_region[std::string(otf2::paradigm_name(region->second.paradigm)) + ": " + region->second.name];
    entry.seconds += double(e.timestamp - entered) / double(a.clock.resolution);
    ++entry.calls;
  });
  return times;
}

RunDiff diff_runs(const otf2::Archive& base, const SampleCounts& base_counts, const RegionTimes& base_regions,
                  const otf2::Archive& fresh, const SampleCounts& new_counts, const RegionTimes& new_regions,
                  bool absolute) {
  RunDiff d;
  d.absolute = absolute;
  const double base_sample = otf2::sample_period_seconds(base), new_sample = otf2::sample_period_seconds(fresh);
  // A sample's worth: a share of its run's samples, or its time (a sample when the period is events).
  const auto sample_scale = [&](uint64_t total, double seconds) {
    return absolute ? (seconds > 0 ? seconds : 1.0) : (total ? 100.0 / double(total) : 0.0);
  };
  const double base_scale = sample_scale(base_counts.total, base_sample), new_scale = sample_scale(new_counts.total, new_sample);
  std::map<std::string, uint64_t> base_self, new_self, base_incl, new_incl, base_paths, new_paths;
  for (const FunctionRow& f : flat_profile(base, base_counts)) {
    base_self[function_key(f)] += f.self;
    base_incl[function_key(f)] += f.inclusive;
  }
  for (const FunctionRow& f : flat_profile(fresh, new_counts)) {
    new_self[function_key(f)] += f.self;
    new_incl[function_key(f)] += f.inclusive;
  }
  const auto path_key = [](const PathRow& p) {
    std::string key;
    for (const std::string& frame : p.frames) key += (key.empty() ? "" : " → ") + frame;
    return key;
  };
  for (const PathRow& p : hottest_paths(base, base_counts)) base_paths[path_key(p)] += p.samples;
  for (const PathRow& p : hottest_paths(fresh, new_counts)) new_paths[path_key(p)] += p.samples;
  d.self = rows_of(base_self, new_self, base_scale, new_scale);
  d.inclusive = rows_of(base_incl, new_incl, base_scale, new_scale);
  d.paths = rows_of(base_paths, new_paths, base_scale, new_scale);
  // Regions: their seconds, or their share of the run's sampled time.
  std::set<std::string> keys;
  for (const auto& [k, e] : base_regions.by_region) keys.insert(k);
  for (const auto& [k, e] : new_regions.by_region) keys.insert(k);
  const double base_sampled = double(base_counts.total) * (base_sample > 0 ? base_sample : 0);
  const double new_sampled = double(new_counts.total) * (new_sample > 0 ? new_sample : 0);
  for (const std::string& k : keys) {
    DiffRow r;
    r.name = k;
    double base_seconds = 0, new_seconds = 0;
    if (const auto b = base_regions.by_region.find(k); b != base_regions.by_region.end())
      base_seconds = b->second.seconds, r.base_count = b->second.calls;
    if (const auto n = new_regions.by_region.find(k); n != new_regions.by_region.end())
      new_seconds = n->second.seconds, r.new_count = n->second.calls;
    r.base = absolute ? base_seconds : base_sampled > 0 ? 100 * base_seconds / base_sampled : 0;
    r.fresh = absolute ? new_seconds : new_sampled > 0 ? 100 * new_seconds / new_sampled : 0;
    d.regions.push_back(r);
  }
  sort_by_change(d.regions);
  return d;
}

void print_diff(std::ostream& out, const RunDiff& d, const std::string& base_name, const std::string& new_name,
                size_t top) {
  out << "hybridprof diff: " << base_name << " (base) → " << new_name << " (new)\n"
      << (d.absolute ? "Changes in time (samples x period; a region's time from its enter to its leave)\n"
                     : "Changes in shares of each run: percentage points of its samples (a region's: of its "
                       "sampled time)\n");
  print_rows(out, "Functions by self time", d.self, d.absolute, "n", top);
  print_rows(out, "Functions by inclusive time", d.inclusive, d.absolute, "n", top);
  print_rows(out, "Call paths", d.paths, d.absolute, "n", top);
  print_rows(out, "Traced regions (MPI, OpenMP, CUDA, NVTX)", d.regions, d.absolute, "calls", top);
}

int run_diff(const Options& options, std::ostream& out, std::ostream& err) {
  otf2::ArchiveReader base(options.diff_base), fresh(options.archive);
  const SampleCounts base_counts = count_samples(base, options.selection);
  const SampleCounts new_counts = count_samples(fresh, options.selection);
  const RegionTimes base_regions = region_times(base, options.selection);
  const RegionTimes new_regions = region_times(fresh, options.selection);
  const std::string base_program = program_of(base.archive()), new_program = program_of(fresh.archive());
  if (base_program != new_program)
    err << "hybridprof-report: warning: comparing runs of different programs (" << base_program << ", " << new_program
        << ")\n";
  const RunDiff d =
      diff_runs(base.archive(), base_counts, base_regions, fresh.archive(), new_counts, new_regions, options.absolute);
  print_diff(out, d, base.archive().anchor, fresh.archive().anchor, options.top_functions);
  out.flush();
  return out ? 0 : 1;
}

}  // namespace hybridprof::report
