// Names of code generated at run time, read from a perf map file: the
// convention perf set (/tmp/perf-PID.map) and JIT compilers follow when
// asked (oneDNN with ONEDNN_JIT_PROFILE=2, Python 3.12 -X perf, V8
// --perf-basic-prof, Java agents). One line per code range:
//
//     START SIZE NAME
//
// START and SIZE in hex, with or without 0x; NAME is the rest of the line
// and may hold spaces. A JIT appends as it generates code and reuses memory
// it freed, so where ranges overlap the later line wins.
// Used after the run, never on the signal path.
#pragma once

#include <cstdint>
#include <deque>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

namespace hybridprof::symbolizer {

class PerfMap {
 public:
  // Reads a map file line by line (a long JIT run's map can be large: it
  // is never held whole). False when it cannot be opened (missing): the
  // map stays as it was.
  bool load(const std::string& path);
  void read(std::istream& in);
  // One line of the file, without or with its line end. False (and counted
  // as malformed) when it is not "START SIZE NAME"; blank lines and empty
  // ranges (SIZE 0) name nothing and are not errors.
  bool add_line(std::string_view line);
  // [start, start + size) is `name` from now on, over whatever was there.
  void add(uint64_t start, uint64_t size, std::string_view name);

  // The name of the code at `address`; null when no range holds it.
  const std::string* find(uint64_t address) const;

  size_t ranges() const { return ranges_.size(); }  // disjoint, after overlaps were resolved
  uint64_t malformed_lines() const { return malformed_lines_; }

 private:
  struct Range {
    uint64_t end;   // one past the last byte
    uint32_t name;  // index into names_
  };
  uint32_t intern(std::string_view name);

  std::map<uint64_t, Range> ranges_;  // by start; never overlapping
  // Each name once: a JIT that regenerates a kernel names every copy alike.
  std::deque<std::string> names_;  // a deque: the index's views stay valid as it grows
  std::unordered_map<std::string_view, uint32_t> name_ids_;
  uint64_t malformed_lines_ = 0;
};

}  // namespace hybridprof::symbolizer
