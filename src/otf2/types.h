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
// kMeasurement: the profiler's own work that the program waited for (a
// full ring written out), as Score-P marks its buffer flushes.
// kOsRuntime: blocking C library calls (waits on locks, I/O, sleeps; the
// OS-runtime adapter, src/osrt).
enum class Paradigm { kSampling, kCompiler, kUser, kMpi, kOpenMp, kCuda, kPython, kMeasurement, kUnknown, kOsRuntime };

// MPI collective operations, numbered as OTF2_CollectiveOp (static_asserts
// in archive_writer.cc). The last six are OTF2's one-sided / handle
// operations (e.g. MPI_Win_create as kCreateHandle).
enum class CollectiveOp : uint8_t {
  kBarrier = 0, kBcast, kGather, kGatherv, kScatter, kScatterv, kAllgather, kAllgatherv,
  kAlltoall, kAlltoallv, kAlltoallw, kAllreduce, kReduce, kReduceScatter, kScan, kExscan,
  kReduceScatterBlock, kCreateHandle, kDestroyHandle, kAllocate, kDeallocate, kCreateHandleAndAllocate,
  kDestroyHandleAndDeallocate,
};
// "barrier", "bcast", ..., "destroy_handle_and_deallocate"; "unknown" for a
// value outside the enum (an archive from a newer OTF2).
const char* collective_op_name(CollectiveOp);
// Root of a collective that has none (OTF2_COLLECTIVE_ROOT_NONE).
inline constexpr uint32_t kRootNone = 0xffffffffu;

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
