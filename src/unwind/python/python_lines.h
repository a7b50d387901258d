// The source line of a bytecode offset, from a code object's line table as
// the interpreter stores it (copied by the drain; decoded after the run).
#pragma once

#include <cstdint>
#include <string>

#include "unwind/python/python_layout.h"

namespace hybridprof::python {

// The line of the instruction at `byte_offset` (-1: before the first: the
// function's first line). `firstlineno` when the table says nothing.
uint32_t line_for_offset(LineTableFormat format, const std::string& table, uint32_t firstlineno,
                         int64_t byte_offset);

}  // namespace hybridprof::python
