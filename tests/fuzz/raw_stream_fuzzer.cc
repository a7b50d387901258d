// libFuzzer target: the raw stream decoder (trace/raw_stream.h), as the
// finalizer reads a stream a killed or hostile process left. The first
// byte picks what the rest is:
//   even: a whole stream file (magic, chunk headers, checksums);
//   odd:  one chunk's payload, decoded as if its checksum had matched, so
//         that mutations reach the record decoder instead of failing the
//         checksum.
// Besides crashes and sanitizer reports, a record breaking a promise the
// decoder makes to its readers (the checks below) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <variant>

#include "trace/raw_stream.h"

namespace {

using namespace hybridprof::raw;

void require(bool promise) {
  if (!promise) std::abort();
}

// What the decoder refuses rather than delivers.
void check(const Record& record) {
  std::visit(
      [](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, Sample>) {
          require(r.weight >= 1 && r.weight <= kMaxSampleWeight);
        }
        if constexpr (std::is_same_v<T, LocationBegin>) {
          require(static_cast<uint32_t>(r.kind) <= kLastLocationKind);
        }
        if constexpr (std::is_same_v<T, JobRank>) {
          require(r.rank < r.size);
        }
        if constexpr (std::is_same_v<T, Sample> || std::is_same_v<T, LocationBegin> ||
                      std::is_same_v<T, LocationEnd> || std::is_same_v<T, Enter> || std::is_same_v<T, Leave> ||
                      std::is_same_v<T, Event>) {
          require(r.location < kMaxLocations);
        }
      },
      record);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool payload_only = data[0] & 1;
  ++data, --size;
  if (payload_only) {
    decode_chunk(data, size, check, nullptr);
  } else {
    ReadSummary summary;
    std::string error;
    read_stream(data, size, "fuzz input", check, &summary, &error);
  }
  return 0;
}
