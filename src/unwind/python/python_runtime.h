// Is this process a CPython interpreter, which version, and where are the
// pieces the stack walk needs: decided once at start, outside any handler.
#pragma once

#include <cstdint>
#include <string>

#include "unwind/python/python_layout.h"

namespace hybridprof::python {

struct PythonRuntime {
  PythonLayout layout;
  uint64_t runtime = 0;                 // &_PyRuntime
  uint64_t eval_start = 0, eval_end = 0;  // _PyEval_EvalFrameDefault's code
  // &PyCode_Type and &PyUnicode_Type (0 if not found): what the drain
  // checks an object's type against before it reads it as code or a name.
  uint64_t code_type = 0, unicode_type = 0;
  std::string version;                  // "3.11"
};

// Looks for CPython in the process (the executable or a loaded libpython).
// Returns true with `out` filled when its frames can be read. False and an
// empty `notice` when there is no Python; false with a one-line `notice`
// when there is one this build cannot read (it is then profiled natively).
bool find_python(PythonRuntime* out, std::string* notice);

}  // namespace hybridprof::python
