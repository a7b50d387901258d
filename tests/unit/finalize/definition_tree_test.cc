// Definitions unified up a tree of ranks, checked against a brute-force
// merge over synthetic ranks: overlapping and disjoint strings, regions,
// calling contexts and communicators, and ranks with nothing.
#include "finalize/definition_tree.h"
#include "finalize/process_tables.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace hybridprof::finalize::tree {
namespace {

// An entry with every reference replaced by what it names.
using RegionText = std::tuple<std::string, std::string, std::string, uint32_t, uint32_t>;
using ContextText = std::vector<std::pair<RegionText, uint32_t>>;  // leaf first, to the root
using CommText = std::tuple<uint64_t, std::string, std::vector<uint32_t>>;

RegionText text(const Definitions& d, const Region& r) {
  return {d.strings.at(r.name), d.strings.at(r.file), d.strings.at(r.module), r.line, r.paradigm};
}
ContextText context_text(const Definitions& d, uint32_t c) {
  ContextText chain;
  for (; c != kNone; c = d.contexts.at(c).parent) chain.emplace_back(text(d, d.regions.at(d.contexts.at(c).region)), d.contexts.at(c).line);
  return chain;
}
CommText text(const Definitions& d, const Comm& c) { return {c.key, d.strings.at(c.name), c.members}; }

// Rank r of `ranks`: its own pieces of a shared program, some of its own.
Definitions synthetic_rank(uint32_t r, uint32_t ranks, std::mt19937& random) {
  Definitions d;
  if (r % 7 == 3) return d;  // a rank with nothing
  const auto string = [&](const std::string& s) {
    d.strings.push_back(s);
    return uint32_t(d.strings.size() - 1);
  };
  const uint32_t files[] = {string("solver.c"), string("io.c"), string("rank" + std::to_string(r) + ".c")};
  const uint32_t module = string(r % 2 ? "libfoo.so" : "app");
  // Regions: functions of a pool that overlaps between ranks (r's window of
  // 40 out of 200), one of its own, and a repeat of an earlier one.
  for (uint32_t k = 0; k < 12; ++k) {
    const uint32_t f = (r * 7 + k * 3) % 200;
    d.regions.push_back({string("f" + std::to_string(f)), files[f % 3 == 2 ? 2 : f % 2], module, f * 10, f % 4});
  }
  d.regions.push_back(d.regions.front());
  // Contexts: a random forest over those regions, parents first.
  std::uniform_int_distribution<uint32_t> pick_region(0, uint32_t(d.regions.size() - 1));
  for (uint32_t c = 0; c < 40; ++c) {
    const uint32_t parent = c == 0 || random() % 5 == 0 ? kNone : uint32_t(random() % c);
    d.contexts.push_back({pick_region(random), uint32_t(random() % 3), parent});
  }
  // Communicators: the world, r's pair {r, r^1} (disjoint pairs), the
  // windows {c-1, c, c+1} around even ranks c (overlapping: an odd rank
  // is in two), its own self.
  std::vector<uint32_t> world(ranks);
  for (uint32_t i = 0; i < ranks; ++i) world[i] = i;
  d.comms.push_back({1, string("MPI_COMM_WORLD"), world});
  if ((r ^ 1) < ranks) d.comms.push_back({1000000 + (r & ~1u), string("pair"), {r & ~1u, r | 1u}});
  for (uint32_t c = r == 0 ? 0 : r - 1; c <= r + 1; ++c)
    if (c >= 2 && c % 2 == 0 && c + 1 < ranks) d.comms.push_back({2000000 + c, string("window"), {c - 1, c, c + 1}});
  d.comms.push_back({3000000 + r, string("MPI_COMM_SELF"), {r}});
  return d;
}

class DefinitionTree : public ::testing::TestWithParam<uint32_t> {};

TEST_P(DefinitionTree, EqualsABruteForceMergeAndMapsEveryRanksEntries) {
  const uint32_t p = GetParam();
  std::mt19937 random(p);
  std::vector<Definitions> ranks;
  for (uint32_t r = 0; r < p; ++r) ranks.push_back(synthetic_rank(r, p, random));
  const Unified u = unify_in_tree(ranks);
  ASSERT_EQ(u.maps.size(), size_t(p));

  // Brute force: every entry of every rank, by what it says.
  std::set<std::string> strings;
  std::set<RegionText> regions;
  std::set<ContextText> contexts;
  std::set<CommText> comms;
  for (const Definitions& d : ranks) {
    strings.insert(d.strings.begin(), d.strings.end());
    for (const Region& r : d.regions) regions.insert(text(d, r));
    for (uint32_t c = 0; c < d.contexts.size(); ++c) contexts.insert(context_text(d, c));
    for (const Comm& c : d.comms) comms.insert(text(d, c));
  }
  // The job's tables hold exactly those, each once.
  const Definitions& job = u.job;
  EXPECT_EQ(std::set<std::string>(job.strings.begin(), job.strings.end()), strings);
  EXPECT_EQ(job.strings.size(), strings.size()) << "a string twice";
  std::set<RegionText> job_regions;
  for (const Region& r : job.regions) job_regions.insert(text(job, r));
  EXPECT_EQ(job_regions, regions);
  EXPECT_EQ(job.regions.size(), regions.size()) << "a region twice";
  std::set<ContextText> job_contexts;
  for (uint32_t c = 0; c < job.contexts.size(); ++c) {
    job_contexts.insert(context_text(job, c));
    if (job.contexts[c].parent != kNone) {
      EXPECT_LT(job.contexts[c].parent, c) << "parents before children";
    }
  }
  EXPECT_EQ(job_contexts, contexts);
  EXPECT_EQ(job.contexts.size(), contexts.size()) << "a context twice";
  std::set<CommText> job_comms;
  for (const Comm& c : job.comms) job_comms.insert(text(job, c));
  EXPECT_EQ(job_comms, comms);
  EXPECT_EQ(job.comms.size(), comms.size()) << "a communicator twice";

  // Each rank's map takes each of its entries to the job's entry that says the same.
  for (uint32_t r = 0; r < p; ++r) {
    const Definitions& d = ranks[r];
    const Map& m = u.maps[r];
    ASSERT_EQ(m.strings.size(), d.strings.size());
    ASSERT_EQ(m.regions.size(), d.regions.size());
    ASSERT_EQ(m.contexts.size(), d.contexts.size());
    ASSERT_EQ(m.comms.size(), d.comms.size());
    for (uint32_t i = 0; i < d.strings.size(); ++i) ASSERT_EQ(job.strings.at(m.strings[i]), d.strings[i]) << r;
    for (uint32_t i = 0; i < d.regions.size(); ++i)
      ASSERT_EQ(text(job, job.regions.at(m.regions[i])), text(d, d.regions[i])) << "rank " << r << " region " << i;
    for (uint32_t i = 0; i < d.contexts.size(); ++i)
      ASSERT_EQ(context_text(job, m.contexts[i]), context_text(d, i)) << "rank " << r << " context " << i;
    for (uint32_t i = 0; i < d.comms.size(); ++i)
      ASSERT_EQ(text(job, job.comms.at(m.comms[i])), text(d, d.comms[i])) << "rank " << r << " comm " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DefinitionTree, ::testing::Values(1u, 2u, 3u, 7u, 64u, 1000u, 4096u),
                         [](const auto& info) { return std::to_string(info.param); });

// Ranks running one program hold about one rank's definitions at every
// step of the tree, however many they are: the memory that stays flat.
TEST(DefinitionTreeMemory, RanksOfOneProgramHoldAboutOneRanksDefinitions) {
  std::mt19937 random(1);
  Definitions one = synthetic_rank(0, 1, random);
  one.comms.clear();  // the per-rank communicators are each rank's own
  for (uint32_t p : {4u, 64u, 4096u}) {
    size_t largest = 0;
    const Unified u = unify_in_tree(std::vector<Definitions>(p, one), &largest);
    Definitions once;
    merge_into(once, one);  // what one rank says, each thing once
    EXPECT_EQ(largest, entries(once)) << p << " ranks";
    EXPECT_EQ(entries(u.job), entries(once));
  }
}

TEST(DefinitionTreeErrors, AReferenceToAMissingEntryIsRefused) {
  Definitions into, bad;
  bad.strings = {"a"};
  bad.regions = {{0, 0, 5, 1, 0}};  // module: no string 5
  EXPECT_THROW(merge_into(into, bad), std::invalid_argument);
  Definitions child_first;
  child_first.strings = {"a"};
  child_first.regions = {{0, 0, 0, 1, 0}};
  child_first.contexts = {{0, 0, 1}, {0, 0, kNone}};  // parent after its child
  EXPECT_THROW(merge_into(into, child_first), std::invalid_argument);
  Definitions a, b;
  a.strings = b.strings = {"c"};
  a.comms = {{7, 0, {0, 1}}};
  b.comms = {{7, 0, {0, 2}}};
  merge_into(into, a);
  EXPECT_THROW(merge_into(into, b), std::invalid_argument) << "one key, other members";
}

}  // namespace
}  // namespace hybridprof::finalize::tree

namespace hybridprof::finalize {
namespace {

ContextFrame frame(const std::string& name, uint32_t line, const std::string& file = "a.c") {
  return {name, file, "app", 10, line, otf2::Paradigm::kSampling};
}

// A process's contexts as tables: a frame each (an inlined chain is
// several), a lost node none, a node whose parent was lost at the root;
// and unified across processes, every node still stands for its frames.
TEST(ProcessTables, EveryNodeStandsForItsFramesBeforeAndAfterUnification) {
  ProcessDefinitions p;
  p.contexts.resize(6);
  p.contexts[0] = {true, UINT32_MAX, {frame("main", 3)}};
  p.contexts[1] = {true, 0, {frame("solve", 7), frame("helper", 12, "helper.h")}};  // helper inlined into solve
  p.contexts[3] = {true, 2, {frame("orphan", 1)}};                                  // 2 was lost
  p.contexts[4] = {true, 1, {frame("leaf", 20)}};
  p.contexts[5] = {true, 0, {frame("solve", 7), frame("helper", 12, "helper.h")}};  // the same as 1
  std::vector<uint32_t> nodes;
  const tree::Definitions t = context_tables(p, &nodes);
  ASSERT_EQ(nodes.size(), 6u);
  EXPECT_EQ(nodes[2], tree::kNone);
  EXPECT_EQ(nodes[5], nodes[1]);
  EXPECT_EQ(t.regions.size(), 5u);
  const auto names = [](const std::vector<ContextFrame>& frames) {
    std::vector<std::string> out;
    for (const auto& f : frames) out.push_back(f.region);
    return out;
  };
  EXPECT_EQ(names(frames_of(t, nodes[4])), (std::vector<std::string>{"main", "solve", "helper", "leaf"}));
  EXPECT_EQ(names(frames_of(t, nodes[3])), (std::vector<std::string>{"orphan"}));
  const std::vector<ContextFrame> leaf = frames_of(t, nodes[4]);
  EXPECT_EQ(leaf[2].file, "helper.h");
  EXPECT_EQ(leaf[2].line, 12u);

  ProcessDefinitions q = p;  // another rank: one more path, one the same
  q.contexts.push_back({true, 4, {frame("deeper", 30)}});
  std::vector<uint32_t> q_nodes;
  const tree::Unified u = tree::unify_in_tree({t, context_tables(q, &q_nodes)});
  for (const auto& [process, node_map, map] :
       {std::tuple{&p, &nodes, &u.maps[0]}, std::tuple{&q, &q_nodes, &u.maps[1]}}) {
    for (size_t id = 0; id < process->contexts.size(); ++id) {
      if ((*node_map)[id] == tree::kNone) continue;
      std::vector<std::string> expected;
      for (size_t n = id; n < process->contexts.size() && process->contexts[n].present; n = process->contexts[n].parent) {
        const auto& frames = process->contexts[n].frames;
        for (auto f = frames.rbegin(); f != frames.rend(); ++f) expected.insert(expected.begin(), f->region);
      }
      EXPECT_EQ(names(frames_of(u.job, map->contexts[(*node_map)[id]])), expected) << "node " << id;
    }
  }
  EXPECT_EQ(u.job.contexts.size(), t.contexts.size() + 1) << "the one new path";
}

// One writer's archive: every process's contexts merged into one set of
// tables, each node still standing for its own frames, shared paths once.
TEST(ProcessTables, MergedProcessesKeepEachNodesFrames) {
  ProcessDefinitions p, q;
  p.contexts = {{true, UINT32_MAX, {frame("main", 3)}}, {true, 0, {frame("solve", 7)}}};
  q.contexts = {{true, UINT32_MAX, {frame("main", 3)}}, {false, 0, {}}, {true, 0, {frame("other", 9)}}};
  std::vector<std::vector<uint32_t>> nodes;
  const tree::Definitions t = merged_context_tables({&p, &q}, &nodes);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0][0], nodes[1][0]) << "main, once";
  EXPECT_EQ(nodes[1][1], tree::kNone);
  EXPECT_EQ(t.contexts.size(), 3u);
  EXPECT_EQ(frames_of(t, nodes[0][1]).back().region, "solve");
  EXPECT_EQ(frames_of(t, nodes[1][2]).back().region, "other");
  EXPECT_EQ(frames_of(t, nodes[1][2]).front().region, "main");
}

// Tables and maps travel between ranks as bytes: read back equal, and
// anything cut short or damaged is refused, never half read.
TEST(ProcessTables, TablesAndMapsTravelAsBytes) {
  ProcessDefinitions p;
  p.contexts = {{true, UINT32_MAX, {frame("main", 3)}}, {true, 0, {frame("solve", 7), frame("helper", 12, "h.h")}}};
  std::vector<uint32_t> nodes;
  tree::Definitions t = context_tables(p, &nodes);
  t.comms.push_back({42, 0, {3, 1, 2}});
  const std::string bytes = serialize_tables(t);
  tree::Definitions back;
  ASSERT_TRUE(parse_tables(bytes, &back));
  EXPECT_EQ(back, t);
  const tree::Map m = tree::identity(t);
  tree::Map map_back;
  ASSERT_TRUE(parse_map(serialize_map(m), &map_back));
  EXPECT_EQ(map_back, m);
  for (size_t cut : {size_t(0), size_t(7), bytes.size() / 2, bytes.size() - 1})
    EXPECT_FALSE(parse_tables(bytes.substr(0, cut), &back)) << "cut at " << cut;
  EXPECT_FALSE(parse_tables(bytes + "x", &back));
  EXPECT_FALSE(parse_map(bytes, &map_back)) << "tables are not a map";
  EXPECT_EQ(back, t) << "a refused parse leaves its output alone";
}

// What a collective archive's master hands another writer: its processes'
// refs, whole or not at all.
TEST(ProcessTables, HandedRefsTravelAsBytes) {
  DefinedRefs one;
  one.pid = 4242;
  one.begin_monotonic_ns = 123456789;
  one.generator = 3;
  one.locations = {{0, 17}, {2, 18}, {5, 40}};
  one.definitions["mpi"] = {{0, 7}, {1, 9}};
  one.definitions["cuda"] = {{4, 2}};
  DefinedRefs two;
  two.pid = 4243;
  const std::vector<DefinedRefs> refs{one, two};
  const std::string bytes = serialize_refs(refs);
  std::vector<DefinedRefs> back;
  ASSERT_TRUE(parse_refs(bytes, &back));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].pid, 4242u);
  EXPECT_EQ(back[0].begin_monotonic_ns, 123456789u);
  EXPECT_EQ(back[0].generator, 3u);
  EXPECT_EQ(back[0].locations, one.locations);
  EXPECT_EQ(back[0].definitions, one.definitions);
  EXPECT_EQ(back[1].pid, 4243u);
  EXPECT_TRUE(back[1].locations.empty());
  for (size_t cut : {size_t(0), size_t(7), bytes.size() / 2, bytes.size() - 1})
    EXPECT_FALSE(parse_refs(bytes.substr(0, cut), &back)) << "cut at " << cut;
  EXPECT_FALSE(parse_refs(std::string(), &back)) << "a failed master hands empty parts";
}

}  // namespace
}  // namespace hybridprof::finalize
