#include "json_file.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace hybridprof::convert {
namespace {
constexpr size_t kBufferBytes = 1 << 20;
bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}
}  // namespace

// Buffers pass from the producer to the writer thread one at a time: the
// producer waits only when the writer is still busy with the one before.
class JsonFile::Sink {
 public:
  Sink(const std::string& temporary, const std::string& path) {
    if (ends_with(path, ".gz")) {
      gz_ = gzopen(temporary.c_str(), "wb1");  // fast: traces are large, and most of it compresses anyway
      if (gz_ == nullptr) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    } else {
      file_ = std::fopen(temporary.c_str(), "wb");
      if (file_ == nullptr) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    }
    thread_ = std::thread([this] { run(); });
  }
  ~Sink() { close(); }

  // Takes `full` to be written and leaves an empty buffer in its place.
  void write(std::string& full) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !has_pending_; });
    std::swap(pending_, full);
    has_pending_ = true;
    changed_.notify_all();
  }

  // Writes what it was given and closes the file; false when anything failed.
  bool close() {
    if (thread_.joinable()) {
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return !has_pending_; });
        stop_ = true;
        changed_.notify_all();
      }
      thread_.join();
    }
    if (gz_) failed_ |= gzclose(gz_) != Z_OK;
    if (file_) failed_ |= std::fclose(file_) != 0;
    gz_ = nullptr;
    file_ = nullptr;
    return !failed_;
  }

 private:
  void run() {
    std::string writing;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return has_pending_ || stop_; });
        if (!has_pending_) return;
        std::swap(pending_, writing);
        has_pending_ = false;
        changed_.notify_all();
      }
      if (gz_) {
        failed_ |= gzwrite(gz_, writing.data(), static_cast<unsigned>(writing.size())) != static_cast<int>(writing.size());
      } else {
        failed_ |= std::fwrite(writing.data(), 1, writing.size(), file_) != writing.size();
      }
      writing.clear();
    }
  }

  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
  bool failed_ = false;  // the writer thread's until it is joined
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_;
  bool has_pending_ = false, stop_ = false;
  std::thread thread_;
};

JsonFile::JsonFile(const std::string& path)
    : path_(path),
      temporary_(path + ".partial." + std::to_string(getpid())),
      sink_(std::make_unique<Sink>(temporary_, path)) {
  buffer_.reserve(kBufferBytes + 4096);
}

JsonFile::~JsonFile() {
  if (committed_) return;
  sink_->close();
  std::remove(temporary_.c_str());
}

void JsonFile::hand_off_if_full() {
  if (buffer_.size() < kBufferBytes) return;
  sink_->write(buffer_);
  buffer_.reserve(kBufferBytes + 4096);
}

void JsonFile::raw(std::string_view text) {
  buffer_.append(text);
  hand_off_if_full();
}

void JsonFile::quote(std::string& out, std::string_view text) {
  out += '"';
  size_t plain = 0;  // the start of the run of characters that need no escape
  for (size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u >= 0x20 && u != '"' && u != '\\') continue;
    out.append(text.data() + plain, i - plain);
    plain = i + 1;
    if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += '\\';
      out += text[i];
    }
  }
  out.append(text.data() + plain, text.size() - plain);
  out += '"';
}

void JsonFile::string(std::string_view text) {
  quote(buffer_, text);
  hand_off_if_full();
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
  sink_->write(buffer_);
  if (!sink_->close()) throw std::runtime_error("cannot write " + path_ + " (disk full?)");
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0)
    throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  committed_ = true;
}

}  // namespace hybridprof::convert
