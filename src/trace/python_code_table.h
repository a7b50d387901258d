// Names of the Python code objects seen in samples, read by the drain a few
// milliseconds after the sample (the code object may be freed later: what
// is needed is copied now, into a raw::PythonCode record). A code address
// keeps its id while the object there still looks the same (its name,
// file, line table and first line); memory reused by another code object
// gets a new id.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trace/raw_format.h"
#include "unwind/python/python_layout.h"

namespace hybridprof {

class PythonCodeTable {
 public:
  explicit PythonCodeTable(const python::PythonLayout& layout) : layout_(layout) {}

  // The id (>= 1) of the code object at `address`, adding a PythonCode
  // record to `out` for a new one; 0 when it cannot be read.
  uint32_t id_for(uint64_t address, std::vector<raw::PythonCode>* out);
  // Called once per drain pass: addresses are checked again after it.
  void new_pass() { checked_.clear(); }

 private:
  struct Fingerprint {
    uint64_t filename = 0, name = 0, qualname = 0, linetable = 0;
    uint32_t firstlineno = 0;
    bool operator==(const Fingerprint& o) const {
      return filename == o.filename && name == o.name && qualname == o.qualname && linetable == o.linetable &&
             firstlineno == o.firstlineno;
    }
  };
  bool fingerprint(uint64_t address, Fingerprint* f) const;
  bool read_text(uint64_t object, std::string* out) const;
  bool read_bytes(uint64_t object, std::string* out) const;

  python::PythonLayout layout_;
  struct Known {
    uint32_t id;
    Fingerprint print;
  };
  std::unordered_map<uint64_t, Known> known_;
  std::unordered_set<uint64_t> checked_;  // this pass
  uint32_t next_id_ = 1;
};

}  // namespace hybridprof
