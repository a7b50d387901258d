#include "otf2/otf2_error.h"

#include <otf2/otf2.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <stdexcept>

namespace hybridprof::otf2::detail {
namespace {

// A fixed buffer: the callback runs inside OTF2's C code and must not throw
// (no std::string allocation there).
thread_local char g_last_message[512];

OTF2_ErrorCode capture_error(void* /*user_data*/, const char* /*file*/, uint64_t /*line*/,
                             const char* function, OTF2_ErrorCode code,
                             const char* format, va_list args) {
  int n = std::snprintf(g_last_message, sizeof g_last_message, "%s: ",
                        function ? function : "OTF2");
  if (n < 0 || static_cast<size_t>(n) >= sizeof g_last_message) n = 0;
  if (format && *format) {
    std::vsnprintf(g_last_message + n, sizeof g_last_message - n, format, args);
  } else {
    std::snprintf(g_last_message + n, sizeof g_last_message - n, "%s",
                  OTF2_Error_GetDescription(code));
  }
  return code;
}

}  // namespace

void install_error_capture() {
  static std::once_flag once;
  std::call_once(once, [] { OTF2_Error_RegisterCallback(capture_error, nullptr); });
}

std::string take_last_otf2_message() {
  std::string message = g_last_message;
  g_last_message[0] = '\0';
  return message;
}

std::string describe(OTF2_ErrorCode status) {
  std::string text = OTF2_Error_GetName(status);
  text += ": ";
  text += OTF2_Error_GetDescription(status);
  std::string detail = take_last_otf2_message();
  if (!detail.empty()) text += " (" + detail + ")";
  return text;
}

void check(OTF2_ErrorCode status, const std::string& what) {
  if (status != OTF2_SUCCESS) throw std::runtime_error(what + ": " + describe(status));
}

}  // namespace hybridprof::otf2::detail
