// A new event source, written here and nowhere else: a test-only adapter
// with one region and an event set of its own, producing through the
// spine's contract (region ids, event sets, the thread's ring through
// Drain::write_or_flush), finalized into a recording sink. Nothing in the
// drain, the raw stream, the finalizer or the sinks knows it: what it
// wrote comes out as its regions and its events, payloads intact. Its
// device's stream, a location that is not a thread, comes out as a stream
// of that device. Its definition (a team its events name) reaches its own
// definition writer, and its events the refs that writer gave.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "finalize/finalizer.h"
#include "sink/definition_set_writer.h"
#include "sink/recording_sink.h"
#include "trace/drain.h"
#include "trace/event_sets.h"
#include "trace/event_source.h"
#include "trace/module_table.h"
#include "trace/region_ids.h"
#include "trace/thread_state.h"

namespace hybridprof {
namespace {

namespace fs = std::filesystem;

// The code a toy step stands for (as an outlined parallel body stands for
// its construct): the finalizer names the region with its source location.
// One line, so its entry is on it whatever the compiler does.
__attribute__((noinline)) void toy_code() { asm volatile(""); } constexpr uint32_t kToyCodeLine = __LINE__;

// The adapter: a "toy_step" region whose enter carries a "tick" (a counter
// in word 0) and whose leave carries a "tock" (a byte count in wide 0),
// and a "stray" event between steps that names its team (word 1: the
// team's definition id). The team is a definition of its set whose values
// are the location indices of its members. Its kinds are indices in its set.
class ToyAdapter final : public EventSource {
 public:
  enum Kind : uint32_t { kTick, kTock, kStray, kKinds };
  static constexpr const char* kSet = "toy";
  static constexpr uint32_t kTeam = 5;  // the team's definition id

  const char* name() const override { return "toy"; }
  void process_started(Drain& drain) override {
    if (region_ == 0) region_ = reserve_region_ids(2);
    base_ = register_event_set(kSet, kKinds);
    drain.define_code_region(region_, "toy_step", static_cast<uint32_t>(otf2::Paradigm::kUser),
                             reinterpret_cast<uint64_t>(&toy_code));
    drain.append(raw::RegionDef{kernel_region(), "toy_kernel", static_cast<uint32_t>(otf2::Paradigm::kUser),
                                   raw::kUnknownModule, 0, {}});
    drain.append(raw::Definition{kSet, kTeam, "toy team", {0}});  // location 0: the first thread
  }

  // What a device adapter does with the work its device reports (in
  // batches, on a thread of its own): a stream of the device is a location
  // with no ring; its kernels are appended, each a toy_kernel region from
  // `start_ns + 100 * i` to 50 ns later with a stray event (word 3 = i)
  // inside. In time order; or, with `batch`, in batches of that many
  // kernels, the last batch first and the others after it, each in time
  // order (as CUPTI hands back one buffer per launching thread).
  void device_work(Drain& drain, int kernels, uint64_t start_ns, int batch = 0) {
    const uint32_t stream = drain.add_location(raw::LocationKind::kDeviceStream, 7, "toy stream 7", "toy device 0",
                                               start_ns);
    const uint32_t node = drain.region_context(kernel_region());
    const auto append = [&](int i) {
      const uint64_t at = start_ns + 100 * uint64_t(i);
      raw::Event inside{stream, at + 10, base_ + kStray, {}};
      inside.payload.word[3] = uint32_t(i);
      drain.append({raw::Enter{{stream, at, kernel_region(), node}}, inside,
                    raw::Leave{{stream, at + 50, kernel_region(), node}}});
    };
    if (batch <= 0) {
      for (int i = 0; i < kernels; ++i) append(i);
    } else {
      const int last = (kernels - 1) / batch * batch;
      for (int i = last; i < kernels; ++i) append(i);
      for (int i = 0; i < last; ++i) append(i);
    }
    drain.end_location(stream, start_ns + 100 * uint64_t(kernels));
  }

  // Each time is read just before its record is written, as a producer
  // must (a full ring's wait then comes after the record that found it full).
  bool step(Drain& drain, ThreadState& t, uint32_t counter, uint64_t bytes, uint64_t* enter_ns, uint64_t* leave_ns) {
    EventPayload tick, tock;
    tick.word[0] = counter;
    tock.wide[0] = bytes;
    const RegionBody enter{region_, carrying(kTick), tick}, leave{region_, carrying(kTock), tock};
    *enter_ns = monotonic_ns();
    if (!drain.write_or_flush(t, [&] { return t.traced.calls.enter(t.ring, *enter_ns, enter, {}, nullptr, 0); }))
      return false;
    *leave_ns = monotonic_ns();
    return drain.write_or_flush(t, [&] { return t.traced.calls.leave(t.ring, *leave_ns, leave, {}); });
  }
  bool stray(Drain& drain, ThreadState& t, uint64_t ns, uint32_t value) {
    return drain.write_or_flush(t, [&] {
      auto* r = reinterpret_cast<EventRecord*>(t.ring.reserve_exclusive(
          sizeof(EventRecord), static_cast<uint16_t>(RecordType::kEvent), static_cast<uint16_t>(base_ + kStray)));
      if (r == nullptr) return false;
      r->timestamp = ns;
      r->payload = EventPayload{};
      r->payload.word[1] = kTeam;
      r->payload.word[3] = value;
      t.ring.commit_exclusive();
      return true;
    });
  }

 private:
  uint32_t carrying(Kind k) const { return kRegionCarriesEvent | (base_ + k) << kCarriedEventKindShift; }
  uint32_t kernel_region() const { return region_ + 1; }
  uint32_t region_ = 0, base_ = kNoEventSet;
};
ToyAdapter g_toy;

// The archive side of its definitions: its teams are communicators of the
// user paradigm over the locations they name.
class ToyDefinitionWriter final : public sink::DefinitionSetWriter {
 public:
  std::string_view set_name() const override { return ToyAdapter::kSet; }
  void define(const std::vector<Process>& processes, const std::vector<uint64_t>&,
              sink::CommSink& sink) const override {
    std::vector<uint64_t> locations;
    for (const Process& p : processes)
      for (const raw::Definition* d : p.definitions)
        for (uint64_t index : d->values) locations.push_back(p.locations->at(uint32_t(index)));
    sink.define_comm_locations(otf2::Paradigm::kUser, locations);
    uint32_t next = 0;
    for (const Process& p : processes) {
      for (const raw::Definition* d : p.definitions) {
        std::vector<uint32_t> members;
        for (size_t i = 0; i < d->values.size(); ++i) members.push_back(next++);
        (*p.refs)[d->id] = sink.define_comm(otf2::Paradigm::kUser, d->name, members, otf2::kUndefined);
      }
    }
  }
};
ToyDefinitionWriter g_toy_definitions;

class ToyAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static const bool registered = register_event_source(&g_toy);  // once per process, as a source does
    ASSERT_TRUE(registered);
    dir_ = fs::temp_directory_path() / ("hybridprof-toy-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "raw");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A process whose one thread makes `steps` toy steps, each followed by a
  // stray event, while another reports `kernels` of the toy device's.
  void run(int steps, int kernels = 0, int kernel_batch = 0) {
    ModuleTable modules;
    Drain drain{modules};
    Drain::Options options;
    options.raw_path = (dir_ / "raw/host.7.1.hpr").string();
    options.ring_bytes = 4096;  // small: the steps fill it and are written out on the way
    options.flush_interval_ms = 3600 * 1000;
    raw::ProcessBegin begin;
    begin.pid = 7;
    begin.hostname = "host";
    begin.event = "cpu-clock";
    begin.mechanism = "posix-timer";
    std::string error;
    ASSERT_TRUE(drain.start(options, begin, &error)) << error;
    // What the runtime does at a process's start: every source defines its own.
    for_each_event_source([&](EventSource& s) { s.process_started(drain); });
    ThreadState* t = drain.add_thread(7, 1000);
    ASSERT_NE(t, nullptr);
    std::thread device([&] {
      if (kernels > 0) g_toy.device_work(drain, kernels, 5000, kernel_batch);
    });
    for (int i = 0; i < steps; ++i) {
      Step s{};
      ASSERT_TRUE(g_toy.step(drain, *t, uint32_t(i), 1000 + uint64_t(i), &s.enter_ns, &s.leave_ns));
      ASSERT_TRUE(g_toy.stray(drain, *t, monotonic_ns(), uint32_t(i)));
      steps_.push_back(s);
    }
    device.join();
    drain.finish_thread(t, monotonic_ns());
    drain.stop(raw::ProcessEnd{monotonic_ns(), raw::EndReason::kExit, 0, 0});
  }

  finalize::Result finalize_into(sink::RecordingSink& sink, bool with_definition_writer = true) {
    finalize::Options options;
    options.directory = dir_.string();
    options.sinks = {&sink};
    if (with_definition_writer) options.definition_writers = {&g_toy_definitions};
    finalize::Result result;
    std::string error;
    EXPECT_TRUE(finalize::finalize(options, &result, &error)) << error;
    return result;
  }

  struct Step {
    uint64_t enter_ns, leave_ns;
  };
  fs::path dir_;
  std::vector<Step> steps_;
};

TEST_F(ToyAdapterTest, ItsRegionsAndEventsReachTheSinkAsItWroteThem) {
  constexpr int kSteps = 300;  // ~40 bytes a record through a 4 KiB ring: it fills many times
  run(kSteps);
  sink::RecordingSink sink;
  const finalize::Result result = finalize_into(sink);
  EXPECT_EQ(result.traced_events, 3u * kSteps);
  EXPECT_EQ(result.events_skipped, 0u);
  EXPECT_TRUE(sink.closed);
  ASSERT_EQ(sink.threads.size(), 1u);
  EXPECT_TRUE(sink.threads[0].ended);
  EXPECT_EQ(result.streams, 0u);

  // Per step: enter, tick, tock, leave, stray; in time order. (The ring's
  // flushes add leaf regions of their own, "hybridprof: ring flush".)
  std::vector<const sink::RecordingSink::Record*> toy;
  uint64_t last = 0, flushes = 0;
  for (const auto& r : sink.records) {
    EXPECT_GE(r.timestamp, last);
    last = r.timestamp;
    const bool flush = r.type != sink::RecordingSink::Record::Type::kEvent &&
                       sink.region_of(r.context) == "hybridprof: ring flush";
    flushes += flush && r.type == sink::RecordingSink::Record::Type::kEnter;
    if (!flush) toy.push_back(&r);
  }
  EXPECT_GT(flushes, 0u) << "the small ring was written out by the producer";
  ASSERT_EQ(toy.size(), 5u * kSteps);
  using Type = sink::RecordingSink::Record::Type;
  for (int i = 0; i < kSteps; ++i) {
    const auto* const* s = &toy[5 * size_t(i)];
    const Step& at = steps_[size_t(i)];
    ASSERT_EQ(s[0]->type, Type::kEnter) << i;
    EXPECT_EQ(sink.region_of(s[0]->context), "toy_step @toy_adapter_test.cc:" + std::to_string(kToyCodeLine));
    EXPECT_EQ(s[0]->timestamp, at.enter_ns);
    ASSERT_EQ(s[1]->type, Type::kEvent) << i;
    EXPECT_EQ(s[1]->set, "toy");
    EXPECT_EQ(s[1]->kind, ToyAdapter::kTick);
    EXPECT_EQ(s[1]->payload.word[0], uint32_t(i));
    EXPECT_EQ(s[1]->timestamp, at.enter_ns);
    ASSERT_EQ(s[2]->type, Type::kEvent) << i;
    EXPECT_EQ(s[2]->kind, ToyAdapter::kTock);
    EXPECT_EQ(s[2]->payload.wide[0], 1000u + uint64_t(i));
    EXPECT_EQ(s[2]->timestamp, at.leave_ns);
    ASSERT_EQ(s[3]->type, Type::kLeave) << i;
    EXPECT_EQ(s[3]->context, s[0]->context);
    ASSERT_EQ(s[4]->type, Type::kEvent) << i;
    EXPECT_EQ(s[4]->kind, ToyAdapter::kStray);
    EXPECT_EQ(s[4]->payload.word[3], uint32_t(i));
    if (HasFailure()) return;
  }
  // Named after the code it stands for, whose file and line it has.
  bool user_region = false;
  for (const auto& r : sink.regions) {
    if (r.name.rfind("toy_step", 0) != 0) continue;
    user_region = r.paradigm == otf2::Paradigm::kUser;
    EXPECT_EQ(r.file.substr(r.file.rfind('/') + 1), "toy_adapter_test.cc");
    EXPECT_EQ(r.begin_line, kToyCodeLine);
  }
  EXPECT_TRUE(user_region);
}

TEST_F(ToyAdapterTest, EventsASinkCannotWriteAreCountedAndSaid) {
  run(10);
  sink::RecordingSink sink;
  sink.refused_sets = {"toy"};
  const finalize::Result result = finalize_into(sink);
  EXPECT_EQ(result.traced_events, 0u);
  EXPECT_EQ(result.events_skipped, 30u);
  bool warned = false;
  for (const auto& w : result.warnings) warned |= w.find("30 traced events not written") != std::string::npos;
  EXPECT_TRUE(warned);
  size_t enters = 0;
  for (const auto& r : sink.records) enters += r.type == sink::RecordingSink::Record::Type::kEnter;
  EXPECT_GE(enters, 10u) << "the regions are still written";
}

TEST_F(ToyAdapterTest, ItsDefinitionsReachItsWriterAndItsEventsTheirRefs) {
  run(10);
  sink::RecordingSink sink;
  finalize_into(sink);
  ASSERT_EQ(sink.comms.size(), 1u);
  const auto& team = sink.comms[0];
  EXPECT_EQ(team.name, "toy team");
  EXPECT_EQ(team.paradigm, otf2::Paradigm::kUser);
  ASSERT_EQ(team.members, std::vector<uint32_t>{0});
  ASSERT_EQ(sink.threads.size(), 1u);
  EXPECT_EQ(sink.comm_locations.at(otf2::Paradigm::kUser), std::vector<uint64_t>{0}) << "its member: the thread";
  size_t strays = 0;
  for (const auto& r : sink.records) {
    if (r.type != sink::RecordingSink::Record::Type::kEvent || r.kind != ToyAdapter::kStray) continue;
    ++strays;
    ASSERT_EQ(r.definitions.count(r.payload.word[1]), 1u) << "the team it names is defined";
    EXPECT_EQ(r.definitions.at(r.payload.word[1]), 0u) << "as the comm its writer made";
  }
  EXPECT_EQ(strays, 10u);

  // Without a writer for the set, nothing is defined and its events get no refs.
  sink::RecordingSink bare;
  finalize_into(bare, /*with_definition_writer=*/false);
  EXPECT_TRUE(bare.comms.empty());
  for (const auto& r : bare.records) EXPECT_TRUE(r.definitions.empty());
}

// Its kernels as the adapter reported them, on the stream at `stream`:
// enter, the event, leave, at its times, in time order.
void expect_kernels_in_time_order(const sink::RecordingSink& sink, size_t stream, int kernels) {
  using Type = sink::RecordingSink::Record::Type;
  std::vector<const sink::RecordingSink::Record*> on_stream;
  for (const auto& r : sink.records)
    if (r.location == stream) on_stream.push_back(&r);
  ASSERT_EQ(on_stream.size(), 3u * size_t(kernels));
  for (int i = 0; i < kernels; ++i) {
    const auto* const* k = &on_stream[3 * size_t(i)];
    const uint64_t at = 5000 + 100 * uint64_t(i);
    ASSERT_EQ(k[0]->type, Type::kEnter) << i;
    EXPECT_EQ(sink.region_of(k[0]->context), "toy_kernel");
    EXPECT_EQ(sink.contexts.at(k[0]->context).parent, otf2::kUndefined) << "a kernel has no stack below it";
    EXPECT_EQ(k[0]->timestamp, at);
    ASSERT_EQ(k[1]->type, Type::kEvent) << i;
    EXPECT_EQ(k[1]->kind, ToyAdapter::kStray);
    EXPECT_EQ(k[1]->payload.word[3], uint32_t(i));
    EXPECT_EQ(k[1]->timestamp, at + 10);
    ASSERT_EQ(k[2]->type, Type::kLeave) << i;
    EXPECT_EQ(k[2]->context, k[0]->context);
    EXPECT_EQ(k[2]->timestamp, at + 50);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST_F(ToyAdapterTest, ItsDeviceStreamIsALocationOfItsDevice) {
  constexpr int kSteps = 20, kKernels = 500;
  run(kSteps, kKernels);
  sink::RecordingSink sink;
  const finalize::Result result = finalize_into(sink);
  EXPECT_EQ(result.threads, 1u);
  EXPECT_EQ(result.streams, 1u);
  EXPECT_EQ(result.traced_events, 3u * kSteps + kKernels);
  EXPECT_EQ(result.events_skipped, 0u);

  // The stream: a location of the device, which the process drives.
  ASSERT_EQ(sink.threads.size(), 2u);
  const auto stream = sink.threads[0].stream ? 0u : 1u;
  const auto& s = sink.threads[stream];
  EXPECT_TRUE(s.stream);
  EXPECT_FALSE(sink.threads[1 - stream].stream);
  EXPECT_EQ(s.name, "toy stream 7");
  EXPECT_TRUE(s.ended);
  const auto& device = sink.processes.at(s.process);
  EXPECT_EQ(device.name, "toy device 0");
  ASSERT_NE(device.device_of, sink::RecordingSink::Process::kNotADevice);
  EXPECT_EQ(device.device_of, sink.threads[1 - stream].process) << "driven by the thread's process";

  expect_kernels_in_time_order(sink, stream, kKernels);
  EXPECT_TRUE(result.warnings.empty());
}

// A device reports its work in batches that overlap in time (CUPTI: one
// buffer per launching thread, each handed back when full or at the end):
// the archive has each kernel at its own times, in time order, none cut
// short to fit behind a later one.
TEST_F(ToyAdapterTest, ItsDeviceWorkIsInTimeOrderWhateverOrderItCameIn) {
  constexpr int kKernels = 500;
  run(5, kKernels, /*kernel_batch=*/64);
  sink::RecordingSink sink;
  const finalize::Result result = finalize_into(sink);
  ASSERT_EQ(sink.threads.size(), 2u);
  expect_kernels_in_time_order(sink, sink.threads[0].stream ? 0u : 1u, kKernels);
  EXPECT_TRUE(result.warnings.empty()) << result.warnings.front();
}

}  // namespace
}  // namespace hybridprof
