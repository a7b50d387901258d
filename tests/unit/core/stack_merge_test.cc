// Native and Python frames merged into one stack: each eval frame becomes
// the Python frames it ran; mismatches keep what can be placed.
#include "trace/stack_merge.h"

#include <gtest/gtest.h>

#include <vector>

namespace hybridprof {
namespace {

using python::kEndsEvalCall;
using python::PythonFrame;

constexpr uint64_t kEvalStart = 0x1000, kEvalEnd = 0x2000;
constexpr uint64_t kEval = 0x1500 + 1;  // a return address into the eval loop
constexpr uint64_t kOther = 0x9000;

// "n<i>" for native frame i, "p<i>" for Python frame i, innermost first.
std::vector<std::string> describe(const std::vector<MergedFrame>& merged) {
  std::vector<std::string> out;
  for (const auto& m : merged) out.push_back((m.python ? "p" : "n") + std::to_string(m.index));
  return out;
}

TEST(StackMerge, EachEvalFrameBecomesThePythonFramesOfItsCall) {
  // C leaf <- eval <- C call <- eval <- main; Python: [p0 p1] [p2].
  const uint64_t ips[] = {kOther, kEval, kOther, kEval, kOther};
  const PythonFrame py[] = {{1, 0, 0}, {2, 0, kEndsEvalCall}, {3, 0, kEndsEvalCall}};
  std::vector<MergedFrame> merged;
  EXPECT_TRUE(merge_stacks(ips, 5, py, 3, kEvalStart, kEvalEnd, &merged));
  EXPECT_EQ(describe(merged), (std::vector<std::string>{"n0", "p0", "p1", "n2", "p2", "n4"}));
}

TEST(StackMerge, AnInterruptedEvalFrameIsMatchedByItsOwnAddress) {
  // The sample hit the eval loop itself: ips[0] is not a return address.
  const uint64_t ips[] = {kEvalStart, kOther};
  const PythonFrame py[] = {{1, 0, kEndsEvalCall}};
  std::vector<MergedFrame> merged;
  EXPECT_TRUE(merge_stacks(ips, 2, py, 1, kEvalStart, kEvalEnd, &merged));
  EXPECT_EQ(describe(merged), (std::vector<std::string>{"p0", "n1"}));
}

TEST(StackMerge, MismatchesKeepWhatCanBePlacedAndSaySo) {
  std::vector<MergedFrame> merged;
  // Two eval frames, one Python call: the outer eval frame stays native.
  const uint64_t two_evals[] = {kEval, kEval, kOther};
  const PythonFrame one_call[] = {{1, 0, 0}, {2, 0, kEndsEvalCall}};
  EXPECT_FALSE(merge_stacks(two_evals, 3, one_call, 2, kEvalStart, kEvalEnd, &merged));
  EXPECT_EQ(describe(merged), (std::vector<std::string>{"p0", "p1", "n1", "n2"}));
  // One eval frame (the stack was cut), two Python calls: the outer call is left out.
  const uint64_t one_eval[] = {kOther, kEval};
  const PythonFrame two_calls[] = {{1, 0, kEndsEvalCall}, {2, 0, kEndsEvalCall}};
  EXPECT_FALSE(merge_stacks(one_eval, 2, two_calls, 2, kEvalStart, kEvalEnd, &merged));
  EXPECT_EQ(describe(merged), (std::vector<std::string>{"n0", "p0"}));
  // No Python frames: the native stack as it is.
  EXPECT_FALSE(merge_stacks(one_eval, 2, nullptr, 0, kEvalStart, kEvalEnd, &merged));
  EXPECT_EQ(describe(merged), (std::vector<std::string>{"n0", "n1"}));
}

}  // namespace
}  // namespace hybridprof
