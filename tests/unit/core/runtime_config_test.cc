#include "common/runtime_config.h"
#include "common/trace_switch.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <utility>

namespace hybridprof {
namespace {

TEST(RuntimeConfig, SizesReadWithBinaryUnits) {
  uint64_t bytes = 0;
  EXPECT_TRUE(parse_size("4096", &bytes));
  EXPECT_EQ(bytes, 4096u);
  EXPECT_TRUE(parse_size("64K", &bytes));
  EXPECT_EQ(bytes, 64u << 10);
  EXPECT_TRUE(parse_size("100m", &bytes));
  EXPECT_EQ(bytes, 100u << 20);
  EXPECT_TRUE(parse_size("2GiB", &bytes));
  EXPECT_EQ(bytes, 2ull << 30);
  EXPECT_TRUE(parse_size("3MB", &bytes));
  EXPECT_EQ(bytes, 3u << 20);
  EXPECT_TRUE(parse_size("1T", &bytes));
  EXPECT_EQ(bytes, 1ull << 40);
  for (const char* bad : {"", "0", "M", "-1", "1.5G", "12X", "1 G", "99999999999999999999", "9999999999T"})
    EXPECT_FALSE(parse_size(bad, &bytes)) << bad;
}

TEST(RuntimeConfig, MaxSizeFromTheEnvironment) {
  RuntimeConfig config;
  std::string error;
  setenv(env::kMaxSize, "1048576", 1);
  EXPECT_TRUE(runtime_config_from_env(&config, &error)) << error;
  EXPECT_EQ(config.max_size_bytes, 1u << 20);
  setenv(env::kMaxSize, "1K", 1);  // below the least that holds a stream's start
  EXPECT_FALSE(runtime_config_from_env(&config, &error));
  EXPECT_NE(error.find("HYBRIDPROF_MAX_SIZE='1K'"), std::string::npos) << error;
  unsetenv(env::kMaxSize);
}

TEST(RuntimeConfig, TraceListsNameKnownAdaptersOrAllOrNone) {
  uint32_t mask = 0;
  std::string error;
  ASSERT_TRUE(parse_trace_list("mpi,nvtx", &mask, &error)) << error;
  EXPECT_TRUE(mask_traces(mask, "mpi"));
  EXPECT_TRUE(mask_traces(mask, "nvtx"));
  EXPECT_FALSE(mask_traces(mask, "openmp"));
  EXPECT_FALSE(mask_traces(mask, "cuda"));
  EXPECT_EQ(trace_list_text(mask), "mpi,nvtx");
  ASSERT_TRUE(parse_trace_list("os", &mask, &error)) << error;
  EXPECT_EQ(mask, trace_mask_of("os"));
  EXPECT_EQ(trace_mask_of("gpu"), 0u);
  ASSERT_TRUE(parse_trace_list("all", &mask, &error));
  EXPECT_EQ(mask, kAllTracedAdapters);
  ASSERT_TRUE(parse_trace_list("none", &mask, &error));
  EXPECT_EQ(mask, 0u);
  EXPECT_EQ(trace_list_text(0), "none");
  for (const char* bad : {"", "mpi,", ",mpi", "mpi,,cuda", "MPI", "sampling", "mpi openmp"}) {
    EXPECT_FALSE(parse_trace_list(bad, &mask, &error)) << bad;
    EXPECT_NE(error.find("mpi, openmp, cuda, nvtx, os"), std::string::npos) << error;
  }
  // A list the runtime is handed is checked at its start, like every setting.
  RuntimeConfig config;
  setenv(env::kTrace, "mpi,gpu", 1);
  EXPECT_FALSE(runtime_config_from_env(&config, &error));
  EXPECT_NE(error.find("unknown adapter 'gpu'"), std::string::npos) << error;
  unsetenv(env::kTrace);
}

// --os-wait-min: a duration needs its unit, but for 0.
TEST(RuntimeConfig, DurationsNeedTheirUnit) {
  const std::pair<const char*, uint64_t> good[] = {{"0", 0},          {"20us", 20000},     {"20\u00b5s", 20000},
                                                   {"1.5ms", 1500000}, {"2s", 2000000000}, {"500ns", 500},
                                                   {"0us", 0}};
  for (const auto& [text, ns] : good) {
    uint64_t got = 1;
    EXPECT_TRUE(parse_duration(text, &got)) << text;
    EXPECT_EQ(got, ns) << text;
  }
  for (const char* bad : {"", "20", "us", "-1ms", "1 ms", "1m", "1e3us", "1.2.3ms", "20usx"}) {
    uint64_t got = 7;
    EXPECT_FALSE(parse_duration(bad, &got)) << bad;
  }
  RuntimeConfig config;
  std::string error;
  EXPECT_EQ(config.os_wait_min_ns, kDefaultOsWaitMinNs);
  setenv(env::kOsWaitMin, "0", 1);
  ASSERT_TRUE(runtime_config_from_env(&config, &error)) << error;
  EXPECT_EQ(config.os_wait_min_ns, 0u);
  setenv(env::kOsWaitMin, "soon", 1);
  EXPECT_FALSE(runtime_config_from_env(&config, &error));
  unsetenv(env::kOsWaitMin);
}

}  // namespace
}  // namespace hybridprof
