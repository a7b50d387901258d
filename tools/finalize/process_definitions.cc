#include "finalize/process_definitions.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "finalize/perf_map_file.h"
#include "finalize/process_roles.h"
#include "symbolizer/perf_map.h"
#include "symbolizer/symbolizer.h"
#include "unwind/python/python_lines.h"

namespace hybridprof::finalize {
namespace {

using otf2::Paradigm;

std::string basename_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::string exit_status(const RawProcess& p, const std::map<uint64_t, std::string>& exit_statuses) {
  if (auto it = exit_statuses.find(p.begin->pid); it != exit_statuses.end()) return it->second;
  if (!p.end) return "unknown (no final flush)";
  switch (p.end->reason) {
    // Unknown only when the process left by a raw exit system call.
    case raw::EndReason::kExit:
      return p.end->status >= 0 ? "exit " + std::to_string(p.end->status) : "exit (code unknown)";
    case raw::EndReason::kSignal: return "signal " + std::to_string(p.end->status);
    case raw::EndReason::kExec: return "exec";
  }
  return "-";
}

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

// A process's time `ns` as readers see its events: OTF2 readers add the
// offset interpolated between the two measurements around it (the nearest
// one's outside them).
uint64_t job_time(const std::vector<raw::ClockOffset>& offsets, uint64_t ns) {
  if (offsets.empty()) return ns;
  auto after = std::upper_bound(offsets.begin(), offsets.end(), ns,
                                [](uint64_t t, const raw::ClockOffset& o) { return t < o.timestamp_ns; });
  int64_t offset = 0;
  if (after == offsets.begin()) {
    offset = after->offset_ns;
  } else if (after == offsets.end()) {
    offset = offsets.back().offset_ns;
  } else {
    const raw::ClockOffset& before = *(after - 1);
    const double f = double(ns - before.timestamp_ns) / double(after->timestamp_ns - before.timestamp_ns);
    offset = before.offset_ns + int64_t(f * double(after->offset_ns - before.offset_ns));
  }
  return uint64_t(int64_t(ns) + offset);
}

// The windows the stream's marks opened and closed (one open at the
// process's end closes there), and its marks, as the archive's properties.
void describe_capture_windows(const RawProcess& p, const std::vector<raw::ClockOffset>& offsets,
                              ProcessDefinitions* d) {
  bool open = false;
  uint64_t opened_at = 0;
  std::string opened_by;
  const auto window = [&](uint64_t to, const std::string& closed_by) {
    d->capture_windows += std::to_string(job_time(offsets, opened_at)) + " " + std::to_string(job_time(offsets, to)) +
                          "\t" + opened_by + "\t" + closed_by + "\n";
  };
  for (const raw::Mark& m : p.marks) {
    d->has_window_marks |= m.kind != raw::MarkKind::kMark;
    if (m.kind == raw::MarkKind::kMark) {
      d->marks += std::to_string(job_time(offsets, m.timestamp_ns)) + "\t" + m.text + "\n";
    } else if (m.kind == raw::MarkKind::kWindowOpen && !open) {
      open = true;
      opened_at = m.timestamp_ns;
      opened_by = m.text;
    } else if (m.kind == raw::MarkKind::kWindowClose && open) {
      open = false;
      window(m.timestamp_ns, m.text);
    }
  }
  if (open) window(std::max(p.last_ns, opened_at), "process end");
}

// A Python frame: its function is a region of paradigm Python named by
// qualname, in its file; the line of the sampled instruction is the
// context's source location. `lines`: the code objects' tables decoded
// so far (one function is reached at many offsets).
ContextFrame python_frame(const RawProcess& p, const raw::CctNode& n,
                          std::unordered_map<uint32_t, python::LineTable>& lines) {
  const uint32_t code_id = uint32_t(n.offset >> 32);
  const int64_t byte_offset = int64_t(uint32_t(n.offset)) - 1;
  auto c = p.python_codes.find(code_id);
  if (c == p.python_codes.end()) return {"[Python code not readable]", "", "", 0, 0, Paradigm::kPython};
  const raw::PythonCode& code = c->second;
  auto table = lines.find(code_id);
  if (table == lines.end())
    table = lines.try_emplace(code_id, static_cast<python::LineTableFormat>(code.line_format), code.linetable,
                              code.firstlineno).first;
  return {code.qualname, code.filename, "", code.firstlineno, table->second.line_at(byte_offset), Paradigm::kPython};
}

// Code in no module (`offset` is its address) is JIT code when the
// process's perf map names it: one region per name, in module [jit].
ContextFrame unknown_frame(const raw::CctNode& n, const symbolizer::PerfMap& jit_code) {
  if (const std::string* name = jit_code.find(n.offset)) return {symbolizer::demangle(*name), "", kJitModule, 0, 0};
  return {"[unknown]", "", "", 0, 0};
}

// Outermost first.
std::vector<ContextFrame> native_frames(const RawProcess& p, const raw::CctNode& n,
                                        symbolizer::Symbolizer& symbolizer, const symbolizer::PerfMap& jit_code) {
  if (n.module == raw::kUnknownModule) return {unknown_frame(n, jit_code)};
  auto module = p.modules.find(n.module);
  if (module == p.modules.end()) return {{"[unknown]", "", "", 0, 0}};  // its load record was lost
  const std::string& path = module->second.path;
  const std::vector<symbolizer::SourceFrame>& innermost_first = symbolizer.resolve(path, n.offset);
  std::vector<ContextFrame> frames;
  frames.reserve(innermost_first.size());
  for (auto f = innermost_first.rbegin(); f != innermost_first.rend(); ++f) {
    // Stripped code: one region per module, not one per address.
    if (!f->resolved) frames.push_back({"[" + basename_of(path) + "]", "", path, 0, 0});
    else frames.push_back({f->function, f->file, path, 0, f->line});
  }
  return frames;
}

// A traced region; one that stands for code (an outlined parallel body) is
// named with that code's source location, "!$omp parallel @solver.c:42",
// which is also its file and first line.
ContextFrame traced_region_frame(const RawProcess& p, const raw::RegionDef& r, symbolizer::Symbolizer& symbolizer) {
  ContextFrame frame{r.name, "", "", 0, 0, static_cast<Paradigm>(r.paradigm)};
  auto module = p.modules.find(r.code_module);
  if (r.code_module == raw::kUnknownModule || module == p.modules.end()) return frame;
  const std::vector<symbolizer::SourceFrame>& code = symbolizer.resolve(module->second.path, r.code_offset);
  // Innermost: a construct in an outlined body that the compiler inlined
  // into its caller (clang's ._debug__ bodies) is on its own line there.
  const symbolizer::SourceFrame& function = code.front();
  if (!function.resolved || function.file.empty()) {
    frame.region += " @" + function.function;
    return frame;
  }
  if (!r.implicit_name.empty() && !symbolizer.call_is_statement(module->second.path, r.code_offset))
    frame.region = r.implicit_name;
  frame.region += " @" + basename_of(function.file) + ":" + std::to_string(function.line);
  frame.file = function.file;
  frame.begin_line = function.line;
  return frame;
}

std::vector<ContextNode> describe_contexts(const RawProcess& p, symbolizer::Symbolizer& symbolizer,
                                          const symbolizer::PerfMap& jit_code) {
  std::vector<ContextNode> nodes(std::max<size_t>(p.nodes.size(), raw::kFirstCctNode));
  auto synthetic = [&](uint32_t id, const char* name) {
    nodes[id] = {true, raw::kRootComplete, {{name, "", "", 0, 0}}};
  };
  synthetic(raw::kRootTruncated, "[truncated stack]");
  synthetic(raw::kRootUnwindFailed, "[incomplete unwind]");
  std::unordered_map<uint32_t, python::LineTable> python_lines;
  for (size_t id = raw::kFirstCctNode; id < p.nodes.size(); ++id) {
    const raw::CctNode& n = p.nodes[id];
    if (n.id != id) continue;  // a gap: the node was in a lost chunk
    ContextNode& node = nodes[id];
    node.parent = n.parent;
    if (n.module == raw::kTracedRegionModule) {
      auto r = p.regions.find(uint32_t(n.offset));
      if (r == p.regions.end()) continue;  // its definition was lost
      node.frames = {traced_region_frame(p, r->second, symbolizer)};
    } else if (n.module == raw::kKernelModule) {
      node.frames = {{"[kernel]", "", "[kernel]", 0, 0}};
    } else if (n.module == raw::kProfilerModule) {
      node.frames = {{"[hybridprof]", "", "[hybridprof]", 0, 0}};
    } else if (n.module == raw::kPythonModule) {
      node.frames = {python_frame(p, n, python_lines)};
    } else {
      node.frames = native_frames(p, n, symbolizer, jit_code);
    }
    node.present = true;
  }
  return nodes;
}

// The names of the process's JIT code, from its perf map. The map is kept
// with the run even when no sample needs it: it is the run's record of its
// JIT code, and the launcher removes from /tmp only the maps it kept.
symbolizer::PerfMap jit_code_of(const RawProcess& p, std::vector<std::string>* warnings) {
  symbolizer::PerfMap map;
  const std::string path = find_perf_map(p, warnings);
  const bool needed = std::any_of(p.nodes.begin(), p.nodes.end(), [](const raw::CctNode& n) {
    return n.id >= raw::kFirstCctNode && n.module == raw::kUnknownModule;
  });
  if (path.empty() || !needed) return map;
  if (!map.load(path)) warnings->push_back("cannot read " + path + ": JIT code stays [unknown]");
  if (const uint64_t bad = map.malformed_lines())
    warnings->push_back(path + ": " + std::to_string(bad) + " malformed line(s) skipped");
  return map;
}

ThreadDefinition describe_thread(const RawProcess& p, const RawThread& t) {
  ThreadDefinition d;
  d.index = t.index;
  d.tid = t.tid;
  d.kind = t.kind;
  d.device = t.device;
  if (t.kind != raw::LocationKind::kThread) {
    d.name = t.name.empty() ? "stream " + std::to_string(t.tid) : t.name;
    d.last_ns = t.last_ns;
    return d;
  }
  d.name = t.index == 0 ? "main thread" : "thread " + std::to_string(t.index);
  // Name threads the program named (pthread_setname_np) after it.
  if (t.end && !t.end->name.empty() && t.end->name != basename_of(p.begin->executable).substr(0, 15))
    d.name += " (" + t.end->name + ")";
  // The thread's own counters when it ended cleanly; what the stream holds otherwise.
  d.counters = t.end ? t.end->counters : raw::ThreadCounters{t.samples_seen, 0, 0, 0, 0};
  // Samples counted in the ring but lost with a torn last chunk are drops too.
  if (d.counters.samples > t.samples_seen) d.counters.dropped += d.counters.samples - t.samples_seen;
  d.counters.samples = t.samples_seen;
  d.python_incomplete = t.python_incomplete;
  d.last_ns = t.last_ns;
  return d;
}

// A thread with nothing to show: no sample or traced record in the
// stream, and counters that say nothing was taken, lost or waited for.
bool quiet(const ThreadDefinition& d, const RawThread& t) {
  if (d.kind != raw::LocationKind::kThread || t.samples_seen != 0 || t.events_seen != 0) return false;
  for (const auto field : raw::kThreadCounterFields)
    if (d.counters.*field != 0) return false;
  return true;
}

}  // namespace

// The same walk as describe_contexts, asking nothing: what it will ask.
void add_symbol_queries(const RawProcess& p, SymbolQueries* queries) {
  const auto path_of = [&](uint32_t module) -> const std::string* {
    auto m = p.modules.find(module);
    return m == p.modules.end() ? nullptr : &m->second.path;
  };
  for (size_t id = raw::kFirstCctNode; id < p.nodes.size(); ++id) {
    const raw::CctNode& n = p.nodes[id];
    if (n.id != id) continue;
    if (n.module == raw::kTracedRegionModule) {
      auto r = p.regions.find(uint32_t(n.offset));
      if (r == p.regions.end() || r->second.code_module == raw::kUnknownModule) continue;
      if (const std::string* path = path_of(r->second.code_module)) {
        queries->frames[*path].insert(r->second.code_offset);
        if (!r->second.implicit_name.empty()) queries->statements[*path].insert(r->second.code_offset);
      }
    } else if (n.module != raw::kKernelModule && n.module != raw::kProfilerModule && n.module != raw::kPythonModule &&
               n.module != raw::kUnknownModule) {
      if (const std::string* path = path_of(n.module)) queries->frames[*path].insert(n.offset);
    }
  }
}

std::string milliseconds(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", double(ns) / 1e6);
  return text;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

ProcessDefinitions describe_process(const RawProcess& p, symbolizer::Symbolizer& symbolizer,
                                    const std::map<uint64_t, std::string>& exit_statuses) {
  const raw::ProcessBegin& b = *p.begin;
  ProcessDefinitions d;
  d.pid = b.pid;
  d.ppid = b.ppid;
  d.launcher_rank = b.launcher_rank;
  // The PID is a property of its own (readers show it next to the name).
  d.name = b.launcher_rank >= 0 ? "rank " + std::to_string(b.launcher_rank) : basename_of(b.executable);
  d.hostname = b.hostname;
  d.command = join(b.args, " ");
  d.python = b.python;
  d.exit_status = exit_status(p, exit_statuses);
  d.samples_without_thread = p.end ? p.end->samples_without_thread : 0;
  d.event = b.event;
  d.mechanism = b.mechanism;
  d.kernel_time = b.kernel_time;
  d.periods = b.periods;
  d.period = b.period;
  d.frequency = b.frequency;
  d.begin_monotonic_ns = b.monotonic_ns;
  d.begin_realtime_ns = b.realtime_ns;
  d.last_ns = p.last_ns;
  for (const auto& [index, t] : p.threads) {
    ThreadDefinition thread = describe_thread(p, t);
    if (quiet(thread, t) && !d.threads.empty()) {
      ++d.quiet_threads;
      continue;
    }
    d.threads.push_back(std::move(thread));
    const raw::ThreadCounters& c = d.threads.back().counters;
    if (c.dropped_events)
      d.warnings.push_back("thread " + std::to_string(t.tid) + ": " + std::to_string(c.dropped_events) +
                           " traced events lost to a full ring");
    if (c.ring_flushes)
      d.warnings.push_back("thread " + std::to_string(t.tid) + ": its ring was full " +
                           std::to_string(c.ring_flushes) + " times; it waited " + milliseconds(c.ring_flush_ns) +
                           " while it was written out (region 'hybridprof: ring flush'; a larger HYBRIDPROF_RING_KB "
                           "avoids it)");
  }
  d.clock_offsets = offsets_for_readers(p);
  describe_capture_windows(p, d.clock_offsets, &d);
  d.contexts = describe_contexts(p, symbolizer, jit_code_of(p, &d.warnings));
  d.role = process_role(b.args, d.contexts);
  d.job_rank = p.job_rank;
  for (const auto& [key, definition] : p.definitions) d.definitions.push_back(definition);
  d.notices = p.notices;
  const std::string who = "process " + std::to_string(b.pid);
  if (!p.summary.problem.empty())
    d.warnings.push_back(who + ": " + p.summary.problem + ", " + std::to_string(p.summary.bytes_ignored) +
                         " bytes of raw data lost");
  if (!p.end) d.warnings.push_back(who + " ended without a final flush (killed?): its last flush interval is missing");
  return d;
}

// --- Bytes ------------------------------------------------------------------
// Fixed-width little-endian fields (the ranks of one job share a machine
// type), strings and vectors with their length first. Both directions are
// spelled once, in visit(), for writing and for reading.
namespace {

constexpr uint64_t kMagic = 0x3566656470796268ull;  // "hbypdef5"

struct Writer {
  std::string out;
  template <typename T>
  void scalar(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
};

struct Reader {
  const std::string& in;
  size_t at = 0;
  bool ok = true;
  template <typename T>
  void scalar(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (in.size() - at < sizeof v) {
      ok = false;
      return;
    }
    std::memcpy(&v, in.data() + at, sizeof v);
    at += sizeof v;
  }
  // A count read from the bytes: never more items than bytes are left.
  bool count_fits(uint64_t n) const { return ok && n <= in.size() - at; }
};

// Declared before any use: the calls inside the templates are resolved
// where they are defined (ADL does not look into this unnamed namespace).
template <typename IO> void visit(IO& io, std::string& s);
template <typename IO, typename T> void visit(IO& io, std::vector<T>& v);
template <typename IO> void visit(IO& io, bool& b);
template <typename IO> void visit(IO& io, ContextFrame& f);
template <typename IO> void visit(IO& io, ContextNode& n);
template <typename IO> void visit(IO& io, raw::ThreadCounters& c);
template <typename IO> void visit(IO& io, ThreadDefinition& t);
template <typename IO> void visit(IO& io, raw::ClockOffset& c);
template <typename IO> void visit(IO& io, raw::Definition& d);
template <typename IO> void visit(IO& io, std::optional<raw::JobRank>& r);
template <typename IO> void visit(IO& io, ProcessDefinitions& p);
template <typename IO> void visit(IO& io, std::map<std::string, std::set<uint64_t>>& m);
template <typename IO, typename K, typename V, typename C> void visit(IO& io, std::map<K, V, C>& m);
template <typename IO> void visit(IO& io, DefinedRefs& r);

template <typename IO, typename T>
std::enable_if_t<(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) || std::is_enum_v<T>> visit(IO& io, T& v) {
  io.scalar(v);
}

// A byte, 0 or 1: any other value is not a bool (and must not become one).
template <typename IO>
void visit(IO& io, bool& b) {
  uint8_t byte = b ? 1 : 0;
  io.scalar(byte);
  if constexpr (std::is_same_v<IO, Reader>) {
    if (byte > 1) io.ok = false;
    b = byte == 1;
  }
}

template <typename IO>
void visit(IO& io, std::string& s) {
  uint64_t n = s.size();
  io.scalar(n);
  if constexpr (std::is_same_v<IO, Reader>) {
    if (!io.count_fits(n)) return void(io.ok = false);
    s.assign(io.in, io.at, n);
    io.at += n;
  } else {
    io.out += s;
  }
}

template <typename IO, typename T>
void visit(IO& io, std::vector<T>& v) {
  uint64_t n = v.size();
  io.scalar(n);
  if constexpr (std::is_same_v<IO, Reader>) {
    if (!io.count_fits(n)) return void(io.ok = false);
    v.resize(n);
  }
  for (auto& item : v) {
    visit(io, item);
    if constexpr (std::is_same_v<IO, Reader>) {
      if (!io.ok) return;
    }
  }
}

template <typename IO, typename... Fields>
void fields(IO& io, Fields&... f) { (visit(io, f), ...); }

template <typename IO> void visit(IO& io, ContextFrame& f) {
  fields(io, f.region, f.file, f.module, f.begin_line, f.line, f.paradigm);
}
template <typename IO> void visit(IO& io, ContextNode& n) { fields(io, n.present, n.parent, n.frames); }
template <typename IO> void visit(IO& io, raw::ThreadCounters& c) {
  for (auto field : raw::kThreadCounterFields) visit(io, c.*field);
}
template <typename IO> void visit(IO& io, ThreadDefinition& t) {
  fields(io, t.index, t.tid, t.name, t.kind, t.device, t.counters, t.python_incomplete, t.last_ns);
  if constexpr (std::is_same_v<IO, Reader>) {
    if (static_cast<uint32_t>(t.kind) > raw::kLastLocationKind) io.ok = false;
  }
}
template <typename IO> void visit(IO& io, raw::ClockOffset& c) { fields(io, c.timestamp_ns, c.offset_ns, c.stddev_ns); }
template <typename IO> void visit(IO& io, raw::Definition& d) { fields(io, d.set, d.id, d.name, d.values); }
template <typename IO> void visit(IO& io, std::optional<raw::JobRank>& r) {
  bool has = r.has_value();
  raw::JobRank value = r.value_or(raw::JobRank{});
  fields(io, has, value.rank, value.size);
  r = has ? std::optional<raw::JobRank>(value) : std::nullopt;
}
// Symbol queries' tables: the count, then each path and its addresses.
template <typename IO> void visit(IO& io, std::map<std::string, std::set<uint64_t>>& m) {
  uint64_t n = m.size();
  io.scalar(n);
  if constexpr (std::is_same_v<IO, Reader>) {
    if (!io.count_fits(n)) return void(io.ok = false);
    for (uint64_t i = 0; i < n && io.ok; ++i) {
      std::string path;
      std::vector<uint64_t> addresses;
      fields(io, path, addresses);
      m[path].insert(addresses.begin(), addresses.end());
    }
  } else {
    for (const auto& [key, set] : m) {
      std::string path = key;
      std::vector<uint64_t> addresses(set.begin(), set.end());
      fields(io, path, addresses);
    }
  }
}
// Maps: the count, then each key and value.
template <typename IO, typename K, typename V, typename C> void visit(IO& io, std::map<K, V, C>& m) {
  uint64_t n = m.size();
  io.scalar(n);
  if constexpr (std::is_same_v<IO, Reader>) {
    if (!io.count_fits(n)) return void(io.ok = false);
    for (uint64_t i = 0; i < n && io.ok; ++i) {
      K key{};
      V value{};
      fields(io, key, value);
      m.emplace(std::move(key), std::move(value));
    }
  } else {
    for (auto& [key, value] : m) {
      K k = key;
      fields(io, k, value);
    }
  }
}
template <typename IO> void visit(IO& io, DefinedRefs& r) {
  fields(io, r.pid, r.begin_monotonic_ns, r.generator, r.locations, r.definitions);
}
template <typename IO> void visit(IO& io, tree::Region& r) { fields(io, r.name, r.file, r.module, r.line, r.paradigm); }
template <typename IO> void visit(IO& io, tree::Context& c) { fields(io, c.region, c.line, c.parent); }
template <typename IO> void visit(IO& io, tree::Comm& c) { fields(io, c.key, c.name, c.members); }
template <typename IO> void visit(IO& io, tree::Definitions& d) { fields(io, d.strings, d.regions, d.contexts, d.comms); }
template <typename IO> void visit(IO& io, tree::Map& m) { fields(io, m.strings, m.regions, m.contexts, m.comms); }
template <typename IO> void visit(IO& io, SymbolQueries& q) { fields(io, q.frames, q.statements); }
template <typename IO> void visit(IO& io, ProcessDefinitions& p) {
  fields(io, p.pid, p.ppid, p.launcher_rank, p.name, p.role, p.hostname, p.command, p.python, p.exit_status,
         p.samples_without_thread, p.event, p.mechanism, p.kernel_time, p.periods, p.capture_windows, p.marks,
         p.has_window_marks, p.period, p.frequency, p.begin_monotonic_ns,
         p.begin_realtime_ns, p.last_ns, p.threads, p.quiet_threads, p.clock_offsets, p.contexts, p.job_rank, p.definitions, p.notices,
         p.warnings);
}

// One value of a type visit() knows, as bytes, and back (false: not one).
template <typename T>
std::string serialize_value(T value) {
  Writer w;
  uint64_t magic = kMagic;
  fields(w, magic, value);
  return std::move(w.out);
}
template <typename T>
bool parse_value(const std::string& bytes, T* out) {
  Reader r{bytes};
  uint64_t magic = 0;
  T value{};
  fields(r, magic, value);
  if (!r.ok || magic != kMagic || r.at != bytes.size()) return false;
  *out = std::move(value);
  return true;
}

}  // namespace

// By value: visit() takes its fields by reference, for both directions.
std::string serialize(std::vector<ProcessDefinitions> processes) { return serialize_value(std::move(processes)); }
bool parse(const std::string& bytes, std::vector<ProcessDefinitions>* out) { return parse_value(bytes, out); }
std::string serialize_tables(tree::Definitions tables) { return serialize_value(std::move(tables)); }
bool parse_tables(const std::string& bytes, tree::Definitions* out) { return parse_value(bytes, out); }
std::string serialize_map(tree::Map map) { return serialize_value(std::move(map)); }
bool parse_map(const std::string& bytes, tree::Map* out) { return parse_value(bytes, out); }

std::string serialize_refs(std::vector<DefinedRefs> refs) { return serialize_value(std::move(refs)); }
bool parse_refs(const std::string& bytes, std::vector<DefinedRefs>* out) { return parse_value(bytes, out); }

std::string serialize_queries(SymbolQueries queries) { return serialize_value(std::move(queries)); }
bool parse_queries(const std::string& bytes, SymbolQueries* out) { return parse_value(bytes, out); }

}  // namespace hybridprof::finalize
