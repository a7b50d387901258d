// When the capture window was open: its changes in time order, so that
// what is reported after the fact (a device's work, delivered up to a
// flush interval later, after the window may have changed again) is
// judged by when it happened. Windows change a few times a run.
//
// Not the signal path. Not thread-safe: the drain holds its lock.
#pragma once

#include <cstdint>
#include <vector>

namespace hybridprof {

class WindowHistory {
 public:
  void reset(bool open_at_start) {
    open_at_start_ = open_at_start;
    changes_.clear();
  }
  // The window opened or closed at `ns` (times in order).
  void changed(uint64_t ns, bool open) { changes_.push_back({ns, open}); }
  // Whether the window was open at `ns`; at a change's own time, as it
  // was made then.
  bool open_at(uint64_t ns) const {
    for (auto it = changes_.rbegin(); it != changes_.rend(); ++it)
      if (it->ns <= ns) return it->open;
    return open_at_start_;
  }

 private:
  struct Change {
    uint64_t ns;
    bool open;
  };
  bool open_at_start_ = true;
  std::vector<Change> changes_;
};

}  // namespace hybridprof
