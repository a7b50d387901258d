#include "symbolizer/perf_map.h"

#include <fstream>
#include <iterator>

namespace hybridprof::symbolizer {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void skip_blanks(std::string_view* s) {
  while (!s->empty() && is_blank(s->front())) s->remove_prefix(1);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A hex number at the front of `s` (0x optional) that a blank ends; consumed.
bool take_hex_field(std::string_view* s, uint64_t* out) {
  if (s->size() >= 2 && (*s)[0] == '0' && ((*s)[1] == 'x' || (*s)[1] == 'X')) s->remove_prefix(2);
  uint64_t value = 0;
  size_t digits = 0;
  for (; digits < s->size() && hex_digit((*s)[digits]) >= 0; ++digits) {
    if (value >> 60) return false;  // more than 64 bits
    value = value << 4 | uint64_t(hex_digit((*s)[digits]));
  }
  if (digits == 0 || digits == s->size() || !is_blank((*s)[digits])) return false;
  s->remove_prefix(digits);
  *out = value;
  return true;
}

}  // namespace

bool PerfMap::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return false;
  read(in);
  return true;
}

void PerfMap::read(std::istream& in) {
  std::string line;
  while (std::getline(in, line)) add_line(line);
}

bool PerfMap::add_line(std::string_view line) {
  while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
  skip_blanks(&line);
  if (line.empty()) return true;
  uint64_t start = 0, size = 0;
  bool ok = take_hex_field(&line, &start);
  if (ok) {
    skip_blanks(&line);
    ok = take_hex_field(&line, &size);
  }
  if (ok) skip_blanks(&line);
  // The range must not run past the end of the address space.
  if (!ok || line.empty() || start + size < start) {
    ++malformed_lines_;
    return false;
  }
  add(start, size, line);
  return true;
}

uint32_t PerfMap::intern(std::string_view name) {
  if (auto it = name_ids_.find(name); it != name_ids_.end()) return it->second;
  const uint32_t id = uint32_t(names_.size());
  names_.emplace_back(name);
  name_ids_.emplace(names_.back(), id);
  return id;
}

void PerfMap::add(uint64_t start, uint64_t size, std::string_view name) {
  if (size == 0) return;
  const uint64_t end = start + size;
  // A range that begins before `start` and reaches into the new one keeps
  // its head, and its tail when it reaches beyond the new one.
  auto it = ranges_.lower_bound(start);
  if (it != ranges_.begin()) {
    auto before = std::prev(it);
    if (before->second.end > start) {
      const Range old = before->second;
      before->second.end = start;
      if (old.end > end) ranges_.emplace(end, old);
    }
  }
  // Ranges that begin inside the new one are covered by it, but for a tail
  // beyond its end.
  while (it != ranges_.end() && it->first < end) {
    const Range old = it->second;
    it = ranges_.erase(it);
    if (old.end > end) {
      ranges_.emplace(end, old);
      break;
    }
  }
  ranges_[start] = Range{end, intern(name)};
}

const std::string* PerfMap::find(uint64_t address) const {
  auto it = ranges_.upper_bound(address);
  if (it == ranges_.begin()) return nullptr;
  --it;
  return address < it->second.end ? &names_[it->second.name] : nullptr;
}

}  // namespace hybridprof::symbolizer
