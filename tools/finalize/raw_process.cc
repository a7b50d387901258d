#include "finalize/raw_process.h"

#include <algorithm>
#include <type_traits>

#include "trace/records.h"

namespace hybridprof::finalize {

bool read_definitions(const std::string& path, RawProcess* p, std::string* error) {
  p->path = path;
  auto thread = [&](uint32_t index) -> RawThread& {
    RawThread& t = p->threads[index];
    t.index = index;
    return t;
  };
  constexpr size_t kMaxNodeIdGap = 1 << 16;
  auto on_record = [&](const raw::Record& record) {
    std::visit(
        [&](const auto& r) {
          using T = std::decay_t<decltype(r)>;
          if constexpr (std::is_same_v<T, raw::ProcessBegin>) {
            p->begin = r;
          } else if constexpr (std::is_same_v<T, raw::ProcessEnd>) {
            p->end = r;  // the last one wins (an exec that failed writes more)
            p->last_ns = std::max(p->last_ns, r.timestamp_ns);
          } else if constexpr (std::is_same_v<T, raw::ModuleLoad>) {
            p->modules[r.id] = r;
          } else if constexpr (std::is_same_v<T, raw::CctNode>) {
            // Ids are dense (the drain numbers nodes as it interns them, each
            // written before its first use): one far beyond those seen is a
            // damaged stream's, not room to make (an id near 2^32 would be
            // a 96 GB table).
            if (r.id >= p->nodes.size() + kMaxNodeIdGap) return;
            if (r.id >= p->nodes.size()) p->nodes.resize(r.id + 1);
            p->nodes[r.id] = r;
          } else if constexpr (std::is_same_v<T, raw::RegionDef>) {
            p->regions[r.id] = r;
          } else if constexpr (std::is_same_v<T, raw::LocationBegin>) {
            RawThread& t = thread(r.location);
            t.tid = r.id;
            t.kind = r.kind;
            t.name = r.name;
            t.device = r.device;
            t.begin_ns = r.timestamp_ns;
            t.last_ns = std::max(t.last_ns, r.timestamp_ns);
          } else if constexpr (std::is_same_v<T, raw::LocationEnd>) {
            RawThread& t = thread(r.location);
            t.end = r;
            t.last_ns = std::max(t.last_ns, r.timestamp_ns);
          } else if constexpr (std::is_same_v<T, raw::Sample>) {
            RawThread& t = thread(r.location);
            t.samples_seen += r.weight;
            if (r.flags & kSamplePythonIncomplete) t.python_incomplete += r.weight;
            t.last_ns = std::max(t.last_ns, r.timestamp_ns);
            p->last_ns = std::max(p->last_ns, r.timestamp_ns);
          } else if constexpr (std::is_same_v<T, raw::Enter> || std::is_same_v<T, raw::Leave> ||
                               std::is_same_v<T, raw::Event>) {
            RawThread& t = thread(r.location);
            ++t.events_seen;
            t.last_ns = std::max(t.last_ns, r.timestamp_ns);
          } else if constexpr (std::is_same_v<T, raw::Definition>) {
            p->definitions[{r.set, r.id}] = r;
          } else if constexpr (std::is_same_v<T, raw::EventSetDef>) {
            p->event_sets[r.base] = r;
          } else if constexpr (std::is_same_v<T, raw::JobRank>) {
            p->job_rank = r;
          } else if constexpr (std::is_same_v<T, raw::ClockOffset>) {
            p->clock_offsets.push_back(r);
          } else if constexpr (std::is_same_v<T, raw::Notice>) {
            p->notices.push_back(r.text);
          } else if constexpr (std::is_same_v<T, raw::Mark>) {
            p->marks.push_back(r);
          } else if constexpr (std::is_same_v<T, raw::PythonCode>) {
            p->python_codes[r.id] = r;
          }
        },
        record);
  };
  if (!raw::read_stream(path, on_record, &p->summary, error)) return false;
  if (!p->begin) {
    *error = path + ": no process record (the process died before its first flush)";
    return false;
  }
  for (const auto& [index, t] : p->threads) p->last_ns = std::max(p->last_ns, t.last_ns);
  return true;
}

}  // namespace hybridprof::finalize
