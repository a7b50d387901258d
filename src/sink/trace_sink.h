// Where the finalizer writes a run: the archive model (OTF2's: a system
// tree, processes and their locations, regions and calling contexts,
// samples, traced regions entered and left, adapters' events) as calls on
// a sink. The OTF2 archive writer is one sink (otf2/archive_writer.h); a
// RecordingSink (recording_sink.h) keeps what it is given, for tests.
//
// Refs a define_* call returns are the sink's own; the caller hands them
// back in later calls, never mixing two sinks' refs. A sink's errors are
// exceptions (the finalizer's caller reports them); none crosses C code.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "otf2/types.h"
#include "trace/event_payload.h"

namespace hybridprof::sink {

using otf2::ClockInfo;
using otf2::Paradigm;

// What a process's definitions give its events: the sink refs of the
// definitions of the event's set (definition_set_writer.h), by the id the
// process gave them.
struct EventRefs {
  const std::map<uint32_t, uint32_t>* definitions = nullptr;
};

// Communicators of a paradigm, as OTF2 models them: what an adapter's
// definition writer (definition_set_writer.h) may define.
class CommSink {
 public:
  virtual ~CommSink() = default;
  // The locations that take part in `paradigm`'s communication (MPI: each
  // world rank's), once per paradigm and before its communicators, whose
  // members are indices in this list.
  virtual void define_comm_locations(Paradigm, const std::vector<uint64_t>& locations) = 0;
  // A communicator of `paradigm`: members in communicator rank order.
  // parent: an earlier communicator, or otf2::kUndefined.
  virtual uint32_t define_comm(Paradigm, const std::string& name, const std::vector<uint32_t>& members,
                               uint32_t parent) = 0;
  // The paradigm's communicator of each location alone (MPI_COMM_SELF),
  // one for all of them: defined once, the same ref after.
  virtual uint32_t define_comm_self(Paradigm, const std::string& name) = 0;
};

class TraceSink : public CommSink {
 public:
  virtual ~TraceSink() = default;

  // Archive-wide "NAMESPACE::NAME" properties (otf2/property_names.h).
  virtual void set_property(const std::string& name, const std::string& value) = 0;

  // Where the run happened and who ran it. parent: a node, or otf2::kUndefined.
  virtual uint32_t define_system_tree_node(const std::string& name, const std::string& class_name,
                                           uint32_t parent) = 0;
  virtual uint32_t define_process(const std::string& name, uint32_t system_tree_node) = 0;
  // A location of `process`: its events come in time order.
  virtual uint64_t define_thread(uint32_t process, const std::string& name) = 0;
  // A device `process` drives (a GPU), once per name, and a stream of work
  // on it: a location whose events (kernels, copies) the device timed.
  virtual uint32_t define_device(uint32_t process, const std::string& name) = 0;
  virtual uint64_t define_stream(uint32_t device, const std::string& name) = 0;
  // Another writer of a collective archive writes this location's events.
  virtual void set_thread_remote(uint64_t location) = 0;
  // A writer of a collective archive other than its master, which defines
  // the processes: the refs the master gave this writer's own locations
  // and what its events name. (Not every sink writes collective archives:
  // those throw std::logic_error.)
  struct AdoptedRefs {
    std::vector<std::pair<uint64_t, bool>> locations;  // each ref, and whether a device stream
    uint32_t interrupt_generators = 0;                 // refs below it are defined
    uint32_t comms = 0;
  };
  virtual void adopt(const AdoptedRefs&) { throw std::logic_error("this sink defines every location itself"); }
  virtual void set_process_property(uint32_t process, const std::string& name, const std::string& value) = 0;
  virtual void set_thread_property(uint64_t location, const std::string& name, uint64_t value) = 0;
  // At local `time`, global time = local time + `offset`.
  virtual void add_clock_offset(uint64_t location, uint64_t time, int64_t offset, double stddev) = 0;

  // Code: regions (functions, traced calls), source lines, and the calling
  // contexts they make. parent / source_location: otf2::kUndefined for none.
  virtual uint32_t define_region(const std::string& name, const std::string& file, uint32_t begin_line, Paradigm,
                                 const std::string& module) = 0;
  virtual uint32_t define_source_location(const std::string& file, uint32_t line) = 0;
  virtual uint32_t define_calling_context(uint32_t region, uint32_t source_location, uint32_t parent) = 0;
  virtual uint32_t define_interrupt_generator(const std::string& name, bool time_based, uint64_t period) = 0;

  // A sample whose stack is `calling_context`, `unwind_distance` frames deep.
  virtual void write_sample(uint64_t location, uint64_t timestamp, uint32_t calling_context,
                            uint32_t unwind_distance, uint32_t interrupt_generator) = 0;
  // A traced region (an MPI call...) entered and left, as the calling
  // context whose region it is.
  virtual void write_context_enter(uint64_t location, uint64_t timestamp, uint32_t calling_context,
                                   uint32_t unwind_distance) = 0;
  virtual void write_context_leave(uint64_t location, uint64_t timestamp, uint32_t calling_context) = 0;
  // An adapter's event: kind `kind` of the event set named `set`
  // (trace/event_sets.h), its payload as the adapter wrote it. False when
  // this sink cannot write it (a set it does not know, a definition the
  // event names that the stream lost): the finalizer skips and counts it.
  virtual bool write_event(uint64_t location, uint64_t timestamp, std::string_view set, uint32_t kind,
                           const EventPayload& payload, const EventRefs& refs) = 0;

  // No more events for `location`.
  virtual void end_thread(uint64_t location, uint64_t timestamp) = 0;
  // Everything written: the archive is complete.
  virtual void close(const ClockInfo&) = 0;
  // Writers of a collective archive that agree not to finish: leave what
  // cannot be an archive. Never throws.
  virtual void abandon() = 0;
};

}  // namespace hybridprof::sink
