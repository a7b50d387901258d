// Turning OTF2 error codes into exceptions with useful messages.
//
// OTF2 reports the details of a failure (which file, which errno) through its
// error callback and prints them to stderr by default; the return code alone
// says little ("OTF2_ERROR_EEXIST"). We install a callback that keeps the last
// message per thread instead, so our exceptions can carry it and nothing is
// printed behind the caller's back.
#pragma once

#include <otf2/OTF2_ErrorCodes.h>

#include <string>

namespace hybridprof::otf2::detail {

// Idempotent; process-wide (OTF2 has one error callback per process).
void install_error_capture();

// The last OTF2 error message recorded on this thread ("" if none); clears it.
std::string take_last_otf2_message();

// "<OTF2 error name>: <description>[ (<last OTF2 message>)]".
std::string describe(OTF2_ErrorCode status);

// Throws std::runtime_error(what + ": " + describe(status)) unless OTF2_SUCCESS.
void check(OTF2_ErrorCode status, const std::string& what);

}  // namespace hybridprof::otf2::detail
