#include "osrt/os_wait_otf2_events.h"

#include <string>

#include "osrt/os_wait_arguments.h"

namespace hybridprof::osrt {
namespace {

// Parameter names, as the report and the exports read them.
constexpr const char* kFd = "fd";
constexpr const char* kBytesAsked = "bytes asked";
constexpr const char* kResult = "result";
constexpr const char* kErrno = "errno";
constexpr const char* kDescriptors = "descriptors";
constexpr const char* kTimeoutNs = "timeout ns";
constexpr const char* kPid = "pid";
constexpr const char* kAll[] = {kFd, kBytesAsked, kResult, kErrno, kDescriptors, kTimeoutNs, kPid};

class OsWaitEventWriter final : public otf2::EventSetWriter {
 public:
  std::string_view set_name() const override { return kEventSetName; }

  void define(otf2::ArchiveWriter& w) const override {
    for (const char* name : kAll) w.define_parameter(name);
  }

  bool writable(uint32_t kind, const EventPayload&, const Refs&) const override {
    return kind < static_cast<uint32_t>(Shape::kCount);
  }

  void write(otf2::ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t kind, const EventPayload& p,
             const Refs&) const override {
    const auto put = [&](const char* name, uint64_t value) { w.write_parameter(loc, t, w.define_parameter(name), value); };
    const auto result = static_cast<int64_t>(p.wide[1]);
    switch (static_cast<Shape>(kind)) {
      case Shape::kIo:
        if (static_cast<int32_t>(p.word[0]) >= 0) put(kFd, p.word[0]);
        if (p.wide[0] != 0) put(kBytesAsked, p.wide[0]);
        break;
      case Shape::kPoll:
        put(kDescriptors, p.word[0]);
        if (p.wide[0] != kNoTimeout) put(kTimeoutNs, p.wide[0]);
        break;
      case Shape::kTimeout:
        if (p.wide[0] != kNoTimeout) put(kTimeoutNs, p.wide[0]);
        break;
      case Shape::kChild:
        if (static_cast<int32_t>(p.word[0]) > 0) put(kPid, p.word[0]);
        break;
      case Shape::kResult:
      case Shape::kCount:
        break;
    }
    if (kind != static_cast<uint32_t>(Shape::kTimeout) && result >= 0) put(kResult, uint64_t(result));
    if (p.word[1] != 0) put(kErrno, p.word[1]);
  }
};

}  // namespace

const otf2::EventSetWriter& otf2_event_writer() {
  static const OsWaitEventWriter writer;
  return writer;
}

}  // namespace hybridprof::osrt
