// Archives made to hurt the reader (found by tests/fuzz/archive_reader_fuzzer):
// refused with a "corrupt archive" error, never a crash.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "otf2/archive_reader.h"
#include "test_support.h"

namespace hybridprof::otf2 {
namespace {

using testing::TempDir;

// An anchor file as OTF2 3.0 writes it, but for its property count.
std::string anchor_claiming(uint32_t properties) {
  const unsigned char start[] = {
      0x03, 0x42, 'O', 'T', 'F', '2', 0x00,            // chunk header, little endian, magic
      0x03, 0x02, 0x03, 0x00, 0x02,                    // anchor format 3, trace format 2, OTF2 3.0.2
      0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,  // event chunk bytes
      0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,  // definition chunk bytes
      0x01, 0x01,                                      // POSIX files, no compression
      0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // locations
      0x52, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // global definitions
      0x00, 'h', 'y', 'b', 'r', 'i', 'd', 'p', 'r', 'o', 'f', 0x00, 0x00,  // machine, creator, description
  };
  std::string anchor(reinterpret_cast<const char*>(start), sizeof start);
  for (int shift = 0; shift < 32; shift += 8) anchor += static_cast<char>(properties >> shift);
  anchor += std::string("A\0a\0B\0b\0C\0c\0", 12);  // three properties
  anchor += std::string(8 + 4 + 4, '\0');           // trace id, snapshots, thumbnails
  anchor += '\x02';                                 // end of file
  return anchor;
}

std::string open_error(const std::string& anchor_bytes) {
  TempDir dir;
  std::ofstream(dir / "traces.otf2", std::ios::binary) << anchor_bytes;
  try {
    ArchiveReader reader(dir.path());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "opened";
}

// OTF2 3.0.2 makes room for 2 * count properties in 32 bits: a count of
// 2^31 + 1 wraps to room for one, the next is written past it, and the
// clean-up frees what is there (otf2-print: "double free or corruption").
// A count of 0x0f000000 allocated 3.75 GiB. The reader checks the count
// against the bytes left before OTF2 reads the file (archives that count
// right are every other test's).
TEST(HostileArchive, AnchorClaimingMorePropertiesThanItHoldsIsRefused) {
  for (uint32_t count : {0x80000001u, 0x0f000000u, 0xffffffffu}) {
    const std::string error = open_error(anchor_claiming(count));
    EXPECT_NE(error.find("corrupt archive"), std::string::npos) << count << ": " << error;
    EXPECT_NE(error.find("more properties than it holds"), std::string::npos) << count << ": " << error;
  }
}

}  // namespace
}  // namespace hybridprof::otf2
