// ArchiveWriter: the OTF2 sink. Collects definitions in memory, streams events
// to disk per location, and writes the global definitions at close().
//
// Layout on disk (OTF2, POSIX substrate, no compression):
//   <directory>/<name>.otf2   anchor (archive properties live here)
//   <directory>/<name>.def    global definitions
//   <directory>/<name>/N.evt  events of location N (and N.def, empty)
//
// Rules this class keeps:
//  1. Memory stays bounded: each open location owns at most
//     Options::max_chunks_per_thread chunks of Options::event_chunk_bytes; a
//     full chunk is flushed to the location's file. end_thread() closes the
//     location's writer so short-lived threads cost nothing afterwards.
//  2. Events of a location are written in non-decreasing time; a timestamp
//     that goes backwards is clamped to the previous one and counted
//     (stats().clamped_timestamps), never dropped.
//  3. Definitions are deduplicated and get dense refs in definition order,
//     so parents (calling contexts, system tree nodes) always precede children.
//  4. Errors throw std::runtime_error (OTF2/IO failures) or
//     std::invalid_argument / std::logic_error (caller bugs: unknown refs,
//     events after end_thread or close). Nothing throws through OTF2's C code.
//  5. OTF2 keeps a location's event file open from its first flush until
//     end_thread: one file descriptor per live thread that has filled a chunk
//     (~16k samples at the default 256 KiB). End threads when they exit.
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

namespace hybridprof::otf2 {

class ArchiveWriter {
 public:
  struct Options {
    std::string directory;      // archive directory (created); anchor is <directory>/<name>.otf2
    std::string name = "traces";
    bool enter_leave = false;   // write samples as Enter/Leave (for viewers like ViTE that ignore CallingContext records)
    // Memory per open location = event_chunk_bytes * max_chunks_per_thread.
    // OTF2 accepts chunks of 256 KiB .. 16 MiB.
    uint64_t event_chunk_bytes = 256 * 1024;
    uint32_t max_chunks_per_thread = 1;
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
  void set_property(const std::string& name, const std::string& value);

  uint32_t define_string(std::string_view);                                   // deduplicated
  uint32_t define_source_location(const std::string& file, uint32_t line);    // deduplicated
  // Deduplicated by (name, file, paradigm); the first begin_line and module
  // win. `module` is the executable or library the code lives in ("" if none).
  uint32_t define_region(const std::string& name, const std::string& file, uint32_t begin_line, Paradigm,
                         const std::string& module = {});
  // Deduplicated by the triple. parent must be kUndefined (root) or defined already.
  uint32_t define_calling_context(uint32_t region, uint32_t source_location /*or kUndefined*/, uint32_t parent /*or kUndefined*/);
  // Deduplicated by (name, time_based, period).
  uint32_t define_interrupt_generator(const std::string& name, bool time_based, uint64_t period /*ns if time based, events otherwise*/);
  // Deduplicated by (name, class, parent).
  uint32_t define_system_tree_node(const std::string& name, const std::string& class_name, uint32_t parent /*or kUndefined*/);
  uint32_t define_process(const std::string& name, uint32_t system_tree_node);  // OTF2 location group (PROCESS)
  uint64_t define_thread(uint32_t process, const std::string& name);             // OTF2 location (CPU_THREAD)
  void set_process_property(uint32_t process, const std::string& name, const std::string& value);  // string
  void set_thread_property(uint64_t location, const std::string& name, uint64_t value);             // uint64

  void write_sample(uint64_t location, uint64_t timestamp, uint32_t calling_context, uint32_t unwind_distance,
                    uint32_t interrupt_generator);
  // Traced regions (MPI calls, user ranges...). In enter_leave mode they nest
  // inside the sampled stack, and samples taken while one is open do not
  // change the open regions (that would break the nesting).
  void write_enter(uint64_t location, uint64_t timestamp, uint32_t region);
  void write_leave(uint64_t location, uint64_t timestamp, uint32_t region);
  // No more events for this location: closes its event writer to free its
  // memory (in enter_leave mode first leaves all open regions at `timestamp`).
  // Calling it again is a no-op; events after it are a std::logic_error.
  void end_thread(uint64_t location, uint64_t timestamp);

  // Ends all threads, writes clock properties, global definitions (with per
  // location event counts) and properties, and closes the archive. A
  // ClockInfo global_offset / trace_length left at 0 is taken from the events.
  void close(const ClockInfo&);

  const std::string& anchor_path() const { return anchor_path_; }
  Stats stats() const;

 private:
  struct Region { uint32_t name, file, begin_line; Paradigm paradigm; uint32_t description; };
  struct CallingContext { uint32_t region, source_location, parent; };
  struct SourceLocation { uint32_t file, line; };
  struct InterruptGenerator { uint32_t name; bool time_based; uint64_t period; };
  struct SystemTreeNode { uint32_t name, class_name, parent; };
  struct Process { uint32_t name, system_tree_node; };
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

  void open_writer(Thread&, uint64_t location);
  Thread& thread_for_event(uint64_t location, uint64_t& timestamp);
  void close_thread_writer(Thread&);
  void write_sample_as_enter_leave(Thread&, uint64_t location, uint64_t timestamp, uint32_t calling_context);
  void write_global_definitions(const ClockInfo&);
  void write_empty_local_definitions();
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
  std::vector<SystemTreeNode> system_tree_nodes_;
  TripleMap system_tree_node_refs_;
  std::vector<Process> processes_;
  std::vector<Thread> threads_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> process_properties_;  // (process, name) -> value string
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> thread_properties_;   // (location, name) -> value
  std::map<std::string, std::string> archive_properties_;

  uint64_t events_ = 0;
  uint64_t clamped_timestamps_ = 0;
  uint64_t open_threads_ = 0;
  uint64_t first_timestamp_ = UINT64_MAX;  // over all events, for the default ClockInfo
  uint64_t last_timestamp_ = 0;
  std::vector<uint32_t> path_scratch_;     // enter_leave mode: a sample's region path
};

}  // namespace hybridprof::otf2
