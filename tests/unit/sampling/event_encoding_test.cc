#include "sampling/event_encoding.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace hybridprof::sampling {
namespace {

EventSpec must_encode(const std::string& name) {
  EventSpec spec;
  std::string error;
  EXPECT_TRUE(encode_event(name, &spec, &error)) << name << ": " << error;
  return spec;
}

TEST(EncodeEvent, CyclesIsTheGenericHardwareEvent) {
  EventSpec spec = must_encode("cycles");
  EXPECT_EQ(spec.name, "cycles");
  EXPECT_EQ(spec.type, uint32_t(PERF_TYPE_HARDWARE));
  EXPECT_EQ(spec.config, uint64_t(PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_FALSE(spec.software_clock);
  EXPECT_EQ(spec.canonical.rfind("perf::PERF_COUNT_HW_CPU_CYCLES", 0), 0u) << spec.canonical;
}

// perf's generic names are encoded from a table, without starting libpfm
// (pfm_initialize costs milliseconds at every process start): exactly as
// libpfm encodes them.
TEST(EncodeEvent, GenericNamesEncodeAsLibpfmDoes) {
  for (const char* name : {"cycles", "instructions", "cpu-clock", "task-clock", "branch-misses", "branches",
                           "cache-misses", "cache-references", "ref-cycles", "page-faults", "context-switches",
                           "cpu-migrations"}) {
    const EventSpec table = must_encode(name);
    EventSpec pfm;
    ASSERT_TRUE(encode_event_with_libpfm(name, &pfm)) << name;
    EXPECT_EQ(table.type, pfm.type) << name;
    EXPECT_EQ(table.config, pfm.config) << name;
    EXPECT_EQ(table.config1, pfm.config1) << name;
    EXPECT_EQ(table.config2, pfm.config2) << name;
    EXPECT_EQ(table.precise_ip, pfm.precise_ip) << name;
    EXPECT_EQ(table.software_clock, pfm.software_clock) << name;
    EXPECT_EQ(pfm.canonical.rfind(table.canonical + ":", 0), 0u) << name << ": " << table.canonical << " vs " << pfm.canonical;
  }
}

TEST(EncodeEvent, Instructions) {
  EventSpec spec = must_encode("instructions");
  EXPECT_EQ(spec.type, uint32_t(PERF_TYPE_HARDWARE));
  EXPECT_EQ(spec.config, uint64_t(PERF_COUNT_HW_INSTRUCTIONS));
  EXPECT_FALSE(spec.software_clock);
}

TEST(EncodeEvent, SoftwareClocks) {
  EventSpec cpu = must_encode("cpu-clock");
  EXPECT_EQ(cpu.type, uint32_t(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(cpu.config, uint64_t(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_TRUE(cpu.software_clock);
  EventSpec task = must_encode("task-clock");
  EXPECT_EQ(task.type, uint32_t(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(task.config, uint64_t(PERF_COUNT_SW_TASK_CLOCK));
  EXPECT_TRUE(task.software_clock);
  // A software event that is not a clock counts events, not nanoseconds.
  EXPECT_FALSE(must_encode("page-faults").software_clock);
}

TEST(EncodeEvent, CpuClockEventMatchesTheEncodedName) {
  EventSpec encoded = must_encode("cpu-clock");
  EventSpec built = cpu_clock_event();
  EXPECT_EQ(built.name, "cpu-clock");
  EXPECT_EQ(built.type, encoded.type);
  EXPECT_EQ(built.config, encoded.config);
  EXPECT_TRUE(built.software_clock);
}

TEST(EncodeEvent, OtherGenericNamesAndSpellings) {
  EXPECT_EQ(must_encode("branch-misses").config, uint64_t(PERF_COUNT_HW_BRANCH_MISSES));
  EXPECT_EQ(must_encode("cache-misses").config, uint64_t(PERF_COUNT_HW_CACHE_MISSES));
  EventSpec upper = must_encode("CYCLES");
  EXPECT_EQ(upper.type, uint32_t(PERF_TYPE_HARDWARE));
  EXPECT_EQ(upper.config, uint64_t(PERF_COUNT_HW_CPU_CYCLES));
  EXPECT_EQ(upper.name, "CYCLES");  // kept as the user wrote it
  EventSpec libpfm_name = must_encode("perf::PERF_COUNT_HW_CPU_CYCLES");
  EXPECT_EQ(libpfm_name.type, uint32_t(PERF_TYPE_HARDWARE));
  EXPECT_EQ(libpfm_name.config, uint64_t(PERF_COUNT_HW_CPU_CYCLES));
  EventSpec cache = must_encode("L1-dcache-load-misses");
  EXPECT_EQ(cache.type, uint32_t(PERF_TYPE_HW_CACHE));
  EXPECT_EQ(cache.config, uint64_t(PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                   (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)));
  EventSpec raw = must_encode("r003c");
  EXPECT_EQ(raw.type, uint32_t(PERF_TYPE_RAW));
  EXPECT_EQ(raw.config, 0x3cu);
}

TEST(EncodeEvent, ModifiersReachTheSpec) {
  EXPECT_EQ(must_encode("cycles:precise=1").precise_ip, 1);
  EXPECT_EQ(must_encode("cycles:u").config, uint64_t(PERF_COUNT_HW_CPU_CYCLES));
}

TEST(EncodeEvent, RefusesEventsThatExcludeUserLevel) {
  EventSpec spec;
  std::string error;
  EXPECT_FALSE(encode_event("cycles:k=1", &spec, &error));
  EXPECT_NE(error.find("'cycles:k=1'"), std::string::npos) << error;
  EXPECT_NE(error.find("user level"), std::string::npos) << error;
}

TEST(EncodeEvent, UnknownNameIsAnErrorNamingTheEvent) {
  EventSpec spec;
  std::string error;
  EXPECT_FALSE(encode_event("foo", &spec, &error));
  EXPECT_EQ(error, "unknown event 'foo' (see --list-events)");
  error.clear();
  EXPECT_FALSE(encode_event("cycles:nosuchmodifier", &spec, &error));
  EXPECT_NE(error.find("'cycles:nosuchmodifier'"), std::string::npos) << error;
}

TEST(EncodeEvent, EmptyNameIsAnError) {
  EventSpec spec;
  std::string error;
  EXPECT_FALSE(encode_event("", &spec, &error));
  EXPECT_FALSE(error.empty());
}

TEST(EncodeEvent, ConcurrentCallersAgree) {
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&wrong, t] {
      const char* name = (t % 2 == 0) ? "cycles" : "task-clock";
      for (int i = 0; i < 200; ++i) {
        EventSpec spec;
        std::string error;
        bool ok = encode_event(name, &spec, &error);
        uint64_t expected = (t % 2 == 0) ? uint64_t(PERF_COUNT_HW_CPU_CYCLES) : uint64_t(PERF_COUNT_SW_TASK_CLOCK);
        if (!ok || spec.config != expected) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

std::string entry_name(const std::string& entry) { return entry.substr(0, entry.find('\t')); }

TEST(ListEvents, GenericNamesComeFirst) {
  std::vector<std::string> events = list_events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(entry_name(events[0]), "cycles");
  std::set<std::string> names;
  for (const std::string& entry : events) names.insert(entry_name(entry));
  EXPECT_TRUE(names.count("cycles"));
  EXPECT_TRUE(names.count("cpu-clock"));
  EXPECT_TRUE(names.count("task-clock"));
  EXPECT_TRUE(names.count("instructions"));
  EXPECT_EQ(names.size(), events.size()) << "an event is listed twice";
}

TEST(ListEvents, EveryEntryHasADescriptionAndEncodes) {
  for (const std::string& entry : list_events()) {
    size_t tab = entry.find('\t');
    ASSERT_NE(tab, std::string::npos) << entry;
    EXPECT_GT(entry.size(), tab + 1) << "no description: " << entry;
    EXPECT_EQ(entry.find('\t', tab + 1), std::string::npos) << entry;
    EXPECT_EQ(entry.find('\n'), std::string::npos) << entry;
    EventSpec spec;
    std::string error;
    EXPECT_TRUE(encode_event(entry.substr(0, tab), &spec, &error)) << entry << ": " << error;
  }
}

}  // namespace
}  // namespace hybridprof::sampling
