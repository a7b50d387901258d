#include "finalize/definition_tree.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string_view>
#include <tuple>

namespace hybridprof::finalize::tree {
namespace {

uint32_t checked(const std::vector<uint32_t>& map, uint32_t index, const char* what) {
  if (index >= map.size()) throw std::invalid_argument(std::string("definitions name a missing ") + what);
  return map[index];
}

// Index of each entry of a table by its content, for deduplication.
template <typename Key>
struct Index {
  std::map<Key, uint32_t> at;
  template <typename Table, typename Make>
  uint32_t intern(Table& table, const Key& key, Make&& make) {
    auto [it, fresh] = at.try_emplace(key, uint32_t(table.size()));
    if (fresh) table.push_back(make());
    return it->second;
  }
};

using RegionKey = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>;
using ContextKey = std::tuple<uint32_t, uint32_t, uint32_t>;
RegionKey key_of(const Region& r) { return {r.name, r.file, r.module, r.line, r.paradigm}; }
ContextKey key_of(const Context& c) { return {c.region, c.line, c.parent}; }

}  // namespace

size_t entries(const Definitions& d) { return d.strings.size() + d.regions.size() + d.contexts.size() + d.comms.size(); }

Map identity(const Definitions& d) {
  Map m;
  const auto fill = [](std::vector<uint32_t>& v, size_t n) {
    v.resize(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint32_t(i);
  };
  fill(m.strings, d.strings.size());
  fill(m.regions, d.regions.size());
  fill(m.contexts, d.contexts.size());
  fill(m.comms, d.comms.size());
  return m;
}

Map merge_into(Definitions& into, const Definitions& from) {
  // The receiver's entries by content (rebuilt per merge: a rank merges a
  // few times, log2 P at most).
  Index<std::string_view> strings;
  Index<RegionKey> regions;
  Index<ContextKey> contexts;
  Index<uint64_t> comms;
  // The index holds views: of into's strings (reserved first, so that no
  // push_back moves them) and of from's, which outlive the merge.
  into.strings.reserve(into.strings.size() + from.strings.size());
  for (uint32_t i = 0; i < into.strings.size(); ++i) strings.at.emplace(into.strings[i], i);
  for (uint32_t i = 0; i < into.regions.size(); ++i) regions.at.emplace(key_of(into.regions[i]), i);
  for (uint32_t i = 0; i < into.contexts.size(); ++i) contexts.at.emplace(key_of(into.contexts[i]), i);
  for (uint32_t i = 0; i < into.comms.size(); ++i) comms.at.emplace(into.comms[i].key, i);

  Map m;
  for (const std::string& s : from.strings) m.strings.push_back(strings.intern(into.strings, s, [&] { return s; }));
  for (const Region& r : from.regions) {
    const Region mapped{checked(m.strings, r.name, "string"), checked(m.strings, r.file, "string"),
                        checked(m.strings, r.module, "string"), r.line, r.paradigm};
    m.regions.push_back(regions.intern(into.regions, key_of(mapped), [&] { return mapped; }));
  }
  for (const Context& c : from.contexts) {
    // A parent is an earlier context: m.contexts holds it already.
    const Context mapped{checked(m.regions, c.region, "region"), c.line,
                         c.parent == kNone ? kNone : checked(m.contexts, c.parent, "parent context")};
    m.contexts.push_back(contexts.intern(into.contexts, key_of(mapped), [&] { return mapped; }));
  }
  for (const Comm& c : from.comms) {
    const uint32_t name = checked(m.strings, c.name, "string");
    const uint32_t i = comms.intern(into.comms, c.key, [&] { return Comm{c.key, name, c.members}; });
    if (into.comms[i].members != c.members)
      throw std::invalid_argument("communicator " + std::to_string(c.key) + " has other members elsewhere");
    m.comms.push_back(i);
  }
  return m;
}

Map compose(const Map& first, const Map& second) {
  Map m;
  const auto through = [](const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, std::vector<uint32_t>& out,
                          const char* what) {
    out.reserve(a.size());
    for (uint32_t i : a) out.push_back(checked(b, i, what));
  };
  through(first.strings, second.strings, m.strings, "string");
  through(first.regions, second.regions, m.regions, "region");
  through(first.contexts, second.contexts, m.contexts, "context");
  through(first.comms, second.comms, m.comms, "communicator");
  return m;
}

Unified unify_in_tree(std::vector<Definitions> ranks, size_t* largest_subtree) {
  const size_t p = ranks.size();
  Unified u;
  if (p == 0) return u;
  // Each rank's own entries, each once (a rank may say one thing twice:
  // two of its contexts alike), are the first of its subtree's tables.
  std::vector<Map> own(p);
  for (size_t r = 0; r < p; ++r) {
    Definitions once;
    own[r] = merge_into(once, ranks[r]);
    ranks[r] = std::move(once);
  }
  // Up: ranks[r] becomes rank r's subtree's tables; merged[r] the map of
  // what rank r sent into its parent's.
  std::vector<Map> merged(p);
  size_t largest = 0, top_step = 1;
  for (size_t step = 1; step < p; step *= 2) {
    top_step = step;
    for (size_t r = step; r < p; r += 2 * step) {
      largest = std::max(largest, entries(ranks[r]));
      merged[r] = merge_into(ranks[r - step], ranks[r]);
      ranks[r] = {};  // sent
    }
  }
  largest = std::max(largest, entries(ranks[0]));
  if (largest_subtree) *largest_subtree = largest;
  // Down, in the reverse order of the rounds: a rank's map to the job is
  // its merge map followed by its parent's map to the job; rank 0's subtree
  // is the job.
  std::vector<Map> to_job(p);
  to_job[0] = identity(ranks[0]);
  for (size_t step = top_step; step > 0; step /= 2)
    for (size_t r = step; r < p; r += 2 * step) to_job[r] = compose(merged[r], to_job[r - step]);
  u.maps.resize(p);
  for (size_t r = 0; r < p; ++r) u.maps[r] = compose(own[r], to_job[r]);
  u.job = std::move(ranks[0]);
  return u;
}

}  // namespace hybridprof::finalize::tree
