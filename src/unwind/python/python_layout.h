// Where CPython keeps what a stack walk needs, per interpreter version:
// one table per minor version (3.8 to 3.12, measured with offsetof against
// each version's own headers by src/unwind/python/offsets_probe.c), and from 3.13
// on the table the interpreter publishes itself (_PyRuntime.debug_offsets,
// whose own layout differs between 3.13 and 3.14). Read through one struct,
// chosen once at start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hybridprof::python {

// How frames are linked.
enum class FrameModel : uint8_t {
  kFrameObjects,        // <= 3.10: PyFrameObject f_back chain, one native eval call per frame
  kEntryFlag,           // 3.11: _PyInterpreterFrame, is_entry marks the first frame of a native eval call
  kCStackShims,         // 3.12+: a shim frame owned by the C stack starts each native eval call
};

// How a code object maps instruction offsets to lines.
enum class LineTableFormat : uint8_t {
  kLnotab,     // 3.8, 3.9: co_lnotab (byte increment, signed line increment)
  kLinetable,  // 3.10: co_linetable (start delta, signed line delta; -128 = no line)
  kLocations,  // 3.11+: co_linetable location entries
};

inline constexpr uint32_t kAbsent = UINT32_MAX;  // a field this version does not have
inline constexpr uint32_t kMaxFrameReadBytes = 128;  // the signal path's frame buffer

struct PythonLayout {
  uint8_t major = 0, minor = 0;
  FrameModel frames = FrameModel::kFrameObjects;
  LineTableFormat lines = LineTableFormat::kLnotab;
  // _PyRuntimeState, PyInterpreterState, PyThreadState.
  uint32_t runtime_interpreters_head = 0;
  uint32_t interp_next = 0, interp_threads_head = 0;
  uint32_t tstate_next = 8, tstate_thread_id = 0;
  // The innermost frame: tstate->frame (<= 3.10), tstate->cframe then
  // cframe->current_frame (3.11, 3.12), tstate->current_frame (3.13+).
  uint32_t tstate_frame = 0;
  uint32_t cframe_current_frame = kAbsent;
  // A frame: its code object, the next older frame, the instruction (an int
  // index <= 3.10, a pointer into the code from 3.11), entry flag or owner.
  uint32_t frame_code = 0, frame_previous = 0, frame_instruction = 0;
  uint32_t frame_is_entry = kAbsent;  // 3.11 (bool)
  uint32_t frame_owner = kAbsent;     // 3.12+ (char; >= kFirstShimOwner: not a Python frame)
  // Low bits of the code field that are tags, not address: 3.14 keeps the
  // code object as a _PyStackRef, whose low bits say how it is counted.
  uint64_t frame_code_tag_bits = 0;
  // Any object's ob_type (PyObject_HEAD: refcount, then type).
  uint32_t object_type = 8;
  // A code object.
  uint32_t code_filename = 0, code_name = 0, code_qualname = 0, code_firstlineno = 0, code_linetable = 0;
  uint32_t code_instructions = kAbsent;  // 3.11+: where the bytecode starts inside the code object
  // Unicode (compact) and bytes objects (defaults: 3.8 to 3.11).
  uint32_t unicode_length = 16, unicode_state = 32, unicode_ascii_data = 48, unicode_compact_data = 72;
  uint32_t bytes_size = 16, bytes_data = 32;

  // Bytes of one frame to read at once (covers every frame field; at most
  // kMaxFrameReadBytes for every layout this build accepts).
  uint32_t frame_read_bytes() const;
  // Byte offset of the instruction within the bytecode, from the raw field
  // (f_lasti <= 3.10; the instruction pointer minus the bytecode start
  // from 3.11). Negative: the frame has not started.
  int64_t instruction_byte_offset(uint64_t code, uint64_t raw) const;
};

// The built-in table for `major.minor`, or nullptr (3.13+ publish their own).
const PythonLayout* builtin_layout(int major, int minor);

// A frame whose owner is this or above is the interpreter's own, not a
// Python function's: the entry frame each native eval call pushes
// (FRAME_OWNED_BY_CSTACK = 3 in 3.12 and 3.13; FRAME_OWNED_BY_INTERPRETER
// = 3 in 3.14, which moves FRAME_OWNED_BY_CSTACK to 4). Below it: owned by
// the thread, a generator or a frame object.
inline constexpr uint8_t kFirstShimOwner = 3;

// The layout from an interpreter's published debug offsets (the first
// bytes of _PyRuntime, `size` of them): 3.13 and 3.14. False with `why`
// when the cookie is missing, the offsets name another version than
// `major.minor`, the interpreter is free-threaded, or the version's format
// is not one this build knows.
bool layout_from_debug_offsets(const uint8_t* data, size_t size, int major, int minor, PythonLayout* out,
                               std::string* why);
// Bytes of a version's _Py_DebugOffsets (0: a version this build does not know).
size_t debug_offsets_bytes(int major, int minor);
// The most layout_from_debug_offsets reads (3.14's 95 words).
inline constexpr size_t kDebugOffsetsBytes = 95 * 8;

}  // namespace hybridprof::python
