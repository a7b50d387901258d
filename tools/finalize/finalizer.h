// The finalizer: turns the raw streams a run left in its output directory
// (raw/*.hpr, one per process image; for an MPI job rank-N/raw/*.hpr for
// every rank) into one OTF2 archive, definitions unified across processes. Runs after the
// program (the launcher calls it when the program ends; hybridprof-merge
// runs it by hand after a crash), so symbolization never touches the run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "finalize/definition_tree.h"
#include "finalize/process_definitions.h"
#include "finalize/raw_process.h"
#include "otf2/archive_writer.h"
#include "sink/definition_set_writer.h"
#include "sink/trace_sink.h"

namespace hybridprof::finalize {

struct Options {
  std::string directory;            // the run's output directory (contains raw/)
  std::string archive_directory;    // where the archive goes; default: `directory`
  bool enter_leave = false;         // also write <archive>/enter-leave/ for ViTE
  // Exit statuses the launcher saw, by pid ("exit 0", "signal 15").
  std::map<uint64_t, std::string> exit_statuses;
  // Said in the archive (property HYBRIDPROF::WRITTEN_BY).
  std::string written_by = "hybridprof, from the raw data after the program";
  // Where the run goes instead of the OTF2 archive (not owned; a test's
  // sink::RecordingSink). Empty: the archive.
  std::vector<sink::TraceSink*> sinks;
  // Definition writers beside the registered ones (adapter_writers.h),
  // looked up first: a test adapter's.
  std::vector<const sink::DefinitionSetWriter*> definition_writers;
};

struct Result {
  std::string anchor;                 // path of traces.otf2
  std::string enter_leave_anchor;     // when requested
  uint64_t processes = 0, threads = 0, samples = 0;
  uint64_t streams = 0;  // device streams (locations that are not threads)
  uint64_t dropped = 0, unwind_failed = 0, truncated = 0, unwind_recovered = 0;
  uint64_t python_incomplete = 0;  // samples with an incomplete Python stack
  uint64_t traced_events = 0;
  uint64_t events_skipped = 0;  // events of a set this build cannot write, or naming a definition the stream lost
  uint64_t missing_ranks = 0;            // MPI ranks with no raw data at all
  // Libraries with a build id the symbolizer was asked about: named wholly
  // from the symbol cache, or read (debug information opened).
  uint64_t symbol_modules_cached = 0, symbol_modules_read = 0;
  // An MPI job's archive written by its ranks (job_archive.cc): each phase's
  // time (the slowest rank's, ms; phase_symbolize_ms also for any run: the
  // time its processes' frames took to name), the largest rank's peak resident memory
  // (KiB, its whole life); the calling contexts' tables in bytes: the
  // largest rank's own and the job's (unified up the ranks' tree, what
  // every rank receives); and the other definitions' bytes: the largest
  // rank's own, and what rank 0 gathered (all ranks'; the others keep
  // their own).
  uint64_t phase_read_ms = 0, phase_node_naming_ms = 0, phase_symbolize_ms = 0, phase_unify_ms = 0,
           phase_exchange_ms = 0, phase_write_ms = 0;
  uint64_t rank_peak_rss_kib = 0, context_bytes_rank_max = 0, context_bytes_job = 0;
  uint64_t definitions_bytes_rank_max = 0, definitions_bytes_job = 0;
  // What the writers other than the master received of it: the most bytes
  // of refs one was handed (its own processes'; collective archives).
  uint64_t definitions_bytes_received_max = 0;
  std::vector<std::string> warnings;  // data found missing or damaged
};

// Returns false with a one-line `error` when no archive could be written
// (no raw data, unwritable directory, archive already there).
bool finalize(const Options& options, Result* result, std::string* error);

// Removes an archive's files from `archive_directory` (traces.otf2,
// traces.def, traces/, enter-leave/): what a writer that failed or was
// interrupted left.
void remove_archive(const std::string& archive_directory);

// The parts of finalize(), for writers of one archive together (job_archive.cc).

// The raw streams under a run's directory: DIR/raw/*.hpr and DIR/rank-*/raw/*.hpr.
std::vector<std::string> raw_files(const std::string& directory);

// A process image read from its raw stream, symbolized.
struct LocalProcess {
  RawProcess raw;
  ProcessDefinitions definitions;
};
// A stream that cannot be read at all is a warning ("skipped ..."), and
// so is a damaged symbol cache entry. The symbol cache is used unless
// HYBRIDPROF_NO_SYMBOL_CACHE is 1; `result` (may be null) gets its use.
std::vector<LocalProcess> read_processes(const std::vector<std::string>& files,
                                         const std::map<uint64_t, std::string>& exit_statuses,
                                         std::vector<std::string>* warnings, Result* result = nullptr);
// read_processes in two steps: the raw streams (pass 1), then their
// symbolized definitions.
std::vector<LocalProcess> read_raw_processes(const std::vector<std::string>& files, std::vector<std::string>* warnings);
void describe_processes(std::vector<LocalProcess>& processes, const std::map<uint64_t, std::string>& exit_statuses,
                        std::vector<std::string>* warnings, Result* result);
// Names `queries` into the symbol cache (none: nothing), so that a later
// describe_processes finds them there: how the ranks of one node name each
// library once between them (job_archive.cc).
void name_in_cache(const SymbolQueries& queries, std::vector<std::string>* warnings, Result* result);
// The symbol cache is used: a cache directory is known, and
// HYBRIDPROF_NO_SYMBOL_CACHE is not 1.
bool symbol_cache_enabled();

// A process image of the archive; `stream` null: another writer of a
// collective archive copies its events (writer `writer`). `node_contexts`
// (with a stream): each raw node's innermost context in the archive's
// context tables.
struct ArchiveEntry {
  const ProcessDefinitions* definitions = nullptr;
  const RawProcess* stream = nullptr;
  const std::vector<uint32_t>* node_contexts = nullptr;
  uint32_t writer = 0;
};
// Defines the calling contexts of `contexts` (every process's, merged:
// process_tables.h), then every entry, copies the events of those with a
// stream, closes. With a collective, every writer passes the same
// contexts; the master passes every process's entry (in any order) and
// defines them, the others their own only, and adopt the master's refs of
// them; the archive's parts are written by all, and all writers throw if
// one failed while defining or copying events. Throws std::exception on
// failure.
void write_archive(const Options& options, const tree::Definitions& contexts, std::vector<ArchiveEntry> entries,
                   otf2::ArchiveWriter::Collective* collective, Result* result);

}  // namespace hybridprof::finalize
