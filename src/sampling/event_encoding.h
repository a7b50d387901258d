// Event names → perf_event_attr fields, through libpfm4.
//
// Encoding only answers "what does this name mean"; it never asks the kernel.
// Whether this machine can count the event is the probe's question
// (plan_sampling in sampling_plan.h), so an event the CPU lacks still encodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hybridprof::sampling {

struct EventSpec {
  std::string name;          // as the user asked, e.g. "cycles", "cpu-clock", "INST_RETIRED:ANY_P"
  uint32_t type = 0;         // perf_event_attr.type
  uint64_t config = 0, config1 = 0, config2 = 0;
  bool software_clock = false;  // cpu-clock/task-clock: a count period is in ns
  uint8_t precise_ip = 0;    // from a ":precise=N" modifier (PEBS/IBS skid level)
  std::string canonical;     // libpfm's fully qualified form, for the archive's metadata;
                             // "" when encoded from the built-in table (libpfm unavailable)
};

// Encodes `name` for per-thread, user-level sampling. Accepts perf's generic
// names ("cycles", "instructions", "cpu-clock", "task-clock", "branch-misses",
// "cache-misses", "L1-dcache-load-misses", ...), libpfm names with a PMU prefix
// ("perf::PERF_COUNT_HW_CPU_CYCLES", "amd64_fam19h_zen4::RETIRED_INSTRUCTIONS"),
// PMU events with unit masks and modifiers ("INST_RETIRED:ANY_P",
// "cycles:precise=1") and raw codes ("r003c").
//
// A bare generic name always means perf's generic event (PERF_TYPE_HARDWARE /
// PERF_TYPE_SOFTWARE), as it does for the perf tool, even if a core PMU happens
// to have an event of the same name.
//
// Privilege-level modifiers cannot widen what is sampled: sampling is always
// user level (exclude_kernel, exclude_hv; perf_event_paranoid 2 allows no
// more), so a name that excludes user level (":u=0", ":k" alone) is refused.
//
// Unknown → false with *error = "unknown event 'foo' (see --list-events)".
// Thread-safe (libpfm4 is initialized once and serialized behind a mutex).
bool encode_event(const std::string& name, EventSpec* out, std::string* error);

// libpfm4's own encoding of `name`, bypassing the generic table that
// encode_event answers perf's generic names from: what that table must
// agree with (tests). False when libpfm cannot encode it.
bool encode_event_with_libpfm(const std::string& name, EventSpec* out);

// The software clock that every fallback samples (PERF_COUNT_SW_CPU_CLOCK).
// Needs no libpfm, so a fallback can never fail to encode.
EventSpec cpu_clock_event();

// "name\tshort description" entries: perf's generic names first, then the
// events and unit masks ("pmu::EVENT:UMASK") of the core PMUs libpfm detects as
// present. Only entries that encode_event accepts are listed. Uncore PMUs are
// left out: they count per socket and cannot be attached to one thread.
// Note that libpfm detects core PMUs from CPUID, so a VM that hides its PMU
// still lists them; plan_sampling then falls back (they fail to open).
std::vector<std::string> list_events();

}  // namespace hybridprof::sampling
