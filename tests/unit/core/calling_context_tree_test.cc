#include "trace/calling_context_tree.h"

#include <gtest/gtest.h>

#include "trace/module_table.h"

namespace hybridprof {
namespace {

__attribute__((noinline)) void table_refresh_probe() { asm volatile(""); }

TEST(CallingContextTree, SharedPrefixesShareNodes) {
  CallingContextTree cct;
  std::vector<raw::CctNode> added;
  const uint32_t main = cct.child(raw::kRootComplete, 1, 0x10, &added);
  const uint32_t a = cct.child(main, 1, 0x20, &added);
  const uint32_t b = cct.child(main, 1, 0x30, &added);
  EXPECT_EQ(added.size(), 3u);
  added.clear();
  EXPECT_EQ(cct.child(raw::kRootComplete, 1, 0x10, &added), main);
  EXPECT_EQ(cct.child(main, 1, 0x20, &added), a);
  EXPECT_TRUE(added.empty()) << "a known path defines nothing new";
  EXPECT_NE(a, b);
  EXPECT_GE(main, raw::kFirstCctNode);
  // The same address under another parent or module is another node.
  EXPECT_NE(cct.child(a, 1, 0x30, &added), b);
  EXPECT_NE(cct.child(main, 2, 0x30, &added), b);
  EXPECT_EQ(added.size(), 2u);
  EXPECT_EQ(added[0].parent, a);
  EXPECT_GT(added[0].id, added[0].parent) << "children get larger ids than parents";
}

TEST(ModuleTable, AttributesByAddressAndTime) {
  ModuleTable table;
  table.add({1, "/lib/a.so", 0x1000, 0x1000, 0x2000, 0, 500});  // unloaded at t=500
  table.add({2, "/lib/b.so", 0x1000, 0x1000, 0x3000, 600, UINT64_MAX});  // reuses the range
  ModuleInfo m;
  ASSERT_TRUE(table.find(0x1800, 100, &m));
  EXPECT_EQ(m.path, "/lib/a.so");
  ASSERT_TRUE(table.find(0x1800, 700, &m));
  EXPECT_EQ(m.path, "/lib/b.so");
  EXPECT_FALSE(table.find(0x2800, 100, &m)) << "b.so was not there yet";
  EXPECT_FALSE(table.find(0x9000, 700, &m));
}

TEST(ModuleTable, RefreshFindsThisExecutableAndLibc) {
  ModuleTable table;
  std::vector<raw::Record> changes;
  table.refresh(1, &changes, true);
  ASSERT_GE(changes.size(), 2u);
  ModuleInfo m;
  ASSERT_TRUE(table.find(reinterpret_cast<uint64_t>(&table_refresh_probe), 2, &m));
  EXPECT_NE(m.path.find("core_test"), std::string::npos) << m.path;
  changes.clear();
  table.refresh(3, &changes);
  EXPECT_TRUE(changes.empty()) << "nothing loaded or unloaded in between";
}

}  // namespace
}  // namespace hybridprof
