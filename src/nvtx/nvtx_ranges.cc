#include "nvtx/nvtx_ranges.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "common/per_thread.h"
#include "otf2/types.h"
#include "trace/drain.h"
#include "trace/event_source.h"
#include "trace/stream_region_table.h"
#include "trace/traced_region.h"
#include "trace/tracing_host.h"

namespace hybridprof::nvtx {

struct Domain {
  explicit Domain(std::string n) : name(std::move(n)) {}
  const std::string name;  // "" for the default domain
  std::mutex mutex;        // guards the two below
  std::unordered_map<uint32_t, std::string> categories;
  std::deque<std::string> strings;  // registered: their addresses are the handles
};

namespace {

// Domains live as long as the process (their handles may be used until it
// ends, destructors included): never destroyed.
std::mutex g_domains_mutex;
std::deque<Domain>& domains() {
  static auto* all = new std::deque<Domain>();
  return *all;
}

std::string region_name(Domain& domain, const Label& label) {
  std::string name = label.text ? label.text : "(unnamed)";
  if (!domain.name.empty()) name = domain.name + ": " + name;
  if (label.category != 0) {
    std::lock_guard lock(domain.mutex);
    const auto it = domain.categories.find(label.category);
    name += " [" + (it != domain.categories.end() ? it->second : "category " + std::to_string(label.category)) + "]";
  }
  return name;
}

// Region ids by name, one per distinct range name in the process.
StreamRegionTable<std::string>& regions() {
  static auto* table = new StreamRegionTable<std::string>();  // used until the process ends
  return *table;
}

// The thread's recent labels, so a range met again takes no lock and
// builds no name. A text label is the same when its characters are (the
// program may reuse a buffer); a registered one when its handle is.
struct CachedLabel {
  const Domain* domain = nullptr;
  const void* key = nullptr;
  uint32_t category = 0;
  uint64_t stream = 0;
  uint32_t id = 0;
  std::string text;
};
using LabelCache = CachedLabel[32];

// A label not in the thread's cache entry `c`: named, defined, kept there.
__attribute__((noinline)) uint32_t define_region_id(TracingHost& host, Domain& domain, const Label& label,
                                                    const void* key, uint64_t stream, CachedLabel& c) {
  c.domain = &domain;
  c.key = key;
  c.category = label.category;
  c.stream = stream;
  c.text = label.registered || label.text == nullptr ? std::string() : std::string(label.text);
  const std::string name = region_name(domain, label);
  c.id = regions().id(name, [&](uint32_t fresh) {
    host.drain().append(raw::RegionDef{fresh, name, static_cast<uint32_t>(otf2::Paradigm::kUser), 0, 0, {}});
  });
  return c.id;
}

// Inlined, like the helpers below that push and pop use: each call level
// the traced path goes below the program's frame costs the program a
// mispredicted return later, once the program's stack is deeper than the
// CPU's return stack buffer (docs/performance.md, "Traced calls from many call sites").
__attribute__((always_inline)) inline uint32_t region_id(TracingHost& host, Domain& domain, const Label& label,
                                                         LabelCache& labels) {
  const void* key = label.text;
  const uint64_t stream = regions().stream();
  const auto hash = reinterpret_cast<uintptr_t>(key) ^ reinterpret_cast<uintptr_t>(&domain) >> 4 ^ label.category;
  CachedLabel& c = labels[(hash ^ hash >> 9) % std::size(labels)];
  if (c.key == key && c.domain == &domain && c.category == label.category && c.stream == stream &&
      (label.registered || label.text == nullptr || std::strcmp(c.text.c_str(), label.text) == 0))
    return c.id;
  return define_region_id(host, domain, label, key, stream, c);
}

// --capture-range nvtx:NAME[@DOMAIN]: a range of message NAME (in domain
// DOMAIN; the default domain without one) opens the capture window, and
// its end closes it; with a count, the first that many only.
struct CaptureRange {
  bool on = false;
  std::string name, domain;
  uint64_t count = 0;  // 0: every one
  std::atomic<uint64_t> opened{0};
};
// Inlined (its guard a load), as starts_capture's test: a call level less
// under every push.
__attribute__((always_inline)) inline CaptureRange& capture_range() {
  static CaptureRange* range = [] {
    auto* r = new CaptureRange();  // used until the process ends
    const TracingHost* host = tracing_host();
    if (host == nullptr || host->config().capture_range.rfind("nvtx:", 0) != 0) return r;
    std::string spec = host->config().capture_range.substr(5);
    if (const size_t at = spec.rfind('@'); at != std::string::npos) {
      r->domain = spec.substr(at + 1);
      spec.resize(at);
    }
    r->name = spec;
    r->count = host->config().capture_range_count;
    r->on = !r->name.empty();
    return r;
  }();
  return *range;
}

// Whether a range with `label` in `domain` starts a capture (and counts it).
__attribute__((noinline)) bool named_for_capture(CaptureRange& c, const Domain& domain, const Label& label) {
  if (domain.name != c.domain || label.text == nullptr || c.name != label.text) return false;
  return c.count == 0 || c.opened.fetch_add(1, std::memory_order_relaxed) < c.count;
}
__attribute__((always_inline)) inline bool starts_capture(const Domain& domain, const Label& label) {
  CaptureRange& c = capture_range();
  return c.on && named_for_capture(c, domain, label);
}

void set_window(bool open) {
  if (TracingHost* host = tracing_host())
    host->set_capture_window(open, (open ? "nvtx range '" : "end of nvtx range '") + capture_range().name + "'");
}

// The ranges open on this thread, innermost last.
struct OpenRange {
  const Domain* domain;
  uint64_t id;  // a start/end range's; 0 for a push
  uint32_t region;
  EnteredRegion entered;
  bool captures;  // it opened the capture window (--capture-range), and its end closes it
};
struct OpenRanges {
  static constexpr uint32_t kMax = 128;
  OpenRange open[kMax];
  uint32_t depth = 0;
  uint32_t serial = 0;       // the thread's part of its start/end range ids (0: none yet)
  uint32_t next_range = 0;   // ... and the count of them
};

// A thread's NVTX state (PerThread: 9 KiB, too much for static TLS).
struct NvtxThread {
  OpenRanges ranges;
  LabelCache labels;
};
NvtxThread* this_thread() { return PerThread<NvtxThread>::get(); }

// Start/end ranges ended on a thread other than their own, for their own
// thread to end (an OTF2 location's regions are its own thread's).
std::mutex g_foreign_mutex;
std::vector<uint64_t> g_foreign_ends;
std::atomic<uint32_t> g_foreign_count{0};
std::atomic<uint32_t> g_serials{0};

uint32_t serial_of(uint64_t id) { return static_cast<uint32_t>(id >> 32); }

__attribute__((always_inline)) inline EnteredRegion enter(uint32_t region) {
  TracingHost* host = traced_host();
  return host ? enter_region(*host, region) : EnteredRegion{};
}
__attribute__((always_inline)) inline void leave(const EnteredRegion& r) {
  if (TracingHost* host = tracing_host()) leave_region(*host, r);
}

// Closes the range at `index`: the ones opened after it are left first
// and entered again after it, so the thread's regions still nest.
__attribute__((always_inline)) inline void close_at(OpenRanges& t, uint32_t index) {
  const bool captures = t.open[index].captures;
  for (uint32_t j = t.depth; j-- > index;) leave(t.open[j].entered);
  for (uint32_t j = index + 1; j < t.depth; ++j) {
    t.open[j - 1] = t.open[j];
    t.open[j - 1].entered = t.open[j - 1].region ? enter(t.open[j - 1].region) : EnteredRegion{};
  }
  --t.depth;
  if (captures) set_window(false);
}

// Open entry of start/end range `id` on this thread, or depth if none.
uint32_t find_range(const OpenRanges& t, uint64_t id) {
  for (uint32_t i = t.depth; i-- > 0;)
    if (t.open[i].id == id) return i;
  return t.depth;
}

// Ends this thread's ranges that other threads ended.
void end_foreign_ranges(OpenRanges& t) {
  if (g_foreign_count.load(std::memory_order_relaxed) == 0 || t.serial == 0) return;
  std::vector<uint64_t> mine;
  {
    std::lock_guard lock(g_foreign_mutex);
    for (size_t i = 0; i < g_foreign_ends.size();) {
      if (serial_of(g_foreign_ends[i]) != t.serial) {
        ++i;
        continue;
      }
      mine.push_back(g_foreign_ends[i]);
      g_foreign_ends[i] = g_foreign_ends.back();
      g_foreign_ends.pop_back();
    }
    g_foreign_count.store(static_cast<uint32_t>(g_foreign_ends.size()), std::memory_order_relaxed);
  }
  for (uint64_t id : mine)
    if (const uint32_t i = find_range(t, id); i < t.depth) close_at(t, i);
}

// Opens a range (push or start) or a mark on this thread; false when the
// thread already has kMax open (not kept open then).
// `thread`: the calling thread's state (the caller's ProfilerWork has it).
__attribute__((always_inline)) inline bool open(NvtxThread& me, ThreadState* thread, Domain* domain, const Label& label,
                                                uint64_t id) {
  OpenRanges& t = me.ranges;
  end_foreign_ranges(t);
  if (t.depth == OpenRanges::kMax) return false;
  const bool captures = starts_capture(*domain, label);
  if (captures) set_window(true);  // first: the range itself is in the window
  TracingHost* host = traced_host();
  const uint32_t region = host ? region_id(*host, *domain, label, me.labels) : 0;
  // A range that opened the window finds its thread recording only now.
  if (captures && host) thread = host->current_thread();
  // Made where it is kept, as OpenMP's regions (openmp_regions.cc): a
  // copy of the entered region, just written field by field, would read it
  // back sixteen bytes at a time and wait for the stores to reach the cache
  // (~25 ns a push, the largest part of its cost, until 2026-11-29).
  ::new (static_cast<void*>(&t.open[t.depth]))
      OpenRange{domain, id, region, host ? enter_region_on(*host, thread, region) : EnteredRegion{}, captures};
  ++t.depth;
  return true;
}

class NvtxSource final : public EventSource {
 public:
  const char* name() const override { return "nvtx"; }
  void process_started(Drain&) override { regions().new_stream(); }
  // What the thread left open ends with it (the drain would close it at
  // the thread's end anyway; this keeps the order of the leaves).
  void thread_ending(ThreadState&) override {
    NvtxThread* me = PerThread<NvtxThread>::peek();
    if (me == nullptr) return;  // used no NVTX
    end_foreign_ranges(me->ranges);
    while (me->ranges.depth > 0) leave(me->ranges.open[--me->ranges.depth].entered);
  }
  void fork_child() override {
    if (NvtxThread* me = PerThread<NvtxThread>::peek()) me->ranges.depth = 0;
  }
};
HYBRIDPROF_EVENT_SOURCE(NvtxSource)

}  // namespace

Domain* default_domain() {
  static auto* domain = new Domain("");
  return domain;
}

Domain* create_domain(const std::string& name) {
  std::lock_guard lock(g_domains_mutex);
  return &domains().emplace_back(name);
}

const std::string* register_string(Domain* domain, const std::string& text) {
  std::lock_guard lock(domain->mutex);
  return &domain->strings.emplace_back(text);
}

void name_category(Domain* domain, uint32_t category, const std::string& name) {
  std::lock_guard lock(domain->mutex);
  domain->categories[category] = name;
}

int push(Domain* domain, Label label) {
  const ProfilerWork work;
  NvtxThread* me = this_thread();
  if (me == nullptr) return -1;
  const OpenRanges& t = me->ranges;
  int level = 0;
  for (uint32_t i = 0; i < t.depth; ++i) level += t.open[i].domain == domain && t.open[i].id == 0;
  return open(*me, work.thread(), domain, label, 0) ? level : -1;
}

int pop(Domain* domain) {
  const ProfilerWork work;
  NvtxThread* me = this_thread();
  if (me == nullptr) return -1;
  OpenRanges& t = me->ranges;
  end_foreign_ranges(t);
  int level = -1;
  uint32_t innermost = t.depth;
  for (uint32_t i = 0; i < t.depth; ++i) {
    if (t.open[i].domain != domain || t.open[i].id != 0) continue;
    ++level;
    innermost = i;
  }
  if (innermost == t.depth) return -1;  // nothing pushed
  close_at(t, innermost);
  return level;
}

uint64_t start(Domain* domain, Label label) {
  const ProfilerWork work;
  NvtxThread* me = this_thread();
  if (me == nullptr) return 0;  // ends nothing
  OpenRanges& t = me->ranges;
  if (t.serial == 0) t.serial = g_serials.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t id = uint64_t{t.serial} << 32 | ++t.next_range;
  open(*me, work.thread(), domain, label, id);
  return id;
}

void end(uint64_t id) {
  const ProfilerWork work;
  NvtxThread* me = this_thread();
  if (id == 0 || me == nullptr) return;
  OpenRanges& t = me->ranges;
  end_foreign_ranges(t);
  if (serial_of(id) == t.serial) {
    if (const uint32_t i = find_range(t, id); i < t.depth) close_at(t, i);
    return;
  }
  std::lock_guard lock(g_foreign_mutex);
  g_foreign_ends.push_back(id);
  g_foreign_count.store(static_cast<uint32_t>(g_foreign_ends.size()), std::memory_order_relaxed);
}

void mark(Domain* domain, Label label) {
  const ProfilerWork work;
  NvtxThread* me = this_thread();
  if (me == nullptr) return;
  end_foreign_ranges(me->ranges);
  TracingHost* host = traced_host();
  if (host == nullptr) return;
  leave_region(*host, enter_region_on(*host, work.thread(), region_id(*host, *domain, label, me->labels)));
}

}  // namespace hybridprof::nvtx
