// Which traced adapters run: `hybridprof --trace mpi,openmp` or
// `--no-trace` (the launcher passes it on in HYBRIDPROF_TRACE; unset: every
// adapter present). An adapter switched off installs nothing: its
// interposers call the real function straight away and its tool
// interfaces (OMPT, CUPTI, NVTX's injection) are never taken up.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace hybridprof {

namespace env {
inline constexpr const char* kTrace = "HYBRIDPROF_TRACE";  // "mpi,openmp", "all" or "none"
}  // namespace env

// The names --trace takes, one per traced adapter (bit i of a mask: the i-th).
inline constexpr std::array<std::string_view, 5> kTracedAdapters = {"mpi", "openmp", "cuda", "nvtx", "os"};
inline constexpr uint32_t kAllTracedAdapters = (1u << kTracedAdapters.size()) - 1;

// The bit of `adapter` (one of kTracedAdapters); 0 for another name.
constexpr uint32_t trace_mask_of(std::string_view adapter) {
  for (size_t i = 0; i < kTracedAdapters.size(); ++i)
    if (kTracedAdapters[i] == adapter) return 1u << i;
  return 0;
}

// Whether `mask` has `adapter` (one of kTracedAdapters) in it.
constexpr bool mask_traces(uint32_t mask, std::string_view adapter) { return (mask & trace_mask_of(adapter)) != 0; }

// Parses a comma-separated list of adapter names, "all" or "none" into a
// mask. False with a one-line reason (naming the known adapters) when a
// name is unknown or the list is empty.
bool parse_trace_list(std::string_view text, uint32_t* mask, std::string* error);

// The list a mask stands for, as parse_trace_list reads it back.
std::string trace_list_text(uint32_t mask);

// What the archive says of the switches when some adapter is off
// ("traced: mpi,openmp; switched off (--trace): cuda,nvtx"); "" when all
// are traced.
std::string trace_switch_notice();

// Whether this process traces `adapter` (one of kTracedAdapters): read
// from HYBRIDPROF_TRACE at the first call, then kept. A malformed value
// traces nothing (the runtime refuses it at start, with the reason).
// Adapters keep the answer in a static of their own: one load a call.
bool adapter_traced(std::string_view adapter);

}  // namespace hybridprof
