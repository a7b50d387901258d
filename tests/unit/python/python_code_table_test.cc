// The drain's naming of sampled code objects, on fake code and str objects
// in plain memory: a frame is named after the code object it ran, never
// after an object that took that memory later.
#include "trace/python_code_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sigsafe/safe_read.h"

namespace hybridprof {
namespace {

using python::PythonFrame;

class FakeObjects {
 public:
  static constexpr uint64_t kCodeType = 0xc0de0000, kUnicodeType = 0x57700000;
  explicit FakeObjects(const python::PythonLayout& l) : l_(l) {}

  // A compact ASCII str.
  uint64_t str(const std::string& text) {
    const uint64_t s = alloc(l_.unicode_ascii_data + text.size() + 1);
    put(s + l_.object_type, kUnicodeType);
    put(s + l_.unicode_length, uint64_t(text.size()));
    put(s + l_.unicode_state, uint32_t((1u << 2) | (1u << 5) | (1u << 6)));  // kind 1, compact, ascii
    std::memcpy(reinterpret_cast<void*>(s + l_.unicode_ascii_data), text.data(), text.size());
    return s;
  }
  uint64_t code() { return alloc(512); }
  // (Re)writes a code object at `at`, as a new one allocated there would.
  void set_code(uint64_t at, const std::string& qualname, const std::string& filename, int32_t firstlineno) {
    put(at + l_.object_type, kCodeType);
    const uint64_t q = str(qualname);
    put(at + l_.code_qualname, q);
    put(at + l_.code_name, q);
    put(at + l_.code_filename, str(filename));
    put(at + l_.code_firstlineno, firstlineno);
    put(at + l_.code_linetable, uint64_t(0));
  }
  // A frame that ran the code at `at` as it is now, stamped as the handler does.
  PythonFrame frame(uint64_t at) const {
    PythonFrame f;
    f.code = at;
    std::memcpy(&f.qualname, reinterpret_cast<const void*>(at + l_.code_qualname), 8);
    std::memcpy(&f.filename, reinterpret_cast<const void*>(at + l_.code_filename), 8);
    std::memcpy(&f.firstlineno, reinterpret_cast<const void*>(at + l_.code_firstlineno), 4);
    f.flags = python::kCodeStamped;
    return f;
  }
  template <typename T>
  static void put(uint64_t at, T v) {
    std::memcpy(reinterpret_cast<void*>(at), &v, sizeof v);
  }

 private:
  uint64_t alloc(size_t bytes) {
    blocks_.emplace_back(bytes + 64, 0);
    return reinterpret_cast<uint64_t>(blocks_.back().data());
  }
  python::PythonLayout l_;
  std::vector<std::vector<uint8_t>> blocks_;
};

class PythonCodeNames : public ::testing::Test {
 protected:
  const python::PythonLayout& l = *python::builtin_layout(3, 11);
  FakeObjects objects{l};
  PythonCodeTable table{l, FakeObjects::kCodeType, FakeObjects::kUnicodeType};
  std::vector<raw::PythonCode> records;

  std::string name_of(uint32_t id) const {
    for (const auto& r : records)
      if (r.id == id) return r.qualname + " (" + r.filename + ":" + std::to_string(r.firstlineno) + ")";
    return "<no record for id " + std::to_string(id) + ">";
  }
};

TEST_F(PythonCodeNames, ACodeObjectIsNamedOnce) {
  const uint64_t code = objects.code();
  objects.set_code(code, "spin", "split.py", 13);
  const uint32_t id = table.id_for(objects.frame(code), &records);
  ASSERT_NE(id, 0u);
  EXPECT_EQ(name_of(id), "spin (split.py:13)");
  table.new_pass();
  EXPECT_EQ(table.id_for(objects.frame(code), &records), id);
  EXPECT_EQ(records.size(), 1u);
}

// A module's body, sampled, then freed before the drain's pass, its memory
// taken by a function's code object: the sample is not that function's.
TEST_F(PythonCodeNames, MemoryReusedByAnotherCodeObjectDoesNotLendItsName) {
  const uint64_t code = objects.code();
  objects.set_code(code, "<module>", "torch/__init__.py", 1);
  const PythonFrame module_body = objects.frame(code);
  objects.set_code(code, "Linear.forward", "linear.py", 114);
  EXPECT_EQ(table.id_for(module_body, &records), 0u);
  for (const auto& r : records) EXPECT_NE(r.qualname, "Linear.forward");
  // Samples of the new object are named after it.
  const uint32_t forward = table.id_for(objects.frame(code), &records);
  EXPECT_EQ(name_of(forward), "Linear.forward (linear.py:114)");
}

// Named before the reuse: samples still in the rings keep that name, the
// new object gets its own.
TEST_F(PythonCodeNames, SamplesFromBeforeAReuseKeepTheirName) {
  const uint64_t code = objects.code();
  objects.set_code(code, "<module>", "mod.py", 1);
  const PythonFrame before = objects.frame(code);
  const uint32_t module_id = table.id_for(before, &records);
  EXPECT_EQ(name_of(module_id), "<module> (mod.py:1)");
  table.new_pass();
  objects.set_code(code, "helper", "other.py", 7);
  const uint32_t helper_id = table.id_for(objects.frame(code), &records);
  EXPECT_EQ(name_of(helper_id), "helper (other.py:7)");
  EXPECT_EQ(table.id_for(before, &records), module_id);
}

// Without a stamp (the handler could not read the code object) the address
// is read as before; an object that is not code, or names that are not
// str objects, are not read as such.
TEST_F(PythonCodeNames, OnlyCodeAndStrObjectsAreRead) {
  const uint64_t code = objects.code();
  objects.set_code(code, "work", "w.py", 3);
  PythonFrame unstamped = objects.frame(code);
  unstamped.flags = 0;
  EXPECT_EQ(name_of(table.id_for(unstamped, &records)), "work (w.py:3)");

  const uint64_t not_code = objects.code();
  objects.set_code(not_code, "looks", "like_code.py", 1);
  FakeObjects::put(not_code + l.object_type, uint64_t(0x1234));
  PythonFrame f = objects.frame(not_code);
  EXPECT_EQ(table.id_for(f, &records), 0u);
  f.flags = 0;
  EXPECT_EQ(table.id_for(f, &records), 0u);

  const uint64_t bad_name = objects.code();
  objects.set_code(bad_name, "name", "n.py", 1);
  uint64_t qualname = 0;
  std::memcpy(&qualname, reinterpret_cast<const void*>(bad_name + l.code_qualname), 8);
  FakeObjects::put(qualname + l.object_type, uint64_t(0x1234));  // the str's memory now holds something else
  EXPECT_EQ(table.id_for(objects.frame(bad_name), &records), 0u);
}

TEST(SafeReadGather, ReadsInOneCallAndStopsAtTheFirstUnreadable) {
  uint64_t a = 11, b = 22, c = 33;
  uint64_t got[3] = {};
  iovec local[3] = {{&got[0], 8}, {&got[1], 8}, {&got[2], 8}};
  iovec remote[3] = {{&a, 8}, {&b, 8}, {&c, 8}};
  EXPECT_EQ(safe_read_gather(local, remote, 3), 3u);
  EXPECT_EQ(got[0], 11u);
  EXPECT_EQ(got[1], 22u);
  EXPECT_EQ(got[2], 33u);
  remote[1].iov_base = reinterpret_cast<void*>(0x10);  // page zero: never mapped
  got[0] = got[2] = 0;
  EXPECT_EQ(safe_read_gather(local, remote, 3), 1u);
  EXPECT_EQ(got[0], 11u);
  EXPECT_EQ(safe_read_gather(local, remote, 0), 0u);
}

TEST(SeenCodes, AFrameIsNewOnlyTheFirstTime) {
  python::SeenCodes seen;
  PythonFrame f;
  f.code = 0x7f0000001230;
  f.qualname = 0x7f0000009000;
  EXPECT_TRUE(seen.insert(f));
  EXPECT_FALSE(seen.insert(f));
  PythonFrame reused = f;  // the same address, another code object
  reused.qualname = 0x7f000000a000;
  EXPECT_TRUE(seen.insert(reused));
}

// Two hot code objects of a torch training loop, 16 KiB apart in their low
// bits: a cache indexed by low address bits evicted one with the other at
// every sample. Any few codes a loop shows stay known.
TEST(SeenCodes, CodesWhoseLowAddressBitsMatchDoNotEvictEachOther) {
  python::SeenCodes seen;
  PythonFrame frames[python::SeenCodes::kWays];
  for (uint32_t i = 0; i < python::SeenCodes::kWays; ++i) {
    frames[i].code = 0x7ff473424030 + uint64_t{i} * 0x4000 * 0x9e37;
    frames[i].qualname = 0x7ff47341b8b0 + i * 64;
  }
  frames[1].code = 0x7ff44e694030;  // the pair seen in the loop
  for (const auto& f : frames) EXPECT_TRUE(seen.insert(f));
  for (int round = 0; round < 3; ++round) {
    for (const auto& f : frames) EXPECT_FALSE(seen.insert(f)) << std::hex << f.code;
  }
}

}  // namespace
}  // namespace hybridprof
