#include "finalize/archive_check.h"

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include "otf2/archive_reader.h"

namespace hybridprof::finalize {
namespace {

namespace fs = std::filesystem;

// Less room than this left after the archive: a write of it may have
// failed for want of space.
constexpr uint64_t kRoomBeyondDoubt = 64ull << 20;

}  // namespace

std::string incomplete_archive_problem(const std::string& archive_directory) {
  // A write past the file size limit fails, leaving the file at the limit.
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(archive_directory, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file(ec) && it->file_size(ec) >= limit.rlim_cur)
        return it->path().string() + " reached the file size limit (ulimit -f: " +
               std::to_string(limit.rlim_cur) + " bytes)";
    }
  }
  struct statvfs disk {};
  if (statvfs(archive_directory.c_str(), &disk) != 0 || uint64_t(disk.f_bavail) * disk.f_frsize >= kRoomBeyondDoubt)
    return {};
  try {
    otf2::ArchiveReader reader(archive_directory);
    reader.read_events([](const otf2::SampleEvent&) {});
  } catch (const std::exception& e) {
    return std::string("the disk is full, and the archive does not read back: ") + e.what();
  }
  return {};
}

}  // namespace hybridprof::finalize
