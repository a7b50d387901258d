// Region ids of the raw stream (raw::RegionDef, RegionRecord::region), one
// numbering per process shared by every event source: each source reserves
// a block for its regions when it first needs them, so no source knows
// another's numbers. Thread-safe; ids are never reused.
#pragma once

#include <cstdint>

namespace hybridprof {

// The first of `count` consecutive fresh region ids.
uint32_t reserve_region_ids(uint32_t count);

}  // namespace hybridprof
