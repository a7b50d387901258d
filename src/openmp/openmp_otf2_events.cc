#include "openmp/openmp_otf2_events.h"

#include <otf2/otf2.h>

#include "openmp/openmp_events.h"

namespace hybridprof::openmp {
namespace {

class OpenMpEventWriter final : public otf2::EventSetWriter {
 public:
  std::string_view set_name() const override { return kEventSetName; }

  bool writable(uint32_t kind, const EventPayload&, const Refs&) const override {
    return kind < static_cast<uint32_t>(EventKind::kCount);
  }

  void write(otf2::ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t kind, const EventPayload& payload,
             const Refs&) const override {
    switch (EventKind(kind)) {
      case EventKind::kFork:
        w.write_event_record(loc, t, "OTF2_EvtWriter_ThreadFork", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_ThreadFork(e, nullptr, time, OTF2_PARADIGM_OPENMP, requested_threads(payload));
        });
        break;
      case EventKind::kJoin:
        w.write_event_record(loc, t, "OTF2_EvtWriter_ThreadJoin", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_ThreadJoin(e, nullptr, time, OTF2_PARADIGM_OPENMP);
        });
        break;
      case EventKind::kCount:
        break;
    }
  }
};

}  // namespace

const otf2::EventSetWriter& otf2_event_writer() {
  static const OpenMpEventWriter writer;
  return writer;
}

}  // namespace hybridprof::openmp
