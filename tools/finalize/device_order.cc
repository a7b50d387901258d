#include "finalize/device_order.h"

namespace hybridprof::finalize {

void DeviceRecordOrder::add(uint32_t location, const Record& record) {
  Pending& p = pending_[location];
  // A region's records form one group: from an enter at depth 0 to its leave.
  // A record outside every region is a group of its own.
  if (p.groups.empty() || p.depth == 0) p.groups.push_back({timestamp(record), p.records.size(), 0});
  p.records.push_back(record);
  ++p.groups.back().count;
  if (std::holds_alternative<raw::Enter>(record))
    ++p.depth;
  else if (std::holds_alternative<raw::Leave>(record) && p.depth > 0)
    --p.depth;
}

std::vector<uint32_t> DeviceRecordOrder::locations() const {
  std::vector<uint32_t> out;
  for (const auto& [location, p] : pending_) out.push_back(location);
  return out;
}

}  // namespace hybridprof::finalize
