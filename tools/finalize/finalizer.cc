#include "finalize/finalizer.h"

#include <dirent.h>
#include <sys/stat.h>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "common/build_identity.h"
#include "common/runtime_config.h"
#include "finalize/adapter_writers.h"
#include "finalize/archive_check.h"
#include "finalize/device_order.h"
#include "finalize/process_definitions.h"
#include "finalize/process_roles.h"
#include "finalize/process_tables.h"
#include "finalize/progress.h"
#include "finalize/raw_process.h"
#include "otf2/archive_writer.h"
#include "otf2/property_names.h"
#include "symbolizer/symbol_cache.h"
#include "symbolizer/symbolizer.h"

namespace hybridprof::finalize {
namespace {

using otf2::ArchiveWriter;
using otf2::kUndefined;
using otf2::Paradigm;
constexpr uint64_t kNoLocation = UINT64_MAX;

// Each thread counter's property in the archive.
struct CounterProperty {
  uint64_t raw::ThreadCounters::*field;
  const char* property;
};
constexpr CounterProperty kCounterProperties[] = {
    {&raw::ThreadCounters::samples, otf2::property::kSamples},
    {&raw::ThreadCounters::dropped, otf2::property::kDropped},
    {&raw::ThreadCounters::unwind_failed, otf2::property::kUnwindFailures},
    {&raw::ThreadCounters::truncated, otf2::property::kTruncated},
    {&raw::ThreadCounters::dropped_events, otf2::property::kDroppedEvents},
    {&raw::ThreadCounters::unwind_recovered, otf2::property::kUnwindRecovered},
    {&raw::ThreadCounters::ring_flushes, otf2::property::kRingFlushes},
    {&raw::ThreadCounters::ring_flush_ns, otf2::property::kRingFlushNs},
    {&raw::ThreadCounters::sample_signals, otf2::property::kSampleSignals},
    {&raw::ThreadCounters::sample_handler_ns, otf2::property::kSampleHandlerNs},
    {&raw::ThreadCounters::sample_handler_slow, otf2::property::kSampleHandlerSlow},
};
static_assert(std::size(kCounterProperties) == std::size(raw::kThreadCounterFields),
              "each thread counter has its property");

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A run's raw directories: DIR/raw, and for an MPI job DIR/rank-N/raw.
std::vector<std::string> raw_directories(const std::string& dir) {
  std::vector<std::string> dirs{dir + "/raw"};
  for (const auto& name : entries(dir))
    if (name.rfind("rank-", 0) == 0) dirs.push_back(dir + "/" + name + "/raw");
  return dirs;
}


// Sends every definition and event to each sink (the calling-context
// archive and, on request, the enter/leave one; or the sinks a test gave).
// All see the same calls in the same order, so their refs agree. An
// adapter's definition writer sees them as one CommSink.
class Writers final : public sink::CommSink {
 public:
  void add(std::unique_ptr<sink::TraceSink> w) {
    writers_.push_back(w.get());
    owned_.push_back(std::move(w));
  }
  void add(sink::TraceSink* w) { writers_.push_back(w); }
  template <typename Fn>
  auto each(Fn&& fn) {
    using R = decltype(fn(*writers_.front()));
    if constexpr (std::is_void_v<R>) {
      for (auto& w : writers_) fn(*w);
    } else {
      R first = fn(*writers_.front());
      for (size_t i = 1; i < writers_.size(); ++i) fn(*writers_[i]);
      return first;
    }
  }

  void define_comm_locations(Paradigm paradigm, const std::vector<uint64_t>& locations) override {
    each([&](sink::TraceSink& w) { w.define_comm_locations(paradigm, locations); });
  }
  uint32_t define_comm(Paradigm paradigm, const std::string& name, const std::vector<uint32_t>& members,
                       uint32_t parent) override {
    return each([&](sink::TraceSink& w) { return w.define_comm(paradigm, name, members, parent); });
  }
  uint32_t define_comm_self(Paradigm paradigm, const std::string& name) override {
    return each([&](sink::TraceSink& w) { return w.define_comm_self(paradigm, name); });
  }

 private:
  std::vector<sink::TraceSink*> writers_;
  std::vector<std::unique_ptr<sink::TraceSink>> owned_;
};

class Finalizer {
 public:
  Finalizer(const Options& options, ArchiveWriter::Collective* collective, Result* result)
      : options_(options), collective_(collective), result_(result) {}

  void run(const tree::Definitions& contexts, std::vector<ArchiveEntry>& entries) {
    const std::string dir = options_.archive_directory.empty() ? options_.directory : options_.archive_directory;
    ArchiveWriter::Options main_options;
    main_options.directory = dir;
    main_options.collective = collective_;
    main_options.event_set_writer = event_set_writer;
    main_options.define_event_sets = define_event_sets;
    for (sink::TraceSink* s : options_.sinks) writers_.add(s);
    if (options_.sinks.empty()) {
      writers_.add(std::make_unique<ArchiveWriter>(main_options));
      result_->anchor = dir + "/traces.otf2";
    }
    if (options_.enter_leave && options_.sinks.empty()) {
      ArchiveWriter::Options el = main_options;
      el.directory = dir + "/enter-leave";
      el.enter_leave = true;
      writers_.add(std::make_unique<ArchiveWriter>(el));
      result_->enter_leave_anchor = el.directory + "/traces.otf2";
    }
    // Job ranks in rank order, then other processes; parents before
    // children (start time). The writers of a collective archive must all
    // come to the same order.
    std::stable_sort(entries.begin(), entries.end(), [](const ArchiveEntry& ea, const ArchiveEntry& eb) {
      const ProcessDefinitions &a = *ea.definitions, &b = *eb.definitions;
      const int64_t ra = a.job_rank ? a.job_rank->rank : INT64_MAX, rb = b.job_rank ? b.job_rank->rank : INT64_MAX;
      return std::tie(ra, a.begin_monotonic_ns, a.pid) < std::tie(rb, b.begin_monotonic_ns, b.pid);
    });
    const std::vector<uint32_t> context_refs = define_contexts(contexts);
    std::vector<ProcessRefs> refs = follower() ? adopt_refs(entries, context_refs) : define_processes(entries, context_refs);
    std::string failure;
    try {
      for (size_t i = 0; i < entries.size(); ++i) {
        show_progress("writing events of processes", i + 1, entries.size());
        if (entries[i].stream) stream_events(*entries[i].stream, refs[i]);
      }
      end_progress();
    } catch (const std::exception& e) {
      if (!collective_) throw;
      failure = e.what();
    }
    if (collective_) {
      // Closing is collective: all writers go on, or none.
      std::vector<uint64_t> totals{failure.empty() ? 0u : 1u, result_->traced_events, result_->events_skipped};
      collective_->reduce(totals, ArchiveWriter::Collective::Reduce::kSum);
      if (totals[0]) {
        writers_.each([](sink::TraceSink& w) { w.abandon(); });
        throw std::runtime_error(failure.empty() ? std::to_string(totals[0]) + " other writer(s) failed" : failure);
      }
      result_->traced_events = totals[1];
      result_->events_skipped = totals[2];
    }
    if (result_->events_skipped)
      result_->warnings.push_back(std::to_string(result_->events_skipped) +
                                  " traced events not written: their event set is unknown to this build, or a "
                                  "definition they name was in a lost chunk of the raw data");
    if (!follower()) write_archive_properties(entries);
    otf2::ClockInfo clock;
    uint64_t first = UINT64_MAX, last = 0;
    for (const auto& e : entries) {
      first = std::min(first, e.definitions->begin_monotonic_ns);
      last = std::max(last, e.definitions->last_ns);
    }
    clock.global_offset = first;
    clock.trace_length = last > first ? last - first : 1;
    const ProcessDefinitions& p0 = *entries.front().definitions;
    clock.realtime_ns_at_offset = p0.begin_realtime_ns - (p0.begin_monotonic_ns - first);
    writers_.each([&](sink::TraceSink& w) { w.close(clock); });
  }

 private:
  // The OTF2 references of one process image.
  struct ProcessRefs {
    std::vector<uint32_t> contexts;        // by raw CCT node
    std::map<uint32_t, uint64_t> locations;  // by raw thread index
    uint32_t generator = kUndefined;
    std::map<std::string, std::map<uint32_t, uint32_t>, std::less<>> definitions;  // by set, then id
  };

  // A writer of a collective archive other than its master (which defines
  // every process; the others adopt its refs of their own).
  bool follower() const { return collective_ && !collective_->is_master(); }

  // Every process and what its adapters define; with a collective, each
  // other writer is then handed its processes' refs. All writers go on
  // from here or none: a failure here is every writer's.
  std::vector<ProcessRefs> define_processes(const std::vector<ArchiveEntry>& entries,
                                            const std::vector<uint32_t>& context_refs) {
    std::vector<ProcessRefs> refs;
    std::vector<std::vector<DefinedRefs>> handed(collective_ ? collective_->writers() : 0);
    std::string failure;
    try {
      machine_ = writers_.each([](sink::TraceSink& w) {
        return w.define_system_tree_node("machine", "machine", kUndefined);
      });
      for (const auto& e : entries) refs.push_back(define_process(e, context_refs));
      define_adapter_definitions(entries, refs, define_job_ranks(entries, refs));
      for (size_t i = 0; collective_ && i < entries.size(); ++i) {
        const ArchiveEntry& e = entries[i];
        if (e.writer == collective_->writer()) continue;
        if (e.writer >= handed.size()) throw std::logic_error("a process of writer " + std::to_string(e.writer) +
                                                              " of " + std::to_string(handed.size()));
        handed[e.writer].push_back({e.definitions->pid, e.definitions->begin_monotonic_ns, refs[i].generator,
                                    refs[i].locations, refs[i].definitions});
      }
    } catch (const std::exception& e) {
      if (!collective_) throw;
      failure = e.what();
    }
    if (collective_) {
      std::vector<std::string> parts(handed.size());
      for (size_t w = 0; failure.empty() && w < handed.size(); ++w) parts[w] = serialize_refs(std::move(handed[w]));
      collective_->scatter(parts);  // empty parts after a failure: the other writers fail too
      agree_or_throw(failure);
    }
    return refs;
  }

  // This writer's processes' refs, as the master defined them.
  std::vector<ProcessRefs> adopt_refs(const std::vector<ArchiveEntry>& entries,
                                      const std::vector<uint32_t>& context_refs) {
    std::vector<ProcessRefs> refs(entries.size());
    std::string failure;
    try {
      std::vector<DefinedRefs> handed;
      const std::string bytes = collective_->scatter({});
      result_->definitions_bytes_received_max = bytes.size();
      if (!parse_refs(bytes, &handed)) throw std::runtime_error("the master's refs did not arrive whole");
      sink::TraceSink::AdoptedRefs adopted;
      for (size_t i = 0; i < entries.size(); ++i) {
        const ProcessDefinitions& p = *entries[i].definitions;
        const auto it = std::find_if(handed.begin(), handed.end(), [&](const DefinedRefs& d) {
          return d.pid == p.pid && d.begin_monotonic_ns == p.begin_monotonic_ns;
        });
        if (it == handed.end()) throw std::runtime_error("the master defined no process " + std::to_string(p.pid));
        ProcessRefs& r = refs[i];
        r.generator = it->generator;
        r.locations = it->locations;
        r.definitions = it->definitions;
        r.contexts = node_context_refs(entries[i], context_refs);
        adopted.interrupt_generators = std::max(adopted.interrupt_generators, r.generator + 1);
        for (const ThreadDefinition& t : p.threads) {
          const auto loc = r.locations.find(t.index);
          if (loc == r.locations.end()) throw std::runtime_error("the master defined no location of thread " + std::to_string(t.tid));
          adopted.locations.emplace_back(loc->second, t.kind != raw::LocationKind::kThread);
        }
        for (const auto& [set, ids] : r.definitions)
          for (const auto& [id, ref] : ids) adopted.comms = std::max(adopted.comms, ref + 1);
      }
      writers_.each([&](sink::TraceSink& w) { w.adopt(adopted); });
      for (size_t i = 0; i < entries.size(); ++i)
        for (const ThreadDefinition& t : entries[i].definitions->threads)
          add_clock_offsets(*entries[i].definitions, refs[i].locations.at(t.index));
    } catch (const std::exception& e) {
      failure = e.what();
    }
    agree_or_throw(failure);
    return refs;
  }

  // Collective: all writers go on, or all give up (abandoning the archive).
  void agree_or_throw(const std::string& failure) {
    std::vector<uint64_t> failed{failure.empty() ? 0u : 1u};
    collective_->reduce(failed, ArchiveWriter::Collective::Reduce::kSum);
    if (failed[0] == 0) return;
    writers_.each([](sink::TraceSink& w) { w.abandon(); });
    throw std::runtime_error(failure.empty() ? std::to_string(failed[0]) + " other writer(s) failed" : failure);
  }

  // Each raw node's context ref, for a process this writer streams.
  static std::vector<uint32_t> node_context_refs(const ArchiveEntry& e, const std::vector<uint32_t>& context_refs) {
    std::vector<uint32_t> refs;
    if (!e.node_contexts) return refs;
    refs.reserve(e.node_contexts->size());
    for (uint32_t c : *e.node_contexts) refs.push_back(c == tree::kNone ? kUndefined : context_refs.at(c));
    return refs;
  }

  // The process's clock offsets, for its location `loc`.
  void add_clock_offsets(const ProcessDefinitions& p, uint64_t loc) {
    for (const auto& c : p.clock_offsets)
      writers_.each([&](sink::TraceSink& w) { w.add_clock_offset(loc, c.timestamp_ns, c.offset_ns, double(c.stddev_ns)); });
  }

  ProcessRefs define_process(const ArchiveEntry& e, const std::vector<uint32_t>& context_refs) {
    const ProcessDefinitions& p = *e.definitions;
    const bool local = e.stream != nullptr;
    ++result_->processes;
    ProcessRefs refs;
    const uint32_t node = writers_.each([&](sink::TraceSink& w) {
      return w.define_system_tree_node(p.hostname, "node", machine_);
    });
    const uint32_t group = writers_.each([&](sink::TraceSink& w) { return w.define_process(p.name, node); });
    set_process_properties(p, group);
    result_->threads += p.quiet_threads;
    const bool time_based = p.mechanism != "perf_event" || p.frequency || p.event.find("clock") != std::string::npos;
    const uint64_t period = p.frequency && p.period ? 1000000000ull / p.period : p.period;
    refs.generator = writers_.each([&](sink::TraceSink& w) {
      return w.define_interrupt_generator(p.event, time_based, period);
    });
    if (local) refs.contexts = node_context_refs(e, context_refs);
    for (const ThreadDefinition& t : p.threads) {
      const bool thread = t.kind == raw::LocationKind::kThread;
      const uint64_t loc = writers_.each([&](sink::TraceSink& w) {
        return thread ? w.define_thread(group, t.name) : w.define_stream(w.define_device(group, t.device), t.name);
      });
      if (!local) writers_.each([&](sink::TraceSink& w) { w.set_thread_remote(loc); });
      refs.locations[t.index] = loc;
      if (thread) set_thread_properties(p, t, loc);
      else ++result_->streams;
      add_clock_offsets(p, loc);
    }
    for (const auto& w : p.warnings) result_->warnings.push_back(w);
    return refs;
  }

  // The location of each rank of the job: its main thread, or a
  // placeholder's for a rank whose data is missing. Empty when no process
  // said it is a rank.
  std::vector<uint64_t> define_job_ranks(const std::vector<ArchiveEntry>& entries, const std::vector<ProcessRefs>& refs) {
    uint32_t size = 0;
    for (const auto& e : entries)
      if (e.definitions->job_rank) size = std::max(size, e.definitions->job_rank->size);
    std::vector<uint64_t> rank_locations(size, kNoLocation);
    for (size_t i = 0; i < entries.size(); ++i) {
      const auto& r = entries[i].definitions->job_rank;
      if (r && r->rank < size && rank_locations[r->rank] == kNoLocation && !refs[i].locations.empty())
        rank_locations[r->rank] = refs[i].locations.begin()->second;
    }
    // A placeholder is the master's to write (it has no events).
    const bool placeholders_remote = collective_ && !collective_->is_master();
    for (uint32_t rank = 0; rank < size; ++rank) {
      if (rank_locations[rank] != kNoLocation) continue;
      result_->warnings.push_back("rank " + std::to_string(rank) + " of " + std::to_string(size) +
                                  ": no data (it died before its first flush, or its raw data is not in this directory)");
      ++result_->missing_ranks;
      rank_locations[rank] = writers_.each([&](sink::TraceSink& w) {
        const uint32_t node = w.define_system_tree_node("unknown", "node", machine_);
        const uint32_t group = w.define_process("rank " + std::to_string(rank) + " (missing)", node);
        const uint64_t loc = w.define_thread(group, "main thread");
        if (placeholders_remote) w.set_thread_remote(loc);
        return loc;
      });
    }
    return rank_locations;
  }

  // Each adapter's definitions, all processes' at once, by its set's
  // definition writer (a set this build has no writer for defines
  // nothing: its events are skipped and counted).
  void define_adapter_definitions(const std::vector<ArchiveEntry>& entries, std::vector<ProcessRefs>& refs,
                                  const std::vector<uint64_t>& job_locations) {
    using Process = sink::DefinitionSetWriter::Process;
    std::map<std::string, std::vector<Process>, std::less<>> sets;
    for (size_t i = 0; i < entries.size(); ++i) {
      for (const raw::Definition& d : entries[i].definitions->definitions) {
        auto [set, added] = sets.try_emplace(d.set);
        if (added)  // every process says where it stands, with definitions of the set or not
          for (size_t j = 0; j < entries.size(); ++j)
            set->second.push_back(
                {entries[j].definitions->job_rank, &refs[j].locations, {}, &refs[j].definitions[d.set]});
        set->second[i].definitions.push_back(&d);
      }
    }
    for (const auto& [set, processes] : sets)
      if (const sink::DefinitionSetWriter* writer = definition_writer(set))
        writer->define(processes, job_locations, writers_);
  }

  const sink::DefinitionSetWriter* definition_writer(std::string_view set) const {
    for (const sink::DefinitionSetWriter* w : options_.definition_writers)
      if (w->set_name() == set) return w;
    return definition_set_writer(set);
  }

  void set_process_properties(const ProcessDefinitions& p, uint32_t group) {
    writers_.each([&](sink::TraceSink& w) {
      w.set_process_property(group, otf2::property::kPid, std::to_string(p.pid));
      w.set_process_property(group, otf2::property::kParentPid, std::to_string(p.ppid));
      w.set_process_property(group, otf2::property::kExitStatus, p.exit_status);
      w.set_process_property(group, otf2::property::kSamplesWithoutThread, std::to_string(p.samples_without_thread));
      w.set_process_property(group, otf2::property::kQuietThreads, std::to_string(p.quiet_threads));
      w.set_process_property(group, "COMMAND", p.command);
      if (!p.python.empty()) w.set_process_property(group, otf2::property::kPython, p.python);
      if (p.has_window_marks) w.set_process_property(group, otf2::property::kCaptureWindows, p.capture_windows);
      if (!p.marks.empty()) w.set_process_property(group, otf2::property::kMarks, p.marks);
    });
  }

  void set_thread_properties(const ProcessDefinitions& p, const ThreadDefinition& t, uint64_t loc) {
    const raw::ThreadCounters& c = t.counters;
    result_->threads += 1;
    result_->samples += c.samples;
    result_->dropped += c.dropped;
    result_->unwind_failed += c.unwind_failed;
    result_->truncated += c.truncated;
    result_->unwind_recovered += c.unwind_recovered;
    const bool python = !p.python.empty();
    if (python) result_->python_incomplete += t.python_incomplete;
    writers_.each([&](sink::TraceSink& w) {
      for (const auto& [field, property] : kCounterProperties) w.set_thread_property(loc, property, c.*field);
      w.set_thread_property(loc, otf2::property::kTid, t.tid);
      if (python) w.set_thread_property(loc, otf2::property::kPythonIncomplete, t.python_incomplete);
    });
  }

  // The archive's calling contexts, each context of `tables` in turn (a
  // parent before its children), so that every writer of a collective
  // archive gives them the same refs. Returns each one's ref.
  std::vector<uint32_t> define_contexts(const tree::Definitions& tables) {
    std::vector<uint32_t> refs;
    refs.reserve(tables.contexts.size());
    for (const tree::Context& c : tables.contexts) {
      const tree::Region& r = tables.regions.at(c.region);
      const std::string &name = tables.strings.at(r.name), &file = tables.strings.at(r.file),
                        &module = tables.strings.at(r.module);
      const uint32_t parent = c.parent == tree::kNone ? kUndefined : refs.at(c.parent);
      refs.push_back(writers_.each([&](sink::TraceSink& w) {
        const uint32_t region = w.define_region(name, file, r.line, static_cast<Paradigm>(r.paradigm), module);
        const uint32_t scl = c.line ? w.define_source_location(file, c.line) : kUndefined;
        return w.define_calling_context(region, scl, parent);
      }));
    }
    return refs;
  }

  void stream_events(const RawProcess& p, const ProcessRefs& refs) {
    const std::vector<uint32_t>& contexts = refs.contexts;
    const std::map<uint32_t, uint64_t>& locations = refs.locations;
    const uint32_t generator = refs.generator;
    std::vector<uint32_t> depth(contexts.size(), 0);
    for (size_t id = raw::kFirstCctNode; id < p.nodes.size(); ++id)
      depth[id] = p.nodes[id].parent < id ? depth[p.nodes[id].parent] + 1 : 1;
    std::set<uint32_t> ended;
    // A record whose thread or definitions were in a lost chunk is skipped;
    // the thread's counters still say how many samples it took.
    auto location_of = [&](uint32_t thread, uint64_t* location) {
      auto it = locations.find(thread);
      if (it == locations.end() || ended.count(thread)) return false;
      *location = it->second;
      return true;
    };
    uint64_t loc = 0;
    // Enter, Leave and Event, written where they belong.
    const auto write_region_or_event = [&](const DeviceRecordOrder::Record& record) {
      if (const auto* e = std::get_if<raw::Enter>(&record)) {
        const uint32_t ctx = e->node < contexts.size() ? contexts[e->node] : kUndefined;
        if (ctx != kUndefined && location_of(e->location, &loc))
          writers_.each([&](sink::TraceSink& w) { w.write_context_enter(loc, e->timestamp_ns, ctx, depth[e->node]); });
      } else if (const auto* l = std::get_if<raw::Leave>(&record)) {
        const uint32_t ctx = l->node < contexts.size() ? contexts[l->node] : kUndefined;
        if (ctx != kUndefined && location_of(l->location, &loc))
          writers_.each([&](sink::TraceSink& w) { w.write_context_leave(loc, l->timestamp_ns, ctx); });
      } else if (const auto* ev = std::get_if<raw::Event>(&record)) {
        if (location_of(ev->location, &loc)) write_event(*ev, loc, p, refs);
      }
    };
    // A device location's records wait for its end, to be written in time
    // order (device_order.h).
    DeviceRecordOrder device_order;
    DeviceRecordOrder::Moved moved;
    const auto is_device = [&](uint32_t location) {
      const auto t = p.threads.find(location);
      return t != p.threads.end() && t->second.kind == raw::LocationKind::kDeviceStream;
    };
    const auto add = [&](uint32_t location, const DeviceRecordOrder::Record& record) {
      if (is_device(location))
        device_order.add(location, record);
      else
        write_region_or_event(record);
    };
    auto on_record = [&](const raw::Record& record) {
      if (const auto* s = std::get_if<raw::Sample>(&record)) {
        const uint32_t ctx = s->node < contexts.size() ? contexts[s->node] : kUndefined;
        if (ctx == kUndefined || !location_of(s->location, &loc)) return;
        // OTF2 samples carry no weight: a sample standing for several
        // periods (POSIX timer overruns) is written that many times.
        writers_.each([&](sink::TraceSink& w) {
          for (uint32_t i = 0; i < s->weight; ++i) w.write_sample(loc, s->timestamp_ns, ctx, depth[s->node], generator);
        });
      } else if (const auto* e = std::get_if<raw::Enter>(&record)) {
        add(e->location, *e);
      } else if (const auto* l = std::get_if<raw::Leave>(&record)) {
        add(l->location, *l);
      } else if (const auto* ev = std::get_if<raw::Event>(&record)) {
        add(ev->location, *ev);
      } else if (const auto* t = std::get_if<raw::LocationEnd>(&record)) {
        moved.add(device_order.release(t->location, write_region_or_event));
        if (location_of(t->location, &loc)) {
          ended.insert(t->location);
          writers_.each([&](sink::TraceSink& w) { w.end_thread(loc, t->timestamp_ns); });
        }
      }
    };
    std::string error;
    raw::ReadSummary summary;
    raw::read_stream(p.path, on_record, &summary, &error);
    for (uint32_t location : device_order.locations()) moved.add(device_order.release(location, write_region_or_event));
    if (moved.noticeable > 0)
      result_->warnings.push_back(std::to_string(moved.regions) + " pieces of device work began before the work before " +
                                  "them on their stream ended (by up to " + std::to_string(moved.max_ns / 1000) +
                                  " us) and were moved to start after it");
    for (const auto& [index, t] : p.threads) {
      if (!ended.count(index) && location_of(index, &loc))
        writers_.each([&](sink::TraceSink& w) { w.end_thread(loc, t.last_ns); });
    }
  }

  // An adapter's event, as its set's: a kind outside every set the stream
  // defined, or one the sinks cannot write, is skipped and counted.
  void write_event(const raw::Event& e, uint64_t loc, const RawProcess& p, const ProcessRefs& refs) {
    auto set = p.event_sets.upper_bound(e.kind);
    if (set == p.event_sets.begin() || e.kind - (--set)->first >= set->second.kinds) {
      ++result_->events_skipped;  // its set's definition was in a lost chunk
      return;
    }
    static const std::map<uint32_t, uint32_t> kNone;
    // Events come in runs of one set: its definitions are looked up by
    // name (a string compare a step) once a run, not once an event.
    if (last_set_.refs != &refs || last_set_.base != set->first) {
      auto defined = refs.definitions.find(set->second.name);
      last_set_ = {&refs, set->first, defined == refs.definitions.end() ? &kNone : &defined->second};
    }
    const sink::EventRefs set_refs{last_set_.definitions};
    const bool written = writers_.each([&](sink::TraceSink& w) {
      return w.write_event(loc, e.timestamp_ns, set->second.name, e.kind - set->first, e.payload, set_refs);
    });
    ++(written ? result_->traced_events : result_->events_skipped);
  }

  void write_archive_properties(const std::vector<ArchiveEntry>& entries) {
    const ProcessDefinitions& first = *entries.front().definitions;
    // Said once for the job: helper processes of a program that opens its
    // windows in one process only never open one themselves.
    const auto window_marks = [](const ArchiveEntry& e) { return e.definitions->has_window_marks; };
    if (std::any_of(entries.begin(), entries.end(), window_marks) &&
        std::none_of(entries.begin(), entries.end(),
                     [](const ArchiveEntry& e) { return !e.definitions->capture_windows.empty(); }))
      result_->warnings.push_back("no capture window was opened: nothing was recorded (--paused without "
                                  "hybridprof_start(), or --delay longer than the run)");
    // Each said once, with how many processes said it where more than one.
    std::vector<std::pair<std::string, size_t>> said;
    for (const auto& e : entries) {
      for (const auto& n : e.definitions->notices) {
        auto it = std::find_if(said.begin(), said.end(), [&](const auto& s) { return s.first == n; });
        if (it == said.end())
          said.emplace_back(n, 1);
        else
          ++it->second;
      }
    }
    std::vector<std::string> notices;
    for (const auto& [text, processes] : said)
      notices.push_back(processes > 1 ? text + " (" + std::to_string(processes) + " processes)" : text);
    for (const auto& w : result_->warnings) notices.push_back(w);
    const std::string period = first.frequency ? std::to_string(first.period) + " Hz"
                               : first.mechanism == "perf_event" ? std::to_string(first.period) + " events"
                                                                 : std::to_string(first.period) + " ns";
    writers_.each([&](sink::TraceSink& w) {
      w.set_property(otf2::property::kProgram, first.command);
      w.set_property(otf2::property::kEvent, first.event);
      w.set_property(otf2::property::kMechanism, first.mechanism);
      w.set_property(otf2::property::kKernelTime, first.kernel_time);
      w.set_property(otf2::property::kPeriod, period);
      w.set_property(otf2::property::kPeriods, first.periods);
      w.set_property(otf2::property::kVersion, build_version());
      w.set_property(otf2::property::kCommit, build_commit());
      w.set_property(otf2::property::kNotices, join(notices, "\n"));
      w.set_property(otf2::property::kWrittenBy, options_.written_by);
    });
  }

  // write_event's last set: its process's refs, its first kind, its definitions.
  struct LastSet {
    const ProcessRefs* refs = nullptr;
    uint32_t base = 0;
    const std::map<uint32_t, uint32_t>* definitions = nullptr;
  } last_set_;
  const Options& options_;
  ArchiveWriter::Collective* collective_;
  Result* result_;
  Writers writers_;
  uint32_t machine_ = kUndefined;
};

}  // namespace

namespace {

// The symbol cache this run's symbolizers use (none: --no-symbol-cache, or
// no cache directory). Also readies libdw's environment: it may ask
// debuginfod servers for missing debug files, never from a profiler's exit
// path (compute nodes rarely have network, and it is slow).
std::optional<symbolizer::SymbolCache> symbol_cache() {
  unsetenv("DEBUGINFOD_URLS");
  const char* off = std::getenv(env::kNoSymbolCache);
  const std::string directory = symbolizer::SymbolCache::default_directory();
  if ((off && std::string(off) == "1") || directory.empty()) return std::nullopt;
  return symbolizer::SymbolCache(directory);
}

void note_symbol_cache_use(const symbolizer::Symbolizer& symbolizer, std::optional<symbolizer::SymbolCache>& cache,
                           std::vector<std::string>* warnings, Result* result) {
  if (!cache) return;
  for (auto& w : cache->take_warnings()) warnings->push_back(std::move(w));
  if (result) {
    result->symbol_modules_cached += symbolizer.cache_use().modules_cached;
    result->symbol_modules_read += symbolizer.cache_use().modules_read;
  }
}

}  // namespace

bool symbol_cache_enabled() { return symbol_cache().has_value(); }

std::vector<LocalProcess> read_raw_processes(const std::vector<std::string>& files, std::vector<std::string>* warnings) {
  std::vector<LocalProcess> processes;
  for (const auto& file : files) {
    show_progress("reading processes", processes.size() + 1, files.size());
    LocalProcess p;
    std::string why;
    if (!read_definitions(file, &p.raw, &why)) {
      warnings->push_back("skipped " + why);
      continue;
    }
    processes.push_back(std::move(p));
  }
  return processes;
}

void describe_processes(std::vector<LocalProcess>& processes, const std::map<uint64_t, std::string>& exit_statuses,
                        std::vector<std::string>* warnings, Result* result) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<symbolizer::SymbolCache> cache = symbol_cache();
  symbolizer::Symbolizer symbolizer(cache ? &*cache : nullptr);
  size_t done = 0;
  for (LocalProcess& p : processes) {
    show_progress("symbolizing processes", ++done, processes.size());
    p.definitions = describe_process(p.raw, symbolizer, exit_statuses);
  }
  symbolizer.save();
  note_symbol_cache_use(symbolizer, cache, warnings, result);
  if (result)
    result->phase_symbolize_ms = uint64_t(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  std::vector<ProcessDefinitions*> named;
  for (LocalProcess& p : processes) named.push_back(&p.definitions);
  name_processes(named);
}

void name_in_cache(const SymbolQueries& queries, std::vector<std::string>* warnings, Result* result) {
  std::optional<symbolizer::SymbolCache> cache = symbol_cache();
  if (!cache) return;
  symbolizer::Symbolizer symbolizer(&*cache);
  for (const auto& [path, addresses] : queries.frames)
    for (uint64_t address : addresses) symbolizer.resolve(path, address);
  for (const auto& [path, addresses] : queries.statements)
    for (uint64_t address : addresses) symbolizer.call_is_statement(path, address);
  symbolizer.save();
  note_symbol_cache_use(symbolizer, cache, warnings, result);
}

std::vector<LocalProcess> read_processes(const std::vector<std::string>& files,
                                         const std::map<uint64_t, std::string>& exit_statuses,
                                         std::vector<std::string>* warnings, Result* result) {
  std::vector<LocalProcess> processes = read_raw_processes(files, warnings);
  describe_processes(processes, exit_statuses, warnings, result);
  return processes;
}

void write_archive(const Options& options, const tree::Definitions& contexts, std::vector<ArchiveEntry> entries,
                   ArchiveWriter::Collective* collective, Result* result) {
  if (entries.empty()) throw std::invalid_argument("write_archive: no processes");
  Finalizer(options, collective, result).run(contexts, entries);
}

std::vector<std::string> raw_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& raw_dir : raw_directories(dir))
    for (const auto& name : entries(raw_dir))
      if (name.size() > 4 && ends_with(name, ".hpr")) files.push_back(raw_dir + "/" + name);
  return files;
}

namespace {
constexpr const char* kArchiveParts[] = {"traces.otf2", "traces.def", "traces", "enter-leave"};

bool has_archive_part(const std::string& archive_directory) {
  std::error_code ignored;
  for (const char* name : kArchiveParts)
    if (std::filesystem::exists(std::filesystem::symlink_status(std::filesystem::path(archive_directory) / name, ignored)))
      return true;
  return false;
}
}  // namespace

bool finalize(const Options& options, Result* result, std::string* error) {
  struct ProgressLine {
    ~ProgressLine() { end_progress(); }  // whatever comes next starts a clean line
  } progress_line;
  const std::vector<std::string> files = raw_files(options.directory);
  if (files.empty()) {
    *error = "no raw data in " + options.directory + "/raw or " + options.directory +
             "/rank-*/raw (was the program run under hybridprof?)";
    return false;
  }
  std::vector<LocalProcess> processes = read_processes(files, options.exit_statuses, &result->warnings, result);
  if (processes.empty()) {
    *error = "no readable raw data in " + options.directory + "/raw";
    return false;
  }
  std::vector<const ProcessDefinitions*> definitions;
  for (const auto& p : processes) definitions.push_back(&p.definitions);
  std::vector<std::vector<uint32_t>> node_contexts;
  const tree::Definitions contexts = merged_context_tables(definitions, &node_contexts);
  for (auto& p : processes) std::vector<ContextNode>().swap(p.definitions.contexts);  // in `contexts` now
  std::vector<ArchiveEntry> entries;
  for (size_t i = 0; i < processes.size(); ++i)
    entries.push_back({&processes[i].definitions, &processes[i].raw, &node_contexts[i]});
  const std::string archive_directory = options.archive_directory.empty() ? options.directory : options.archive_directory;
  const bool archive_was_there = has_archive_part(archive_directory);
  try {
    write_archive(options, contexts, std::move(entries), nullptr, result);
    if (options.sinks.empty())
      if (const std::string problem = incomplete_archive_problem(archive_directory); !problem.empty())
        throw std::runtime_error("the archive is incomplete: " + problem);
  } catch (const std::exception& e) {
    // Half an archive (a full disk) would only stand in the way of the
    // next try; the raw data it came from stays.
    if (options.sinks.empty() && !archive_was_there) remove_archive(archive_directory);
    *error = std::string(e.what()) + " (the raw data is kept: hybridprof-merge " + options.directory +
             " writes the archive from it)";
    return false;
  }
  return true;
}

void remove_archive(const std::string& archive_directory) {
  std::error_code ignored;
  for (const char* name : kArchiveParts) std::filesystem::remove_all(std::filesystem::path(archive_directory) / name, ignored);
}

}  // namespace hybridprof::finalize
