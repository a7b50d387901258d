#include "chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cuda/cuda_otf2_events.h"
#include "otf2/archive_reader.h"
#include "otf2/capture_windows.h"
#include "otf2/paradigm.h"
#include "otf2/property_names.h"
#include "otf2/selection.h"

namespace hybridprof::convert {
namespace {

using otf2::MpiEventKind;

constexpr double kCounterBucketUs = 10'000;  // samples per 10 ms
constexpr uint64_t kFlowIdMask = (uint64_t{1} << 53) - 1;  // exact in a JavaScript number

// A sample's period in microseconds (1 ms when the archive counts events).
double sample_period_us(const otf2::Archive& a) {
  const double seconds = otf2::sample_period_seconds(a);
  return seconds > 0 ? seconds * 1e6 : 1000;
}

uint64_t fnv(std::initializer_list<uint64_t> values) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t v : values)
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h & kFlowIdMask;
}

class Converter {
 public:
  Converter(const otf2::ArchiveReader& reader, const otf2::Selection& asked, JsonFile& out)
      : a_(reader.archive()), out_(out), period_us_(sample_period_us(a_)) {
    const otf2::Selection selection = otf2::with_window_name(a_, asked);
    from_us_ = selection.from_s * 1e6;
    to_us_ = std::isinf(selection.to_s) ? selection.to_s : selection.to_s * 1e6;
    locations_ = otf2::selected_locations(a_, selection);
    for (uint64_t location : locations_) processes_.insert(a_.threads.at(location).process);
    const auto mpi = a_.comm_locations.find(otf2::Paradigm::kMpi);
    if (mpi != a_.comm_locations.end())
      for (size_t rank = 0; rank < mpi->second.size(); ++rank) world_rank_[mpi->second[rank]] = rank;
  }

  ChromeTraceCounts run(otf2::ArchiveReader& reader) {
    out_.raw("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"converter\":\"hybridprof-convert\",\"program\":");
    const auto program = a_.properties.find(otf2::property::kProgram);
    out_.string(program == a_.properties.end() ? "" : program->second);
    out_.raw("},\n\"traceEvents\":[\n");
    write_metadata();
    find_both_ends(reader);
    reader.read_events([&](const otf2::SampleEvent& e) { on_sample(e); },
                       [&](const otf2::RegionEvent& e) { on_region(e); },
                       [&](const otf2::MpiEvent& e) { on_mpi(e); }, {},
                       [&](const otf2::ParameterEvent& e) { on_parameter(e); });
    finish_location();
    write_device_busy();
    write_marks();
    out_.raw("\n],\n\"stackFrames\":{");
    write_stack_frames();
    out_.raw("},\n\"samples\":[\n");
    first_ = true;
    reader.read_events([&](const otf2::SampleEvent& e) { write_sample(e); });
    out_.raw("\n]}\n");
    return counts_;
  }

 private:
  // Messages a location sent or received so far, per (comm, src, dst, tag).
  using MessageOrdinals = std::map<std::tuple<uint32_t, uint64_t, uint64_t, uint32_t>, uint64_t>;
  // One end of an arrow (an MPI message's, a kernel launch's).
  struct FlowEnd {
    bool start;
    uint64_t id;
  };

  struct Open {
    uint32_t region;
    double enter_us;
    bool begun = false, ended = false;  // its B and E events written
    uint64_t sent = 0, received = 0, messages = 0, completions = 0;
    int64_t peer = -1, tag = -1;
    uint32_t comm = otf2::kUndefined;
    std::vector<std::pair<uint32_t, uint64_t>> parameters;  // written inside it (a kernel's grid...)
  };
  // The location being read (events come a location at a time).
  struct Current {
    uint64_t location = UINT64_MAX;
    std::vector<Open> open;
    std::vector<uint32_t> frames;  // its samples' contexts now, root first
    double last_sample_us = -1;
    double last_us = 0;  // its last record's time
    bool window_begun = false, window_ended = false;
    double bucket_us = -1;
    uint64_t bucket_samples = 0;
    MessageOrdinals messages;
  };

  double us(uint64_t timestamp) const {
    return double(timestamp - std::min(timestamp, a_.clock.global_offset)) * 1e6 / double(a_.clock.resolution);
  }
  bool in_window(double t) const { return t >= from_us_ && t <= to_us_; }
  static uint64_t events_tid(uint64_t location) { return (location + 1) * 2; }
  static uint64_t samples_tid(uint64_t location) { return (location + 1) * 2 + 1; }
  uint32_t pid_of(uint64_t location) const { return a_.threads.at(location).process + 1; }

  void separator() {
    out_.raw(first_ ? "" : ",\n");
    first_ = false;
  }
  void begin_event(const char* ph, uint64_t location, uint64_t tid, double ts) {
    separator();
    out_.raw("{\"ph\":\"");
    out_.raw(ph);
    out_.raw("\",\"pid\":");
    out_.number(pid_of(location));
    out_.raw(",\"tid\":");
    out_.number(tid);
    out_.raw(",\"ts\":");
    out_.fixed3(ts);
  }

  // A thread's track name: its name and TID, as the report's Threads table.
  std::string thread_title(uint64_t location) const {
    const otf2::ThreadInfo& t = a_.threads.at(location);
    const auto tid = t.properties.find(otf2::property::kTid);
    return tid == t.properties.end() ? t.name : t.name + " [" + std::to_string(tid->second) + "]";
  }

  std::string process_title(const otf2::ProcessInfo& p) const {
    std::string title = p.name;
    const auto pid = p.properties.find(otf2::property::kPid);
    if (pid != p.properties.end()) title += " (PID " + pid->second + ")";
    const auto node = a_.system_tree_nodes.find(p.system_tree_node);
    if (node != a_.system_tree_nodes.end()) title += " @" + node->second.name;
    return title;
  }

  // A metadata event up to its args' value: {"ph":"M","name":WHAT,...,"args":{"KEY":
  void begin_metadata(const char* what, uint32_t pid, const uint64_t* tid, const char* key) {
    separator();
    out_.raw("{\"ph\":\"M\",\"name\":\"");
    out_.raw(what);
    out_.raw("\",\"pid\":");
    out_.number(pid);
    if (tid) {
      out_.raw(",\"tid\":");
      out_.number(*tid);
    }
    out_.raw(",\"args\":{\"");
    out_.raw(key);
    out_.raw("\":");
  }
  void metadata(const char* what, uint32_t pid, const uint64_t* tid, const std::string& name) {
    begin_metadata(what, pid, tid, "name");
    out_.string(name);
    out_.raw("}}");
  }
  void sort_index(const char* what, uint32_t pid, const uint64_t* tid, uint64_t index) {
    begin_metadata(what, pid, tid, "sort_index");
    out_.number(index);
    out_.raw("}}");
  }

  void write_metadata() {
    for (uint32_t ref : processes_) {
      metadata("process_name", ref + 1, nullptr, process_title(a_.processes.at(ref)));
      sort_index("process_sort_index", ref + 1, nullptr, ref);
    }
    for (uint64_t location : locations_) {
      const otf2::ThreadInfo& t = a_.threads.at(location);
      const std::string name = thread_title(location);
      const uint64_t events = events_tid(location), samples = samples_tid(location);
      metadata("thread_name", pid_of(location), &events, name);
      sort_index("thread_sort_index", pid_of(location), &events, 2 * location);
      if (t.device != otf2::kUndefined) continue;  // a device stream takes no samples
      metadata("thread_name", pid_of(location), &samples, name + " samples");
      sort_index("thread_sort_index", pid_of(location), &samples, 2 * location + 1);
    }
  }

  // Events come a location at a time: a new one ends the last.
  bool enter_location(uint64_t location) {
    if (location != current_.location) {
      finish_location();
      current_ = Current{};
      current_.location = location;
    }
    return locations_.count(location) != 0;
  }

  void finish_location() {
    if (current_.location == UINT64_MAX || !locations_.count(current_.location)) return;
    // Regions still open end with the location's last record.
    while (!current_.open.empty()) leave_slice(current_.last_us);
    close_frames(0, std::min(current_.last_sample_us + period_us_, to_us_));
    end_bucket(true);
  }

  // --- Traced regions -------------------------------------------------------

  // Slices are B/E pairs, written as the location's records come (each
  // track in time order, nothing held back): the window's edges begin the
  // slices open across the start and end those open across the end.
  void sync_window(double t) {
    if (!current_.window_begun && t >= from_us_ && t <= to_us_) {
      current_.window_begun = true;
      for (Open& o : current_.open) {
        if (o.begun) continue;
        begin_slice(o, from_us_);
      }
    }
    if (!current_.window_ended && t > to_us_) {
      current_.window_ended = true;
      for (auto o = current_.open.rbegin(); o != current_.open.rend(); ++o)
        if (o->begun && !o->ended) end_slice(*o, to_us_);
      close_frames(0, to_us_);
    }
  }

  // A B event of region `region` on track `tid`, named and categorized.
  void begin_region(uint64_t tid, double at, uint32_t region_ref) {
    begin_event("B", current_.location, tid, at);
    out_.raw(region_fields(region_ref));
  }

  // `,"name":...,"cat":...}` of a region, escaped once: flame charts write
  // the same few thousand names millions of times.
  const std::string& region_fields(uint32_t region_ref) {
    auto [known, added] = region_fields_.try_emplace(region_ref);
    if (!added) return known->second;
    const auto region = a_.regions.find(region_ref);
    std::string& fields = known->second;
    fields = ",\"name\":";
    JsonFile::quote(fields, region == a_.regions.end() ? "?" : region->second.name);
    fields += ",\"cat\":";
    JsonFile::quote(fields, region == a_.regions.end() ? "unknown" : otf2::paradigm_name(region->second.paradigm));
    fields += '}';
    return fields;
  }

  void begin_slice(Open& o, double at) {
    o.begun = true;
    begin_region(events_tid(current_.location), at, o.region);
    ++counts_.slices;
  }

  // The E event carries the attributes the region's events gave it (Chrome
  // merges a slice's B and E args).
  void end_slice(Open& o, double at) {
    o.ended = true;
    begin_event("E", current_.location, events_tid(current_.location), at);
    if (o.messages || o.completions || o.peer >= 0 || o.sent || o.received || !o.parameters.empty()) {
      out_.raw(",\"args\":{");
      bool comma = false;
      const auto field = [&](const char* name, uint64_t value) {
        out_.raw(comma ? ",\"" : "\"");
        out_.raw(name);
        out_.raw("\":");
        out_.number(value);
        comma = true;
      };
      if (o.sent) field("bytes sent", o.sent);
      if (o.received) field("bytes received", o.received);
      if (o.messages) field("messages", o.messages);
      if (o.completions) field("requests completed", o.completions);
      if (o.peer >= 0) field("peer", static_cast<uint64_t>(o.peer));
      if (o.tag >= 0) field("tag", static_cast<uint64_t>(o.tag));
      const auto comm = a_.comms.find(o.comm);
      if (comm != a_.comms.end()) {
        out_.raw(comma ? ",\"communicator\":" : "\"communicator\":");
        out_.string(comm->second.name);
        comma = true;
      }
      for (const auto& [parameter, value] : o.parameters) {
        const auto name = a_.parameters.find(parameter);
        out_.raw(comma ? "," : "");
        out_.string(name == a_.parameters.end() ? "parameter " + std::to_string(parameter) : name->second);
        out_.raw(":");
        out_.number(value);
        comma = true;
      }
      out_.raw("}");
    }
    out_.raw("}");
  }

  void on_region(const otf2::RegionEvent& e) {
    if (!enter_location(e.location)) return;
    const double t = us(e.timestamp);
    current_.last_us = std::max(current_.last_us, t);
    sync_window(t);
    if (e.enter) {
      current_.open.push_back(Open{e.region, t, false, false, 0, 0, 0, 0, -1, -1, otf2::kUndefined, {}});
      if (in_window(t)) begin_slice(current_.open.back(), t);
      return;
    }
    if (current_.open.empty() || current_.open.back().region != e.region) return;  // unmatched: not a slice
    leave_slice(t);
  }

  void leave_slice(double leave_us) {
    Open& o = current_.open.back();
    if (o.begun && !o.ended) end_slice(o, std::min(leave_us, to_us_));
    if (current_.open.size() == 1) count_device_work(o.enter_us, leave_us);
    current_.open.pop_back();
  }

  // --- GPU busy share --------------------------------------------------------

  // Work on a device's streams, per 10 ms of the device's time (its
  // context's synchronizations are the host waiting, not the device).
  void count_device_work(double begin, double end) {
    const otf2::ThreadInfo& t = a_.threads.at(current_.location);
    if (t.device == otf2::kUndefined || t.name.rfind("CUDA synchronization", 0) == 0) return;
    begin = std::max(begin, from_us_);
    end = std::min(end, to_us_);
    std::map<int64_t, double>& buckets = device_busy_[t.device];
    for (double at = begin; at < end;) {
      const auto bucket = static_cast<int64_t>(std::floor(at / kCounterBucketUs));
      const double next = std::min(end, double(bucket + 1) * kCounterBucketUs);
      buckets[bucket] += next - at;
      at = next;
    }
  }

  // Each device's busy share per 10 ms, as a counter of the process that
  // drives it (work on several streams at once counts once, up to 100%).
  void write_device_busy() {
    for (const auto& [device, buckets] : device_busy_) {
      const otf2::DeviceInfo& d = a_.devices.at(device);
      uint64_t location = UINT64_MAX;  // any of its streams: begin_event wants a location of its process
      for (const auto& [l, t] : a_.threads)
        if (t.device == device) location = l;
      int64_t previous = INT64_MIN;
      const auto point = [&](int64_t bucket, double share) {
        separator();
        out_.raw("{\"ph\":\"C\",\"pid\":");
        out_.number(pid_of(location));
        out_.raw(",\"ts\":");
        out_.fixed3(double(bucket) * kCounterBucketUs);
        out_.raw(",\"name\":");
        out_.string("GPU busy %: " + d.name);
        out_.raw(",\"args\":{\"busy\":");
        out_.fixed3(std::min(100.0, share));
        out_.raw("}}");
        ++counts_.counters;
      };
      for (const auto& [bucket, busy] : buckets) {
        if (previous != INT64_MIN && bucket != previous + 1) point(previous + 1, 0);
        point(bucket, 100.0 * busy / kCounterBucketUs);
        previous = bucket;
      }
      if (previous != INT64_MIN) point(previous + 1, 0);
    }
  }

  // --- Capture windows and marks -------------------------------------------

  // Process-wide instant events, in time order: each mark (hybridprof_mark),
  // and each capture window's opening and closing, from the processes'
  // properties.
  void write_marks() {
    struct Instant {
      uint64_t at;
      std::string name;
      const char* category;
    };
    for (uint32_t ref : processes_) {
      const otf2::ProcessInfo& p = a_.processes.at(ref);
      std::vector<Instant> instants;
      for (const otf2::CaptureWindow& w : otf2::capture_windows_of(p)) {
        instants.push_back({w.from, "capture window opened (" + w.opened_by + ")", "capture window"});
        instants.push_back({w.to, "capture window closed (" + w.closed_by + ")", "capture window"});
      }
      for (const otf2::Mark& m : otf2::marks_of(p)) instants.push_back({m.at, m.text, "mark"});
      std::stable_sort(instants.begin(), instants.end(), [](const Instant& x, const Instant& y) { return x.at < y.at; });
      for (const Instant& i : instants) {
        const double t = us(i.at);
        if (!in_window(t)) continue;
        separator();
        out_.raw("{\"ph\":\"i\",\"s\":\"p\",\"pid\":");
        out_.number(ref + 1);
        out_.raw(",\"ts\":");
        out_.fixed3(t);
        out_.raw(",\"name\":");
        out_.string(i.name);
        out_.raw(",\"cat\":\"");
        out_.raw(i.category);
        out_.raw("\"}");
        ++counts_.marks;
      }
    }
  }

  // --- MPI: attributes and messages -----------------------------------------

  // `location`'s rank in `comm`; -1 when it is not a member.
  int64_t comm_rank(uint64_t location, uint32_t comm) const {
    const auto c = a_.comms.find(comm);
    const auto world = world_rank_.find(location);
    if (c == a_.comms.end() || world == world_rank_.end() || c->second.self) return -1;
    const auto& m = c->second.members;
    const auto at = std::find(m.begin(), m.end(), world->second);
    return at == m.end() ? -1 : at - m.begin();
  }
  // Whether the location of rank `peer` in `comm` is converted.
  bool peer_selected(uint32_t comm, uint64_t peer) const {
    const auto c = a_.comms.find(comm);
    const auto mpi = a_.comm_locations.find(otf2::Paradigm::kMpi);
    if (c == a_.comms.end() || mpi == a_.comm_locations.end() || peer >= c->second.members.size()) return false;
    const uint64_t world = c->second.members[peer];
    return world < mpi->second.size() && locations_.count(mpi->second[world]);
  }

  void on_mpi(const otf2::MpiEvent& e) {
    if (!enter_location(e.location)) return;
    const double t = us(e.timestamp);
    current_.last_us = std::max(current_.last_us, t);
    sync_window(t);
    const bool send = e.kind == MpiEventKind::kSend || e.kind == MpiEventKind::kIsend;
    const bool receive = e.kind == MpiEventKind::kRecv || e.kind == MpiEventKind::kIrecv;
    if (!current_.open.empty()) {
      Open& o = current_.open.back();
      if (send || receive) {
        ++o.messages;
        (send ? o.sent : o.received) += e.bytes;
        o.peer = e.peer;
        o.tag = e.tag;
        o.comm = e.comm;
      } else if (e.kind == MpiEventKind::kCollectiveEnd || e.kind == MpiEventKind::kNonBlockingCollectiveComplete) {
        o.sent += e.sent;
        o.received += e.received;
        o.comm = e.comm;
      } else if (e.kind == MpiEventKind::kIsendComplete) {
        ++o.completions;
      }
    }
    const std::optional<FlowEnd> end = message_end(e, current_.messages);
    if (end && (!windowed_ || (end->start ? message_ends_ : message_starts_).count(end->id)))
      write_flow(*end, t, "MPI message", "mpi");
  }

  // Messages between two ranks on one communicator and tag arrive in the
  // order sent: the k-th send from A to B matches B's k-th receive from A,
  // so each side names the arrow alone. Every message counts, in the window
  // or not. None for other events and peers not converted.
  std::optional<FlowEnd> message_end(const otf2::MpiEvent& e, MessageOrdinals& ordinals) const {
    const bool send = e.kind == MpiEventKind::kSend || e.kind == MpiEventKind::kIsend;
    const bool receive = e.kind == MpiEventKind::kRecv || e.kind == MpiEventKind::kIrecv;
    if (!send && !receive) return std::nullopt;
    const int64_t me = comm_rank(e.location, e.comm);
    if (me < 0 || !peer_selected(e.comm, e.peer)) return std::nullopt;
    const uint64_t src = send ? static_cast<uint64_t>(me) : e.peer, dst = send ? e.peer : static_cast<uint64_t>(me);
    const uint64_t k = ordinals[{e.comm, src, dst, e.tag}]++;
    return FlowEnd{send, fnv({e.comm, src, dst, e.tag, k})};
  }

  // An arrow is drawn only when both its ends are: a message whose receive
  // is outside the window has none, nor a launch whose kernel was not
  // recorded. A first reading of the MPI records (with a window: without
  // one, every message has both ends) and of the launches' correlation ids
  // finds which ends are converted.
  void find_both_ends(otf2::ArchiveReader& reader) {
    windowed_ = from_us_ > 0 || !std::isinf(to_us_);
    bool launches = false;
    for (const auto& [ref, name] : a_.parameters) launches |= name == cuda::kCorrelationParameter;
    if (!windowed_ && !launches) return;
    uint64_t location = UINT64_MAX;
    MessageOrdinals ordinals;
    const auto on_mpi = [&](const otf2::MpiEvent& e) {
      if (e.location != location) ordinals.clear();
      location = e.location;
      if (!locations_.count(e.location) || !in_window(us(e.timestamp))) return;
      if (const auto end = message_end(e, ordinals)) (end->start ? message_starts_ : message_ends_).insert(end->id);
    };
    const auto on_parameter = [&](const otf2::ParameterEvent& e) {
      if (!locations_.count(e.location) || !in_window(us(e.timestamp)) || !launch_end(e)) return;
      if (e.value >= (uint64_t{1} << 32)) return;  // not a CUPTI id: no arrow
      const otf2::ThreadInfo& thread = a_.threads.at(e.location);
      std::vector<bool>& ids = (thread.device == otf2::kUndefined ? launch_calls_ : launched_work_)[thread.process];
      if (e.value >= ids.size()) ids.resize(std::max<uint64_t>(e.value + 1, ids.size() * 2));
      ids[e.value] = true;
    };
    reader.read_events({}, {}, windowed_ ? on_mpi : std::function<void(const otf2::MpiEvent&)>{}, {},
                       launches ? on_parameter : std::function<void(const otf2::ParameterEvent&)>{});
  }

  // A flow event at `t` (in the window).
  void write_flow(const FlowEnd& end, double t, const char* name, const char* category) {
    if (!in_window(t)) return;
    begin_event(end.start ? "s" : "f", current_.location, events_tid(current_.location), t);
    if (!end.start) out_.raw(",\"bp\":\"e\"");
    out_.raw(",\"name\":\"");
    out_.raw(name);
    out_.raw("\",\"cat\":\"");
    out_.raw(category);
    out_.raw("\",\"id\":");
    out_.number(end.id);
    out_.raw("}");
    ++(end.start ? counts_.flow_starts : counts_.flow_ends);
  }

  // --- Parameters: device work's attributes, and its launch -----------------

  // A parameter recorded inside a slice is one of its attributes. CUDA's
  // correlation id ties device work to the call that launched it: an arrow
  // from the call to the work.
  void on_parameter(const otf2::ParameterEvent& e) {
    if (!enter_location(e.location)) return;
    const double t = us(e.timestamp);
    current_.last_us = std::max(current_.last_us, t);
    sync_window(t);
    if (!current_.open.empty()) current_.open.back().parameters.push_back({e.parameter, e.value});
    const std::optional<FlowEnd> end = launch_end(e);
    if (!end) return;
    const otf2::ThreadInfo& thread = a_.threads.at(e.location);
    const std::vector<bool>& others = (end->start ? launched_work_ : launch_calls_)[thread.process];
    if (e.value < others.size() && others[e.value]) write_flow(*end, t, "launch", "cuda");
  }

  std::optional<FlowEnd> launch_end(const otf2::ParameterEvent& e) const {
    const auto name = a_.parameters.find(e.parameter);
    if (name == a_.parameters.end() || name->second != cuda::kCorrelationParameter) return std::nullopt;
    const otf2::ThreadInfo& thread = a_.threads.at(e.location);
    return FlowEnd{thread.device == otf2::kUndefined, fnv({0xC0DA, thread.process, e.value})};
  }

  // --- Samples ---------------------------------------------------------------

  // Ends the flame chart's frames from depth `keep` on at `end_us`.
  void close_frames(size_t keep, double end_us) {
    while (current_.frames.size() > keep) {
      current_.frames.pop_back();
      begin_event("E", current_.location, samples_tid(current_.location), end_us);
      out_.raw("}");
    }
  }
  void open_frame(uint32_t context, double at) {
    current_.frames.push_back(context);
    const auto c = a_.contexts.find(context);
    begin_region(samples_tid(current_.location), at, c == a_.contexts.end() ? otf2::kUndefined : c->second.region);
  }

  void counter_point(double ts, uint64_t value) {
    if (!in_window(ts)) return;
    begin_event("C", current_.location, events_tid(current_.location), ts);
    out_.raw(",\"name\":");
    out_.string("samples / 10 ms: " + thread_title(current_.location));
    out_.raw(",\"args\":{\"samples\":");
    out_.number(value);
    out_.raw("}}");
    ++counts_.counters;
  }

  // The counter: a bucket's count at its start, and a zero after it where
  // the thread took no sample in the next (a gap, or its end).
  void end_bucket(bool drop_to_zero) {
    if (current_.bucket_us < 0) return;
    counter_point(current_.bucket_us, current_.bucket_samples);
    if (drop_to_zero) counter_point(current_.bucket_us + kCounterBucketUs, 0);
    current_.bucket_us = -1;
    current_.bucket_samples = 0;
  }

  void on_sample(const otf2::SampleEvent& e) {
    if (!enter_location(e.location)) return;
    const double t = us(e.timestamp);
    current_.last_us = std::max(current_.last_us, t);
    const double bucket = std::floor(t / kCounterBucketUs) * kCounterBucketUs;
    if (bucket != current_.bucket_us) {
      end_bucket(current_.bucket_us >= 0 && bucket != current_.bucket_us + kCounterBucketUs);
      current_.bucket_us = bucket;
    }
    ++current_.bucket_samples;
    sync_window(t);
    if (!in_window(t)) return;
    ++counts_.samples;
    // A gap of more than two periods (the thread ran nothing): the flame
    // chart's frames end with the last sample's period.
    if (current_.last_sample_us >= 0 && t - current_.last_sample_us > 2 * period_us_)
      close_frames(0, current_.last_sample_us + period_us_);
    current_.last_sample_us = t;
    auto known = paths_.find(e.context);
    if (known == paths_.end()) known = paths_.emplace(e.context, a_.context_path(e.context)).first;
    const std::vector<uint32_t>& path = known->second;
    size_t common = 0;
    while (common < path.size() && common < current_.frames.size() && current_.frames[common] == path[common])
      ++common;
    close_frames(common, t);
    for (size_t i = common; i < path.size(); ++i) open_frame(path[i], t);
  }

  // The calling context tree as Chrome's stackFrames, and each sample again
  // naming its leaf: for viewers that read samples (speedscope, DevTools).
  void write_stack_frames() {
    bool comma = false;
    for (const auto& [ref, c] : a_.contexts) {
      const auto region = a_.regions.find(c.region);
      out_.raw(comma ? ",\n\"" : "\n\"");
      comma = true;
      out_.number(ref);
      out_.raw("\":{\"name\":");
      out_.string(region == a_.regions.end() ? "?" : region->second.name);
      out_.raw(",\"category\":");
      out_.string(region == a_.regions.end() ? "unknown" : otf2::paradigm_name(region->second.paradigm));
      if (c.parent != otf2::kUndefined) {
        out_.raw(",\"parent\":\"");
        out_.number(c.parent);
        out_.raw("\"");
      }
      out_.raw("}");
    }
  }

  void write_sample(const otf2::SampleEvent& e) {
    if (!locations_.count(e.location)) return;
    const double t = us(e.timestamp);
    if (!in_window(t)) return;
    separator();
    out_.raw("{\"pid\":");
    out_.number(pid_of(e.location));
    out_.raw(",\"tid\":");
    out_.number(events_tid(e.location));
    out_.raw(",\"ts\":");
    out_.fixed3(t);
    out_.raw(",\"name\":\"sample\",\"weight\":1,\"sf\":\"");
    out_.number(e.context);
    out_.raw("\"}");
  }

  const otf2::Archive& a_;
  JsonFile& out_;
  const double period_us_;
  double from_us_ = 0, to_us_ = 0;
  std::set<uint32_t> processes_;
  std::set<uint64_t> locations_;
  std::map<uint64_t, uint64_t> world_rank_;  // MPI world rank by location
  std::unordered_map<uint32_t, std::vector<uint32_t>> paths_;  // a sampled context's, root first
  std::unordered_map<uint32_t, std::string> region_fields_;
  // The ends of arrows converted (find_both_ends): messages' by id, with a
  // window only; launches' by correlation id, a bit each, per process
  // (CUPTI's ids are dense).
  bool windowed_ = false;
  std::unordered_set<uint64_t> message_starts_, message_ends_;
  std::map<uint32_t, std::vector<bool>> launch_calls_, launched_work_;
  std::map<uint32_t, std::map<int64_t, double>> device_busy_;  // per device: µs of work per 10 ms bucket
  Current current_;
  bool first_ = true;
  ChromeTraceCounts counts_;
};

}  // namespace

ChromeTraceCounts write_chrome_trace(const std::string& archive, const otf2::Selection& selection, JsonFile& out) {
  otf2::ArchiveReader reader(archive);
  Converter converter(reader, selection, out);
  return converter.run(reader);
}

}  // namespace hybridprof::convert
