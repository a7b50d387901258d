// CUDA's event set ("cuda", trace/event_sets.h): what a GPU's work and
// the API call that launched it say beside their regions. The runtime side
// (activity_translator.h, api_tracer.h) writes them; the finalizer's
// writer (cuda_otf2_events.h) turns them into OTF2 parameter records;
// nothing between them knows these.
//
// Every kind's word[3] is the CUPTI correlation id of the API call that
// launched the work, the same on the call and on its work (work that names
// a driver call made inside a runtime call carries the runtime call's).
#pragma once

#include <cstdint>
#include <string_view>

#include "trace/event_payload.h"

namespace hybridprof::cuda {

inline constexpr std::string_view kEventSetName = "cuda";

// Index in the set.
enum class EventKind : uint32_t {
  kLaunch,   // on the host, at an API call's enter: wide[0] the launch key (= the correlation id)
  kKernel,   // at a kernel's start: KernelShape
  kMemcpy,   // at a copy's start: wide[0] bytes, word[0] copy kind, word[1] source, word[2] destination memory kind
  kMemset,   // at a memset's start: wide[0] bytes, word[0] value, word[1] memory kind
  kCount
};

inline constexpr uint32_t correlation(const EventPayload& p) { return p.word[3]; }

inline EventPayload launch_payload(uint32_t correlation_id) {
  EventPayload p;
  p.wide[0] = correlation_id;
  p.word[3] = correlation_id;
  return p;
}

// A kernel's launch configuration, packed into a payload.
struct KernelShape {
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint32_t registers = 0;       // per thread
  uint32_t shared_memory = 0;   // static + dynamic, bytes per block
  uint32_t correlation = 0;
};
inline EventPayload kernel_payload(const KernelShape& k) {
  EventPayload p;
  p.wide[0] = k.grid[0] | uint64_t{k.grid[1]} << 32;
  p.wide[1] = k.grid[2] | uint64_t{k.block[0]} << 32;
  p.wide[2] = k.block[1] | uint64_t{k.block[2]} << 32;
  p.word[0] = k.registers;
  p.word[1] = k.shared_memory;
  p.word[3] = k.correlation;
  return p;
}
inline KernelShape kernel_shape(const EventPayload& p) {
  KernelShape k;
  k.grid[0] = uint32_t(p.wide[0]);
  k.grid[1] = uint32_t(p.wide[0] >> 32);
  k.grid[2] = uint32_t(p.wide[1]);
  k.block[0] = uint32_t(p.wide[1] >> 32);
  k.block[1] = uint32_t(p.wide[2]);
  k.block[2] = uint32_t(p.wide[2] >> 32);
  k.registers = p.word[0];
  k.shared_memory = p.word[1];
  k.correlation = p.word[3];
  return k;
}

inline EventPayload memcpy_payload(uint64_t bytes, uint32_t copy_kind, uint32_t source, uint32_t destination,
                                   uint32_t correlation_id) {
  EventPayload p;
  p.wide[0] = bytes;
  p.word[0] = copy_kind;
  p.word[1] = source;
  p.word[2] = destination;
  p.word[3] = correlation_id;
  return p;
}
inline EventPayload memset_payload(uint64_t bytes, uint32_t value, uint32_t memory_kind, uint32_t correlation_id) {
  EventPayload p;
  p.wide[0] = bytes;
  p.word[0] = value;
  p.word[1] = memory_kind;
  p.word[3] = correlation_id;
  return p;
}

}  // namespace hybridprof::cuda
