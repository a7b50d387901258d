// One process image's raw stream, read into the definitions the finalizer
// needs before it streams the samples (pass 1).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace/raw_format.h"
#include "trace/raw_stream.h"

namespace hybridprof::finalize {

// A location of the stream: a thread, or a device stream an adapter wrote.
struct RawThread {
  uint32_t index = 0;
  uint64_t tid = 0;  // a device stream's id
  raw::LocationKind kind = raw::LocationKind::kThread;
  std::string name, device;  // as the location began (a thread's is empty)
  uint64_t begin_ns = 0;
  std::optional<raw::LocationEnd> end;
  uint64_t samples_seen = 0;  // samples in the stream (the counters may say more)
  uint64_t events_seen = 0;   // its enters, leaves and events in the stream
  uint64_t python_incomplete = 0;  // of those, with kSamplePythonIncomplete
  uint64_t last_ns = 0;
};

struct RawProcess {
  std::string path;
  std::optional<raw::ProcessBegin> begin;
  std::optional<raw::ProcessEnd> end;
  std::map<uint32_t, raw::ModuleLoad> modules;
  std::vector<raw::CctNode> nodes;  // indexed by id; parents come before children
  std::map<uint32_t, raw::RegionDef> regions;
  std::map<uint32_t, RawThread> threads;
  std::vector<std::string> notices;
  std::vector<raw::Mark> marks;  // capture windows' edges and marks, in order
  // Its rank in a parallel job, and its clock offsets against rank 0.
  std::optional<raw::JobRank> job_rank;
  std::vector<raw::ClockOffset> clock_offsets;
  // The adapters' definitions, by set and id (a later one of the same id
  // replaces an earlier).
  std::map<std::pair<std::string, uint32_t>, raw::Definition> definitions;
  // The adapters' event sets, by the first kind of each.
  std::map<uint32_t, raw::EventSetDef> event_sets;
  // Python code objects named by the drain, by id.
  std::map<uint32_t, raw::PythonCode> python_codes;
  raw::ReadSummary summary;
  uint64_t last_ns = 0;
};

// Pass 1 over a raw stream. False with `error` if it is not readable at all.
bool read_definitions(const std::string& path, RawProcess* process, std::string* error);

}  // namespace hybridprof::finalize
