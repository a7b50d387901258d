#include "otf2/otf2_error.h"

#include <otf2/otf2.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <stdexcept>

#include "common/per_thread.h"

namespace hybridprof::otf2::detail {
namespace {

// OTF2 reports one failure as a chain of messages, innermost (the cause)
// first, outermost (the API call) last; the middle is plumbing. Keep the
// first and the last. Fixed buffers: the callback runs inside OTF2's C code
// and must not throw (no std::string allocation there). Per thread, made at
// its first message (PerThread: the runtime's static TLS stays small).
struct Messages {
  char first[512];
  char last[512];
  bool have_first = false;
  int count = 0;
};

// "<function>: <message>", plus " [<code description>]" for the cause:
// messages such as "POSIX: '<path>'" carry the reason only in the code.
void format_message(char* out, size_t size, const char* function, OTF2_ErrorCode code, const char* format,
                    va_list args, bool with_code) {
  int n = std::snprintf(out, size, "%s: ", function ? function : "OTF2");
  if (n < 0 || static_cast<size_t>(n) >= size) n = 0;
  if (format && *format) {
    n += std::max(0, std::vsnprintf(out + n, size - n, format, args));
    if (with_code && static_cast<size_t>(n) < size) {
      std::snprintf(out + n, size - n, " [%s]", OTF2_Error_GetDescription(code));
    }
  } else {
    std::snprintf(out + n, size - n, "%s", OTF2_Error_GetDescription(code));
  }
}

OTF2_ErrorCode capture_error(void* /*user_data*/, const char* /*file*/, uint64_t /*line*/, const char* function,
                             OTF2_ErrorCode code, const char* format, va_list args) {
  Messages* m = PerThread<Messages>::get();
  if (m == nullptr) return code;
  if (!m->have_first) {
    format_message(m->first, sizeof m->first, function, code, format, args, true);
    m->have_first = true;
  } else {
    format_message(m->last, sizeof m->last, function, code, format, args, false);
  }
  ++m->count;
  return code;
}

}  // namespace

void install_error_capture() {
  static std::once_flag once;
  std::call_once(once, [] { OTF2_Error_RegisterCallback(capture_error, nullptr); });
}

std::string take_last_otf2_message() {
  std::string message;
  Messages* m = PerThread<Messages>::peek();
  if (m == nullptr) return message;
  if (m->have_first) message = m->first;
  if (m->count > 1) message += (m->count > 2 ? " <- ... <- " : " <- ") + std::string(m->last);
  m->have_first = false;
  m->count = 0;
  return message;
}

std::string describe(OTF2_ErrorCode status) {
  std::string detail = take_last_otf2_message();
  if (!detail.empty()) return detail;  // already names the cause and its code
  return std::string(OTF2_Error_GetName(status)) + ": " + OTF2_Error_GetDescription(status);
}

void check(OTF2_ErrorCode status, const std::string& what) {
  if (status != OTF2_SUCCESS) throw std::runtime_error(what + ": " + describe(status));
}

}  // namespace hybridprof::otf2::detail
