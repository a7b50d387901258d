#include "trace/event_sets.h"

#include <atomic>
#include <mutex>
#include <string>

namespace hybridprof {
namespace {

struct Registry {
  std::mutex mutex;
  raw::EventSetDef sets[kMaxEventSets];
  std::atomic<size_t> count{0};
  uint32_t next_kind = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

uint32_t register_event_set(std::string_view name, uint32_t kinds) {
  if (name.empty() || name.size() > kMaxEventSetName || kinds == 0) return kNoEventSet;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const size_t n = r.count.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) {
    if (r.sets[i].name == name) return r.sets[i].kinds == kinds ? r.sets[i].base : kNoEventSet;
  }
  if (n == kMaxEventSets || kinds > kMaxEventKinds - r.next_kind) return kNoEventSet;
  r.sets[n] = raw::EventSetDef{r.next_kind, kinds, std::string(name)};
  r.next_kind += kinds;
  r.count.store(n + 1, std::memory_order_release);
  return r.sets[n].base;
}

std::vector<raw::EventSetDef> registered_event_sets() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return std::vector<raw::EventSetDef>(r.sets, r.sets + r.count.load(std::memory_order_relaxed));
}

size_t registered_event_set_count() { return registry().count.load(std::memory_order_acquire); }

}  // namespace hybridprof
