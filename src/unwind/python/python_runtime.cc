#include "unwind/python/python_runtime.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstring>

namespace hybridprof::python {
namespace {

void* symbol(const char* name) { return dlsym(RTLD_DEFAULT, name); }

// Major and minor of the running interpreter: Py_Version (3.11+, a hex
// version number), else the text of Py_GetVersion() ("3.8.18 (default...").
bool interpreter_version(int* major, int* minor) {
  if (const auto* hex = static_cast<const unsigned long*>(symbol("Py_Version"))) {
    *major = int((*hex >> 24) & 0xff);
    *minor = int((*hex >> 16) & 0xff);
    return true;
  }
  using GetVersion = const char* (*)();
  if (auto get = reinterpret_cast<GetVersion>(symbol("Py_GetVersion")))
    return std::sscanf(get(), "%d.%d", major, minor) == 2;
  return false;
}

bool code_range(const char* name, uint64_t* start, uint64_t* end) {
  void* address = symbol(name);
  Dl_info info;
  void* entry = nullptr;
  if (address == nullptr || dladdr1(address, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return false;
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  *start = reinterpret_cast<uint64_t>(info.dli_saddr);
  *end = *start + sym->st_size;
  return sym->st_size > 0;
}

}  // namespace

bool find_python(PythonRuntime* out, std::string* notice) {
  notice->clear();
  void* runtime = symbol("_PyRuntime");
  if (runtime == nullptr) return false;  // not Python, or one that hides its symbols
  int major = 0, minor = 0;
  if (!interpreter_version(&major, &minor)) {
    *notice = "Python found, but not its version; Python frames are not shown";
    return false;
  }
  out->version = std::to_string(major) + "." + std::to_string(minor);
  // Built-in tables up to 3.12; 3.13 and 3.14 the interpreter's own offsets
  // (a later version's are refused: their layout is not known here),
  // read in place (_PyRuntime is initialized data).
  std::string why = "no offset table";
  if (const PythonLayout* l = builtin_layout(major, minor)) {
    out->layout = *l;
  } else if (!(major == 3 && minor >= 13 &&
               layout_from_debug_offsets(static_cast<const uint8_t*>(runtime), kDebugOffsetsBytes, major, minor,
                                         &out->layout, &why))) {
    *notice = "Python " + out->version + " is not supported (" + why + "); profiling natively";
    return false;
  }
  if (!code_range("_PyEval_EvalFrameDefault", &out->eval_start, &out->eval_end)) {
    *notice = "Python " + out->version + ": _PyEval_EvalFrameDefault not found; profiling natively";
    return false;
  }
  out->runtime = reinterpret_cast<uint64_t>(runtime);
  out->code_type = reinterpret_cast<uint64_t>(symbol("PyCode_Type"));
  out->unicode_type = reinterpret_cast<uint64_t>(symbol("PyUnicode_Type"));
  return true;
}

}  // namespace hybridprof::python
