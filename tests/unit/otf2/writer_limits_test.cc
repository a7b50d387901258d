// Size and memory budgets of the writer: bytes per sample on disk, bounded
// chunk memory for long runs, thousands of short-lived threads, large
// definition sets.
#include <gtest/gtest.h>

#include <cstdio>

#include "otf2/archive_reader.h"
#include "test_support.h"

namespace hybridprof::otf2 {
namespace {

using testing::TempDir;

struct Fixture {
  uint64_t thread;
  std::vector<uint32_t> contexts;
  uint32_t generator;
};

// ~50 contexts: a root, 7 mid-level frames, 6 leaves under each of them.
Fixture define_steady_program(ArchiveWriter& w) {
  Fixture f;
  f.thread = w.define_thread(w.define_process("p", w.define_system_tree_node("h", "node", kUndefined)), "main");
  f.generator = w.define_interrupt_generator("cpu-clock", true, 1'000'000);
  const uint32_t root = w.define_calling_context(w.define_region("main", "m.cc", 1, Paradigm::kSampling), kUndefined, kUndefined);
  for (int mid = 0; mid < 7; ++mid) {
    const uint32_t m = w.define_calling_context(
        w.define_region("mid" + std::to_string(mid), "m.cc", 10 + mid, Paradigm::kSampling), kUndefined, root);
    for (int leaf = 0; leaf < 6; ++leaf) {
      f.contexts.push_back(w.define_calling_context(
          w.define_region("leaf" + std::to_string(leaf), "l.cc", 100 + leaf, Paradigm::kSampling),
          w.define_source_location("m.cc", 20 + leaf), m));
    }
  }
  return f;
}

TEST(WriterLimits, CallingContextSampleCostsUnder24BytesOnDisk) {
  TempDir dir;
  constexpr uint64_t kSamples = 100'000;
  {
    ArchiveWriter w({.directory = dir.path()});
    Fixture f = define_steady_program(w);
    ASSERT_EQ(f.contexts.size(), 42u);
    uint64_t time = 1'000'000'000'000;
    uint32_t state = 12345;
    for (uint64_t i = 0; i < kSamples; ++i) {
      state = state * 1103515245u + 12345u;  // deterministic pseudo-random leaf
      time += 1'000'000 + (state >> 24);    // ~1 ms apart, with jitter
      w.write_sample(f.thread, time, f.contexts[(state >> 8) % f.contexts.size()], 1 + (state >> 30), f.generator);
    }
    w.close({});
  }
  const uint64_t event_bytes = testing::file_bytes_under(dir.path(), ".evt");
  const double per_sample = static_cast<double>(event_bytes) / kSamples;
  std::printf("[ measured ] %.2f bytes per CallingContextSample (%llu samples, %llu bytes of events)\n", per_sample,
              static_cast<unsigned long long>(kSamples), static_cast<unsigned long long>(event_bytes));
  RecordProperty("bytes_per_sample", std::to_string(per_sample));
  EXPECT_LT(per_sample, 24.0);
  EXPECT_GT(per_sample, 9.0);  // a timestamp alone is 9 bytes: anything less means lost events

  ArchiveReader reader(dir.path());
  uint64_t read = 0;
  reader.read_events([&](const SampleEvent&) { ++read; });
  EXPECT_EQ(read, kSamples);
}

TEST(WriterLimits, ChunkMemoryStaysBoundedForAMillionSamples) {
  TempDir dir;
  ArchiveWriter::Options options{.directory = dir.path()};
  ArchiveWriter w(options);
  Fixture f = define_steady_program(w);
  constexpr uint64_t kSamples = 1'000'000;
  for (uint64_t i = 0; i < kSamples; ++i) {
    w.write_sample(f.thread, 1'000 + i * 1'000'000, f.contexts[i % f.contexts.size()], 1, f.generator);
  }
  const ArchiveWriter::Stats stats = w.stats();
  EXPECT_EQ(stats.events, kSamples);
  EXPECT_LE(stats.peak_chunk_bytes, options.event_chunk_bytes * options.max_chunks_per_thread);
  EXPECT_GT(stats.event_flushes, 30u);  // ~16 MB of events went out in 256 KiB chunks
  w.close({});
  ArchiveReader reader(dir.path());
  EXPECT_EQ(reader.archive().threads.at(f.thread).events, kSamples);
}

TEST(WriterLimits, ThousandsOfShortLivedThreads) {
  TempDir dir;
  constexpr uint64_t kThreads = 3000, kSamplesEach = 50;
  ArchiveWriter::Options options{.directory = dir.path()};
  {
    ArchiveWriter w(options);
    Fixture f = define_steady_program(w);
    const uint32_t process = w.define_process("p2", w.define_system_tree_node("h", "node", kUndefined));
    uint64_t time = 1'000;
    for (uint64_t t = 0; t < kThreads; ++t) {
      const uint64_t location = w.define_thread(process, "worker-" + std::to_string(t));
      for (uint64_t i = 0; i < kSamplesEach; ++i) {
        w.write_sample(location, time += 1'000, f.contexts[(t + i) % f.contexts.size()], 1, f.generator);
      }
      w.set_thread_property(location, "TID", 10'000 + t);
      w.end_thread(location, time);
      EXPECT_EQ(w.stats().open_threads, 0u);
    }
    // One thread at a time was open: memory never exceeded one location's budget.
    EXPECT_LE(w.stats().peak_chunk_bytes, options.event_chunk_bytes * options.max_chunks_per_thread);
    w.close({});
  }
  ArchiveReader reader(dir.path());
  EXPECT_EQ(reader.archive().threads.size(), kThreads + 1);
  std::map<uint64_t, uint64_t> per_location;
  reader.read_events([&](const SampleEvent& s) { ++per_location[s.location]; });
  EXPECT_EQ(per_location.size(), kThreads);  // the main thread of the fixture wrote nothing
  for (const auto& [location, count] : per_location) ASSERT_EQ(count, kSamplesEach) << location;
  EXPECT_EQ(reader.archive().threads.rbegin()->second.properties.at("TID"), 10'000 + kThreads - 1);
}

TEST(WriterLimits, DefinitionsLargerThanOneDefinitionChunk) {
  // OTF2's definition chunk is 4 MiB: 40k long region names need several.
  TempDir dir;
  constexpr uint32_t kRegions = 40'000;
  {
    ArchiveWriter w({.directory = dir.path()});
    const uint64_t t = w.define_thread(w.define_process("p", w.define_system_tree_node("h", "node", kUndefined)), "t");
    uint32_t parent = kUndefined;
    for (uint32_t i = 0; i < kRegions; ++i) {
      const uint32_t r = w.define_region("ns::function_" + std::to_string(i) + std::string(100, 'x'), "file.cc", i,
                                         Paradigm::kSampling);
      parent = w.define_calling_context(r, kUndefined, i % 100 == 0 ? kUndefined : parent);
      w.write_sample(t, 1'000 + i, parent, 1, kUndefined);
    }
    w.close({});
  }
  ArchiveReader reader(dir.path());
  const Archive& a = reader.archive();
  ASSERT_EQ(a.regions.size(), kRegions);
  EXPECT_EQ(a.regions.rbegin()->second.name, "ns::function_39999" + std::string(100, 'x'));
  EXPECT_EQ(a.regions.rbegin()->second.line, kRegions - 1);
  EXPECT_EQ(a.context_path(kRegions - 1).size(), 100u);
}

}  // namespace
}  // namespace hybridprof::otf2
