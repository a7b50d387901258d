// Names of the Python code objects seen in samples, read by the drain
// within a flush interval of the sample (the code object may be freed
// later: what is needed is copied now, into a raw::PythonCode record).
//
// A short-lived code object (a module's body, run once by an import) may
// already be gone when the drain reads it, and its memory may hold another
// object. The handler stamps each frame with what the code object held
// (python::PythonFrame: co_qualname, co_filename, co_firstlineno), and
// wakes the drain early when a thread shows code it has not shown before
// (python::SeenCodes), so:
//   1. a code address and stamp named once keep their id (nothing is read;
//      samples taken before the address was reused keep the old name);
//   2. otherwise the object now at the address is read, and named if it
//      still carries the sample's stamp;
//   3. otherwise the code is gone: 0, never the name of whatever took its
//      memory (its name strings may be gone as well, and a reused str
//      cannot be told from the original).
// Unstamped frames (the code object could not be read in the handler) use
// the address alone, as long as the object there looks the same (its name,
// file, line table and first line); memory reused by another code object
// gets a new id. Objects are read as code or str only if their type says so.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <unordered_set>
#include <vector>

#include "trace/raw_format.h"
#include "unwind/python/python_layout.h"
#include "unwind/python/python_stack.h"

namespace hybridprof {

class PythonCodeTable {
 public:
  // `code_type` and `unicode_type`: &PyCode_Type and &PyUnicode_Type, the
  // ob_type an object read must have to be taken for one (0: not checked).
  explicit PythonCodeTable(const python::PythonLayout& layout, uint64_t code_type = 0, uint64_t unicode_type = 0)
      : layout_(layout), code_type_(code_type), unicode_type_(unicode_type) {}

  // The id (>= 1) of the code object a sampled frame ran, adding a
  // PythonCode record to `out` for a new one; 0 when it cannot be named.
  uint32_t id_for(const python::PythonFrame& frame, std::vector<raw::PythonCode>* out);
  // Called once per drain pass: addresses are checked again after it.
  void new_pass() { checked_.clear(); }

 private:
  struct Stamp {
    uint64_t qualname = 0, filename = 0;
    int32_t firstlineno = 0;
    auto operator<=>(const Stamp& o) const = default;
  };
  struct Fingerprint {
    uint64_t filename = 0, name = 0, qualname = 0, linetable = 0;
    uint32_t firstlineno = 0;
    bool operator==(const Fingerprint& o) const {
      return filename == o.filename && name == o.name && qualname == o.qualname && linetable == o.linetable &&
             firstlineno == o.firstlineno;
    }
    Stamp stamp() const { return {qualname, filename, int32_t(firstlineno)}; }
  };
  uint32_t id_at(uint64_t address, std::vector<raw::PythonCode>* out);
  uint32_t add(uint64_t address, const Fingerprint& print, std::vector<raw::PythonCode>* out);
  bool fingerprint(uint64_t address, Fingerprint* f) const;
  bool has_type(uint64_t object, uint64_t type) const;
  bool read_text(uint64_t object, std::string* out) const;
  bool read_bytes(uint64_t object, std::string* out) const;

  python::PythonLayout layout_;
  uint64_t code_type_ = 0, unicode_type_ = 0;
  struct Known {
    uint32_t id;
    Fingerprint print;
  };
  std::unordered_map<uint64_t, Known> known_;  // the latest object named at an address
  std::unordered_set<uint64_t> checked_;       // this pass
  std::map<std::pair<uint64_t, Stamp>, uint32_t> stamped_;  // (address, stamp) -> id
  uint32_t next_id_ = 1;
};

}  // namespace hybridprof
