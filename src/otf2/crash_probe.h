// Runs a read that a third-party parser does on untrusted bytes in a forked
// child first, so that a crash inside the parser becomes an error message
// of the tool's instead of the tool's own crash.
#pragma once

#include <functional>

namespace hybridprof::otf2 {

// Runs `read` in a child process (its fatal signals at their defaults, its
// stderr discarded) and waits for it. Returns the signal that killed the
// child, or 0: it returned, threw, exited, or no child could be made (the
// caller then reads in its own process as it would have).
int signal_that_kills(const std::function<void()>& read);

}  // namespace hybridprof::otf2
