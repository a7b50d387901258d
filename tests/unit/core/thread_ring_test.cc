#include "sigsafe/thread_ring.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace hybridprof {
namespace {

struct Payload {
  RecordHeader header;
  uint64_t sequence;
  uint64_t check;  // ~sequence: detects torn records
};

alignas(64) unsigned char g_storage[4096];
ThreadRing* g_ring = nullptr;
std::atomic<uint64_t> g_inner_sequence{1000000};

void write_record(ThreadRing& ring, uint64_t seq, uint16_t type) {
  if (auto* h = ring.reserve(sizeof(Payload), type)) {
    auto* p = reinterpret_cast<Payload*>(h);
    p->sequence = seq;
    p->check = ~seq;
    ring.commit();
  }
}

void nested_writer(int) { write_record(*g_ring, g_inner_sequence++, 2); }

TEST(ThreadRing, NestedWriterIsPublishedWithOuterAndInOrder) {
  ThreadRing ring(g_storage, sizeof g_storage);
  g_ring = &ring;
  struct sigaction sa {}, old{};
  sa.sa_handler = nested_writer;
  sigaction(SIGUSR1, &sa, &old);

  auto* outer = reinterpret_cast<Payload*>(ring.reserve(sizeof(Payload), 1));
  ASSERT_NE(outer, nullptr);
  raise(SIGUSR1);  // a handler on this thread writes while the outer record is open
  size_t seen = ring.consume([](const RecordHeader&) {});
  EXPECT_EQ(seen, 0u) << "nothing may be visible while the outer writer is open";
  outer->sequence = 7;
  outer->check = ~7ull;
  ring.commit();

  std::vector<std::pair<uint16_t, uint64_t>> records;
  ring.consume([&](const RecordHeader& h) {
    const auto& p = reinterpret_cast<const Payload&>(h);
    EXPECT_EQ(p.check, ~p.sequence);
    records.emplace_back(h.type, p.sequence);
  });
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0], (std::pair<uint16_t, uint64_t>{1, 7}));
  EXPECT_EQ(records[1].first, 2);
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(ThreadRing, FullRingRefusesAndRecoversAfterConsume) {
  ThreadRing ring(g_storage, 256);
  int written = 0;
  while (ring.reserve(sizeof(Payload), 1)) {
    ring.commit();
    ++written;
  }
  EXPECT_EQ(written, 256 / int(sizeof(Payload)));
  EXPECT_EQ(ring.consume([](const RecordHeader&) {}), size_t(written));
  EXPECT_NE(ring.reserve(sizeof(Payload), 1), nullptr);
  ring.commit();
}

// A long consume pass gives space back as it goes: a producer still
// writing during the pass finds room before the pass ends.
TEST(ThreadRing, ConsumeReleasesSpaceDuringAPass) {
  static unsigned char storage[4 * ThreadRing::kReleaseBytes];
  ThreadRing ring(storage, sizeof storage);
  uint64_t written = 0;
  while (auto* h = ring.reserve_exclusive(sizeof(Payload), 1)) {
    reinterpret_cast<Payload*>(h)->sequence = written++;
    ring.commit_exclusive();
  }
  ASSERT_GT(written, 0u);
  uint64_t consumed = 0, written_during_pass = 0;
  ring.consume([&](const RecordHeader&) {
    ++consumed;
    if (ring.reserve_exclusive(sizeof(Payload), 2)) {
      ++written_during_pass;
      ring.commit_exclusive();
    }
  });
  EXPECT_EQ(consumed, written) << "the pass reads what was there when it began";
  EXPECT_GT(written_during_pass, written / 2);
  EXPECT_EQ(ring.consume([](const RecordHeader& h) { EXPECT_EQ(h.type, 2); }), written_during_pass);
}

TEST(ThreadRing, WrapsWithPaddingAndKeepsRecordsWhole) {
  ThreadRing ring(g_storage, 256);
  uint64_t next = 0, expect = 0;
  for (int round = 0; round < 100; ++round) {
    // 40-byte records do not divide 256: the ring must pad at the end.
    for (int i = 0; i < 3; ++i) {
      auto* h = ring.reserve(40, 1);
      ASSERT_NE(h, nullptr);
      reinterpret_cast<Payload*>(h)->sequence = next;
      reinterpret_cast<Payload*>(h)->check = ~next++;
      ring.commit();
    }
    ring.consume([&](const RecordHeader& h) {
      const auto& p = reinterpret_cast<const Payload&>(h);
      EXPECT_EQ(h.size, 40u);
      EXPECT_EQ(p.sequence, expect++);
      EXPECT_EQ(p.check, ~p.sequence);
    });
  }
  EXPECT_EQ(expect, 300u);
}

TEST(ThreadRing, OversizedRecordIsRefused) {
  ThreadRing ring(g_storage, 256);
  EXPECT_EQ(ring.reserve(200, 1), nullptr);
  EXPECT_NE(ring.reserve(64, 1), nullptr);  // and the ring still works
  ring.commit();
}

// A producer thread interrupted by its own CPU-time timer signal (which
// writes nested records) while a consumer drains concurrently: every record
// arrives whole, each producer's sequence in order, none invented.
std::atomic<bool> g_stop{false};
ThreadRing* g_stress_ring = nullptr;
std::atomic<uint64_t> g_signal_records{0};
void stress_handler(int) {
  if (auto* h = g_stress_ring->reserve(sizeof(Payload), 2)) {
    auto* p = reinterpret_cast<Payload*>(h);
    p->sequence = g_signal_records.load(std::memory_order_relaxed);
    p->check = ~p->sequence;
    g_stress_ring->commit();
    g_signal_records.fetch_add(1, std::memory_order_relaxed);
  }
}

TEST(ThreadRing, ConcurrentConsumerWithSignalNesting) {
  alignas(64) static unsigned char storage[1 << 14];
  ThreadRing ring(storage, sizeof storage);
  g_stress_ring = &ring;
  struct sigaction sa {}, old{};
  sa.sa_handler = stress_handler;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGRTMIN + 1, &sa, &old);

  uint64_t produced = 0;
  std::atomic<bool> producer_done{false};
  std::thread producer([&] {
    timer_t timer;
    sigevent sev{};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGRTMIN + 1;
    sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
    ASSERT_EQ(timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &timer), 0);
    itimerspec its{{0, 20000}, {0, 20000}};
    timer_settime(timer, 0, &its, nullptr);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) {
      if (auto* h = ring.reserve(sizeof(Payload), 1)) {
        auto* p = reinterpret_cast<Payload*>(h);
        p->sequence = produced;
        p->check = ~produced;
        ring.commit();
        ++produced;
      }
    }
    timer_delete(timer);
    producer_done = true;
  });
  uint64_t next_main = 0, next_signal = 0, torn = 0;
  auto check = [&](const RecordHeader& h) {
    const auto& p = reinterpret_cast<const Payload&>(h);
    if (p.check != ~p.sequence) ++torn;
    if (h.type == 1) {
      EXPECT_EQ(p.sequence, next_main);
      next_main = p.sequence + 1;
    } else {
      EXPECT_GE(p.sequence, next_signal);
      next_signal = p.sequence + 1;
    }
  };
  while (!producer_done) ring.consume(check);
  producer.join();
  ring.consume(check);
  sigaction(SIGRTMIN + 1, &old, nullptr);
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(next_main, produced);
  EXPECT_GT(g_signal_records.load(), 10u) << "the timer should have interrupted the writer";
}

}  // namespace
}  // namespace hybridprof
