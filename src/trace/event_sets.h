// Kinds of traced events (EventRecord, a region record's carried event,
// raw::Event::kind), one numbering per process shared by every adapter:
// each registers its set of kinds under a name and gets the block
// base .. base + kinds - 1. The drain defines every set in the raw stream
// (raw::EventSetDef) before the first event that could use it, so the
// finalizer hands each event to the writer registered for its set's name,
// with the kind's index in the set; nothing between the adapter and that
// writer knows a set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/raw_format.h"

namespace hybridprof {

// A region record carries its event's kind in 8 bits (records.h).
inline constexpr uint32_t kMaxEventKinds = 256;
inline constexpr size_t kMaxEventSets = 8;
inline constexpr size_t kMaxEventSetName = 31;
inline constexpr uint32_t kNoEventSet = ~0u;

// The base of the set `name` (at most kMaxEventSetName bytes) of `kinds`
// kinds: a fresh block, or the block given before to the same name with
// the same number of kinds. kNoEventSet when the name is too long, known
// with another number of kinds, or the numbering is full. Thread-safe;
// not for signal handlers.
uint32_t register_event_set(std::string_view name, uint32_t kinds);

// The sets registered so far, in registration order (each one's index in
// it never changes), and how many there are (lock-free).
std::vector<raw::EventSetDef> registered_event_sets();
size_t registered_event_set_count();

}  // namespace hybridprof
