#include "profile.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "ml_view.h"
#include "otf2/property_names.h"

namespace hybridprof::report {
namespace {

std::string region_name(const otf2::Archive& archive, uint32_t region) {
  auto it = archive.regions.find(region);
  if (it == archive.regions.end()) return "<unknown region " + std::to_string(region) + ">";
  return it->second.name.empty() ? "<region " + std::to_string(region) + ">" : it->second.name;
}

std::string region_source(const otf2::Archive& archive, uint32_t region) {
  auto it = archive.regions.find(region);
  if (it == archive.regions.end() || it->second.file.empty()) return "-";
  return it->second.line ? it->second.file + ":" + std::to_string(it->second.line) : it->second.file;
}

std::string basename_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// A module as the report names it: its file's name; the vDSO, whose image
// each process saved as "<host>.<pid>.vdso.so", as [vdso] (the same name in
// every process and run, so --diff matches its functions).
std::string module_name(const std::string& path) {
  const std::string name = basename_of(path);
  constexpr std::string_view kVdso = ".vdso.so";
  if (name.size() > kVdso.size() && name.compare(name.size() - kVdso.size(), kVdso.size(), kVdso) == 0) return "[vdso]";
  return name;
}

bool is_python(const otf2::Archive& archive, uint32_t region) {
  auto r = archive.regions.find(region);
  return r != archive.regions.end() && r->second.paradigm == otf2::Paradigm::kPython;
}

// The region a flat-profile row stands for. With view.python_functions,
// Python regions of one function (qualified name and file) are one row
// even if an archive defines them apart (ours defines one region per
// function; other writers may define one per code object or line).
class FunctionOf {
 public:
  FunctionOf(const otf2::Archive& archive, FrameView view) {
    if (!view.python_functions) return;
    std::map<std::pair<std::string, std::string>, uint32_t> first;
    for (const auto& [ref, region] : archive.regions) {
      if (region.paradigm != otf2::Paradigm::kPython) continue;
      const uint32_t canonical = first.try_emplace({region.name, region.file}, ref).first->second;
      if (canonical != ref) canonical_[ref] = canonical;
    }
  }
  uint32_t operator()(uint32_t region) const {
    auto it = canonical_.find(region);
    return it == canonical_.end() ? region : it->second;
  }

 private:
  std::map<uint32_t, uint32_t> canonical_;
};

// Rows' regions along the path, root first.
std::vector<uint32_t> region_path(const otf2::Archive& archive, uint32_t context, FrameView view,
                                  const FunctionOf& function_of) {
  std::vector<uint32_t> regions;
  for (uint32_t c : view_path(archive, context, view)) regions.push_back(function_of(archive.contexts.at(c).region));
  return regions;
}

std::string folded_frame(std::string name) {
  for (char& ch : name) {
    if (ch == ';') ch = ':';
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  return name;
}

}  // namespace

std::vector<uint32_t> view_path(const otf2::Archive& archive, uint32_t context, FrameView view) {
  std::vector<uint32_t> path = archive.context_path(context);
  if (view.python_only)
    std::erase_if(path, [&](uint32_t c) { return !is_python(archive, archive.contexts.at(c).region); });
  return path;
}

SampleCounts count_samples(otf2::ArchiveReader& reader, const otf2::Selection& asked, const std::string& step) {
  SampleCounts counts;
  const otf2::Selection selection = otf2::with_window_name(reader.archive(), asked);
  // Only what the selection keeps: its locations, in its window.
  const bool everything = selection.all();
  const std::set<uint64_t> locations =
      everything ? std::set<uint64_t>{} : otf2::selected_locations(reader.archive(), selection);
  const auto kept = [&](uint64_t location, uint64_t timestamp) {
    if (everything) return true;
    const double t = otf2::seconds_of(reader.archive(), timestamp);
    return locations.count(location) && t >= selection.from_s && t <= selection.to_s;
  };
  counts.mpi = std::make_shared<MpiStats>(reader.archive());
  counts.openmp = std::make_shared<OpenMpStats>(reader.archive());
  counts.ranges = std::make_shared<RangeStats>(reader.archive());
  counts.gpu = std::make_shared<GpuStats>(reader.archive());
  counts.waits = std::make_shared<WaitStats>(reader.archive());
  if (!step.empty()) counts.step_timer = std::make_shared<StepTimer>(reader.archive(), step);
  const otf2::Archive& archive = reader.archive();
  std::map<uint32_t, bool> profiler_leaf;  // context -> whether it is [hybridprof]
  reader.read_events(
      [&](const otf2::SampleEvent& s) {
        if (!kept(s.location, s.timestamp)) return;
        ++counts.total;
        ++counts.by_context[s.context];
        ++counts.by_thread[s.location];
        auto [leaf, fresh] = profiler_leaf.try_emplace(s.context, false);
        if (fresh) {
          auto context = archive.contexts.find(s.context);
          leaf->second = context != archive.contexts.end() && region_name(archive, context->second.region) == kProfilerFrame;
        }
        auto thread = archive.threads.find(s.location);
        const uint32_t process = thread == archive.threads.end() ? otf2::kUndefined : thread->second.process;
        ++counts.by_process[process];
        if (leaf->second) ++counts.profiler_by_process[process];
        counts.mpi->add(s);
        counts.waits->add(s);
        if (counts.step_timer) counts.step_timer->add(s);
      },
      [&](const otf2::RegionEvent& e) {
        if (!kept(e.location, e.timestamp)) return;
        ++counts.region_events;
        counts.mpi->add(e);
        counts.openmp->add(e);
        counts.ranges->add(e);
        counts.gpu->add(e);
        counts.waits->add(e);
        if (counts.step_timer) counts.step_timer->add(e);
      },
      [&](const otf2::MpiEvent& e) {
        if (kept(e.location, e.timestamp)) counts.mpi->add(e);
      },
      [&](const otf2::ForkJoinEvent& e) {
        if (kept(e.location, e.timestamp)) counts.openmp->add(e);
      },
      [&](const otf2::ParameterEvent& e) {
        if (kept(e.location, e.timestamp)) counts.gpu->add(e);
      });
  return counts;
}

std::string process_label(const otf2::Archive& archive, uint32_t process) {
  auto it = archive.processes.find(process);
  if (it == archive.processes.end()) return "<process " + std::to_string(process) + ">";
  auto pid = it->second.properties.find(otf2::property::kPid);
  return it->second.name + (pid == it->second.properties.end() || pid->second.empty() ? "" : " [" + pid->second + "]");
}

std::vector<std::string> function_chain(const otf2::Archive& archive, uint32_t context, FrameView view) {
  if (!archive.contexts.count(context)) return {"<unknown context " + std::to_string(context) + ">"};
  std::vector<std::string> names;
  for (uint32_t c : view_path(archive, context, view)) {
    const otf2::ContextInfo& info = archive.contexts.at(c);
    std::string name = region_name(archive, info.region);
    // A Python frame reads "qualname (file:line)", the line it was at, or
    // "qualname (file)" when frames stand for whole functions.
    auto region = archive.regions.find(info.region);
    if (region != archive.regions.end() && region->second.paradigm == otf2::Paradigm::kPython) {
      if (view.python_functions) {
        const std::string& file = region->second.file;
        if (!file.empty()) name += " (" + basename_of(file) + ")";
      } else if (auto where = archive.source_locations.find(info.source_location);
                 where != archive.source_locations.end()) {
        const std::string& file = where->second.file;
        name += " (" + basename_of(file) + ":" + std::to_string(where->second.line) + ")";
      }
    }
    names.push_back(std::move(name));
  }
  return names;
}

// Where a function spends its time: the source line that most of its own
// (self) samples point at, or, without self samples, its busiest call site.
class HotLines {
 public:
  void add(uint32_t region, uint32_t source_location, uint64_t samples, bool self) {
    if (source_location == otf2::kUndefined) return;
    (self ? self_ : calls_)[region][source_location] += samples;
  }
  std::string source(const otf2::Archive& archive, uint32_t region) const {
    for (const auto* table : {&self_, &calls_}) {
      auto it = table->find(region);
      if (it == table->end()) continue;
      const auto best = std::max_element(it->second.begin(), it->second.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
      auto scl = archive.source_locations.find(best->first);
      if (scl != archive.source_locations.end()) return scl->second.file + ":" + std::to_string(scl->second.line);
    }
    return region_source(archive, region);
  }

 private:
  std::map<uint32_t, std::map<uint32_t, uint64_t>> self_, calls_;
};


std::vector<FunctionRow> flat_profile(const otf2::Archive& archive, const SampleCounts& counts, FrameView view) {
  std::map<uint32_t, FunctionRow> rows;
  HotLines lines;
  const FunctionOf function_of(archive, view);
  for (const auto& [context, samples] : counts.by_context) {
    const std::vector<uint32_t> path = region_path(archive, context, view, function_of);
    if (path.empty()) continue;  // unknown context (or no frame in view): no function to charge
    rows[path.back()].self += samples;
    for (uint32_t region : std::set<uint32_t>(path.begin(), path.end())) rows[region].inclusive += samples;
    const std::vector<uint32_t> contexts = view_path(archive, context, view);
    for (size_t i = 0; i < contexts.size(); ++i) {
      const auto& c = archive.contexts.at(contexts[i]);
      lines.add(function_of(c.region), c.source_location, samples, i + 1 == contexts.size());
    }
  }
  std::vector<FunctionRow> sorted;
  for (auto& [region, row] : rows) {
    row.region = region;
    row.name = region_name(archive, region);
    row.source = lines.source(archive, region);
    if (auto it = archive.regions.find(region); it != archive.regions.end()) row.module = module_name(it->second.module);
    sorted.push_back(std::move(row));
  }
  std::sort(sorted.begin(), sorted.end(), [](const FunctionRow& a, const FunctionRow& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.inclusive != b.inclusive) return a.inclusive > b.inclusive;
    return a.name < b.name;
  });
  return sorted;
}

std::vector<PathRow> hottest_paths(const otf2::Archive& archive, const SampleCounts& counts, FrameView view) {
  std::map<std::vector<std::string>, uint64_t> merged;
  for (const auto& [context, samples] : counts.by_context) {
    std::vector<std::string> chain = function_chain(archive, context, view);
    if (!chain.empty()) merged[std::move(chain)] += samples;
  }
  std::vector<PathRow> rows;
  for (auto& [frames, samples] : merged) rows.push_back({frames, samples});
  std::stable_sort(rows.begin(), rows.end(), [](const PathRow& a, const PathRow& b) { return a.samples > b.samples; });
  return rows;
}

std::vector<std::string> folded_stacks(const otf2::Archive& archive, const SampleCounts& counts, FrameView view) {
  std::map<std::string, uint64_t> merged;
  for (const auto& [context, samples] : counts.by_context) {
    std::string line;
    for (const std::string& frame : function_chain(archive, context, view)) {
      if (!line.empty()) line += ';';
      line += folded_frame(frame);
    }
    if (!line.empty()) merged[line] += samples;
  }
  std::vector<std::string> lines;
  for (const auto& [stack, samples] : merged) lines.push_back(stack + " " + std::to_string(samples));
  return lines;  // std::map order: sorted
}

std::vector<std::string> abbreviate(const std::vector<std::string>& frames, bool full) {
  constexpr size_t kMaxFrames = 12, kHead = 3, kTail = 8;
  if (full || frames.size() <= kMaxFrames) return frames;
  std::vector<std::string> shown(frames.begin(), frames.begin() + kHead);
  shown.push_back("…");
  shown.insert(shown.end(), frames.end() - kTail, frames.end());
  return shown;
}

}  // namespace hybridprof::report
