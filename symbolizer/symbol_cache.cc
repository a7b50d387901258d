#include "symbolizer/symbol_cache.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string_view>
#include <type_traits>
#include <utility>

#include "symbolizer/build_id.h"

namespace hybridprof::symbolizer {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'H', 'P', 'S', 'Y', 'M', 'C', '\0', '\1'};
// Record arrays are written as they are in memory, each 8-byte aligned in
// the file (so that a mapped entry is read where it lies; the format
// number covers the layout).
using AddressRecord = CachedEntry::AddressRecord;
using RangeRecord = CachedEntry::RangeRecord;
using StatementRecord = CachedEntry::StatementRecord;
static_assert(sizeof(CachedModule::Stretch) == 24 && std::is_trivially_copyable_v<CachedModule::Stretch>);
static_assert(sizeof(CachedModule::Frame) == 16 && std::is_trivially_copyable_v<CachedModule::Frame>);
static_assert(sizeof(AddressRecord) == 16 && sizeof(RangeRecord) == 24 && sizeof(StatementRecord) == 16);
static_assert(sizeof(UnitRange) == 24 && std::is_trivially_copyable_v<UnitRange>);
constexpr size_t kRecordAlign = 8;
static_assert(alignof(AddressRecord) <= kRecordAlign && alignof(RangeRecord) <= kRecordAlign &&
              alignof(CachedModule::Stretch) <= kRecordAlign && alignof(UnitRange) <= kRecordAlign);

// Four lanes of eight bytes a step (a multiply each, independent of one
// another), folded at the end, then the tail: an entry of megabytes (a
// library's whole symbol table) checks in a fraction of a millisecond.
uint64_t checksum(const char* data, size_t size) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t lane[4] = {0xcbf29ce484222325ull ^ size, 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t word = 0;
      std::memcpy(&word, data + i + 8 * k, 8);
      lane[k] = (lane[k] ^ word) * kPrime;
      lane[k] ^= lane[k] >> 29;
    }
  }
  uint64_t h = lane[0];
  for (int k = 1; k < 4; ++k) h = (h ^ lane[k]) * kPrime;
  for (; i < size; ++i) h = (h ^ uint8_t(data[i])) * kPrime;
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
  // Zeros up to the next multiple of kRecordAlign.
  void align() { out_.append((kRecordAlign - out_.size() % kRecordAlign) % kRecordAlign, '\0'); }
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
  explicit Reader(std::string_view in) : in_(in) {}
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
  // What put_string<Size> wrote, where it lies.
  template <typename Size = uint32_t>
  std::string_view get_view() {
    const uint64_t n = get<Size>();
    if (!ok || in_.size() - at_ < n) {
      ok = false;
      return {};
    }
    const std::string_view s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  // Skips what Writer::align put (zeros, else not ours).
  void align() {
    while (ok && at_ % kRecordAlign != 0) ok = get<char>() == '\0';
  }
  // What put_items wrote, where it lies (the input is mapped at a page:
  // an offset aligned in the file is aligned in memory).
  template <typename T>
  std::span<const T> get_items() {
    align();
    const uint64_t n = get_count(sizeof(T));
    if (reinterpret_cast<uintptr_t>(in_.data()) % kRecordAlign != 0) ok = false;
    if (!ok) return {};
    const auto* first = reinterpret_cast<const T*>(in_.data() + at_);
    at_ += n * sizeof(T);
    return {first, size_t(n)};
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
  std::string_view in_;
  size_t at_ = 0;
};

// Puts `items` as a count and their bytes.
template <typename T>
void put_items(Writer& w, std::span<const T> items) {
  static_assert(std::is_trivially_copyable_v<T>);
  w.align();
  w.put(uint64_t(items.size()));
  w.put_bytes(items.data(), items.size() * sizeof(T));
}

std::string serialize(const std::string& build_id, const CachedModule& m) {
  Writer w;
  for (char c : kMagic) w.put(c);
  w.put(kSymbolCacheFormat);
  w.put_string(build_id);
  w.put(uint64_t(m.strings.size()));
  for (const std::string& s : m.strings) w.put_string(s);
  put_items<CachedModule::Frame>(w, m.frames);
  // Sorted, to be searched where they lie.
  std::vector<AddressRecord> addresses;
  addresses.reserve(m.addresses.size());
  for (const auto& [address, answer] : m.addresses) addresses.push_back({address, answer});
  std::sort(addresses.begin(), addresses.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
  put_items<AddressRecord>(w, addresses);
  std::vector<RangeRecord> ranges;
  ranges.reserve(m.ranges.size());
  for (const auto& [start, range] : m.ranges) ranges.push_back({start, range.end, range.answer});
  put_items<RangeRecord>(w, ranges);
  std::vector<StatementRecord> statements;
  statements.reserve(m.statements.size());
  for (const auto& [address, statement] : m.statements) statements.push_back({address, uint8_t(statement), {}});
  std::sort(statements.begin(), statements.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
  put_items<StatementRecord>(w, statements);
  w.put(uint8_t(m.whole_table));
  put_items<CachedModule::Stretch>(w, m.stretches);
  w.put_string<uint64_t>(m.names);
  put_items<UnitRange>(w, m.units);
  return w.finish();
}

enum class Parsed { kOk, kOtherFormat, kDamaged };

// A file mapped whole, read-only, its pages mapped at once (null when it
// cannot be; *found false when there is no such file). An entry is
// checked and read where it lies: writers replace entries by renaming a
// new file over them, never by writing into one, so a mapped entry does
// not change under its reader.
std::shared_ptr<const void> map_file(const std::string& path, size_t* size, bool* found) {
  *size = 0;
  *found = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  std::shared_ptr<const void> mapping;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    *found = true;
    if (st.st_size > 0) {
      const size_t bytes = size_t(st.st_size);
      void* at = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (at != MAP_FAILED) {
        mapping = std::shared_ptr<const void>(at, [bytes](const void* p) { ::munmap(const_cast<void*>(p), bytes); });
        *size = bytes;
      } else {
        *found = false;
      }
    }
  }
  ::close(fd);
  return mapping;
}

// The frames of `answer`, with `strings` (a CachedModule's or an entry's).
template <typename Strings>
std::vector<SourceFrame> frames_from(std::span<const CachedModule::Frame> frames, const Strings& strings,
                                     CachedModule::Answer answer) {
  std::vector<SourceFrame> out;
  out.reserve(answer.count);
  for (uint32_t i = answer.first; i < answer.first + answer.count; ++i) {
    const CachedModule::Frame& f = frames[i];
    out.push_back({std::string(strings[f.function]), std::string(strings[f.file]), f.line,
                   (f.flags & CachedModule::kInlined) != 0, (f.flags & CachedModule::kResolved) != 0});
  }
  return out;
}

// What a whole symbol table answers at `address`.
std::vector<SourceFrame> stretch_frames(std::span<const CachedModule::Stretch> stretches, std::string_view names,
                                        uint64_t address) {
  const auto after = std::upper_bound(stretches.begin(), stretches.end(), address,
                                      [](uint64_t a, const CachedModule::Stretch& t) { return a < t.start; });
  if (after == stretches.begin() || address >= std::prev(after)->end) return {};
  const CachedModule::Stretch& t = *std::prev(after);
  SourceFrame frame;
  frame.function = demangle(std::string(names.substr(t.name, t.name_size)));
  return {std::move(frame)};
}

// Records sorted by a strictly increasing key.
template <typename T, typename Key>
bool increasing(std::span<const T> items, Key key) {
  for (size_t i = 1; i < items.size(); ++i)
    if (key(items[i - 1]) >= key(items[i])) return false;
  return true;
}

}  // namespace

// Checks an entry's bytes whole and points `e` at what they hold.
class EntryParser {
 public:
  static Parsed parse(std::shared_ptr<const void> mapping, std::string_view bytes, const std::string& build_id,
                      CachedEntry* e) {
    if (bytes.size() < sizeof kMagic + 4 + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
      return Parsed::kDamaged;
    // Another format's entry (an older hybridprof's, whose checksum may be
    // another too) is not damage: it is a miss, and rewritten.
    uint32_t format = 0;
    std::memcpy(&format, bytes.data() + sizeof kMagic, 4);
    if (format != kSymbolCacheFormat) return Parsed::kOtherFormat;
    const size_t body = bytes.size() - 8;
    uint64_t sum = 0;
    std::memcpy(&sum, bytes.data() + body, 8);
    if (sum != checksum(bytes.data(), body)) return Parsed::kDamaged;
    Reader r(bytes.substr(0, body));
    for (size_t i = 0; i < sizeof kMagic; ++i) r.get<char>();
    r.get<uint32_t>();  // the format, checked
    if (r.get_view() != build_id) return Parsed::kDamaged;  // a file under another build's name
    CachedEntry m;
    m.strings_.resize(r.get_count(4));
    for (std::string_view& s : m.strings_) s = r.get_view();
    m.frames_ = r.get_items<CachedModule::Frame>();
    for (const CachedModule::Frame& f : m.frames_)
      if (f.function >= m.strings_.size() || f.file >= m.strings_.size() || f.flags > 3) r.ok = false;
    // An answer within the frames, or not ours.
    const auto answer_ok = [&](CachedModule::Answer a) { return uint64_t(a.first) + a.count <= m.frames_.size(); };
    m.addresses_ = r.get_items<AddressRecord>();
    for (const AddressRecord& a : m.addresses_) r.ok = r.ok && answer_ok(a.answer);
    r.ok = r.ok && increasing(m.addresses_, [](const AddressRecord& a) { return a.address; });
    m.ranges_ = r.get_items<RangeRecord>();
    uint64_t last_end = 0;
    for (const RangeRecord& range : m.ranges_) {
      // In order, not overlapping, not empty, answered: else not ours.
      if (range.start < last_end || range.end <= range.start || !answer_ok(range.answer)) r.ok = false;
      last_end = range.end;
    }
    m.statements_ = r.get_items<StatementRecord>();
    for (const StatementRecord& t : m.statements_) r.ok = r.ok && t.statement <= 1;
    r.ok = r.ok && increasing(m.statements_, [](const StatementRecord& t) { return t.address; });
    const uint8_t whole_table = r.get<uint8_t>();
    if (whole_table > 1) r.ok = false;
    m.whole_table_ = whole_table == 1;
    m.stretches_ = r.get_items<CachedModule::Stretch>();
    m.names_ = r.get_view<uint64_t>();
    last_end = 0;
    for (const CachedModule::Stretch& t : m.stretches_) {
      // Overlapping, empty, or naming past the names: not ours.
      if (t.start < last_end || t.end <= t.start || uint64_t(t.name) + t.name_size > m.names_.size()) r.ok = false;
      last_end = t.end;
    }
    m.units_ = r.get_items<UnitRange>();
    for (const UnitRange& u : m.units_)
      if (u.high <= u.low) r.ok = false;
    if (!r.ok || !r.at_end()) return Parsed::kDamaged;
    m.mapping_ = std::move(mapping);
    *e = std::move(m);
    return Parsed::kOk;
  }
};

bool CachedEntry::find(uint64_t address, std::vector<SourceFrame>* out) const {
  const auto at = std::lower_bound(addresses_.begin(), addresses_.end(), address,
                                   [](const AddressRecord& a, uint64_t x) { return a.address < x; });
  if (at != addresses_.end() && at->address == address) {
    *out = frames_of(at->answer);
    return true;
  }
  const auto after = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                                      [](uint64_t x, const RangeRecord& r) { return x < r.start; });
  if (after == ranges_.begin() || address >= std::prev(after)->end) return false;
  *out = frames_of(std::prev(after)->answer);
  return true;
}

std::vector<SourceFrame> CachedEntry::frames_of(Answer answer) const { return frames_from(frames_, strings_, answer); }

std::vector<SourceFrame> CachedEntry::symbol_frames(uint64_t address) const {
  return stretch_frames(stretches_, names_, address);
}

std::optional<bool> CachedEntry::statement(uint64_t address) const {
  const auto at = std::lower_bound(statements_.begin(), statements_.end(), address,
                                   [](const StatementRecord& t, uint64_t x) { return t.address < x; });
  if (at == statements_.end() || at->address != address) return std::nullopt;
  return at->statement != 0;
}

void CachedEntry::add_to(CachedModule* m) const {
  for (const AddressRecord& a : addresses_) m->add_address(a.address, frames_of(a.answer));
  for (const RangeRecord& r : ranges_) m->add_range(r.start, r.end, frames_of(r.answer));
  for (const StatementRecord& t : statements_) m->statements[t.address] = t.statement != 0;
  if (m->units.empty()) m->units.assign(units_.begin(), units_.end());
  if (whole_table_ && !m->whole_table) {
    m->whole_table = true;
    m->stretches.assign(stretches_.begin(), stretches_.end());
    m->names.assign(names_);
  }
}

void CachedModule::add_stretch(uint64_t start, uint64_t end, const char* name) {
  const size_t size = std::strlen(name);
  stretches.push_back({start, end, uint32_t(names.size()), uint32_t(size)});
  names.append(name, size);
}

std::vector<SourceFrame> CachedModule::symbol_frames(uint64_t address) const {
  return stretch_frames(stretches, names, address);
}

bool CachedModule::find(uint64_t address, std::vector<SourceFrame>* out) const {
  if (const auto it = addresses.find(address); it != addresses.end()) {
    *out = frames_of(it->second);
    return true;
  }
  auto after = ranges.upper_bound(address);
  if (after == ranges.begin()) return false;
  const auto& [start, range] = *std::prev(after);
  if (address >= range.end) return false;
  *out = frames_of(range.answer);
  return true;
}

std::vector<SourceFrame> CachedModule::frames_of(Answer answer) const { return frames_from(frames, strings, answer); }

uint32_t CachedModule::string_index(const std::string& s) {
  if (string_indices_.size() != strings.size()) {  // read from a file, or copied: index it now
    string_indices_.clear();
    for (uint32_t i = 0; i < strings.size(); ++i) string_indices_.emplace(strings[i], i);
  }
  auto [it, added] = string_indices_.try_emplace(s, uint32_t(strings.size()));
  if (added) strings.push_back(s);
  return it->second;
}

CachedModule::Answer CachedModule::add_answer(const std::vector<SourceFrame>& answer) {
  const Answer a{uint32_t(frames.size()), uint32_t(answer.size())};
  for (const SourceFrame& f : answer)
    frames.push_back({string_index(f.function), string_index(f.file), f.line,
                      (f.inlined ? kInlined : 0u) | (f.resolved ? kResolved : 0u)});
  return a;
}

void CachedModule::add_address(uint64_t address, const std::vector<SourceFrame>& answer) {
  addresses[address] = add_answer(answer);
}

bool CachedModule::add_range(uint64_t start, uint64_t end, const std::vector<SourceFrame>& answer) {
  if (end <= start) return false;
  const auto after = ranges.lower_bound(start);
  if (after != ranges.end() && after->first < end) return false;
  if (after != ranges.begin() && std::prev(after)->second.end > start) return false;
  ranges.emplace_hint(after, start, Range{end, add_answer(answer)});
  return true;
}

std::string build_id_of(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string id;
  elf_version(EV_CURRENT);
  if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
    const void* bits = nullptr;
    const ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
    id = build_id_hex(bits, n);
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

CachedEntry SymbolCache::open(const std::string& build_id) {
  CachedEntry entry;
  const std::string path = entry_path(build_id);
  size_t size = 0;
  bool found = false;
  std::shared_ptr<const void> mapping = map_file(path, &size, &found);
  if (!found) return entry;
  const std::string_view bytes(static_cast<const char*>(mapping.get()), size);
  switch (EntryParser::parse(std::move(mapping), bytes, build_id, &entry)) {
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
  return entry;
}

CachedModule SymbolCache::load(const std::string& build_id) {
  CachedModule m;
  open(build_id).add_to(&m);
  return m;
}

bool SymbolCache::store(const std::string& build_id, const CachedModule& added) {
  if (added.empty()) return true;
  std::error_code ec;
  fs::create_directories(directory_, ec);
  // What another process stored meanwhile stays.
  CachedModule merged = load(build_id);
  for (const auto& [address, answer] : added.addresses) merged.add_address(address, added.frames_of(answer));
  for (const auto& [address, statement] : added.statements) merged.statements[address] = statement;
  for (const auto& [start, range] : added.ranges) merged.add_range(start, range.end, added.frames_of(range.answer));
  if (merged.units.empty()) merged.units = added.units;  // one module build's units are the same whoever read them
  if (added.whole_table && !merged.whole_table) {  // one module build's table is the same whoever read it
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
  trim(bytes.size());
  return true;
}

void SymbolCache::trim(uint64_t written) {
  // Counted again only when what was written since the last count could
  // have passed the bound: a run that stores dozens of entries looks at
  // the directory once, not once an entry.
  if (counted_bytes_ != kNotCounted && counted_bytes_ + written <= max_bytes_) {
    counted_bytes_ += written;
    return;
  }
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(directory_, ec)) {
    if (e.path().extension() != ".hps" && e.path().extension() != ".debug") continue;
    std::error_code stat_ec;
    const uint64_t bytes = e.file_size(stat_ec);
    const auto used = e.last_write_time(stat_ec);
    if (stat_ec) continue;  // removed meanwhile
    entries.push_back({e.path(), used, bytes});
    total += bytes;
  }
  counted_bytes_ = total;
  if (total <= max_bytes_) return;
  // Down to three quarters, so that the next runs do not trim at every store.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_ / 4 * 3) break;
    if (fs::remove(e.path, ec)) total -= e.bytes;
  }
  counted_bytes_ = total;
}

std::vector<std::string> SymbolCache::take_warnings() { return std::exchange(warnings_, {}); }

}  // namespace hybridprof::symbolizer
