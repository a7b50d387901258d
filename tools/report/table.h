// Aligned text columns: numbers right-aligned, text left-aligned, two spaces
// between columns, widths in characters (UTF-8 aware).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace hybridprof::report {

class Table {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  // Each line starts with `indent`; trailing blanks are trimmed.
  void print(std::ostream&, const std::string& indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Characters, not bytes, so "…" and "→" count once.
size_t display_width(const std::string&);
// At most `width` characters, ending in "…" when cut.
std::string truncate_display(const std::string&, size_t width);
// "12.5%"; "-" when the total is 0.
std::string percent(uint64_t part, uint64_t total);
// "1.250 ms": seconds, milliseconds or microseconds, three decimals.
std::string time_text(uint64_t ns);

}  // namespace hybridprof::report
