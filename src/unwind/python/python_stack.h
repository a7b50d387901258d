// The Python frames of the calling thread, read from the interpreter's
// memory inside the sample handler: no GIL, no Python API, no allocation;
// every read is a safe_read (a frame being torn down by another thread
// reads as an error, not a crash), and the walk is bounded.
#pragma once

#include <cstdint>

#include "unwind/python/python_layout.h"

namespace hybridprof::python {

struct PythonFrame {
  uint64_t code = 0;       // the code object's address (named later, outside the handler)
  int32_t byte_offset = 0; // of the instruction in the bytecode; -1 before the first
  uint32_t flags = 0;      // PythonFrameFlags
};
static_assert(sizeof(PythonFrame) == 16);

enum PythonFrameFlags : uint32_t {
  // The outermost Python frame of one native evaluation call
  // (_PyEval_EvalFrameDefault): the merge puts this frame and the younger
  // ones up to the previous such frame where that native frame was.
  kEndsEvalCall = 1u << 0,
};

// Memory the reader copies interpreter pages into: frames of one thread lie
// close together (3.11+: in its frame stack chunks), so one system call
// usually brings many of them.
struct PythonReadWindow {
  static constexpr uint64_t kBytes = 8192;
  uint64_t start = 0, length = 0;  // what `bytes` holds now
  alignas(8) uint8_t bytes[kBytes];
  // SIGNAL PATH: copies [address, address + n) from the window, refilling
  // it from the page that holds `address` when needed.
  bool read(uint64_t address, void* out, uint64_t n);
};

class PythonStackReader {
 public:
  PythonStackReader() = default;
  PythonStackReader(const PythonLayout& layout, uint64_t runtime) : layout_(layout), runtime_(runtime) {}
  bool enabled() const { return runtime_ != 0; }

  // SIGNAL PATH: async-signal-safe. The frames of the thread whose
  // pthread_t is `thread_id`, innermost first, into out[0..max). `tstate`
  // is the thread's own cache of its thread-state address (0 at first);
  // `window` its copy buffer (emptied at each call: memory changes between
  // samples).
  // Sets *complete to false when a read failed part-way (the frames read so
  // far are kept).
  uint32_t read(uint64_t thread_id, uint64_t* tstate, PythonReadWindow* window, PythonFrame* out, uint32_t max,
                bool* complete) const;

 private:
  uint64_t find_thread_state(uint64_t thread_id) const;

  PythonLayout layout_;
  uint64_t runtime_ = 0;
};

}  // namespace hybridprof::python
