#include "trace/raw_stream.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace hybridprof::raw {
namespace {

// A payload with the words the tests look at: an adapter's first two
// small words and first two wide ones.
EventPayload payload(uint32_t w0, uint32_t w1, uint64_t wide0, uint64_t wide1 = 0) {
  EventPayload p;
  p.word[0] = w0, p.word[1] = w1, p.wide[0] = wide0, p.wide[1] = wide1;
  return p;
}

std::string temp_path(const char* name) {
  return std::string(::testing::TempDir()) + "/" + name + std::to_string(getpid()) + ".hpr";
}

// Every record of the stream at `path`, and what the reading found in
// *summary; the test fails when the file cannot be read at all.
std::vector<Record> read_all(const std::string& path, ReadSummary* summary) {
  std::vector<Record> records;
  std::string error;
  EXPECT_TRUE(read_stream(path, [&](const Record& r) { records.push_back(r); }, summary, &error)) << error;
  return records;
}

TEST(RawStream, RoundTripsEveryRecordKind) {
  const std::string path = temp_path("roundtrip");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  ProcessBegin begin;
  begin.pid = 42;
  begin.args = {"./app", "x y"};
  begin.event = "cpu-clock";
  begin.launcher_rank = -1;
  begin.python = "3.12";
  w.append(begin);
  w.append(ModuleLoad{1, 0, 0x400000, 0x400000, 0x500000, "/bin/app"});
  w.append(thread_begin(0, 4242, 1000));
  w.append(CctNode{3, kRootComplete, 1, 0x1234});
  w.append(Sample{0, 2000, 3, 0});
  w.append(Sample{0, 1500, 3, 1, 5});  // time may step back: deltas are signed
  ASSERT_TRUE(w.flush());
  w.append(Sample{0, 3000000000ull, 3, 0});
  w.append(EventSetDef{12, 5, "toy"});
  Event event{0, 3000000000ull, 14, payload(7, 0xffffffffu, ~0ull, 1)};
  event.payload.word[3] = 9, event.payload.wide[2] = 1ull << 40;
  w.append(event);
  w.append(LocationEnd{0, 3000000001ull, {3, 1, 0, 0}, "worker"});
  w.append(ProcessEnd{3000000002ull, EndReason::kSignal, 15, 2});
  w.close();

  ReadSummary summary;
  const std::vector<Record> records = read_all(path, &summary);
  ASSERT_EQ(records.size(), 11u);
  EXPECT_EQ(summary.chunks, 2u);
  EXPECT_TRUE(summary.problem.empty());
  EXPECT_EQ(std::get<ProcessBegin>(records[0]).args[1], "x y");
  EXPECT_EQ(std::get<ProcessBegin>(records[0]).python, "3.12");
  EXPECT_EQ(std::get<ModuleLoad>(records[1]).path, "/bin/app");
  EXPECT_EQ(std::get<CctNode>(records[3]).offset, 0x1234u);
  EXPECT_EQ(std::get<Sample>(records[4]).timestamp_ns, 2000u);
  EXPECT_EQ(std::get<Sample>(records[5]).timestamp_ns, 1500u);
  EXPECT_EQ(std::get<Sample>(records[5]).flags, 1u);
  EXPECT_EQ(std::get<Sample>(records[5]).weight, 5u);
  EXPECT_EQ(std::get<Sample>(records[4]).weight, 1u);
  EXPECT_EQ(std::get<Sample>(records[6]).timestamp_ns, 3000000000ull);
  EXPECT_EQ(std::get<EventSetDef>(records[7]).name, "toy");
  EXPECT_EQ(std::get<EventSetDef>(records[7]).base, 12u);
  EXPECT_EQ(std::get<EventSetDef>(records[7]).kinds, 5u);
  EXPECT_EQ(std::get<Event>(records[8]).kind, 14u);
  EXPECT_EQ(std::get<Event>(records[8]).timestamp_ns, 3000000000ull);
  EXPECT_EQ(std::get<Event>(records[8]).payload, event.payload);
  EXPECT_EQ(std::get<LocationEnd>(records[9]).name, "worker");
  EXPECT_EQ(std::get<LocationEnd>(records[9]).counters.dropped, 1u);
  EXPECT_EQ(std::get<ProcessEnd>(records[10]).status, 15);
  std::remove(path.c_str());
}

// Every thread counter comes back as written (the stream walks the list
// of counters; a field left out of it would read back 0).
TEST(RawStream, EveryThreadCounterSurvivesTheStream) {
  const std::string path = temp_path("counters");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  w.append(thread_begin(0, 4242, 1000));
  LocationEnd end{0, 2000, {}, ""};
  uint64_t value = 1;
  for (auto field : kThreadCounterFields) end.counters.*field = (value *= 3);
  w.append(end);
  w.close();
  const std::vector<Record> records = read_all(path, nullptr);
  ASSERT_EQ(records.size(), 2u);
  const ThreadCounters& back = std::get<LocationEnd>(records[1]).counters;
  for (auto field : kThreadCounterFields) EXPECT_EQ(back.*field, end.counters.*field);
  EXPECT_EQ(back.sample_handler_ns, 59049u);  // the tenth
  EXPECT_EQ(back.sample_handler_slow, 177147u);
  std::remove(path.c_str());
}

// A location that is not a thread keeps its kind, id and device; a kind
// this build does not know makes the record undecodable, not a thread.
TEST(RawStream, DeviceStreamLocationsKeepTheirKindAndDevice) {
  const std::string path = temp_path("stream");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  w.append(thread_begin(0, 4242, 1000));
  w.append(LocationBegin{1, 77, 1200, "stream 77", LocationKind::kDeviceStream, "GPU 0"});
  w.append(Enter{{1, 1300, 5, 6}});
  w.append(LocationBegin{2, 78, 1400, "stream 78", static_cast<LocationKind>(kLastLocationKind + 1), "GPU 9"});
  w.close();
  ReadSummary summary;
  const std::vector<Record> r = read_all(path, &summary);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(std::get<LocationBegin>(r[0]).kind, LocationKind::kThread);
  const auto& stream = std::get<LocationBegin>(r[1]);
  EXPECT_EQ(stream.location, 1u);
  EXPECT_EQ(stream.id, 77u);
  EXPECT_EQ(stream.timestamp_ns, 1200u);
  EXPECT_EQ(stream.name, "stream 77");
  EXPECT_EQ(stream.kind, LocationKind::kDeviceStream);
  EXPECT_EQ(stream.device, "GPU 0");
  EXPECT_EQ(std::get<Enter>(r[2]).timestamp_ns, 1300u);
  EXPECT_EQ(summary.problem, "undecodable record");
  std::remove(path.c_str());
}

// An adapter's definitions come back as it wrote them, values untouched,
// and a region keeps the code it stands for; a job rank outside its job
// is undecodable.
TEST(RawStream, DefinitionsRegionsOfCodeAndTheJobRankRoundTrip) {
  const std::string path = temp_path("definitions");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  w.append(JobRank{3, 8});
  w.append(Definition{"mpi", 2, "split", {(4ull << 32) | 1, 0, 1, 3, 5, 7}});
  w.append(Definition{"openmp", 9, "", {}});
  w.append(Definition{"toy", 0, "wide", {~0ull}});
  w.append(RegionDef{5, "!$omp parallel", 4, 3, 0x1234, "!$omp implicit parallel"});
  w.append(JobRank{8, 8});
  w.close();
  ReadSummary summary;
  const std::vector<Record> r = read_all(path, &summary);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(std::get<RegionDef>(r[4]).name, "!$omp parallel");
  EXPECT_EQ(std::get<RegionDef>(r[4]).paradigm, 4u);
  EXPECT_EQ(std::get<RegionDef>(r[4]).code_module, 3u);
  EXPECT_EQ(std::get<RegionDef>(r[4]).code_offset, 0x1234u);
  EXPECT_EQ(std::get<RegionDef>(r[4]).implicit_name, "!$omp implicit parallel");
  EXPECT_EQ(std::get<JobRank>(r[0]).rank, 3u);
  EXPECT_EQ(std::get<JobRank>(r[0]).size, 8u);
  const auto& split = std::get<Definition>(r[1]);
  EXPECT_EQ(split.set, "mpi");
  EXPECT_EQ(split.id, 2u);
  EXPECT_EQ(split.name, "split");
  EXPECT_EQ(split.values, (std::vector<uint64_t>{(4ull << 32) | 1, 0, 1, 3, 5, 7}));
  EXPECT_EQ(std::get<Definition>(r[2]).set, "openmp");
  EXPECT_TRUE(std::get<Definition>(r[2]).values.empty());
  EXPECT_EQ(std::get<Definition>(r[3]).values, std::vector<uint64_t>{~0ull});
  EXPECT_EQ(summary.problem, "undecodable record") << "rank 8 of 8";
  std::remove(path.c_str());
}

// A location index no process has (a corrupt stream) is refused, not made
// room for.
TEST(RawStream, ALocationIndexBeyondAnyProcessIsUndecodable) {
  const std::string path = temp_path("far-location");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  w.append(Enter{{0, 1000, 5, 6}});
  w.append(Enter{{kMaxLocations, 1300, 5, 6}});  // the writer trusts its drain; a reader may not
  w.close();
  ReadSummary summary;
  const std::vector<Record> r = read_all(path, &summary);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(summary.problem, "undecodable record");
  std::remove(path.c_str());
}

// A long drain pass is written in chunks of bounded size as it goes (a
// chunk that grew to the whole pass would be copied over and over), and
// reads back whole, deltas restarting at every chunk.
TEST(RawStream, LongPassIsWrittenInBoundedChunks) {
  const std::string path = temp_path("bounded");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  constexpr uint64_t kEvents = 200000;
  for (uint64_t i = 0; i < kEvents; ++i) {
    w.append(Enter{{0, 1000 + 3 * i, 7, 9}});
    EXPECT_LT(w.pending_bytes(), size_t{512} * 1024) << "at event " << i;
  }
  w.close();
  ReadSummary summary;
  std::string error;
  uint64_t n = 0, bad = 0;
  ASSERT_TRUE(read_stream(
      path,
      [&](const Record& r) {
        const auto* e = std::get_if<Enter>(&r);
        bad += e == nullptr || e->timestamp_ns != 1000 + 3 * n || e->region != 7 || e->node != 9;
        ++n;
      },
      &summary, &error))
      << error;
  EXPECT_EQ(n, kEvents);
  EXPECT_EQ(bad, 0u);
  EXPECT_GT(summary.chunks, 2u);
  std::remove(path.c_str());
}

// A whole traced call stored as one record reads back as the Enter, the
// events (each at the enter's or the leave's time) and the Leave; the
// thread's next delta counts from the leave.
TEST(RawStream, CallReadsBackAsItsEnterEventsAndLeave) {
  const std::string path = temp_path("call");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  Call barrier;
  barrier.location = 1;
  barrier.enter_ns = 5000;
  barrier.leave_ns = 5750;
  barrier.region = 4;
  barrier.node = 12;
  barrier.event_count = 2;
  // Kinds and payload words as an adapter would set them (the stream
  // knows neither): a begin with nothing, an end with a word and no peer.
  barrier.events[0] = Event{1, 5000, 8, {}};
  barrier.events[1] = Event{1, 5750, 9, payload(3, 0xffffffffu, 0)};
  w.append(barrier);
  Call send;
  send.location = 1;
  send.enter_ns = send.leave_ns = 6000;  // as short as the clock can tell
  send.region = 5;
  send.node = 13;
  send.event_count = 1;
  send.events[0] = Event{1, 6000, 0, payload(0, 2, 1u << 20)};
  send.events[0].payload.word[2] = 99;
  w.append(send);
  w.append(Sample{1, 6100, 13, 0});
  w.close();

  ReadSummary summary;
  const std::vector<Record> r = read_all(path, &summary);
  ASSERT_EQ(r.size(), 8u);
  EXPECT_TRUE(summary.problem.empty()) << summary.problem;
  const auto& enter = std::get<Enter>(r[0]);
  EXPECT_EQ(enter.location, 1u);
  EXPECT_EQ(enter.timestamp_ns, 5000u);
  EXPECT_EQ(enter.region, 4u);
  EXPECT_EQ(enter.node, 12u);
  EXPECT_EQ(std::get<Event>(r[1]).kind, 8u);
  EXPECT_EQ(std::get<Event>(r[1]).timestamp_ns, 5000u);
  EXPECT_EQ(std::get<Event>(r[1]).payload, EventPayload{});
  const auto& end = std::get<Event>(r[2]);
  EXPECT_EQ(end.kind, 9u);
  EXPECT_EQ(end.timestamp_ns, 5750u);
  EXPECT_EQ(end.location, 1u);
  EXPECT_EQ(end.payload, barrier.events[1].payload);
  const auto& leave = std::get<Leave>(r[3]);
  EXPECT_EQ(leave.timestamp_ns, 5750u);
  EXPECT_EQ(leave.region, 4u);
  EXPECT_EQ(leave.node, 12u);
  EXPECT_EQ(std::get<Enter>(r[4]).timestamp_ns, 6000u);
  const auto& message = std::get<Event>(r[5]);
  EXPECT_EQ(message.timestamp_ns, 6000u);
  EXPECT_EQ(message.kind, 0u);
  EXPECT_EQ(message.payload, send.events[0].payload);
  EXPECT_EQ(std::get<Leave>(r[6]).timestamp_ns, 6000u);
  EXPECT_EQ(std::get<Sample>(r[7]).timestamp_ns, 6100u);
  std::remove(path.c_str());
}

// A loop's calls differ only in their times: after the first of each shape
// (per thread, per chunk), a call is a reference plus its times, and reads
// back whole; a new chunk starts over, so every chunk still decodes alone.
TEST(RawStream, RepeatedCallsAreShortAndReadBackWhole) {
  const std::string path = temp_path("repeat");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  auto call = [](uint32_t thread, uint64_t enter, uint32_t region, uint32_t peer) {
    Call c;
    c.location = thread;
    c.enter_ns = enter;
    c.leave_ns = enter + 300;
    c.region = region;
    c.node = 10 + region;
    c.event_count = 1;
    c.events[0] = Event{thread, region == 1 ? enter : enter + 300, region == 1 ? 0u : 1u,
                        payload(0, peer, region == 1 ? 64u : 0u, region == 1 ? 0u : 64u)};
    return c;
  };
  std::vector<Call> written;
  for (uint64_t i = 0; i < 1000; ++i) {
    written.push_back(call(0, 1000 * i, 1, 1));        // send to 1
    written.push_back(call(0, 1000 * i + 500, 2, 1));  // receive from 1
    written.push_back(call(1, 1000 * i + 100, 1, uint32_t(i % 6)));  // a thread cycling over 6 peers: 4 remembered
  }
  const size_t first_chunk = written.size();
  for (const Call& c : written) w.append(c);
  const size_t bytes_one_chunk = w.pending_bytes();
  ASSERT_TRUE(w.flush());
  written.push_back(call(0, 2000000, 1, 1));  // remembered in the last chunk, not in this one
  w.append(written.back());
  w.close();
  // Thread 0's 2000 calls repeat two shapes; thread 1's cycle through six.
  EXPECT_LT(bytes_one_chunk, 2000 * 8 + 1000 * 30) << "repeats must be short";

  ReadSummary summary;
  const std::vector<Record> r = read_all(path, &summary);
  EXPECT_TRUE(summary.problem.empty()) << summary.problem;
  EXPECT_EQ(summary.chunks, 2u);
  ASSERT_EQ(r.size(), 3 * written.size());
  size_t bad = 0;
  for (size_t i = 0; i < written.size(); ++i) {
    const Call& c = written[i];
    const auto* enter = std::get_if<Enter>(&r[3 * i]);
    const auto* event = std::get_if<Event>(&r[3 * i + 1]);
    const auto* leave = std::get_if<Leave>(&r[3 * i + 2]);
    const bool ok = enter && event && leave && enter->location == c.location && enter->timestamp_ns == c.enter_ns &&
                    enter->region == c.region && enter->node == c.node && leave->timestamp_ns == c.leave_ns &&
                    event->timestamp_ns == c.events[0].timestamp_ns && event->kind == c.events[0].kind &&
                    event->payload == c.events[0].payload && event->location == c.location;
    bad += !ok;
    if (!ok && bad < 5) ADD_FAILURE() << "call " << i << (i >= first_chunk ? " (second chunk)" : "") << " differs";
  }
  EXPECT_EQ(bad, 0u);
  std::remove(path.c_str());
}

// An Event that says what its location's last Event said, or that with
// its number moved on, is its location and time alone; it reads back as
// the Event it stands for, per location, and every chunk starts over.
TEST(RawStream, RepeatedEventsAreShortAndReadBackWhole) {
  const std::string path = temp_path("events");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  std::vector<Event> written;
  auto event = [&](uint32_t location, uint64_t ns, uint32_t kind, EventPayload p, uint64_t number) {
    p.wide[2] = number;
    written.push_back(Event{location, ns, kind, p});
    w.append(written.back());
  };
  for (uint64_t i = 0; i < 500; ++i) {
    event(0, 1000 + i, 4, payload(1, 2, 8), 100 + i);              // numbered in turn
    event(1, 5000 + 10 * i, 5, payload(7, 7, 64), 9);              // the same on another location
    if (i % 100 == 50) event(0, 1000 + i, 6, payload(0, 0, 0), 0);  // a different kind between
  }
  const size_t bytes_one_chunk = w.pending_bytes();
  ASSERT_TRUE(w.flush());
  event(0, 2000000, 4, payload(1, 2, 8), 600);  // its last was in the chunk before: written in full
  event(0, 2000001, 4, payload(1, 2, 8), 601);
  w.close();
  EXPECT_LT(bytes_one_chunk, 1000 * 5 + 20 * 25) << "repeats must be short";

  ReadSummary summary;
  const std::vector<Record> r = read_all(path, &summary);
  EXPECT_TRUE(summary.problem.empty()) << summary.problem;
  EXPECT_EQ(summary.chunks, 2u);
  ASSERT_EQ(r.size(), written.size());
  size_t bad = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const auto* e = std::get_if<Event>(&r[i]);
    bad += !(e && e->location == written[i].location && e->timestamp_ns == written[i].timestamp_ns &&
             e->kind == written[i].kind && e->payload == written[i].payload);
  }
  EXPECT_EQ(bad, 0u);
  std::remove(path.c_str());
}

// A run of events at one time (a Waitall's completions) reads back as
// each of them, its repeats counted on or the same, a long one too; an
// Event repeat after it repeats the run's last; a run of no events, or of
// an unknown way of repeating, is undecodable.
TEST(RawStream, EventRunsReadBackAsTheirEvents) {
  const std::string path = temp_path("runs");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  std::vector<Event> written;
  EventPayload first = payload(1, 2, 8);
  first.wide[2] = 100;
  w.append_event_run(0, 1000, 4, first, EventRepeat::kCounted, 64);
  for (uint64_t i = 0; i < 64; ++i) written.push_back(Event{0, 1000, 4, counted_on(first, int64_t(i))});
  w.append_event_run(1, 2000, 5, payload(7, 7, 64), EventRepeat::kSame, 3);
  for (int i = 0; i < 3; ++i) written.push_back(Event{1, 2000, 5, payload(7, 7, 64)});
  written.push_back(Event{0, 3000, 4, counted_on(first, 64)});  // the run's last counted on: a repeat
  w.append(written.back());
  const size_t bytes = w.pending_bytes();
  constexpr uint64_t kLong = kMaxEventRun;  // the longest a run may be
  w.append_event_run(2, 4000, 6, payload(0, 0, 0), EventRepeat::kSame, kLong);
  w.close();
  EXPECT_LT(bytes, 120u) << "a run is one record";

  ReadSummary summary;
  const std::vector<Record> r = read_all(path, &summary);
  EXPECT_TRUE(summary.problem.empty()) << summary.problem;
  ASSERT_EQ(r.size(), written.size() + kLong);
  size_t bad = 0;
  for (size_t i = 0; i < written.size(); ++i) {
    const auto* e = std::get_if<Event>(&r[i]);
    bad += !(e && e->location == written[i].location && e->timestamp_ns == written[i].timestamp_ns &&
             e->kind == written[i].kind && e->payload == written[i].payload);
  }
  for (size_t i = written.size(); i < r.size(); ++i) {
    const auto* e = std::get_if<Event>(&r[i]);
    bad += !(e && e->location == 2 && e->timestamp_ns == 4000 && e->kind == 6);
  }
  EXPECT_EQ(bad, 0u);
  std::remove(path.c_str());

  for (const char* bytes_after_payload : {"\x00\x00", "\x02\x05"}) {  // count 0; how 2
    SCOPED_TRACE(bytes_after_payload);
    std::string record;
    record += char(raw::Tag::kEventRun);
    record += "\x00\x02\x04";  // location 0, +1 ns, kind 4
    record += std::string(7, '\0');  // the payload's seven words
    record += bytes_after_payload;
    uint64_t records = 0;
    EXPECT_FALSE(decode_chunk(reinterpret_cast<const unsigned char*>(record.data()), record.size(),
                              [](const Record&) {}, &records));
    EXPECT_EQ(records, 0u);
  }
}

// A repeat with no Event before it in its chunk (a corrupt or spliced
// stream) is undecodable, not an event made up.
TEST(RawStream, AnEventRepeatWithNothingToRepeatIsUndecodable) {
  const unsigned char payload[] = {static_cast<unsigned char>(Tag::kEventRepeat), 0, 2};
  uint64_t records = 0;
  EXPECT_FALSE(decode_chunk(payload, sizeof payload, [](const Record&) {}, &records));
  EXPECT_EQ(records, 0u);
}

// A loop over many call sites (LULESH's thirty OpenMP regions, each from
// its own place) repeats every site's call after the first round: the
// table of recent calls is not replaced in turn.
TEST(RawStream, CallsFromManySitesInTurnAllRepeat) {
  const std::string path = temp_path("sites");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  constexpr uint32_t kSites = 40, kRounds = 100;
  std::vector<Call> written;
  for (uint32_t round = 0; round < kRounds; ++round) {
    for (uint32_t site = 0; site < kSites; ++site) {
      Call c;
      c.location = 0;
      c.enter_ns = (round * kSites + site) * 1000;
      c.leave_ns = c.enter_ns + 300;
      c.region = 1 + site % 7;  // sites share regions, each its own context
      c.node = 100 + site;
      c.event_count = 1;
      c.events[0] = Event{0, c.enter_ns, 3, payload(0, 4, 123456, 654321)};
      written.push_back(c);
      w.append(c);
    }
  }
  const size_t bytes = w.pending_bytes();
  w.close();
  // A full call here takes ~20 bytes, a repeat ~6.
  EXPECT_LT(bytes, kSites * 40 + (kRounds - 1) * kSites * 8) << "every site's later calls repeat";
  ReadSummary summary;
  const std::vector<Record> r = read_all(path, &summary);
  EXPECT_TRUE(summary.problem.empty()) << summary.problem;
  ASSERT_EQ(r.size(), 3 * written.size());
  size_t bad = 0;
  for (size_t i = 0; i < written.size(); ++i) {
    const auto* enter = std::get_if<Enter>(&r[3 * i]);
    const auto* event = std::get_if<Event>(&r[3 * i + 1]);
    bad += !(enter && event && enter->node == written[i].node && enter->region == written[i].region &&
             enter->timestamp_ns == written[i].enter_ns && event->payload == written[i].events[0].payload);
  }
  EXPECT_EQ(bad, 0u);
  std::remove(path.c_str());
}

// A call whose event counts (an MPI request id) repeats when its number
// is one more than the last: the writer and the reader move the kept shape
// on together, whether the drain repeats it by handle or by comparing.
TEST(RawStream, CountingCallsRepeatWithTheirNumbersMovedOn) {
  const std::string path = temp_path("counting");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  auto shape = [](uint64_t request) {
    CallShape s;
    s.region = 3, s.node = 7, s.event_count = 1;
    s.events[0].kind = 2, s.events[0].at_leave = 1, s.events[0].counts = 1;
    s.events[0].payload = payload(0, 1, 8);
    s.events[0].payload.wide[2] = request;
    return s;
  };
  std::vector<uint64_t> expected;
  uint64_t now = 1000;
  auto next = [&] { return now += 100; };
  auto by_shape = [&](uint64_t request) {
    expected.push_back(request);
    const uint64_t enter = next();
    return w.append_call(0, enter, enter + 50, shape(request));
  };
  const RecentCalls::Handle kept = by_shape(10);
  for (uint64_t request = 11; request <= 15; ++request) {
    expected.push_back(request);
    const uint64_t enter = next();
    ASSERT_TRUE(w.append_repeat(0, kept, enter, enter + 50));
  }
  // 11 again is no repeat of 15 (the writer moved on with the reader), 12
  // then repeats 11; 13 comes with the count flag off: a shape of its own.
  by_shape(11);
  by_shape(12);
  CallShape plain = shape(13);
  plain.events[0].counts = 0;
  expected.push_back(13);
  const uint64_t enter = next();
  w.append_call(0, enter, enter + 50, plain);
  by_shape(14);
  w.close();
  ReadSummary summary;
  std::vector<uint64_t> requests;
  for (const Record& r : read_all(path, &summary))
    if (const auto* e = std::get_if<Event>(&r)) requests.push_back(e->payload.wide[2]);
  EXPECT_TRUE(summary.problem.empty()) << summary.problem;
  EXPECT_EQ(requests, expected);
  std::remove(path.c_str());
}

TEST(RawStream, TornLastChunkKeepsEarlierChunks) {
  const std::string path = temp_path("torn");
  std::remove(path.c_str());
  {
    StreamWriter w;
    ASSERT_TRUE(w.open(path));
    w.append(Notice{"first"});
    w.flush();
    w.append(Notice{"second chunk, to be torn"});
    w.flush();
  }
  // Simulate a kill in the middle of the last write.
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(data.size() - 5)), 0);
  ReadSummary summary;
  const std::vector<Record> records = read_all(path, &summary);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(std::get<Notice>(records[0]).text, "first");
  EXPECT_FALSE(summary.problem.empty());
  EXPECT_GT(summary.bytes_ignored, 0u);
  std::remove(path.c_str());
}

TEST(RawStream, RejectsOtherFilesAndRefusesToOverwrite) {
  const std::string path = temp_path("other");
  { std::ofstream(path) << "hello"; }
  std::string error;
  EXPECT_FALSE(read_stream(path, [](const Record&) {}, nullptr, &error));
  EXPECT_NE(error.find("not a hybridprof raw stream"), std::string::npos);
  StreamWriter w;
  EXPECT_FALSE(w.open(path)) << "an existing file must never be overwritten";
  std::remove(path.c_str());
  EXPECT_FALSE(read_stream(path, [](const Record&) {}, nullptr, &error));
}

}  // namespace
}  // namespace hybridprof::raw

namespace hybridprof::raw {
namespace {

TEST(RawStream, OtherFormatVersionIsRefusedByName) {
  const std::string path = std::string(::testing::TempDir()) + "/version" + std::to_string(getpid()) + ".hpr";
  { std::ofstream(path, std::ios::binary) << "HYBPRAW1"; }
  std::string error;
  EXPECT_FALSE(read_stream(path, [](const Record&) {}, nullptr, &error));
  EXPECT_NE(error.find("another hybridprof version"), std::string::npos) << error;
  std::remove(path.c_str());
}

// Samples of thread 0, `n` of them, each in its own chunk.
void write_chunks(StreamWriter& w, int n, uint64_t first_ts = 1000) {
  for (int i = 0; i < n; ++i) {
    w.append(Sample{0, first_ts + uint64_t(i), 3, 0});
    w.flush();
  }
}

size_t file_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  return static_cast<size_t>(in.tellg());
}

TEST(RawStream, ASizeLimitStopsTheWriterAtAChunkAndLetsTheClosingRecordsThrough) {
  const std::string path = temp_path("limit");
  std::remove(path.c_str());
  StreamWriter w;
  const uint64_t limit = StreamWriter::kClosingReserve + 4096;
  w.set_size_limit(limit);
  ASSERT_TRUE(w.open(path));
  write_chunks(w, 1000);  // ~25 bytes a chunk: past 4 KiB
  EXPECT_EQ(w.stopped(), StreamWriter::Stop::kSizeLimit);
  EXPECT_LE(w.bytes_written(), 4096u);
  const uint64_t at_stop = w.bytes_written();
  w.append(Sample{0, 5000, 3, 0});  // dropped
  EXPECT_FALSE(w.flush());
  EXPECT_EQ(w.bytes_written(), at_stop);
  EXPECT_TRUE(w.write_closing(Notice{"stopped"}));
  EXPECT_TRUE(w.write_closing(ProcessEnd{6000, EndReason::kExit, 0, 0}));
  EXPECT_EQ(w.stopped(), StreamWriter::Stop::kSizeLimit) << "closing records do not restart it";
  w.close();
  EXPECT_LE(file_size(path), limit);

  ReadSummary summary;
  const std::vector<Record> records = read_all(path, &summary);
  EXPECT_EQ(summary.bytes_ignored, 0u) << summary.problem;
  ASSERT_GE(records.size(), 3u);
  size_t samples = 0;
  for (const Record& r : records) samples += std::holds_alternative<Sample>(r);
  EXPECT_EQ(samples, records.size() - 2);
  EXPECT_EQ(std::get<Notice>(records[records.size() - 2]).text, "stopped");
  EXPECT_TRUE(std::holds_alternative<ProcessEnd>(records.back()));
  std::remove(path.c_str());
}

// In a child (a SIGXFSZ must not take the test binary with it): a writer
// of 10 chunks at `path`, then a file size limit `room` bytes past them,
// then `body(writer)`, whose exit code the child exits with. The child's
// wait status.
template <class Body>
int in_child_past_ten_chunks(const std::string& path, uint64_t room, Body body) {
  const pid_t child = fork();
  if (child == 0) {
    signal(SIGXFSZ, SIG_DFL);
    StreamWriter w;
    if (!w.open(path)) _exit(2);
    write_chunks(w, 10);
    rlimit small{};
    getrlimit(RLIMIT_FSIZE, &small);
    small.rlim_cur = w.bytes_written() + room;
    setrlimit(RLIMIT_FSIZE, &small);
    _exit(body(w));
  }
  int status = -1;
  if (child > 0) waitpid(child, &status, 0);
  return status;
}

// Past the file size limit the kernel would raise SIGXFSZ, whose default
// action ends the process: the program's, when the runtime writes there.
// The writer stops before such a write instead.
TEST(RawStream, AWritePastTheFileSizeLimitStopsTheWriterWithoutASignal) {
  const std::string path = temp_path("xfsz");
  std::remove(path.c_str());
  const int status = in_child_past_ten_chunks(path, 100, [](StreamWriter& w) {
    for (int i = 0; i < 2000; ++i) w.append(Sample{0, 5000 + uint64_t(i), 3, 0});
    const bool written = w.flush();
    return !written && w.stopped() == StreamWriter::Stop::kWriteError && w.stop_errno() == EFBIG ? 0 : 3;
  });
  EXPECT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  std::remove(path.c_str());
}

// Below a file size limit, as below --max-size, the closing records keep
// their room: a small chunk that would leave too little of it is not
// written, and why recording stopped and the process end still are.
TEST(RawStream, AFileSizeLimitKeepsRoomForTheClosingRecords) {
  const std::string path = temp_path("xfsz-closing");
  std::remove(path.c_str());
  const int status = in_child_past_ten_chunks(path, 400, [](StreamWriter& w) {
    for (int i = 0; i < 40; ++i) w.append(Sample{0, 5000 + uint64_t(i), 3, 0});  // fits, but leaves little
    if (w.flush() || w.stop_errno() != EFBIG) return 3;
    if (!w.write_closing(Notice{"cannot write the raw stream: File too large; what came before is kept"})) return 4;
    if (!w.write_closing(ProcessEnd{6000, EndReason::kExit, 0, 0})) return 5;
    w.close();
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  ASSERT_EQ(WEXITSTATUS(status), 0) << "3: the chunk was written, 4/5: a closing record was not";
  ReadSummary summary;
  const std::vector<Record> records = read_all(path, &summary);
  EXPECT_EQ(summary.bytes_ignored, 0u) << summary.problem;
  ASSERT_EQ(records.size(), 12u);
  EXPECT_TRUE(std::holds_alternative<Notice>(records[10]));
  EXPECT_TRUE(std::holds_alternative<ProcessEnd>(records.back()));
  std::remove(path.c_str());
}

// The closing reserve (a file beside the stream) lives as long as the
// stream is open.
TEST(RawStream, AClosedStreamLeavesNoReserve) {
  const std::string path = temp_path("reserve");
  std::remove(path.c_str());
  const std::string reserve = path + StreamWriter::kReserveSuffix;
  {
    StreamWriter w;
    ASSERT_TRUE(w.open(path));
    EXPECT_TRUE(std::filesystem::exists(reserve));
    write_chunks(w, 2);
  }
  EXPECT_FALSE(std::filesystem::exists(reserve));
  EXPECT_TRUE(std::filesystem::exists(path));
  std::remove(path.c_str());
}

// A write that would pass the file size limit is not made (one that fails
// half way, on a full disk, is cut off again: DiskLimits.AFullDisk...): the
// file keeps whole chunks, and a closing record written once there is room
// again follows them.
TEST(RawStream, AFailedWriteLeavesWholeChunksAndStopsTheWriter) {
  const std::string path = temp_path("efbig");
  std::remove(path.c_str());
  StreamWriter w;
  ASSERT_TRUE(w.open(path));
  const std::string reserve = path + StreamWriter::kReserveSuffix;
  EXPECT_EQ(file_size(reserve), StreamWriter::kClosingReserve) << "room kept for the closing records";
  write_chunks(w, 10);
  const uint64_t before = w.bytes_written();

  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_action = signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = before + 100;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  for (int i = 0; i < 2000; ++i) w.append(Sample{0, 5000 + uint64_t(i), 3, 0});  // one chunk of ~8 KiB
  const bool written = w.flush();
  const int error = errno;
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_action);

  EXPECT_FALSE(written);
  EXPECT_EQ(error, EFBIG);
  EXPECT_EQ(w.stopped(), StreamWriter::Stop::kWriteError);
  EXPECT_EQ(w.stop_errno(), EFBIG);
  EXPECT_EQ(w.bytes_written(), before);
  EXPECT_EQ(file_size(path), before) << "the torn chunk is cut off";
  EXPECT_TRUE(std::filesystem::exists(reserve));
  EXPECT_TRUE(w.write_closing(Notice{"cannot write"}));
  EXPECT_FALSE(std::filesystem::exists(reserve)) << "a failed write gives the closing records the reserve's room";
  w.close();

  ReadSummary summary;
  const std::vector<Record> records = read_all(path, &summary);
  EXPECT_EQ(summary.bytes_ignored, 0u) << summary.problem;
  ASSERT_EQ(records.size(), 11u);
  EXPECT_EQ(std::get<Notice>(records.back()).text, "cannot write");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hybridprof::raw

namespace hybridprof::raw {
namespace {

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Found by tests/fuzz/raw_stream_fuzzer (reduced): a Call naming location
// 4194303, the last one a reader accepts, made the decoder size its table
// of recent call shapes for 4 million threads, 2 GB for 10 bytes. Its tables
// now grow with the locations a chunk names, however large their numbers.
TEST(RawStream, ACallAtTheLastLocationCostsWhatItsBytesDo) {
  const unsigned char payload[] = {
      0x12, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,  // Call at 4194303, time 0, no events
      0x13, 0xff, 0xff, 0xff, 0x01, 0x00, 0x02, 0x05,              // the same again, 1 ns later, 5 ns long
  };
  const long before = peak_rss_kib();
  std::vector<Record> records;
  uint64_t count = 0;
  EXPECT_TRUE(decode_chunk(payload, sizeof payload, [&](const Record& r) { records.push_back(r); }, &count));
  EXPECT_LT(peak_rss_kib() - before, 256 * 1024) << "KiB more at peak";
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(count, 4u);
  EXPECT_EQ(std::get<Enter>(records[0]).location, kMaxLocations - 1);
  EXPECT_EQ(std::get<Leave>(records[1]).timestamp_ns, 0u);
  EXPECT_EQ(std::get<Enter>(records[2]).timestamp_ns, 1u) << "the repeat's delta counts from the first's leave";
  EXPECT_EQ(std::get<Leave>(records[3]).timestamp_ns, 6u);
}

// Many small chunks, each naming the last location: deltas start over in
// every chunk, which cleared a table as large as the location number (32
// MB) per chunk, 1.6 TB of writes for a 1 MB file. Now a chunk clears what
// it used.
TEST(RawStream, SmallChunksAtTheLastLocationReadQuickly) {
  const std::string path = temp_path("far-chunks");
  std::remove(path.c_str());
  {
    StreamWriter w;
    ASSERT_TRUE(w.open(path));
    w.append(Sample{kMaxLocations - 1, 1000, 3, 0});
  }
  std::ifstream in(path, std::ios::binary);
  std::string one((std::istreambuf_iterator<char>(in)), {});
  const std::string chunk = one.substr(sizeof kFileMagic);  // chunks decode on their own: copies are valid
  constexpr int kChunks = 5000;
  std::string stream = one.substr(0, sizeof kFileMagic);
  for (int i = 0; i < kChunks; ++i) stream += chunk;

  const auto start = std::chrono::steady_clock::now();
  ReadSummary summary;
  std::string error;
  uint64_t samples = 0;
  ASSERT_TRUE(read_stream(reinterpret_cast<const unsigned char*>(stream.data()), stream.size(), path,
                          [&](const Record& r) { samples += std::get<Sample>(r).location == kMaxLocations - 1; },
                          &summary, &error))
      << error;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(samples, uint64_t{kChunks});
  EXPECT_EQ(summary.chunks, uint64_t{kChunks});
  EXPECT_TRUE(summary.problem.empty()) << summary.problem;
  EXPECT_LT(seconds, 5.0) << "it took minutes when every chunk cleared 32 MB";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hybridprof::raw
