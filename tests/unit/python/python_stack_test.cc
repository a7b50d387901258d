// The signal-path Python frame reader on synthetic interpreter structures
// laid out by each version's table: runtime -> interpreter -> thread
// states -> frames -> code objects, built in plain memory. This is how the
// versions this machine cannot run are checked.
#include "unwind/python/python_stack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "unwind/python/python_layout.h"

namespace hybridprof::python {
namespace {

// A block of fake interpreter memory with typed pokes.
class FakeMemory {
 public:
  uint64_t alloc(size_t bytes) {
    blocks_.emplace_back(bytes + 64, 0);
    return reinterpret_cast<uint64_t>(blocks_.back().data());
  }
  static void put64(uint64_t at, uint64_t v) { std::memcpy(reinterpret_cast<void*>(at), &v, 8); }
  static void put32(uint64_t at, uint32_t v) { std::memcpy(reinterpret_cast<void*>(at), &v, 4); }
  static void put8(uint64_t at, uint8_t v) { std::memcpy(reinterpret_cast<void*>(at), &v, 1); }

 private:
  std::vector<std::vector<uint8_t>> blocks_;
};

// Python-level frames of the fake thread, innermost first; `entry` marks
// the outermost frame of a native eval call.
struct FakeFrame {
  bool entry;
  int32_t byte_offset;
};

struct FakeInterpreter {
  uint64_t runtime = 0;
  std::vector<uint64_t> codes;  // per frame, innermost first
};

FakeInterpreter build(const PythonLayout& l, FakeMemory& m, uint64_t thread_id, const std::vector<FakeFrame>& frames) {
  FakeInterpreter fake;
  fake.runtime = m.alloc(l.runtime_interpreters_head + 8);
  const uint64_t interp = m.alloc(std::max(l.interp_threads_head, l.interp_next) + 8);
  FakeMemory::put64(fake.runtime + l.runtime_interpreters_head, interp);
  // Two thread states: another thread first, then ours.
  const uint32_t tstate_bytes = std::max({l.tstate_next, l.tstate_thread_id, l.tstate_frame}) + 8;
  const uint64_t other = m.alloc(tstate_bytes), ours = m.alloc(tstate_bytes);
  FakeMemory::put64(interp + l.interp_threads_head, other);
  FakeMemory::put64(other + l.tstate_next, ours);
  FakeMemory::put64(other + l.tstate_thread_id, thread_id + 1);
  FakeMemory::put64(ours + l.tstate_thread_id, thread_id);

  // Frames from the outermost in, so each knows its older neighbour.
  uint64_t older = 0;
  const bool shims = l.frames == FrameModel::kCStackShims;
  const uint32_t frame_bytes = l.frame_read_bytes();
  fake.codes.resize(frames.size());
  for (size_t k = frames.size(); k-- > 0;) {
    const uint64_t code = m.alloc((l.code_instructions == kAbsent ? 256 : l.code_instructions) + 64);
    fake.codes[k] = code;
    // 3.12+: a native eval call pushes a shim owned by the C stack first;
    // its outermost Python frame's `previous` is that shim.
    uint64_t previous = older;
    if (shims && frames[k].entry) {
      const uint64_t shim = m.alloc(frame_bytes);
      FakeMemory::put64(shim + l.frame_previous, older);
      FakeMemory::put8(shim + l.frame_owner, 3);
      previous = shim;
    }
    const uint64_t f = m.alloc(frame_bytes);
    FakeMemory::put64(f + l.frame_code, code);
    FakeMemory::put64(f + l.frame_previous, previous);
    if (l.code_instructions == kAbsent) {
      const int32_t lasti = l.lines == LineTableFormat::kLinetable ? frames[k].byte_offset / 2 : frames[k].byte_offset;
      FakeMemory::put32(f + l.frame_instruction, uint32_t(lasti));
    } else {
      FakeMemory::put64(f + l.frame_instruction, code + l.code_instructions + uint64_t(frames[k].byte_offset));
    }
    if (l.frame_is_entry != kAbsent) FakeMemory::put8(f + l.frame_is_entry, frames[k].entry ? 1 : 0);
    if (shims) FakeMemory::put8(f + l.frame_owner, 0);
    older = f;
  }
  if (l.cframe_current_frame != kAbsent) {
    const uint64_t cframe = m.alloc(l.cframe_current_frame + 8);
    FakeMemory::put64(cframe + l.cframe_current_frame, older);
    FakeMemory::put64(ours + l.tstate_frame, cframe);
  } else {
    FakeMemory::put64(ours + l.tstate_frame, older);
  }
  return fake;
}

// 3.13's published debug offsets, as the interpreter lays them out, with
// the values measured from its headers.
std::vector<uint8_t> debug_offsets_313() {
  std::vector<uint8_t> d(kDebugOffsetsBytes, 0);
  std::memcpy(d.data(), "xdebugpy", 8);
  auto set = [&](size_t word, uint64_t v) { std::memcpy(d.data() + 8 * word, &v, 8); };
  set(1, 0x030d00f0);
  set(5, 632);    // runtime_state.interpreters_head
  set(8, 7264);   // interpreter_state.next
  set(9, 7344);   // interpreter_state.threads_head
  set(21, 8);     // thread_state.next
  set(23, 72);    // thread_state.current_frame
  set(24, 152);   // thread_state.thread_id
  set(29, 8);     // interpreter_frame.previous
  set(30, 0);     // interpreter_frame.executable
  set(31, 56);    // interpreter_frame.instr_ptr
  set(33, 70);    // interpreter_frame.owner
  set(35, 112);   // code_object.filename
  set(36, 120);   // code_object.name
  set(37, 128);   // code_object.qualname
  set(38, 136);   // code_object.linetable
  set(39, 68);    // code_object.firstlineno
  set(43, 200);   // code_object.co_code_adaptive
  set(65, 16);    // bytes_object.ob_size
  set(66, 32);    // bytes_object.ob_sval
  set(68, 32);    // unicode_object.state
  set(69, 16);    // unicode_object.length
  set(70, 40);    // unicode_object.asciiobject_size
  return d;
}

std::vector<PythonLayout> all_layouts() {
  std::vector<PythonLayout> v;
  for (int minor = 8; minor <= 12; ++minor) v.push_back(*builtin_layout(3, minor));
  PythonLayout l313;
  std::string why;
  const auto d = debug_offsets_313();
  EXPECT_TRUE(layout_from_debug_offsets(d.data(), d.size(), 3, 13, &l313, &why)) << why;
  v.push_back(l313);
  return v;
}

TEST(PythonLayouts, EveryVersionFrom38To313IsKnown) {
  for (int minor = 8; minor <= 12; ++minor) EXPECT_NE(builtin_layout(3, minor), nullptr) << "3." << minor;
  EXPECT_EQ(builtin_layout(3, 13), nullptr) << "3.13 publishes its own offsets";
  EXPECT_EQ(builtin_layout(3, 7), nullptr);
}

TEST(PythonLayouts, DebugOffsetsAreCheckedBeforeUse) {
  PythonLayout l;
  std::string why;
  auto d = debug_offsets_313();
  EXPECT_FALSE(layout_from_debug_offsets(d.data(), d.size(), 3, 14, &l, &why));
  EXPECT_NE(why.find("3.14"), std::string::npos) << why;
  d[0] = 'X';
  EXPECT_FALSE(layout_from_debug_offsets(d.data(), d.size(), 3, 13, &l, &why));
  EXPECT_FALSE(layout_from_debug_offsets(d.data(), 16, 3, 13, &l, &why));
}

TEST(PythonStacks, EachVersionsFramesAreReadInnermostFirstWithTheirEvalCalls) {
  // Five frames in three native eval calls: [f0 f1] [f2] [f3 f4].
  const std::vector<FakeFrame> frames = {{false, 10}, {true, 4}, {true, 0}, {false, 22}, {true, 6}};
  for (const PythonLayout& l : all_layouts()) {
    SCOPED_TRACE("Python 3." + std::to_string(l.minor));
    FakeMemory m;
    const uint64_t me = 0x7f00aa55;
    const FakeInterpreter fake = build(l, m, me, frames);
    PythonStackReader reader(l, fake.runtime);
    PythonReadWindow window;
    uint64_t tstate = 0;
    PythonFrame out[16];
    bool complete = false;
    const uint32_t n = reader.read(me, &tstate, &window, out, 16, &complete);
    EXPECT_TRUE(complete);
    ASSERT_EQ(n, frames.size());
    for (uint32_t i = 0; i < n; ++i) {
      EXPECT_EQ(out[i].code, fake.codes[i]) << "frame " << i;
      EXPECT_EQ(out[i].byte_offset, frames[i].byte_offset) << "frame " << i;
      // Before 3.11 every frame is its own eval call.
      const bool ends = l.frames == FrameModel::kFrameObjects ? true : frames[i].entry;
      EXPECT_EQ((out[i].flags & kEndsEvalCall) != 0, ends) << "frame " << i;
    }
    // The thread state is remembered; another thread id finds nothing.
    EXPECT_NE(tstate, 0u);
    uint64_t other_cache = 0;
    EXPECT_EQ(reader.read(me + 7, &other_cache, &window, out, 16, &complete), 0u);
  }
}

// Each frame carries its code object's qualname and filename pointers and
// first line, read in batches; a code object that cannot be read leaves
// only its own frame unstamped.
TEST(PythonStacks, EachFrameCarriesItsCodeObjectsStamp) {
  // More frames than one batch of stamp reads.
  std::vector<FakeFrame> frames(PythonReadWindow::kStampFrames + 30, FakeFrame{false, 2});
  frames.back().entry = true;
  for (const PythonLayout& l : all_layouts()) {
    SCOPED_TRACE("Python 3." + std::to_string(l.minor));
    FakeMemory m;
    const FakeInterpreter fake = build(l, m, 5, frames);
    for (size_t i = 0; i < fake.codes.size(); ++i) {
      FakeMemory::put64(fake.codes[i] + l.code_qualname, 0x1000 + i);
      FakeMemory::put64(fake.codes[i] + l.code_filename, 0x2000 + i);
      FakeMemory::put32(fake.codes[i] + l.code_firstlineno, uint32_t(100 + i));
    }
    PythonStackReader reader(l, fake.runtime);
    auto window = std::make_unique<PythonReadWindow>();
    uint64_t tstate = 0;
    std::vector<PythonFrame> out(frames.size());
    bool complete = false;
    ASSERT_EQ(reader.read(5, &tstate, window.get(), out.data(), uint32_t(out.size()), &complete), frames.size());
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_TRUE(out[i].flags & kCodeStamped) << "frame " << i;
      EXPECT_EQ(out[i].qualname, 0x1000 + i);
      EXPECT_EQ(out[i].filename, 0x2000 + i);
      EXPECT_EQ(out[i].firstlineno, int32_t(100 + i));
    }
  }
  // A frame whose code pointer leads nowhere: that frame alone is unstamped,
  // in the first batch and in the second.
  const PythonLayout& l = *builtin_layout(3, 11);
  FakeMemory m;
  const FakeInterpreter fake = build(l, m, 5, frames);
  PythonStackReader reader(l, fake.runtime);
  auto window = std::make_unique<PythonReadWindow>();
  uint64_t tstate = 0;
  std::vector<PythonFrame> out(frames.size());
  bool complete = false;
  ASSERT_EQ(reader.read(5, &tstate, window.get(), out.data(), uint32_t(out.size()), &complete), frames.size());
  // Walk to frames 3 and kStampFrames + 5 (innermost first) and break their code pointers.
  uint64_t frame = 0;
  std::memcpy(&frame, reinterpret_cast<void*>(tstate + l.tstate_frame), 8);
  std::memcpy(&frame, reinterpret_cast<void*>(frame + l.cframe_current_frame), 8);
  const size_t broken[] = {3, PythonReadWindow::kStampFrames + 5};
  for (size_t i = 0; i <= broken[1]; ++i) {
    if (i == broken[0] || i == broken[1]) FakeMemory::put64(frame + l.frame_code, 0x10);  // page zero
    std::memcpy(&frame, reinterpret_cast<void*>(frame + l.frame_previous), 8);
  }
  ASSERT_EQ(reader.read(5, &tstate, window.get(), out.data(), uint32_t(out.size()), &complete), frames.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const bool expect_stamp = i != broken[0] && i != broken[1];
    EXPECT_EQ((out[i].flags & kCodeStamped) != 0, expect_stamp) << "frame " << i;
  }
}

TEST(PythonStacks, ABrokenChainKeepsWhatWasReadAndSaysSo) {
  const PythonLayout& l = *builtin_layout(3, 11);
  FakeMemory m;
  const FakeInterpreter fake = build(l, m, 1, {{false, 2}, {true, 4}});
  PythonStackReader reader(l, fake.runtime);
  PythonReadWindow window;
  // Point the outer frame's `previous` at unmapped memory.
  uint64_t tstate = 0;
  PythonFrame out[8];
  bool complete = true;
  ASSERT_EQ(reader.read(1, &tstate, &window, out, 8, &complete), 2u);
  uint64_t cframe = 0, inner = 0, outer = 0;
  std::memcpy(&cframe, reinterpret_cast<void*>(tstate + l.tstate_frame), 8);
  std::memcpy(&inner, reinterpret_cast<void*>(cframe + l.cframe_current_frame), 8);
  std::memcpy(&outer, reinterpret_cast<void*>(inner + l.frame_previous), 8);
  FakeMemory::put64(outer + l.frame_previous, 0x10);  // page zero: never mapped
  EXPECT_EQ(reader.read(1, &tstate, &window, out, 8, &complete), 2u);
  EXPECT_FALSE(complete);
  // Deeper than the room given: truncated, not overrun.
  FakeMemory::put64(outer + l.frame_previous, 0);
  EXPECT_EQ(reader.read(1, &tstate, &window, out, 1, &complete), 1u);
  EXPECT_FALSE(complete);
}

}  // namespace
}  // namespace hybridprof::python
