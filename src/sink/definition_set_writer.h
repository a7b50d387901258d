// The archive side of an adapter's definitions (raw::Definition records of
// its set, trace/event_sets.h): what its events name (MPI communicators,
// OpenMP thread teams). The finalizer hands every process's definitions of
// a set to the writer registered for the set's name
// (tools/finalize/adapter_writers.cc); it defines what they mean on the
// sink and says which sink ref each process's definition id became. The
// set's events find those refs in EventRefs. Nothing else knows what a
// definition says.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "sink/trace_sink.h"
#include "trace/raw_format.h"

namespace hybridprof::sink {

class DefinitionSetWriter {
 public:
  virtual ~DefinitionSetWriter() = default;
  virtual std::string_view set_name() const = 0;

  // One process image's part, in the archive's process order.
  struct Process {
    std::optional<raw::JobRank> job_rank;
    const std::map<uint32_t, uint64_t>* locations = nullptr;  // sink location by the process's location index
    std::vector<const raw::Definition*> definitions;  // of this set, by id
    std::map<uint32_t, uint32_t>* refs = nullptr;      // out: the sink ref of each definition id
  };
  // `job_locations`: the location of each rank of the job (its main
  // thread, or a placeholder's for a rank without data); empty when no
  // process said it is a rank. A definition left out of `refs` (malformed,
  // or naming what the run lost) makes the events that name it skipped
  // and counted.
  virtual void define(const std::vector<Process>& processes, const std::vector<uint64_t>& job_locations,
                      CommSink& sink) const = 0;
};

}  // namespace hybridprof::sink
