// Work a device did (a kernel, a copy) and the host call that launched it:
// the drain hangs each piece of work under the calling context of its
// launch, so a GPU kernel's time sits below the host call path (Python
// frames included) that launched it, as HPCToolkit attributes GPU work.
//
// The host side: a traced enter with kRegionLaunchesDeviceWork carries an
// event whose payload's wide[0] is the launch's key (CUPTI's correlation
// id); the drain remembers key -> the enter's context node. The device
// side: the adapter appends work naming the key (Drain::append_device_work)
// when the device reports it, on a thread of its own and later than the
// launch. The launch may still be in its thread's ring then, so work waits
// in this queue until a drain pass has converted it; work whose launch
// never comes (an untraced thread, a lost record) goes under its region
// alone after two passes.
//
// Not the signal path. Not thread-safe: the drain holds its lock.
#pragma once

#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <unordered_map>

#include "trace/event_payload.h"

namespace hybridprof {

struct DeviceWork {
  uint32_t location = 0;  // Drain::add_location's
  uint64_t begin_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC
  uint32_t region = 0;
  uint64_t launch = 0;  // the launching enter's key; 0: none known
  // An event of the adapter's at begin_ns (the kernel's grid, the copy's
  // bytes), when has_event.
  bool has_event = false;
  uint32_t event_kind = 0;
  EventPayload event;
};

class DeviceWorkQueue {
 public:
  static constexpr uint32_t kNoLaunch = 0xffffffffu;
  // Launch keys remembered at most (the oldest are forgotten first): far
  // more than a device has in flight.
  static constexpr size_t kMaxLaunches = 1u << 16;

  void remember_launch(uint64_t key, uint32_t node) {
    if (launches_.insert_or_assign(key, node).second) order_.push_back(key);
    while (order_.size() > kMaxLaunches) {
      launches_.erase(order_.front());
      order_.pop_front();
    }
  }
  void push(const DeviceWork& w, uint64_t pass) { pending_[w.location].push_back({w, pass}); }
  bool empty() const { return pending_.empty(); }

  // Hands each piece of work that is ready at drain pass `pass` (or all of
  // it, with `all`) to write(work, launch node or kNoLaunch), each
  // location's in the order appended. `location` limits it to one location.
  template <typename Write>
  void pop_ready(uint64_t pass, bool all, Write&& write, const uint32_t* location = nullptr) {
    for (auto it = location ? pending_.find(*location) : pending_.begin(); it != pending_.end();) {
      auto& queue = it->second;
      while (!queue.empty()) {
        const Pending& p = queue.front();
        uint32_t node = kNoLaunch;
        if (p.work.launch != 0) {
          const auto known = launches_.find(p.work.launch);
          if (known != launches_.end())
            node = known->second;
          else if (!all && pass <= p.pass + 1)
            break;  // its launch may be converted by the next pass
        }
        write(p.work, node);
        queue.pop_front();
      }
      it = queue.empty() ? pending_.erase(it) : std::next(it);
      if (location) break;
    }
  }

  void clear() {
    pending_.clear();
    launches_.clear();
    order_.clear();
  }

 private:
  struct Pending {
    DeviceWork work;
    uint64_t pass;  // the drain's pass count when appended
  };
  std::map<uint32_t, std::deque<Pending>> pending_;  // by location
  std::unordered_map<uint64_t, uint32_t> launches_;
  std::deque<uint64_t> order_;
};

}  // namespace hybridprof
