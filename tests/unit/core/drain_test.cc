// The drain's handling of traced calls: what reaches the raw stream, in
// which order, whether the call was written whole (one Call record) or as
// its enter, events and leave.
#include "trace/drain.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "trace/event_sets.h"
#include "trace/module_table.h"
#include "trace/raw_stream.h"
#include "trace/records.h"

namespace hybridprof {
namespace {

// Event kinds as an adapter would number them, and its payload: a peer
// and byte counts (the drain knows none of it).
enum Kind : uint32_t { kSend, kRecv, kIsendComplete, kCollectiveBegin, kCollectiveEnd };
EventPayload message(uint32_t peer, uint64_t sent, uint64_t received) {
  EventPayload p;
  p.word[1] = peer, p.word[2] = 7, p.wide[0] = sent, p.wide[1] = received;
  return p;
}

class DrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(::testing::TempDir()) + "/drain" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".hpr";
    std::remove(path_.c_str());
    Drain::Options options;
    options.raw_path = path_;
    options.flush_interval_ms = 3600 * 1000;  // passes only when the test asks
    options.ring_bytes = 64 * 1024;
    std::string error;
    ASSERT_TRUE(drain_.start(options, raw::ProcessBegin{}, &error)) << error;
    t_ = drain_.add_thread(getpid(), 1);
    ASSERT_NE(t_, nullptr);
  }
  void TearDown() override {
    drain_.finish_thread(t_, 1000000);
    drain_.stop(raw::ProcessEnd{1000001, raw::EndReason::kExit, 0, 0});
    std::remove(path_.c_str());
  }

  void enter(uint64_t ns, uint32_t region, uint32_t flags = 0) {
    auto* r = reinterpret_cast<RegionRecord*>(
        t_->ring.reserve_exclusive(sizeof(RegionRecord), uint16_t(RecordType::kRegionEnter), 0));
    ASSERT_NE(r, nullptr);
    r->timestamp = ns;
    r->region = region;
    r->flags = flags;
    r->stack_slot = r->stack_generation = 0;
    t_->ring.commit_exclusive();
  }
  // A traced call's enter and leave from remembered caller stack
  // `generation` (entry `slot`), as MpiCall writes them (TracedCallWriter:
  // a record that says what the last one from there said is a repeat): a
  // send to `peer` travels in the enter, a receive from `peer` in the leave.
  // With held_enters_, an enter that would be a repeat is held back as
  // MpiCall holds it (defer_enter), and a sample writes it first as the
  // sample handler does.
  void enter_from(uint64_t ns, uint32_t region, uint32_t slot, uint32_t generation, int peer = -1) {
    const RegionBody b = body(region, kSend, peer, 8, 0);
    const CallerStackCache::Ref ref{slot, generation, false};
    if (held_enters_ && t_->traced.calls.defer_enter(ns, b, ref, 0, 0)) {
      ++enters_held_;
      return;
    }
    ASSERT_TRUE(t_->traced.calls.enter(t_->ring, ns, b, ref, nullptr, 0));
  }
  // A whole call from `ref`, its enter held back with held_enters_ when it may be.
  void call_from(uint64_t ns, uint64_t leave_ns, const RegionBody& enter, const RegionBody& leave,
                 CallerStackCache::Ref ref) {
    if (held_enters_ && t_->traced.calls.defer_enter(ns, enter, ref, 0, 0)) {
      ++enters_held_;
    } else {
      ASSERT_TRUE(t_->traced.calls.enter(t_->ring, ns, enter, ref, nullptr, 0));
    }
    ASSERT_TRUE(t_->traced.calls.leave(t_->ring, leave_ns, leave, ref));
  }
  // An Isend's leave: its request's number, a counting event.
  static RegionBody isend_leave(uint64_t request) {
    RegionBody leave = body(1, kSend, 4, 8, 0);
    leave.flags |= kRegionEventCounts;
    leave.event.wide[2] = request;
    return leave;
  }
  void leave_from(uint64_t ns, uint32_t region, uint32_t slot, uint32_t generation, int peer = -1) {
    ASSERT_TRUE(t_->traced.calls.leave(t_->ring, ns, body(region, kRecv, peer, 0, 8),
                                       CallerStackCache::Ref{slot, generation, false}));
  }
  static RegionBody body(uint32_t region, Kind kind, int peer, uint64_t sent, uint64_t received) {
    if (peer < 0) return RegionBody{region, 0, {}};
    return RegionBody{region, kRegionCarriesEvent | uint32_t(kind) << kCarriedEventKindShift,
                      message(uint32_t(peer), sent, received)};
  }

  void leave(uint64_t ns, uint32_t region, uint32_t flags = 0) {
    auto* r = reinterpret_cast<RegionRecord*>(
        t_->ring.reserve_exclusive(sizeof(RegionRecord), uint16_t(RecordType::kRegionLeave), 0));
    ASSERT_NE(r, nullptr);
    r->timestamp = ns;
    r->region = region;
    r->flags = flags;
    r->stack_slot = r->stack_generation = 0;
    t_->ring.commit_exclusive();
  }
  void event(uint64_t ns, Kind kind, uint32_t peer = 1) {
    auto* m = reinterpret_cast<EventRecord*>(
        t_->ring.reserve_exclusive(sizeof(EventRecord), uint16_t(RecordType::kEvent), uint16_t(kind)));
    ASSERT_NE(m, nullptr);
    *m = EventRecord{m->header, ns, message(peer, 8, 0)};
    t_->ring.commit_exclusive();
  }
  void sample(uint64_t ns, uint32_t flags = 0) {
    ASSERT_TRUE(t_->traced.calls.write_deferred_enter_shared(t_->ring));
    auto* s = reinterpret_cast<SampleRecord*>(
        t_->ring.reserve_exclusive(sizeof(SampleRecord), uint16_t(RecordType::kSample), 0));
    ASSERT_NE(s, nullptr);
    s->timestamp_ns = ns;
    s->flags = flags;
    s->weight = 1;
    t_->ring.commit_exclusive();
  }

  // The thread's records in the stream so far: 'E'nter, 'L'eave, an
  // event ('M'), 'S'ample, each with its time.
  std::vector<std::pair<char, uint64_t>> stream() {
    drain_.flush_now();
    std::vector<std::pair<char, uint64_t>> seen;
    std::string error;
    EXPECT_TRUE(raw::read_stream(
        path_,
        [&](const raw::Record& r) {
          if (const auto* e = std::get_if<raw::Enter>(&r)) seen.emplace_back('E', e->timestamp_ns), nodes_.push_back(e->node);
          if (const auto* l = std::get_if<raw::Leave>(&r)) seen.emplace_back('L', l->timestamp_ns), nodes_.push_back(l->node);
          if (const auto* m = std::get_if<raw::Event>(&r)) seen.emplace_back('M', m->timestamp_ns), peers_.push_back(m->payload.word[1]);
          if (const auto* s = std::get_if<raw::Sample>(&r)) seen.emplace_back('S', s->timestamp_ns);
        },
        nullptr, &error))
        << error;
    return seen;
  }
  using Seen = std::vector<std::pair<char, uint64_t>>;

  std::string path_;
  ModuleTable modules_;
  Drain drain_{modules_};
  ThreadState* t_ = nullptr;
  std::vector<uint32_t> nodes_;  // of every Enter and Leave read, in order
  std::vector<uint32_t> peers_;  // of every MPI event read, in order
  bool held_enters_ = false;
  int enters_held_ = 0;

  void check_repeated_calls_from_one_place();
  void check_counting_calls();
};

TEST_F(DrainTest, WholeCallsReadBackAsTheirEnterEventsAndLeave) {
  enter(100, 1);
  event(100, kSend);
  leave(150, 1);
  enter(200, 2, kRegionCarriesEmptyEvent | kCollectiveBegin << kEmptyEventKindShift);
  event(260, kCollectiveEnd);
  leave(260, 2);
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'M', 100}, {'L', 150}, {'E', 200}, {'M', 200}, {'M', 260}, {'L', 260}}));
  ASSERT_EQ(nodes_.size(), 4u);
  EXPECT_EQ(nodes_[0], nodes_[1]) << "a leave names its enter's context";
  EXPECT_EQ(nodes_[2], nodes_[3]);
  EXPECT_NE(nodes_[0], nodes_[2]) << "two regions, two contexts";
}

// A team's fork and join as OpenMP records them: carried by the master's
// enter and leave of the parallel region, outside it. They read back before
// the Enter and after the Leave, whether the region is one whole call, a
// repeat of one, or has records of its own inside.
TEST_F(DrainTest, EventsOutsideARegionComeBeforeItsEnterAndAfterItsLeave) {
  constexpr uint32_t kFork = kCollectiveBegin, kJoin = kCollectiveEnd;
  EventPayload team;
  team.word[1] = 4;
  const RegionBody forking{5, kRegionCarriesEvent | kRegionEventsOutside | kFork << kCarriedEventKindShift, team};
  const RegionBody joining{5, kRegionCarriesEmptyEvent | kRegionEventsOutside | kJoin << kEmptyEventKindShift, {}};
  for (uint64_t at : {100, 200, 300}) {  // a loop's regions: the second and third are repeats
    ASSERT_TRUE(t_->traced.calls.enter(t_->ring, at, forking, CallerStackCache::Ref{2, 9, false}, nullptr, 0));
    ASSERT_TRUE(t_->traced.calls.leave(t_->ring, at + 50, joining, CallerStackCache::Ref{2, 9, false}));
  }
  enter(400, 5, kRegionCarriesEmptyEvent | kRegionEventsOutside | kFork << kEmptyEventKindShift);
  sample(420);
  enter(430, 6);
  leave(440, 6);
  leave(450, 5, joining.flags);
  EXPECT_EQ(stream(), (Seen{{'M', 100}, {'E', 100}, {'L', 150}, {'M', 150},
                            {'M', 200}, {'E', 200}, {'L', 250}, {'M', 250},
                            {'M', 300}, {'E', 300}, {'L', 350}, {'M', 350},
                            {'M', 400}, {'E', 400}, {'S', 420}, {'E', 430}, {'L', 440}, {'L', 450}, {'M', 450}}));
  EXPECT_EQ(peers_[0], 4u) << "the fork's payload travels with it";
}

// An OS-runtime wait is written at its end (kRegionEnterLate): a sample
// taken inside it (the kernel's time waking the thread) is in the ring
// before its enter; the stream has the enter first, the sample inside the
// region, its leave last. A sample before the wait stays before it, and
// a second wait from the same place (a repeat) is handled alike.
TEST_F(DrainTest, ASampleTakenInsideALateRegionIsWrittenInsideIt) {
  sample(90);
  sample(150);  // inside the wait that began at 100
  enter(100, 7, kRegionEnterLate);
  leave(200, 7);
  sample(260);  // inside the next wait, from the same stack: a repeat
  ASSERT_TRUE(t_->traced.calls.enter(t_->ring, 250, RegionBody{7, kRegionEnterLate, {}}, CallerStackCache::Ref{3, 11, true},
                                     nullptr, 0));
  ASSERT_TRUE(t_->traced.calls.leave(t_->ring, 300, RegionBody{7, 0, {}}, CallerStackCache::Ref{3, 11, true}));
  sample(340);
  ASSERT_TRUE(t_->traced.calls.enter(t_->ring, 320, RegionBody{7, kRegionEnterLate, {}}, CallerStackCache::Ref{3, 11, true},
                                     nullptr, 0));
  ASSERT_TRUE(t_->traced.calls.leave(t_->ring, 380, RegionBody{7, 0, {}}, CallerStackCache::Ref{3, 11, true}));
  sample(400);  // after it: held until the thread's end, then written
  EXPECT_EQ(stream(), (Seen{{'S', 90}, {'E', 100}, {'S', 150}, {'L', 200},
                            {'E', 250}, {'S', 260}, {'L', 300},
                            {'E', 320}, {'S', 340}, {'L', 380}, {'S', 400}}));
}

// An eager send that polled its transport for several sampling periods
// (a loaded machine): every sample taken inside it precedes its late
// enter in the ring, and all of them read back inside the call, whether
// it is written as an enter and a leave or whole (a repeat). A sample
// outside any traced call ends the run held.
TEST_F(DrainTest, EverySampleTakenInsideALateCallIsWrittenInsideIt) {
  sample(90);
  sample(150, kSampleInTracedCall);
  sample(170, kSampleInTracedCall);
  sample(190, kSampleInTracedCall);
  enter(100, 7, kRegionEnterLate);
  leave(200, 7);
  EXPECT_EQ(stream(), (Seen{{'S', 90}, {'E', 100}, {'S', 150}, {'S', 170}, {'S', 190}, {'L', 200}}));
}

TEST_F(DrainTest, EverySampleInsideALateCallWrittenWholeIsInsideIt) {
  held_enters_ = true;
  const RegionBody late{7, kRegionEnterLate, {}}, leaving{7, 0, {}};
  const CallerStackCache::Ref ref{3, 11, true};
  call_from(100, 120, late, leaving, ref);
  sample(230, kSampleInTracedCall);
  sample(260, kSampleInTracedCall);
  call_from(200, 300, late, leaving, ref);
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'L', 120}, {'E', 200}, {'S', 230}, {'S', 260}, {'L', 300}}));
}

// More samples inside one call than are held: the oldest are written
// first and the enter starts after them (the stream stays in time order),
// none is lost.
TEST_F(DrainTest, ALongRunOfSamplesInsideACallLosesNone) {
  for (uint64_t ns = 110; ns < 110 + 20 * 10; ns += 10) sample(ns, kSampleInTracedCall);
  enter(100, 7, kRegionEnterLate);
  leave(400, 7);
  const Seen seen = stream();
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const auto& e) { return e.first == 'S'; }), 20);
  const auto enter_at = std::find_if(seen.begin(), seen.end(), [](const auto& e) { return e.first == 'E'; });
  ASSERT_NE(enter_at, seen.end());
  EXPECT_EQ(*enter_at, std::make_pair('E', uint64_t{140})) << "after the 4 samples written before it";
  EXPECT_EQ(seen.end() - enter_at, 1 + 16 + 1) << "the enter, the samples held, the leave";
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.second < b.second; }));
}

// A send recorded after it ran, from a stack not seen before, has its
// enter written before its hooks run and its message as an event record
// after that enter (MpiCall::start): a sample taken inside the send is in
// the ring before both. The message, sent at the call's start, reads back
// before the sample; an event at the call's end after it.
TEST_F(DrainTest, ALateCallsEventAtItsStartComesBeforeTheSampleInsideIt) {
  sample(150);
  enter(100, 7, kRegionEnterLate);
  event(100, kSend);
  event(200, kIsendComplete);
  leave(200, 7);
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'M', 100}, {'S', 150}, {'M', 200}, {'L', 200}}));
}

// A call recorded after it ran that repeats the last from its stack is
// one record (CallRepeatRecord), read after a sample taken inside the
// call: the sample reads back between the call's enter and its leave.
TEST_F(DrainTest, ASampleInsideALateCallWrittenWholeIsInsideIt) {
  held_enters_ = true;
  const RegionBody late{7, kRegionEnterLate, {}}, leaving{7, 0, {}};
  const CallerStackCache::Ref ref{3, 11, true};
  call_from(100, 120, late, leaving, ref);  // the first from its stack: an enter and a leave record
  sample(250);
  call_from(200, 300, late, leaving, ref);
  EXPECT_EQ(enters_held_, 1) << "the second call is one record";
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'L', 120}, {'E', 200}, {'S', 250}, {'L', 300}}));
}

// An adapter the spine has never heard of: it registers its event set,
// writes an event of its own and one carried by a region's enter; the
// stream defines the set before its events, and kinds and payloads come
// back as written. Nothing in the ring, drain or stream names it.
TEST_F(DrainTest, AnAdaptersOwnEventsReachTheStreamWithTheirSet) {
  const uint32_t base = register_event_set("drain-test-toy", 2);
  ASSERT_NE(base, kNoEventSet);
  EventPayload tick;
  tick.word[0] = 42, tick.wide[2] = 1ull << 50;
  auto* e = reinterpret_cast<EventRecord*>(
      t_->ring.reserve_exclusive(sizeof(EventRecord), uint16_t(RecordType::kEvent), uint16_t(base + 1)));
  ASSERT_NE(e, nullptr);
  *e = EventRecord{e->header, 90, tick};
  t_->ring.commit_exclusive();
  EventPayload start;
  start.word[3] = 7;
  ASSERT_TRUE(t_->traced.calls.enter(t_->ring, 100, RegionBody{3, kRegionCarriesEvent | base << kCarriedEventKindShift, start},
                                     CallerStackCache::Ref{}, nullptr, 0));
  leave(150, 3);
  drain_.flush_now();
  std::vector<raw::Record> records;
  std::string error;
  ASSERT_TRUE(raw::read_stream(path_, [&](const raw::Record& r) { records.push_back(r); }, nullptr, &error)) << error;
  size_t set_at = records.size();
  std::vector<raw::Event> events;
  for (size_t i = 0; i < records.size(); ++i) {
    if (const auto* d = std::get_if<raw::EventSetDef>(&records[i]); d && d->name == "drain-test-toy") {
      EXPECT_EQ(d->base, base);
      EXPECT_EQ(d->kinds, 2u);
      set_at = std::min(set_at, i);
    }
    if (const auto* ev = std::get_if<raw::Event>(&records[i])) {
      EXPECT_LT(set_at, i) << "the set is defined before its first event";
      events.push_back(*ev);
    }
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, base + 1);
  EXPECT_EQ(events[0].timestamp_ns, 90u);
  EXPECT_EQ(events[0].payload, tick);
  EXPECT_EQ(events[1].kind, base);
  EXPECT_EQ(events[1].timestamp_ns, 100u);
  EXPECT_EQ(events[1].payload, start);
}

TEST_F(DrainTest, ASampleInsideACallComesBetweenItsEnterAndLeave) {
  enter(100, 1);
  sample(120);
  event(150, kRecv);
  leave(150, 1);
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'S', 120}, {'M', 150}, {'L', 150}}));
  ASSERT_EQ(nodes_.size(), 2u);
  EXPECT_EQ(nodes_[0], nodes_[1]);
}

TEST_F(DrainTest, CallsInsideCallsAndManyEventsKeepTheirOrder) {
  enter(100, 1);
  enter(110, 2);  // MPI calling MPI would not be traced twice; any region may
  leave(120, 2);
  for (uint64_t i = 0; i < 3; ++i) event(130, kIsendComplete);  // more than a Call holds
  leave(130, 1);
  enter(200, 1);
  event(205, kSend);  // stamped neither at the enter nor at the leave
  leave(210, 1);
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'E', 110}, {'L', 120}, {'M', 130}, {'M', 130}, {'M', 130}, {'L', 130},
                            {'E', 200}, {'M', 205}, {'L', 210}}));
  ASSERT_EQ(nodes_.size(), 6u);
  EXPECT_EQ(nodes_[0], nodes_[3]);
  EXPECT_EQ(nodes_[1], nodes_[2]);
  EXPECT_EQ(nodes_[4], nodes_[5]);
}

// A loop's calls from one place are written as repeats of the first: what
// reads back must be exactly what each call said, also when a call in the
// middle differs (another peer), has a sample inside, or when a pass (and
// a chunk) ends between two calls.
TEST_F(DrainTest, RepeatedCallsFromOnePlaceReadBackExactly) { check_repeated_calls_from_one_place(); }

// The same with the repeated enters held back until their leave (one
// record a call) or until a sample inside the call writes them first.
TEST_F(DrainTest, HeldBackEntersReadBackExactly) {
  held_enters_ = true;
  check_repeated_calls_from_one_place();
  EXPECT_GE(enters_held_, 10);
}

void DrainTest::check_repeated_calls_from_one_place() {
  Seen expected;
  std::vector<uint32_t> expected_peers;
  uint64_t now = 1000;
  auto send = [&](uint32_t generation, int peer) {
    enter_from(now, 1, 0, generation, peer);
    leave_from(now + 50, 1, 0, generation);
    expected.insert(expected.end(), {{'E', now}, {'M', now}, {'L', now + 50}});
    expected_peers.push_back(uint32_t(peer));
    now += 100;
  };
  auto recv = [&](int peer, bool sample_inside = false) {
    enter_from(now, 2, 1, 1);
    expected.push_back({'E', now});
    if (sample_inside) {
      sample(now + 10);
      expected.push_back({'S', now + 10});
    }
    leave_from(now + 60, 2, 1, 1, peer);
    expected.insert(expected.end(), {{'M', now + 60}, {'L', now + 60}});
    expected_peers.push_back(uint32_t(peer));
    now += 100;
  };
  for (int i = 0; i < 5; ++i) send(1, 1), recv(1);
  send(1, 2);                 // another peer: the enter differs
  recv(3);                    // another source: the leave differs
  send(1, 1), recv(1);        // and back
  recv(1, true);              // a sample inside
  recv(1);
  drain_.flush_now();         // the pass ends, the chunk is written
  for (int i = 0; i < 3; ++i) send(1, 1), recv(1);
  send(2, 1);                 // the cache's entry now holds another stack
  send(2, 1);
  EXPECT_EQ(stream(), expected);
  EXPECT_EQ(peers_, expected_peers);
  // Each leave names its enter's context; sends and receives have their own.
  ASSERT_EQ(nodes_.size() % 2, 0u);
  for (size_t i = 0; i < nodes_.size(); i += 2) EXPECT_EQ(nodes_[i], nodes_[i + 1]) << "call " << i / 2;
  EXPECT_NE(nodes_[0], nodes_[2]);
  EXPECT_EQ(nodes_[0], nodes_[4]);
}

// A loop of non-blocking calls: each leave carries a request numbered one
// more than the last (a counting event), which the writer repeats; every
// call must read back with its own number, across a pass (a new chunk,
// where the stream's memory of shapes starts afresh) and a number skipped.
TEST_F(DrainTest, RepeatedCallsWithCountingEventsReadBackWithTheirNumbers) { check_counting_calls(); }

// The same with the enters held back: each call is one record.
TEST_F(DrainTest, HeldBackCallsWithCountingEventsReadBackWithTheirNumbers) {
  held_enters_ = true;
  check_counting_calls();
  EXPECT_GE(enters_held_, 500);
}

void DrainTest::check_counting_calls() {
  auto isend = [&](uint64_t ns, uint64_t request) {
    call_from(ns, ns + 40, body(1, kSend, -1, 0, 0), isend_leave(request), CallerStackCache::Ref{0, 1, false});
  };
  std::vector<uint64_t> expected;
  uint64_t now = 1000;
  auto run = [&](uint64_t first, int calls) {
    for (int i = 0; i < calls; ++i, now += 100) {
      isend(now, first + uint64_t(i));
      expected.push_back(first + uint64_t(i));
    }
  };
  const uint64_t before = drain_.bytes_written();
  run(100, 200);
  drain_.flush_now();
  run(300, 200);  // the next chunk
  run(700, 200);  // a jump: written in full once, then repeats again
  std::vector<uint64_t> requests;
  size_t calls = 0;
  std::string error;
  drain_.flush_now();
  const uint64_t bytes = drain_.bytes_written() - before;
  ASSERT_TRUE(raw::read_stream(
      path_,
      [&](const raw::Record& r) {
        if (const auto* e = std::get_if<raw::Event>(&r)) requests.push_back(e->payload.wide[2]);
        if (std::holds_alternative<raw::Leave>(r)) ++calls;
      },
      nullptr, &error))
      << error;
  EXPECT_EQ(calls, expected.size());
  EXPECT_EQ(requests, expected);
  // Written as repeats: a few bytes a call (in full, a call and its event
  // take tens of bytes each).
  EXPECT_LT(bytes, 12 * expected.size()) << bytes << " bytes for " << expected.size() << " calls";
}

// A call whose enter was still held back when the capture window closed
// comes whole after the close: it is dropped, as the leave of a call the
// close found open is, and the site's next calls (counting events) read
// back with their own numbers.
TEST_F(DrainTest, AHeldBackCallTheWindowsCloseCutIsDroppedAndTheNextReadBackRight) {
  const CallerStackCache::Ref ref{0, 1, false};
  const RegionBody enter = body(1, kSend, -1, 0, 0);
  held_enters_ = true;
  auto isend = [&](uint64_t ns, uint64_t request) { call_from(ns, ns + 40, enter, isend_leave(request), ref); };
  isend(100, 10);
  isend(200, 11);
  ASSERT_TRUE(t_->traced.calls.defer_enter(300, enter, ref, 0, 0));  // request 12 is being made...
  ASSERT_TRUE(drain_.set_window(false, 320, "test", 0));               // ... when the window closes
  ASSERT_TRUE(t_->traced.calls.leave(t_->ring, 340, isend_leave(12), ref));
  drain_.flush_now();
  ASSERT_TRUE(drain_.set_window(true, 500, "test", 0));
  isend(600, 13);
  isend(700, 14);
  drain_.flush_now();
  std::vector<std::pair<char, uint64_t>> seen;
  std::vector<uint64_t> requests;
  std::string error;
  ASSERT_TRUE(raw::read_stream(
      path_,
      [&](const raw::Record& r) {
        if (const auto* e = std::get_if<raw::Enter>(&r)) seen.emplace_back('E', e->timestamp_ns);
        if (const auto* l = std::get_if<raw::Leave>(&r)) seen.emplace_back('L', l->timestamp_ns);
        if (const auto* m = std::get_if<raw::Event>(&r)) requests.push_back(m->payload.wide[2]);
      },
      nullptr, &error))
      << error;
  EXPECT_EQ(seen, (Seen{{'E', 100}, {'L', 140}, {'E', 200}, {'L', 240}, {'E', 600}, {'L', 640}, {'E', 700}, {'L', 740}}));
  EXPECT_EQ(requests, (std::vector<uint64_t>{10, 11, 13, 14}));
}

// A process killed while a call blocks must still show the call's start.
TEST_F(DrainTest, ACallInProgressIsOnDiskAfterEachPass) {
  enter(100, 1);
  EXPECT_EQ(stream(), (Seen{{'E', 100}}));
  event(300, kRecv);
  leave(300, 1);
  nodes_.clear();
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'M', 300}, {'L', 300}}));
  ASSERT_EQ(nodes_.size(), 2u);
  EXPECT_EQ(nodes_[0], nodes_[1]);
}

// The same for a loop's call, written as repeats: its enter is on disk
// after the pass, and its leave (a repeat of a leave written before) closes
// it in the next one.
TEST_F(DrainTest, ARepeatedCallInProgressIsOnDiskAfterEachPass) {
  enter_from(100, 1, 0, 1, 5);
  leave_from(150, 1, 0, 1);
  enter_from(200, 1, 0, 1, 5);
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'M', 100}, {'L', 150}, {'E', 200}, {'M', 200}}));
  leave_from(260, 1, 0, 1);
  nodes_.clear();
  peers_.clear();
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'M', 100}, {'L', 150}, {'E', 200}, {'M', 200}, {'L', 260}}));
  EXPECT_EQ(peers_, (std::vector<uint32_t>{5, 5}));
  ASSERT_EQ(nodes_.size(), 4u);
  EXPECT_EQ(nodes_[2], nodes_[3]) << "the leave names its enter's context";
  EXPECT_EQ(nodes_[0], nodes_[2]);
}

// A loop's call with an event of its own between its enter and leave (a
// second completion at the call's end, which the leave record cannot
// carry) is not the loop's other calls: the event must read back, and the
// next plain call must not gain it.
TEST_F(DrainTest, AnEventInsideARepeatedCallIsKept) {
  for (uint64_t start : {100, 200, 300, 400}) {
    enter_from(start, 1, 0, 1, 5);
    if (start == 300) event(start + 50, kIsendComplete, 9);
    leave_from(start + 50, 1, 0, 1);
  }
  EXPECT_EQ(stream(), (Seen{{'E', 100}, {'M', 100}, {'L', 150}, {'E', 200}, {'M', 200}, {'L', 250}, {'E', 300},
                            {'M', 300}, {'M', 350}, {'L', 350}, {'E', 400}, {'M', 400}, {'L', 450}}));
  EXPECT_EQ(peers_, (std::vector<uint32_t>{5, 5, 5, 9, 5}));
}

// A Waitall's completions, written by the producer as one full event and
// repeats of it (the same, or its request number moved on), read back as
// every event it completed, across passes and chunks, in a few bytes each.
TEST_F(DrainTest, CompletionsWrittenAsRepeatsReadBackWhole) {
  struct Completion {
    uint64_t ns;
    uint32_t kind;
    EventPayload payload;
  };
  std::vector<Completion> written;
  uint64_t request = 1;
  const uint64_t before = drain_.bytes_written();
  for (uint64_t window = 0; window < 40; ++window) {
    const uint64_t end = 1000000 + 10000 * window;
    for (int k = 0; k < 64; ++k) written.push_back({end, kRecv, message(3, 0, 8)}), written.back().payload.wide[2] = request++;
    for (int k = 0; k < 64; ++k) written.push_back({end, kIsendComplete, {}}), written.back().payload.wide[2] = request++;
    if (window == 5) written.push_back({end + 1, kRecv, message(4, 0, 8)});  // another peer, no number: in full
    if (window == 6) written.push_back({end + 1, kRecv, message(4, 0, 8)});  // the same as the last: a repeat
    for (size_t i = written.size() - (window == 5 || window == 6 ? 129 : 128); i < written.size(); ++i)
      ASSERT_TRUE(t_->traced.calls.event(t_->ring, written[i].ns, written[i].kind, written[i].payload));
    if (window % 10 == 9) drain_.flush_now();  // a pass, and a chunk, ends
  }
  drain_.flush_now();
  const uint64_t bytes = drain_.bytes_written() - before;
  std::vector<Completion> read;
  std::string error;
  ASSERT_TRUE(raw::read_stream(
      path_,
      [&](const raw::Record& r) {
        if (const auto* e = std::get_if<raw::Event>(&r)) read.push_back({e->timestamp_ns, e->kind, e->payload});
      },
      nullptr, &error))
      << error;
  ASSERT_EQ(read.size(), written.size());
  size_t bad = 0;
  for (size_t i = 0; i < read.size(); ++i)
    bad += read[i].ns != written[i].ns || read[i].kind != written[i].kind || read[i].payload != written[i].payload;
  EXPECT_EQ(bad, 0u);
  // In full an event takes ~15 bytes here.
  EXPECT_LT(bytes, 5 * written.size()) << bytes << " bytes for " << written.size() << " events";
}

// Calls with nothing inside them are stored whole: markedly fewer bytes
// than the same calls written as enter, event and leave.
TEST_F(DrainTest, WholeCallsTakeFewerBytes) {
  auto bytes_for_calls = [&](uint64_t event_offset) {
    const uint64_t before = drain_.bytes_written();
    for (uint64_t i = 0; i < 1000; ++i) {
      const uint64_t start = 1000000 + 1000 * i;
      enter(start, 1);
      event(start + event_offset, kSend);
      leave(start + 400, 1);
      if (i % 100 == 99) drain_.flush_now();
    }
    drain_.flush_now();
    return drain_.bytes_written() - before;
  };
  const uint64_t whole = bytes_for_calls(0);
  const uint64_t split = bytes_for_calls(1);  // an event at neither end: no Call
  EXPECT_LT(whole * 10, split * 8) << whole << " bytes whole vs " << split << " split";
}

// A producer that writes faster than the drain's passes (here: none) has
// its ring written out when it is full: every record reaches the stream, in
// order, and the waits are regions of their own between them.
TEST_F(DrainTest, AFullRingIsWrittenOutNotLost) {
  constexpr uint32_t kRegion = 5;
  constexpr int kCalls = 6000;  // 32-byte enters and leaves: 6x the 64 KiB ring
  auto write_region = [&](RecordType type) {
    const uint64_t now = trace_clock_now();  // read before the write, as producers do
    return drain_.write_or_flush(*t_, [&] {
      auto* r = reinterpret_cast<RegionRecord*>(t_->ring.reserve_exclusive(sizeof(RegionRecord), uint16_t(type), 0));
      if (r == nullptr) return false;
      *r = RegionRecord{r->header, now, kRegion, 0, 0, 0};
      t_->ring.commit_exclusive();
      return true;
    });
  };
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(write_region(RecordType::kRegionEnter)) << i;
    ASSERT_TRUE(write_region(RecordType::kRegionLeave)) << i;
  }
  // A record larger than the whole ring cannot be written: the one loss.
  EXPECT_FALSE(drain_.write_or_flush(*t_, [&] { return t_->ring.reserve_exclusive(128 * 1024, 1, 0) != nullptr; }));
  drain_.finish_thread(t_, trace_clock_now());
  drain_.flush_now();

  int enters = 0, leaves = 0, flushes = 0, open = 0, max_open = 0;
  uint64_t last_ns = 0;
  bool ordered = true, flush_defined = false;
  raw::ThreadCounters counters;
  std::string error;
  ASSERT_TRUE(raw::read_stream(
      path_,
      [&](const raw::Record& r) {
        if (const auto* d = std::get_if<raw::RegionDef>(&r))
          flush_defined |= d->id == ring_flush_region() && d->name == "hybridprof: ring flush";
        if (const auto* e = std::get_if<raw::LocationEnd>(&r)) counters = e->counters;
        const raw::RegionEvent* ev = nullptr;
        if (const auto* e = std::get_if<raw::Enter>(&r)) {
          ev = e;
          if (e->region == ring_flush_region()) ++flushes;
          else ++enters, max_open = std::max(max_open, ++open);
        }
        if (const auto* l = std::get_if<raw::Leave>(&r)) {
          ev = l;
          if (l->region == kRegion) ++leaves, --open;
        }
        if (ev) {
          ordered &= ev->timestamp_ns >= last_ns;
          last_ns = ev->timestamp_ns;
        }
      },
      nullptr, &error))
      << error;
  EXPECT_EQ(enters, kCalls);
  EXPECT_EQ(leaves, kCalls);
  EXPECT_EQ(max_open, 1) << "the waits never split a call from its leave";
  EXPECT_TRUE(ordered) << "each wait lies after the records written before it";
  EXPECT_TRUE(flush_defined);
  EXPECT_GE(flushes, 5) << "the ring filled at least once per 64 KiB written";
  EXPECT_EQ(counters.ring_flushes, uint64_t(flushes));
  EXPECT_GT(counters.ring_flush_ns, 0u);
  t_ = drain_.add_thread(getpid(), 1);  // for TearDown
}

}  // namespace
}  // namespace hybridprof

namespace hybridprof {
namespace {

// A thread's stacks share their outer frames, and the drain interns each
// from where it parts from the thread's last one: the paths must read back
// as if each had been interned from its root, whatever came before.
class DrainInterningTest : public DrainTest {
 protected:
  // A sample whose stack is `ips` (innermost first; ips[0] the
  // interrupted instruction), with `flags`.
  void sample_with(uint64_t ns, const std::vector<uint64_t>& ips, uint32_t flags = 0) {
    auto* s = reinterpret_cast<SampleRecord*>(t_->ring.reserve_exclusive(
        sample_record_bytes(uint32_t(ips.size())), uint16_t(RecordType::kSample), uint16_t(ips.size())));
    ASSERT_NE(s, nullptr);
    s->timestamp_ns = ns;
    s->flags = flags;
    s->weight = 1;
    std::copy(ips.begin(), ips.end(), s->ips());
    t_->ring.commit_exclusive();
    drain_.flush_now();  // one pass a sample: stacks interned across passes too
  }
  // Every sample's path read back: its root, then (module, offset) from
  // the outermost frame in; and whether any node was defined twice.
  struct Path {
    uint32_t root = 0;
    std::vector<uint64_t> offsets;  // outermost first
    bool operator==(const Path&) const = default;
  };
  std::vector<Path> paths(bool* defined_twice) {
    drain_.flush_now();
    std::map<uint32_t, raw::CctNode> nodes;
    std::set<std::tuple<uint32_t, uint32_t, uint64_t>> keys;
    std::vector<uint32_t> sampled;
    *defined_twice = false;
    std::string error;
    EXPECT_TRUE(raw::read_stream(
        path_,
        [&](const raw::Record& r) {
          if (const auto* n = std::get_if<raw::CctNode>(&r)) {
            nodes[n->id] = *n;
            *defined_twice |= !keys.emplace(n->parent, n->module, n->offset).second;
          }
          if (const auto* s = std::get_if<raw::Sample>(&r)) sampled.push_back(s->node);
        },
        nullptr, &error))
        << error;
    std::vector<Path> out;
    for (uint32_t node : sampled) {
      Path p;
      while (nodes.count(node)) {
        p.offsets.insert(p.offsets.begin(), nodes[node].offset);
        node = nodes[node].parent;
      }
      p.root = node;
      out.push_back(p);
    }
    return out;
  }
  // What a sample of `ips` interns to, from its root: no module is known
  // for these addresses, so each frame is its address (a return address
  // stepped back into its call, the interrupted instruction as it is).
  static Path expected(const std::vector<uint64_t>& ips, uint32_t root = raw::kRootComplete) {
    Path p{root, {}};
    for (size_t i = ips.size(); i-- > 0;) p.offsets.push_back(i == 0 ? ips[0] : ips[i] - 1);
    return p;
  }
  // A stack of `outer` frames shared by all, then `inner` of its own
  // (`tag` tells them apart), innermost first.
  static std::vector<uint64_t> stack(uint32_t outer, uint32_t inner, uint64_t tag) {
    std::vector<uint64_t> ips;
    for (uint32_t i = 0; i < inner; ++i) ips.push_back(0x500000 + tag * 0x1000 + i * 16 + 1);
    for (uint32_t i = outer; i-- > 0;) ips.push_back(0x400000 + i * 16 + 1);
    return ips;
  }
};

TEST_F(DrainInterningTest, StacksSharingOuterFramesReadBackAsFromTheirRoot) {
  const std::vector<std::vector<uint64_t>> stacks = {
      stack(40, 10, 1),  // deep
      stack(40, 3, 2),   // parts from it near the innermost frame
      stack(25, 0, 0),   // its outer frames only
      stack(40, 10, 1),  // the first again
      stack(40, 10, 1),  // and again (all of it shared)
      stack(45, 2, 3),   // longer outwards than the last (its outermost frames differ)
      stack(1, 0, 0),    // one frame
      stack(40, 10, 4),
  };
  std::vector<Path> want;
  uint64_t ns = 1000;
  for (const auto& ips : stacks) {
    sample_with(ns += 10, ips);
    want.push_back(expected(ips));
  }
  // The same stack cut at --max-depth: its path starts at another root.
  sample_with(ns += 10, stacks[0], kSampleTruncated);
  want.push_back(expected(stacks[0], raw::kRootTruncated));
  sample_with(ns += 10, stacks[0]);
  want.push_back(expected(stacks[0]));
  bool defined_twice = true;
  const std::vector<Path> got = paths(&defined_twice);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "sample " << i;
  EXPECT_FALSE(defined_twice) << "a frame under one parent is one node";
}

TEST_F(DrainInterningTest, AFrameThatBecomesToolCodeIsDroppedFromTheNextStack) {
  const std::vector<uint64_t> ips = stack(20, 5, 1);
  sample_with(1000, ips);
  // Another tool's code now covers an outer frame (its range registered
  // after the first sample): the next sample of the same stack leaves it
  // out, though the stack is the one interned last.
  const uint64_t tool_frame = ips[10];
  drain_.add_tool_code(tool_frame - 1, tool_frame);
  sample_with(1010, ips);
  bool defined_twice = true;
  const std::vector<Path> got = paths(&defined_twice);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], expected(ips));
  Path without = expected(ips);
  without.offsets.erase(std::find(without.offsets.begin(), without.offsets.end(), tool_frame - 1));
  EXPECT_EQ(got[1], without);
}

}  // namespace
}  // namespace hybridprof
