#include "unwind/python/python_layout.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>
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

// _Py_DebugOffsets as each version declares it: every field a uint64_t
// (the cookie is char[8], one word), in declaration order, one section per
// line ("header" is the fields before the first section). 3.13:
// Include/internal/pycore_runtime.h; 3.14: Include/internal/pycore_debug_offsets.h,
// which adds interpreter_state.threads_main, .code_object_generation and
// .tlbc_generation, interpreter_frame.stackpointer and .tlbc_index,
// code_object.co_tlbc, and the set_object, gen_object, llist_node and
// debugger_support sections.
constexpr std::string_view kDebugOffsets313 = R"(
header: cookie version free_threaded
runtime_state: size finalizing interpreters_head
interpreter_state: size id next threads_head gc imports_modules sysdict builtins ceval_gil gil_runtime_state
  gil_runtime_state_enabled gil_runtime_state_locked gil_runtime_state_holder
thread_state: size prev next interp current_frame thread_id native_thread_id datastack_chunk status
interpreter_frame: size previous executable instr_ptr localsplus owner
code_object: size filename name qualname linetable firstlineno argcount localsplusnames localspluskinds
  co_code_adaptive
pyobject: size ob_type
type_object: size tp_name tp_repr tp_flags
tuple_object: size ob_item ob_size
list_object: size ob_item ob_size
dict_object: size ma_keys ma_values
float_object: size ob_fval
long_object: size lv_tag ob_digit
bytes_object: size ob_size ob_sval
unicode_object: size state length asciiobject_size
gc: size collecting
)";

constexpr std::string_view kDebugOffsets314 = R"(
header: cookie version free_threaded
runtime_state: size finalizing interpreters_head
interpreter_state: size id next threads_head threads_main gc imports_modules sysdict builtins ceval_gil
  gil_runtime_state gil_runtime_state_enabled gil_runtime_state_locked gil_runtime_state_holder
  code_object_generation tlbc_generation
thread_state: size prev next interp current_frame thread_id native_thread_id datastack_chunk status
interpreter_frame: size previous executable instr_ptr localsplus owner stackpointer tlbc_index
code_object: size filename name qualname linetable firstlineno argcount localsplusnames localspluskinds
  co_code_adaptive co_tlbc
pyobject: size ob_type
type_object: size tp_name tp_repr tp_flags
tuple_object: size ob_item ob_size
list_object: size ob_item ob_size
set_object: size used table mask
dict_object: size ma_keys ma_values
float_object: size ob_fval
long_object: size lv_tag ob_digit
bytes_object: size ob_size ob_sval
unicode_object: size state length asciiobject_size
gc: size collecting
gen_object: size gi_name gi_iframe gi_frame_state
llist_node: next prev
debugger_support: eval_breaker remote_debugger_support remote_debugging_enabled debugger_pending_call
  debugger_script_path debugger_script_path_size
)";

// Where each field of one version's _Py_DebugOffsets is, in words.
class DebugOffsetsFormat {
 public:
  DebugOffsetsFormat(int minor, std::string_view text, uint64_t code_tag_bits)
      : minor(minor), code_tag_bits(code_tag_bits) {
    // Words separated by blanks; "name:" starts a section; an indented
    // line continues the section before it.
    std::string section;
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) ++i;
      size_t end = i;
      while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
      if (end == i) break;
      const std::string_view token = text.substr(i, end - i);
      if (token.back() == ':') {
        section = std::string(token.substr(0, token.size() - 1));
      } else {
        words_.emplace(section + "." + std::string(token), words_.size());
      }
      i = end;
    }
  }
  size_t words() const { return words_.size(); }
  // The word of "section.field". Every name layout_from_debug_offsets asks
  // for is in every format (the unit tests give each field a value of its
  // own), so a miss is a bug: it reads the cookie, never past the end.
  size_t word(std::string_view field) const {
    auto it = words_.find(std::string(field));
    return it == words_.end() ? 0 : it->second;
  }

  const int minor;
  const uint64_t code_tag_bits;  // Py_TAG_BITS of _PyStackRef from 3.14

 private:
  std::map<std::string, size_t> words_;
};

const DebugOffsetsFormat* debug_offsets_format(int major, int minor) {
  static const std::vector<DebugOffsetsFormat> formats = {
      DebugOffsetsFormat(13, kDebugOffsets313, 0),
      DebugOffsetsFormat(14, kDebugOffsets314, 3),
  };
  if (major != 3) return nullptr;
  for (const DebugOffsetsFormat& f : formats)
    if (f.minor == minor) return &f;
  return nullptr;
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

size_t debug_offsets_bytes(int major, int minor) {
  const DebugOffsetsFormat* format = debug_offsets_format(major, minor);
  return format ? format->words() * 8 : 0;
}

bool layout_from_debug_offsets(const uint8_t* data, size_t size, int major, int minor, PythonLayout* out,
                               std::string* why) {
  const std::string version = std::to_string(major) + "." + std::to_string(minor);
  if (size < 16 || std::memcmp(data, "xdebugpy", 8) != 0) {
    *why = "no debug offsets at _PyRuntime";
    return false;
  }
  const DebugOffsetsFormat* format = debug_offsets_format(major, minor);
  if (format == nullptr) {
    *why = "debug offsets of Python " + version + " have a layout this build does not know";
    return false;
  }
  if (size < format->words() * 8) {
    *why = "debug offsets of Python " + version + " cut short";
    return false;
  }
  auto word = [&](std::string_view field) {
    uint64_t v;
    std::memcpy(&v, data + 8 * format->word(field), 8);
    return v;
  };
  // PY_VERSION_HEX: 0xMMmmppTS.
  const uint64_t hex = word("header.version");
  if (int((hex >> 24) & 0xff) != major || int((hex >> 16) & 0xff) != minor) {
    *why = "debug offsets of another Python than " + version;
    return false;
  }
  if (word("header.free_threaded") != 0) {
    *why = "a free-threaded interpreter (its frames are not walked yet)";
    return false;
  }
  auto offset = [&](std::string_view field) { return static_cast<uint32_t>(word(field)); };
  PythonLayout l;
  l.major = uint8_t(major);
  l.minor = uint8_t(minor);
  l.frames = FrameModel::kCStackShims;
  l.lines = LineTableFormat::kLocations;  // unchanged from 3.11 to 3.14
  l.runtime_interpreters_head = offset("runtime_state.interpreters_head");
  l.interp_next = offset("interpreter_state.next");
  l.interp_threads_head = offset("interpreter_state.threads_head");
  l.tstate_next = offset("thread_state.next");
  l.tstate_frame = offset("thread_state.current_frame");
  l.tstate_thread_id = offset("thread_state.thread_id");
  l.frame_previous = offset("interpreter_frame.previous");
  l.frame_code = offset("interpreter_frame.executable");
  l.frame_instruction = offset("interpreter_frame.instr_ptr");
  l.frame_owner = offset("interpreter_frame.owner");
  l.frame_code_tag_bits = format->code_tag_bits;
  l.code_filename = offset("code_object.filename");
  l.code_name = offset("code_object.name");
  l.code_qualname = offset("code_object.qualname");
  l.code_linetable = offset("code_object.linetable");
  l.code_firstlineno = offset("code_object.firstlineno");
  l.code_instructions = offset("code_object.co_code_adaptive");
  l.bytes_size = offset("bytes_object.ob_size");
  l.bytes_data = offset("bytes_object.ob_sval");
  l.unicode_state = offset("unicode_object.state");
  l.unicode_length = offset("unicode_object.length");
  l.unicode_ascii_data = offset("unicode_object.asciiobject_size");
  // PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject.
  l.unicode_compact_data = l.unicode_ascii_data + 16;
  // Everything the walk reads must lie in one frame read.
  if (l.frame_read_bytes() > kMaxFrameReadBytes) {
    *why = "debug offsets of Python " + version + " put frame fields beyond " + std::to_string(kMaxFrameReadBytes) +
           " bytes";
    return false;
  }
  *out = l;
  return true;
}

}  // namespace hybridprof::python
