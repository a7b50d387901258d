// CUDA's translation without a GPU: API calls made on the test's thread as
// CUPTI's callbacks would report them, then one activity buffer built from
// CUPTI's own structs (kernels on two streams, copies both ways, a memset,
// a synchronization, an overhead record, dropped records), through the
// drain and the finalizer into a recording sink. The GPU streams are
// locations of their device, the work's times are the host's clock, and
// each piece of work hangs under the API call that launched it, whose
// calling context is the code that called it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "chrome_trace.h"
#include "common/clock.h"
#include "cuda/activity_translator.h"
#include "cuda/api_tracer.h"
#include "cuda/cuda_events.h"
#include "finalize/finalizer.h"
#include "otf2/archive_reader.h"
#include "sink/recording_sink.h"
#include "trace/drain.h"
#include "trace/module_table.h"
#include "trace/tracing_host.h"

namespace hybridprof::cuda {
namespace {

namespace fs = std::filesystem;
using Record = sink::RecordingSink::Record;

// The runtime's part: a drain over a raw stream, the test's thread traced.
class TestHost final : public TracingHost {
 public:
  explicit TestHost(const std::string& raw_path) : TracingHost(drain_, config_) {
    config_.trace_clock = "monotonic";
    Drain::Options options;
    options.raw_path = raw_path;
    options.flush_interval_ms = 3600 * 1000;  // passes only when the test asks
    raw::ProcessBegin begin;
    begin.pid = uint64_t(getpid());
    begin.hostname = "host";
    std::string error;
    EXPECT_TRUE(drain_.start(options, begin, &error)) << error;
    thread_ = drain_.add_thread(getpid(), monotonic_ns());
    cuda_regions().new_stream();  // as the runtime's CUDA source does at a stream's start
    set_tracing_host(this);
  }
  ~TestHost() override { set_tracing_host(nullptr); }
  void stop() {
    drain_.finish_thread(thread_, monotonic_ns());
    drain_.stop(raw::ProcessEnd{monotonic_ns(), raw::EndReason::kExit, 0, 0});
  }
  bool tracing() const override { return true; }
  ThreadState* current_thread() override { return thread_; }
  std::string raw_dir() const override { return "/nonexistent"; }
  void say(const std::string&) override {}
  void finish_process(raw::EndReason, int64_t) override {}
  void at_process_exit(void (*)(int)) override {}

 private:
  RuntimeConfig config_;
  ModuleTable modules_;
  Drain drain_{modules_};
  ThreadState* thread_ = nullptr;
};

// The program's code that calls CUDA: a kernel launch; an asynchronous
// copy through the runtime, which makes a driver call of its own; a memset
// and a copy back.
CorrelationAliases g_aliases;
__attribute__((noinline)) void launch_site() {
  api_enter(true, "cudaLaunchKernel", 101, g_aliases);
  api_exit(true);
  asm volatile("");
}
__attribute__((noinline)) void copy_site() {
  api_enter(true, "cudaMemcpyAsync", 102, g_aliases);
  api_enter(false, "cuMemcpyHtoDAsync_v2", 900, g_aliases);  // the runtime's doing: no region
  api_exit(false);
  api_exit(true);
  api_enter(true, "cudaMemsetAsync", 103, g_aliases);
  api_exit(true);
  api_enter(true, "cudaMemcpyAsync", 104, g_aliases);
  api_exit(true);
  asm volatile("");
}

// A CUPTI activity buffer: records one after another, as CUPTI lays them.
class ActivityBuffer {
 public:
  template <typename T>
  T& add(CUpti_ActivityKind kind) {
    auto record = std::make_unique<T>();
    std::memset(static_cast<void*>(record.get()), 0, sizeof(T));
    record->kind = kind;
    T& r = *record;
    records_.push_back(std::shared_ptr<void>(std::move(record)));
    return r;
  }
  // As cuptiActivityGetNextRecord hands them out.
  auto reader() {
    return [this, i = size_t(0)]() mutable -> const CUpti_Activity* {
      return i < records_.size() ? static_cast<const CUpti_Activity*>(records_[i++].get()) : nullptr;
    };
  }

 private:
  std::vector<std::shared_ptr<void>> records_;
};

constexpr uint32_t kStreamA = 7, kStreamB = 8, kContext = 1;

CUpti_ActivityKernel10& kernel(ActivityBuffer& b, uint32_t stream, uint64_t start, uint64_t end, uint32_t correlation,
                               const char* name) {
  auto& k = b.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.deviceId = 0, k.contextId = kContext, k.streamId = stream;
  k.start = start, k.end = end, k.correlationId = correlation, k.name = name;
  return k;
}
CUpti_ActivityMemcpy6& copy(ActivityBuffer& b, uint32_t stream, uint64_t start, uint64_t end, uint8_t kind,
                            uint64_t bytes) {
  auto& m = b.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.deviceId = 0, m.contextId = kContext, m.streamId = stream;
  m.start = start, m.end = end, m.copyKind = kind, m.bytes = bytes;
  return m;
}

class CudaTranslation : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hybridprof-cuda-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "raw");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The calls, then the buffer CUPTI would deliver for them, finalized.
  void run(bool archive = false) {
    TestHost host((dir_ / ("raw/host." + std::to_string(getpid()) + ".1.hpr")).string());
    launch_site();
    copy_site();
    // Device times are CUPTI's: here offset from the host's by `base_`.
    base_ = monotonic_ns();
    ActivityTranslator translator(host.drain(), GpuClock{int64_t(base_)}, &g_aliases);
    ActivityBuffer b;
    auto& device = b.add<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
    device.id = 0, device.name = "Test GPU", device.computeCapabilityMajor = 9, device.computeCapabilityMinor = 0;
    auto& context = b.add<CUpti_ActivityContext3>(CUPTI_ACTIVITY_KIND_CONTEXT);
    context.contextId = kContext, context.deviceId = 0;
    auto& k = kernel(b, kStreamA, 1000, 5000, 101, "_Z6kernelPfi");
    k.gridX = 64, k.gridY = 2, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 32, k.staticSharedMemory = 1024, k.dynamicSharedMemory = 512;
    kernel(b, kStreamB, 2000, 3000, 0, "_Z5otherv");  // launched where CUPTI could not say
    auto& in = copy(b, kStreamB, 3500, 4000, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096);
    in.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED, in.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    in.correlationId = 900;  // the driver call's: the runtime call's by alias
    // Finished out of order in the buffer: the copy back before the memset.
    auto& out = copy(b, kStreamA, 6000, 7000, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 8192);
    out.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, out.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    out.correlationId = 555, out.runtimeCorrelationId = 104;
    auto& set = b.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
    set.deviceId = 0, set.contextId = kContext, set.streamId = kStreamA;
    set.start = 5500, set.end = 5800, set.bytes = 1024, set.value = 0, set.correlationId = 103;
    auto& sync = b.add<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    sync.start = 4500, sync.end = 7100, sync.contextId = kContext, sync.streamId = kStreamA;
    auto& overhead = b.add<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
    overhead.start = 100, overhead.end = 400;
    translator.translate_buffer(b.reader(), /*dropped=*/3);
    counts_ = translator.end(base_ + 8000);
    host.stop();

    finalize::Options options;
    options.directory = dir_.string();
    if (!archive) options.sinks = {&sink_};
    finalize::Result result;
    std::string error;
    ASSERT_TRUE(finalize::finalize(options, &result, &error)) << error;
    EXPECT_EQ(result.events_skipped, 0u);
  }

  // Region names of a context's path, innermost first.
  std::vector<std::string> path(uint32_t context) const {
    std::vector<std::string> names;
    for (uint32_t c = context; c != otf2::kUndefined; c = sink_.contexts.at(c).parent)
      names.push_back(sink_.region_of(c));
    return names;
  }
  // A frame of `path` named `...suffix`.
  static bool has_frame(const std::vector<std::string>& path, const std::string& suffix) {
    return std::any_of(path.begin(), path.end(), [&](const std::string& name) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
  }
  // The records of the location named `name`.
  std::vector<const Record*> on(const std::string& name) const {
    std::vector<const Record*> found;
    for (uint64_t l = 0; l < sink_.threads.size(); ++l)
      if (sink_.threads[l].name == name)
        for (const Record& r : sink_.records)
          if (r.location == l) found.push_back(&r);
    return found;
  }

  fs::path dir_;
  uint64_t base_ = 0;
  ActivityTranslator::Counts counts_;
  sink::RecordingSink sink_;
};

TEST_F(CudaTranslation, StreamsAreLocationsOfTheirDevice) {
  run();
  std::vector<std::string> streams;
  for (const auto& t : sink_.threads) {
    if (!t.stream) continue;
    streams.push_back(t.name);
    EXPECT_EQ(sink_.processes.at(t.process).name, "GPU 0 (Test GPU, sm_90)") << t.name;
    EXPECT_TRUE(t.ended);
  }
  std::sort(streams.begin(), streams.end());
  EXPECT_EQ(streams, (std::vector<std::string>{"CUDA stream 7", "CUDA stream 8", "CUDA synchronization (context 1)"}));
  EXPECT_EQ(counts_.kernels, 2u);
  EXPECT_EQ(counts_.memcpys, 2u);
  EXPECT_EQ(counts_.memsets, 1u);
  EXPECT_EQ(counts_.syncs, 1u);
  EXPECT_EQ(counts_.overheads, 1u);
  EXPECT_EQ(counts_.overhead_ns, 300u);
  EXPECT_EQ(counts_.dropped, 3u);
  for (const auto& r : sink_.regions) EXPECT_FALSE(r.name.empty()) << "every region defined is one the work names";
}

TEST_F(CudaTranslation, WorkIsInTimeOrderOnTheHostClockWithItsParameters) {
  run();
  // Stream 7: the kernel, the memset, the copy back (reordered), each an
  // enter, its event and a leave at the device's times plus the offset.
  const auto s = on("CUDA stream 7");
  ASSERT_EQ(s.size(), 9u);
  const struct {
    std::string region;
    uint64_t start, end;
    EventKind kind;
  } expected[] = {{"kernel(float*, int)", 1000, 5000, EventKind::kKernel},
                  {"[CUDA memset]", 5500, 5800, EventKind::kMemset},
                  {"[CUDA memcpy DtoH]", 6000, 7000, EventKind::kMemcpy}};
  for (size_t i = 0; i < std::size(expected); ++i) {
    const Record* const* w = &s[3 * i];
    ASSERT_EQ(w[0]->type, Record::Type::kEnter) << i;
    EXPECT_EQ(sink_.region_of(w[0]->context), expected[i].region);
    EXPECT_EQ(w[0]->timestamp, base_ + expected[i].start);
    ASSERT_EQ(w[1]->type, Record::Type::kEvent) << i;
    EXPECT_EQ(w[1]->set, "cuda");
    EXPECT_EQ(w[1]->kind, uint32_t(expected[i].kind));
    ASSERT_EQ(w[2]->type, Record::Type::kLeave) << i;
    EXPECT_EQ(w[2]->timestamp, base_ + expected[i].end);
  }
  const KernelShape k = kernel_shape(s[1]->payload);
  EXPECT_EQ(std::vector<uint32_t>(k.grid, k.grid + 3), (std::vector<uint32_t>{64, 2, 1}));
  EXPECT_EQ(std::vector<uint32_t>(k.block, k.block + 3), (std::vector<uint32_t>{256, 1, 1}));
  EXPECT_EQ(k.registers, 32u);
  EXPECT_EQ(k.shared_memory, 1536u);
  EXPECT_EQ(k.correlation, 101u);
  EXPECT_EQ(s[4]->payload.wide[0], 1024u) << "the memset's bytes";
  EXPECT_EQ(s[7]->payload.wide[0], 8192u) << "the copy's bytes";
  EXPECT_EQ(s[7]->payload.word[2], uint32_t(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)) << "to pageable memory";

  const auto b = on("CUDA stream 8");
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(sink_.region_of(b[0]->context), "other()");
  EXPECT_EQ(sink_.region_of(b[3]->context), "[CUDA memcpy HtoD]");
  EXPECT_EQ(b[4]->payload.wide[0], 4096u);
  EXPECT_EQ(b[4]->payload.word[1], uint32_t(CUPTI_ACTIVITY_MEMORY_KIND_PINNED)) << "from pinned memory";

  const auto sync = on("CUDA synchronization (context 1)");
  ASSERT_EQ(sync.size(), 2u);
  EXPECT_EQ(sink_.region_of(sync[0]->context), "[CUDA sync: stream]");
  EXPECT_EQ(sync[0]->timestamp, base_ + 4500);
  EXPECT_EQ(sync[1]->timestamp, base_ + 7100);
}

TEST_F(CudaTranslation, WorkHangsUnderTheCallThatLaunchedItAndItsCaller) {
  run();
  const auto s = on("CUDA stream 7");
  ASSERT_FALSE(s.empty());
  const std::vector<std::string> kernel_path = path(s[0]->context);
  ASSERT_GE(kernel_path.size(), 3u);
  EXPECT_EQ(kernel_path[0], "kernel(float*, int)");
  EXPECT_EQ(kernel_path[1], "cudaLaunchKernel");
  EXPECT_TRUE(has_frame(kernel_path, "::launch_site()")) << ::testing::PrintToString(kernel_path);
  // The copy in names the driver call the runtime call made: the runtime call's.
  const auto b = on("CUDA stream 8");
  ASSERT_EQ(b.size(), 6u);
  const std::vector<std::string> copy_path = path(b[3]->context);
  ASSERT_GE(copy_path.size(), 2u);
  EXPECT_EQ(copy_path[1], "cudaMemcpyAsync");
  EXPECT_TRUE(has_frame(copy_path, "::copy_site()")) << ::testing::PrintToString(copy_path);
  EXPECT_EQ(path(s[3]->context)[1], "cudaMemsetAsync");
  EXPECT_EQ(path(s[6]->context)[1], "cudaMemcpyAsync");
  // Work with no launch known hangs under its region alone.
  EXPECT_EQ(path(b[0]->context), std::vector<std::string>{"other()"});

  // On the host: the calls, each carrying its correlation id; the driver
  // call inside the runtime's is none of them.
  std::vector<std::string> calls;
  std::vector<uint32_t> correlations;
  for (const Record& r : sink_.records) {
    if (sink_.threads.at(r.location).stream) continue;
    if (r.type == Record::Type::kEnter) calls.push_back(sink_.region_of(r.context));
    if (r.type == Record::Type::kEvent && r.set == "cuda") {
      EXPECT_EQ(r.kind, uint32_t(EventKind::kLaunch));
      correlations.push_back(correlation(r.payload));
    }
  }
  EXPECT_EQ(calls, (std::vector<std::string>{"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaMemcpyAsync"}));
  EXPECT_EQ(correlations, (std::vector<uint32_t>{101, 102, 103, 104}));
}

// The same into an OTF2 archive: its parameters are defined and written,
// and a reader finds the device's streams and the kernels on them.
TEST_F(CudaTranslation, TheArchiveHoldsTheDeviceItsStreamsAndTheirWork) {
  run(/*archive=*/true);
  otf2::ArchiveReader reader((dir_ / "traces.otf2").string());
  const otf2::Archive& a = reader.archive();
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_EQ(a.devices.begin()->second.name, "GPU 0 (Test GPU, sm_90)");
  size_t streams = 0;
  for (const auto& [location, t] : a.threads) streams += t.device != otf2::kUndefined;
  EXPECT_EQ(streams, 3u);
  std::map<std::string, int> work;
  reader.read_events([](const otf2::SampleEvent&) {},
                     [&](const otf2::RegionEvent& e) {
                       if (e.enter && a.threads.at(e.location).device != otf2::kUndefined)
                         ++work[a.regions.at(e.region).name];
                     },
                     [](const otf2::MpiEvent&) {}, [](const otf2::ForkJoinEvent&) {});
  EXPECT_EQ(work, (std::map<std::string, int>{{"kernel(float*, int)", 1},
                                              {"other()", 1},
                                              {"[CUDA memcpy HtoD]", 1},
                                              {"[CUDA memcpy DtoH]", 1},
                                              {"[CUDA memset]", 1},
                                              {"[CUDA sync: stream]", 1}}));
}

// The same archive for Perfetto and Chrome (hybridprof-convert --to
// chrome): the device's work on its streams' tracks with its parameters
// as args, and each launch an arrow from its call on the host thread to
// its work, both ends there; the file as a viewer reads it
// (tests/integration/chrome_trace_check.py).
TEST_F(CudaTranslation, TheChromeTraceDrawsEachLaunchToItsWork) {
  run(/*archive=*/true);
  const std::string json = (dir_ / "trace.json").string();
  {
    convert::JsonFile out(json);
    const convert::ChromeTraceCounts n = convert::write_chrome_trace((dir_ / "traces.otf2").string(), {}, out);
    out.commit();
    EXPECT_EQ(n.flow_starts, 4u) << "cudaLaunchKernel, two cudaMemcpyAsync, cudaMemsetAsync";
    EXPECT_EQ(n.flow_ends, n.flow_starts);
  }
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"name\":\"kernel(float*, int)\",\"cat\":\"cuda\""), std::string::npos);
  EXPECT_NE(text.find("\"CUDA grid x\":"), std::string::npos) << "the kernel's parameters in its args";
  EXPECT_NE(text.find("\"name\":\"GPU busy %: GPU 0 (Test GPU, sm_90)\""), std::string::npos) << "the device's counter";
  const std::string check = "python3 " HP_SOURCE_DIR "/tests/integration/chrome_trace_check.py " + json;
  FILE* pipe = popen(check.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string report;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) report.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_EQ(report.find("problem"), std::string::npos) << report;
  EXPECT_NE(report.find("flows 4\n"), std::string::npos) << report;
}

}  // namespace
}  // namespace hybridprof::cuda
