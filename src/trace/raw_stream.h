// Encoding and decoding of the raw stream (format in raw_format.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trace/raw_format.h"
#include "trace/recent_calls.h"

namespace hybridprof::raw {

// Builds chunks in memory and appends them to a file. Used by the drain
// thread only; never on the signal path.
//
// The file holds whole chunks only: a write that fails (a full disk, an
// I/O error) is cut off again, and from then on the writer is stopped, as
// it is when the next chunk would pass its size limit. A stopped writer
// drops what is appended; only write_closing() still writes.
class StreamWriter {
 public:
  enum class Stop { kNone, kSizeLimit, kWriteError };

  // Creates `path` (must not exist) and writes the file magic; and, where
  // there is room, `path` + kReserveSuffix: kClosingReserve bytes that
  // write_closing() frees on a full disk, so that why recording stopped
  // (and the process's end) still find room. Returns false with errno set
  // on failure.
  bool open(const std::string& path);
  static constexpr const char* kReserveSuffix = ".reserve";
  ~StreamWriter();

  // The file stays under `bytes` (0: no limit): kClosingReserve of it is
  // kept for write_closing().
  void set_size_limit(uint64_t bytes) { limit_ = bytes > kClosingReserve ? bytes - kClosingReserve : bytes; }
  static constexpr uint64_t kClosingReserve = 16 * 1024;
  Stop stopped() const { return stop_; }
  int stop_errno() const { return stop_errno_; }  // kWriteError's
  // After a stop: writes `record` at once, past the size limit (why the
  // stream stopped, the process's end). False when the write fails.
  bool write_closing(const Record& record);

  void append(const Record& record);
  // The drain's frequent records, without the variant.
  void append(const Sample& record);
  void append(const Enter& record);
  void append(const Leave& record);
  void append(const Event& record);
  void append(const CctNode& record);
  void append(const Call& record);
  // `count` events (>= 1) of `kind` at `timestamp_ns` on `location`:
  // `first`, then each the last repeated `how` (a Waitall's completions).
  void append_event_run(uint32_t location, uint64_t timestamp_ns, uint32_t kind, const EventPayload& first,
                        EventRepeat how, uint64_t count);
  // A Call given as its shape and times (what the drain keeps). Returns
  // where the writer keeps that shape, for append_repeat.
  // Writes nothing (and keeps nothing) once stopped.
  RecentCalls::Handle append_call(uint32_t thread, uint64_t enter_ns, uint64_t leave_ns, const CallShape& shape);
  // A repeat of the Call append_call returned `kept` for (its shape
  // repeated: CallShape::count_on), without comparing shapes again. False, with nothing written, when the
  // writer no longer keeps that shape (then use append_call).
  // Inline: a loop's every traced call comes here.
  bool append_repeat(uint32_t thread, RecentCalls::Handle kept, uint64_t enter_ns, uint64_t leave_ns) {
    if (!recent_calls_.keeps(thread, kept)) return false;
    recent_calls_.repeat_at(thread, kept.slot);  // as the reader will
    put_repeat(thread, kept.slot, enter_ns, leave_ns);
    if (used_ >= kChunkFlushBytes) flush();
    return true;
  }
  // Writes the pending chunk, if any, with one write(). False when it was
  // not written (stopped, or stopping now).
  bool flush();
  void close();
  // Closes without writing the pending chunk (a fork child's copy of the
  // parent's writer: that data is the parent's to write).
  void abandon();

  size_t pending_bytes() const { return used_; }
  uint64_t bytes_written() const { return bytes_written_; }
  bool is_open() const { return fd_ >= 0; }

 private:
  // At least `bytes` writable at the end of the pending chunk (which
  // starts with room for its header); the caller advances used_.
  unsigned char* room(size_t bytes) {
    if (used_ != 0 && used_ + bytes <= chunk_.size()) return chunk_.data() + used_;
    return room_slow(bytes);
  }
  unsigned char* room_slow(size_t bytes);
  template <typename T>
  void put(const T& record);
  static unsigned char* encode_varint(unsigned char* p, uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<unsigned char>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<unsigned char>(v);
    return p;
  }
  void put_varint(uint64_t v) {
    unsigned char* const start = room(10);
    used_ += static_cast<size_t>(encode_varint(start, v) - start);
  }
  void put_signed(int64_t v);
  void put_payload(const EventPayload& p) {
    for (uint32_t w : p.word) put_varint(w);
    for (uint64_t w : p.wide) put_varint(w);
  }
  void put_string(const std::string& s);
  // Drops the pending chunk (and the deltas and calls that refer into it).
  void discard_pending();
  // The zigzag-encoded step from the thread's last timestamp to `ts`.
  uint64_t delta(uint32_t thread, uint64_t ts) {
    if (thread >= last_ts_.size()) last_ts_.resize(thread + 1, 0);
    const uint64_t d = ts - last_ts_[thread];
    last_ts_[thread] = ts;
    return (d << 1) ^ static_cast<uint64_t>(static_cast<int64_t>(d) >> 63);
  }
  void put_repeat(uint32_t thread, uint32_t slot, uint64_t enter_ns, uint64_t leave_ns) {
    // One room check for the whole record.
    const uint64_t d = delta(thread, enter_ns);
    unsigned char* const start = room(5 * 10);
    unsigned char* p = encode_varint(start, static_cast<uint32_t>(Tag::kCallRepeat));
    p = encode_varint(p, thread);
    p = encode_varint(p, slot);
    p = encode_varint(p, d);
    p = encode_varint(p, leave_ns - enter_ns);
    used_ += static_cast<size_t>(p - start);
    last_ts_[thread] = leave_ns;
  }
  // A chunk is written once its payload reaches this: one that stays
  // small stays in the cache (a drain pass over a full ring would otherwise
  // grow one chunk by reallocation and copying, over and over).
  static constexpr size_t kChunkFlushBytes = 256 * 1024;

  std::atomic<int> fd_{-1};  // own_fds: moves if the program dup2()s onto it
  std::vector<unsigned char> chunk_;  // grows, never shrinks; used_ bytes pending
  size_t used_ = 0;
  std::vector<uint64_t> last_ts_;  // per thread, for timestamp deltas
  std::vector<LastEvent> last_events_;  // per location, of the pending chunk (Tag::kEventRepeat)
  RecentCalls recent_calls_;       // of the pending chunk
  uint64_t bytes_written_ = 0;
  uint64_t limit_ = 0;             // for data, closing reserve excluded; 0: none
  Stop stop_ = Stop::kNone;
  int stop_errno_ = 0;
  bool closing_ = false;           // inside write_closing()
  std::string reserve_path_;       // the closing reserve's file while it exists; empty: none
  void release_reserve();
};

struct ReadSummary {
  uint64_t chunks = 0;
  uint64_t records = 0;
  uint64_t bytes_ignored = 0;  // torn or corrupt tail
  std::string problem;         // why bytes were ignored, if any
};

// Reads a raw stream file record by record. Returns false (with `error`) only
// when the file cannot be read at all or is not a raw stream; a torn tail is
// reported in the summary, the records before it are delivered.
bool read_stream(const std::string& path, const std::function<void(const Record&)>& on_record,
                 ReadSummary* summary, std::string* error);
// The same for a stream held in memory; `name` stands for its path in
// `error`.
bool read_stream(const unsigned char* data, size_t size, const std::string& name,
                 const std::function<void(const Record&)>& on_record, ReadSummary* summary, std::string* error);
// The records of one chunk's payload (what read_stream does with each chunk
// whose checksum matched), each added to *records if given. False at an
// undecodable record; the records before it were delivered.
bool decode_chunk(const unsigned char* payload, size_t size, const std::function<void(const Record&)>& on_record,
                  uint64_t* records);

}  // namespace hybridprof::raw
