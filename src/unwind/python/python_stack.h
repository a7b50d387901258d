// The Python frames of the calling thread, read from the interpreter's
// memory inside the sample handler: no GIL, no Python API, no allocation;
// every read is a safe_read (a frame being torn down by another thread
// reads as an error, not a crash), and the walk is bounded.
#pragma once

#include <sys/uio.h>

#include <cstdint>

#include "unwind/python/python_layout.h"

namespace hybridprof::python {

struct PythonFrame {
  uint64_t code = 0;       // the code object's address (named later, outside the handler)
  int32_t byte_offset = 0; // of the instruction in the bytecode; -1 before the first
  uint32_t flags = 0;      // PythonFrameFlags
  // The code object's stamp (with kCodeStamped): its co_qualname and
  // co_filename pointers and co_firstlineno as the sample saw them. The
  // drain names the code tens of milliseconds later; by then a short-lived
  // code object (a module's body during an import) may be freed and its
  // memory reused. The stamp tells the object the drain finds from the one
  // that ran, and still names the one that ran through its strings.
  uint64_t qualname = 0, filename = 0;
  int32_t firstlineno = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(PythonFrame) == 40);

enum PythonFrameFlags : uint32_t {
  // The outermost Python frame of one native evaluation call
  // (_PyEval_EvalFrameDefault): the merge puts this frame and the younger
  // ones up to the previous such frame where that native frame was.
  kEndsEvalCall = 1u << 0,
  // qualname, filename and firstlineno hold the code object's stamp.
  kCodeStamped = 1u << 1,
};

// Memory the reader copies interpreter pages into: frames of one thread lie
// close together (3.11+: in its frame stack chunks), so one system call
// usually brings many of them.
struct PythonReadWindow {
  static constexpr uint64_t kBytes = 8192;
  uint64_t start = 0, length = 0;  // what `bytes` holds now
  alignas(8) uint8_t bytes[kBytes];
  // SIGNAL PATH: [address, address + n) where the window holds it (valid
  // until the next read), refilling the window from the page that holds
  // `address` when needed; bytes that straddle the window are read alone
  // into `alone` (n bytes) and returned there. Null when unreadable.
  const uint8_t* read(uint64_t address, uint64_t n, uint8_t* alone);

  // Room for the code objects' stamps of this many frames, read with one
  // system call (one element per code object: the bytes that span its three
  // fields, or three elements where they lie far apart); kept here, not on
  // the interrupted thread's stack. Each element costs the kernel about as
  // much as a small read of its own, so frames that share a code object
  // (recursion, Module._call_impl at every layer) are read once.
  static constexpr uint32_t kStampFrames = 64;
  static constexpr uint32_t kStampSpanBytes = 192;
  // Frames of one sample that get stamps (deeper ones do not).
  static constexpr uint32_t kMaxStampedFrames = 256;
  iovec stamp_local[3 * kStampFrames], stamp_remote[3 * kStampFrames];
  alignas(8) uint8_t stamp_bytes[kStampFrames * kStampSpanBytes];
};

// The code objects a thread's samples have shown, as a small set-
// associative cache of (code address, co_qualname pointer). A frame missing
// from it ran code the drain may not have named yet, perhaps code that
// lives a few milliseconds (a module's body): the handler then wakes the
// drain early. Code objects come from arenas whose addresses share their
// low bits (two of a training loop's hot ones 0x...4030 apart by a
// multiple of 16 KiB), so the set is chosen by a multiplicative hash of the
// whole address and holds four: with one slot indexed by low bits, two
// frames of every sample evicted each other and woke the drain every
// millisecond for the run's length.
struct SeenCodes {
  static constexpr uint32_t kWays = 4;
  static constexpr uint32_t kSetBits = 8;
  static constexpr uint32_t kSets = 1u << kSetBits;
  uint64_t slots[kSets][kWays] = {};
  // SIGNAL PATH. True when the frame's code was not in the cache (it is
  // now: in its set's first way, the others moved down, the oldest out).
  bool insert(const PythonFrame& f) {
    const uint64_t key = (f.code ^ (f.qualname * 0x9e3779b97f4a7c15ull)) | 1;  // never 0 (empty)
    uint64_t* set = slots[(f.code * 0x9e3779b97f4a7c15ull) >> (64 - kSetBits)];
    for (uint32_t i = 0; i < kWays; ++i) {
      if (set[i] == key) return false;
    }
    for (uint32_t i = kWays - 1; i > 0; --i) set[i] = set[i - 1];
    set[0] = key;
    return true;
  }
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
  // far are kept). Each frame whose code object could be read carries its
  // stamp (kCodeStamped).
  uint32_t read(uint64_t thread_id, uint64_t* tstate, PythonReadWindow* window, PythonFrame* out, uint32_t max,
                bool* complete) const;

 private:
  uint64_t find_thread_state(uint64_t thread_id) const;
  void stamp_codes(PythonReadWindow* window, PythonFrame* frames, uint32_t n) const;

  PythonLayout layout_;
  uint64_t runtime_ = 0;
};

}  // namespace hybridprof::python
