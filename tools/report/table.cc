#include "table.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace hybridprof::report {

size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char ch : text) width += (ch & 0xC0) != 0x80;  // count non-continuation bytes
  return width;
}

std::string truncate_display(const std::string& text, size_t width) {
  if (display_width(text) <= width || width == 0) return text;
  std::string cut;
  size_t shown = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool starts_character = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts_character && ++shown > width - 1) break;
    cut += text[i];
  }
  return cut + "…";
}

std::string percent(uint64_t part, uint64_t total) {
  if (total == 0) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(total));
  return buffer;
}

void Table::print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) widths[c] = display_width(columns_[c].title);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < columns_.size() && c < row.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(widths[c] - display_width(cell), ' ');
      line += columns_[c].align == Align::kRight ? pad + cell : cell + pad;
      if (c + 1 < columns_.size()) line += "  ";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  std::vector<std::string> titles;
  for (const auto& column : columns_) titles.push_back(column.title);
  print_row(titles);
  for (const auto& row : rows_) print_row(row);
}

std::string time_text(uint64_t ns) {
  char buf[32];
  if (ns >= 1000000000ull)
    std::snprintf(buf, sizeof buf, "%.3f s", double(ns) / 1e9);
  else if (ns >= 1000000ull)
    std::snprintf(buf, sizeof buf, "%.3f ms", double(ns) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3f us", double(ns) / 1e3);
  return buf;
}

}  // namespace hybridprof::report
