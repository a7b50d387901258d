#include "finalize/finalizer.h"

#include <dirent.h>
#include <sys/stat.h>
#include <cstdlib>

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "finalize/raw_process.h"
#include "otf2/archive_writer.h"
#include "otf2/property_names.h"
#include "symbolizer/symbolizer.h"
#include "unwind/python/python_lines.h"

namespace hybridprof::finalize {
namespace {

using otf2::ArchiveWriter;
using otf2::kUndefined;
using otf2::Paradigm;
constexpr uint64_t kNoLocation = UINT64_MAX;
// Raw MPI events carry collective operations in OTF2's numbering.
static_assert(uint32_t(otf2::CollectiveOp::kBarrier) == uint32_t(raw::CollectiveOp::kBarrier));
static_assert(uint32_t(otf2::CollectiveOp::kExscan) == uint32_t(raw::CollectiveOp::kExscan));
static_assert(uint32_t(otf2::CollectiveOp::kReduceScatterBlock) == uint32_t(raw::CollectiveOp::kReduceScatterBlock));

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

std::vector<std::string> raw_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& raw_dir : raw_directories(dir))
    for (const auto& name : entries(raw_dir))
      if (name.size() > 4 && ends_with(name, ".hpr")) files.push_back(raw_dir + "/" + name);
  return files;
}

std::string basename_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// OTF2 readers correct a location's times only between two offsets or more.
// A rank that died before MPI_Finalize measured one (at MPI_Init): repeat it
// at the process's last event, so its timeline is shifted all the same.
std::vector<raw::ClockOffset> offsets_for_readers(const RawProcess& p) {
  std::vector<raw::ClockOffset> offsets = p.clock_offsets;
  if (offsets.size() == 1) {
    raw::ClockOffset last = offsets.front();
    last.timestamp_ns = std::max(p.last_ns, last.timestamp_ns + 1);
    offsets.push_back(last);
  }
  return offsets;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// Sends every definition and event to each writer (the calling-context
// archive and, on request, the enter/leave one). Both see the same calls in
// the same order, so their refs agree.
class Writers {
 public:
  void add(std::unique_ptr<ArchiveWriter> w) { writers_.push_back(std::move(w)); }
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

 private:
  std::vector<std::unique_ptr<ArchiveWriter>> writers_;
};

class Finalizer {
 public:
  Finalizer(const Options& options, Result* result) : options_(options), result_(result) {}

  void run(std::vector<RawProcess>& processes) {
    const std::string dir = options_.archive_directory.empty() ? options_.directory : options_.archive_directory;
    ArchiveWriter::Options main_options;
    main_options.directory = dir;
    writers_.add(std::make_unique<ArchiveWriter>(main_options));
    result_->anchor = dir + "/traces.otf2";
    if (options_.enter_leave) {
      ArchiveWriter::Options el = main_options;
      el.directory = dir + "/enter-leave";
      el.enter_leave = true;
      writers_.add(std::make_unique<ArchiveWriter>(el));
      result_->enter_leave_anchor = el.directory + "/traces.otf2";
    }
    // MPI ranks in rank order, then other processes; parents before
    // children (start time).
    std::stable_sort(processes.begin(), processes.end(), [](const RawProcess& a, const RawProcess& b) {
      const int64_t ra = a.mpi_world ? a.mpi_world->rank : INT64_MAX, rb = b.mpi_world ? b.mpi_world->rank : INT64_MAX;
      if (ra != rb) return ra < rb;
      return a.begin->monotonic_ns < b.begin->monotonic_ns;
    });
    machine_ = writers_.each([](ArchiveWriter& w) {
      return w.define_system_tree_node("machine", "machine", kUndefined);
    });
    std::vector<ProcessRefs> refs;
    for (auto& p : processes) refs.push_back(define_process(p));
    define_mpi(processes, refs);
    for (size_t i = 0; i < processes.size(); ++i) stream_events(processes[i], refs[i]);
    write_archive_properties(processes);
    otf2::ClockInfo clock;
    uint64_t first = UINT64_MAX, last = 0;
    for (const auto& p : processes) {
      first = std::min(first, p.begin->monotonic_ns);
      last = std::max(last, p.last_ns);
    }
    clock.global_offset = first;
    clock.trace_length = last > first ? last - first : 1;
    const auto& p0 = processes.front().begin;
    clock.realtime_ns_at_offset = p0->realtime_ns - (p0->monotonic_ns - first);
    writers_.each([&](ArchiveWriter& w) { w.close(clock); });
  }

 private:
  // The OTF2 references of one process image.
  struct ProcessRefs {
    std::vector<uint32_t> contexts;        // by raw CCT node
    std::map<uint32_t, uint64_t> locations;  // by raw thread index
    uint32_t generator = kUndefined;
    std::map<uint32_t, uint32_t> comms;      // by raw CommDef id
  };

  ProcessRefs define_process(RawProcess& p) {
    const raw::ProcessBegin& b = *p.begin;
    ++result_->processes;
    ProcessRefs refs;
    const uint32_t node = writers_.each([&](ArchiveWriter& w) {
      return w.define_system_tree_node(b.hostname, "node", machine_);
    });
    // The PID is a property of its own (readers show it next to the name).
    const std::string name = b.mpi_rank >= 0 ? "rank " + std::to_string(b.mpi_rank) : basename_of(b.executable);
    const uint32_t group = writers_.each([&](ArchiveWriter& w) { return w.define_process(name, node); });
    set_process_properties(p, group);
    const bool time_based = b.mechanism != "perf_event" || b.frequency || b.event.find("clock") != std::string::npos;
    const uint64_t period = b.frequency && b.period ? 1000000000ull / b.period : b.period;
    refs.generator = writers_.each([&](ArchiveWriter& w) {
      return w.define_interrupt_generator(b.event, time_based, period);
    });
    refs.contexts = define_contexts(p);
    for (auto& [index, t] : p.threads) {
      std::string thread_name = index == 0 ? "main thread" : "thread " + std::to_string(index);
      // Name threads the program named (pthread_setname_np) after it.
      if (t.end && !t.end->name.empty() && t.end->name != basename_of(b.executable).substr(0, 15))
        thread_name += " (" + t.end->name + ")";
      const uint64_t loc = writers_.each([&](ArchiveWriter& w) { return w.define_thread(group, thread_name); });
      refs.locations[index] = loc;
      set_thread_properties(p, t, loc);
      for (const auto& c : offsets_for_readers(p))
        writers_.each([&](ArchiveWriter& w) { w.add_clock_offset(loc, c.timestamp_ns, c.offset_ns, double(c.stddev_ns)); });
    }
    return refs;
  }

  // The MPI world (each rank's main thread, a placeholder for a rank whose
  // data is missing) and the communicators, unified across ranks by key.
  void define_mpi(const std::vector<RawProcess>& processes, std::vector<ProcessRefs>& refs) {
    uint32_t world_size = 0;
    for (const auto& p : processes)
      if (p.mpi_world) world_size = std::max(world_size, p.mpi_world->size);
    if (world_size == 0) return;
    std::vector<uint64_t> rank_locations(world_size, kNoLocation);
    for (size_t i = 0; i < processes.size(); ++i) {
      const auto& w = processes[i].mpi_world;
      if (w && w->rank < world_size && rank_locations[w->rank] == kNoLocation &&
          !refs[i].locations.empty())
        rank_locations[w->rank] = refs[i].locations.begin()->second;
    }
    for (uint32_t rank = 0; rank < world_size; ++rank) {
      if (rank_locations[rank] != kNoLocation) continue;
      result_->warnings.push_back("rank " + std::to_string(rank) + " of " + std::to_string(world_size) +
                                  ": no data (it died before its first flush, or its raw data is not in this directory)");
      ++result_->missing_ranks;
      rank_locations[rank] = writers_.each([&](ArchiveWriter& w) {
        const uint32_t node = w.define_system_tree_node("unknown", "node", machine_);
        const uint32_t group = w.define_process("rank " + std::to_string(rank) + " (missing)", node);
        return w.define_thread(group, "main thread");
      });
    }
    writers_.each([&](ArchiveWriter& w) { w.define_mpi_world(rank_locations); });
    std::map<uint64_t, uint32_t> by_key;
    std::vector<uint32_t> all_ranks(world_size);
    for (uint32_t r = 0; r < world_size; ++r) all_ranks[r] = r;
    for (size_t i = 0; i < processes.size(); ++i) {
      for (const auto& [id, c] : processes[i].comms) {
        auto known = by_key.find(c.key);
        if (known == by_key.end()) {
          uint32_t ref;
          if (c.key == raw::kCommSelfKey) {
            ref = writers_.each([&](ArchiveWriter& w) { return w.define_comm_self(); });
          } else {
            auto parent = refs[i].comms.find(c.parent);
            const uint32_t parent_ref = parent == refs[i].comms.end() ? kUndefined : parent->second;
            const auto& members = c.key == raw::kCommWorldKey ? all_ranks : c.members;
            ref = writers_.each([&](ArchiveWriter& w) { return w.define_comm(c.name, members, parent_ref); });
          }
          known = by_key.emplace(c.key, ref).first;
        }
        refs[i].comms[id] = known->second;
      }
    }
  }

  void set_process_properties(const RawProcess& p, uint32_t group) {
    const raw::ProcessBegin& b = *p.begin;
    std::string status = "-";
    if (auto it = options_.exit_statuses.find(b.pid); it != options_.exit_statuses.end()) {
      status = it->second;
    } else if (p.end) {
      switch (p.end->reason) {
        case raw::EndReason::kExit: status = p.end->status >= 0 ? "exit " + std::to_string(p.end->status) : "exit"; break;
        case raw::EndReason::kSignal: status = "signal " + std::to_string(p.end->status); break;
        case raw::EndReason::kExec: status = "exec"; break;
      }
    } else {
      status = "unknown (no final flush)";
    }
    writers_.each([&](ArchiveWriter& w) {
      w.set_process_property(group, otf2::property::kPid, std::to_string(b.pid));
      w.set_process_property(group, otf2::property::kExitStatus, status);
      w.set_process_property(group, otf2::property::kSamplesWithoutThread,
                             std::to_string(p.end ? p.end->samples_without_thread : 0));
      w.set_process_property(group, "COMMAND", join(b.args, " "));
      if (!b.python.empty()) w.set_process_property(group, otf2::property::kPython, b.python);
    });
  }

  void set_thread_properties(const RawProcess& p, const RawThread& t, uint64_t loc) {
    // The thread's own counters when it ended cleanly; what the stream holds otherwise.
    raw::ThreadCounters c = t.end ? t.end->counters : raw::ThreadCounters{t.samples_seen, 0, 0, 0, 0};
    // Samples counted in the ring but lost with a torn last chunk are drops too.
    if (c.samples > t.samples_seen) c.dropped += c.samples - t.samples_seen;
    c.samples = t.samples_seen;
    result_->threads += 1;
    result_->samples += c.samples;
    result_->dropped += c.dropped;
    if (c.dropped_events)
      result_->warnings.push_back("thread " + std::to_string(t.tid) + ": " + std::to_string(c.dropped_events) +
                                  " traced events lost to a full ring (raise HYBRIDPROF_RING_KB)");
    result_->unwind_failed += c.unwind_failed;
    result_->truncated += c.truncated;
    const bool python = !p.begin->python.empty();
    if (python) result_->python_incomplete += t.python_incomplete;
    writers_.each([&](ArchiveWriter& w) {
      w.set_thread_property(loc, otf2::property::kSamples, c.samples);
      w.set_thread_property(loc, otf2::property::kDropped, c.dropped);
      w.set_thread_property(loc, otf2::property::kDroppedEvents, c.dropped_events);
      w.set_thread_property(loc, otf2::property::kUnwindFailures, c.unwind_failed);
      w.set_thread_property(loc, otf2::property::kTruncated, c.truncated);
      w.set_thread_property(loc, otf2::property::kTid, t.tid);
      if (python) w.set_thread_property(loc, otf2::property::kPythonIncomplete, t.python_incomplete);
    });
  }

  // One OTF2 calling context per frame: a raw node whose address lies in
  // inlined code becomes a chain (the out-of-line function, then each
  // inlined callee). Returns, per raw node, its innermost context.
  // A Python frame: its function is a region of paradigm Python named by
  // qualname, in its file; the line of the sampled instruction is the
  // context's source location.
  uint32_t define_python_context(const RawProcess& p, const raw::CctNode& n, uint32_t parent) {
    const uint32_t code_id = uint32_t(n.offset >> 32);
    const int64_t byte_offset = int64_t(uint32_t(n.offset)) - 1;
    auto c = p.python_codes.find(code_id);
    if (c == p.python_codes.end()) {
      return writers_.each([&](ArchiveWriter& w) {
        const uint32_t region = w.define_region("[Python code not readable]", "", 0, Paradigm::kPython);
        return w.define_calling_context(region, kUndefined, parent);
      });
    }
    const raw::PythonCode& code = c->second;
    const uint32_t line = python::line_for_offset(static_cast<python::LineTableFormat>(code.line_format),
                                                  code.linetable, code.firstlineno, byte_offset);
    return writers_.each([&](ArchiveWriter& w) {
      const uint32_t region = w.define_region(code.qualname, code.filename, code.firstlineno, Paradigm::kPython);
      const uint32_t scl = line ? w.define_source_location(code.filename, line) : kUndefined;
      return w.define_calling_context(region, scl, parent);
    });
  }

  std::vector<uint32_t> define_contexts(const RawProcess& p) {
    std::vector<uint32_t> ctx(std::max<size_t>(p.nodes.size(), raw::kFirstCctNode), kUndefined);
    auto synthetic = [&](const char* name) {
      return writers_.each([&](ArchiveWriter& w) {
        const uint32_t region = w.define_region(name, "", 0, Paradigm::kSampling);
        return w.define_calling_context(region, kUndefined, kUndefined);
      });
    };
    ctx[raw::kRootComplete] = kUndefined;
    ctx[raw::kRootTruncated] = synthetic("[truncated stack]");
    ctx[raw::kRootUnwindFailed] = synthetic("[incomplete unwind]");
    for (size_t id = raw::kFirstCctNode; id < p.nodes.size(); ++id) {
      const raw::CctNode& n = p.nodes[id];
      if (n.id != id) continue;  // a gap: the node was in a lost chunk
      uint32_t parent = n.parent < ctx.size() ? ctx[n.parent] : kUndefined;
      if (n.module == raw::kTracedRegionModule) {
        auto r = p.regions.find(uint32_t(n.offset));
        if (r == p.regions.end()) continue;  // its definition was lost
        ctx[id] = writers_.each([&](ArchiveWriter& w) {
          const uint32_t region = w.define_region(r->second.name, "", 0, static_cast<Paradigm>(r->second.paradigm));
          return w.define_calling_context(region, kUndefined, parent);
        });
        continue;
      }
      if (n.module == raw::kPythonModule) {
        ctx[id] = define_python_context(p, n, parent);
        continue;
      }
      auto m = p.modules.find(n.module);
      const std::string module = m == p.modules.end() ? std::string() : m->second.path;
      for (const auto& f : frames_for(p, n)) {
        parent = writers_.each([&](ArchiveWriter& w) {
          const uint32_t region = w.define_region(f.function, f.file, 0, Paradigm::kSampling, module);
          const uint32_t scl = f.line ? w.define_source_location(f.file, f.line) : kUndefined;
          return w.define_calling_context(region, scl, parent);
        });
      }
      ctx[id] = parent;
    }
    return ctx;
  }

  // Outermost first.
  std::vector<symbolizer::SourceFrame> frames_for(const RawProcess& p, const raw::CctNode& n) {
    std::vector<symbolizer::SourceFrame> frames;
    auto module = p.modules.find(n.module);
    if (n.module == raw::kUnknownModule || module == p.modules.end()) {
      frames.push_back({"[unknown]", "", 0, false, false});
      return frames;
    }
    frames = symbolizer_.resolve(module->second.path, n.offset);
    for (auto& f : frames) {
      // Stripped code: one region per module, not one per address.
      if (!f.resolved) f = {"[" + basename_of(module->second.path) + "]", "", 0, false, false};
    }
    std::reverse(frames.begin(), frames.end());
    return frames;
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
    auto on_record = [&](const raw::Record& record) {
      if (const auto* s = std::get_if<raw::Sample>(&record)) {
        const uint32_t ctx = s->node < contexts.size() ? contexts[s->node] : kUndefined;
        if (ctx == kUndefined || !location_of(s->thread, &loc)) return;
        // OTF2 samples carry no weight: a sample standing for several
        // periods (POSIX timer overruns) is written that many times.
        writers_.each([&](ArchiveWriter& w) {
          for (uint32_t i = 0; i < s->weight; ++i) w.write_sample(loc, s->timestamp_ns, ctx, depth[s->node], generator);
        });
      } else if (const auto* e = std::get_if<raw::Enter>(&record)) {
        const uint32_t ctx = e->node < contexts.size() ? contexts[e->node] : kUndefined;
        if (ctx != kUndefined && location_of(e->thread, &loc))
          writers_.each([&](ArchiveWriter& w) { w.write_context_enter(loc, e->timestamp_ns, ctx, depth[e->node]); });
      } else if (const auto* l = std::get_if<raw::Leave>(&record)) {
        const uint32_t ctx = l->node < contexts.size() ? contexts[l->node] : kUndefined;
        if (ctx != kUndefined && location_of(l->thread, &loc))
          writers_.each([&](ArchiveWriter& w) { w.write_context_leave(loc, l->timestamp_ns, ctx); });
      } else if (const auto* m = std::get_if<raw::MpiEvent>(&record)) {
        if (location_of(m->thread, &loc)) write_mpi_event(*m, loc, refs);
      } else if (const auto* t = std::get_if<raw::ThreadEnd>(&record)) {
        if (location_of(t->thread, &loc)) {
          ended.insert(t->thread);
          writers_.each([&](ArchiveWriter& w) { w.end_thread(loc, t->timestamp_ns); });
        }
      }
    };
    std::string error;
    raw::ReadSummary summary;
    raw::read_stream(p.path, on_record, &summary, &error);
    for (const auto& [index, t] : p.threads) {
      if (!ended.count(index))
        writers_.each([&](ArchiveWriter& w) { w.end_thread(locations.at(index), t.last_ns); });
    }
  }

  void write_mpi_event(const raw::MpiEvent& m, uint64_t loc, const ProcessRefs& refs) {
    using K = raw::MpiEventKind;
    const bool has_comm = m.kind == K::kSend || m.kind == K::kRecv || m.kind == K::kIsend || m.kind == K::kIrecv ||
                          m.kind == K::kCollectiveEnd || m.kind == K::kNonBlockingCollectiveComplete;
    uint32_t comm = kUndefined;
    if (has_comm) {
      auto it = refs.comms.find(m.comm);
      if (it == refs.comms.end()) {
        ++result_->mpi_events_without_comm;  // its definition was in a lost chunk
        return;
      }
      comm = it->second;
    }
    const auto op = static_cast<otf2::CollectiveOp>(m.op);
    const uint64_t t = m.timestamp_ns;
    ++result_->mpi_events;
    writers_.each([&](ArchiveWriter& w) {
      switch (m.kind) {
        case K::kSend: w.write_mpi_send(loc, t, m.peer, comm, m.tag, m.sent); break;
        case K::kRecv: w.write_mpi_recv(loc, t, m.peer, comm, m.tag, m.received); break;
        case K::kIsend: w.write_mpi_isend(loc, t, m.peer, comm, m.tag, m.sent, m.request); break;
        case K::kIsendComplete: w.write_mpi_isend_complete(loc, t, m.request); break;
        case K::kIrecvRequest: w.write_mpi_irecv_request(loc, t, m.request); break;
        case K::kIrecv: w.write_mpi_irecv(loc, t, m.peer, comm, m.tag, m.received, m.request); break;
        case K::kRequestTest: w.write_mpi_request_test(loc, t, m.request); break;
        case K::kRequestCancelled: w.write_mpi_request_cancelled(loc, t, m.request); break;
        case K::kCollectiveBegin: w.write_mpi_collective_begin(loc, t); break;
        case K::kCollectiveEnd: w.write_mpi_collective_end(loc, t, op, comm, m.peer, m.sent, m.received); break;
        case K::kNonBlockingCollectiveRequest: w.write_nonblocking_collective_request(loc, t, m.request); break;
        case K::kNonBlockingCollectiveComplete:
          w.write_nonblocking_collective_complete(loc, t, op, comm, m.peer, m.sent, m.received, m.request);
          break;
        case K::kCount: break;
      }
    });
  }

  void write_archive_properties(const std::vector<RawProcess>& processes) {
    const raw::ProcessBegin& b = *processes.front().begin;
    std::vector<std::string> notices;
    for (const auto& p : processes) {
      for (const auto& n : p.notices)
        if (std::find(notices.begin(), notices.end(), n) == notices.end()) notices.push_back(n);
    }
    for (const auto& w : result_->warnings) notices.push_back(w);
    const std::string period = b.frequency ? std::to_string(b.period) + " Hz"
                               : b.mechanism == "perf_event" ? std::to_string(b.period) + " events"
                                                             : std::to_string(b.period) + " ns";
    writers_.each([&](ArchiveWriter& w) {
      w.set_property(otf2::property::kProgram, join(b.args, " "));
      w.set_property(otf2::property::kEvent, b.event);
      w.set_property(otf2::property::kMechanism, b.mechanism);
      w.set_property(otf2::property::kPeriod, period);
      w.set_property(otf2::property::kVersion, HYBRIDPROF_VERSION);
      w.set_property(otf2::property::kNotices, join(notices, "\n"));
    });
  }

  const Options& options_;
  Result* result_;
  Writers writers_;
  uint32_t machine_ = kUndefined;
  symbolizer::Symbolizer symbolizer_;
};

}  // namespace

bool finalize(const Options& options, Result* result, std::string* error) {
  // libdw may ask debuginfod servers for missing debug files: never from a
  // profiler's exit path (compute nodes rarely have network, and it is slow).
  unsetenv("DEBUGINFOD_URLS");
  const std::vector<std::string> files = raw_files(options.directory);
  if (files.empty()) {
    *error = "no raw data in " + options.directory + "/raw or " + options.directory +
             "/rank-*/raw (was the program run under hybridprof?)";
    return false;
  }
  std::vector<RawProcess> processes;
  for (const auto& file : files) {
    RawProcess p;
    std::string why;
    if (!read_definitions(file, &p, &why)) {
      result->warnings.push_back("skipped " + why);
      continue;
    }
    const std::string who = "process " + std::to_string(p.begin->pid);
    if (!p.summary.problem.empty())
      result->warnings.push_back(who + ": " + p.summary.problem + ", " + std::to_string(p.summary.bytes_ignored) +
                                 " bytes of raw data lost");
    if (!p.end)
      result->warnings.push_back(who + " ended without a final flush (killed?): its last flush interval is missing");
    processes.push_back(std::move(p));
  }
  if (processes.empty()) {
    *error = "no readable raw data in " + options.directory + "/raw";
    return false;
  }
  try {
    Finalizer(options, result).run(processes);
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
  return true;
}

}  // namespace hybridprof::finalize
