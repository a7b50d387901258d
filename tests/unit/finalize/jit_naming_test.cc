// JIT code named from perf maps, on hand-written raw streams and maps: a
// process whose stack runs through code in no module, and the map a JIT
// wrote for it in /tmp. The process's pid is this test's own, so the map
// file in /tmp is this test's to write and remove.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "finalize/finalizer.h"
#include "finalize/perf_map_file.h"
#include "otf2/archive_reader.h"
#include "trace/raw_stream.h"

namespace hybridprof::finalize {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kKernel = 0x7f0000001000, kTrampoline = 0x7f0000002000, kNowhere = 0x7f0000005000;
const char* const kMapText =
    "7f0000001000 100 _jit_avx512_common_conv_fwd_kernel\n"
    "0x7f0000002000 0x80 py::train:/src/model.py\n";

uint64_t realtime_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

std::string this_host() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class JitNaming : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hybridprof-jit-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "raw");
    stream_ = (dir_ / "raw" / (this_host() + "." + std::to_string(getpid()) + ".1.hpr")).string();
    system_map_ = system_perf_map_path(uint64_t(getpid()));
  }
  void TearDown() override {
    fs::remove(system_map_);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void write_system_map(const std::string& text) {
    std::ofstream out(system_map_);
    out << text;
  }

  // A stack: the Python trampoline, then under it the conv kernel at two
  // addresses and an address no map names. The process started at
  // `started_realtime_ns` on `host`.
  void write_stream(uint64_t started_realtime_ns, const std::string& host) {
    raw::StreamWriter w;
    ASSERT_TRUE(w.open(stream_));
    raw::ProcessBegin b;
    b.pid = uint64_t(getpid());
    b.hostname = host;
    b.executable = "/usr/bin/python3";
    b.args = {"python3", "train.py"};
    b.event = "cpu-clock";
    b.mechanism = "perf_event";
    b.period = 1000;
    b.frequency = true;
    b.monotonic_ns = 1000;
    b.realtime_ns = started_realtime_ns;
    w.append(b);
    w.append(raw::thread_begin(0, b.pid, 1000));
    w.append(raw::CctNode{3, raw::kRootComplete, raw::kUnknownModule, kTrampoline + 0x10});
    w.append(raw::CctNode{4, 3, raw::kUnknownModule, kKernel + 0x10});
    w.append(raw::CctNode{5, 3, raw::kUnknownModule, kKernel + 0xff});
    w.append(raw::CctNode{6, 3, raw::kUnknownModule, kNowhere});
    w.append(raw::Sample{0, 2000, 4, 0, 1});
    w.append(raw::Sample{0, 2100, 5, 0, 1});
    w.append(raw::Sample{0, 2200, 6, 0, 1});
    w.append(raw::LocationEnd{0, 3000, {3, 0, 0, 0}, ""});
    w.append(raw::ProcessEnd{4000, raw::EndReason::kExit, 0, 0});
    w.close();
  }

  // Writes the archive into `archive_dir`; by leaf, the samples' root-first region names.
  std::map<std::string, std::vector<std::string>> finalize_into(const fs::path& archive_dir, Result* result) {
    Options options;
    options.directory = dir_.string();
    options.archive_directory = archive_dir.string();
    std::string error;
    EXPECT_TRUE(finalize(options, result, &error)) << error;
    otf2::ArchiveReader reader(archive_dir.string());
    const otf2::Archive& a = reader.archive();
    std::map<std::string, std::vector<std::string>> paths;
    reader.read_events([&](const otf2::SampleEvent& s) {
      std::vector<std::string> names;
      for (uint32_t c : a.context_path(s.context)) names.push_back(a.regions.at(a.contexts.at(c).region).name);
      paths[names.back()] = names;
    });
    for (const auto& [ref, r] : a.regions) modules_[r.name].push_back(r.module);
    return paths;
  }

  fs::path dir_;
  std::string stream_, system_map_;
  std::map<std::string, std::vector<std::string>> modules_;  // region name -> module of each region so named
};

TEST_F(JitNaming, CodeInNoModuleIsNamedFromTheProcesssPerfMap) {
  write_system_map(kMapText);
  write_stream(realtime_now_ns() - 5'000'000'000ull, this_host());
  Result result;
  const auto paths = finalize_into(dir_, &result);
  const std::vector<std::string> kernel_path{"py::train:/src/model.py", "_jit_avx512_common_conv_fwd_kernel"};
  EXPECT_EQ(paths.at("_jit_avx512_common_conv_fwd_kernel"), kernel_path) << "a JIT frame mid-stack and one at the leaf";
  EXPECT_EQ(paths.at("[unknown]"), (std::vector<std::string>{"py::train:/src/model.py", "[unknown]"}))
      << "an address the map does not hold";
  EXPECT_EQ(paths.size(), 2u);
  // One region per name, whatever the address inside it.
  EXPECT_EQ(modules_["_jit_avx512_common_conv_fwd_kernel"], std::vector<std::string>{"[jit]"});
  EXPECT_EQ(modules_["py::train:/src/model.py"], std::vector<std::string>{"[jit]"});
  EXPECT_EQ(modules_["[unknown]"], std::vector<std::string>{""});
  EXPECT_TRUE(result.warnings.empty()) << result.warnings.front();

  // The map is kept with the run: once /tmp lost it, a new archive still names the code.
  const std::string kept = kept_perf_map_path(stream_);
  EXPECT_EQ(kept, (dir_ / "raw" / (this_host() + "." + std::to_string(getpid()) + ".1.perf.map")).string());
  EXPECT_EQ(read_file(kept), kMapText);
  fs::remove(system_map_);
  Result again;
  const auto later = finalize_into(dir_ / "later", &again);
  EXPECT_EQ(later.at("_jit_avx512_common_conv_fwd_kernel"), kernel_path);
}

TEST_F(JitNaming, AKeptMapIsPreferredToTheOneInTmp) {
  write_stream(realtime_now_ns() - 5'000'000'000ull, this_host());
  { std::ofstream(kept_perf_map_path(stream_)) << "7f0000001000 100 kept_kernel\n"; }
  write_system_map("7f0000001000 100 a_later_process_kernel\n");
  Result result;
  const auto paths = finalize_into(dir_, &result);
  EXPECT_EQ(paths.count("kept_kernel"), 1u);
  EXPECT_EQ(paths.count("a_later_process_kernel"), 0u);
}

TEST_F(JitNaming, AMapOlderThanTheProcessIsAnEarlierProcesssAndIgnored) {
  write_system_map(kMapText);
  write_stream(realtime_now_ns() + 60'000'000'000ull, this_host());  // started after the map was written
  Result result;
  const auto paths = finalize_into(dir_, &result);
  EXPECT_EQ(paths.count("_jit_avx512_common_conv_fwd_kernel"), 0u);
  EXPECT_EQ(paths.at("[unknown]"), (std::vector<std::string>{"[unknown]", "[unknown]"}));
  EXPECT_FALSE(fs::exists(kept_perf_map_path(stream_))) << "not kept either";
  EXPECT_TRUE(remove_kept_system_perf_maps(dir_.string()).empty());
  EXPECT_TRUE(fs::exists(system_map_)) << "not ours to remove";
}

TEST_F(JitNaming, AMapInTmpNamesOnlyAProcessOfThisHost) {
  write_system_map(kMapText);
  write_stream(realtime_now_ns() - 5'000'000'000ull, "another-node");
  Result result;
  const auto paths = finalize_into(dir_, &result);
  EXPECT_EQ(paths.count("_jit_avx512_common_conv_fwd_kernel"), 0u);
  EXPECT_FALSE(fs::exists(kept_perf_map_path(stream_)));
}

TEST_F(JitNaming, MalformedLinesAreSaidAndTheRestStillNames) {
  write_system_map(std::string("this is not a map line\n") + kMapText + "7f0000003000 zz broken\n");
  write_stream(realtime_now_ns() - 5'000'000'000ull, this_host());
  Result result;
  const auto paths = finalize_into(dir_, &result);
  EXPECT_EQ(paths.count("_jit_avx512_common_conv_fwd_kernel"), 1u);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("2 malformed line(s)"), std::string::npos) << result.warnings[0];
}

TEST_F(JitNaming, OnlyAKeptUnchangedMapIsRemovedFromTmp) {
  write_system_map(kMapText);
  write_stream(realtime_now_ns() - 5'000'000'000ull, this_host());
  Result result;
  finalize_into(dir_, &result);
  ASSERT_TRUE(fs::exists(kept_perf_map_path(stream_)));
  // Written to after it was kept (a later process with the same pid): left alone.
  { std::ofstream(system_map_, std::ios::app) << "7f0000009000 10 more\n"; }
  EXPECT_TRUE(remove_kept_system_perf_maps(dir_.string()).empty());
  EXPECT_TRUE(fs::exists(system_map_));
  write_system_map(kMapText);  // as it was kept; written before the copy
  timespec old[2] = {{0, UTIME_OMIT}, {time(nullptr) - 10, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, system_map_.c_str(), old, 0), 0);
  EXPECT_EQ(remove_kept_system_perf_maps(dir_.string()), std::vector<std::string>{system_map_});
  EXPECT_FALSE(fs::exists(system_map_));
}

}  // namespace
}  // namespace hybridprof::finalize
