#include "otf2/chunk_budget.h"

#include <cstdlib>

namespace hybridprof::otf2::detail {
namespace {

// The chunks one OTF2 buffer currently holds (OTF2's perBufferData).
struct BufferChunks {
  uint64_t chunk_size;  // free_all is not told the size; all chunks of a buffer share it
  uint32_t count;
  uint32_t capacity;
  void** chunks;
};

void* take_chunk(ChunkBudget& budget, uint64_t size) {
  if (budget.cached_count > 0 && budget.cached_size == size) return budget.cached[--budget.cached_count];
  return std::malloc(size);
}

void give_back_chunk(ChunkBudget& budget, void* chunk, uint64_t size) {
  if (budget.cached_size == 0) budget.cached_size = size;
  if (budget.cached_size == size && budget.cached_count < ChunkBudget::kCachedChunks) {
    budget.cached[budget.cached_count++] = chunk;
  } else {
    std::free(chunk);
  }
}

void* allocate_chunk(void* user_data, OTF2_FileType file_type, OTF2_LocationRef /*location*/,
                     void** per_buffer_data, uint64_t chunk_size) {
  auto* budget = static_cast<ChunkBudget*>(user_data);
  auto* held = static_cast<BufferChunks*>(*per_buffer_data);
  if (held == nullptr) {
    held = static_cast<BufferChunks*>(std::calloc(1, sizeof(BufferChunks)));
    if (held == nullptr) return nullptr;
    *per_buffer_data = held;
  }
  if (file_type == OTF2_FILETYPE_EVENTS && held->count >= budget->max_event_chunks) {
    ++budget->event_flushes;
    return nullptr;  // OTF2 flushes this writer, calls free_all, then asks again
  }
  if (held->count == held->capacity) {
    uint32_t capacity = held->capacity ? held->capacity * 2 : 4;
    void* grown = std::realloc(held->chunks, capacity * sizeof(void*));
    if (grown == nullptr) return nullptr;
    held->chunks = static_cast<void**>(grown);
    held->capacity = capacity;
  }
  void* chunk = take_chunk(*budget, chunk_size);
  if (chunk == nullptr) return nullptr;
  held->chunks[held->count++] = chunk;
  held->chunk_size = chunk_size;
  budget->bytes_in_use += chunk_size;
  if (budget->bytes_in_use > budget->peak_bytes) budget->peak_bytes = budget->bytes_in_use;
  return chunk;
}

void free_all_chunks(void* user_data, OTF2_FileType /*file_type*/, OTF2_LocationRef /*location*/,
                     void** per_buffer_data, bool final) {
  auto* budget = static_cast<ChunkBudget*>(user_data);
  auto* held = static_cast<BufferChunks*>(*per_buffer_data);
  if (held == nullptr) return;
  for (uint32_t i = 0; i < held->count; ++i) give_back_chunk(*budget, held->chunks[i], held->chunk_size);
  budget->bytes_in_use -= held->chunk_size * held->count;
  held->count = 0;
  if (final) {  // the buffer itself goes away
    std::free(held->chunks);
    std::free(held);
    *per_buffer_data = nullptr;
  }
}

const OTF2_MemoryCallbacks kCallbacks = {allocate_chunk, free_all_chunks};

}  // namespace

ChunkBudget::~ChunkBudget() {
  for (int i = 0; i < cached_count; ++i) std::free(cached[i]);
}

const OTF2_MemoryCallbacks* bounded_memory_callbacks() { return &kCallbacks; }

}  // namespace hybridprof::otf2::detail
