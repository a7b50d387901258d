// What TracedCallWriter puts in the ring: a full record whenever it says
// something new for its caller stack, a 16-byte repeat otherwise, and
// nothing remembered from a record that did not fit.
#include "trace/traced_call_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hybridprof {
namespace {

using Ref = CallerStackCache::Ref;

constexpr uint32_t kSend = 1, kRecv = 2;

RegionBody carrying(uint32_t region, uint32_t peer, uint32_t kind = 1) {
  EventPayload message;  // peer, tag 7, 8 bytes
  message.word[1] = peer, message.word[2] = 7, message.wide[0] = 8;
  return RegionBody{region, kRegionCarriesEvent | kind << kCarriedEventKindShift, message};
}
RegionBody bare(uint32_t region) { return RegionBody{region, 0, {}}; }
// A send's record carrying its request's number (a counting event).
RegionBody request(uint64_t id) {
  RegionBody b = carrying(kSend, 1);
  b.flags |= kRegionEventCounts;
  b.event.wide[2] = id;
  return b;
}

class TracedCallWriterTest : public ::testing::Test {
 protected:
  // What was written since the last call: 'E'/'L' full enter/leave (with
  // the size), 'e'/'l' repeats (with the slot); 'V' a full event (with the
  // size), 'v'/'c' its repeat as it was / counted on (with the kind),
  // 'R'/'C' a run of such repeats (kind, then "x" and the count); 'w' a
  // whole call repeated (slot, "@", its enter's and leave's times).
  std::vector<std::string> written() {
    std::vector<std::string> out;
    ring_.consume([&](const RecordHeader& h) {
      switch (static_cast<RecordType>(h.type)) {
        case RecordType::kRegionEnter: out.push_back("E" + std::to_string(h.size)); break;
        case RecordType::kRegionLeave: out.push_back("L" + std::to_string(h.size)); break;
        case RecordType::kRegionEnterRepeat: out.push_back("e" + std::to_string(h.aux)); break;
        case RecordType::kRegionLeaveRepeat: out.push_back("l" + std::to_string(h.aux)); break;
        case RecordType::kEvent: out.push_back("V" + std::to_string(h.size)); break;
        case RecordType::kEventRepeat:
          out.push_back(((h.aux & kEventRepeatCounts) ? "c" : "v") + std::to_string(h.aux & 0xff));
          break;
        case RecordType::kEventRun:
          out.push_back(((h.aux & kEventRepeatCounts) ? "C" : "R") + std::to_string(h.aux & 0xff) + "x" +
                        std::to_string(reinterpret_cast<const EventRunRecord&>(h).count));
          break;
        case RecordType::kCallRepeat: {
          const auto& c = reinterpret_cast<const CallRepeatRecord&>(h);
          out.push_back("w" + std::to_string(h.aux) + "@" + std::to_string(c.enter) + "-" + std::to_string(c.leave));
          break;
        }
        default: out.push_back("?"); break;
      }
    });
    return out;
  }
  using Written = std::vector<std::string>;

  alignas(64) unsigned char storage_[4096];
  ThreadRing ring_{storage_, sizeof storage_};
  TracedCallWriter writer_;
  uint64_t ips_[3] = {0x1000, 0x2000, 0x3000};
};

TEST_F(TracedCallWriterTest, ALoopsSecondCallIsTwoRepeats) {
  const Ref first{2, 5, true}, again{2, 5, false};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(writer_.enter(ring_, 100, carrying(kSend, 1), i ? again : first, ips_, i ? 0 : 3));
    ASSERT_TRUE(writer_.leave(ring_, 150, bare(kSend), i ? again : first));
  }
  // 32-byte record + 3 addresses + 40-byte event; a bare leave is 32 bytes.
  EXPECT_EQ(written(), (Written{"E96", "L32", "e2", "l2", "e2", "l2"}));
}

TEST_F(TracedCallWriterTest, ARecordThatSaysSomethingNewIsWrittenInFull) {
  const Ref stack{0, 1, false};
  writer_.enter(ring_, 100, carrying(kSend, 1), stack, nullptr, 0);
  writer_.leave(ring_, 150, bare(kSend), stack);
  writer_.enter(ring_, 200, carrying(kSend, 2), stack, nullptr, 0);  // another peer
  writer_.leave(ring_, 250, bare(kSend), stack);  // the site starts afresh with a full enter
  writer_.enter(ring_, 300, carrying(kSend, 2), stack, nullptr, 0);
  writer_.leave(ring_, 350, carrying(kSend, 3, 2), stack);  // a leave carrying an event now
  writer_.enter(ring_, 400, carrying(kSend, 2), stack, nullptr, 0);
  writer_.leave(ring_, 450, carrying(kSend, 3, 2), stack);
  EXPECT_EQ(written(), (Written{"E72", "L32", "E72", "L32", "e0", "L72", "e0", "l0"}));
}

TEST_F(TracedCallWriterTest, StacksAreTheirOwnSitesAndNewGenerationsStartAfresh) {
  writer_.enter(ring_, 100, carrying(kSend, 1), Ref{0, 1, false}, nullptr, 0);
  writer_.leave(ring_, 110, bare(kSend), Ref{0, 1, false});
  writer_.enter(ring_, 120, carrying(kRecv, 1), Ref{1, 2, false}, nullptr, 0);
  writer_.leave(ring_, 130, bare(kRecv), Ref{1, 2, false});
  writer_.enter(ring_, 140, carrying(kSend, 1), Ref{0, 1, false}, nullptr, 0);
  writer_.leave(ring_, 150, bare(kSend), Ref{0, 1, false});
  writer_.enter(ring_, 160, carrying(kRecv, 1), Ref{1, 2, false}, nullptr, 0);
  writer_.leave(ring_, 170, bare(kRecv), Ref{1, 2, false});
  // Slot 0 now holds another stack: nothing it said before counts.
  writer_.enter(ring_, 180, carrying(kSend, 1), Ref{0, 3, true}, ips_, 1);
  writer_.leave(ring_, 190, bare(kSend), Ref{0, 3, true});
  // A stack not remembered (generation 0) is always written in full.
  writer_.enter(ring_, 200, bare(kSend), Ref{}, ips_, 2);
  writer_.leave(ring_, 210, bare(kSend), Ref{});
  writer_.enter(ring_, 220, bare(kSend), Ref{}, ips_, 2);
  writer_.leave(ring_, 230, bare(kSend), Ref{});
  EXPECT_EQ(written(), (Written{"E72", "L32", "E72", "L32", "e0", "l0", "e1", "l1", "E80", "L32", "E48", "L32",
                                "E48", "L32"}));
}

// A counting event (an MPI request id, numbered in turn) repeats when its
// number is the last one's plus one, and only then: a loop of Isend calls
// from one place repeats as a loop of Send calls does.
TEST_F(TracedCallWriterTest, ACountingEventRepeatsWhenItsNumberMovesOnByOne) {
  const Ref stack{0, 1, false};
  for (uint64_t id : {10, 11, 12, 12, 14, 15}) {
    writer_.enter(ring_, 100, bare(kSend), stack, nullptr, 0);
    writer_.leave(ring_, 150, request(id), stack);
  }
  // 12 again and 14 (a number skipped) are new; 11, 12, 15 repeat.
  EXPECT_EQ(written(), (Written{"E32", "L72", "e0", "l0", "e0", "l0", "e0", "L72", "e0", "L72", "e0", "l0"}));
  // Without the flag the same payloads are only ever equal to themselves.
  const Ref other{1, 2, false};
  for (uint64_t id : {20, 21, 21}) {
    RegionBody plain = request(id);
    plain.flags &= ~uint32_t{kRegionEventCounts};
    writer_.enter(ring_, 200, bare(kSend), other, nullptr, 0);
    writer_.leave(ring_, 250, plain, other);
  }
  EXPECT_EQ(written(), (Written{"E32", "L72", "e1", "L72", "e1", "l1"}));
}

// The drain keeps "the last full record" by what it reads: a record lost
// to a full ring must not count as written, or the next repeat would stand
// for something the drain never saw.
TEST_F(TracedCallWriterTest, ARecordThatFoundNoRoomIsNotRemembered) {
  const Ref stack{0, 1, false};
  writer_.enter(ring_, 100, carrying(kSend, 1), stack, nullptr, 0);
  writer_.leave(ring_, 150, bare(kSend), stack);
  uint32_t filler = 0;  // records of 8 bytes, until nothing fits
  while (ring_.reserve_exclusive(sizeof(RecordHeader), uint16_t(RecordType::kSample), 0) != nullptr) {
    ring_.commit_exclusive();
    ++filler;
  }
  EXPECT_FALSE(writer_.enter(ring_, 200, carrying(kSend, 2), stack, nullptr, 0)) << "the ring is full";
  const Written full = written();
  ASSERT_EQ(full.size(), 2u + filler);
  writer_.enter(ring_, 300, carrying(kSend, 2), stack, nullptr, 0);  // not a repeat of the lost one
  writer_.leave(ring_, 350, bare(kSend), stack);
  writer_.enter(ring_, 400, carrying(kSend, 2), stack, nullptr, 0);
  writer_.leave(ring_, 450, bare(kSend), stack);
  EXPECT_EQ(written(), (Written{"E72", "L32", "e0", "l0"}));
}

// A run of events that say what the last one said (a Waitall completing
// the same kind of message), or that with their number moved on by one
// (requests made in turn), is one full record and 16-byte repeats; any
// other kind, payload or number is written in full; an event lost to a
// full ring is not the last one.
TEST_F(TracedCallWriterTest, AnEventSayingWhatTheLastSaidIsARepeat) {
  EventPayload completion;
  completion.word[1] = 3, completion.wide[1] = 8, completion.wide[2] = 40;  // from 3, 8 bytes, request 40
  auto numbered = [&](uint64_t id) {
    EventPayload p = completion;
    p.wide[2] = id;
    return p;
  };
  ASSERT_TRUE(writer_.event(ring_, 100, kRecv, numbered(40)));
  ASSERT_TRUE(writer_.event(ring_, 100, kRecv, numbered(41)));
  ASSERT_TRUE(writer_.event(ring_, 100, kRecv, numbered(42)));
  ASSERT_TRUE(writer_.event(ring_, 100, kRecv, numbered(42)));  // the same again
  ASSERT_TRUE(writer_.event(ring_, 100, kSend, numbered(43)));  // another kind
  ASSERT_TRUE(writer_.event(ring_, 100, kSend, numbered(45)));  // a number skipped
  EventPayload other_peer = numbered(46);
  other_peer.word[1] = 4;
  ASSERT_TRUE(writer_.event(ring_, 100, kSend, other_peer));
  EXPECT_EQ(written(), (Written{"V56", "c2", "c2", "v2", "V56", "V56", "V56"}));

  uint32_t filler = 0;
  while (ring_.reserve_exclusive(sizeof(RecordHeader), uint16_t(RecordType::kSample), 0) != nullptr) {
    ring_.commit_exclusive();
    ++filler;
  }
  EventPayload lost = other_peer;
  lost.wide[2] = 47;
  EXPECT_FALSE(writer_.event(ring_, 200, kSend, lost)) << "the ring is full";
  ASSERT_EQ(written().size(), filler);
  ASSERT_TRUE(writer_.event(ring_, 300, kSend, lost));  // 46 counted on: the lost 47 is not the last
  ASSERT_TRUE(writer_.event(ring_, 300, kSend, lost));
  EXPECT_EQ(written(), (Written{"c1", "v1"}));
}

// A run of the last event's repeats is one record, and what follows it
// repeats the run's last; a run of another kind than the last event's is
// refused (nothing written), as is one that finds no room.
TEST_F(TracedCallWriterTest, ARunOfRepeatsIsOneRecordAndEndsAtItsLast) {
  EventPayload completion;
  completion.wide[2] = 10;  // request 10
  ASSERT_TRUE(writer_.event(ring_, 100, kRecv, completion));
  ASSERT_TRUE(writer_.event_run(ring_, 100, kRecv, EventRepeat::kCounted, 63));  // requests 11..73
  EventPayload next = completion;
  next.wide[2] = 74;
  ASSERT_TRUE(writer_.event(ring_, 200, kRecv, next));  // the run's last counted on
  ASSERT_TRUE(writer_.event_run(ring_, 200, kRecv, EventRepeat::kSame, 5));
  EXPECT_FALSE(writer_.event_run(ring_, 200, kSend, EventRepeat::kSame, 5)) << "not the last event's kind";
  EXPECT_FALSE(writer_.event_run(ring_, 200, kRecv, EventRepeat::kSame, 0)) << "an empty run";
  ASSERT_TRUE(writer_.event(ring_, 300, kRecv, next));  // the same again
  EXPECT_EQ(written(), (Written{"V56", "C2x63", "c2", "R2x5", "v2"}));

  while (ring_.reserve_exclusive(sizeof(RecordHeader), uint16_t(RecordType::kSample), 0) != nullptr)
    ring_.commit_exclusive();
  EXPECT_FALSE(writer_.event_run(ring_, 400, kRecv, EventRepeat::kCounted, 3)) << "the ring is full";
  written();
  next.wide[2] = 75;
  ASSERT_TRUE(writer_.event(ring_, 500, kRecv, next)) << "the lost run is not the last";
  EXPECT_EQ(written(), (Written{"c2"}));
}

// An enter from a thread running Python carries its Python frames after
// the addresses and the carried event, and is never a repeat: the same
// native stack runs other Python code at the next call.
TEST_F(TracedCallWriterTest, AnEnterUnderPythonCarriesItsFramesAfterItsEvent) {
  python::PythonFrame frames[2];
  frames[0].code = 0xc0de0, frames[0].byte_offset = 12;
  frames[1].code = 0xc0de1, frames[1].byte_offset = 34, frames[1].flags = python::kEndsEvalCall;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(writer_.enter(ring_, 100, carrying(kSend, 1), Ref{}, ips_, 3, frames, 2));
    ASSERT_TRUE(writer_.leave(ring_, 150, bare(kSend), Ref{}));
  }
  int enters = 0;
  ring_.consume([&](const RecordHeader& h) {
    if (h.type != uint16_t(RecordType::kRegionEnter)) return;
    ++enters;
    const auto& r = reinterpret_cast<const RegionRecord&>(h);
    ASSERT_EQ(h.aux, 3u);
    EXPECT_EQ(h.size, 32u + 3 * 8 + 40 + 8 + 2 * 40);
    EXPECT_EQ(r.flags & kRegionPythonFrames, kRegionPythonFrames);
    EXPECT_EQ(carried_event(r)->word[1], 1u) << "the event where it always is";
    const RegionPythonFrames* python = region_python_frames(r);
    ASSERT_EQ(python->depth, 2u);
    EXPECT_EQ(python->frames()[0].code, 0xc0de0u);
    EXPECT_EQ(python->frames()[1].byte_offset, 34);
    EXPECT_EQ(python->frames()[1].flags, uint32_t{python::kEndsEvalCall});
  });
  EXPECT_EQ(enters, 2);
}

// An enter that would be a repeat can wait (defer_enter): the call's leave
// then writes both as one record, and anything written before the leave
// writes the enter first, in its place.
TEST_F(TracedCallWriterTest, AHeldBackEnterIsWrittenWithItsLeaveOrBeforeAnythingElse) {
  const Ref first{3, 9, true}, again{3, 9, false};
  ASSERT_TRUE(writer_.enter(ring_, 100, carrying(kSend, 1), first, ips_, 3));
  ASSERT_TRUE(writer_.leave(ring_, 150, bare(kSend), first));
  // Only an enter that would be a repeat is held: not one that says
  // something new, one from a stack not remembered, one carrying frames.
  EXPECT_FALSE(writer_.defer_enter(200, carrying(kSend, 2), again, 0, 0));
  EXPECT_FALSE(writer_.defer_enter(200, carrying(kSend, 1), Ref{4, 10, true}, 1, 0));
  EXPECT_FALSE(writer_.defer_enter(200, carrying(kSend, 1), again, 0, 2));
  EXPECT_FALSE(writer_.enter_deferred());
  EXPECT_EQ(written(), (Written{"E96", "L32"}));

  // Held, then its leave: one record with both times.
  ASSERT_TRUE(writer_.defer_enter(200, carrying(kSend, 1), again, 0, 0));
  EXPECT_TRUE(writer_.enter_deferred());
  EXPECT_FALSE(writer_.defer_enter(210, carrying(kSend, 1), again, 0, 0));  // one at a time
  EXPECT_EQ(written(), (Written{}));
  ASSERT_TRUE(writer_.leave(ring_, 250, bare(kSend), again));
  EXPECT_FALSE(writer_.enter_deferred());
  EXPECT_EQ(written(), (Written{"w3@200-250"}));

  // An event in between: the enter goes first, then the event, then a plain repeat leave.
  ASSERT_TRUE(writer_.defer_enter(300, carrying(kSend, 1), again, 0, 0));
  ASSERT_TRUE(writer_.event(ring_, 320, 5, EventPayload{}));
  ASSERT_TRUE(writer_.leave(ring_, 350, bare(kSend), again));
  EXPECT_EQ(written(), (Written{"e3", "V56", "l3"}));

  // A leave that says something new: the enter, then the full leave.
  ASSERT_TRUE(writer_.defer_enter(400, carrying(kSend, 1), again, 0, 0));
  ASSERT_TRUE(writer_.leave(ring_, 450, carrying(kSend, 4, 2), again));
  EXPECT_EQ(written(), (Written{"e3", "L72"}));

  // Another call's enter (a call inside it) writes it first too; the
  // outer call's leave is then a plain repeat.
  ASSERT_TRUE(writer_.defer_enter(500, carrying(kSend, 1), again, 0, 0));
  ASSERT_TRUE(writer_.enter(ring_, 510, bare(kRecv), Ref{5, 11, true}, ips_, 1));
  ASSERT_TRUE(writer_.leave(ring_, 520, bare(kRecv), Ref{5, 11, true}));
  ASSERT_TRUE(writer_.leave(ring_, 550, carrying(kSend, 4, 2), again));
  EXPECT_EQ(written(), (Written{"e3", "E40", "L32", "l3"}));

  // What the sample handler does before its sample.
  ASSERT_TRUE(writer_.defer_enter(600, carrying(kSend, 1), again, 0, 0));
  ASSERT_TRUE(writer_.write_deferred_enter_shared(ring_));
  ASSERT_TRUE(writer_.write_deferred_enter_shared(ring_));  // nothing held: nothing written
  ASSERT_TRUE(writer_.leave(ring_, 650, carrying(kSend, 4, 2), again));
  EXPECT_EQ(written(), (Written{"e3", "l3"}));
}

// A held enter moves a counting event's number on as a written one does,
// and stays held when the ring has no room for it (nothing lost).
TEST_F(TracedCallWriterTest, AHeldBackEnterCountsOnAndWaitsForRoom) {
  const Ref stack{0, 1, false};
  ASSERT_TRUE(writer_.enter(ring_, 100, request(10), stack, nullptr, 0));
  ASSERT_TRUE(writer_.leave(ring_, 150, bare(kSend), stack));
  EXPECT_FALSE(writer_.defer_enter(200, request(10), stack, 0, 0));  // not the next number
  ASSERT_TRUE(writer_.defer_enter(200, request(11), stack, 0, 0));
  ASSERT_TRUE(writer_.leave(ring_, 250, bare(kSend), stack));
  EXPECT_FALSE(writer_.defer_enter(300, request(11), stack, 0, 0));  // 11 was written
  ASSERT_TRUE(writer_.defer_enter(300, request(12), stack, 0, 0));
  EXPECT_EQ(written(), (Written{"E72", "L32", "w0@200-250"}));

  // Fill the ring, leaving less than a record's room.
  for (uint32_t bytes : {64u, 8u})
    while (ring_.reserve_exclusive(bytes, static_cast<uint16_t>(RecordType::kPadding)) != nullptr)
      ring_.commit_exclusive();
  EXPECT_FALSE(writer_.write_deferred_enter(ring_));
  EXPECT_FALSE(writer_.leave(ring_, 350, bare(kSend), stack));
  EXPECT_TRUE(writer_.enter_deferred());
  ring_.consume([](const RecordHeader&) {});
  ASSERT_TRUE(writer_.leave(ring_, 350, bare(kSend), stack));
  EXPECT_EQ(written(), (Written{"w0@300-350"}));
}

}  // namespace
}  // namespace hybridprof
