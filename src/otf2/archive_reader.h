// ArchiveReader: reads an OTF2 archive back (definitions at construction,
// events on demand). Used by hybridprof-report and the integration tests;
// it reads any OTF2 archive, not only ours, but only keeps what we write.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "otf2/types.h"

namespace hybridprof::otf2 {

struct RegionInfo {
  std::string name, file;
  std::string module;  // executable or library of native code, "" if unknown
  uint32_t line = 0;
  Paradigm paradigm = Paradigm::kUnknown;
};
struct ContextInfo {
  uint32_t region;
  uint32_t source_location;  // kUndefined ok
  uint32_t parent;           // kUndefined = root
};
struct SourceLocationInfo {
  std::string file;
  uint32_t line;
};
// A location: a CPU thread, or a stream of a device its process drives.
struct ThreadInfo {
  uint64_t location;
  std::string name;
  uint32_t process;  // the process (a stream's: the one driving its device)
  std::map<std::string, uint64_t> properties;  // integer LocationProperty values
  uint64_t events;                             // as counted by the writer
  uint32_t device = kUndefined;                // a stream's device (Archive::devices); kUndefined: a thread
};
struct DeviceInfo {
  std::string name;
  uint32_t process;  // the process that drives it
};
struct ProcessInfo {
  uint32_t ref;
  std::string name;
  std::map<std::string, std::string> properties;  // LocationGroupProperty values, as text
  uint32_t system_tree_node = kUndefined;
};
struct SystemTreeNodeInfo {
  std::string name, class_name;
  uint32_t parent;  // kUndefined = root
};

struct CommInfo {
  std::string name;
  Paradigm paradigm = Paradigm::kUnknown;
  // Members in communicator rank order, as indices in the paradigm's comm
  // locations (Archive::comm_locations: MPI world ranks); empty for a self
  // communicator.
  std::vector<uint32_t> members;
  uint32_t parent = kUndefined;
  bool self = false;                  // MPI_COMM_SELF: each location alone
};

struct Archive {  // everything but events
  std::string anchor;                             // path of the .otf2 file read
  std::map<std::string, std::string> properties;  // archive properties
  ClockInfo clock;
  std::map<uint32_t, RegionInfo> regions;
  std::map<uint32_t, ContextInfo> contexts;
  std::map<uint32_t, SourceLocationInfo> source_locations;
  std::map<uint64_t, ThreadInfo> threads;
  std::map<uint32_t, ProcessInfo> processes;
  std::map<uint32_t, DeviceInfo> devices;  // location groups of streams, by their ref
  std::map<uint32_t, SystemTreeNodeInfo> system_tree_nodes;
  std::map<uint32_t, std::string> interrupt_generators;
  std::map<uint32_t, CommInfo> comms;
  std::map<uint32_t, std::string> parameters;  // names of event parameters, by their ref
  // Each paradigm's communicating locations (MPI: the location of each
  // world rank, in rank order).
  std::map<Paradigm, std::vector<uint64_t>> comm_locations;

  // Root-first list of contexts ending with `context`. Stops at an unknown
  // parent or a cycle (a corrupt archive), so it always terminates.
  std::vector<uint32_t> context_path(uint32_t context) const;
};

struct SampleEvent {
  uint64_t location, timestamp;
  uint32_t context;
};
// Enter/Leave, and CallingContextEnter/Leave (then `context` is set).
struct RegionEvent {
  uint64_t location, timestamp;
  uint32_t region;
  bool enter;
  uint32_t context = kUndefined;
};

enum class MpiEventKind {
  kSend, kRecv, kIsend, kIsendComplete, kIrecvRequest, kIrecv, kRequestTest, kRequestCancelled,
  kCollectiveBegin, kCollectiveEnd, kNonBlockingCollectiveRequest, kNonBlockingCollectiveComplete
};
struct MpiEvent {
  uint64_t location = 0, timestamp = 0;
  MpiEventKind kind = MpiEventKind::kSend;
  uint32_t peer = 0;   // receiver, sender, or a collective's root (kRootNone)
  uint32_t comm = kUndefined;
  uint32_t tag = 0;
  uint64_t bytes = 0;  // message length
  uint64_t sent = 0, received = 0;  // collectives
  CollectiveOp op = CollectiveOp::kBarrier;
  uint64_t request = 0;
};

// A ParameterUnsignedInt record: a named value at a point of a location's
// timeline, as an event's fields are written (inside its region).
struct ParameterEvent {
  uint64_t location = 0, timestamp = 0;
  uint32_t parameter = kUndefined;  // Archive::parameters
  uint64_t value = 0;
};

// A thread team's fork or join (OTF2 ThreadFork / ThreadJoin), on the
// thread that forks it.
struct ForkJoinEvent {
  uint64_t location = 0, timestamp = 0;
  bool fork = true;
  Paradigm paradigm = Paradigm::kUnknown;
  uint32_t requested_threads = 0;  // a fork's
};

class ArchiveReader {
 public:
  // Opens <anchor>.otf2, or a directory containing traces.otf2 (or exactly
  // one *.otf2). Throws std::runtime_error("no OTF2 archive at <path>") or
  // ("corrupt archive: <OTF2 error>").
  explicit ArchiveReader(const std::string& path_or_directory);
  ~ArchiveReader();
  ArchiveReader(const ArchiveReader&) = delete;
  ArchiveReader& operator=(const ArchiveReader&) = delete;

  const Archive& archive() const;

  // Streams all events of all locations, location by location (each in time
  // order), so only one event file is open at a time whatever the number of
  // threads. Timestamps are global ones: OTF2 applies the location's clock
  // offsets (see ArchiveWriter::add_clock_offset), as other OTF2 readers do.
  // on_region gets Enter/Leave and CallingContextEnter/Leave; on_mpi the MPI
  // records; on_fork_join ThreadFork/ThreadJoin; on_parameter
  // ParameterUnsignedInt records. Exceptions from the callbacks stop the reading and propagate.
  // Throws std::runtime_error("corrupt archive: ...") on unreadable events.
  void read_events(const std::function<void(const SampleEvent&)>& on_sample,
                   const std::function<void(const RegionEvent&)>& on_region = {},
                   const std::function<void(const MpiEvent&)>& on_mpi = {},
                   const std::function<void(const ForkJoinEvent&)>& on_fork_join = {},
                   const std::function<void(const ParameterEvent&)>& on_parameter = {});

  struct Handle;  // the open OTF2 reader (archive_reader.cc)

 private:
  std::unique_ptr<Handle> handle_;
  Archive archive_;
};

}  // namespace hybridprof::otf2
