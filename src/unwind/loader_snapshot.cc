#include "unwind/loader_snapshot.h"

#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace hybridprof {

LoaderSnapshot& LoaderSnapshot::instance() {
  static LoaderSnapshot snapshot;
  return snapshot;
}

namespace {

struct Counters {
  unsigned long long adds = 0, subs = 0;
};

int read_counters(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    static_cast<Counters*>(data)->adds = info->dlpi_adds;
    static_cast<Counters*>(data)->subs = info->dlpi_subs;
  }
  return 1;  // the first module is enough
}

// Modules offered by offer_missed(), on this thread only.
constexpr int kMissedModules = 4;
struct MissedModule {
  dl_phdr_info info;
  void* link_map;
};
__thread MissedModule tls_missed[kMissedModules] __attribute__((tls_model("initial-exec")));
__thread int tls_missed_count __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

int LoaderSnapshot::collect(dl_phdr_info* info, size_t, void* data) {
  auto* b = static_cast<Buffer*>(data);
  Module m;
  m.info = *info;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_LOAD) {
      m.probe = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      break;
    }
  }
  dl_find_object found{};
  if (m.probe != 0 && _dl_find_object(reinterpret_cast<void*>(m.probe), &found) == 0) m.link_map = found.dlfo_link_map;
  b->modules.push_back(m);
  b->headers.insert(b->headers.end(), info->dlpi_phdr, info->dlpi_phdr + info->dlpi_phnum);
  b->names.emplace_back(info->dlpi_name ? info->dlpi_name : "");
  return 0;
}

void LoaderSnapshot::rebuild() {
  std::lock_guard lock(rebuild_mutex_);
  const int next = 1 - current_.load(std::memory_order_relaxed);
  // Readers that found `next` current before the last swap may still be
  // inside it: a handler's walk takes microseconds.
  while (readers_[next].load(std::memory_order_acquire) != 0) sched_yield();
  Buffer& b = buffers_[next];
  b.modules.clear();
  b.code.clear();
  b.headers.clear();
  b.names.clear();
  Counters counters;
  dl_iterate_phdr(read_counters, &counters);
  dl_iterate_phdr(collect, &b);
  // Point into the copies only now: the vectors have stopped growing.
  size_t header = 0;
  for (size_t i = 0; i < b.modules.size(); ++i) {
    b.modules[i].info.dlpi_phdr = b.headers.data() + header;
    b.modules[i].info.dlpi_name = b.names[i].c_str();
    header += b.modules[i].info.dlpi_phnum;
    const dl_phdr_info& info = b.modules[i].info;
    for (int k = 0; k < info.dlpi_phnum; ++k) {
      const ElfW(Phdr)& ph = info.dlpi_phdr[k];
      if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && ph.p_memsz > 0)
        b.code.push_back({info.dlpi_addr + ph.p_vaddr, info.dlpi_addr + ph.p_vaddr + ph.p_memsz, uint32_t(i)});
    }
  }
  std::sort(b.code.begin(), b.code.end(), [](const CodeRange& x, const CodeRange& y) { return x.start < y.start; });
  current_.store(next, std::memory_order_release);
  adds_.store(counters.adds, std::memory_order_relaxed);
  subs_.store(counters.subs, std::memory_order_relaxed);
}

void LoaderSnapshot::refresh_if_changed() {
  Counters counters;
  dl_iterate_phdr(read_counters, &counters);
  if (counters.adds != adds_.load(std::memory_order_relaxed) || counters.subs != subs_.load(std::memory_order_relaxed))
    rebuild();
}

// SIGNAL PATH.
int LoaderSnapshot::acquire() {
  for (;;) {
    const int i = current_.load(std::memory_order_acquire);
    readers_[i].fetch_add(1, std::memory_order_acq_rel);
    if (current_.load(std::memory_order_acquire) == i) return i;
    readers_[i].fetch_sub(1, std::memory_order_release);
  }
}

bool LoaderSnapshot::Module::still_loaded(uint64_t address) const {
  if (link_map == nullptr) return true;
  dl_find_object found{};
  return _dl_find_object(reinterpret_cast<void*>(address), &found) == 0 && found.dlfo_link_map == link_map;
}

// SIGNAL PATH.
int LoaderSnapshot::iterate(Callback callback, void* data) {
  const int i = acquire();
  int result = 0;
  for (Module& m : buffers_[i].modules) {
    if (!m.still_loaded(m.probe)) continue;  // unloaded (or replaced) since the snapshot
    result = callback(&m.info, sizeof m.info, data);
    if (result != 0) break;
  }
  release(i);
  for (int k = 0; result == 0 && k < tls_missed_count; ++k)
    result = callback(&tls_missed[k].info, sizeof tls_missed[k].info, data);
  return result;
}

// SIGNAL PATH.
bool LoaderSnapshot::holds(const void* link_map) {
  const int i = acquire();
  bool held = false;
  for (const Module& m : buffers_[i].modules) held |= m.link_map == link_map;
  release(i);
  return held;
}

// SIGNAL PATH.
bool LoaderSnapshot::in_executable_code(uint64_t address, uint64_t* segment_start) {
  const int i = acquire();
  const std::vector<CodeRange>& code = buffers_[i].code;
  // The last range starting at or below `address` (no allocation here).
  size_t low = 0, high = code.size();
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    if (code[mid].start <= address) low = mid + 1;
    else high = mid;
  }
  bool found = false;
  if (low > 0 && address < code[low - 1].end) {
    const CodeRange& range = code[low - 1];
    const Module& m = buffers_[i].modules[range.module];
    found = m.still_loaded(address);
    if (found) *segment_start = range.start;
  }
  release(i);
  return found;
}

// SIGNAL PATH.
bool LoaderSnapshot::offer_missed(uint64_t ip) {
  dl_find_object found{};
  if (_dl_find_object(reinterpret_cast<void*>(ip), &found) != 0 || holds(found.dlfo_link_map)) return false;
  for (int k = 0; k < tls_missed_count; ++k) {
    if (tls_missed[k].link_map == found.dlfo_link_map) return true;
  }
  if (tls_missed_count == kMissedModules) return false;
  // The loader maps a module's first segment, which holds its ELF and
  // program headers, at the start of its mapping.
  const auto* start = static_cast<const unsigned char*>(found.dlfo_map_start);
  const auto* ehdr = reinterpret_cast<const ElfW(Ehdr)*>(start);
  if (std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0 || ehdr->e_phentsize != sizeof(ElfW(Phdr)) ||
      ehdr->e_phoff + size_t(ehdr->e_phnum) * sizeof(ElfW(Phdr)) >
          size_t(static_cast<const unsigned char*>(found.dlfo_map_end) - start))
    return false;
  const auto* map = static_cast<const link_map*>(found.dlfo_link_map);
  MissedModule& m = tls_missed[tls_missed_count];
  m.info = dl_phdr_info{};
  m.info.dlpi_addr = map->l_addr;
  m.info.dlpi_name = map->l_name;
  m.info.dlpi_phdr = reinterpret_cast<const ElfW(Phdr)*>(start + ehdr->e_phoff);
  m.info.dlpi_phnum = ehdr->e_phnum;
  m.link_map = found.dlfo_link_map;
  ++tls_missed_count;
  return true;
}

void LoaderSnapshot::forget_missed() { tls_missed_count = 0; }

void LoaderSnapshot::after_fork_child() {
  readers_[0].store(0);
  readers_[1].store(0);
}

size_t LoaderSnapshot::size_for_testing() {
  return buffers_[current_.load()].modules.size();
}

}  // namespace hybridprof
