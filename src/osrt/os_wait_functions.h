// The OS-runtime adapter's functions, numbered: the list's
// (os_wait_functions.def), then the hand-written interposers' and the
// GIL's wait, which a CPython thread's condition wait is named instead.
// Shared by the runtime (region names) and the report (families).
#pragma once

#include <cstdint>
#include <string_view>

namespace hybridprof::osrt {

enum class OsWait : uint32_t {
#define OS_WAIT(name, ...) name,
#include "osrt/os_wait_functions.def"
#undef OS_WAIT
  open,
  open64,
  openat,
  openat64,
  futex,  // syscall(SYS_futex, ...) waiting
  gil,    // a CPython thread waiting for the GIL
  kCount
};
inline constexpr uint32_t kOsWaitCount = static_cast<uint32_t>(OsWait::kCount);

struct OsWaitFunction {
  const char* region;  // the region's name
  const char* family;  // the report's group
};
inline constexpr OsWaitFunction kOsWaitFunctions[kOsWaitCount] = {
#define OS_WAIT(name, family, ...) {#name, family},
#include "osrt/os_wait_functions.def"
#undef OS_WAIT
    {"open", "open"},
    {"open64", "open"},
    {"openat", "open"},
    {"openat64", "open"},
    {"futex", "futex"},
    {"waiting for the GIL", "GIL"},
};
inline constexpr const OsWaitFunction& os_wait_function(OsWait f) { return kOsWaitFunctions[static_cast<uint32_t>(f)]; }

// The family of an OS-runtime region named `region` ("lock", "read/write",
// "GIL"...), or "" for a name that is none of ours.
inline std::string_view os_wait_family(std::string_view region) {
  for (const OsWaitFunction& f : kOsWaitFunctions)
    if (region == f.region) return f.family;
  return {};
}

}  // namespace hybridprof::osrt
