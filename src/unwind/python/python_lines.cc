#include "unwind/python/python_lines.h"

#include <algorithm>
#include <cstdint>

namespace hybridprof::python {
namespace {

uint32_t line_or(int64_t line, uint32_t first) { return line > 0 ? uint32_t(line) : first; }

// Each decoder below calls add(start, end, line) for the table's byte
// ranges in order, and returns the line of an offset past all of them.

// 3.8, 3.9 co_lnotab: (bytecode increment, line increment as int8) pairs;
// an offset's line is the sum of the increments at or before it.
template <typename Add>
uint32_t lnotab_ranges(const std::string& t, uint32_t first, Add add) {
  int64_t address = 0, line = first, from = 0;
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    const int64_t next = address + uint8_t(t[i]);
    if (next > from) {
      add(from, next, line_or(line, first));
      from = next;
    }
    address = next;
    line += int8_t(t[i + 1]);
  }
  add(from, INT64_MAX, line_or(line, first));
  return first;
}

// 3.10 co_linetable: (start delta, line delta as int8; -128: no line) pairs,
// each covering [start, start + delta) bytes. Past the end: the last line.
template <typename Add>
uint32_t linetable310_ranges(const std::string& t, uint32_t first, Add add) {
  int64_t start = 0, line = first;
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    const int64_t end = start + uint8_t(t[i]);
    const int8_t delta = int8_t(t[i + 1]);
    if (delta != -128) line += delta;
    add(start, end, delta == -128 ? first : line_or(line, first));
    start = end;
  }
  return line_or(line, first);
}

// 3.11+ location table (Objects/locations.md): entries of one byte
// 1cccclll (code c, length l+1 code units) and varint payloads of 6-bit
// chunks (bit 6 = more).
class LocationReader {
 public:
  explicit LocationReader(const std::string& t) : t_(t) {}
  bool done() const { return i_ >= t_.size(); }
  uint8_t byte() { return i_ < t_.size() ? uint8_t(t_[i_++]) : 0; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; !done() && shift < 64; shift += 6) {
      const uint8_t b = byte();
      v |= uint64_t(b & 0x3f) << shift;
      if (!(b & 0x40)) break;
    }
    return v;
  }
  int64_t signed_varint() {
    const uint64_t v = varint();
    return (v & 1) ? -int64_t(v >> 1) : int64_t(v >> 1);
  }
  void skip_to_next_entry() {
    while (!done() && !(uint8_t(t_[i_]) & 0x80)) ++i_;
  }

 private:
  const std::string& t_;
  size_t i_ = 0;
};

template <typename Add>
uint32_t locations_ranges(const std::string& t, uint32_t first, Add add) {
  LocationReader r(t);
  int64_t line = first, start = 0;
  while (!r.done()) {
    const uint8_t head = r.byte();
    if (!(head & 0x80)) continue;  // not an entry start: resynchronize
    const int code = (head >> 3) & 15;
    const int64_t end = start + 2 * ((head & 7) + 1);
    bool has_line = true;
    if (code == 15) {
      has_line = false;  // no location
    } else if (code == 14) {
      line += r.signed_varint();  // long form: line delta, end line, columns
      r.varint();
      r.varint();
      r.varint();
    } else if (code == 13) {
      line += r.signed_varint();  // no columns
    } else if (code >= 10) {
      line += code - 10;  // one-line forms: two column bytes
      r.byte();
      r.byte();
    } else {
      r.byte();  // short forms: same line, one column byte
    }
    r.skip_to_next_entry();
    add(start, end, has_line ? line_or(line, first) : first);
    start = end;
  }
  return first;
}

}  // namespace

LineTable::LineTable(LineTableFormat format, const std::string& table, uint32_t firstlineno)
    : first_(firstlineno), past_end_(firstlineno) {
  if (table.empty()) return;
  // Ranges come in order and touch end to end; empty ones answer nothing.
  const auto add = [&](int64_t start, int64_t end, uint32_t line) {
    if (end > start) ranges_.push_back({start, end, line});
  };
  switch (format) {
    case LineTableFormat::kLnotab:
      past_end_ = lnotab_ranges(table, firstlineno, add);
      break;
    case LineTableFormat::kLinetable:
      past_end_ = linetable310_ranges(table, firstlineno, add);
      break;
    case LineTableFormat::kLocations:
      past_end_ = locations_ranges(table, firstlineno, add);
      break;
  }
}

uint32_t LineTable::line_at(int64_t byte_offset) const {
  if (byte_offset < 0) return first_;
  const auto after = std::upper_bound(ranges_.begin(), ranges_.end(), byte_offset,
                                      [](int64_t offset, const Range& r) { return offset < r.start; });
  if (after == ranges_.begin() || byte_offset >= std::prev(after)->end) return past_end_;
  return std::prev(after)->line;
}

uint32_t line_for_offset(LineTableFormat format, const std::string& table, uint32_t firstlineno,
                         int64_t byte_offset) {
  return LineTable(format, table, firstlineno).line_at(byte_offset);
}

}  // namespace hybridprof::python
