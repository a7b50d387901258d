// The converter's output file: written under a temporary name next to the
// destination and renamed over it only when complete, so a failed
// conversion leaves nothing half-written under the name the user gave;
// gzip-compressed (through zlib) when that name ends in ".gz".
//
// The JSON is built in a buffer on the caller's thread and written (and
// compressed) on a thread of its own, a full buffer at a time: compression
// costs about as much as building the JSON, so the two overlap. At most
// three buffers exist, whatever the output's size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace hybridprof::convert {

class JsonFile {
 public:
  // Throws std::runtime_error with a one-line message when the file
  // cannot be created.
  explicit JsonFile(const std::string& path);
  ~JsonFile();  // removes the temporary file unless commit() ran
  JsonFile(const JsonFile&) = delete;
  JsonFile& operator=(const JsonFile&) = delete;

  void raw(std::string_view text);
  // `text` as a JSON string, quoted and escaped.
  void string(std::string_view text);
  // Appends `text` to `out` as a JSON string (for text written many times).
  static void quote(std::string& out, std::string_view text);
  void number(uint64_t value);
  // A number with three decimals: microseconds to the nanosecond, shares.
  void fixed3(double value);
  // Flushes, closes and renames into place; throws std::runtime_error
  // when any write failed (a full disk).
  void commit();

 private:
  class Sink;  // the file, plain or gzip, and the thread that writes it
  void hand_off_if_full();
  std::string path_, temporary_;
  std::unique_ptr<Sink> sink_;
  std::string buffer_;
  bool committed_ = false;
};

}  // namespace hybridprof::convert
