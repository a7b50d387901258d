// Decompressed copies of separate debug files, kept in the symbol cache.
//
// Distributions compress their debug files (Debian's libc6-dbg, Fedora's
// debuginfo): libdw inflates every DWARF section of one at its opening,
// about 35 ms for libc's, whatever a run asks of it. A run that meets a
// function the cache does not hold yet opens the module again, so the
// cache keeps each such file once decompressed, by the module's build id,
// and later openings map the copy instead.
//
// Not the signal path: used by the finalizer after the run.
#pragma once

#include <cstdint>
#include <string>

namespace hybridprof::symbolizer {

// Where a module's decompressed debug copy goes, and how large one may be.
struct DebugCopies {
  std::string directory;  // the symbol cache's entries directory; "" : no copies
  std::string build_id;   // the module's
  uint64_t max_bytes = 0;  // a larger decompressed file is not copied
  std::string path() const { return directory + "/" + build_id + ".debug"; }
};

// An open descriptor of the copy for `copies`, or -1 when there is none.
// A copy read is marked used (the cache trims the least recently used); a
// copy that is not whole (cut short, or of another build) is removed and
// never read.
int open_debug_copy(const DebugCopies& copies);

// Given `debug_fd`, the module's separate debug file: when it holds
// compressed sections and decompressed fits in max_bytes, writes the copy
// (whole, then renamed into place: concurrent writers cannot corrupt it)
// and returns a descriptor of it; -1 otherwise (nothing compressed, too
// large, or it cannot be written), `debug_fd` untouched either way.
int make_debug_copy(int debug_fd, const DebugCopies& copies);

}  // namespace hybridprof::symbolizer
