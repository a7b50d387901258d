#include "trace/window_history.h"

#include <gtest/gtest.h>

namespace hybridprof {
namespace {

// A time is in the window as the last change at or before it left it;
// before any change, as the run started.
TEST(WindowHistory, ATimeIsAsTheLastChangeAtOrBeforeItLeftTheWindow) {
  WindowHistory h;
  h.reset(/*open_at_start=*/false);
  EXPECT_FALSE(h.open_at(5));
  h.changed(10, true);
  h.changed(20, false);
  h.changed(30, true);
  EXPECT_FALSE(h.open_at(9));
  EXPECT_TRUE(h.open_at(10));
  EXPECT_TRUE(h.open_at(19));
  EXPECT_FALSE(h.open_at(20));
  EXPECT_FALSE(h.open_at(29));
  EXPECT_TRUE(h.open_at(1000));
  h.reset(/*open_at_start=*/true);
  EXPECT_TRUE(h.open_at(15));
}

}  // namespace
}  // namespace hybridprof
