#include "unwind/python/python_stack.h"

#include <algorithm>
#include <cstring>

#include "sigsafe/safe_read.h"
#include "unwind/stack_scan.h"

namespace hybridprof::python {
namespace {

constexpr int kMaxInterpreters = 64;
constexpr int kMaxThreadStates = 4096;

uint64_t read_pointer(uint64_t address) {
  uint64_t v = 0;
  return safe_read_value(address, &v) ? v : 0;
}

uint64_t field(const uint8_t* buffer, uint32_t offset) {
  uint64_t v;
  std::memcpy(&v, buffer + offset, 8);
  return v;
}

}  // namespace

// SIGNAL PATH.
bool PythonReadWindow::read(uint64_t address, void* out, uint64_t n) {
  if (address < start || address + n > start + length) {
    // The page holding `address` and the next one; the second may be
    // unmapped, then the first alone.
    const uint64_t page = address & ~uint64_t{4095};
    start = page;
    length = 0;
    if (safe_read(page, bytes, kBytes)) {
      length = kBytes;
    } else if (safe_read(page, bytes, 4096)) {
      length = 4096;
    }
    if (address + n > start + length) return safe_read(address, out, n);  // straddles: read it alone
  }
  std::memcpy(out, bytes + (address - start), n);
  return true;
}

// SIGNAL PATH. Every interpreter's thread list, bounded.
uint64_t PythonStackReader::find_thread_state(uint64_t thread_id) const {
  uint64_t interp = read_pointer(runtime_ + layout_.runtime_interpreters_head);
  for (int i = 0; interp != 0 && i < kMaxInterpreters; ++i) {
    uint64_t t = read_pointer(interp + layout_.interp_threads_head);
    for (int j = 0; t != 0 && j < kMaxThreadStates; ++j) {
      if (read_pointer(t + layout_.tstate_thread_id) == thread_id) return t;
      t = read_pointer(t + layout_.tstate_next);
    }
    interp = read_pointer(interp + layout_.interp_next);
  }
  return 0;
}

// SIGNAL PATH.
uint32_t PythonStackReader::read(uint64_t thread_id, uint64_t* tstate, PythonReadWindow* window, PythonFrame* out,
                                 uint32_t max, bool* complete) const {
  *complete = true;
  window->start = window->length = 0;
  if (runtime_ == 0 || max == 0) return 0;
  // The cached thread state is still ours while it names this thread; its
  // thread id and frame pointer come in one system call.
  uint64_t named = 0, frame = 0;
  if (*tstate != 0) {
    iovec local[2] = {{&named, 8}, {&frame, 8}};
    iovec remote[2] = {{reinterpret_cast<void*>(*tstate + layout_.tstate_thread_id), 8},
                       {reinterpret_cast<void*>(*tstate + layout_.tstate_frame), 8}};
    if (safe_read_gather(local, remote, 2) != 2) named = 0;
  }
  if (*tstate == 0 || named != thread_id) {
    *tstate = find_thread_state(thread_id);
    if (*tstate == 0) return 0;  // not a Python thread (yet)
    frame = read_pointer(*tstate + layout_.tstate_frame);
  }
  if (layout_.cframe_current_frame != kAbsent && frame != 0) {
    // 3.11-3.12: the frame is behind a _PyCFrame, which lives in the C
    // stack of the eval loop running it (or in the thread state). This is
    // the sampled thread, and its stack is mapped from this very frame up
    // to its end, so a cframe there is read with a plain load: one system
    // call less per sample. (A stale pointer reads garbage, never faults;
    // the frame reads below check what it gives.)
    const uint64_t field_address = frame + layout_.cframe_current_frame;
    const uint64_t here = reinterpret_cast<uint64_t>(&field_address);
    const StackBounds stack = this_thread_stack();
    frame = field_address > here && field_address % 8 == 0 && stack.contains(here) &&
                    field_address + 8 <= stack.high
                ? *reinterpret_cast<const uint64_t*>(field_address)
                : read_pointer(field_address);
  }

  uint8_t buffer[kMaxFrameReadBytes];
  const uint32_t bytes = layout_.frame_read_bytes();
  if (bytes > sizeof buffer) return 0;
  uint32_t n = 0;
  while (frame != 0) {
    if (n == max) {
      *complete = false;  // deeper than we keep
      break;
    }
    if (!window->read(frame, buffer, bytes)) {
      *complete = false;
      break;
    }
    const uint64_t code = field(buffer, layout_.frame_code) & ~layout_.frame_code_tag_bits;
    const uint64_t previous = field(buffer, layout_.frame_previous);
    if (layout_.frame_owner != kAbsent && buffer[layout_.frame_owner] >= kFirstShimOwner) {
      // The shim a native eval call starts with (its code is None, not a
      // code object): the frame before it was that call's outermost.
      if (n > 0) out[n - 1].flags |= kEndsEvalCall;
      frame = previous;
      continue;
    }
    if (code == 0) {
      *complete = false;
      break;
    }
    PythonFrame& f = out[n++];
    f.code = code;
    const int64_t offset = layout_.instruction_byte_offset(code, field(buffer, layout_.frame_instruction));
    f.byte_offset = offset > INT32_MAX ? -1 : int32_t(offset);
    f.flags = 0;
    switch (layout_.frames) {
      case FrameModel::kFrameObjects:
        f.flags = kEndsEvalCall;  // one native eval call per frame
        break;
      case FrameModel::kEntryFlag:
        if (buffer[layout_.frame_is_entry]) f.flags = kEndsEvalCall;
        break;
      case FrameModel::kCStackShims:
        break;  // marked when its shim is reached
    }
    frame = previous;
  }
  // The outermost frame ends the outermost eval call.
  if (n > 0) out[n - 1].flags |= kEndsEvalCall;
  stamp_codes(window, out, n);
  return n;
}

// SIGNAL PATH. Three fields of each frame's code object straight into the
// frame, kStampFrames frames per system call. A code object that cannot be
// read leaves its frame unstamped; the reads go on after it, a few times
// (each costs a system call; the stack is torn if there are more).
void PythonStackReader::stamp_codes(PythonReadWindow* window, PythonFrame* frames, uint32_t n) const {
  constexpr uint32_t kFields = 3;
  constexpr int kMaxUnreadable = 4;
  for (uint32_t i = 0; i < n; ++i) frames[i].flags &= ~kCodeStamped;
  uint32_t next = 0;  // first frame not tried yet
  for (int unreadable = 0; next < n && unreadable < kMaxUnreadable;) {
    const uint32_t batch = std::min(n - next, PythonReadWindow::kStampFrames);
    for (uint32_t i = 0; i < batch; ++i) {
      PythonFrame& f = frames[next + i];
      iovec* local = window->stamp_local + kFields * i;
      iovec* remote = window->stamp_remote + kFields * i;
      local[0] = {&f.qualname, 8};
      remote[0] = {reinterpret_cast<void*>(f.code + layout_.code_qualname), 8};
      local[1] = {&f.filename, 8};
      remote[1] = {reinterpret_cast<void*>(f.code + layout_.code_filename), 8};
      local[2] = {&f.firstlineno, 4};
      remote[2] = {reinterpret_cast<void*>(f.code + layout_.code_firstlineno), 4};
    }
    const size_t read = safe_read_gather(window->stamp_local, window->stamp_remote, kFields * batch);
    const uint32_t whole = uint32_t(read / kFields);
    for (uint32_t i = 0; i < whole; ++i) frames[next + i].flags |= kCodeStamped;
    if (whole == batch) {
      next += batch;
    } else {  // frame `next + whole` is not readable: skip it
      next += whole + 1;
      ++unreadable;
    }
  }
}

}  // namespace hybridprof::python
