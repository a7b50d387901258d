// The source line of a bytecode offset, from a code object's line table as
// the interpreter stores it (copied by the drain; decoded after the run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "unwind/python/python_layout.h"

namespace hybridprof::python {

// A code object's line table decoded once: the line of any instruction
// by a binary search (a process's samples reach one function at many
// offsets).
class LineTable {
 public:
  LineTable(LineTableFormat format, const std::string& table, uint32_t firstlineno);
  // The line of the instruction at `byte_offset` (-1: before the first:
  // the function's first line). `firstlineno` when the table says nothing.
  uint32_t line_at(int64_t byte_offset) const;

 private:
  struct Range {
    int64_t start, end;  // bytes [start, end)
    uint32_t line;
  };
  uint32_t first_;
  uint32_t past_end_;  // the line of an offset no range holds
  std::vector<Range> ranges_;
};

// One lookup: LineTable(format, table, firstlineno).line_at(byte_offset).
// The line of the instruction at `byte_offset` (-1: before the first: the
// function's first line). `firstlineno` when the table says nothing.
uint32_t line_for_offset(LineTableFormat format, const std::string& table, uint32_t firstlineno,
                         int64_t byte_offset);

}  // namespace hybridprof::python
