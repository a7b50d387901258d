// A device location's records in time order. A device adapter appends work
// as its device reports it, and devices report out of order: CUPTI keeps an
// activity buffer per launching thread and hands each back when it is full
// or at the end, so one stream's work arrives in runs that overlap in time
// (a PyTorch step's forward kernels, launched by the Python thread, and its
// backward kernels, launched by the autograd engine's). OTF2 wants each
// location's events in time order, so the finalizer holds a device
// location's records until the location ends and then writes them sorted
// by the start of each region: a region's records (its enter, the events
// inside, its leave) stay together, in the order they came.
//
// Work that truly overlaps the work before it on its location (two clocks
// disagreeing) starts where that work ended: counted, so the finalizer can
// say so.
//
// Memory: about 200 bytes a kernel until its location ends (a device
// location ends with its process).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <variant>
#include <vector>

#include "trace/raw_format.h"

namespace hybridprof::finalize {

class DeviceRecordOrder {
 public:
  using Record = std::variant<raw::Enter, raw::Leave, raw::Event>;

  void add(uint32_t location, const Record& record);
  bool holds(uint32_t location) const { return pending_.count(location) != 0; }
  std::vector<uint32_t> locations() const;

  // Hands `location`'s records to write(const Record&) in time order and
  // forgets them; returns how many regions were moved to start where the
  // one before them ended.
  template <typename Write>
  uint64_t release(uint32_t location, Write&& write);

 private:
  struct Group {
    uint64_t begin;
    size_t first, count;
  };
  struct Pending {
    std::vector<Record> records;
    std::vector<Group> groups;
    uint32_t depth = 0;  // open regions of the last group
  };
  static uint64_t timestamp(const Record& r) {
    return std::visit([](const auto& v) { return v.timestamp_ns; }, r);
  }
  static void set_timestamp(Record& r, uint64_t t) {
    std::visit([t](auto& v) { v.timestamp_ns = t; }, r);
  }
  std::map<uint32_t, Pending> pending_;
};

template <typename Write>
uint64_t DeviceRecordOrder::release(uint32_t location, Write&& write) {
  const auto it = pending_.find(location);
  if (it == pending_.end()) return 0;
  Pending& p = it->second;
  std::stable_sort(p.groups.begin(), p.groups.end(), [](const Group& a, const Group& b) { return a.begin < b.begin; });
  uint64_t last = 0, moved = 0;
  for (const Group& g : p.groups) {
    bool shifted = false;
    for (size_t i = g.first; i < g.first + g.count; ++i) {
      Record& r = p.records[i];
      if (timestamp(r) < last) {
        set_timestamp(r, last);
        shifted = true;
      }
      last = timestamp(r);
      write(r);
    }
    moved += shifted;
  }
  pending_.erase(it);
  return moved;
}

}  // namespace hybridprof::finalize
