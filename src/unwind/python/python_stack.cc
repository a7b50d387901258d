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
const uint8_t* PythonReadWindow::read(uint64_t address, uint64_t n, uint8_t* alone) {
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
    if (address + n > start + length) return safe_read(address, alone, n) ? alone : nullptr;  // straddles
  }
  return bytes + (address - start);
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
    // Read where the window holds it: a copy of it into `buffer`, made with
    // wide stores, made every field load after it wait for them to reach
    // the cache (three quarters of this function's time, 40 frames deep).
    const uint8_t* frame_bytes = window->read(frame, bytes, buffer);
    if (frame_bytes == nullptr) {
      *complete = false;
      break;
    }
    const uint64_t code = field(frame_bytes, layout_.frame_code) & ~layout_.frame_code_tag_bits;
    const uint64_t previous = field(frame_bytes, layout_.frame_previous);
    if (layout_.frame_owner != kAbsent && frame_bytes[layout_.frame_owner] >= kFirstShimOwner) {
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
    const int64_t offset = layout_.instruction_byte_offset(code, field(frame_bytes, layout_.frame_instruction));
    f.byte_offset = offset > INT32_MAX ? -1 : int32_t(offset);
    f.flags = 0;
    switch (layout_.frames) {
      case FrameModel::kFrameObjects:
        f.flags = kEndsEvalCall;  // one native eval call per frame
        break;
      case FrameModel::kEntryFlag:
        if (frame_bytes[layout_.frame_is_entry]) f.flags = kEndsEvalCall;
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

// SIGNAL PATH. Three fields of each frame's code object, kStampFrames code
// objects per system call: one element each covering the three fields
// when they lie within kStampSpanBytes of each other (every layout so far),
// three elements otherwise. A frame whose code object an earlier frame of
// the sample has (32 frames back at most) copies that frame's stamp. A code
// object that cannot be read leaves its frames unstamped; the reads go on
// after it, a few times (each costs a system call; the stack is torn if
// there are more).
void PythonStackReader::stamp_codes(PythonReadWindow* window, PythonFrame* frames, uint32_t n) const {
  constexpr int kMaxUnreadable = 4;
  constexpr uint32_t kLookBack = 32;
  const uint32_t offsets[3] = {layout_.code_qualname, layout_.code_filename, layout_.code_firstlineno};
  const uint32_t sizes[3] = {8, 8, 4};
  const uint32_t low = std::min({offsets[0], offsets[1], offsets[2]});
  const uint32_t high = std::max({offsets[0] + 8, offsets[1] + 8, offsets[2] + 4});
  const bool spanned = high - low <= PythonReadWindow::kStampSpanBytes;
  const uint32_t elements = spanned ? 1 : 3;
  // same_as[i]: the earlier frame with frame i's code object, or i.
  uint16_t same_as[PythonReadWindow::kMaxStampedFrames];
  n = std::min(n, PythonReadWindow::kMaxStampedFrames);
  for (uint32_t i = 0; i < n; ++i) {
    frames[i].flags &= ~kCodeStamped;
    same_as[i] = uint16_t(i);
    for (uint32_t j = i; j-- > (i > kLookBack ? i - kLookBack : 0);) {
      if (frames[j].code == frames[i].code) {
        same_as[i] = same_as[j];
        break;
      }
    }
  }
  uint32_t next = 0;  // first frame not tried yet
  for (int unreadable = 0; next < n && unreadable < kMaxUnreadable;) {
    // The next kStampFrames frames with a code object of their own.
    uint32_t batch[PythonReadWindow::kStampFrames];
    uint32_t count = 0, end = next;
    for (; end < n && count < PythonReadWindow::kStampFrames; ++end) {
      if (same_as[end] != end) continue;
      PythonFrame& f = frames[end];
      iovec* local = window->stamp_local + elements * count;
      iovec* remote = window->stamp_remote + elements * count;
      if (spanned) {
        local[0] = {window->stamp_bytes + count * PythonReadWindow::kStampSpanBytes, high - low};
        remote[0] = {reinterpret_cast<void*>(f.code + low), high - low};
      } else {
        void* fields[3] = {&f.qualname, &f.filename, &f.firstlineno};
        for (int k = 0; k < 3; ++k) {
          local[k] = {fields[k], sizes[k]};
          remote[k] = {reinterpret_cast<void*>(f.code + offsets[k]), sizes[k]};
        }
      }
      batch[count++] = end;
    }
    const size_t read = count == 0 ? 0 : safe_read_gather(window->stamp_local, window->stamp_remote, elements * count);
    const uint32_t whole = uint32_t(read / elements);
    for (uint32_t k = 0; k < whole; ++k) {
      PythonFrame& f = frames[batch[k]];
      if (spanned) {
        const uint8_t* bytes = window->stamp_bytes + k * PythonReadWindow::kStampSpanBytes;
        std::memcpy(&f.qualname, bytes + (offsets[0] - low), 8);
        std::memcpy(&f.filename, bytes + (offsets[1] - low), 8);
        std::memcpy(&f.firstlineno, bytes + (offsets[2] - low), 4);
      }
      f.flags |= kCodeStamped;
    }
    if (whole == count) {
      next = end;
    } else {  // frame batch[whole] is not readable: skip it
      next = batch[whole] + 1;
      ++unreadable;
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    const PythonFrame& first = frames[same_as[i]];
    if (same_as[i] == i || !(first.flags & kCodeStamped)) continue;
    frames[i].qualname = first.qualname;
    frames[i].filename = first.filename;
    frames[i].firstlineno = first.firstlineno;
    frames[i].flags |= kCodeStamped;
  }
}

}  // namespace hybridprof::python
