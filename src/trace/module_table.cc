#include "trace/module_table.h"

#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <fstream>

#include <algorithm>
#include <climits>
#include <cstddef>

#include "common/file_size_limit.h"
#include "unwind/loader_snapshot.h"

namespace hybridprof {
namespace {

struct Mapping {
  std::string path;
  uint64_t bias, start, end;
};

struct Collected {
  std::vector<Mapping> mappings;
  uint64_t vdso_base = 0;
  std::string vdso_path;
};

std::string executable_path() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "[executable]";
  buf[n] = '\0';
  return buf;
}

int collect(dl_phdr_info* info, size_t, void* data) {
  auto* collected = static_cast<Collected*>(data);
  auto* out = &collected->mappings;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = std::min<uint64_t>(lo, info->dlpi_addr + ph.p_vaddr);
    hi = std::max<uint64_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (lo >= hi) return 0;
  std::string path = info->dlpi_name ? info->dlpi_name : "";
  if (path.empty()) path = out->empty() ? executable_path() : "[anonymous]";
  if (!collected->vdso_path.empty() && lo == collected->vdso_base) path = collected->vdso_path;
  out->push_back({std::move(path), info->dlpi_addr, lo, hi});
  return 0;
}

struct LoaderCounters {
  unsigned long long adds = 0, subs = 0;
};

int read_counters(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    auto* c = static_cast<LoaderCounters*>(data);
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;  // the first entry is enough
}

raw::Record load_record(const ModuleInfo& m) {
  return raw::ModuleLoad{m.id, m.load_ns, m.bias, m.start, m.end, m.path};
}

}  // namespace

void ModuleTable::refresh(uint64_t now_ns, std::vector<raw::Record>* changes, bool force) {
  LoaderCounters counters;
  dl_iterate_phdr(read_counters, &counters);
  std::lock_guard lock(mutex_);
  if (!force && counters.adds == loader_adds_ && counters.subs == loader_subs_ && last_refresh_ns_ != 0) {
    last_refresh_ns_ = now_ns;
    return;
  }
  loader_adds_ = counters.adds;
  loader_subs_ = counters.subs;
  const uint64_t load_ns = last_refresh_ns_;
  last_refresh_ns_ = now_ns;
  Collected collected;
  collected.vdso_base = getauxval(AT_SYSINFO_EHDR);
  collected.vdso_path = vdso_path_;
  dl_iterate_phdr(collect, &collected);
  LoaderSnapshot::instance().rebuild();
  std::vector<Mapping>& now = collected.mappings;
  for (auto& m : modules_) {
    if (m.unload_ns != UINT64_MAX) continue;
    const bool present = std::any_of(now.begin(), now.end(), [&](const Mapping& x) {
      return x.start == m.start && x.bias == m.bias && x.path == m.path;
    });
    if (!present) {
      m.unload_ns = now_ns;
      changes->push_back(raw::ModuleUnload{m.id, now_ns});
    }
  }
  for (auto& x : now) {
    const bool known = std::any_of(modules_.begin(), modules_.end(), [&](const ModuleInfo& m) {
      return m.unload_ns == UINT64_MAX && x.start == m.start && x.bias == m.bias && x.path == m.path;
    });
    if (known) continue;
    ModuleInfo m{next_id_++, std::move(x.path), x.bias, x.start, x.end, load_ns, UINT64_MAX};
    changes->push_back(load_record(m));
    modules_.push_back(std::move(m));
  }
  std::sort(modules_.begin(), modules_.end(),
            [](const ModuleInfo& a, const ModuleInfo& b) { return a.start < b.start; });
}

std::vector<raw::Record> ModuleTable::all_as_records() const {
  std::lock_guard lock(mutex_);
  std::vector<raw::Record> out;
  for (const auto& m : modules_) {
    out.push_back(load_record(m));
    if (m.unload_ns != UINT64_MAX) out.push_back(raw::ModuleUnload{m.id, m.unload_ns});
  }
  return out;
}

bool ModuleTable::find(uint64_t address, uint64_t timestamp_ns, ModuleInfo* out) const {
  std::lock_guard lock(mutex_);
  // Ranges of a module loaded, unloaded and replaced overlap in address but
  // not in time: scan the candidates that start at or below the address.
  auto it = std::upper_bound(modules_.begin(), modules_.end(), address,
                             [](uint64_t a, const ModuleInfo& m) { return a < m.start; });
  while (it != modules_.begin()) {
    --it;
    if (address < it->end && timestamp_ns >= it->load_ns && timestamp_ns <= it->unload_ns) {
      *out = *it;
      return true;
    }
  }
  return false;
}

bool ModuleTable::save_vdso_image(const std::string& path) {
  const uint64_t base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return false;
  // The mapping's extent, from /proc/self/maps ("start-end ... [vdso]").
  std::ifstream maps("/proc/self/maps");
  uint64_t start = 0, end = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("[vdso]") == std::string::npos) continue;
    start = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    end = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    break;
  }
  if (start != base || end <= start || passes_file_size_limit(end - start)) return false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = ::write(fd, reinterpret_cast<const void*>(start), end - start) == ssize_t(end - start);
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return false;
  }
  std::lock_guard lock(mutex_);
  vdso_path_ = path;
  return true;
}

void ModuleTable::add(const ModuleInfo& module) {
  std::lock_guard lock(mutex_);
  modules_.push_back(module);
  next_id_ = std::max(next_id_, module.id + 1);
  std::sort(modules_.begin(), modules_.end(),
            [](const ModuleInfo& a, const ModuleInfo& b) { return a.start < b.start; });
}

}  // namespace hybridprof
