#include "unwind/python/python_layout.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hybridprof::python {
namespace {

// Measured with tools/python_offsets/probe.c (offsetof against each
// version's headers, x86-64). 3.8 and 3.9 have no co_qualname: co_name.
PythonLayout frame_objects(uint8_t minor, uint32_t lasti, LineTableFormat lines) {
  PythonLayout l;
  l.major = 3;
  l.minor = minor;
  l.frames = FrameModel::kFrameObjects;
  l.lines = lines;
  l.runtime_interpreters_head = 32;
  l.interp_next = 0;
  l.interp_threads_head = 8;
  l.tstate_thread_id = 176;
  l.tstate_frame = 24;
  l.frame_code = 32;
  l.frame_previous = 24;
  l.frame_instruction = lasti;
  l.code_filename = 104;
  l.code_name = 112;
  l.code_qualname = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;
  return l;
}

PythonLayout python311() {
  PythonLayout l;
  l.major = 3;
  l.minor = 11;
  l.frames = FrameModel::kEntryFlag;
  l.lines = LineTableFormat::kLocations;
  l.runtime_interpreters_head = 40;
  l.interp_next = 0;
  l.interp_threads_head = 16;
  l.tstate_thread_id = 152;
  l.tstate_frame = 56;
  l.cframe_current_frame = 8;
  l.frame_code = 32;
  l.frame_previous = 48;
  l.frame_instruction = 56;
  l.frame_is_entry = 68;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_instructions = 184;
  return l;
}

PythonLayout python312() {
  PythonLayout l = python311();
  l.minor = 12;
  l.frames = FrameModel::kCStackShims;
  l.interp_threads_head = 72;
  l.tstate_thread_id = 136;
  l.tstate_frame = 56;
  l.cframe_current_frame = 0;
  l.frame_code = 0;
  l.frame_previous = 8;
  l.frame_instruction = 56;
  l.frame_is_entry = kAbsent;
  l.frame_owner = 70;
  l.code_firstlineno = 68;
  l.code_instructions = 192;
  l.unicode_ascii_data = 40;
  l.unicode_compact_data = 56;
  return l;
}

// Made on first use: the runtime asks from its constructor, which may run
// before this file's static initializers.
const std::vector<PythonLayout>& builtin_layouts() {
  static const std::vector<PythonLayout> layouts = {
      frame_objects(8, 104, LineTableFormat::kLnotab),
      frame_objects(9, 104, LineTableFormat::kLnotab),
      frame_objects(10, 96, LineTableFormat::kLinetable),
      python311(),
      python312(),
  };
  return layouts;
}

}  // namespace

uint32_t PythonLayout::frame_read_bytes() const {
  uint32_t end = std::max({frame_code, frame_previous, frame_instruction}) + 8;
  if (frame_is_entry != kAbsent) end = std::max(end, frame_is_entry + 1);
  if (frame_owner != kAbsent) end = std::max(end, frame_owner + 1);
  return end;
}

int64_t PythonLayout::instruction_byte_offset(uint64_t code, uint64_t raw) const {
  if (code_instructions == kAbsent) {
    // f_lasti: an int, -1 before the first instruction; bytes in 3.8/3.9,
    // code units (2 bytes) in 3.10.
    const int32_t lasti = static_cast<int32_t>(raw & 0xffffffffu);
    if (lasti < 0) return -1;
    return lines == LineTableFormat::kLinetable ? int64_t(lasti) * 2 : int64_t(lasti);
  }
  const uint64_t start = code + code_instructions;
  return raw >= start ? int64_t(raw - start) : -1;
}

const PythonLayout* builtin_layout(int major, int minor) {
  for (const PythonLayout& l : builtin_layouts())
    if (l.major == major && l.minor == minor) return &l;
  return nullptr;
}

bool layout_from_debug_offsets(const uint8_t* data, size_t size, int major, int minor, PythonLayout* out,
                               std::string* why) {
  if (size < kDebugOffsetsBytes || std::memcmp(data, "xdebugpy", 8) != 0) {
    *why = "no debug offsets at _PyRuntime";
    return false;
  }
  if (major != 3 || minor != 13) {
    *why = "debug offsets of Python " + std::to_string(major) + "." + std::to_string(minor) +
           " have a layout this build does not know";
    return false;
  }
  // _Py_DebugOffsets of 3.13, as 64-bit words (Include/internal/pycore_runtime.h).
  auto word = [&](size_t i) {
    uint64_t v;
    std::memcpy(&v, data + 8 * i, 8);
    return static_cast<uint32_t>(v);
  };
  if (word(2) != 0) {
    *why = "a free-threaded interpreter (its frames are not walked yet)";
    return false;
  }
  PythonLayout l;
  l.major = 3;
  l.minor = 13;
  l.frames = FrameModel::kCStackShims;
  l.lines = LineTableFormat::kLocations;
  l.runtime_interpreters_head = word(5);
  l.interp_next = word(8);
  l.interp_threads_head = word(9);
  l.tstate_next = word(21);
  l.tstate_frame = word(23);
  l.tstate_thread_id = word(24);
  l.frame_previous = word(29);
  l.frame_code = word(30);
  l.frame_instruction = word(31);
  l.frame_owner = word(33);
  l.code_filename = word(35);
  l.code_name = word(36);
  l.code_qualname = word(37);
  l.code_linetable = word(38);
  l.code_firstlineno = word(39);
  l.code_instructions = word(43);
  l.bytes_size = word(65);
  l.bytes_data = word(66);
  l.unicode_state = word(68);
  l.unicode_length = word(69);
  l.unicode_ascii_data = word(70);
  // PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject.
  l.unicode_compact_data = l.unicode_ascii_data + 16;
  *out = l;
  return true;
}

}  // namespace hybridprof::python
