// OpenMP's event set ("openmp", trace/event_sets.h): the team's fork and
// join on the thread that meets a parallel region (OTF2's ThreadFork and
// ThreadJoin of paradigm OpenMP). The runtime side (openmp_regions.h)
// writes them; the finalizer's writer (openmp_otf2_events.h) turns them
// into OTF2 records. Nothing between them knows these.
#pragma once

#include <cstdint>
#include <string_view>

#include "trace/event_payload.h"

namespace hybridprof::openmp {

inline constexpr std::string_view kEventSetName = "openmp";

// The region a team's worker is in between parallel regions, waiting in
// the runtime for work (openmp_regions.h, worker_idle); the report sums it
// per thread.
inline constexpr const char* kIdleRegionName = "OpenMP idle (worker waiting for work)";

// Index in the set.
enum class EventKind : uint32_t {
  kFork,  // word[0]: the number of threads the region asked for
  kJoin,  // nothing
  kCount
};

inline void set_fork_payload(EventPayload& p, uint32_t requested_threads) { p.word[0] = requested_threads; }
inline EventPayload fork_payload(uint32_t requested_threads) {
  EventPayload p;
  set_fork_payload(p, requested_threads);
  return p;
}
inline uint32_t requested_threads(const EventPayload& p) { return p.word[0]; }

}  // namespace hybridprof::openmp
