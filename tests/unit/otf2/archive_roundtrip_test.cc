// Writer -> reader round trip of the known archive, plus otf2-print's verdict.
#include <gtest/gtest.h>

#include "otf2/archive_reader.h"
#include "otf2/property_names.h"
#include "test_support.h"

namespace hybridprof::otf2 {
namespace {

using testing::KnownArchive;
using testing::TempDir;

class RoundTrip : public ::testing::Test {
 protected:
  void SetUp() override { known_ = testing::write_known_archive(dir_.path()); }
  TempDir dir_;
  KnownArchive known_;
};

TEST_F(RoundTrip, RegionsKeepNameFileLineAndParadigm) {
  ArchiveReader reader(dir_.path());
  const Archive& a = reader.archive();
  ASSERT_EQ(a.regions.size(), 4u);
  const RegionInfo& main = a.regions.at(known_.r_main);
  EXPECT_EQ(main.name, "main");
  EXPECT_EQ(main.file, "main.cc");
  EXPECT_EQ(main.line, 10u);
  EXPECT_EQ(main.paradigm, Paradigm::kSampling);
  EXPECT_EQ(a.regions.at(known_.r_b).name, "B");
  EXPECT_EQ(a.regions.at(known_.r_b).paradigm, Paradigm::kPython);
  EXPECT_EQ(a.regions.at(known_.r_c).paradigm, Paradigm::kCompiler);
  EXPECT_EQ(a.regions.at(known_.r_c).line, 30u);
}

TEST_F(RoundTrip, CallingContextTreeKeepsParentsAndCallSites) {
  ArchiveReader reader(dir_.path());
  const Archive& a = reader.archive();
  ASSERT_EQ(a.contexts.size(), 4u);
  EXPECT_EQ(a.contexts.at(known_.c_main).parent, kUndefined);
  EXPECT_EQ(a.contexts.at(known_.c_a).parent, known_.c_main);
  EXPECT_EQ(a.contexts.at(known_.c_b).parent, known_.c_main);
  EXPECT_EQ(a.contexts.at(known_.c_c).parent, known_.c_b);
  EXPECT_EQ(a.contexts.at(known_.c_c).region, known_.r_c);
  EXPECT_EQ(a.contexts.at(known_.c_b).source_location, kUndefined);
  const uint32_t site = a.contexts.at(known_.c_a).source_location;
  ASSERT_NE(site, kUndefined);
  EXPECT_EQ(a.source_locations.at(site).file, "main.cc");
  EXPECT_EQ(a.source_locations.at(site).line, 12u);
  EXPECT_EQ(a.context_path(known_.c_c), (std::vector<uint32_t>{known_.c_main, known_.c_b, known_.c_c}));
  EXPECT_EQ(a.context_path(known_.c_main), (std::vector<uint32_t>{known_.c_main}));
  EXPECT_TRUE(a.context_path(12345).empty());
}

TEST_F(RoundTrip, SamplesComeBackPerThreadInOrder) {
  ArchiveReader reader(dir_.path());
  std::map<uint64_t, std::vector<std::pair<uint64_t, uint32_t>>> read;
  uint64_t region_events = 0;
  reader.read_events([&](const SampleEvent& s) { read[s.location].emplace_back(s.timestamp, s.context); },
                     [&](const RegionEvent&) { ++region_events; });
  EXPECT_EQ(read, known_.samples);  // same events, same order, same times
  EXPECT_EQ(region_events, 0u);
  EXPECT_EQ(read[known_.t_main].size(), 35u);
  EXPECT_EQ(read[known_.t_worker].size(), 10u);
  EXPECT_EQ(read[known_.t_helper].size(), 1u);

  // Reading twice gives the same again (the report reads once, tests may not).
  uint64_t again = 0;
  reader.read_events([&](const SampleEvent&) { ++again; });
  EXPECT_EQ(again, 46u);
}

TEST_F(RoundTrip, ThreadsProcessesAndTheirProperties) {
  ArchiveReader reader(dir_.path());
  const Archive& a = reader.archive();
  ASSERT_EQ(a.threads.size(), 3u);
  ASSERT_EQ(a.processes.size(), 2u);
  const ThreadInfo& main = a.threads.at(known_.t_main);
  EXPECT_EQ(main.name, "main");
  EXPECT_EQ(main.process, known_.p_app);
  EXPECT_EQ(main.events, 35u);
  EXPECT_EQ(main.properties.at(property::kTid), 100u);
  EXPECT_EQ(main.properties.at(property::kSamples), 35u);
  EXPECT_EQ(main.properties.at(property::kDropped), 2u);
  EXPECT_EQ(a.threads.at(known_.t_worker).events, 10u);
  EXPECT_EQ(a.threads.at(known_.t_worker).properties.count(property::kDropped), 0u);
  EXPECT_EQ(a.threads.at(known_.t_helper).process, known_.p_helper);

  const ProcessInfo& app = a.processes.at(known_.p_app);
  EXPECT_EQ(app.name, "app");
  EXPECT_EQ(app.properties.at(property::kPid), "4242");
  EXPECT_EQ(app.properties.at(property::kExitStatus), "0");
  EXPECT_EQ(a.processes.at(known_.p_helper).properties.at(property::kPid), "4243");
  ASSERT_NE(app.system_tree_node, kUndefined);
  EXPECT_EQ(a.system_tree_nodes.at(app.system_tree_node).name, "host");
  EXPECT_EQ(a.interrupt_generators.at(known_.interrupt_generator), "cpu-clock");
}

TEST_F(RoundTrip, ArchivePropertiesAndClock) {
  ArchiveReader reader(dir_.path() + "/traces.otf2");  // the anchor works as well as the directory
  const Archive& a = reader.archive();
  EXPECT_EQ(a.properties.at(property::kProgram), "./app --size 3");
  EXPECT_EQ(a.properties.at(property::kEvent), "cpu-clock");
  EXPECT_EQ(a.properties.at(property::kPeriod), "1000 Hz");
  EXPECT_EQ(a.properties.count(property::kNotices), 0u);
  EXPECT_EQ(a.clock.resolution, known_.clock.resolution);
  EXPECT_EQ(a.clock.global_offset, known_.clock.global_offset);
  EXPECT_EQ(a.clock.trace_length, known_.clock.trace_length);
  EXPECT_EQ(a.clock.realtime_ns_at_offset, known_.clock.realtime_ns_at_offset);
}

TEST_F(RoundTrip, Otf2PrintAcceptsTheArchive) {
  if (!testing::have_program("otf2-print")) GTEST_SKIP() << "otf2-print not installed";
  auto events = testing::run_command("otf2-print " + dir_ / "traces.otf2");
  ASSERT_EQ(events.exit_code, 0) << events.output;
  size_t samples = 0;
  for (size_t at = 0; (at = events.output.find("CALLING_CONTEXT_SAMPLE", at)) != std::string::npos; ++at) ++samples;
  EXPECT_EQ(samples, 46u);
  EXPECT_EQ(events.output.find("error"), std::string::npos) << events.output;

  auto definitions = testing::run_command("otf2-print -G " + dir_ / "traces.otf2");
  ASSERT_EQ(definitions.exit_code, 0) << definitions.output;
  EXPECT_NE(definitions.output.find("CALLING_CONTEXT"), std::string::npos);
  EXPECT_NE(definitions.output.find("Paradigm: SAMPLING"), std::string::npos);
}

TEST(ClockDefaults, OffsetAndLengthComeFromTheEventsWhenLeftAtZero) {
  TempDir dir;
  {
    ArchiveWriter w({.directory = dir.path()});
    const uint32_t p = w.define_process("p", w.define_system_tree_node("h", "node", kUndefined));
    const uint64_t idle = w.define_thread(p, "idle");  // no events: must not pull the offset to 0
    const uint64_t t = w.define_thread(p, "t");
    const uint32_t c = w.define_calling_context(w.define_region("f", "f.c", 1, Paradigm::kSampling), kUndefined, kUndefined);
    w.write_sample(t, 7'000, c, 1, kUndefined);
    w.write_sample(t, 9'500, c, 1, kUndefined);
    w.end_thread(idle, 0);
    w.close({});
  }
  ArchiveReader reader(dir.path());
  EXPECT_EQ(reader.archive().threads.at(0).events, 0u);
  EXPECT_EQ(reader.archive().clock.global_offset, 7'000u);
  EXPECT_EQ(reader.archive().clock.trace_length, 2'500u);
  EXPECT_EQ(reader.archive().clock.resolution, 1'000'000'000u);
  EXPECT_EQ(reader.archive().clock.realtime_ns_at_offset, 0u);
}

TEST(DeviceStreams, AreLocationsOfADeviceTheirProcessDrives) {
  TempDir dir;
  uint32_t process = 0, other = 0;
  uint64_t host_thread = 0, stream = 0, stream2 = 0;
  {
    ArchiveWriter w({.directory = dir.path()});
    const uint32_t node = w.define_system_tree_node("h", "node", kUndefined);
    process = w.define_process("p", node);
    other = w.define_process("q", node);
    host_thread = w.define_thread(process, "main thread");
    const uint32_t gpu = w.define_device(process, "GPU 0");
    EXPECT_EQ(w.define_device(process, "GPU 0"), gpu) << "one device per name and process";
    EXPECT_NE(w.define_device(other, "GPU 0"), gpu) << "another process's GPU 0 is another device";
    EXPECT_THROW(w.define_thread(gpu, "t"), std::invalid_argument);
    EXPECT_THROW(w.define_stream(process, "s"), std::invalid_argument);
    EXPECT_THROW(w.define_device(gpu, "GPU 1"), std::invalid_argument);
    stream = w.define_stream(gpu, "stream 7");
    stream2 = w.define_stream(w.define_device(other, "GPU 0"), "stream 13");
    const uint32_t kernel =
        w.define_calling_context(w.define_region("k", "", 0, Paradigm::kUser), kUndefined, kUndefined);
    w.write_context_enter(stream, 1'000, kernel, 1);
    w.write_context_leave(stream, 1'500, kernel);
    w.end_thread(stream, 1'500);
    w.end_thread(stream2, 0);
    w.end_thread(host_thread, 0);
    w.close({});
  }
  ArchiveReader reader(dir.path());
  const Archive& a = reader.archive();
  EXPECT_EQ(a.processes.size(), 2u) << "a device is not a process";
  ASSERT_EQ(a.devices.size(), 2u);
  const ThreadInfo& s = a.threads.at(stream);
  EXPECT_EQ(s.name, "stream 7");
  EXPECT_EQ(s.process, process);
  ASSERT_NE(s.device, kUndefined);
  EXPECT_EQ(a.devices.at(s.device).name, "GPU 0");
  EXPECT_EQ(a.devices.at(s.device).process, process);
  EXPECT_EQ(s.events, 2u);
  EXPECT_EQ(a.threads.at(stream2).process, other);
  EXPECT_EQ(a.threads.at(host_thread).device, kUndefined);
  std::vector<RegionEvent> on_stream;
  reader.read_events([](const SampleEvent&) {}, [&](const RegionEvent& e) {
    if (e.location == stream) on_stream.push_back(e);
  });
  ASSERT_EQ(on_stream.size(), 2u);
  EXPECT_TRUE(on_stream[0].enter);
  EXPECT_EQ(on_stream[1].timestamp - on_stream[0].timestamp, 500u);
  if (testing::have_program("otf2-print")) {
    auto definitions = testing::run_command("otf2-print -G " + dir / "traces.otf2");
    ASSERT_EQ(definitions.exit_code, 0) << definitions.output;
    EXPECT_NE(definitions.output.find("ACCELERATOR_STREAM"), std::string::npos) << definitions.output;
  }
}

TEST(Definitions, AreDeduplicated) {
  TempDir dir;
  ArchiveWriter w({.directory = dir.path()});
  EXPECT_EQ(w.define_string("x"), w.define_string(std::string("x")));
  EXPECT_NE(w.define_string("x"), w.define_string("y"));
  const uint32_t f = w.define_region("f", "f.c", 1, Paradigm::kSampling);
  EXPECT_EQ(w.define_region("f", "f.c", 99, Paradigm::kSampling), f);
  EXPECT_NE(w.define_region("f", "f.c", 1, Paradigm::kPython), f);
  EXPECT_NE(w.define_region("f", "g.c", 1, Paradigm::kSampling), f);
  const uint32_t site = w.define_source_location("f.c", 3);
  EXPECT_EQ(w.define_source_location("f.c", 3), site);
  const uint32_t root = w.define_calling_context(f, kUndefined, kUndefined);
  EXPECT_EQ(w.define_calling_context(f, kUndefined, kUndefined), root);
  const uint32_t child = w.define_calling_context(f, site, root);
  EXPECT_NE(child, root);
  EXPECT_EQ(w.define_calling_context(f, site, root), child);
  EXPECT_EQ(w.define_interrupt_generator("cpu-clock", true, 1000), w.define_interrupt_generator("cpu-clock", true, 1000));
  EXPECT_NE(w.define_interrupt_generator("cpu-clock", true, 1000), w.define_interrupt_generator("cpu-clock", false, 1000));
  const uint32_t node = w.define_system_tree_node("h", "node", kUndefined);
  EXPECT_EQ(w.define_system_tree_node("h", "node", kUndefined), node);
  w.close({});
}

}  // namespace
}  // namespace hybridprof::otf2
