// The regions a thread is "in" when samples are written as Enter/Leave.
//
// Viewers such as ViTE ignore CallingContextSample records but draw
// Enter/Leave as states. To serve them, each sample's call path becomes the
// set of open regions: at every sample we leave the open regions that are no
// longer on the path (innermost first) and enter the new ones (outermost
// first), all at the sample's time. That keeps the events properly nested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hybridprof::otf2 {

class RegionStack {
 public:
  // Makes the open regions equal `path` (root first). emit(region, is_enter)
  // is called for each Leave, then each Enter, in the order to write them.
  template <class Emit>
  void move_to(std::span<const uint32_t> path, Emit&& emit) {
    size_t common = 0;
    while (common < open_.size() && common < path.size() && open_[common] == path[common]) ++common;
    while (open_.size() > common) {
      emit(open_.back(), false);
      open_.pop_back();
    }
    for (size_t i = common; i < path.size(); ++i) {
      open_.push_back(path[i]);
      emit(path[i], true);
    }
  }

  template <class Emit>
  void leave_all(Emit&& emit) {
    move_to(std::span<const uint32_t>(), emit);
  }

  const std::vector<uint32_t>& open() const { return open_; }

 private:
  std::vector<uint32_t> open_;  // root first
};

}  // namespace hybridprof::otf2
