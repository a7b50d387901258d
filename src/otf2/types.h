// Vocabulary shared by the OTF2 writer, the reader and their users. Kept free of
// OTF2 headers so that code which only names these types does not need them.
#pragma once

#include <cstdint>

namespace hybridprof::otf2 {

// OTF2_UNDEFINED_UINT32: "no reference" for string, region, context... refs.
inline constexpr uint32_t kUndefined = 0xffffffffu;

// Maps onto OTF2_PARADIGM_* (see paradigm.h). OTF2 3.0 has no Python paradigm:
// Python regions are stored as OTF2_PARADIGM_USER with a marker description.
// kUnknown is what the reader reports for paradigms it has no name for.
enum class Paradigm { kSampling, kCompiler, kUser, kMpi, kOpenMp, kCuda, kPython, kUnknown };

// The archive's ClockProperties. Timestamps are in ticks of `resolution` per
// second (ns by default). The writer fills global_offset / trace_length from
// the events it wrote when they are left at 0.
struct ClockInfo {
  uint64_t resolution = 1000000000;
  uint64_t global_offset = 0;          // first tick of the trace
  uint64_t trace_length = 0;           // ticks from global_offset to the last event
  uint64_t realtime_ns_at_offset = 0;  // wall clock (ns since epoch) at global_offset; 0 = unknown
};

}  // namespace hybridprof::otf2
