#include "trace/event_source.h"

#include <array>
#include <atomic>

namespace hybridprof {
namespace {

// Constant-initialized, so sources registering from static initializers in
// any order find it ready.
std::array<std::atomic<EventSource*>, kMaxEventSources> g_sources{};
std::atomic<size_t> g_count{0};

}  // namespace

bool register_event_source(EventSource* source) {
  const size_t slot = g_count.fetch_add(1, std::memory_order_acq_rel);
  if (slot >= kMaxEventSources) {
    g_count.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  g_sources[slot].store(source, std::memory_order_release);
  return true;
}

namespace detail {
size_t event_source_count() {
  const size_t n = g_count.load(std::memory_order_acquire);
  return n < kMaxEventSources ? n : kMaxEventSources;
}
EventSource* event_source(size_t index) { return g_sources[index].load(std::memory_order_acquire); }
}  // namespace detail

}  // namespace hybridprof
