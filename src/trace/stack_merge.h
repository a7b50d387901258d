// One stack from two: the native frames the unwinder found and the Python
// frames read from the interpreter. Each native evaluation frame
// (_PyEval_EvalFrameDefault) is replaced by the Python frames it was
// running, the way py-spy --native merges; C extension frames stay where
// they are, under the Python function that called them.
#pragma once

#include <cstdint>
#include <vector>

#include "unwind/python/python_stack.h"

namespace hybridprof {

struct MergedFrame {
  bool python = false;
  uint32_t index = 0;  // into the native IPs or the Python frames
};

// ips: innermost first, ips[0] the interrupted instruction, the others
// return addresses. Python frames innermost first, with kEndsEvalCall on the
// outermost frame of each native eval call. Eval calls are matched from the
// innermost out (the outer end is where a cut stack loses frames). Returns
// false when the counts disagree (the sample still gets every frame that
// could be placed: extra eval frames stay native, extra Python frames are
// left out).
bool merge_stacks(const uint64_t* ips, uint32_t depth, const python::PythonFrame* frames, uint32_t python_depth,
                  uint64_t eval_start, uint64_t eval_end, std::vector<MergedFrame>* innermost_first);

}  // namespace hybridprof
