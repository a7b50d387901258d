// The finalizer on hand-written raw streams: no program runs, so every
// fact is known in advance.
#include "finalize/finalizer.h"

#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "otf2/archive_reader.h"
#include "otf2/property_names.h"
#include "trace/raw_stream.h"
#include "trace/records.h"

extern "C" __attribute__((noinline)) void finalizer_test_leaf() { asm volatile(""); }
extern "C" __attribute__((noinline)) void finalizer_test_caller() {
  finalizer_test_leaf();
  asm volatile("");
}

namespace hybridprof::finalize {
namespace {

namespace fs = std::filesystem;

uint64_t load_bias() {
  uint64_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uint64_t*>(out) = info->dlpi_addr;
        return 1;  // the first entry is the executable
      },
      &bias);
  return bias;
}

uint64_t offset_of(void (*fn)()) { return reinterpret_cast<uint64_t>(fn) - load_bias(); }

// A process that sampled cpu-clock through perf_event.
raw::ProcessBegin process_begin(uint64_t pid, const std::string& executable) {
  raw::ProcessBegin b;
  b.pid = pid;
  b.hostname = "host";
  b.executable = executable;
  b.event = "cpu-clock";
  b.mechanism = "perf_event";
  return b;
}

class Finalizer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hybridprof-finalize-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "raw");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // A process whose thread 0 ends cleanly and thread 1 does not (killed).
  void write_stream(bool with_process_end, const std::vector<raw::ClockOffset>& clock_offsets = {}) {
    raw::StreamWriter w;
    ASSERT_TRUE(w.open((dir_ / "raw/host.42.1.hpr").string()));
    raw::ProcessBegin b = process_begin(42, "/proc/self/exe");
    b.args = {"./app", "--flag"};
    b.period = 1000;
    b.frequency = true;
    b.monotonic_ns = 1000;
    w.append(b);
    const std::string exe = fs::read_symlink("/proc/self/exe").string();
    w.append(raw::ModuleLoad{1, 0, load_bias(), 0, UINT64_MAX, exe});
    w.append(raw::thread_begin(0, 42, 1000));
    w.append(raw::thread_begin(1, 43, 1000));
    for (const auto& c : clock_offsets) w.append(c);
    // caller -> leaf, complete; and a truncated stack ending in leaf.
    w.append(raw::CctNode{3, raw::kRootComplete, 1, offset_of(finalizer_test_caller)});
    w.append(raw::CctNode{4, 3, 1, offset_of(finalizer_test_leaf)});
    w.append(raw::CctNode{5, raw::kRootTruncated, 1, offset_of(finalizer_test_leaf)});
    w.append(raw::Sample{0, 2000, 4, 0, 1});
    w.append(raw::Sample{0, 3000, 4, 0, 3});  // a timer sample standing for 3 periods
    w.append(raw::Sample{1, 2500, 5, 1, 1});
    w.append(raw::Sample{1, 2600, 99, 0, 1});  // its node was lost: skipped, not fatal
    w.append(raw::LocationEnd{0, 4000, {4, 1, 0, 0}, "worker"});
    if (with_process_end) w.append(raw::ProcessEnd{5000, raw::EndReason::kExit, 0, 0});
    w.close();
  }

  // The archive of the raw data in dir_, written or the test failed.
  void finalize_here(Result* result) {
    Options options;
    options.directory = dir_.string();
    std::string error;
    ASSERT_TRUE(finalize(options, result, &error)) << error;
  }

  // A stream of process 42 whose thread 0 has begun: the test appends the rest.
  void begin_stream(raw::StreamWriter& w) {
    ASSERT_TRUE(w.open((dir_ / "raw/host.42.1.hpr").string()));
    w.append(process_begin(42, "/proc/self/exe"));
    w.append(raw::thread_begin(0, 42, 1000));
  }

  fs::path dir_;
};

TEST_F(Finalizer, SymbolizesExpandsWeightsAndCounts) {
  write_stream(true);
  Result result;
  ASSERT_NO_FATAL_FAILURE(finalize_here(&result));
  EXPECT_EQ(result.processes, 1u);
  EXPECT_EQ(result.threads, 2u);
  EXPECT_EQ(result.samples, 6u) << "4 weighted samples on thread 0, 2 seen on thread 1";

  otf2::ArchiveReader reader(dir_.string());
  const otf2::Archive& a = reader.archive();
  std::map<std::string, uint64_t> by_leaf;
  std::map<std::string, std::string> root_of_leaf_sample;
  reader.read_events([&](const otf2::SampleEvent& s) {
    const auto path = a.context_path(s.context);
    ASSERT_FALSE(path.empty());
    const std::string leaf = a.regions.at(a.contexts.at(path.back()).region).name;
    ++by_leaf[leaf];
    root_of_leaf_sample[leaf + "@" + std::to_string(s.location)] = a.regions.at(a.contexts.at(path.front()).region).name;
  });
  EXPECT_EQ(by_leaf["finalizer_test_leaf"], 5u) << "weight 1 + weight 3 on thread 0, 1 truncated on thread 1";
  for (const auto& [key, root] : root_of_leaf_sample) {
    const bool first_thread = key.find("@0") != std::string::npos;
    EXPECT_EQ(root, first_thread ? "finalizer_test_caller" : "[truncated stack]") << key;
  }
  // Regions carry their module and source file.
  bool found = false;
  for (const auto& [ref, r] : a.regions) {
    if (r.name != "finalizer_test_leaf") continue;
    found = true;
    EXPECT_NE(r.file.find("finalizer_test.cc"), std::string::npos) << r.file;
    EXPECT_NE(r.module.find("finalize_test"), std::string::npos) << r.module;
  }
  EXPECT_TRUE(found);
  // Thread 0's own counters win; thread 1 had no end record.
  std::map<uint64_t, otf2::ThreadInfo> threads(a.threads.begin(), a.threads.end());
  ASSERT_EQ(threads.size(), 2u);
  const auto& t0 = threads.begin()->second;
  EXPECT_EQ(t0.properties.at("SAMPLES"), 4u);
  EXPECT_EQ(t0.properties.at("DROPPED"), 1u);
  EXPECT_EQ(t0.properties.at("TID"), 42u);
  EXPECT_NE(t0.name.find("worker"), std::string::npos) << t0.name;
  EXPECT_EQ(a.properties.at("HYBRIDPROF::PROGRAM"), "./app --flag");
  EXPECT_EQ(a.properties.at("HYBRIDPROF::PERIOD"), "1000 Hz");
}

// A thread that recorded nothing gets no location (10,000 short threads
// would be 20,000 OTF2 files): it is counted in its process's
// QUIET_THREADS. The process's first thread keeps its location; a thread
// whose counters say something (samples lost) keeps its own.
TEST_F(Finalizer, ThreadsThatRecordedNothingAreCountedWithoutALocation) {
  raw::StreamWriter w;
  ASSERT_NO_FATAL_FAILURE(begin_stream(w));  // thread 0: nothing at all
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  w.append(raw::ModuleLoad{1, 0, load_bias(), 0, UINT64_MAX, exe});
  w.append(raw::CctNode{3, raw::kRootComplete, 1, offset_of(finalizer_test_caller)});
  for (uint32_t t = 1; t <= 5; ++t) w.append(raw::thread_begin(t, 100 + t, 1000));
  w.append(raw::Sample{1, 2000, 3, 0, 1});  // 1: a sample
  w.append(raw::RegionDef{7, "traced", 0, raw::kUnknownModule, 0, {}});
  w.append(raw::Enter{{2, 2100, 7, 3}});  // 2: a traced region
  w.append(raw::Leave{{2, 2200, 7, 3}});
  w.append(raw::LocationEnd{3, 3000, {}, ""});         // 3: nothing, ended cleanly
  w.append(raw::LocationEnd{4, 3000, {0, 2}, ""});     // 4: two samples lost
  w.append(raw::LocationEnd{1, 3000, {1, 0}, ""});     // (5: nothing, and no end)
  w.append(raw::LocationEnd{0, 3000, {}, ""});
  w.append(raw::ProcessEnd{5000, raw::EndReason::kExit, 0, 0});
  w.close();
  Result result;
  ASSERT_NO_FATAL_FAILURE(finalize_here(&result));
  EXPECT_EQ(result.threads, 6u) << "every thread counts";

  otf2::ArchiveReader reader(dir_.string());
  const otf2::Archive& a = reader.archive();
  std::set<uint64_t> tids;
  for (const auto& [ref, t] : a.threads) tids.insert(t.properties.at(otf2::property::kTid));
  EXPECT_EQ(tids, (std::set<uint64_t>{42, 101, 102, 104})) << "locations: the first thread and those that recorded";
  ASSERT_EQ(a.processes.size(), 1u);
  EXPECT_EQ(a.processes.begin()->second.properties.at(otf2::property::kQuietThreads), "2");
  uint64_t samples = 0, enters = 0;
  reader.read_events([&](const otf2::SampleEvent&) { ++samples; },
                     [&](const otf2::RegionEvent& e) { enters += e.enter; });
  EXPECT_EQ(samples, 1u);
  EXPECT_EQ(enters, 1u);
}

TEST_F(Finalizer, KilledProcessStillGivesAnArchiveAndSaysWhatIsMissing) {
  write_stream(false);
  Result result;
  ASSERT_NO_FATAL_FAILURE(finalize_here(&result));
  ASSERT_FALSE(result.warnings.empty());
  EXPECT_NE(result.warnings.front().find("without a final flush"), std::string::npos) << result.warnings.front();
  otf2::ArchiveReader reader(dir_.string());
  uint64_t samples = 0;
  reader.read_events([&](const otf2::SampleEvent&) { ++samples; });
  EXPECT_EQ(samples, 5u);
}

// An MPI rank killed before MPI_Finalize measured its clock offset once (at
// MPI_Init). OTF2 readers ignore a single offset, so the finalizer repeats
// it at the process's last event: the rank's events are still shifted.
TEST_F(Finalizer, ASingleClockOffsetStillAlignsAKilledRank) {
  constexpr int64_t kOffset = 1000000;
  write_stream(false, {raw::ClockOffset{1500, kOffset, 10}});
  Result result;
  ASSERT_NO_FATAL_FAILURE(finalize_here(&result));
  otf2::ArchiveReader reader(dir_.string());
  std::multiset<uint64_t> times;
  reader.read_events([&](const otf2::SampleEvent& s) { times.insert(s.timestamp); });
  // The weight-3 sample at 3000 is three events.
  EXPECT_EQ(times, (std::multiset<uint64_t>{2000 + kOffset, 2500 + kOffset, 3000 + kOffset, 3000 + kOffset,
                                             3000 + kOffset}));
}

// A Python process: its samples that the runtime flagged as having an
// incomplete Python stack are counted per thread (weights included), and
// the process says which Python it ran. A native process says neither.
TEST_F(Finalizer, CountsIncompletePythonStacksOfPythonProcesses) {
  auto write = [&](const std::string& name, uint64_t pid, const std::string& python) {
    raw::StreamWriter w;
    ASSERT_TRUE(w.open((dir_ / "raw" / name).string()));
    raw::ProcessBegin b = process_begin(pid, "/usr/bin/python3");
    b.args = {"python3", "app.py"};
    b.python = python;
    w.append(b);
    w.append(raw::thread_begin(0, pid, 1000));
    w.append(raw::thread_begin(1, pid + 1, 1000));
    w.append(raw::PythonCode{1, "main", "/src/app.py", 1, 2, ""});
    w.append(raw::CctNode{3, raw::kRootComplete, raw::kPythonModule, (uint64_t{1} << 32) | 1});
    w.append(raw::Sample{0, 2000, 3, 0, 1});
    w.append(raw::Sample{0, 2100, 3, kSamplePythonIncomplete, 1});
    w.append(raw::Sample{0, 2200, 3, kSamplePythonIncomplete | kSampleTruncated, 3});
    w.append(raw::Sample{1, 2300, 3, kSamplePythonIncomplete, 1});
    w.append(raw::Sample{1, 2400, 3, kSampleUnwindFailed, 1});
    w.append(raw::ProcessEnd{5000, raw::EndReason::kExit, 0, 0});
    w.close();
  };
  write("host.42.1.hpr", 42, "3.11");
  write("host.50.1.hpr", 50, "");
  Result result;
  ASSERT_NO_FATAL_FAILURE(finalize_here(&result));
  EXPECT_EQ(result.python_incomplete, 5u) << "1 + 3 (weight) on thread 0, 1 on thread 1, of the Python process";

  otf2::ArchiveReader reader(dir_.string());
  const otf2::Archive& a = reader.archive();
  std::map<uint64_t, std::optional<uint64_t>> incomplete_by_tid;
  for (const auto& [location, t] : a.threads) {
    auto it = t.properties.find(otf2::property::kPythonIncomplete);
    incomplete_by_tid[t.properties.at(otf2::property::kTid)] =
        it == t.properties.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }
  EXPECT_EQ(incomplete_by_tid, (std::map<uint64_t, std::optional<uint64_t>>{
                                   {42, 4}, {43, 1}, {50, std::nullopt}, {51, std::nullopt}}));
  std::map<std::string, std::string> python_by_pid;
  for (const auto& [ref, process] : a.processes) {
    auto it = process.properties.find(otf2::property::kPython);
    python_by_pid[process.properties.at(otf2::property::kPid)] = it == process.properties.end() ? "none" : it->second;
  }
  EXPECT_EQ(python_by_pid, (std::map<std::string, std::string>{{"42", "3.11"}, {"50", "none"}}));
}

// A damaged stream's node id far past those seen (ids are dense) is
// dropped, not made room for: an id near 2^32 was a 96 GB table (this test
// failed on it). The stream's samples are still counted.
TEST_F(Finalizer, ANodeIdFarPastTheOthersIsDroppedNotMadeRoomFor) {
  {
    raw::StreamWriter w;
    ASSERT_NO_FATAL_FAILURE(begin_stream(w));
    w.append(raw::CctNode{3, raw::kRootComplete, 1, 0x10});
    w.append(raw::CctNode{4000000000u, 3, 1, 0x20});
    w.append(raw::Sample{0, 2000, 3, 0, 1});
    w.append(raw::Sample{0, 2100, 4000000000u, 0, 1});
    w.append(raw::ProcessEnd{5000, raw::EndReason::kExit, 0, 0});
    w.close();
  }
  Result result;
  ASSERT_NO_FATAL_FAILURE(finalize_here(&result));
  EXPECT_EQ(result.samples, 2u);
}

// Each event goes to the writer of its set, found by the set's name: an
// MPI request test is written; an event of a set this build has no writer
// for, one in no set, and an MPI send naming a communicator the stream
// never defined are skipped, counted, and said in a warning.
TEST_F(Finalizer, EventsGoToTheirSetsWriterAndTheUnwritableAreCounted) {
  {
    raw::StreamWriter w;
    ASSERT_NO_FATAL_FAILURE(begin_stream(w));
    w.append(raw::EventSetDef{0, 12, "mpi"});
    w.append(raw::EventSetDef{12, 2, "toy"});
    EventPayload request;
    request.wide[2] = 77;
    w.append(raw::Event{0, 2000, 6, request});    // mpi: request test
    w.append(raw::Event{0, 2100, 13, request});   // toy: no writer here
    w.append(raw::Event{0, 2200, 100, request});  // in no set
    EventPayload send;
    send.word[0] = 9;                             // a comm never defined
    w.append(raw::Event{0, 2300, 0, send});       // mpi: send
    w.append(raw::ProcessEnd{5000, raw::EndReason::kExit, 0, 0});
    w.close();
  }
  Result result;
  ASSERT_NO_FATAL_FAILURE(finalize_here(&result));
  EXPECT_EQ(result.traced_events, 1u);
  EXPECT_EQ(result.events_skipped, 3u);
  bool warned = false;
  for (const auto& w : result.warnings) warned |= w.find("3 traced events not written") != std::string::npos;
  EXPECT_TRUE(warned) << "the skipped events are said";
}

TEST_F(Finalizer, RefusesEmptyDirectoriesAndExistingArchives) {
  Options options;
  options.directory = dir_.string();
  Result result;
  std::string error;
  EXPECT_FALSE(finalize(options, &result, &error));
  EXPECT_NE(error.find("no raw data"), std::string::npos) << error;
  write_stream(true);
  ASSERT_TRUE(finalize(options, &result, &error)) << error;
  Result again;
  EXPECT_FALSE(finalize(options, &again, &error)) << "an archive is never overwritten";
  EXPECT_NE(error.find("traces"), std::string::npos) << error;
}

}  // namespace
}  // namespace hybridprof::finalize
