// What the archive says of one process image apart from its events: its
// names, threads, counters, clock offsets, communicators, and every calling
// context node already symbolized. Made from the raw stream's definitions
// (pass 1) where the data is; self-contained, so that the ranks of an MPI
// job can send theirs to each other and all define the same archive
// (job_archive.cc), while each streams its own events.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "finalize/definition_tree.h"
#include "finalize/raw_process.h"
#include "otf2/types.h"

namespace hybridprof::symbolizer {
class Symbolizer;
}

namespace hybridprof::finalize {

// One calling context: its region and the source line it was at.
struct ContextFrame {
  std::string region, file, module;  // file: the region's (and the line's) source file
  uint32_t begin_line = 0;           // the region's first line, 0 if unknown
  uint32_t line = 0;                 // the context's line, 0: no source location
  otf2::Paradigm paradigm = otf2::Paradigm::kSampling;
};

// A raw calling context tree node: one frame, or a chain of them when the
// address lies in inlined code (the out-of-line function first).
struct ContextNode {
  bool present = false;  // false: the node or its definitions were in a lost chunk
  uint32_t parent = 0;   // raw node id (raw::kRootComplete: none)
  std::vector<ContextFrame> frames;
};

// A location of the process: a thread, or a device stream (kind).
struct ThreadDefinition {
  uint32_t index = 0;
  uint64_t tid = 0;  // a device stream's id as its adapter numbers it
  std::string name;
  raw::ThreadCounters counters;  // samples: those in the stream; losses added to dropped
  uint64_t python_incomplete = 0;
  uint64_t last_ns = 0;
  raw::LocationKind kind = raw::LocationKind::kThread;
  std::string device;  // a device stream's device
};

struct ProcessDefinitions {
  uint64_t pid = 0, ppid = 0;
  int64_t launcher_rank = -1;  // the rank its launcher gave it (common/launcher_rank.h), or -1
  // In the archive: "rank N", or the executable's file name and its role
  // (process_roles.h: name_processes).
  std::string name;
  std::string role;  // process_role: what it is there for, "" when not known
  std::string hostname, command, python, exit_status;
  uint64_t samples_without_thread = 0;
  // The sampling source.
  std::string event, mechanism, kernel_time, periods;
  uint64_t period = 0;
  bool frequency = false;
  uint64_t begin_monotonic_ns = 0, begin_realtime_ns = 0, last_ns = 0;
  std::vector<ThreadDefinition> threads;         // by raw index; quiet threads left out
  // Threads that recorded nothing (no sample, no traced event, every
  // counter 0) besides the process's first: counted, given no location (a
  // program making 10,000 short threads would cost 20,000 OTF2 files).
  uint64_t quiet_threads = 0;
  std::vector<raw::ClockOffset> clock_offsets;   // as readers need them (two or more, or none)
  std::vector<ContextNode> contexts;             // by raw node id
  std::optional<raw::JobRank> job_rank;
  std::vector<raw::Definition> definitions;      // the adapters', by set and id
  std::vector<std::string> notices;              // the program's, from the stream
  // Capture windows, "FROM TO\tOPENED BY\tCLOSED BY" a line, and marks,
  // "AT\tTEXT" a line; times in the archive's (the job's) clock.
  std::string capture_windows, marks;
  bool has_window_marks = false;  // the stream says when windows opened (streams made by hand may not)
  std::vector<std::string> warnings;             // what reading the stream found missing or damaged
};

// What the master of a collective archive defined for a process that
// another writer streams (finalizer.cc): the process's interrupt
// generator, its threads' locations and its adapters' definitions, by the
// master's refs, for that writer to adopt.
struct DefinedRefs {
  uint64_t pid = 0, begin_monotonic_ns = 0;  // which process
  uint32_t generator = 0;
  std::map<uint32_t, uint64_t> locations;  // by raw thread index
  std::map<std::string, std::map<uint32_t, uint32_t>, std::less<>> definitions;  // by set, then id
};

// What describe_process asks the symbolizer about `p`: addresses to
// resolve and calls to judge (call_is_statement), by module path.
struct SymbolQueries {
  std::map<std::string, std::set<uint64_t>> frames, statements;
};
void add_symbol_queries(const RawProcess& p, SymbolQueries* queries);

// Symbolizes `p`'s nodes. `exit_statuses` (by pid, "exit 0") are what a
// launcher saw; otherwise the stream's own end says how it ended.
ProcessDefinitions describe_process(const RawProcess& p, symbolizer::Symbolizer& symbolizer,
                                    const std::map<uint64_t, std::string>& exit_statuses);

// `parts` with `separator` between them (the command line, the notices).
std::string join(const std::vector<std::string>& parts, const char* separator);

// A byte string for other processes; parse() gives back an equal value, or
// false when `bytes` is not one of these (truncated, another version).
std::string serialize(std::vector<ProcessDefinitions>);
bool parse(const std::string& bytes, std::vector<ProcessDefinitions>* out);
// The same for definition tables and maps (definition_tree.h), as the ranks
// of a job send them up and down their tree.
std::string serialize_tables(tree::Definitions tables);
bool parse_tables(const std::string& bytes, tree::Definitions* out);
std::string serialize_map(tree::Map map);
bool parse_map(const std::string& bytes, tree::Map* out);
// The same for the refs a master hands the other writers.
std::string serialize_refs(std::vector<DefinedRefs> refs);
bool parse_refs(const std::string& bytes, std::vector<DefinedRefs>* out);
// The same for what processes ask the symbolizer (the ranks of a node tell each other).
std::string serialize_queries(SymbolQueries queries);
bool parse_queries(const std::string& bytes, SymbolQueries* out);

}  // namespace hybridprof::finalize
