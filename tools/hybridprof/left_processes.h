// Processes the program leaves running when it ends: a forked worker that
// outlives its parent keeps writing its raw stream, and the archive must
// wait for its end. The launcher is the program's subreaper, so such
// processes become its children; it waits for those still in its session
// (a daemon, which calls setsid, is not waited for).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

namespace hybridprof::launcher {

// Before the program starts.
void become_subreaper();

// "exit N" or "signal N", from a wait status.
std::string status_text(int status);

// After the program ended: waits for the processes it left in this
// session, saying once (after a second) which ones. Their exit statuses,
// by pid.
std::map<uint64_t, std::string> wait_for_left_processes();

}  // namespace hybridprof::launcher
