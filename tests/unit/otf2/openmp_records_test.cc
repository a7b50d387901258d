// OpenMP's fork and join records: written through OpenMP's event-set
// writer (src/openmp/openmp_otf2_events.h) as the finalizer hands events
// to it, read back by ArchiveReader as ThreadFork / ThreadJoin of paradigm
// OpenMP, and accepted by otf2-print.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openmp/openmp_events.h"
#include "openmp/openmp_otf2_events.h"
#include "otf2/archive_reader.h"
#include "test_support.h"

namespace hybridprof::otf2 {
namespace {

using testing::TempDir;
using Kind = ::hybridprof::openmp::EventKind;

void write_openmp(ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t kind, const EventPayload& payload) {
  const std::map<uint32_t, uint32_t> none;
  const EventSetWriter::Refs refs{&none};
  const EventSetWriter& writer = ::hybridprof::openmp::otf2_event_writer();
  ASSERT_TRUE(writer.writable(kind, payload, refs));
  writer.write(w, loc, t, kind, payload, refs);
}

TEST(OpenMpRecords, ForkAndJoinComeBackOnTheirThread) {
  TempDir dir;
  uint64_t master = 0;
  {
    ArchiveWriter w({.directory = dir.path()});
    const uint32_t p = w.define_process("app", w.define_system_tree_node("host", "node", kUndefined));
    master = w.define_thread(p, "main thread");
    w.define_thread(p, "worker");  // forks nothing
    write_openmp(w, master, 100, uint32_t(Kind::kFork), ::hybridprof::openmp::fork_payload(4));
    write_openmp(w, master, 900, uint32_t(Kind::kJoin), {});
    write_openmp(w, master, 1000, uint32_t(Kind::kFork), ::hybridprof::openmp::fork_payload(2));
    write_openmp(w, master, 1100, uint32_t(Kind::kJoin), {});
    w.close({});
  }
  ArchiveReader reader(dir.path());
  std::vector<ForkJoinEvent> events;
  reader.read_events([](const SampleEvent&) {}, {}, {}, [&](const ForkJoinEvent& e) { events.push_back(e); });
  ASSERT_EQ(events.size(), 4u);
  const uint64_t times[] = {100, 900, 1000, 1100};
  const uint32_t requested[] = {4, 0, 2, 0};
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].location, master);
    EXPECT_EQ(events[i].timestamp, times[i]);
    EXPECT_EQ(events[i].fork, i % 2 == 0);
    EXPECT_EQ(events[i].paradigm, Paradigm::kOpenMp);
    EXPECT_EQ(events[i].requested_threads, requested[i]);
  }
  if (testing::have_program("otf2-print")) {
    const testing::CommandResult r = testing::run_command("otf2-print " + dir / "traces.otf2");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Model: OPENMP, # Requested Threads: 4"), std::string::npos) << r.output;
  }
}

TEST(OpenMpRecords, UnknownKindsAreNotWritable) {
  const std::map<uint32_t, uint32_t> none;
  EXPECT_FALSE(::hybridprof::openmp::otf2_event_writer().writable(uint32_t(Kind::kCount), {}, EventSetWriter::Refs{&none}));
}

}  // namespace
}  // namespace hybridprof::otf2
