#include "finalize/process_tables.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace hybridprof::finalize {

tree::Definitions context_tables(const ProcessDefinitions& p, std::vector<uint32_t>* node_contexts) {
  tree::Definitions t;
  std::map<std::string, uint32_t> strings;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>, uint32_t> regions;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> contexts;
  const auto string = [&](const std::string& s) {
    auto [it, fresh] = strings.try_emplace(s, uint32_t(t.strings.size()));
    if (fresh) t.strings.push_back(s);
    return it->second;
  };
  node_contexts->assign(p.contexts.size(), tree::kNone);
  for (size_t id = 0; id < p.contexts.size(); ++id) {
    const ContextNode& n = p.contexts[id];
    if (!n.present) continue;
    uint32_t parent = n.parent < id ? (*node_contexts)[n.parent] : tree::kNone;
    for (const ContextFrame& f : n.frames) {
      const tree::Region r{string(f.region), string(f.file), string(f.module), f.begin_line,
                           static_cast<uint32_t>(f.paradigm)};
      auto [region, fresh_region] =
          regions.try_emplace({r.name, r.file, r.module, r.line, r.paradigm}, uint32_t(t.regions.size()));
      if (fresh_region) t.regions.push_back(r);
      auto [context, fresh_context] = contexts.try_emplace({region->second, f.line, parent}, uint32_t(t.contexts.size()));
      if (fresh_context) t.contexts.push_back({region->second, f.line, parent});
      parent = context->second;
    }
    (*node_contexts)[id] = parent;
  }
  return t;
}

tree::Definitions merged_context_tables(const std::vector<const ProcessDefinitions*>& processes,
                                        std::vector<std::vector<uint32_t>>* node_contexts) {
  tree::Definitions all;
  node_contexts->assign(processes.size(), {});
  for (size_t i = 0; i < processes.size(); ++i) {
    std::vector<uint32_t>& nodes = (*node_contexts)[i];
    const tree::Definitions own = context_tables(*processes[i], &nodes);
    map_contexts(tree::merge_into(all, own), &nodes);
  }
  return all;
}

void map_contexts(const tree::Map& map, std::vector<uint32_t>* nodes) {
  for (uint32_t& n : *nodes)
    if (n != tree::kNone) n = map.contexts.at(n);
}

std::vector<ContextFrame> frames_of(const tree::Definitions& tables, uint32_t context) {
  std::vector<ContextFrame> frames;
  for (uint32_t c = context; c != tree::kNone; c = tables.contexts.at(c).parent) {
    const tree::Context& ctx = tables.contexts.at(c);
    const tree::Region& r = tables.regions.at(ctx.region);
    frames.push_back({tables.strings.at(r.name), tables.strings.at(r.file), tables.strings.at(r.module), r.line,
                      ctx.line, static_cast<otf2::Paradigm>(r.paradigm)});
  }
  std::reverse(frames.begin(), frames.end());
  return frames;
}

}  // namespace hybridprof::finalize
