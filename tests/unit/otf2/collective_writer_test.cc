// Collective mode without MPI: one writer, the other writers of its group
// stood in for by what the reductions add (the MPI case runs in the
// integration tests, Mpi.TheRanksWriteTheJobArchiveTogetherAtExit).
#include <gtest/gtest.h>
#include <otf2/otf2.h>

#include <filesystem>
#include <stdexcept>

#include "otf2/archive_reader.h"
#include "otf2/archive_writer.h"
#include "otf2/property_names.h"
#include "test_support.h"

namespace hybridprof::otf2 {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// This writer plus one other, which wrote 4 events on location 1 between
// times 50 and 900, two of them moved later (ArchiveWriter rule 2), one by 30 ns.
class PretendGroup final : public ArchiveWriter::Collective {
 public:
  explicit PretendGroup(bool master) : master_(master) {}
  void install(OTF2_Archive_struct* archive) override { OTF2_Archive_SetSerialCollectiveCallbacks(archive); }
  bool is_master() const override { return master_; }
  void reduce(std::vector<uint64_t>&, Reduce) override { ++reductions; }
  uint32_t writers() const override { return 2; }
  uint32_t writer() const override { return master_ ? 0 : 1; }
  // The other writer's event totals (ArchiveWriter::gather_thread_totals):
  // its whole range, then location 1's (ref, events, range, events moved and by how much at most).
  std::vector<std::string> gather(const std::string& mine) override {
    ++gathers;
    if (!master_) return {};
    const uint64_t other[] = {UINT64_MAX, 0, 50, 900, 0, 0, 1, 4, 50, 900, 2, 30};
    return {mine, std::string(reinterpret_cast<const char*>(other), sizeof other)};
  }
  std::string scatter(const std::vector<std::string>&) override { return {}; }
  int reductions = 0, gathers = 0;

 private:
  bool master_;
};

struct TwoThreads {
  uint64_t own, other;
  uint32_t context, generator;
};

TwoThreads define(ArchiveWriter& w) {
  const uint32_t node = w.define_system_tree_node("host", "node", kUndefined);
  const uint32_t process = w.define_process("rank 0", node);
  TwoThreads t{w.define_thread(process, "main thread"), w.define_thread(process, "thread 1"), 0, 0};
  t.context = w.define_calling_context(w.define_region("main", "a.c", 0, Paradigm::kSampling), kUndefined, kUndefined);
  t.generator = w.define_interrupt_generator("cpu-clock", true, 1000000);
  w.set_thread_remote(t.other);
  return t;
}

TEST(CollectiveWriter, TheMasterWritesEveryLocationsCountsButOnlyItsOwnEvents) {
  TempDir dir;
  PretendGroup group(true);
  {
    ArchiveWriter w({.directory = dir.path(), .collective = &group});
    const TwoThreads t = define(w);
    for (uint64_t time : {100, 200, 300}) w.write_sample(t.own, time, t.context, 1, t.generator);
    EXPECT_THROW(w.write_sample(t.other, 400, t.context, 1, t.generator), std::logic_error)
        << "another writer's location";
    w.add_clock_offset(t.own, 100, 0, 0);
    w.add_clock_offset(t.other, 100, 0, 0);
    w.close({});
  }
  EXPECT_EQ(group.gathers, 1) << "the locations' totals, once";
  ArchiveReader reader(dir.path());
  const Archive& a = reader.archive();
  ASSERT_EQ(a.threads.size(), 2u);
  EXPECT_EQ(a.threads.at(0).events, 3u);
  EXPECT_EQ(a.threads.at(1).events, 4u) << "counted by the other writer";
  EXPECT_EQ(a.threads.at(1).properties.at(property::kOutOfOrderEvents), 2u) << "as the other writer counted";
  EXPECT_EQ(a.threads.at(1).properties.at(property::kOutOfOrderNs), 30u);
  EXPECT_EQ(a.threads.at(0).properties.count(property::kOutOfOrderEvents), 0u) << "none moved";
  EXPECT_EQ(a.clock.global_offset, 50u) << "the range covers every writer's events";
  EXPECT_EQ(a.clock.trace_length, 850u);
  EXPECT_TRUE(fs::exists(dir / "traces/0.evt"));
  EXPECT_TRUE(fs::exists(dir / "traces/0.def"));
  EXPECT_FALSE(fs::exists(dir / "traces/1.evt")) << "the other writer's file";
  EXPECT_FALSE(fs::exists(dir / "traces/1.def"));
}

// A writer other than the master defines no process or location: it
// adopts the master's refs of its own locations (here location 1, the
// master's second) and writes their events and local definitions only.
TEST(CollectiveWriter, AnotherWriterAdoptsItsLocationsAndLeavesTheGlobalDefinitionsToTheMaster) {
  TempDir dir;
  PretendGroup group(false);
  {
    ArchiveWriter w({.directory = dir.path(), .collective = &group});
    const uint32_t context =
        w.define_calling_context(w.define_region("main", "a.c", 0, Paradigm::kSampling), kUndefined, kUndefined);
    EXPECT_THROW(w.define_thread(0, "main thread"), std::logic_error) << "the master's";
    w.adopt({{{1, false}}, 1, 0});
    EXPECT_THROW(w.adopt({{{2, false}}, 1, 0}), std::logic_error) << "once";
    w.write_sample(1, 100, context, 1, 0);
    EXPECT_THROW(w.write_sample(0, 200, context, 1, 0), std::invalid_argument) << "not this writer's location";
    EXPECT_THROW(w.write_sample(1, 200, context, 1, 1), std::invalid_argument) << "an interrupt generator the master did not define";
    EXPECT_THROW(w.check_comm(0), std::invalid_argument) << "no communicator adopted";
    w.add_clock_offset(1, 100, 0, 0);
    w.close({});
  }
  EXPECT_EQ(group.gathers, 1) << "its totals, to the master";
  EXPECT_TRUE(fs::exists(dir / "traces/1.evt")) << "named by the master's ref";
  EXPECT_TRUE(fs::exists(dir / "traces/1.def"));
  EXPECT_FALSE(fs::exists(dir / "traces/0.evt"));
  EXPECT_FALSE(fs::exists(dir / "traces.def")) << "global definitions are the master's";
}

TEST(CollectiveWriter, OnlyAnotherWriterAdopts) {
  TempDir dir;
  PretendGroup group(true);
  ArchiveWriter w({.directory = dir.path(), .collective = &group});
  EXPECT_THROW(w.adopt({{{0, false}}, 1, 0}), std::logic_error) << "the master defines its locations";
  w.abandon();
}

TEST(CollectiveWriter, AbandonedWritesNoDefinitions) {
  TempDir dir;
  PretendGroup group(true);
  ArchiveWriter w({.directory = dir.path(), .collective = &group});
  const TwoThreads t = define(w);
  w.write_sample(t.own, 100, t.context, 1, t.generator);
  w.abandon();
  EXPECT_FALSE(fs::exists(dir / "traces.def"));
  EXPECT_THROW(w.write_sample(t.own, 200, t.context, 1, t.generator), std::logic_error);
}

TEST(CollectiveWriter, RemoteLocationsNeedACollective) {
  TempDir dir;
  ArchiveWriter w({.directory = dir.path()});
  const uint64_t loc = w.define_thread(w.define_process("p", w.define_system_tree_node("h", "node", kUndefined)), "t");
  EXPECT_THROW(w.set_thread_remote(loc), std::logic_error);
  w.close({});
}

}  // namespace
}  // namespace hybridprof::otf2
