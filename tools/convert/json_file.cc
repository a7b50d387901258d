#include "json_file.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace hybridprof::convert {
namespace {
constexpr size_t kBufferBytes = 1 << 20;
bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}
}  // namespace

JsonFile::JsonFile(const std::string& path)
    : path_(path), temporary_(path + ".partial." + std::to_string(getpid())), gzip_(ends_with(path, ".gz")) {
  if (gzip_) {
    gz_ = gzopen(temporary_.c_str(), "wb1");  // fast: traces are large, and most of it compresses anyway
    if (gz_ == nullptr) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  } else {
    file_ = std::fopen(temporary_.c_str(), "wb");
    if (file_ == nullptr) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  }
  buffer_.reserve(kBufferBytes + 4096);
}

JsonFile::~JsonFile() {
  if (committed_) return;
  if (gz_) gzclose(static_cast<gzFile>(gz_));
  if (file_) std::fclose(file_);
  std::remove(temporary_.c_str());
}

void JsonFile::flush_buffer() {
  if (buffer_.empty()) return;
  if (gzip_) {
    failed_ |= gzwrite(static_cast<gzFile>(gz_), buffer_.data(), static_cast<unsigned>(buffer_.size())) !=
               static_cast<int>(buffer_.size());
  } else {
    failed_ |= std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size();
  }
  buffer_.clear();
}

void JsonFile::raw(std::string_view text) {
  buffer_.append(text);
  if (buffer_.size() >= kBufferBytes) flush_buffer();
}

void JsonFile::string(std::string_view text) {
  buffer_ += '"';
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      buffer_ += '\\';
      buffer_ += c;
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      buffer_ += escaped;
    } else {
      buffer_ += c;
    }
  }
  buffer_ += '"';
  if (buffer_.size() >= kBufferBytes) flush_buffer();
}

void JsonFile::number(uint64_t value) {
  char text[24];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  buffer_.append(text, static_cast<size_t>(end - text));
}

// Integer arithmetic, not printf's: a trace writes a time per event.
void JsonFile::fixed3(double value) {
  const auto ns = static_cast<int64_t>(std::llround(value * 1000));
  char text[32];
  char* at = text;
  if (ns < 0) *at++ = '-';
  const uint64_t magnitude = static_cast<uint64_t>(ns < 0 ? -ns : ns);
  at = std::to_chars(at, text + 24, magnitude / 1000).ptr;
  const auto fraction = static_cast<unsigned>(magnitude % 1000);
  *at++ = '.';
  *at++ = static_cast<char>('0' + fraction / 100);
  *at++ = static_cast<char>('0' + fraction / 10 % 10);
  *at++ = static_cast<char>('0' + fraction % 10);
  buffer_.append(text, static_cast<size_t>(at - text));
}

void JsonFile::commit() {
  flush_buffer();
  if (gzip_) {
    failed_ |= gzclose(static_cast<gzFile>(gz_)) != Z_OK;
    gz_ = nullptr;
  } else {
    failed_ |= std::fflush(file_) != 0;
    failed_ |= std::fclose(file_) != 0;
    file_ = nullptr;
  }
  if (failed_) throw std::runtime_error("cannot write " + path_ + " (disk full?)");
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0)
    throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  committed_ = true;
}

}  // namespace hybridprof::convert
