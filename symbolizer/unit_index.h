// A module's compilation units by address: what the symbolizer indexes at
// a module's first opening (every unit's ranges read), kept by the symbol
// cache so that a later opening reads only the units it is asked about.
#pragma once

#include <cstdint>
#include <vector>

namespace hybridprof::symbolizer {

struct UnitRange {
  uint64_t low = 0, high = 0;  // DWARF addresses, [low, high)
  uint64_t offset = 0;         // the unit's DIE in .debug_info
};
using UnitIndex = std::vector<UnitRange>;

}  // namespace hybridprof::symbolizer
