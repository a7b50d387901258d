#include "trace/region_ids.h"

#include <atomic>

namespace hybridprof {

uint32_t reserve_region_ids(uint32_t count) {
  // 0 is left unused, so a zeroed field never names a region.
  static std::atomic<uint32_t> next{1};
  return next.fetch_add(count, std::memory_order_relaxed);
}

}  // namespace hybridprof
