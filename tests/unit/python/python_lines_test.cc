// Line tables decoded as CPython decodes them: for one function compiled
// by each version here (tables and expected lines printed by that version:
// co_lines(), or dis.findlinestarts before 3.10), every instruction's line.
#include "unwind/python/python_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace hybridprof::python {
namespace {

struct Case {
  const char* version;
  uint32_t firstlineno;
  std::string table;
  std::vector<std::pair<int, uint32_t>> lines;  // byte offset -> line
};

// def f(a, b):              (line 2 of the compiled source)
//     x = a + b
//     if x > 3:
//         y = [i * 2
//              for i in range(x)]
//     else:
//         y = None
//
//     return (x,
//             y)
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
    {"3.8", 2, std::string("\x00\x01\x08\x01\x08\x01\x06\x01\x06\xff\x08\x03\x04\x02\x02\x01\x02\xff", 18), {{0, 3}, {2, 3}, {4, 3}, {6, 3}, {8, 4}, {10, 4}, {12, 4}, {14, 4}, {16, 5}, {18, 5}, {20, 5}, {22, 6}, {24, 6}, {26, 6}, {28, 5}, {30, 5}, {32, 5}, {34, 5}, {36, 8}, {38, 8}, {40, 10}, {42, 11}, {44, 10}, {46, 10}}},
    {"3.9", 2, std::string("\x00\x01\x08\x01\x08\x01\x06\x01\x06\xff\x08\x03\x04\x02\x02\x01\x02\xff", 18), {{0, 3}, {2, 3}, {4, 3}, {6, 3}, {8, 4}, {10, 4}, {12, 4}, {14, 4}, {16, 5}, {18, 5}, {20, 5}, {22, 6}, {24, 6}, {26, 6}, {28, 5}, {30, 5}, {32, 5}, {34, 5}, {36, 8}, {38, 8}, {40, 10}, {42, 11}, {44, 10}, {46, 10}}},
    {"3.10", 2, std::string("\x08\x01\x08\x01\x06\x01\x06\x01\x06\xff\x02\x05\x02\x01\x04\xff\x04\xfe\x02\x02\x02\x01\x04\xff", 24), {{0, 3}, {2, 3}, {4, 3}, {6, 3}, {8, 4}, {10, 4}, {12, 4}, {14, 4}, {16, 5}, {18, 5}, {20, 5}, {22, 6}, {24, 6}, {26, 6}, {28, 5}, {30, 5}, {32, 5}, {34, 10}, {36, 11}, {38, 10}, {40, 10}, {42, 8}, {44, 8}, {46, 10}, {48, 11}, {50, 10}, {52, 10}}},
    {"3.11", 2, std::string("\x80\x00\xd8\x08\x09\x88\x41\x89\x05\x80\x41\xd8\x07\x08\x88\x31\x82\x75\x80\x75\xf0\x02\x01\x0d\x20\xf0\x00\x01\x0d\x20\xdd\x16\x1b\x98\x41\x91\x68\x94\x68\xf0\x03\x01\x0d\x20\xf1\x00\x01\x0d\x20\xf4\x00\x01\x0d\x20\x88\x01\x88\x01\xf0\x06\x00\x0d\x11\x88\x01\xe0\x0c\x0d\xd8\x0c\x0d\xf0\x03\x01\x0c\x0f\xf0\x00\x01\x05\x0f", 81), {{0, 2}, {2, 3}, {4, 3}, {6, 3}, {8, 3}, {10, 3}, {12, 4}, {14, 4}, {16, 4}, {18, 4}, {20, 4}, {22, 4}, {24, 5}, {26, 5}, {28, 6}, {30, 6}, {32, 6}, {34, 6}, {36, 6}, {38, 6}, {40, 6}, {42, 6}, {44, 6}, {46, 6}, {48, 6}, {50, 6}, {52, 6}, {54, 6}, {56, 5}, {58, 5}, {60, 5}, {62, 5}, {64, 5}, {66, 5}, {68, 5}, {70, 5}, {72, 5}, {74, 5}, {76, 8}, {78, 8}, {80, 10}, {82, 11}, {84, 10}, {86, 10}}},
    {"3.12", 2, std::string("\x80\x00\xd8\x08\x09\x88\x41\x89\x05\x80\x41\xd8\x07\x08\x88\x31\x82\x75\xe4\x16\x1b\x98\x41\x93\x68\xf6\x03\x01\x0d\x20\xd8\x11\x12\xf0\x03\x00\x0e\x0f\x90\x11\x8b\x55\xf0\x00\x01\x0d\x20\x88\x01\xf0\x00\x01\x0d\x20\xf0\x0a\x00\x0d\x0e\xd8\x0c\x0d\xf0\x03\x01\x0c\x0f\xf0\x00\x01\x05\x0f\xf0\x05\x00\x0d\x11\x88\x01\xe0\x0c\x0d\xd8\x0c\x0d\xf0\x03\x01\x0c\x0f\xf0\x00\x01\x05\x0f\xf9\xf2\x0b\x01\x0d\x20", 101), {{0, 2}, {2, 3}, {4, 3}, {6, 3}, {8, 3}, {10, 3}, {12, 4}, {14, 4}, {16, 4}, {18, 4}, {20, 4}, {22, 6}, {24, 6}, {26, 6}, {28, 6}, {30, 6}, {32, 6}, {34, 6}, {36, 6}, {38, 6}, {40, 6}, {42, 5}, {44, 5}, {46, 5}, {48, 5}, {50, 5}, {52, 5}, {54, 5}, {56, 6}, {58, 5}, {60, 5}, {62, 5}, {64, 5}, {66, 5}, {68, 5}, {70, 5}, {72, 5}, {74, 5}, {76, 10}, {78, 11}, {80, 10}, {82, 10}, {84, 8}, {86, 8}, {88, 10}, {90, 11}, {92, 10}, {94, 10}, {100, 5}, {102, 5}, {104, 5}}},
    {"3.13", 2, std::string("\x80\x00\xd8\x08\x09\x89\x05\x80\x41\xd8\x07\x08\x88\x31\x83\x75\xe4\x16\x1b\x98\x41\x94\x68\xf3\x03\x01\x0d\x20\xd9\x16\x1e\x90\x11\xf0\x03\x00\x0e\x0f\x90\x11\x8c\x55\xd9\x16\x1e\xf0\x03\x00\x09\x0a\xf0\x00\x01\x0d\x20\xf0\x0a\x00\x0d\x0e\xd8\x0c\x0d\xf0\x03\x01\x0c\x0f\xf0\x00\x01\x05\x0f\xf0\x05\x00\x0d\x11\x88\x01\xe0\x0c\x0d\xd8\x0c\x0d\xf0\x03\x01\x0c\x0f\xf0\x00\x01\x05\x0f\xf9\xf2\x0b\x01\x0d\x20", 102), {{0, 2}, {2, 3}, {4, 3}, {6, 3}, {8, 3}, {10, 4}, {12, 4}, {14, 4}, {16, 4}, {18, 4}, {20, 4}, {22, 6}, {24, 6}, {26, 6}, {28, 6}, {30, 6}, {32, 6}, {34, 6}, {36, 6}, {38, 6}, {40, 6}, {42, 6}, {44, 5}, {46, 5}, {48, 5}, {50, 5}, {52, 6}, {54, 6}, {56, 6}, {58, 5}, {60, 5}, {62, 5}, {64, 5}, {66, 5}, {68, 5}, {70, 5}, {72, 6}, {74, 6}, {76, 5}, {78, 5}, {80, 10}, {82, 11}, {84, 10}, {86, 10}, {88, 8}, {90, 8}, {92, 10}, {94, 11}, {96, 10}, {98, 10}, {104, 5}, {106, 5}, {108, 5}}}
  };
  return all;
}

LineTableFormat format_of(const std::string& version) {
  if (version == "3.8" || version == "3.9") return LineTableFormat::kLnotab;
  if (version == "3.10") return LineTableFormat::kLinetable;
  return LineTableFormat::kLocations;
}

TEST(PythonLines, EveryInstructionGetsTheLineCPythonGivesIt) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(std::string("Python ") + c.version);
    ASSERT_FALSE(c.lines.empty());
    for (const auto& [offset, line] : c.lines)
      EXPECT_EQ(line_for_offset(format_of(c.version), c.table, c.firstlineno, offset), line) << "offset " << offset;
  }
}

// The finalizer decodes a code object's table once and asks it for every
// offset its samples reached, in any order.
TEST(PythonLines, ATableDecodedOnceAnswersEveryOffsetInAnyOrder) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(std::string("Python ") + c.version);
    const LineTable table(format_of(c.version), c.table, c.firstlineno);
    for (auto it = c.lines.rbegin(); it != c.lines.rend(); ++it)
      EXPECT_EQ(table.line_at(it->first), it->second) << "offset " << it->first;
    EXPECT_EQ(table.line_at(-1), c.firstlineno);
  }
}

TEST(PythonLines, BeforeTheFirstInstructionOrWithoutATableItIsTheFirstLine) {
  for (const Case& c : cases()) {
    EXPECT_EQ(line_for_offset(format_of(c.version), c.table, c.firstlineno, -1), c.firstlineno);
    EXPECT_EQ(line_for_offset(format_of(c.version), "", c.firstlineno, 8), c.firstlineno);
  }
  // A truncated or garbage table never reads past its end.
  EXPECT_GT(line_for_offset(LineTableFormat::kLocations, std::string("\xf0", 1), 7, 4), 0u);
  EXPECT_GT(line_for_offset(LineTableFormat::kLnotab, std::string("\x02", 1), 7, 4), 0u);
}

}  // namespace
}  // namespace hybridprof::python
