// MPI records, communicators, traced calling contexts and clock offsets:
// written by ArchiveWriter (MPI's records through MPI's event-set writer,
// src/mpi/mpi_otf2_events.h, as the finalizer hands events to it), read
// back by ArchiveReader (and otf2-print).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "mpi/mpi_events.h"
#include "mpi/mpi_otf2_events.h"
#include "otf2/archive_reader.h"
#include "test_support.h"

namespace hybridprof::otf2 {

// Every field, so that a mismatch names the event. Static: the library
// defines no such operators, and ADL must find these in this namespace.
static bool operator==(const MpiEvent& a, const MpiEvent& b) {
  auto fields = [](const MpiEvent& e) {
    return std::tie(e.location, e.timestamp, e.kind, e.peer, e.comm, e.tag, e.bytes, e.sent, e.received, e.op,
                    e.request);
  };
  return fields(a) == fields(b);
}
static void PrintTo(const MpiEvent& e, std::ostream* os) {
  *os << "{loc " << e.location << " t " << e.timestamp << " kind " << int(e.kind) << " peer " << e.peer << " comm "
      << e.comm << " tag " << e.tag << " bytes " << e.bytes << " sent " << e.sent << " received " << e.received
      << " op " << collective_op_name(e.op) << " request " << e.request << "}";
}

namespace {

using testing::TempDir;
using Kind = ::hybridprof::mpi::EventKind;

// One MPI event as the finalizer writes it: through the set's writer, with
// the archive's comm refs standing for themselves.
void write_mpi(ArchiveWriter& w, uint64_t loc, uint64_t t, Kind kind, ::hybridprof::mpi::EventFields f) {
  const std::map<uint32_t, uint32_t> comms{{f.comm, f.comm}};
  const EventSetWriter::Refs refs{&comms};
  const EventSetWriter& writer = ::hybridprof::mpi::otf2_event_writer();
  const EventPayload payload = ::hybridprof::mpi::payload_of(f);
  ASSERT_TRUE(writer.writable(uint32_t(kind), payload, refs));
  writer.write(w, loc, t, uint32_t(kind), payload, refs);
}
void write_mpi_send(ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t receiver, uint32_t comm, uint32_t tag,
                    uint64_t bytes) {
  write_mpi(w, loc, t, Kind::kSend, {comm, receiver, tag, 0, bytes});
}
void write_mpi_recv(ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t sender, uint32_t comm, uint32_t tag,
                    uint64_t bytes) {
  write_mpi(w, loc, t, Kind::kRecv, {comm, sender, tag, 0, 0, bytes});
}
void write_mpi_isend(ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t receiver, uint32_t comm, uint32_t tag,
                     uint64_t bytes, uint64_t request) {
  write_mpi(w, loc, t, Kind::kIsend, {comm, receiver, tag, 0, bytes, 0, request});
}
void write_mpi_irecv(ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t sender, uint32_t comm, uint32_t tag,
                     uint64_t bytes, uint64_t request) {
  write_mpi(w, loc, t, Kind::kIrecv, {comm, sender, tag, 0, 0, bytes, request});
}
void write_request(ArchiveWriter& w, uint64_t loc, uint64_t t, Kind kind, uint64_t request) {
  write_mpi(w, loc, t, kind, {0, 0, 0, 0, 0, 0, request});
}
void write_mpi_isend_complete(ArchiveWriter& w, uint64_t loc, uint64_t t, uint64_t request) {
  write_request(w, loc, t, Kind::kIsendComplete, request);
}
void write_mpi_irecv_request(ArchiveWriter& w, uint64_t loc, uint64_t t, uint64_t request) {
  write_request(w, loc, t, Kind::kIrecvRequest, request);
}
void write_mpi_request_test(ArchiveWriter& w, uint64_t loc, uint64_t t, uint64_t request) {
  write_request(w, loc, t, Kind::kRequestTest, request);
}
void write_mpi_request_cancelled(ArchiveWriter& w, uint64_t loc, uint64_t t, uint64_t request) {
  write_request(w, loc, t, Kind::kRequestCancelled, request);
}
void write_nonblocking_collective_request(ArchiveWriter& w, uint64_t loc, uint64_t t, uint64_t request) {
  write_request(w, loc, t, Kind::kNonBlockingCollectiveRequest, request);
}
void write_mpi_collective_begin(ArchiveWriter& w, uint64_t loc, uint64_t t) {
  write_mpi(w, loc, t, Kind::kCollectiveBegin, {});
}
void write_mpi_collective_end(ArchiveWriter& w, uint64_t loc, uint64_t t, CollectiveOp op, uint32_t comm,
                              uint32_t root, uint64_t sent, uint64_t received) {
  write_mpi(w, loc, t, Kind::kCollectiveEnd, {comm, root, 0, uint32_t(op), sent, received});
}
void write_nonblocking_collective_complete(ArchiveWriter& w, uint64_t loc, uint64_t t, CollectiveOp op,
                                           uint32_t comm, uint32_t root, uint64_t sent, uint64_t received,
                                           uint64_t request) {
  write_mpi(w, loc, t, Kind::kNonBlockingCollectiveComplete, {comm, root, 0, uint32_t(op), sent, received, request});
}

MpiEvent event(uint64_t location, uint64_t timestamp, MpiEventKind kind) {
  MpiEvent e;
  e.location = location;
  e.timestamp = timestamp;
  e.kind = kind;
  return e;
}

// Two ranks, one thread each. Rank 0 sends to rank 1 blocking and
// non-blocking, both join a bcast and a non-blocking allreduce, rank 1
// creates a window. `expected` is what the reader must hand back, per
// location in time order.
struct TwoRanks {
  uint64_t r0 = 0, r1 = 0;
  uint32_t world = 0, self = 0, split = 0, dup = 0;
  uint32_t main = 0, send = 0, progress = 0;              // regions
  uint32_t c_main = 0, c_send = 0, c_progress = 0;        // calling contexts
  std::vector<MpiEvent> expected;
};

TwoRanks write_two_ranks(const std::string& dir, bool enter_leave = false) {
  TwoRanks k;
  ArchiveWriter w({.directory = dir, .enter_leave = enter_leave});
  const uint32_t node = w.define_system_tree_node("h", "node", kUndefined);
  k.r0 = w.define_thread(w.define_process("rank 0", node), "main thread");
  k.r1 = w.define_thread(w.define_process("rank 1", node), "main thread");
  w.define_comm_locations(Paradigm::kMpi, {k.r0, k.r1});
  k.self = w.define_comm_self(Paradigm::kMpi, "MPI_COMM_SELF");
  k.world = w.define_comm(Paradigm::kMpi, "MPI_COMM_WORLD", {0, 1}, kUndefined);
  EXPECT_EQ(w.define_comm_self(Paradigm::kMpi, "MPI_COMM_SELF"), k.self);
  k.split = w.define_comm(Paradigm::kMpi, "split", {1, 0}, k.world);
  k.dup = w.define_comm(Paradigm::kMpi, "dup of split", {1, 0}, k.split);
  k.main = w.define_region("main", "m.c", 1, Paradigm::kSampling);
  k.send = w.define_region("MPI_Send", "", 0, Paradigm::kMpi);
  k.progress = w.define_region("progress", "libmpi.c", 9, Paradigm::kSampling);
  k.c_main = w.define_calling_context(k.main, kUndefined, kUndefined);
  k.c_send = w.define_calling_context(k.send, kUndefined, k.c_main);
  k.c_progress = w.define_calling_context(k.progress, kUndefined, k.c_send);

  auto add = [&](MpiEvent e) { k.expected.push_back(e); };
  MpiEvent e;
  // rank 0
  w.write_sample(k.r0, 5, k.c_main, 1, kUndefined);
  w.write_context_enter(k.r0, 10, k.c_send, 2);
  write_mpi_send(w, k.r0, 11, 1, k.world, 7, 2048);
  e = event(k.r0, 11, MpiEventKind::kSend), e.peer = 1, e.comm = k.world, e.tag = 7, e.bytes = 2048, add(e);
  w.write_sample(k.r0, 12, k.c_progress, 1, kUndefined);
  w.write_context_leave(k.r0, 13, k.c_send);
  write_mpi_isend(w, k.r0, 20, 0, k.split, 8, 64, 5);
  e = event(k.r0, 20, MpiEventKind::kIsend), e.peer = 0, e.comm = k.split, e.tag = 8, e.bytes = 64, e.request = 5;
  add(e);
  write_mpi_request_test(w, k.r0, 21, 5);
  e = event(k.r0, 21, MpiEventKind::kRequestTest), e.request = 5, add(e);
  write_mpi_isend_complete(w, k.r0, 22, 5);
  e = event(k.r0, 22, MpiEventKind::kIsendComplete), e.request = 5, add(e);
  // rank 1
  write_mpi_recv(w, k.r1, 11, 0, k.world, 7, 2048);
  e = event(k.r1, 11, MpiEventKind::kRecv), e.peer = 0, e.comm = k.world, e.tag = 7, e.bytes = 2048, add(e);
  write_mpi_irecv_request(w, k.r1, 19, 9);
  e = event(k.r1, 19, MpiEventKind::kIrecvRequest), e.request = 9, add(e);
  write_mpi_irecv(w, k.r1, 23, 1, k.dup, 8, 64, 9);
  e = event(k.r1, 23, MpiEventKind::kIrecv), e.peer = 1, e.comm = k.dup, e.tag = 8, e.bytes = 64, e.request = 9;
  add(e);
  write_mpi_irecv_request(w, k.r1, 24, 10);
  e = event(k.r1, 24, MpiEventKind::kIrecvRequest), e.request = 10, add(e);
  write_mpi_request_cancelled(w, k.r1, 25, 10);
  e = event(k.r1, 25, MpiEventKind::kRequestCancelled), e.request = 10, add(e);
  // both
  for (uint64_t r : {k.r0, k.r1}) {
    const bool root = r == k.r0;
    write_mpi_collective_begin(w, r, 30);
    add(event(r, 30, MpiEventKind::kCollectiveBegin));
    write_mpi_collective_end(w, r, 31, CollectiveOp::kBcast, k.world, 0, root ? 400 : 0, root ? 0 : 400);
    e = event(r, 31, MpiEventKind::kCollectiveEnd), e.op = CollectiveOp::kBcast, e.comm = k.world, e.peer = 0;
    e.sent = root ? 400 : 0, e.received = root ? 0 : 400, add(e);
    write_nonblocking_collective_request(w, r, 40, 77 + r);
    e = event(r, 40, MpiEventKind::kNonBlockingCollectiveRequest), e.request = 77 + r, add(e);
    write_nonblocking_collective_complete(w, r, 41, CollectiveOp::kAllreduce, k.split, kRootNone, 8, 16, 77 + r);
    e = event(r, 41, MpiEventKind::kNonBlockingCollectiveComplete), e.op = CollectiveOp::kAllreduce;
    e.comm = k.split, e.peer = kRootNone, e.sent = 8, e.received = 16, e.request = 77 + r, add(e);
  }
  write_mpi_collective_begin(w, k.r1, 50);
  add(event(k.r1, 50, MpiEventKind::kCollectiveBegin));
  write_mpi_collective_end(w, k.r1, 51, CollectiveOp::kDestroyHandleAndDeallocate, k.self, kRootNone, 0, 0);
  e = event(k.r1, 51, MpiEventKind::kCollectiveEnd), e.op = CollectiveOp::kDestroyHandleAndDeallocate;
  e.comm = k.self, e.peer = kRootNone, add(e);
  w.close({});
  std::stable_sort(k.expected.begin(), k.expected.end(),
                   [](const MpiEvent& a, const MpiEvent& b) { return a.location < b.location; });
  return k;
}

struct Read {
  std::vector<MpiEvent> mpi;
  std::vector<RegionEvent> regions;
  std::vector<SampleEvent> samples;
  // One stream per location in file order: 'S'ample, 'E'nter, 'L'eave, 'M'pi.
  std::vector<std::pair<char, uint64_t>> order;  // (what, timestamp), all locations
};
Read read_all(ArchiveReader& reader) {
  Read r;
  reader.read_events([&](const SampleEvent& e) { r.samples.push_back(e), r.order.push_back({'S', e.timestamp}); },
                     [&](const RegionEvent& e) {
                       r.regions.push_back(e), r.order.push_back({e.enter ? 'E' : 'L', e.timestamp});
                     },
                     [&](const MpiEvent& e) { r.mpi.push_back(e), r.order.push_back({'M', e.timestamp}); });
  return r;
}

TEST(MpiRecords, EveryKindComesBackWithAllItsFields) {
  TempDir dir;
  const TwoRanks k = write_two_ranks(dir.path());
  ArchiveReader reader(dir.path());
  const Read r = read_all(reader);
  EXPECT_EQ(r.mpi, k.expected);
  std::vector<bool> seen(12);
  for (const MpiEvent& e : r.mpi) seen[size_t(e.kind)] = true;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 12) << "all twelve MpiEventKinds";
}

TEST(MpiRecords, TracedCallsComeBackAsContextEnterLeaveWithTheirRegion) {
  TempDir dir;
  const TwoRanks k = write_two_ranks(dir.path());
  ArchiveReader reader(dir.path());
  const Read r = read_all(reader);
  ASSERT_EQ(r.regions.size(), 2u);
  EXPECT_TRUE(r.regions[0].enter);
  EXPECT_EQ(r.regions[0].location, k.r0);
  EXPECT_EQ(r.regions[0].timestamp, 10u);
  EXPECT_EQ(r.regions[0].region, k.send);
  EXPECT_EQ(r.regions[0].context, k.c_send);
  EXPECT_EQ(reader.archive().regions.at(r.regions[0].region).name, "MPI_Send");
  EXPECT_EQ(reader.archive().regions.at(r.regions[0].region).paradigm, Paradigm::kMpi);
  EXPECT_FALSE(r.regions[1].enter);
  EXPECT_EQ(r.regions[1].timestamp, 13u);
  EXPECT_EQ(r.regions[1].region, k.send);
  EXPECT_EQ(r.regions[1].context, k.c_send);
  // The sample inside the call descends from the call's context.
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(reader.archive().context_path(r.samples[1].context),
            (std::vector<uint32_t>{k.c_main, k.c_send, k.c_progress}));
  // Rank 0's stream: sample, enter, send, sample, leave, then the rest.
  std::vector<std::pair<char, uint64_t>> head(r.order.begin(), r.order.begin() + 5);
  EXPECT_EQ(head, (std::vector<std::pair<char, uint64_t>>{{'S', 5}, {'E', 10}, {'M', 11}, {'S', 12}, {'L', 13}}));
}

TEST(MpiRecords, CommunicatorsKeepMembersParentsAndSelf) {
  TempDir dir;
  const TwoRanks k = write_two_ranks(dir.path());
  ArchiveReader reader(dir.path());
  const Archive& a = reader.archive();
  EXPECT_EQ(a.comm_locations.at(Paradigm::kMpi), (std::vector<uint64_t>{k.r0, k.r1}));
  ASSERT_EQ(a.comms.size(), 4u);
  const CommInfo& world = a.comms.at(k.world);
  EXPECT_EQ(world.name, "MPI_COMM_WORLD");
  EXPECT_EQ(world.members, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(world.paradigm, Paradigm::kMpi);
  EXPECT_EQ(world.parent, kUndefined);
  EXPECT_FALSE(world.self);
  const CommInfo& self = a.comms.at(k.self);
  EXPECT_TRUE(self.self);
  EXPECT_TRUE(self.members.empty());
  EXPECT_EQ(self.parent, kUndefined);
  const CommInfo& split = a.comms.at(k.split);
  EXPECT_EQ(split.name, "split");
  EXPECT_EQ(split.members, (std::vector<uint32_t>{1, 0})) << "communicator rank order";
  EXPECT_EQ(split.parent, k.world);
  EXPECT_FALSE(split.self);
  // Same members, another communicator.
  EXPECT_NE(k.dup, k.split);
  EXPECT_EQ(a.comms.at(k.dup).name, "dup of split");
  EXPECT_EQ(a.comms.at(k.dup).members, split.members);
  EXPECT_EQ(a.comms.at(k.dup).parent, k.split);
}

TEST(MpiRecords, Otf2PrintAcceptsTheArchiveAndSharesEqualGroups) {
  TempDir dir;
  write_two_ranks(dir.path());
  const testing::CommandResult r = testing::run_command("otf2-print -A -Werror " + dir.path() + "/traces.otf2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string& text = r.output;
  for (const char* record : {"MPI_SEND ", "MPI_RECV ", "MPI_ISEND ", "MPI_ISEND_COMPLETE", "MPI_IRECV_REQUEST",
                             "MPI_IRECV ", "MPI_REQUEST_TEST", "MPI_REQUEST_CANCELLED", "MPI_COLLECTIVE_BEGIN",
                             "MPI_COLLECTIVE_END", "NON_BLOCKING_COLLECTIVE_REQUEST",
                             "NON_BLOCKING_COLLECTIVE_COMPLETE", "CALLING_CONTEXT_ENTER", "CALLING_CONTEXT_LEAVE"})
    EXPECT_NE(text.find(record), std::string::npos) << record << " in\n" << text;
  // Groups: the world's locations, {0,1}, {1,0} (shared by split and dup), self.
  size_t groups = 0;
  for (size_t at = 0; (at = text.find("\nGROUP ", at)) != std::string::npos; ++at) ++groups;
  EXPECT_EQ(groups, 4u) << text;
  size_t comms = 0;
  for (size_t at = 0; (at = text.find("\nCOMM ", at)) != std::string::npos; ++at) ++comms;
  EXPECT_EQ(comms, 4u) << text;
  EXPECT_NE(text.find("COMM_LOCATIONS"), std::string::npos) << text;
  EXPECT_NE(text.find("COMM_SELF"), std::string::npos) << text;
}

// Each paradigm has its own locations; a communicator's members index its
// own paradigm's (an OpenMP thread team of one process beside MPI's world),
// in both forms: OTF2's, and the viewer form that writes members as
// locations.
TEST(MpiRecords, CommunicatorsOfTwoParadigmsIndexTheirOwnLocations) {
  for (const bool enter_leave : {false, true}) {
    TempDir dir;
    uint64_t r0, r1, worker;
    uint32_t world, team, self;
    {
      ArchiveWriter w({.directory = dir.path(), .enter_leave = enter_leave});
      const uint32_t node = w.define_system_tree_node("h", "node", kUndefined);
      const uint32_t p0 = w.define_process("rank 0", node);
      r0 = w.define_thread(p0, "main thread");
      worker = w.define_thread(p0, "worker");
      r1 = w.define_thread(w.define_process("rank 1", node), "main thread");
      w.define_comm_locations(Paradigm::kMpi, {r0, r1});
      w.define_comm_locations(Paradigm::kOpenMp, {worker, r0});
      world = w.define_comm(Paradigm::kMpi, "MPI_COMM_WORLD", {0, 1}, kUndefined);
      team = w.define_comm(Paradigm::kOpenMp, "team", {1, 0}, kUndefined);
      self = w.define_comm_self(Paradigm::kMpi, "MPI_COMM_SELF");
      EXPECT_NE(w.define_comm_self(Paradigm::kOpenMp, "thread alone"), self) << "one per paradigm";
      for (uint64_t t : {r0, r1, worker}) w.end_thread(t, 1);
      w.close({});
    }
    if (!enter_leave) {  // the viewer form repeats COMM_LOCATIONS groups, which otf2-print refuses
      const testing::CommandResult printed =
          testing::run_command("otf2-print -A -Werror " + dir.path() + "/traces.otf2");
      EXPECT_EQ(printed.exit_code, 0) << printed.output;
    }
    ArchiveReader reader(dir.path());
    const Archive& a = reader.archive();
    EXPECT_EQ(a.comm_locations.at(Paradigm::kMpi), (std::vector<uint64_t>{r0, r1})) << enter_leave;
    EXPECT_EQ(a.comm_locations.at(Paradigm::kOpenMp), (std::vector<uint64_t>{worker, r0})) << enter_leave;
    EXPECT_EQ(a.comms.at(team).paradigm, Paradigm::kOpenMp);
    EXPECT_EQ(a.comms.at(world).paradigm, Paradigm::kMpi);
    EXPECT_TRUE(a.comms.at(self).self);
    if (enter_leave) {
      // Written as locations: the team's are its own paradigm's, in team order.
      EXPECT_EQ(a.comms.at(team).members, (std::vector<uint32_t>{uint32_t(r0), uint32_t(worker)}));
    } else {
      EXPECT_EQ(a.comms.at(team).members, (std::vector<uint32_t>{1, 0}));
      EXPECT_EQ(a.comms.at(world).members, (std::vector<uint32_t>{0, 1}));
    }
  }
}

// ViTE's mode: the traced call and the samples taken inside become plain,
// properly nested Enter/Leave; the MPI records stay, inside the call.
TEST(MpiRecords, EnterLeaveModeNestsTracedCallsAndKeepsMessages) {
  TempDir dir;
  const TwoRanks k = write_two_ranks(dir.path(), /*enter_leave=*/true);
  ArchiveReader reader(dir.path());
  const Read r = read_all(reader);
  EXPECT_EQ(r.mpi, k.expected) << "MPI records are written as they are";
  EXPECT_TRUE(r.samples.empty());
  struct Step {
    uint64_t time;
    uint32_t region;
    bool enter;
    bool operator==(const Step&) const = default;
  };
  std::vector<Step> steps;
  for (const RegionEvent& e : r.regions) {
    EXPECT_EQ(e.context, kUndefined) << "plain Enter/Leave";
    EXPECT_EQ(e.location, k.r0);
    steps.push_back({e.timestamp, e.region, e.enter});
  }
  EXPECT_EQ(steps, (std::vector<Step>{{5, k.main, true},
                                      {10, k.send, true},
                                      {12, k.progress, true},
                                      {13, k.progress, false},
                                      {13, k.send, false},
                                      {41, k.main, false}}));  // the thread's end: its last event
  std::vector<uint32_t> open;
  for (const Step& s : steps) {
    if (s.enter) {
      open.push_back(s.region);
    } else {
      ASSERT_FALSE(open.empty());
      EXPECT_EQ(open.back(), s.region) << "leave of the innermost open region at " << s.time;
      open.pop_back();
    }
  }
  EXPECT_TRUE(open.empty());
  // The send record lies inside MPI_Send's Enter/Leave.
  std::vector<std::pair<char, uint64_t>> head(r.order.begin(), r.order.begin() + 6);
  EXPECT_EQ(head, (std::vector<std::pair<char, uint64_t>>{{'E', 5}, {'E', 10}, {'M', 11}, {'E', 12}, {'L', 13},
                                                          {'L', 13}}));
}

TEST(MpiRecords, MisuseIsRefused) {
  TempDir dir;
  ArchiveWriter w({.directory = dir.path()});
  const uint64_t t = w.define_thread(w.define_process("p", w.define_system_tree_node("h", "node", kUndefined)), "t");
  const Paradigm mpi = Paradigm::kMpi;
  EXPECT_THROW(w.define_comm(mpi, "c", {0}, kUndefined), std::logic_error) << "before define_comm_locations";
  EXPECT_THROW(w.define_comm_self(mpi, "self"), std::logic_error) << "before define_comm_locations";
  EXPECT_THROW(w.define_comm_locations(mpi, {t, 5}), std::invalid_argument) << "unknown location";
  w.define_comm_locations(mpi, {t});
  EXPECT_THROW(w.define_comm_locations(mpi, {t}), std::logic_error) << "twice";
  EXPECT_THROW(w.define_comm(mpi, "c", {1}, kUndefined), std::invalid_argument) << "rank 1 of a world of 1";
  EXPECT_THROW(w.define_comm(mpi, "c", {0}, 0), std::invalid_argument) << "unknown parent";
  EXPECT_THROW(w.define_comm(Paradigm::kOpenMp, "team", {0}, kUndefined), std::logic_error)
      << "another paradigm's locations are not MPI's";
  const uint32_t world = w.define_comm(mpi, "world", {0}, kUndefined);
  const uint32_t bad = world + 1;
  EXPECT_THROW(write_mpi_send(w, t, 1, 0, bad, 0, 0), std::invalid_argument);
  EXPECT_THROW(write_mpi_recv(w, t, 1, 0, bad, 0, 0), std::invalid_argument);
  EXPECT_THROW(write_mpi_isend(w, t, 1, 0, bad, 0, 0, 1), std::invalid_argument);
  EXPECT_THROW(write_mpi_irecv(w, t, 1, 0, bad, 0, 0, 1), std::invalid_argument);
  EXPECT_THROW(write_mpi_collective_end(w, t, 1, CollectiveOp::kBarrier, bad, kRootNone, 0, 0),
               std::invalid_argument);
  EXPECT_THROW(write_nonblocking_collective_complete(w, t, 1, CollectiveOp::kBarrier, bad, kRootNone, 0, 0, 1),
               std::invalid_argument);
  EXPECT_THROW(write_mpi_send(w, t, 1, 0, kUndefined, 0, 0), std::invalid_argument);
  EXPECT_THROW(w.write_context_enter(t, 1, 0, 1), std::invalid_argument) << "unknown calling context";
  EXPECT_THROW(w.write_context_leave(t, 1, 0), std::invalid_argument) << "unknown calling context";
  EXPECT_THROW(write_mpi_send(w, 7, 1, 0, world, 0, 0), std::invalid_argument) << "unknown location";
  write_mpi_send(w, t, 1, 0, world, 0, 0);
  EXPECT_EQ(w.stats().events, 1u) << "refused records write nothing";
  EXPECT_THROW(w.add_clock_offset(9, 0, 1, 0), std::invalid_argument) << "unknown location";
  w.add_clock_offset(t, 100, 1, 0);
  EXPECT_THROW(w.add_clock_offset(t, 100, 2, 0), std::invalid_argument) << "same time twice";
  EXPECT_THROW(w.add_clock_offset(t, 50, 2, 0), std::invalid_argument) << "back in time";
  w.close({});
  EXPECT_THROW(w.define_comm_self(mpi, "self"), std::logic_error) << "after close";
}

TEST(MpiRecords, CollectiveOpNames) {
  EXPECT_STREQ(collective_op_name(CollectiveOp::kBarrier), "barrier");
  EXPECT_STREQ(collective_op_name(CollectiveOp::kReduceScatterBlock), "reduce_scatter_block");
  EXPECT_STREQ(collective_op_name(CollectiveOp::kDestroyHandleAndDeallocate), "destroy_handle_and_deallocate");
  EXPECT_STREQ(collective_op_name(static_cast<CollectiveOp>(200)), "unknown");
}

// What OTF2 does with ClockOffset definitions: its event reader adds the
// offset interpolated between a location's offsets to every event time.
struct ClockOffsetArchive {
  std::vector<uint64_t> times0, times1;  // event times read back per location
  ClockInfo clock;
};
ClockOffsetArchive write_with_offsets(const std::string& dir,
                                      const std::vector<std::tuple<uint64_t, int64_t>>& offsets_of_r1) {
  {
    ArchiveWriter w({.directory = dir});
    const uint32_t node = w.define_system_tree_node("h", "node", kUndefined);
    const uint64_t r0 = w.define_thread(w.define_process("rank 0", node), "t");
    const uint64_t r1 = w.define_thread(w.define_process("rank 1", node), "t");
    w.define_comm_locations(Paradigm::kMpi, {r0, r1});
    const uint32_t world = w.define_comm(Paradigm::kMpi, "MPI_COMM_WORLD", {0, 1}, kUndefined);
    for (uint64_t t : {1000, 1500, 2000, 3000}) {
      write_mpi_send(w, r0, t, 1, world, 0, 8);
      write_mpi_recv(w, r1, t, 0, world, 0, 8);
    }
    for (auto [time, offset] : offsets_of_r1) w.add_clock_offset(r1, time, offset, 2.5);
    w.close({});
  }
  ClockOffsetArchive a;
  ArchiveReader reader(dir);
  a.clock = reader.archive().clock;
  reader.read_events({}, {}, [&](const MpiEvent& e) { (e.location == 0 ? a.times0 : a.times1).push_back(e.timestamp); });
  return a;
}

TEST(ClockOffsets, TwoOffsetsAreInterpolatedIntoTheEventTimes) {
  TempDir dir;
  // Offset 500 at local time 1000, 1500 at 2000: +1 per tick in between,
  // extrapolated after.
  const ClockOffsetArchive a = write_with_offsets(dir.path(), {{1000, 500}, {2000, 1500}});
  EXPECT_EQ(a.times0, (std::vector<uint64_t>{1000, 1500, 2000, 3000})) << "no offsets: as written";
  EXPECT_EQ(a.times1, (std::vector<uint64_t>{1500, 2500, 3500, 5500}));
  // The default clock range covers the corrected times.
  EXPECT_EQ(a.clock.global_offset, 1000u);
  EXPECT_EQ(a.clock.trace_length, 4500u);
}

TEST(ClockOffsets, ConstantOffsetShiftsEveryEventByIt) {
  TempDir dir;
  const ClockOffsetArchive a = write_with_offsets(dir.path(), {{0, -400}, {5000, -400}});
  EXPECT_EQ(a.times1, (std::vector<uint64_t>{600, 1100, 1600, 2600}));
  EXPECT_EQ(a.clock.global_offset, 600u);
  EXPECT_EQ(a.clock.trace_length, 2400u);
}

TEST(ClockOffsets, ThreeOffsetsMakeTwoIntervals) {
  TempDir dir;
  // 0 until 1500, then +2 per tick (2000 at 2500, and on after it).
  const ClockOffsetArchive a = write_with_offsets(dir.path(), {{500, 0}, {1500, 0}, {2500, 2000}});
  EXPECT_EQ(a.times1, (std::vector<uint64_t>{1000, 1500, 2000 + 1000, 3000 + 2000 + 2 * 500}))
      << "after the last offset the last interval's slope goes on";
}

// Surprising but true of OTF2 3.0: one offset makes no interval, so nothing
// is corrected. The writer keeps it (other tools may read it) but readers
// ignore it.
TEST(ClockOffsets, ASingleOffsetIsIgnoredByOtf2Readers) {
  TempDir dir;
  const ClockOffsetArchive a = write_with_offsets(dir.path(), {{0, 1000}});
  EXPECT_EQ(a.times1, (std::vector<uint64_t>{1000, 1500, 2000, 3000}));
  EXPECT_EQ(a.clock.global_offset, 1000u);
  const testing::CommandResult r = testing::run_command("otf2-print -C " + dir.path() + "/traces.otf2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CLOCK_OFFSET"), std::string::npos) << "still in the local definitions:\n" << r.output;
}

TEST(ClockOffsets, Otf2PrintShowsThemAndTheCorrectedTimes) {
  TempDir dir;
  write_with_offsets(dir.path(), {{0, 1000}, {10000, 1000}});
  const testing::CommandResult offsets = testing::run_command("otf2-print -C " + dir.path() + "/traces.otf2");
  ASSERT_EQ(offsets.exit_code, 0) << offsets.output;
  EXPECT_NE(offsets.output.find("1000"), std::string::npos) << offsets.output;
  const testing::CommandResult events = testing::run_command("otf2-print -L 1 " + dir.path() + "/traces.otf2");
  ASSERT_EQ(events.exit_code, 0) << events.output;
  EXPECT_NE(events.output.find("4000"), std::string::npos) << "3000 + 1000:\n" << events.output;
}

}  // namespace
}  // namespace hybridprof::otf2
