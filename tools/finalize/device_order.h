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
// Work that overlaps the work before it on its location starts where that
// work ended. A microsecond or so is usual (a GPU's copy and compute
// engines stamp their work apart); the finalizer says so past kNoticeable.
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

  // Regions moved to start where the one before them ended, and by how
  // much at most.
  struct Moved {
    uint64_t regions = 0, max_ns = 0;
    uint64_t noticeable = 0;  // moved by more than kNoticeableNs
    void add(const Moved& m) {
      regions += m.regions;
      noticeable += m.noticeable;
      max_ns = std::max(max_ns, m.max_ns);
    }
  };
  static constexpr uint64_t kNoticeableNs = 5000;

  // Hands `location`'s records to write(const Record&) in time order and
  // forgets them.
  template <typename Write>
  Moved release(uint32_t location, Write&& write);

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
DeviceRecordOrder::Moved DeviceRecordOrder::release(uint32_t location, Write&& write) {
  Moved moved;
  const auto it = pending_.find(location);
  if (it == pending_.end()) return moved;
  Pending& p = it->second;
  std::stable_sort(p.groups.begin(), p.groups.end(), [](const Group& a, const Group& b) { return a.begin < b.begin; });
  uint64_t last = 0;
  for (const Group& g : p.groups) {
    uint64_t by = 0;  // how far the region's start moved
    for (size_t i = g.first; i < g.first + g.count; ++i) {
      Record& r = p.records[i];
      if (timestamp(r) < last) {
        if (i == g.first) by = last - timestamp(r);
        set_timestamp(r, last);
      }
      last = timestamp(r);
      write(r);
    }
    if (by > 0) {
      ++moved.regions;
      moved.noticeable += by > kNoticeableNs;
      moved.max_ns = std::max(moved.max_ns, by);
    }
  }
  pending_.erase(it);
  return moved;
}

}  // namespace hybridprof::finalize
