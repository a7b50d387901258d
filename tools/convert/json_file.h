// The converter's output file: written under a temporary name next to the
// destination and renamed over it only when complete, so a failed
// conversion leaves nothing half-written under the name the user gave;
// gzip-compressed (through zlib) when that name ends in ".gz".
#pragma once

#include <cstdint>
#include <cstdio>
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
  void number(uint64_t value);
  // A number with three decimals: microseconds to the nanosecond, shares.
  void fixed3(double value);
  // Flushes, closes and renames into place; throws std::runtime_error
  // when any write failed (a full disk).
  void commit();

 private:
  void flush_buffer();
  std::string path_, temporary_;
  bool gzip_ = false;
  void* gz_ = nullptr;     // gzFile
  std::FILE* file_ = nullptr;
  std::string buffer_;
  bool failed_ = false, committed_ = false;
};

}  // namespace hybridprof::convert
