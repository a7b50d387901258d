// ArchiveWriter: the OTF2 sink. Collects definitions in memory, streams events
// to disk per location, and writes the global definitions at close().
//
// Layout on disk (OTF2, POSIX substrate, no compression):
//   <directory>/<name>.otf2   anchor (archive properties live here)
//   <directory>/<name>.def    global definitions
//   <directory>/<name>/N.evt  events of location N
//   <directory>/<name>/N.def  local definitions of location N: its clock offsets, if any
//
// Rules this class keeps:
//  1. Memory stays bounded: each open location owns at most
//     Options::max_chunks_per_thread chunks of Options::event_chunk_bytes; a
//     full chunk is flushed to the location's file. end_thread() closes the
//     location's writer so short-lived threads cost nothing afterwards.
//  2. Events of a location are written in non-decreasing time; a timestamp
//     that goes backwards is clamped to the previous one and counted
//     (stats().clamped_timestamps), never dropped. The archive says so per
//     location (properties OUT_OF_ORDER_EVENTS and OUT_OF_ORDER_NS).
//  3. Definitions are deduplicated (but for processes, threads and MPI
//     communicators) and get dense refs in definition order, so parents
//     (calling contexts, system tree nodes, communicators) always precede
//     children.
//  4. Errors throw std::runtime_error (OTF2/IO failures) or
//     std::invalid_argument / std::logic_error (caller bugs: unknown refs,
//     events after end_thread or close). Nothing throws through OTF2's C code.
//  5. OTF2 keeps a location's event file open from its first flush until
//     end_thread: one file descriptor per live thread that has filled a chunk
//     (~16k samples at the default 256 KiB). End threads when they exit.
//
//  6. Collective mode (Options::collective): several processes write one
//     archive together, each with its own ArchiveWriter. The master defines
//     every process and location (marking the others' remote) and writes
//     the global definitions and the anchor; every writer makes the
//     definitions its events name directly (regions, calling contexts,
//     event sets' parameters) in the same order, so their refs agree, and
//     adopts the master's refs of its own locations (adopt()): a writer
//     holds its own locations, not the job's. Each writes the events and
//     local definitions of its own locations. The constructor and close()
//     are collective: all writers call them.
//
// Not thread-safe: one thread (the drain) drives a writer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "otf2/types.h"
#include "sink/trace_sink.h"

struct OTF2_EvtWriter_struct;  // OTF2_EvtWriter

struct OTF2_Archive_struct;

namespace hybridprof::otf2 {

class EventSetWriter;

// The OTF2 archive as a sink (sink/trace_sink.h).
class ArchiveWriter final : public sink::TraceSink {
 public:
  // What the writers of one archive share (an MPI job: its ranks).
  class Collective {
   public:
    enum class Reduce { kSum, kMin, kMax };
    virtual ~Collective() = default;
    // Gives OTF2 its collective callbacks (OTF2_Archive_SetCollectiveCallbacks).
    virtual void install(OTF2_Archive_struct* archive) = 0;
    virtual bool is_master() const = 0;
    // Element-wise over all writers; every writer gets the result.
    virtual void reduce(std::vector<uint64_t>& values, Reduce op) = 0;
    // How many writers there are, and this one's place among them (the master's: 0).
    virtual uint32_t writers() const = 0;
    virtual uint32_t writer() const = 0;
    // Every writer's `mine` at the master, in writer order (elsewhere: none).
    virtual std::vector<std::string> gather(const std::string& mine) = 0;
    // The master's parts[w] at writer w (the master passes one per writer;
    // the others pass none).
    virtual std::string scatter(const std::vector<std::string>& parts) = 0;
  };

  struct Options {
    std::string directory;      // archive directory (created); anchor is <directory>/<name>.otf2
    std::string name = "traces";
    // For viewers such as ViTE, which ignore CallingContext records and
    // resolve message peers only through COMM_LOCATIONS groups: samples are
    // written as Enter/Leave, and communicators' groups as their members'
    // locations (otf2-print then warns that a Comm names a COMM_LOCATIONS
    // group; the main archive keeps OTF2's COMM_GROUP form).
    bool enter_leave = false;
    // Memory per open location = event_chunk_bytes * max_chunks_per_thread.
    // OTF2 accepts chunks of 256 KiB .. 16 MiB.
    uint64_t event_chunk_bytes = 256 * 1024;
    uint32_t max_chunks_per_thread = 1;
    // Rule 6; not owned, must outlive the writer. Null: this writer alone.
    Collective* collective = nullptr;
    // The writers of the adapters' event sets, by set name (the finalizer's
    // registry, tools/finalize/adapter_writers.h): write_event hands each
    // event to its set's. Null: no set is known, every event is refused.
    const EventSetWriter* (*event_set_writer)(std::string_view set) = nullptr;
    // Makes the definitions every set's records may name (their
    // parameters), at the writer's start: all writers of an archive then
    // define them in the same order and agree on their refs.
    void (*define_event_sets)(ArchiveWriter&) = nullptr;
  };

  struct Stats {
    uint64_t events = 0;              // OTF2 event records written, all locations
    uint64_t clamped_timestamps = 0;  // events whose time went backwards (rule 2)
    uint64_t event_flushes = 0;       // times a location's chunks were flushed before its end
    uint64_t chunk_bytes = 0;         // OTF2 chunk memory held now
    uint64_t peak_chunk_bytes = 0;    // ... and at most so far
    uint64_t open_threads = 0;        // locations with an open event writer
  };

  // Throws std::runtime_error with the path in the message when the archive
  // exists already (anchor, .def or trace folder) or the directory cannot be
  // created or written. An existing empty directory is fine.
  explicit ArchiveWriter(const Options&);
  ~ArchiveWriter();  // closes (with a default ClockInfo) if close() was not called; never throws
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;

  // Archive property, e.g. property::kEvent. Name: "NAMESPACE::NAME" of
  // [A-Za-z0-9_], case-insensitive, read back upper-case; a bad name is a
  // std::invalid_argument. Setting a name again overwrites it; an empty value
  // removes it (OTF2 cannot store empty property values).
  void set_property(const std::string& name, const std::string& value) override;

  uint32_t define_string(std::string_view);                                   // deduplicated
  uint32_t define_source_location(const std::string& file, uint32_t line) override;    // deduplicated
  // Deduplicated by (name, file, paradigm); the first begin_line and module
  // win. `module` is the executable or library the code lives in ("" if none).
  uint32_t define_region(const std::string& name, const std::string& file, uint32_t begin_line, Paradigm,
                         const std::string& module = {}) override;
  // Deduplicated by the triple. parent must be kUndefined (root) or defined already.
  uint32_t define_calling_context(uint32_t region, uint32_t source_location /*or kUndefined*/, uint32_t parent /*or kUndefined*/) override;
  // Deduplicated by (name, time_based, period).
  uint32_t define_interrupt_generator(const std::string& name, bool time_based, uint64_t period /*ns if time based, events otherwise*/) override;
  // An OTF2 Parameter of unsigned integer values (a kernel's grid size, a
  // copy's bytes), deduplicated by name. Define it at the writer's start
  // (Options::define_event_sets), so a job's writers agree on its ref.
  uint32_t define_parameter(const std::string& name);
  // A ParameterUnsignedInt record: `parameter` had `value` at `timestamp`.
  void write_parameter(uint64_t location, uint64_t timestamp, uint32_t parameter, uint64_t value);
  // Deduplicated by (name, class, parent).
  uint32_t define_system_tree_node(const std::string& name, const std::string& class_name, uint32_t parent /*or kUndefined*/) override;
  uint32_t define_process(const std::string& name, uint32_t system_tree_node) override;  // OTF2 location group (PROCESS)
  uint64_t define_thread(uint32_t process, const std::string& name) override;             // OTF2 location (CPU_THREAD)
  uint32_t define_device(uint32_t process, const std::string& name) override;  // location group (ACCELERATOR), deduplicated by name
  uint64_t define_stream(uint32_t device, const std::string& name) override;    // OTF2 location (ACCELERATOR_STREAM)
  // Collective mode: another writer writes this location's events and local
  // definitions (events for it here are a std::logic_error).
  void set_thread_remote(uint64_t location) override;
  // Collective mode, a writer other than the master (rule 6): its own
  // locations by the master's refs, and how many interrupt generators and
  // communicators the master defined (the refs its events may name). Once,
  // before any event; define_thread and define_stream are the master's.
  void adopt(const AdoptedRefs&) override;
  void set_process_property(uint32_t process, const std::string& name, const std::string& value) override;  // string
  void set_thread_property(uint64_t location, const std::string& name, uint64_t value) override;             // uint64

  void write_sample(uint64_t location, uint64_t timestamp, uint32_t calling_context, uint32_t unwind_distance,
                    uint32_t interrupt_generator) override;
  // Traced regions (MPI calls, user ranges...) as calling contexts
  // (CallingContextEnter/Leave): the context's region is the traced one, its
  // parents the caller's sampled frames, and samples taken inside descend
  // from it (OTF2 forbids mixing plain Enter/Leave with calling-context
  // samples in one location). In enter_leave mode an enter moves the open
  // regions to the context's path like a sample does, and a leave moves them
  // to its parent's path; so nesting stays proper whatever the caller does.
  void write_context_enter(uint64_t location, uint64_t timestamp, uint32_t calling_context, uint32_t unwind_distance) override;
  void write_context_leave(uint64_t location, uint64_t timestamp, uint32_t calling_context) override;

  // An event record of an adapter's event set (MPI's: src/mpi/
  // mpi_otf2_events.cc), written as it is in both modes (but a team's fork
  // and join, which the viewers' archive leaves out): `record(writer,
  // time)` calls an OTF2_EvtWriter_* function with the location's event
  // writer and the time as the archive keeps it, and returns its
  // OTF2_ErrorCode (an error: std::runtime_error naming `what`). Refs the
  // record names are the adapter's to check first (check_comm).
  template <typename Record>  // int(OTF2_EvtWriter_struct*, uint64_t)
  void write_event_record(uint64_t location, uint64_t timestamp, const char* what, const Record& record) {
    write_event_record(
        location, timestamp, what,
        [](OTF2_EvtWriter_struct* w, uint64_t t, const void* r) -> int {
          return static_cast<int>((*static_cast<const Record*>(r))(w, t));
        },
        &record);
  }
  using EventRecordFn = int (*)(OTF2_EvtWriter_struct* writer, uint64_t time, const void* record);
  void write_event_record(uint64_t location, uint64_t timestamp, const char* what, EventRecordFn fn,
                          const void* record);
  // Hands the event to the writer of its set (Options::event_set_writer),
  // if that knows it and what it names.
  bool write_event(uint64_t location, uint64_t timestamp, std::string_view set, uint32_t kind,
                   const EventPayload& payload, const sink::EventRefs& refs) override;
  // `comm` is a define_comm / define_comm_self ref (std::invalid_argument
  // otherwise).
  void check_comm(uint32_t comm) const;

  // A paradigm's communicating locations (an OTF2 COMM_LOCATIONS group):
  // once per paradigm (again: std::logic_error), before its communicators.
  void define_comm_locations(Paradigm, const std::vector<uint64_t>& locations) override;
  // A new communicator whose members are indices in its paradigm's comm
  // locations, in communicator rank order (a COMM_GROUP group, shared by
  // communicators with equal member lists, and a Comm). Never deduplicated:
  // two with the same members are two. parent is an earlier comm or
  // kUndefined. Returns the comm ref.
  uint32_t define_comm(Paradigm, const std::string& name, const std::vector<uint32_t>& members,
                       uint32_t parent /*or kUndefined*/) override;
  // The paradigm's self communicator, one comm for all locations (a
  // COMM_SELF group of no members); idempotent.
  uint32_t define_comm_self(Paradigm, const std::string& name) override;
  // A clock offset of a location (OTF2 ClockOffset, in its local definitions):
  // at local time `time`, global time = local time + `offset`. Times must
  // increase strictly per location (std::invalid_argument otherwise); they
  // may come at any time before close(), also after end_thread().
  //
  // What readers do with them (OTF2 3.0 OTF2_EvtReader, on by default for a
  // reader that read the location's local definitions first, as ArchiveReader
  // and otf2-print do; checked in mpi_records_test.cc): with two or more
  // offsets, each event time T becomes T + the offset interpolated linearly
  // between the surrounding offsets (extrapolated from the first / last pair
  // outside them). A location with ONE offset is not corrected at all: OTF2
  // makes its intervals from consecutive pairs, and one offset makes none.
  // So give each location at least two (e.g. at its start and its end), as
  // Score-P does. The default ClockInfo range (see close) is corrected likewise.
  void add_clock_offset(uint64_t location, uint64_t time, int64_t offset, double stddev) override;
  // No more events for this location: closes its event writer to free its
  // memory (in enter_leave mode first leaves all open regions at `timestamp`).
  // Calling it again is a no-op; events after it are a std::logic_error.
  void end_thread(uint64_t location, uint64_t timestamp) override;

  // Ends all threads, writes clock properties, global definitions (with per
  // location event counts) and properties, and closes the archive. A
  // ClockInfo global_offset / trace_length left at 0 is taken from the events
  // (their times as readers will see them, i.e. after clock offsets).
  void close(const ClockInfo&) override;
  // Collective mode, when the writers agree not to finish (one of them
  // failed): closes the files, writes no definitions. Never throws; what
  // it leaves on disk is not an archive (the caller removes it).
  void abandon() override;

  const std::string& anchor_path() const { return anchor_path_; }
  Stats stats() const;

 private:
  struct Region { uint32_t name, file, begin_line; Paradigm paradigm; uint32_t description; };
  struct CallingContext { uint32_t region, source_location, parent; };
  struct SourceLocation { uint32_t file, line; };
  struct InterruptGenerator { uint32_t name; bool time_based; uint64_t period; };
  struct SystemTreeNode { uint32_t name, class_name, parent; };
  // A location group: a process, or a device it drives (`creator`).
  struct Process {
    uint32_t name, system_tree_node;
    uint32_t creator = kUndefined;  // a device's process; kUndefined: a process
  };
  struct Thread;   // per location state (archive_writer.cc)
  struct Archive;  // the OTF2 handles and their callback state

  struct TripleHash {
    size_t operator()(const std::tuple<uint32_t, uint32_t, uint64_t>& key) const noexcept;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
  };
  using TripleMap = std::unordered_map<std::tuple<uint32_t, uint32_t, uint64_t>, uint32_t, TripleHash>;

  // Rule 6: this writer defines no location and adopts its own.
  bool follower() const { return options_.collective && !options_.collective->is_master(); }
  // The location `location` (std::invalid_argument when there is none).
  Thread& thread_at(uint64_t location);
  void open_writer(Thread&, uint64_t location);
  Thread& thread_for_event(uint64_t location, uint64_t& timestamp);
  void close_thread_writer(Thread&);
  // enter_leave mode: makes the open regions the path of `calling_context` (kUndefined: none).
  void move_to_context(Thread&, uint64_t location, uint64_t timestamp, uint32_t calling_context);
  void write_global_definitions(const ClockInfo&);
  // Collective mode: event counts and time ranges from every writer.
  void gather_thread_totals();
  void write_local_definitions();
  void require_open(const char* what) const;

  Options options_;
  std::string anchor_path_;
  std::unique_ptr<Archive> archive_;

  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> string_refs_;
  std::vector<Region> regions_;
  TripleMap region_refs_;
  std::vector<CallingContext> contexts_;
  TripleMap context_refs_;
  std::vector<SourceLocation> source_locations_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> source_location_refs_;
  std::vector<InterruptGenerator> interrupt_generators_;
  TripleMap interrupt_generator_refs_;
  std::vector<uint32_t> parameters_;  // their names' string refs
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> parameter_refs_;
  std::vector<SystemTreeNode> system_tree_nodes_;
  TripleMap system_tree_node_refs_;
  std::vector<Process> processes_;
  std::vector<Thread> threads_;  // by ref; a follower's: its own, adopted
  std::unordered_map<uint64_t, size_t> adopted_;  // a follower's: threads_ index by ref
  uint32_t adopted_generators_ = 0, adopted_comms_ = 0;  // a follower's: the master's counts
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> process_properties_;  // (process, name) -> value string
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> thread_properties_;   // (location, name) -> value
  std::map<std::string, std::string> archive_properties_;

  uint64_t events_ = 0;
  uint64_t clamped_timestamps_ = 0;
  uint64_t open_threads_ = 0;
  uint64_t first_timestamp_ = UINT64_MAX;  // over all events, for the default ClockInfo
  uint64_t last_timestamp_ = 0;
  std::vector<uint32_t> path_scratch_;     // enter_leave mode: a sample's region path
  // Communicator groups of each paradigm: its locations (COMM_LOCATIONS),
  // communicator members as indices in those (COMM_GROUP, shared by equal
  // member lists), and the self group (COMM_SELF).
  enum class GroupType : uint8_t { kCommLocations, kCommMembers, kSelf };
  struct Group { GroupType type; Paradigm paradigm; std::vector<uint64_t> members; };
  struct Comm { uint32_t name, group, parent; };
  std::vector<Group> groups_;
  std::map<Paradigm, uint32_t> comm_locations_;  // each paradigm's COMM_LOCATIONS group
  std::map<std::pair<Paradigm, std::vector<uint64_t>>, uint32_t> member_group_refs_;
  std::map<Paradigm, uint32_t> comm_self_;       // each paradigm's self comm
  std::vector<Comm> comms_;
  // The paradigm's COMM_LOCATIONS group (std::logic_error when `what`
  // comes before it).
  const Group& comm_locations_of(Paradigm, const char* what) const;
  struct ClockOffset { uint64_t time; int64_t offset; double stddev; };
  std::map<uint64_t, std::vector<ClockOffset>> clock_offsets_;  // location -> offsets, in time order
  static uint64_t corrected_time(const std::vector<ClockOffset>&, uint64_t time);
};

}  // namespace hybridprof::otf2
