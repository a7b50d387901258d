#include "unwind/python/python_lines.h"

namespace hybridprof::python {
namespace {

// 3.8, 3.9 co_lnotab: (bytecode increment, line increment as int8) pairs.
uint32_t lnotab_line(const std::string& t, uint32_t first, int64_t offset) {
  int64_t address = 0, line = first;
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    address += uint8_t(t[i]);
    if (address > offset) break;
    line += int8_t(t[i + 1]);
  }
  return line > 0 ? uint32_t(line) : first;
}

// 3.10 co_linetable: (start delta, line delta as int8; -128: no line) pairs,
// each covering [start, start + delta) bytes.
uint32_t linetable310_line(const std::string& t, uint32_t first, int64_t offset) {
  int64_t start = 0, line = first;
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    const int64_t end = start + uint8_t(t[i]);
    const int8_t delta = int8_t(t[i + 1]);
    if (delta != -128) line += delta;
    if (offset >= start && offset < end) return delta == -128 || line <= 0 ? first : uint32_t(line);
    start = end;
  }
  return line > 0 ? uint32_t(line) : first;
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

uint32_t locations_line(const std::string& t, uint32_t first, int64_t offset) {
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
    if (offset >= start && offset < end) return has_line && line > 0 ? uint32_t(line) : first;
    start = end;
  }
  return first;
}

}  // namespace

uint32_t line_for_offset(LineTableFormat format, const std::string& table, uint32_t firstlineno,
                         int64_t byte_offset) {
  if (byte_offset < 0 || table.empty()) return firstlineno;
  switch (format) {
    case LineTableFormat::kLnotab:
      return lnotab_line(table, firstlineno, byte_offset);
    case LineTableFormat::kLinetable:
      return linetable310_line(table, firstlineno, byte_offset);
    case LineTableFormat::kLocations:
      return locations_line(table, firstlineno, byte_offset);
  }
  return firstlineno;
}

}  // namespace hybridprof::python
