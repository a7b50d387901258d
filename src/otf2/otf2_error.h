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

// The OTF2 error messages recorded on this thread since the last call: the
// first (the cause) and the last (the failed API call); "" if none. Clears them.
std::string take_last_otf2_message();

// The recorded OTF2 messages (see above), or "<OTF2 error name>: <description>"
// when OTF2 recorded none.
std::string describe(OTF2_ErrorCode status);

// Throws std::runtime_error(what + ": " + describe(status)) unless OTF2_SUCCESS.
void check(OTF2_ErrorCode status, const std::string& what);

}  // namespace hybridprof::otf2::detail
