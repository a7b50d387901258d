// The OTF2 side of an adapter's event set (trace/event_sets.h): the
// archive writer hands each event of a set to the writer registered for
// that set's name (tools/finalize/adapter_writers.cc, given to it as
// ArchiveWriter::Options::event_set_writer), with the kind's index in the
// set. The writer knows what the payload means and which OTF2 record it
// is; the finalizer and the archive writer know neither.
#pragma once

#include <cstdint>
#include <string_view>

#include "otf2/archive_writer.h"
#include "trace/event_payload.h"

namespace hybridprof::otf2 {

class EventSetWriter {
 public:
  virtual ~EventSetWriter() = default;
  virtual std::string_view set_name() const = 0;
  // The definitions its records name (parameters), made at every archive
  // writer's start (ArchiveWriter::Options::define_event_sets) so that a
  // job's writers agree on their refs.
  virtual void define(ArchiveWriter&) const {}

  // What the process's definitions give its events.
  using Refs = sink::EventRefs;
  // Can event `kind` be written with these refs? False for a kind this
  // build does not know (a newer producer) or a definition it names that
  // the stream lost: the finalizer skips and counts it.
  virtual bool writable(uint32_t kind, const EventPayload& payload, const Refs& refs) const = 0;
  // Writes a writable event of `location` at `timestamp` (ns).
  virtual void write(ArchiveWriter& writer, uint64_t location, uint64_t timestamp, uint32_t kind,
                     const EventPayload& payload, const Refs& refs) const = 0;
};

}  // namespace hybridprof::otf2
