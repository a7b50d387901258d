// Whether an archive just written is whole. OTF2 (2.3) closes an event file
// without a word when the write of its last chunk failed (a file size
// limit, a full disk), leaving an archive that ends mid-chunk; the
// finalizer must not call that written.
#pragma once

#include <string>

namespace hybridprof::finalize {

// "" when the archive in `archive_directory` is whole, else why not. Cheap
// where no write can have failed that way: it reads the archive back only
// when the disk it is on is nearly full, and compares file sizes with the
// file size limit when there is one.
std::string incomplete_archive_problem(const std::string& archive_directory);

}  // namespace hybridprof::finalize
