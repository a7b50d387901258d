// OTF2 memory callbacks that keep the memory of each event writer bounded.
//
// Without them OTF2 gives every writer a 128 MiB pool and only flushes when
// that is exhausted: thousands of threads would pin gigabytes. With them, an
// event writer owns at most `max_event_chunks` chunks; asking for one more gets
// NULL, which makes OTF2 flush the writer's chunks to its file (our pre-flush
// callback says OTF2_FLUSH) and reuse the memory. Definition writers are not
// limited: OTF2 keeps a definition file in memory until it is closed.
//
// Freed chunks go to a small cache first: OTF2 memsets the unused tail of
// every chunk it writes, and freshly mapped pages make that memset fault on
// every page (thousands of short-lived threads spent seconds in the kernel).
//
// The callbacks run inside OTF2's C code: they only use malloc/free and never
// throw. They are called from the one thread that drives the writer.
#pragma once

#include <otf2/OTF2_Callbacks.h>

#include <cstdint>

namespace hybridprof::otf2::detail {

struct ChunkBudget {
  uint32_t max_event_chunks = 1;  // per event writer, >= 1
  uint64_t bytes_in_use = 0;      // held by OTF2 buffers now, all writers and file types
  uint64_t peak_bytes = 0;
  uint64_t event_flushes = 0;     // times an event writer hit its budget

  // Reuse cache: freed chunks, all of one size (the first size seen).
  static constexpr int kCachedChunks = 4;
  uint64_t cached_size = 0;
  int cached_count = 0;
  void* cached[kCachedChunks] = {};

  ~ChunkBudget();  // frees the cache
};

// Pass a ChunkBudget* as the userData of OTF2_Archive_SetMemoryCallbacks.
const OTF2_MemoryCallbacks* bounded_memory_callbacks();

}  // namespace hybridprof::otf2::detail
