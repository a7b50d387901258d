// signal_that_kills: what a read does in a child, told to the parent.
#include "otf2/crash_probe.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <stdexcept>

namespace hybridprof::otf2 {
namespace {

TEST(CrashProbe, AReadThatCrashesIsToldByItsSignal) {
  EXPECT_EQ(signal_that_kills([] { std::raise(SIGSEGV); }), SIGSEGV);
  EXPECT_EQ(signal_that_kills([] { std::raise(SIGBUS); }), SIGBUS);
}

TEST(CrashProbe, AReadThatEndsOrThrowsIsNoCrash) {
  EXPECT_EQ(signal_that_kills([] {}), 0);
  EXPECT_EQ(signal_that_kills([] { throw std::runtime_error("corrupt"); }), 0);
  EXPECT_EQ(signal_that_kills([] { std::fputs("said on the child's stderr, discarded\n", stderr); }), 0);
}

TEST(CrashProbe, TheChildsWorkLeavesTheParentAsItWas) {
  int touched = 0;
  EXPECT_EQ(signal_that_kills([&] { touched = 1; }), 0);
  EXPECT_EQ(touched, 0);
}

}  // namespace
}  // namespace hybridprof::otf2
