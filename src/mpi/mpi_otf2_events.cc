#include "mpi/mpi_otf2_events.h"

#include <otf2/otf2.h>

#include "mpi/mpi_events.h"

namespace hybridprof::mpi {
namespace {

static_assert(otf2::kRootNone == OTF2_COLLECTIVE_ROOT_NONE);

// An OTF2 record that says nothing but its request.
struct RequestRecord {
  EventKind kind;
  const char* name;
  OTF2_ErrorCode (*write)(OTF2_EvtWriter*, OTF2_AttributeList*, OTF2_TimeStamp, uint64_t);
};
constexpr RequestRecord kRequestRecords[] = {
    {EventKind::kIsendComplete, "OTF2_EvtWriter_MpiIsendComplete", OTF2_EvtWriter_MpiIsendComplete},
    {EventKind::kIrecvRequest, "OTF2_EvtWriter_MpiIrecvRequest", OTF2_EvtWriter_MpiIrecvRequest},
    {EventKind::kRequestTest, "OTF2_EvtWriter_MpiRequestTest", OTF2_EvtWriter_MpiRequestTest},
    {EventKind::kRequestCancelled, "OTF2_EvtWriter_MpiRequestCancelled", OTF2_EvtWriter_MpiRequestCancelled},
    {EventKind::kNonBlockingCollectiveRequest, "OTF2_EvtWriter_NonBlockingCollectiveRequest",
     OTF2_EvtWriter_NonBlockingCollectiveRequest},
};
const RequestRecord* request_record(EventKind k) {
  for (const RequestRecord& r : kRequestRecords)
    if (r.kind == k) return &r;
  return nullptr;
}

class MpiEventWriter final : public otf2::EventSetWriter {
 public:
  std::string_view set_name() const override { return kEventSetName; }

  bool writable(uint32_t kind, const EventPayload& payload, const Refs& refs) const override {
    if (kind >= static_cast<uint32_t>(EventKind::kCount)) return false;
    return !names_comm(EventKind(kind)) || refs.definitions->count(fields_of(payload).comm) != 0;
  }

  void write(otf2::ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t kind, const EventPayload& payload,
             const Refs& refs) const override {
    const EventFields f = fields_of(payload);
    const EventKind k = EventKind(kind);
    uint32_t comm = otf2::kUndefined;
    if (names_comm(k)) w.check_comm(comm = refs.definitions->at(f.comm));
    const auto op = static_cast<OTF2_CollectiveOp>(f.op);
    // One OTF2 call per kind (those of a request alone from the table
    // above); `record` gets the location's event writer and the time as
    // the archive keeps it.
    auto put = [&](const char* what, auto record) { w.write_event_record(loc, t, what, record); };
    switch (k) {
      case EventKind::kSend:
        put("OTF2_EvtWriter_MpiSend", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_MpiSend(e, nullptr, time, f.peer, comm, f.tag, f.sent);
        });
        break;
      case EventKind::kRecv:
        put("OTF2_EvtWriter_MpiRecv", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_MpiRecv(e, nullptr, time, f.peer, comm, f.tag, f.received);
        });
        break;
      case EventKind::kIsend:
        put("OTF2_EvtWriter_MpiIsend", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_MpiIsend(e, nullptr, time, f.peer, comm, f.tag, f.sent, f.request);
        });
        break;
      case EventKind::kIrecv:
        put("OTF2_EvtWriter_MpiIrecv", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_MpiIrecv(e, nullptr, time, f.peer, comm, f.tag, f.received, f.request);
        });
        break;
      case EventKind::kCollectiveBegin:
        put("OTF2_EvtWriter_MpiCollectiveBegin", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_MpiCollectiveBegin(e, nullptr, time);
        });
        break;
      case EventKind::kCollectiveEnd:
        put("OTF2_EvtWriter_MpiCollectiveEnd", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_MpiCollectiveEnd(e, nullptr, time, op, comm, f.peer, f.sent, f.received);
        });
        break;
      case EventKind::kNonBlockingCollectiveComplete:
        put("OTF2_EvtWriter_NonBlockingCollectiveComplete", [&](OTF2_EvtWriter* e, uint64_t time) {
          return OTF2_EvtWriter_NonBlockingCollectiveComplete(e, nullptr, time, op, comm, f.peer, f.sent, f.received,
                                                              f.request);
        });
        break;
      default:  // the kinds whose record is their request alone
        if (const RequestRecord* r = request_record(k))
          put(r->name, [&](OTF2_EvtWriter* e, uint64_t time) { return r->write(e, nullptr, time, f.request); });
        break;
    }
  }
};

}  // namespace

const otf2::EventSetWriter& otf2_event_writer() {
  static const MpiEventWriter writer;
  return writer;
}

}  // namespace hybridprof::mpi
