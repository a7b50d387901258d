// The archive side of an adapter's event set (trace/event_sets.h): the
// finalizer hands each raw event whose kind lies in a set to the writer
// registered for that set's name (tools/finalize/event_set_writers.cc), with
// the kind's index in the set. The writer knows what the payload means and
// which OTF2 record it is; the finalizer knows neither.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>

#include "otf2/archive_writer.h"
#include "trace/event_payload.h"

namespace hybridprof::otf2 {

class EventSetWriter {
 public:
  virtual ~EventSetWriter() = default;
  virtual std::string_view set_name() const = 0;

  // What the process's definitions give its events.
  struct Refs {
    const std::map<uint32_t, uint32_t>* comms = nullptr;  // archive comm refs by raw::CommDef id
  };
  // Can event `kind` be written with these refs? False for a kind this
  // build does not know (a newer producer) or a definition it names that
  // the stream lost: the finalizer skips and counts it.
  virtual bool writable(uint32_t kind, const EventPayload& payload, const Refs& refs) const = 0;
  // Writes a writable event of `location` at `timestamp` (ns).
  virtual void write(ArchiveWriter& writer, uint64_t location, uint64_t timestamp, uint32_t kind,
                     const EventPayload& payload, const Refs& refs) const = 0;
};

}  // namespace hybridprof::otf2
