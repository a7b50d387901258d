#include "trace/python_code_table.h"

#include <algorithm>
#include <cstring>

#include "sigsafe/safe_read.h"

namespace hybridprof {
namespace {

constexpr uint64_t kMaxTextChars = 4096;
constexpr uint64_t kMaxLineTableBytes = 1u << 20;

void append_utf8(std::string* out, uint32_t c) {
  if (c < 0x80) {
    out->push_back(char(c));
  } else if (c < 0x800) {
    out->push_back(char(0xc0 | (c >> 6)));
    out->push_back(char(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out->push_back(char(0xe0 | (c >> 12)));
    out->push_back(char(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(char(0x80 | (c & 0x3f)));
  } else {
    out->push_back(char(0xf0 | (c >> 18)));
    out->push_back(char(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(char(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(char(0x80 | (c & 0x3f)));
  }
}

}  // namespace

bool PythonCodeTable::has_type(uint64_t object, uint64_t type) const {
  if (type == 0) return true;
  uint64_t actual = 0;
  return safe_read_value(object + layout_.object_type, &actual) && actual == type;
}

bool PythonCodeTable::fingerprint(uint64_t address, Fingerprint* f) const {
  const python::PythonLayout& l = layout_;
  return has_type(address, code_type_) && safe_read_value(address + l.code_filename, &f->filename) &&
         safe_read_value(address + l.code_name, &f->name) && safe_read_value(address + l.code_qualname, &f->qualname) &&
         safe_read_value(address + l.code_linetable, &f->linetable) &&
         safe_read_value(address + l.code_firstlineno, &f->firstlineno);
}

// A str object (compact, as code objects' names are) as UTF-8. The state
// bits are the same from 3.8 to 3.13: kind in bits 2-4, compact 5, ascii 6.
bool PythonCodeTable::read_text(uint64_t object, std::string* out) const {
  uint64_t length = 0;
  uint32_t state = 0;
  if (!has_type(object, unicode_type_) || !safe_read_value(object + layout_.unicode_length, &length) ||
      !safe_read_value(object + layout_.unicode_state, &state))
    return false;
  const uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return false;
  length = std::min(length, kMaxTextChars);
  std::string raw(length * kind, '\0');
  const uint64_t data = object + (ascii ? layout_.unicode_ascii_data : layout_.unicode_compact_data);
  if (!safe_read(data, raw.data(), raw.size())) return false;
  out->clear();
  for (uint64_t i = 0; i < length; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, raw.data() + i * kind, kind);
    append_utf8(out, c);
  }
  return true;
}

bool PythonCodeTable::read_bytes(uint64_t object, std::string* out) const {
  uint64_t size = 0;
  if (!safe_read_value(object + layout_.bytes_size, &size) || size > kMaxLineTableBytes) return false;
  out->assign(size, '\0');
  return safe_read(object + layout_.bytes_data, out->data(), size);
}

uint32_t PythonCodeTable::id_for(const python::PythonFrame& frame, std::vector<raw::PythonCode>* out) {
  if (!(frame.flags & python::kCodeStamped)) return id_at(frame.code, out);
  const std::pair<uint64_t, Stamp> key{frame.code, Stamp{frame.qualname, frame.filename, frame.firstlineno}};
  // Rule 1: named before.
  if (auto it = stamped_.find(key); it != stamped_.end()) return it->second;
  // Rule 2: the object there now is the one that ran.
  Fingerprint now;
  if (!fingerprint(frame.code, &now) || now.stamp() != key.second) return 0;  // rule 3: gone
  checked_.insert(frame.code);
  auto known = known_.find(frame.code);
  const uint32_t id = known != known_.end() && known->second.print == now ? known->second.id
                                                                          : add(frame.code, now, out);
  if (id != 0) stamped_.emplace(key, id);
  return id;
}

uint32_t PythonCodeTable::id_at(uint64_t address, std::vector<raw::PythonCode>* out) {
  auto it = known_.find(address);
  if (it != known_.end() && checked_.count(address)) return it->second.id;
  Fingerprint now;
  if (!fingerprint(address, &now)) return 0;
  checked_.insert(address);
  if (it != known_.end() && it->second.print == now) return it->second.id;
  return add(address, now, out);
}

uint32_t PythonCodeTable::add(uint64_t address, const Fingerprint& print, std::vector<raw::PythonCode>* out) {
  raw::PythonCode code;
  if (!read_text(print.qualname, &code.qualname) || !read_text(print.filename, &code.filename)) return 0;
  read_bytes(print.linetable, &code.linetable);  // without it lines are the function's first
  code.id = next_id_++;
  code.firstlineno = print.firstlineno;
  code.line_format = static_cast<uint32_t>(layout_.lines);
  const uint32_t id = code.id;
  known_[address] = {id, print};
  out->push_back(std::move(code));
  return id;
}

}  // namespace hybridprof
