// GNU build ids as the symbol cache names files by: lower-case hex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hybridprof::symbolizer {

inline std::string build_id_hex(const void* bits, long size) {
  static const char hex[] = "0123456789abcdef";
  std::string id;
  for (long i = 0; i < size; ++i) {
    const auto b = static_cast<const uint8_t*>(bits)[i];
    id += hex[b >> 4];
    id += hex[b & 15];
  }
  return id;
}

}  // namespace hybridprof::symbolizer
