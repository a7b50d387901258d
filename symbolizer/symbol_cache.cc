#include "symbolizer/symbol_cache.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <type_traits>
#include <utility>

namespace hybridprof::symbolizer {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'H', 'P', 'S', 'Y', 'M', 'C', '\0', '\1'};
constexpr uint8_t kInlined = 1, kResolved = 2;
// Stretches are written as they are in memory (the format number covers the layout).
static_assert(sizeof(CachedModule::Stretch) == 24 && std::is_trivially_copyable_v<CachedModule::Stretch>);

uint64_t checksum(const char* data, size_t size) {  // FNV-1a, 64 bits
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ uint8_t(data[i])) * 0x100000001b3ull;
  return h;
}

class Writer {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>, "strings go through put_string");
    out_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  // A string with its length as a Size.
  template <typename Size = uint32_t>
  void put_string(const std::string& s) {
    put(Size(s.size()));
    out_ += s;
  }
  void put_bytes(const void* data, size_t size) {
    if (size != 0) out_.append(static_cast<const char*>(data), size);  // data may be null when size is 0
  }
  std::string finish() {
    put(checksum(out_.data(), out_.size()));
    return std::move(out_);
  }

 private:
  std::string out_;
};

// Reads what Writer wrote; any read past the end makes ok false.
class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T get() {
    T value{};
    if (in_.size() - at_ < sizeof value) {
      ok = false;
      at_ = in_.size();
      return value;
    }
    std::memcpy(&value, in_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  // What put_string<Size> wrote.
  template <typename Size = uint32_t>
  std::string get_string() {
    const uint64_t n = get<Size>();
    if (!ok || in_.size() - at_ < n) {
      ok = false;
      return {};
    }
    std::string s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  void get_bytes(void* data, size_t size) {
    if (size == 0) return;  // data may be null (an empty vector's): no memcpy at all
    if (in_.size() - at_ < size) {
      ok = false;
      at_ = in_.size();
      return;
    }
    std::memcpy(data, in_.data() + at_, size);
    at_ += size;
  }
  // Counts come from the file: one larger than the bytes left is damage,
  // not a reason to reserve gigabytes.
  uint64_t get_count(size_t smallest_item) {
    const uint64_t n = get<uint64_t>();
    if (n > (in_.size() - at_) / smallest_item) ok = false;
    return ok ? n : 0;
  }
  bool at_end() const { return at_ == in_.size(); }
  bool ok = true;

 private:
  const std::string& in_;
  size_t at_ = 0;
};

void put_frames(Writer& w, const std::vector<SourceFrame>& frames) {
  w.put(uint32_t(frames.size()));
  for (const SourceFrame& f : frames) {
    w.put_string(f.function);
    w.put_string(f.file);
    w.put(f.line);
    w.put(uint8_t((f.inlined ? kInlined : 0) | (f.resolved ? kResolved : 0)));
  }
}

std::string serialize(const std::string& build_id, const CachedModule& m) {
  Writer w;
  for (char c : kMagic) w.put(c);
  w.put(kSymbolCacheFormat);
  w.put_string(build_id);
  w.put(uint64_t(m.frames.size()));
  for (const auto& [address, frames] : m.frames) {
    w.put(address);
    put_frames(w, frames);
  }
  w.put(uint64_t(m.statements.size()));
  for (const auto& [address, statement] : m.statements) {
    w.put(address);
    w.put(uint8_t(statement));
  }
  w.put(uint8_t(m.whole_table));
  w.put(uint64_t(m.stretches.size()));
  w.put_bytes(m.stretches.data(), m.stretches.size() * sizeof(CachedModule::Stretch));
  w.put_string<uint64_t>(m.names);
  return w.finish();
}

enum class Parsed { kOk, kOtherFormat, kDamaged };

Parsed parse(const std::string& bytes, const std::string& build_id, CachedModule* m) {
  if (bytes.size() < sizeof kMagic + 4 + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return Parsed::kDamaged;
  const size_t body = bytes.size() - 8;
  uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + body, 8);
  if (sum != checksum(bytes.data(), body)) return Parsed::kDamaged;
  const std::string content = bytes.substr(0, body);
  Reader r(content);
  for (size_t i = 0; i < sizeof kMagic; ++i) r.get<char>();
  if (r.get<uint32_t>() != kSymbolCacheFormat) return Parsed::kOtherFormat;
  if (r.get_string() != build_id) return Parsed::kDamaged;  // a file under another build's name
  const auto get_frames = [&r] {
    const auto n = r.get<uint32_t>();
    std::vector<SourceFrame> frames;
    for (uint32_t k = 0; r.ok && k < n; ++k) {
      SourceFrame f;
      f.function = r.get_string();
      f.file = r.get_string();
      f.line = r.get<uint32_t>();
      const auto flags = r.get<uint8_t>();
      f.inlined = flags & kInlined;
      f.resolved = flags & kResolved;
      frames.push_back(std::move(f));
    }
    return frames;
  };
  const uint64_t entries = r.get_count(8 + 4);
  for (uint64_t i = 0; r.ok && i < entries; ++i) {
    const auto address = r.get<uint64_t>();
    m->frames[address] = get_frames();
  }
  const uint64_t statements = r.get_count(8 + 1);
  for (uint64_t i = 0; r.ok && i < statements; ++i) {
    const auto address = r.get<uint64_t>();
    m->statements[address] = r.get<uint8_t>() != 0;
  }
  const uint8_t whole_table = r.get<uint8_t>();
  if (whole_table > 1) r.ok = false;
  m->whole_table = whole_table == 1;
  m->stretches.resize(r.get_count(sizeof(CachedModule::Stretch)));
  r.get_bytes(m->stretches.data(), m->stretches.size() * sizeof(CachedModule::Stretch));
  m->names = r.get_string<uint64_t>();
  uint64_t last_end = 0;
  for (const CachedModule::Stretch& t : m->stretches) {
    // Overlapping, empty, or naming past the names: not ours.
    if (t.start < last_end || t.end <= t.start || uint64_t(t.name) + t.name_size > m->names.size()) r.ok = false;
    last_end = t.end;
  }
  if (!r.ok || !r.at_end()) {
    *m = {};
    return Parsed::kDamaged;
  }
  return Parsed::kOk;
}

bool read_file(const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *bytes = std::move(s).str();
  return bool(in) || in.eof();
}

}  // namespace

void CachedModule::add_stretch(uint64_t start, uint64_t end, const char* name) {
  const size_t size = std::strlen(name);
  stretches.push_back({start, end, uint32_t(names.size()), uint32_t(size)});
  names.append(name, size);
}

std::vector<SourceFrame> CachedModule::symbol_frames(uint64_t address) const {
  const auto after = std::upper_bound(stretches.begin(), stretches.end(), address,
                                      [](uint64_t a, const Stretch& t) { return a < t.start; });
  if (after == stretches.begin() || address >= std::prev(after)->end) return {};
  const Stretch& t = *std::prev(after);
  SourceFrame frame;
  frame.function = demangle(names.substr(t.name, t.name_size));
  return {std::move(frame)};
}

const std::vector<SourceFrame>* CachedModule::find(uint64_t address) const {
  const auto it = frames.find(address);
  return it != frames.end() ? &it->second : nullptr;
}

std::string build_id_of(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string id;
  elf_version(EV_CURRENT);
  if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
    const void* bits = nullptr;
    const ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
    static const char hex[] = "0123456789abcdef";
    for (ssize_t i = 0; i < n; ++i) {
      const auto b = static_cast<const uint8_t*>(bits)[i];
      id += hex[b >> 4];
      id += hex[b & 15];
    }
    elf_end(elf);
  }
  ::close(fd);
  return id;
}

std::string SymbolCache::default_directory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::string(xdg) + "/hybridprof";
  if (const char* home = std::getenv("HOME"); home && *home == '/') return std::string(home) + "/.cache/hybridprof";
  return {};
}

SymbolCache::SymbolCache(std::string directory, uint64_t max_bytes)
    : directory_(std::move(directory) + "/symbols-v1"), max_bytes_(max_bytes) {}

std::string SymbolCache::entry_path(const std::string& build_id) const { return directory_ + "/" + build_id + ".hps"; }

CachedModule SymbolCache::load(const std::string& build_id) {
  CachedModule m;
  const std::string path = entry_path(build_id);
  std::string bytes;
  if (!read_file(path, &bytes)) return m;
  switch (parse(bytes, build_id, &m)) {
    case Parsed::kOk:
      ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // used now: the last to go when trimming
      break;
    case Parsed::kOtherFormat:
      break;  // rewritten by the next store
    case Parsed::kDamaged: {
      std::error_code ignored;
      fs::remove(path, ignored);
      warnings_.push_back("symbol cache: " + path + " was damaged and is rebuilt");
      break;
    }
  }
  return m;
}

bool SymbolCache::store(const std::string& build_id, const CachedModule& added) {
  if (added.empty()) return true;
  std::error_code ec;
  fs::create_directories(directory_, ec);
  // What another process stored meanwhile stays.
  CachedModule merged = load(build_id);
  for (const auto& [address, frames] : added.frames) merged.frames[address] = frames;
  for (const auto& [address, statement] : added.statements) merged.statements[address] = statement;
  if (added.whole_table) {  // one module build's table is the same whoever read it
    merged.whole_table = true;
    merged.stretches = added.stretches;
    merged.names = added.names;
  }
  const std::string bytes = serialize(build_id, merged);
  const std::string path = entry_path(build_id);
  std::random_device random;
  const std::string tmp = directory_ + "/." + build_id + "." + std::to_string(getpid()) + "." +
                          std::to_string(random()) + ".tmp";
  bool written = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    written = bool(out);
  }
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    fs::remove(tmp, ec);
    if (!write_failed_)  // once: a read-only cache fails for every library alike
      warnings_.push_back("symbol cache: cannot write in " + directory_ + " (this run's names are not cached)");
    write_failed_ = true;
    return false;
  }
  trim();
  return true;
}

void SymbolCache::trim() {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(directory_, ec)) {
    if (e.path().extension() != ".hps") continue;
    std::error_code stat_ec;
    const uint64_t bytes = e.file_size(stat_ec);
    const auto used = e.last_write_time(stat_ec);
    if (stat_ec) continue;  // removed meanwhile
    entries.push_back({e.path(), used, bytes});
    total += bytes;
  }
  if (total <= max_bytes_) return;
  // Down to three quarters, so that the next runs do not trim at every store.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_ / 4 * 3) break;
    if (fs::remove(e.path, ec)) total -= e.bytes;
  }
}

std::vector<std::string> SymbolCache::take_warnings() { return std::exchange(warnings_, {}); }

}  // namespace hybridprof::symbolizer
