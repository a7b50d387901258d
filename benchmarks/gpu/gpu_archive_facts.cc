// gpu_archive_facts: what benchmarks/gpu/check.sh asks of a profiled
// PyTorch training job's archive, read back through otf2::ArchiveReader
// and printed as "name value" lines for check.py to judge:
//   - the GPU work: devices, streams, kernels, copies each way, memsets,
//     synchronizations;
//   - each kernel's launching call (by correlation id, within its
//     process): found or not, whether the kernel started after the call
//     began, whether the call was made while a user range whose name
//     starts with PREFIX (a training step) was open in its process, those
//     kernels' count and summed time, and of those launched by the thread
//     running the steps, how many calls have the Python function FUNCTION
//     in their calling context (the others: per launching thread);
//   - the user (NVTX) ranges: how many of the steps' ranges, whether every
//     range left is the innermost one open (nested as pushed), and how many
//     ranges opened inside a step range;
//   - samples, those with a Python frame, the PYTHON process property;
//   - the archive's notices (one "notice <text>" line each).
//
//   gpu_archive_facts ARCHIVE [FUNCTION=train_step] [PREFIX="step "]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/cuda_otf2_events.h"
#include "otf2/archive_reader.h"
#include "otf2/property_names.h"

namespace {

using hybridprof::otf2::Archive;
using hybridprof::otf2::ArchiveReader;
using hybridprof::otf2::kUndefined;
using hybridprof::otf2::Paradigm;

struct Call {  // a CUDA API call on a host thread
  uint64_t location, enter_ns;
  uint32_t context;
};
struct Work {  // a kernel, copy, memset or synchronization on a device location
  uint64_t location, begin_ns, end_ns = 0;
  uint32_t region;
  uint64_t correlation = 0;
};
struct Range {  // a user range on a host thread
  uint64_t begin_ns, end_ns;
};

// Per location, in time order (ArchiveReader streams each location's
// events in order), what is open now.
struct OpenRegion {
  uint32_t region;
  size_t index;  // into calls, works or the location's step ranges; SIZE_MAX: none
  bool step = false;
};

std::string work_kind(const std::string& name) {
  if (name.rfind("[CUDA memcpy HtoD]", 0) == 0) return "memcpy_htod";
  if (name.rfind("[CUDA memcpy DtoH]", 0) == 0) return "memcpy_dtoh";
  if (name.rfind("[CUDA memcpy", 0) == 0) return "memcpy_other";
  if (name.rfind("[CUDA memset", 0) == 0) return "memsets";
  if (name.rfind("[CUDA sync", 0) == 0) return "syncs";
  return "kernels";
}

bool in_any(const std::vector<Range>& ranges, uint64_t t) {
  return std::any_of(ranges.begin(), ranges.end(), [t](const Range& r) { return r.begin_ns <= t && t <= r.end_ns; });
}

int run(const std::string& path, const std::string& function, const std::string& prefix) {
  ArchiveReader reader(path);
  const Archive& a = reader.archive();
  uint32_t correlation_parameter = kUndefined;
  for (const auto& [ref, name] : a.parameters)
    if (name == hybridprof::cuda::kCorrelationParameter) correlation_parameter = ref;
  const auto paradigm = [&](uint32_t region) {
    const auto r = a.regions.find(region);
    return r == a.regions.end() ? Paradigm::kUnknown : r->second.paradigm;
  };
  const auto is_device = [&](uint64_t location) {
    const auto t = a.threads.find(location);
    return t != a.threads.end() && t->second.device != kUndefined;
  };
  const auto process_of = [&](uint64_t location) {
    const auto t = a.threads.find(location);
    return t == a.threads.end() ? kUndefined : t->second.process;
  };
  std::map<std::pair<uint32_t, bool>, bool> python_cache;  // (context, named?) -> answer
  const auto has_python_frame = [&](uint32_t context, const std::string& name) {
    const auto cached = python_cache.find({context, name.empty()});
    if (cached != python_cache.end()) return cached->second;
    bool found = false;
    for (uint32_t c : a.context_path(context)) {
      const auto r = a.regions.find(a.contexts.at(c).region);
      if (r != a.regions.end() && r->second.paradigm == Paradigm::kPython && (name.empty() || r->second.name == name)) {
        found = true;
        break;
      }
    }
    return python_cache[{context, name.empty()}] = found;
  };

  std::vector<Call> calls;
  std::map<uint64_t, size_t> call_by_key;  // process << 32 | correlation id -> first call
  std::vector<Work> works;
  std::map<uint64_t, std::vector<Range>> steps;  // per host location
  std::map<uint64_t, std::vector<OpenRegion>> open;
  uint64_t misnested = 0, ranges_in_steps = 0, step_ranges = 0, nested_step_ranges = 0;
  uint64_t samples = 0, python_samples = 0;

  reader.read_events(
      [&](const hybridprof::otf2::SampleEvent& s) {
        ++samples;
        if (s.context != kUndefined && a.contexts.count(s.context) && has_python_frame(s.context, "")) ++python_samples;
      },
      [&](const hybridprof::otf2::RegionEvent& e) {
        auto& stack = open[e.location];
        const Paradigm p = paradigm(e.region);
        if (is_device(e.location)) {
          if (p != Paradigm::kCuda) return;
          if (e.enter) {
            works.push_back({e.location, e.timestamp, 0, e.region});
            stack.push_back({e.region, works.size() - 1});
          } else if (!stack.empty() && stack.back().region == e.region) {
            works[stack.back().index].end_ns = e.timestamp;
            stack.pop_back();
          }
          return;
        }
        if (p == Paradigm::kCuda) {
          if (e.enter) {
            calls.push_back({e.location, e.timestamp, e.context});
            stack.push_back({e.region, calls.size() - 1});
          } else if (!stack.empty() && stack.back().region == e.region) {
            stack.pop_back();
          }
          return;
        }
        if (p != Paradigm::kUser) return;
        const std::string& name = a.regions.at(e.region).name;
        const auto in_step = [&] {
          return std::any_of(stack.begin(), stack.end(), [](const OpenRegion& o) { return o.step; });
        };
        if (e.enter) {
          const bool step = name.rfind(prefix, 0) == 0;
          if (step) {
            ++step_ranges;
            if (in_step()) ++nested_step_ranges;
            steps[e.location].push_back({e.timestamp, UINT64_MAX});
          } else if (in_step()) {
            ++ranges_in_steps;
          }
          stack.push_back({e.region, step ? steps[e.location].size() - 1 : SIZE_MAX, step});
          return;
        }
        // User ranges and CUDA calls nest on a host thread: the innermost
        // user range open must be the one left.
        auto top = std::find_if(stack.rbegin(), stack.rend(),
                                [&](const OpenRegion& o) { return paradigm(o.region) == Paradigm::kUser; });
        if (top == stack.rend() || top->region != e.region) {
          ++misnested;
          return;
        }
        if (top->step) steps[e.location][top->index].end_ns = e.timestamp;
        stack.erase(std::next(top).base());
      },
      {}, {},
      [&](const hybridprof::otf2::ParameterEvent& e) {
        if (e.parameter != correlation_parameter || e.value == 0) return;
        const auto& stack = open[e.location];
        if (stack.empty()) return;
        const uint64_t key = uint64_t{process_of(e.location)} << 32 | uint32_t(e.value);
        if (is_device(e.location)) {
          works[stack.back().index].correlation = key;
        } else if (paradigm(stack.back().region) == Paradigm::kCuda) {
          call_by_key.try_emplace(key, stack.back().index);  // a driver call inside carries the same id
        }
      });

  std::map<std::string, uint64_t> counts = {{"kernels", 0},     {"memcpy_htod", 0}, {"memcpy_dtoh", 0},
                                            {"memcpy_other", 0}, {"memsets", 0},     {"syncs", 0}};
  uint64_t with_call = 0, started_after_call = 0, in_steps = 0, step_kernel_ns = 0;
  uint64_t from_step_thread = 0, call_in_function = 0;
  std::map<std::string, uint64_t> other_threads;  // thread name -> kernels it launched during steps
  for (const Work& w : works) {
    const std::string kind = work_kind(a.regions.at(w.region).name);
    ++counts[kind];
    if (kind != "kernels") continue;
    const auto call = call_by_key.find(w.correlation);
    if (w.correlation == 0 || call == call_by_key.end()) continue;
    const Call& c = calls[call->second];
    ++with_call;
    if (w.begin_ns >= c.enter_ns) ++started_after_call;
    // Launched while a step ran: from the thread running the steps, or
    // from another of its process's (PyTorch's autograd engine runs the
    // backward pass's GPU work on a C++ thread of its own, with no Python
    // stack).
    const uint32_t process = process_of(c.location);
    const bool own_thread = in_any(steps[c.location], c.enter_ns);
    const bool other_thread = !own_thread && std::any_of(steps.begin(), steps.end(), [&](const auto& s) {
      return process_of(s.first) == process && in_any(s.second, c.enter_ns);
    });
    if (!own_thread && !other_thread) continue;
    ++in_steps;
    step_kernel_ns += w.end_ns > w.begin_ns ? w.end_ns - w.begin_ns : 0;
    if (own_thread) {
      ++from_step_thread;
      if (c.context != kUndefined && a.contexts.count(c.context) && has_python_frame(c.context, function))
        ++call_in_function;
    } else {
      ++other_threads[a.threads.count(c.location) ? a.threads.at(c.location).name : "?"];
    }
  }

  uint64_t streams = 0;
  for (const auto& [location, t] : a.threads)
    if (t.device != kUndefined && t.name.rfind("CUDA synchronization", 0) != 0) ++streams;
  std::printf("devices %zu\n", a.devices.size());
  for (const auto& [ref, d] : a.devices) std::printf("device %s\n", d.name.c_str());
  std::printf("streams %llu\n", static_cast<unsigned long long>(streams));
  for (const auto& [name, n] : counts) std::printf("%s %llu\n", name.c_str(), static_cast<unsigned long long>(n));
  const auto print = [](const char* name, uint64_t v) {
    std::printf("%s %llu\n", name, static_cast<unsigned long long>(v));
  };
  print("cuda_calls", calls.size());
  print("kernels_with_call", with_call);
  print("kernels_started_after_call", started_after_call);
  print("kernels_in_steps", in_steps);
  print("kernels_in_steps_from_step_thread", from_step_thread);
  print("kernels_call_in_function", call_in_function);
  for (const auto& [name, n] : other_threads)
    std::printf("kernels_in_steps_from_thread %llu %s\n", static_cast<unsigned long long>(n), name.c_str());
  print("kernel_ns_in_steps", step_kernel_ns);
  print("step_ranges", step_ranges);
  print("nested_step_ranges", nested_step_ranges);
  print("ranges_in_steps", ranges_in_steps);
  print("misnested_ranges", misnested);
  print("samples", samples);
  print("python_samples", python_samples);
  std::string python = "-";
  for (const auto& [ref, p] : a.processes)
    if (const auto v = p.properties.find(hybridprof::otf2::property::kPython); v != p.properties.end()) python = v->second;
  std::printf("python %s\n", python.c_str());
  if (const auto n = a.properties.find(hybridprof::otf2::property::kNotices); n != a.properties.end()) {
    std::istringstream in(n->second);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) std::printf("notice %s\n", line.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: gpu_archive_facts ARCHIVE [FUNCTION=train_step] [PREFIX=\"step \"]\n");
    return 2;
  }
  try {
    return run(argv[1], argc > 2 ? argv[2] : "train_step", argc > 3 ? argv[3] : "step ");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_archive_facts: %s\n", e.what());
    return 1;
  }
}
