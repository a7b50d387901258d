/* Prints the offsets python_layout.cc's tables hold, from a CPython
 * version's own headers (not built with the project; run by hand when a
 * table is added). With an interpreter installed under PREFIX:
 *   gcc -I PREFIX/include/python3.X -I PREFIX/include/python3.X/internal \
 *       src/unwind/python/offsets_probe.c -o probe && ./probe
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x03090000
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#else
#include "internal/pycore_pystate.h"
#endif
#include <frameobject.h>
#define P(name, expr) printf("%s=%zu\n", name, (size_t)(expr))
int main(void) {
  printf("version=%d.%d\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
  P("runtime.interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX >= 0x030B0000
  P("interp.threads_head", offsetof(PyInterpreterState, threads.head));
#else
  P("interp.threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
  P("interp.next", offsetof(PyInterpreterState, next));
  P("tstate.next", offsetof(PyThreadState, next));
  P("tstate.thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030B0000
  P("tstate.native_thread_id", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX >= 0x030D0000
  P("tstate.current_frame", offsetof(PyThreadState, current_frame));
#elif PY_VERSION_HEX >= 0x030B0000
  P("tstate.cframe", offsetof(PyThreadState, cframe));
  P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
#else
  P("tstate.frame", offsetof(PyThreadState, frame));
  P("frame.back", offsetof(PyFrameObject, f_back));
  P("frame.code", offsetof(PyFrameObject, f_code));
  P("frame.lasti", offsetof(PyFrameObject, f_lasti));
  P("code.code", offsetof(PyCodeObject, co_code));
  P("code.lnotab", offsetof(PyCodeObject,
#if PY_VERSION_HEX >= 0x030A0000
    co_linetable
#else
    co_lnotab
#endif
  ));
#endif
#if PY_VERSION_HEX >= 0x030B0000
#if PY_VERSION_HEX >= 0x030D0000
  P("iframe.code", offsetof(_PyInterpreterFrame, f_executable));
  P("iframe.instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
  P("iframe.code", offsetof(_PyInterpreterFrame, f_code));
  P("iframe.instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
  P("iframe.previous", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX >= 0x030C0000
  P("iframe.owner", offsetof(_PyInterpreterFrame, owner));
#else
  P("iframe.is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
  P("code.qualname", offsetof(PyCodeObject, co_qualname));
  P("code.linetable", offsetof(PyCodeObject, co_linetable));
  P("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
  P("code.filename", offsetof(PyCodeObject, co_filename));
  P("code.name", offsetof(PyCodeObject, co_name));
  P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
  P("unicode.ascii_data", sizeof(PyASCIIObject));
  P("unicode.compact_data", sizeof(PyCompactUnicodeObject));
  P("unicode.length", offsetof(PyASCIIObject, length));
  P("unicode.state", offsetof(PyASCIIObject, state));
  P("bytes.size", offsetof(PyVarObject, ob_size));
  P("bytes.data", offsetof(PyBytesObject, ob_sval));
  P("object.type", offsetof(PyObject, ob_type));
  return 0;
}
