#include "unwind/loader_snapshot.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hybridprof {
namespace {

struct Seen {
  std::string name;
  uint64_t addr;
  std::vector<ElfW(Phdr)> headers;
};

int record(dl_phdr_info* info, size_t, void* data) {
  static_cast<std::vector<Seen>*>(data)->push_back(
      {info->dlpi_name, info->dlpi_addr, {info->dlpi_phdr, info->dlpi_phdr + info->dlpi_phnum}});
  return 0;
}

int snapshot_record(dl_phdr_info* info, size_t size, void* data) { return record(info, size, data); }

TEST(LoaderSnapshot, DescribesTheModulesLikeTheLoader) {
  LoaderSnapshot::instance().rebuild();
  std::vector<Seen> loader, snapshot;
  dl_iterate_phdr(record, &loader);
  LoaderSnapshot::instance().iterate(snapshot_record, &snapshot);
  ASSERT_EQ(snapshot.size(), loader.size());
  for (size_t i = 0; i < loader.size(); ++i) {
    EXPECT_EQ(snapshot[i].name, loader[i].name);
    EXPECT_EQ(snapshot[i].addr, loader[i].addr);
    ASSERT_EQ(snapshot[i].headers.size(), loader[i].headers.size()) << loader[i].name;
    for (size_t h = 0; h < loader[i].headers.size(); ++h) {
      EXPECT_EQ(snapshot[i].headers[h].p_type, loader[i].headers[h].p_type);
      EXPECT_EQ(snapshot[i].headers[h].p_vaddr, loader[i].headers[h].p_vaddr);
      EXPECT_EQ(snapshot[i].headers[h].p_memsz, loader[i].headers[h].p_memsz);
    }
  }
}

int stop_at_second(dl_phdr_info*, size_t, void* data) {
  return ++*static_cast<int*>(data) == 2 ? 7 : 0;
}

TEST(LoaderSnapshot, StopsAtTheFirstNonzeroResultAndReturnsIt) {
  LoaderSnapshot::instance().rebuild();
  int calls = 0;
  EXPECT_EQ(LoaderSnapshot::instance().iterate(stop_at_second, &calls), 7);
  EXPECT_EQ(calls, 2);
}

TEST(LoaderSnapshot, SkipsAModuleUnloadedSinceItWasTaken) {
  void* handle = dlopen(HYBRIDPROF_TEST_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  LoaderSnapshot::instance().rebuild();
  auto names = [] {
    std::vector<Seen> seen;
    LoaderSnapshot::instance().iterate(snapshot_record, &seen);
    std::string all;
    for (const auto& s : seen) all += s.name + "\n";
    return all;
  };
  EXPECT_NE(names().find("unload_me"), std::string::npos);
  ASSERT_EQ(dlclose(handle), 0);
  // Not rebuilt: the entry is still in the snapshot, but not handed out.
  EXPECT_EQ(names().find("unload_me"), std::string::npos) << names();
}

// What the unwinder asks when an unwind fails: is a frame in a module the
// snapshot has not seen yet (then it is offered to the retry's lookups, and
// the drain should rebuild the snapshot)?
TEST(LoaderSnapshot, OffersOnlyModulesLoadedSinceItWasTaken) {
  LoaderSnapshot& snapshot = LoaderSnapshot::instance();
  snapshot.rebuild();
  void* handle = dlopen(HYBRIDPROF_TEST_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const auto in_plugin = reinterpret_cast<uint64_t>(dlsym(handle, "unload_me_answer"));
  ASSERT_NE(in_plugin, 0u) << dlerror();
  int on_stack = 0;
  EXPECT_FALSE(snapshot.offer_missed(reinterpret_cast<uint64_t>(&dlopen))) << "libc is held";
  EXPECT_FALSE(snapshot.offer_missed(reinterpret_cast<uint64_t>(&on_stack))) << "the stack is in no module";
  EXPECT_TRUE(snapshot.offer_missed(in_plugin));
  // Offered: iterate() hands it out after the snapshot's own modules.
  std::vector<Seen> seen;
  snapshot.iterate(snapshot_record, &seen);
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen.back().name.find("unload_me"), std::string::npos) << seen.back().name;
  LoaderSnapshot::forget_missed();
  seen.clear();
  snapshot.iterate(snapshot_record, &seen);
  EXPECT_EQ(seen.back().name.find("unload_me"), std::string::npos) << "withdrawn";
  snapshot.rebuild();
  EXPECT_FALSE(snapshot.offer_missed(in_plugin)) << "held after the rebuild";
  ASSERT_EQ(dlclose(handle), 0);
}

}  // namespace
}  // namespace hybridprof
