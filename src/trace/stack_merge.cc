#include "trace/stack_merge.h"

namespace hybridprof {

bool merge_stacks(const uint64_t* ips, uint32_t depth, const python::PythonFrame* frames, uint32_t python_depth,
                  uint64_t eval_start, uint64_t eval_end, std::vector<MergedFrame>* out) {
  out->clear();
  uint32_t next_python = 0;  // first Python frame of the next eval call, innermost first
  bool matched = true;
  for (uint32_t i = 0; i < depth; ++i) {
    // A return address points after the call: step back into it.
    const uint64_t address = i == 0 ? ips[0] : ips[i] - 1;
    const bool eval = address >= eval_start && address < eval_end;
    if (!eval) {
      out->push_back({false, i});
      continue;
    }
    if (next_python == python_depth) {  // an eval call without Python frames left
      matched = false;
      out->push_back({false, i});
      continue;
    }
    do {
      out->push_back({true, next_python});
    } while (!(frames[next_python++].flags & python::kEndsEvalCall) && next_python < python_depth);
  }
  if (next_python < python_depth) matched = false;  // Python frames no eval frame stood for
  return matched;
}

}  // namespace hybridprof
