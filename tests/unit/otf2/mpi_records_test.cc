// MPI records, communicators, traced calling contexts and clock offsets:
// written by ArchiveWriter, read back by ArchiveReader (and otf2-print).
#include <gtest/gtest.h>

#include <stdexcept>

#include "otf2/archive_reader.h"
#include "test_support.h"

namespace hybridprof::otf2 {
namespace {

using testing::TempDir;

struct TwoRanks {
  uint64_t r0 = 0, r1 = 0;
  uint32_t world = 0, self = 0, pair = 0, c_main = 0, c_send = 0;
};

// Two ranks, one thread each; rank 0 sends to rank 1 blocking and
// non-blocking, both join a collective and a non-blocking one.
TwoRanks write_two_ranks(const std::string& dir, bool enter_leave = false) {
  TwoRanks k;
  ArchiveWriter w({.directory = dir, .enter_leave = enter_leave});
  const uint32_t node = w.define_system_tree_node("h", "node", kUndefined);
  k.r0 = w.define_thread(w.define_process("rank 0", node), "main thread");
  k.r1 = w.define_thread(w.define_process("rank 1", node), "main thread");
  w.define_mpi_world({k.r0, k.r1});
  k.world = w.define_comm("MPI_COMM_WORLD", {0, 1}, kUndefined);
  k.self = w.define_comm_self();
  EXPECT_EQ(w.define_comm_self(), k.self);
  k.pair = w.define_comm("MPI_Comm_split", {1, 0}, k.world);
  const uint32_t main = w.define_region("main", "m.c", 1, Paradigm::kSampling);
  const uint32_t send = w.define_region("MPI_Send", "", 0, Paradigm::kMpi);
  k.c_main = w.define_calling_context(main, kUndefined, kUndefined);
  k.c_send = w.define_calling_context(send, kUndefined, k.c_main);
  w.write_context_enter(k.r0, 10, k.c_send, 2);
  w.write_mpi_send(k.r0, 10, 1, k.world, 7, 2048);
  w.write_context_leave(k.r0, 12, k.c_send);
  w.write_mpi_isend(k.r0, 20, 0, k.pair, 8, 64, 5);
  w.write_mpi_request_test(k.r0, 21, 5);
  w.write_mpi_isend_complete(k.r0, 22, 5);
  w.write_mpi_recv(k.r1, 11, 0, k.world, 7, 2048);
  w.write_mpi_irecv_request(k.r1, 19, 9);
  w.write_mpi_irecv(k.r1, 23, 1, k.pair, 8, 64, 9);
  w.write_mpi_request_cancelled(k.r1, 24, 10);
  for (uint64_t r : {k.r0, k.r1}) {
    w.write_mpi_collective_begin(r, 30);
    w.write_mpi_collective_end(r, 31, CollectiveOp::kBcast, k.world, 0, r == k.r0 ? 400 : 0, r == k.r0 ? 0 : 400);
    w.write_nonblocking_collective_request(r, 40, 77);
    w.write_nonblocking_collective_complete(r, 41, CollectiveOp::kAllreduce, k.self, kRootNone, 8, 8, 77);
  }
  w.add_clock_offset(k.r1, 0, 1000, 5.0);
  w.close({});
  return k;
}

TEST(MpiRecords, EveryKindComesBackWithItsFields) {
  TempDir dir;
  const TwoRanks k = write_two_ranks(dir.path());
  ArchiveReader reader(dir.path());
  std::vector<MpiEvent> events;
  std::vector<RegionEvent> regions;
  reader.read_events({}, [&](const RegionEvent& e) { regions.push_back(e); },
                     [&](const MpiEvent& e) { events.push_back(e); });
  ASSERT_EQ(events.size(), 16u);
  auto find = [&](MpiEventKind kind, uint64_t location) -> const MpiEvent& {
    for (const auto& e : events)
      if (e.kind == kind && e.location == location) return e;
    throw std::runtime_error("missing event");
  };
  const MpiEvent& send = find(MpiEventKind::kSend, k.r0);
  EXPECT_EQ(send.peer, 1u);
  EXPECT_EQ(send.comm, k.world);
  EXPECT_EQ(send.tag, 7u);
  EXPECT_EQ(send.bytes, 2048u);
  EXPECT_EQ(send.timestamp, 10u);
  const MpiEvent& isend = find(MpiEventKind::kIsend, k.r0);
  EXPECT_EQ(isend.comm, k.pair);
  EXPECT_EQ(isend.request, 5u);
  EXPECT_EQ(find(MpiEventKind::kIsendComplete, k.r0).request, 5u);
  EXPECT_EQ(find(MpiEventKind::kRequestTest, k.r0).request, 5u);
  const MpiEvent& recv = find(MpiEventKind::kRecv, k.r1);
  EXPECT_EQ(recv.peer, 0u);
  EXPECT_EQ(recv.bytes, 2048u);
  const MpiEvent& irecv = find(MpiEventKind::kIrecv, k.r1);
  EXPECT_EQ(irecv.peer, 1u);
  EXPECT_EQ(irecv.tag, 8u);
  EXPECT_EQ(irecv.request, 9u);
  EXPECT_EQ(find(MpiEventKind::kIrecvRequest, k.r1).request, 9u);
  EXPECT_EQ(find(MpiEventKind::kRequestCancelled, k.r1).request, 10u);
  const MpiEvent& bcast = find(MpiEventKind::kCollectiveEnd, k.r0);
  EXPECT_EQ(bcast.op, CollectiveOp::kBcast);
  EXPECT_EQ(bcast.peer, 0u);
  EXPECT_EQ(bcast.sent, 400u);
  EXPECT_EQ(find(MpiEventKind::kCollectiveEnd, k.r1).received, 400u);
  const MpiEvent& nbc = find(MpiEventKind::kNonBlockingCollectiveComplete, k.r1);
  EXPECT_EQ(nbc.op, CollectiveOp::kAllreduce);
  EXPECT_EQ(nbc.peer, kRootNone);
  EXPECT_EQ(nbc.comm, k.self);
  EXPECT_EQ(nbc.request, 77u);
  EXPECT_EQ(find(MpiEventKind::kNonBlockingCollectiveRequest, k.r0).request, 77u);
  // The traced call: a calling-context enter/leave of MPI_Send under main.
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_TRUE(regions[0].enter);
  EXPECT_EQ(regions[0].context, k.c_send);
  EXPECT_EQ(reader.archive().regions.at(regions[0].region).name, "MPI_Send");
  EXPECT_FALSE(regions[1].enter);
  EXPECT_EQ(regions[1].timestamp, 12u);
}

TEST(MpiRecords, CommunicatorsKeepMembersParentsAndSelf) {
  TempDir dir;
  const TwoRanks k = write_two_ranks(dir.path());
  ArchiveReader reader(dir.path());
  const Archive& a = reader.archive();
  EXPECT_EQ(a.mpi_world_locations, (std::vector<uint64_t>{k.r0, k.r1}));
  ASSERT_EQ(a.comms.size(), 3u);
  EXPECT_EQ(a.comms.at(k.world).name, "MPI_COMM_WORLD");
  EXPECT_EQ(a.comms.at(k.world).world_ranks, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(a.comms.at(k.world).parent, kUndefined);
  EXPECT_TRUE(a.comms.at(k.self).self);
  EXPECT_EQ(a.comms.at(k.pair).world_ranks, (std::vector<uint32_t>{1, 0})) << "communicator rank order";
  EXPECT_EQ(a.comms.at(k.pair).parent, k.world);
}

TEST(MpiRecords, ClockOffsetsAreInTheLocationsLocalDefinitions) {
  TempDir dir;
  write_two_ranks(dir.path());
  const testing::CommandResult r = testing::run_command("otf2-print -C " + dir.path() + "/traces.otf2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1000"), std::string::npos) << "rank 1's offset: " << r.output;
}

TEST(MpiRecords, MisuseIsRefused) {
  TempDir dir;
  ArchiveWriter w({.directory = dir.path()});
  const uint64_t t = w.define_thread(w.define_process("p", w.define_system_tree_node("h", "node", kUndefined)), "t");
  EXPECT_THROW(w.define_comm("c", {0}, kUndefined), std::logic_error) << "before define_mpi_world";
  w.define_mpi_world({t});
  EXPECT_THROW(w.define_mpi_world({t}), std::logic_error);
  EXPECT_THROW(w.define_comm("c", {1}, kUndefined), std::invalid_argument) << "rank 1 of a world of 1";
  EXPECT_THROW(w.write_mpi_send(t, 1, 0, 3, 0, 0), std::invalid_argument) << "unknown communicator";
  EXPECT_THROW(w.define_mpi_world({t}), std::logic_error);
  w.close({});
}

TEST(MpiRecords, OtfPrintAcceptsTheArchive) {
  TempDir dir;
  write_two_ranks(dir.path());
  const testing::CommandResult r = testing::run_command("otf2-print " + dir.path() + "/traces.otf2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string& text = r.output;
  for (const char* record : {"MPI_SEND", "MPI_RECV", "MPI_ISEND", "MPI_IRECV", "MPI_COLLECTIVE_END",
                             "CALLING_CONTEXT_ENTER", "NON_BLOCKING_COLLECTIVE_COMPLETE"})
    EXPECT_NE(text.find(record), std::string::npos) << record;
}

TEST(MpiRecords, EnterLeaveModeKeepsMessagesForViewers) {
  TempDir dir;
  write_two_ranks(dir.path(), /*enter_leave=*/true);
  ArchiveReader reader(dir.path());
  size_t sends = 0, enters = 0;
  reader.read_events({}, [&](const RegionEvent& e) { enters += e.enter && e.context == kUndefined; },
                     [&](const MpiEvent& e) { sends += e.kind == MpiEventKind::kSend; });
  EXPECT_EQ(sends, 1u);
  EXPECT_EQ(enters, 2u) << "main and MPI_Send as plain Enter records";
}

}  // namespace
}  // namespace hybridprof::otf2
