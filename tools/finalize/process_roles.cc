#include "finalize/process_roles.h"

#include <algorithm>
#include <map>
#include <set>

namespace hybridprof::finalize {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
std::string basename_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// Workers whose function is known by another name.
struct KnownWorker {
  const char* file_tail;
  const char* function;
  const char* role;
};
constexpr KnownWorker kKnownWorkers[] = {
    {"torch/utils/data/_utils/worker.py", "_worker_loop", "DataLoader worker"},
};

bool is_python(const ContextNode& n) {
  return !n.frames.empty() && n.frames.front().paradigm == otf2::Paradigm::kPython;
}

// multiprocessing's BaseProcess.run (co_name "run" before Python 3.11).
bool is_process_run(const ContextFrame& f) {
  return (f.region == "run" || ends_with(f.region, ".run")) && ends_with(f.file, "multiprocessing/process.py");
}

// The function the process's multiprocessing run called, as a role.
std::string worker_role(const std::vector<ContextNode>& contexts) {
  for (const ContextNode& n : contexts) {
    if (!n.present || !is_python(n)) continue;
    // Its nearest Python caller.
    uint32_t up = n.parent;
    for (int hops = 0; up < contexts.size() && hops < 64 && !is_python(contexts[up]); ++hops) up = contexts[up].parent;
    if (up >= contexts.size() || !is_python(contexts[up]) || !is_process_run(contexts[up].frames.back())) continue;
    const ContextFrame& target = n.frames.front();
    for (const KnownWorker& k : kKnownWorkers)
      if (target.region == k.function && ends_with(target.file, k.file_tail)) return k.role;
    return target.region + " worker";
  }
  return "";
}

// What a Python command line runs.
std::string python_role(const std::vector<std::string>& args) {
  if (args.empty() || basename_of(args[0]).rfind("python", 0) != 0) return "";
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-m" && i + 1 < args.size()) return "-m " + args[i + 1];
    if (a == "-c" && i + 1 < args.size()) {
      const std::string& code = args[i + 1];
      if (code.find("multiprocessing.spawn") != std::string::npos) return "multiprocessing child";
      if (code.find("multiprocessing.forkserver") != std::string::npos) return "multiprocessing fork server";
      if (code.find("multiprocessing.resource_tracker") != std::string::npos) return "multiprocessing resource tracker";
      return "-c";
    }
    if (a == "-W" || a == "-X" || a == "--check-hash-based-pycs") {  // options with a value
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    return basename_of(a);
  }
  return "";
}

}  // namespace

std::string process_role(const std::vector<std::string>& args, const std::vector<ContextNode>& contexts) {
  if (std::string worker = worker_role(contexts); !worker.empty()) return worker;
  return python_role(args);
}

void name_processes(std::vector<ProcessDefinitions*>& processes) {
  // Per parent and role, the processes in the order they began.
  std::map<std::pair<uint64_t, std::string>, std::vector<ProcessDefinitions*>> families;
  for (ProcessDefinitions* p : processes)
    if (p->launcher_rank < 0 && !p->role.empty()) families[{p->ppid, p->role}].push_back(p);
  std::map<const ProcessDefinitions*, int> numbers;
  for (auto& [key, members] : families) {
    std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
      return a->begin_monotonic_ns < b->begin_monotonic_ns;
    });
    const bool workers = ends_with(key.second, " worker");
    bool together = false;
    // The lowest number none alive holds (last_ns: its last record).
    std::vector<const ProcessDefinitions*> alive;
    for (const ProcessDefinitions* p : members) {
      alive.erase(std::remove_if(alive.begin(), alive.end(),
                                 [&](const auto* q) { return q->last_ns < p->begin_monotonic_ns; }),
                  alive.end());
      together |= !alive.empty();
      std::set<int> taken;
      for (const auto* q : alive) taken.insert(numbers[q]);
      int n = 0;
      while (taken.count(n)) ++n;
      numbers[p] = n;
      alive.push_back(p);
    }
    if (!workers && !together)
      for (const ProcessDefinitions* p : members) numbers.erase(p);
  }
  for (ProcessDefinitions* p : processes) {
    if (p->launcher_rank >= 0 || p->role.empty()) continue;
    p->name += " (" + p->role;
    if (auto n = numbers.find(p); n != numbers.end()) p->name += " " + std::to_string(n->second);
    p->name += ")";
  }
}

}  // namespace hybridprof::finalize
