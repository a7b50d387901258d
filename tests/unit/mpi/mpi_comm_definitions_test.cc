// MPI's communicators in the archive (mpi_comm_definitions.cc), from the
// definitions of several ranks into a recording sink: one communicator per
// key across ranks, the world's members implied, one self for all, and a
// definition that cannot be right left undefined rather than failing the
// archive.
#include <gtest/gtest.h>

#include <map>

#include "mpi/mpi_events.h"
#include "mpi/mpi_otf2_events.h"
#include "sink/recording_sink.h"

namespace hybridprof::mpi {
namespace {

using Process = sink::DefinitionSetWriter::Process;
constexpr otf2::Paradigm kMpi = otf2::Paradigm::kMpi;

struct Rank {
  std::vector<raw::Definition> definitions;
  std::map<uint32_t, uint32_t> refs;
  std::map<uint32_t, uint64_t> locations;
};

void define(std::vector<Rank>& ranks, const std::vector<uint64_t>& job_locations, sink::RecordingSink& sink) {
  std::vector<Process> processes;
  for (size_t i = 0; i < ranks.size(); ++i) {
    Process p{raw::JobRank{uint32_t(i), uint32_t(job_locations.size())}, &ranks[i].locations, {}, &ranks[i].refs};
    for (const raw::Definition& d : ranks[i].definitions) p.definitions.push_back(&d);
    processes.push_back(p);
  }
  comm_definition_writer().define(processes, job_locations, sink);
}

// What MPI_Init makes every rank define.
std::vector<raw::Definition> predefined(uint32_t rank) {
  return {definition_of({0, kCommWorldKey, kNoParentComm, "MPI_COMM_WORLD", {}}),
          definition_of({1, kCommSelfKey, kNoParentComm, "MPI_COMM_SELF", {rank}})};
}

TEST(MpiCommDefinitions, OneCommunicatorPerKeyAcrossRanks) {
  // Ranks 0 and 2 of 3 split off {0, 2} under one key; rank 0 also has a
  // communicator only it knows. Rank 1's data is missing (a placeholder location).
  std::vector<Rank> ranks(2);
  const uint64_t split_key = (1ull << 32) | 1;
  ranks[0].definitions = predefined(0);
  ranks[0].definitions.push_back(definition_of({2, split_key, 0, "MPI_Comm_split", {0, 2}}));
  ranks[0].definitions.push_back(definition_of({3, (1ull << 63) | 5, kNoParentComm, "communicator", {0}}));
  ranks[1].definitions = predefined(2);
  ranks[1].definitions.push_back(definition_of({4, split_key, 0, "MPI_Comm_split", {0, 2}}));
  sink::RecordingSink sink;
  define(ranks, {10, 11, 12}, sink);

  EXPECT_EQ(sink.comm_locations.at(kMpi), (std::vector<uint64_t>{10, 11, 12}));
  ASSERT_EQ(sink.comms.size(), 4u) << "world, self, split, rank 0's own";
  const auto& world = sink.comms.at(ranks[0].refs.at(0));
  EXPECT_EQ(world.name, "MPI_COMM_WORLD");
  EXPECT_EQ(world.members, (std::vector<uint32_t>{0, 1, 2})) << "every rank, in order";
  EXPECT_EQ(world.paradigm, kMpi);
  EXPECT_TRUE(sink.comms.at(ranks[0].refs.at(1)).self);
  EXPECT_EQ(ranks[0].refs.at(1), ranks[1].refs.at(1)) << "one self for all ranks";
  EXPECT_EQ(ranks[0].refs.at(0), ranks[1].refs.at(0));
  EXPECT_EQ(ranks[0].refs.at(2), ranks[1].refs.at(4)) << "same key, same communicator, whatever its local id";
  const auto& split = sink.comms.at(ranks[0].refs.at(2));
  EXPECT_EQ(split.members, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(split.parent, ranks[0].refs.at(0)) << "made from the world";
  EXPECT_EQ(sink.comms.at(ranks[0].refs.at(3)).members, std::vector<uint32_t>{0});
}

TEST(MpiCommDefinitions, ADefinitionThatCannotBeRightIsLeftUndefined) {
  std::vector<Rank> ranks(1);
  ranks[0].definitions = predefined(0);
  ranks[0].definitions.push_back(definition_of({2, 77, 0, "beyond the world", {0, 5}}));
  ranks[0].definitions.push_back(raw::Definition{std::string(kEventSetName), 3, "too short", {77}});
  ranks[0].definitions.push_back(raw::Definition{std::string(kEventSetName), 4, "member too wide", {78, 0, 1ull << 40}});
  sink::RecordingSink sink;
  define(ranks, {10, 11}, sink);
  EXPECT_EQ(ranks[0].refs.count(0), 1u);
  EXPECT_EQ(ranks[0].refs.count(2), 0u) << "rank 5 of a world of 2";
  EXPECT_EQ(ranks[0].refs.count(3), 0u);
  EXPECT_EQ(ranks[0].refs.count(4), 0u);
  EXPECT_EQ(sink.comms.size(), 2u);
}

TEST(MpiCommDefinitions, WithoutJobRanksNothingIsDefined) {
  std::vector<Rank> ranks(1);
  ranks[0].definitions = predefined(0);
  sink::RecordingSink sink;
  define(ranks, {}, sink);
  EXPECT_TRUE(sink.comms.empty());
  EXPECT_TRUE(sink.comm_locations.empty());
  EXPECT_TRUE(ranks[0].refs.empty()) << "the events naming them are skipped and counted";
}

TEST(MpiCommDefinitions, ACommunicatorRoundTripsThroughItsDefinition) {
  const CommDefinition c{7, (3ull << 32) | 2, 1, "MPI_Comm_dup", {4, 1, 0}};
  const raw::Definition d = definition_of(c);
  EXPECT_EQ(d.set, kEventSetName);
  EXPECT_EQ(comm_of(d), c);
  raw::Definition other = d;
  other.set = "openmp";
  EXPECT_FALSE(comm_of(other).has_value()) << "another set's definition is not a communicator";
}

}  // namespace
}  // namespace hybridprof::mpi
