// The signal-path Python frame reader on synthetic interpreter structures
// laid out by each version's table: runtime -> interpreter -> thread
// states -> frames -> code objects, built in plain memory. This is how the
// versions this machine cannot run are checked.
#include "unwind/python/python_stack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "trace/python_code_table.h"
#include "unwind/python/python_layout.h"
#include "unwind/python/python_lines.h"

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

// `shim_owner`: the owner value of the frame each native eval call pushes
// first (3.12+): 3 in every version (FRAME_OWNED_BY_CSTACK in 3.12 and 3.13,
// FRAME_OWNED_BY_INTERPRETER in 3.14).
FakeInterpreter build(const PythonLayout& l, FakeMemory& m, uint64_t thread_id, const std::vector<FakeFrame>& frames,
                      uint8_t shim_owner = 3) {
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
    // its outermost Python frame's `previous` is that shim. Its code is not
    // a code object (None from 3.13).
    uint64_t previous = older;
    if (shims && frames[k].entry) {
      const uint64_t shim = m.alloc(frame_bytes);
      FakeMemory::put64(shim + l.frame_previous, older);
      FakeMemory::put64(shim + l.frame_code, 0x5a5a5a5a5a5a5a5a);
      FakeMemory::put8(shim + l.frame_owner, shim_owner);
      previous = shim;
    }
    const uint64_t f = m.alloc(frame_bytes);
    // 3.14: the code is a _PyStackRef; every other frame carries a tag bit
    // (a reference not counted), which is not part of the address.
    const uint64_t tag = l.frame_code_tag_bits != 0 && k % 2 == 1 ? 1 : 0;
    FakeMemory::put64(f + l.frame_code, code | tag);
    FakeMemory::put64(f + l.frame_previous, previous);
    if (l.code_instructions == kAbsent) {
      const int32_t lasti = l.lines == LineTableFormat::kLinetable ? frames[k].byte_offset / 2 : frames[k].byte_offset;
      FakeMemory::put32(f + l.frame_instruction, uint32_t(lasti));
    } else {
      FakeMemory::put64(f + l.frame_instruction, code + l.code_instructions + uint64_t(frames[k].byte_offset));
    }
    if (l.frame_is_entry != kAbsent) FakeMemory::put8(f + l.frame_is_entry, frames[k].entry ? 1 : 0);
    // Python frames are owned by the thread, a generator or a frame object.
    if (shims) FakeMemory::put8(f + l.frame_owner, uint8_t(k % 3));
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

// A version's published debug offsets as the interpreter lays them out:
// `words` 64-bit words, each a value of its own (so a field read from the
// wrong word reads a value no test expects), then `fields` (word index,
// offset) over them.
std::vector<uint8_t> debug_offsets(size_t words, uint64_t version_hex,
                                   const std::vector<std::pair<size_t, uint64_t>>& fields) {
  std::vector<uint8_t> d(words * 8, 0);
  auto set = [&](size_t word, uint64_t v) { std::memcpy(d.data() + 8 * word, &v, 8); };
  for (size_t w = 3; w < words; ++w) set(w, 50000 + 8 * w);
  std::memcpy(d.data(), "xdebugpy", 8);
  set(1, version_hex);
  set(2, 0);  // free_threaded
  for (const auto& [word, value] : fields) set(word, value);
  return d;
}

// 3.13 (Include/internal/pycore_runtime.h, 73 words), with the values
// measured from its headers.
std::vector<uint8_t> debug_offsets_313() {
  return debug_offsets(73, 0x030d00f0,
                       {
                           {5, 632},    // runtime_state.interpreters_head
                           {8, 7264},   // interpreter_state.next
                           {9, 7344},   // interpreter_state.threads_head
                           {21, 8},     // thread_state.next
                           {23, 72},    // thread_state.current_frame
                           {24, 152},   // thread_state.thread_id
                           {29, 8},     // interpreter_frame.previous
                           {30, 0},     // interpreter_frame.executable
                           {31, 56},    // interpreter_frame.instr_ptr
                           {33, 70},    // interpreter_frame.owner
                           {35, 112},   // code_object.filename
                           {36, 120},   // code_object.name
                           {37, 128},   // code_object.qualname
                           {38, 136},   // code_object.linetable
                           {39, 68},    // code_object.firstlineno
                           {43, 200},   // code_object.co_code_adaptive
                           {65, 16},    // bytes_object.ob_size
                           {66, 32},    // bytes_object.ob_sval
                           {68, 32},    // unicode_object.state
                           {69, 16},    // unicode_object.length
                           {70, 40},    // unicode_object.asciiobject_size
                       });
}

// 3.14 (Include/internal/pycore_debug_offsets.h, 95 words: 3.13's plus
// interpreter_state.threads_main, .code_object_generation, .tlbc_generation,
// interpreter_frame.stackpointer, .tlbc_index, code_object.co_tlbc, and the
// set_object, gen_object, llist_node and debugger_support sections). The word
// of each field counted by hand from that header; the offsets are this
// test's own (no 3.14 here to measure), each different from 3.13's.
std::vector<uint8_t> debug_offsets_314() {
  return debug_offsets(95, 0x030e00f0,
                       {
                           {5, 640},    // runtime_state.interpreters_head
                           {8, 7320},   // interpreter_state.next
                           {9, 7400},   // interpreter_state.threads_head
                           {24, 16},    // thread_state.next (prev at 8 in this fake)
                           {26, 80},    // thread_state.current_frame
                           {27, 160},   // thread_state.thread_id
                           {32, 16},    // interpreter_frame.previous
                           {33, 8},     // interpreter_frame.executable
                           {34, 64},    // interpreter_frame.instr_ptr
                           {36, 76},    // interpreter_frame.owner
                           {40, 104},   // code_object.filename
                           {41, 144},   // code_object.name
                           {42, 152},   // code_object.qualname
                           {43, 160},   // code_object.linetable
                           {44, 60},    // code_object.firstlineno
                           {48, 216},   // code_object.co_code_adaptive
                           {75, 24},    // bytes_object.ob_size
                           {76, 40},    // bytes_object.ob_sval
                           {78, 36},    // unicode_object.state
                           {79, 24},    // unicode_object.length
                           {80, 48},    // unicode_object.asciiobject_size
                       });
}

PythonLayout layout_from(const std::vector<uint8_t>& d, int minor) {
  PythonLayout l;
  std::string why;
  EXPECT_TRUE(layout_from_debug_offsets(d.data(), d.size(), 3, minor, &l, &why)) << why;
  return l;
}

std::vector<PythonLayout> all_layouts() {
  std::vector<PythonLayout> v;
  for (int minor = 8; minor <= 12; ++minor) v.push_back(*builtin_layout(3, minor));
  v.push_back(layout_from(debug_offsets_313(), 13));
  v.push_back(layout_from(debug_offsets_314(), 14));
  return v;
}

TEST(PythonLayouts, EveryVersionFrom38To314IsKnown) {
  for (int minor = 8; minor <= 12; ++minor) EXPECT_NE(builtin_layout(3, minor), nullptr) << "3." << minor;
  EXPECT_EQ(builtin_layout(3, 13), nullptr) << "3.13 publishes its own offsets";
  EXPECT_EQ(builtin_layout(3, 14), nullptr) << "3.14 publishes its own offsets";
  EXPECT_EQ(builtin_layout(3, 7), nullptr);
  EXPECT_EQ(debug_offsets_bytes(3, 13), 73u * 8);
  EXPECT_EQ(debug_offsets_bytes(3, 14), 95u * 8);
  EXPECT_EQ(debug_offsets_bytes(3, 15), 0u);
  EXPECT_LE(debug_offsets_bytes(3, 14), kDebugOffsetsBytes) << "what the runtime reads covers it";
}

// Each field from its own word of each version's format.
TEST(PythonLayouts, DebugOffsetsOf313And314AreReadFromTheirOwnWords) {
  const PythonLayout l13 = layout_from(debug_offsets_313(), 13);
  EXPECT_EQ(l13.runtime_interpreters_head, 632u);
  EXPECT_EQ(l13.interp_threads_head, 7344u);
  EXPECT_EQ(l13.tstate_frame, 72u);
  EXPECT_EQ(l13.frame_owner, 70u);
  EXPECT_EQ(l13.code_instructions, 200u);
  EXPECT_EQ(l13.unicode_compact_data, 56u);
  EXPECT_EQ(l13.frame_code_tag_bits, 0u);

  const PythonLayout l = layout_from(debug_offsets_314(), 14);
  EXPECT_EQ(l.major, 3);
  EXPECT_EQ(l.minor, 14);
  EXPECT_EQ(l.frames, FrameModel::kCStackShims);
  EXPECT_EQ(l.lines, LineTableFormat::kLocations);
  EXPECT_EQ(l.runtime_interpreters_head, 640u);
  EXPECT_EQ(l.interp_next, 7320u);
  EXPECT_EQ(l.interp_threads_head, 7400u);
  EXPECT_EQ(l.tstate_next, 16u);
  EXPECT_EQ(l.tstate_frame, 80u);
  EXPECT_EQ(l.tstate_thread_id, 160u);
  EXPECT_EQ(l.frame_previous, 16u);
  EXPECT_EQ(l.frame_code, 8u);
  EXPECT_EQ(l.frame_instruction, 64u);
  EXPECT_EQ(l.frame_owner, 76u);
  EXPECT_EQ(l.frame_is_entry, kAbsent);
  EXPECT_EQ(l.cframe_current_frame, kAbsent);
  EXPECT_EQ(l.frame_code_tag_bits, 3u) << "f_executable is a _PyStackRef";
  EXPECT_EQ(l.code_filename, 104u);
  EXPECT_EQ(l.code_name, 144u);
  EXPECT_EQ(l.code_qualname, 152u);
  EXPECT_EQ(l.code_linetable, 160u);
  EXPECT_EQ(l.code_firstlineno, 60u);
  EXPECT_EQ(l.code_instructions, 216u);
  EXPECT_EQ(l.bytes_size, 24u);
  EXPECT_EQ(l.bytes_data, 40u);
  EXPECT_EQ(l.unicode_state, 36u);
  EXPECT_EQ(l.unicode_length, 24u);
  EXPECT_EQ(l.unicode_ascii_data, 48u);
  EXPECT_EQ(l.unicode_compact_data, 64u);
}

TEST(PythonLayouts, DebugOffsetsAreCheckedBeforeUse) {
  PythonLayout l;
  std::string why;
  // A version whose format is unknown is refused, saying which.
  auto d15 = debug_offsets(95, 0x030f00a0, {});
  EXPECT_FALSE(layout_from_debug_offsets(d15.data(), d15.size(), 3, 15, &l, &why));
  EXPECT_NE(why.find("3.15"), std::string::npos) << why;
  EXPECT_NE(why.find("does not know"), std::string::npos) << why;
  // 3.13's offsets are not 3.14's, cut short or not.
  auto d = debug_offsets_313();
  EXPECT_FALSE(layout_from_debug_offsets(d.data(), d.size(), 3, 14, &l, &why));
  EXPECT_NE(why.find("3.14"), std::string::npos) << why;
  auto d14 = debug_offsets_314();
  std::vector<uint8_t> long13 = d;
  long13.resize(d14.size(), 0);
  EXPECT_FALSE(layout_from_debug_offsets(long13.data(), long13.size(), 3, 14, &l, &why));
  EXPECT_NE(why.find("another Python"), std::string::npos) << why;
  EXPECT_FALSE(layout_from_debug_offsets(d14.data(), 73 * 8, 3, 14, &l, &why)) << "3.14's are longer";
  // Free-threaded builds are refused (their frames differ).
  d14[16] = 1;
  EXPECT_FALSE(layout_from_debug_offsets(d14.data(), d14.size(), 3, 14, &l, &why));
  EXPECT_NE(why.find("free-threaded"), std::string::npos) << why;
  d[0] = 'X';
  EXPECT_FALSE(layout_from_debug_offsets(d.data(), d.size(), 3, 13, &l, &why));
  EXPECT_FALSE(layout_from_debug_offsets(d.data(), 16, 3, 13, &l, &why));
  // Frame fields the signal path's buffer cannot hold.
  auto wide = debug_offsets_314();
  const uint64_t beyond = kMaxFrameReadBytes;
  std::memcpy(wide.data() + 8 * 36, &beyond, 8);  // interpreter_frame.owner
  EXPECT_FALSE(layout_from_debug_offsets(wide.data(), wide.size(), 3, 14, &l, &why));
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

// One thread's reads of a fake interpreter, as its sample handler makes
// them: the thread state cached between reads, room for `room` frames.
struct ThreadReads {
  ThreadReads(const PythonLayout& l, const FakeInterpreter& fake, uint64_t thread, size_t room)
      : reader(l, fake.runtime), thread(thread), out(room) {}
  uint32_t read() {
    bool complete = false;
    return reader.read(thread, &tstate, window.get(), out.data(), uint32_t(out.size()), &complete);
  }
  PythonStackReader reader;
  std::unique_ptr<PythonReadWindow> window = std::make_unique<PythonReadWindow>();
  uint64_t thread, tstate = 0;
  std::vector<PythonFrame> out;
};

// Code object i (frame i, innermost first) gets qualname 0x1000 + i,
// filename 0x2000 + i and first line 100 + i.
void give_codes_their_stamps(const PythonLayout& l, const FakeInterpreter& fake) {
  for (size_t i = 0; i < fake.codes.size(); ++i) {
    FakeMemory::put64(fake.codes[i] + l.code_qualname, 0x1000 + i);
    FakeMemory::put64(fake.codes[i] + l.code_filename, 0x2000 + i);
    FakeMemory::put32(fake.codes[i] + l.code_firstlineno, uint32_t(100 + i));
  }
}

// Walks the thread's fake frame chain (innermost first, from its thread
// state) and points frame i at code object code_for(i), where that is not 0.
template <typename CodeFor>
void set_frame_codes(const PythonLayout& l, uint64_t tstate, CodeFor code_for) {
  uint64_t frame = 0;
  std::memcpy(&frame, reinterpret_cast<void*>(tstate + l.tstate_frame), 8);
  if (l.cframe_current_frame != kAbsent)
    std::memcpy(&frame, reinterpret_cast<void*>(frame + l.cframe_current_frame), 8);
  for (size_t i = 0; frame != 0; ++i) {
    if (const uint64_t code = code_for(i)) FakeMemory::put64(frame + l.frame_code, code);
    std::memcpy(&frame, reinterpret_cast<void*>(frame + l.frame_previous), 8);
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
    give_codes_their_stamps(l, fake);
    ThreadReads reads(l, fake, 5, frames.size());
    ASSERT_EQ(reads.read(), frames.size());
    const std::vector<PythonFrame>& out = reads.out;
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
  ThreadReads reads(l, fake, 5, frames.size());
  ASSERT_EQ(reads.read(), frames.size());
  // Break the code pointers of frames 3 and kStampFrames + 5 (innermost first).
  const size_t broken[] = {3, PythonReadWindow::kStampFrames + 5};
  set_frame_codes(l, reads.tstate, [&](size_t i) { return i == broken[0] || i == broken[1] ? 0x10 : 0; });
  ASSERT_EQ(reads.read(), frames.size());
  for (size_t i = 0; i < reads.out.size(); ++i) {
    const bool expect_stamp = i != broken[0] && i != broken[1];
    EXPECT_EQ((reads.out[i].flags & kCodeStamped) != 0, expect_stamp) << "frame " << i;
  }
}

// Frames that run the same code object (recursion, Module._call_impl at
// every layer) are stamped from one read of it, and a code object that
// cannot be read leaves all its frames unstamped, and only those.
TEST(PythonStacks, FramesSharingACodeObjectShareItsStamp) {
  std::vector<FakeFrame> frames(40, FakeFrame{false, 2});
  frames.back().entry = true;
  for (const PythonLayout& l : all_layouts()) {
    SCOPED_TRACE("Python 3." + std::to_string(l.minor));
    FakeMemory m;
    const FakeInterpreter fake = build(l, m, 5, frames);
    give_codes_their_stamps(l, fake);
    ThreadReads reads(l, fake, 5, frames.size());
    ASSERT_EQ(reads.read(), frames.size());
    // Frames 2, 5, 9 and 30 (innermost first) run frame 1's code; frames
    // 12 and 20 a code object at page zero.
    const uint64_t shared = reads.out[1].code;
    set_frame_codes(l, reads.tstate, [&](size_t i) -> uint64_t {
      if (i == 2 || i == 5 || i == 9 || i == 30) return shared;
      return i == 12 || i == 20 ? 0x10 : 0;
    });
    ASSERT_EQ(reads.read(), frames.size());
    for (size_t i = 0; i < reads.out.size(); ++i) {
      const PythonFrame& f = reads.out[i];
      if (i == 12 || i == 20) {
        EXPECT_FALSE(f.flags & kCodeStamped) << "frame " << i;
        continue;
      }
      ASSERT_TRUE(f.flags & kCodeStamped) << "frame " << i;
      const size_t code = (i == 2 || i == 5 || i == 9 || i == 30) ? 1 : i;
      EXPECT_EQ(f.qualname, 0x1000 + code) << "frame " << i;
      EXPECT_EQ(f.filename, 0x2000 + code) << "frame " << i;
      EXPECT_EQ(f.firstlineno, int32_t(100 + code)) << "frame " << i;
    }
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

// 3.14 moved FRAME_OWNED_BY_CSTACK to 4 (the entry frame is now
// FRAME_OWNED_BY_INTERPRETER, 3): a frame owned by either is not Python's.
TEST(PythonStacks, Python314FramesOwnedByTheCStackAreShimsToo) {
  const PythonLayout l = layout_from(debug_offsets_314(), 14);
  const std::vector<FakeFrame> frames = {{false, 10}, {true, 4}, {true, 0}};
  FakeMemory m;
  const FakeInterpreter fake = build(l, m, 77, frames, /*shim_owner=*/4);
  PythonStackReader reader(l, fake.runtime);
  PythonReadWindow window;
  uint64_t tstate = 0;
  PythonFrame out[8];
  bool complete = false;
  ASSERT_EQ(reader.read(77, &tstate, &window, out, 8, &complete), 3u);
  EXPECT_TRUE(complete);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].code, fake.codes[i]) << "frame " << i;
    EXPECT_EQ((out[i].flags & kEndsEvalCall) != 0, frames[i].entry) << "frame " << i;
  }
}

// A str object as CPython lays out compact ones: ASCII data right after
// PyASCIIObject, other kinds after PyCompactUnicodeObject. Interned and
// statically-allocated bits set, which the reader must not mistake for kind.
uint64_t fake_str(const PythonLayout& l, FakeMemory& m, const std::u32string& text) {
  uint32_t widest = 0;
  for (char32_t c : text) widest = std::max<uint32_t>(widest, uint32_t(c));
  const uint32_t kind = widest < 0x100 ? 1 : widest < 0x10000 ? 2 : 4;
  const bool ascii = widest < 0x80;
  const uint64_t data = ascii ? l.unicode_ascii_data : l.unicode_compact_data;
  const uint64_t object = m.alloc(data + kind * (text.size() + 1));
  FakeMemory::put64(object + l.unicode_length, text.size());
  FakeMemory::put32(object + l.unicode_state, 1u | kind << 2 | 1u << 5 | uint32_t(ascii) << 6 | 1u << 7);
  for (size_t i = 0; i < text.size(); ++i) std::memcpy(reinterpret_cast<void*>(object + data + i * kind), &text[i], kind);
  return object;
}

uint64_t fake_bytes(const PythonLayout& l, FakeMemory& m, const std::string& bytes) {
  const uint64_t object = m.alloc(l.bytes_data + bytes.size() + 1);
  FakeMemory::put64(object + l.bytes_size, bytes.size());
  std::memcpy(reinterpret_cast<void*>(object + l.bytes_data), bytes.data(), bytes.size());
  return object;
}

// What the drain and the finalizer do with a 3.14 sample: the reader's
// frames, named from their code objects (qualname, file, line table, first
// line) and given the lines of their instructions, all through the layout
// from 3.14's debug offsets.
TEST(PythonStacks, Python314FramesGetTheirQualnamesFilesAndLines) {
  const PythonLayout l = layout_from(debug_offsets_314(), 14);
  // Lines of a function starting at line 10 (3.11+ location entries):
  //   offset 0 -> 10, 2..6 -> 12, 8..10 -> 13, 12 -> 12, 14 -> 12.
  const std::string table("\xd0\x00\x05"  // one-line form, +0, 1 code unit
                          "\xea\x04"      // no columns, +2, 3 units
                          "\xd9\x04\x09"  // one-line form, +1, 2 units
                          "\xe8\x03"      // no columns, -1, 1 unit
                          "\x80\x12",     // short form, same line, 1 unit
                          12);
  struct Expected {
    std::u32string qualname, file;
    const char* qualname_utf8;
    const char* file_utf8;
    int32_t offset;
    uint32_t line;
  };
  const std::vector<Expected> expected = {
      {U"Worker.run", U"/srv/app/w\u00f6rk.py", "Worker.run", "/srv/app/w\xc3\xb6rk.py", 8, 13},
      {U"main.<locals>.\u03b4", U"/srv/app/main.py", "main.<locals>.\xce\xb4", "/srv/app/main.py", 2, 12},
      {U"<module>", U"/srv/app/\U0001d4b3.py", "<module>", "/srv/app/\xf0\x9d\x92\xb3.py", 14, 12},
  };
  std::vector<FakeFrame> frames;
  for (size_t i = 0; i < expected.size(); ++i) frames.push_back({i + 1 == expected.size(), expected[i].offset});
  FakeMemory m;
  const FakeInterpreter fake = build(l, m, 5, frames);
  for (size_t i = 0; i < expected.size(); ++i) {
    const uint64_t code = fake.codes[i];
    FakeMemory::put64(code + l.code_qualname, fake_str(l, m, expected[i].qualname));
    FakeMemory::put64(code + l.code_name, fake_str(l, m, U"unused"));
    FakeMemory::put64(code + l.code_filename, fake_str(l, m, expected[i].file));
    FakeMemory::put64(code + l.code_linetable, fake_bytes(l, m, table));
    FakeMemory::put32(code + l.code_firstlineno, 10);
  }

  PythonStackReader reader(l, fake.runtime);
  PythonReadWindow window;
  uint64_t tstate = 0;
  PythonFrame out[8];
  bool complete = false;
  ASSERT_EQ(reader.read(5, &tstate, &window, out, 8, &complete), expected.size());
  EXPECT_TRUE(complete);
  PythonCodeTable names(l);
  std::vector<raw::PythonCode> codes;
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].qualname_utf8);
    const uint32_t id = names.id_for(out[i], &codes);
    ASSERT_EQ(id, i + 1);
    ASSERT_EQ(codes.size(), i + 1);
    const raw::PythonCode& c = codes.back();
    EXPECT_EQ(c.qualname, expected[i].qualname_utf8);
    EXPECT_EQ(c.filename, expected[i].file_utf8);
    EXPECT_EQ(c.firstlineno, 10u);
    EXPECT_EQ(c.linetable, table);
    EXPECT_EQ(c.line_format, uint32_t(LineTableFormat::kLocations));
    EXPECT_EQ(out[i].byte_offset, expected[i].offset);
    EXPECT_EQ(line_for_offset(LineTableFormat(c.line_format), c.linetable, c.firstlineno, out[i].byte_offset),
              expected[i].line);
  }
  // Every instruction of the table, and before the first.
  const std::vector<std::pair<int64_t, uint32_t>> lines = {{-1, 10}, {0, 10}, {2, 12}, {4, 12}, {6, 12},
                                                           {8, 13},  {10, 13}, {12, 12}, {14, 12}};
  for (const auto& [offset, line] : lines)
    EXPECT_EQ(line_for_offset(LineTableFormat::kLocations, table, 10, offset), line) << "offset " << offset;
}

}  // namespace
}  // namespace hybridprof::python
