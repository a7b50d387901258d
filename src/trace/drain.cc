#include "trace/drain.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fstream>

#include "common/clock.h"
#include "common/own_fds.h"
#include "otf2/types.h"
#include "trace/event_sets.h"
#include "trace/records.h"
#include "trace/region_ids.h"

namespace hybridprof {

namespace {

// The thread's name: what it set itself at its end, else what the kernel
// says now (a thread still running at a signal or an exit from elsewhere).
std::string thread_name(const ThreadState& t) {
  std::string name(t.name, strnlen(t.name, sizeof t.name));
  if (name.empty()) {
    std::ifstream comm("/proc/self/task/" + std::to_string(t.tid) + "/comm");
    std::getline(comm, name);
  }
  return name;
}

}  // namespace

uint32_t ring_flush_region() {
  static const uint32_t id = reserve_region_ids(1);
  return id;
}

Drain::~Drain() {
  if (thread_started_ && !finished_) stop(raw::ProcessEnd{monotonic_ns()});
}

bool Drain::start(const Options& options, const raw::ProcessBegin& begin, std::string* error) {
  options_ = options;
  clock_.reset(options.tsc_trace_clock);
  if (options.python.runtime != 0)
    python_codes_ = std::make_unique<PythonCodeTable>(options.python.layout, options.python.code_type,
                                                      options.python.unicode_type);
  start_ns_ = begin.monotonic_ns;
  recording_ = true;
  window_open_ = !options.start_closed;
  window_history_.reset(!options.start_closed);
  open_at_ns_ = options.open_at_ns;
  close_at_ns_ = options.close_at_ns;
  ring_pool_.set_bytes(ThreadState::storage_bytes(options.ring_bytes));
  writer_.set_size_limit(options.max_bytes);
  if (!writer_.open(options.raw_path)) {
    *error = "cannot create " + options.raw_path + ": " + std::strerror(errno);
    return false;
  }
  wake_fd_ = own_fds::adopt(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), &wake_fd_);
  if (wake_fd_ < 0) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    writer_.append(begin);
    writer_.append(raw::RegionDef{ring_flush_region(), "hybridprof: ring flush",
                                  static_cast<uint32_t>(otf2::Paradigm::kMeasurement), raw::kUnknownModule, 0, {}});
    for (const auto& r : modules_.all_as_records()) writer_.append(r);
    define_new_event_sets_locked();
    writer_.append(options.start_closed
                       ? raw::Mark{begin.monotonic_ns, raw::MarkKind::kWindowClose, raw::kNoLocation, options.closed_cause}
                       : raw::Mark{begin.monotonic_ns, raw::MarkKind::kWindowOpen, raw::kNoLocation, "run start"});
    flush_locked();
  }
  if (options.create_thread(&thread_, nullptr, &Drain::thread_main, this) != 0) {
    *error = "cannot start the drain thread";
    return false;
  }
  thread_started_ = true;
  return true;
}

void* Drain::thread_main(void* self) {
  // The drain must never run the program's signal handlers nor be sampled.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  static_cast<Drain*>(self)->loop();
  return nullptr;
}

int Drain::next_wake_ms(uint64_t now_ns) const {
  uint64_t wait_ns = uint64_t(options_.flush_interval_ms) * 1000000;
  for (const uint64_t due : {open_at_ns_, close_at_ns_})
    if (due != 0) wait_ns = std::min(wait_ns, due > now_ns ? due - now_ns : 0);
  return static_cast<int>((wait_ns + 999999) / 1000000);  // rounded up: never early
}

// On the drain thread, outside its lock: the runtime's set_window takes it.
void Drain::run_due_window_changes(uint64_t now_ns) {
  if (!options_.on_window_due) return;
  if (open_at_ns_ != 0 && now_ns >= open_at_ns_) {
    open_at_ns_ = 0;
    options_.on_window_due(true, "--delay");
  }
  if (close_at_ns_ != 0 && now_ns >= close_at_ns_) {
    close_at_ns_ = 0;
    options_.on_window_due(false, "--duration");
  }
}

void Drain::loop() {
  pollfd pfd{wake_fd_, POLLIN, 0};
  for (;;) {
    pfd.fd = wake_fd_;  // moved if the program dup2()ed onto it (own_fds)
    poll(&pfd, 1, next_wake_ms(monotonic_ns()));
    run_due_window_changes(monotonic_ns());
    uint64_t ignored;
    while (read(wake_fd_, &ignored, sizeof ignored) > 0) {
    }
    if (const int sig = terminate_signal_.load()) {
      if (options_.on_terminate) options_.on_terminate(sig);
      std::lock_guard lock(mutex_);
      finish_locked(raw::ProcessEnd{monotonic_ns(), raw::EndReason::kSignal, sig, 0});  // if it did not
      return;
    }
    if (stop_requested_.load()) return;
    std::lock_guard lock(mutex_);
    if (finished_) return;
    rings_wanted_.store(false, std::memory_order_relaxed);
    drain_rings_locked();
    flush_locked();
    passes_written_.fetch_add(1, std::memory_order_release);
  }
}

void Drain::wake() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t w = write(wake_fd_, &one, sizeof one);
}

ThreadState* Drain::add_thread(pid_t tid, uint64_t now_ns, size_t ring_bytes) {
  if (ring_bytes == 0) ring_bytes = options_.ring_bytes;
  // An ended thread's, when one is kept (the same size: the default's).
  // Not populated: the writers (the sample handler, traced-call wrappers)
  // take a page fault at each 4 KiB of the ring's first pass, about 2 us
  // each on a VM, once in the thread's life; populating it here cost
  // every thread 120 us, most of a short thread's set-up.
  const size_t bytes = ThreadState::storage_bytes(ring_bytes);
  void* storage = ring_pool_.take(bytes);
  if (storage == nullptr) {
    storage = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (storage == MAP_FAILED) return nullptr;
  }
  // Ended threads' rings come back at the drain's next pass, up to a flush
  // interval away: a program that starts and ends threads by the thousand
  // would map (page faults included) and unmap one per thread meanwhile.
  // The pass comes before the pool runs dry instead, asked once.
  if (ring_pool_.kept() < ring_pool_.slots() / 2 && threads_ending_.load(std::memory_order_relaxed) > 0 &&
      !rings_wanted_.exchange(true, std::memory_order_relaxed))
    wake();
  ThreadState* t = ThreadState::create(storage, ring_bytes);
  t->tid = tid;
  t->begin_ns = now_ns;
  std::lock_guard lock(mutex_);
  t->index = next_location_++;
  threads_.push_back(t);
  if (!finished_) writer_.append(raw::thread_begin(t->index, static_cast<uint64_t>(tid), now_ns));
  return t;
}

uint32_t Drain::add_location(raw::LocationKind kind, uint64_t id, const std::string& name, const std::string& device,
                             uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  const uint32_t location = next_location_++;
  appended_locations_.push_back(location);
  if (!finished_) writer_.append(raw::LocationBegin{location, id, now_ns, name, kind, device});
  return location;
}

void Drain::end_location(uint32_t location, uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  auto open = std::find(appended_locations_.begin(), appended_locations_.end(), location);
  if (open == appended_locations_.end()) return;  // ended already, or never added
  appended_locations_.erase(open);
  if (!finished_ && !device_work_.empty()) {
    // The launches of its last work may still be in their threads' rings.
    drain_rings_locked();
    write_device_work_locked(/*all=*/true, &location);
  }
  if (!finished_) writer_.append(raw::LocationEnd{location, now_ns, {}, {}});
}

void Drain::append_device_work(const DeviceWork& work) {
  std::lock_guard lock(mutex_);
  if (!finished_) device_work_.push(work, passes_);
}

void Drain::add_tool_code(uint64_t start, uint64_t end) {
  std::lock_guard lock(mutex_);
  tool_code_.emplace_back(start, end);
  ++interning_version_;
}

void Drain::write_device_work_locked(bool all, const uint32_t* location) {
  if (device_work_.empty()) return;
  device_work_.pop_ready(
      passes_, all,
      [&](const DeviceWork& w, uint32_t launch) {
        // Work launched outside the capture windows (its launch was not
        // recorded) that also ran outside them is not the windows'.
        if (launch == DeviceWorkQueue::kNoLaunch && !window_history_.open_at(w.begin_ns)) {
          ++device_work_outside_windows_;
          return;
        }
        new_nodes_.clear();
        const uint32_t parent = launch == DeviceWorkQueue::kNoLaunch ? raw::kRootComplete : launch;
        const uint32_t node = cct_.child(parent, raw::kTracedRegionModule, w.region, &new_nodes_);
        for (const auto& n : new_nodes_) writer_.append(n);
        // Written as the device reported it: the finalizer puts each device
        // location's work in time order (a device reports it out of order).
        const uint64_t begin = w.begin_ns, end = std::max(w.end_ns, begin);
        writer_.append(raw::Enter{{w.location, begin, w.region, node}});
        if (w.has_event) writer_.append(raw::Event{w.location, begin, w.event_kind, w.event});
        writer_.append(raw::Leave{{w.location, end, w.region, node}});
      },
      location);
}

uint32_t Drain::region_context(uint32_t region) {
  std::lock_guard lock(mutex_);
  new_nodes_.clear();
  const uint32_t node = cct_.child(raw::kRootComplete, raw::kTracedRegionModule, region, &new_nodes_);
  if (!finished_)
    for (const auto& n : new_nodes_) writer_.append(n);
  return node;
}

void Drain::finish_thread(ThreadState* t, uint64_t now_ns) {
  t->end_ns = now_ns;
  threads_ending_.fetch_add(1, std::memory_order_relaxed);
  t->finished.store(true, std::memory_order_release);
}

void Drain::append(const raw::Record& record) {
  std::lock_guard lock(mutex_);
  if (!finished_) append_locked(record);
}

void Drain::append_locked(const raw::Record& record) {
  // Once recording has stopped, notices still say what happened.
  if (!recording() && std::holds_alternative<raw::Notice>(record)) writer_.write_closing(record);
  else writer_.append(record);
}

namespace {
std::string size_text(uint64_t bytes) {
  char text[32];
  if (bytes < (1 << 20)) std::snprintf(text, sizeof text, "%.0f KiB", double(bytes) / 1024.0);
  else std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  return text;
}
}  // namespace

void Drain::flush_locked() {
  writer_.flush();
  if (writer_.stopped() == raw::StreamWriter::Stop::kNone || !recording()) return;
  recording_.store(false, std::memory_order_relaxed);
  char at[32];
  std::snprintf(at, sizeof at, "%.1f s", double(monotonic_ns() - start_ns_) / 1e9);
  std::string why = "recording stopped at " + std::string(at) + " of the process: ";
  if (writer_.stopped() == raw::StreamWriter::Stop::kSizeLimit)
    why += "its raw data reached --max-size (" + size_text(options_.max_bytes) + "); the archive has what came before";
  else
    why += "cannot write " + options_.raw_path + ": " + std::strerror(writer_.stop_errno()) + "; the " +
           size_text(writer_.bytes_written()) + " written before are kept";
  writer_.write_closing(raw::Notice{why});
  if (options_.on_recording_stopped) options_.on_recording_stopped(why);
}

void Drain::define_code_region(uint32_t id, std::string name, uint32_t paradigm, uint64_t code_address,
                               std::string implicit_name) {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  raw::RegionDef def{id, std::move(name), paradigm, raw::kUnknownModule, 0, std::move(implicit_name)};
  const uint64_t now = monotonic_ns();
  ModuleInfo module;
  if (!modules_.find(code_address, now, &module)) {
    refresh_modules_locked(now, /*force=*/true);  // code of a library loaded since the last pass: its load first
  }
  if (modules_.find(code_address, now, &module)) def.code_module = module.id, def.code_offset = code_address - module.bias;
  writer_.append(def);
}

void Drain::append(const std::vector<raw::Record>& records) {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  for (const auto& r : records) append_locked(r);
}

void Drain::flush_now() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  drain_rings_locked();
  for (ThreadState* t : threads_) write_held_samples_locked(*t);  // all of it, now
  flush_locked();
}

void Drain::begin_pass_locked() {
  ++passes_;
  clock_.anchor();  // traced-call readings of this pass convert from here
  // Modules loaded since the last pass are recorded before any sample
  // taken in them are interned.
  refresh_modules_locked(monotonic_ns(), /*force=*/false);
  if (python_codes_) python_codes_->new_pass();
  define_new_event_sets_locked();
}

void Drain::refresh_modules_locked(uint64_t now, bool force) {
  std::vector<raw::Record> changes;
  modules_.refresh(now, &changes, force);
  if (changes.empty()) return;
  ++interning_version_;  // a frame's module may have changed
  for (const auto& r : changes) writer_.append(r);
}

void Drain::define_new_event_sets_locked() {
  // A set is registered before its adapter writes an event of it, so the
  // pass that converts that event defines the set first.
  if (registered_event_set_count() == event_sets_defined_) return;
  const std::vector<raw::EventSetDef> sets = registered_event_sets();
  for (size_t i = event_sets_defined_; i < sets.size(); ++i) writer_.append(sets[i]);
  event_sets_defined_ = sets.size();
}

void Drain::drain_thread_locked(ThreadState& t) {
  if (!recording()) {
    t.ring.consume([](const RecordHeader&) {});
    return;
  }
  t.ring.consume([&](const RecordHeader& h) {
    // A repeated enter kept back by the record before: its leave makes a
    // call repeat with it; anything else comes after it, converted now.
    if (const auto enter = t.drained.pending_enter_repeat) {
      if (h.type == uint16_t(RecordType::kRegionLeaveRepeat) && h.aux == enter->slot) {
        t.drained.pending_enter_repeat.reset();
        convert_call_repeat_locked(t, enter->slot, enter->timestamp, reinterpret_cast<const RepeatRecord&>(h).timestamp);
        return;
      }
      convert_pending_enter_repeat_locked(t);
    }
    // Held samples go before the record read after them, but an enter,
    // which decides (a late one may go first), an event of before them,
    // and a sample (hold_sample_locked decides: a run inside a call grows).
    if (h.type != uint16_t(RecordType::kRegionEnterRepeat) && h.type != uint16_t(RecordType::kRegionEnter) &&
        h.type != uint16_t(RecordType::kCallRepeat) && h.type != uint16_t(RecordType::kSample) &&
        h.type != uint16_t(RecordType::kMixedSample) && !event_before_held_sample_locked(t, h))
      write_held_samples_locked(t);
    // A loop's MPI calls are most of an MPI rank's records: a whole call
    // or two repeats a call, handled before the general dispatch.
    if (h.type == uint16_t(RecordType::kCallRepeat)) {
      const auto& call = reinterpret_cast<const CallRepeatRecord&>(h);
      if (!window_open_.load(std::memory_order_relaxed) && clock_.to_ns(call.leave) > window_closed_ns_) {
        skip_call_repeat_locked(t, h.aux);
      } else {
        convert_call_repeat_locked(t, h.aux, call.enter, call.leave);
      }
    } else if (h.type == uint16_t(RecordType::kRegionEnterRepeat)) {
      const uint64_t timestamp = reinterpret_cast<const RepeatRecord&>(h).timestamp;
      if (nothing_pending_locked(t))
        t.drained.pending_enter_repeat = DrainedThread::PendingEnterRepeat{h.aux, timestamp};
      else
        convert_enter_repeat_locked(t, h.aux, timestamp);
    } else if (h.type == uint16_t(RecordType::kRegionLeaveRepeat))
      convert_leave_repeat_locked(t, h.aux, reinterpret_cast<const RepeatRecord&>(h).timestamp);
    else
      convert_locked(t, h);
  });
  convert_pending_enter_repeat_locked(t);
  // A call still in progress (blocked in a receive...) is on disk with
  // this pass, in case the process is killed before it returns. The held
  // sample stays held across passes (its thread's next record, an OS wait
  // written at its end, may come in the next): the thread's end, a window's
  // close and the process's end write it (leave_open_regions_locked).
  write_unwritten_call_locked(t);
}

void Drain::drain_rings_locked() {
  begin_pass_locked();
  // Copy: end_thread_locked() removes entries.
  const std::vector<ThreadState*> threads = threads_;
  for (ThreadState* t : threads) {
    // Read `finished` first: once it is set the ring holds its last records.
    const bool finished = t->finished.load(std::memory_order_acquire);
    drain_thread_locked(*t);
    if (finished) end_thread_locked(t);
  }
  // Device work whose launches this pass converted.
  write_device_work_locked(/*all=*/false);
}

bool Drain::flush_full_ring(ThreadState& t) {
  std::lock_guard lock(mutex_);
  if (finished_ || !thread_started_) return false;
  begin_pass_locked();
  drain_thread_locked(t);
  flush_locked();
  return true;
}

void Drain::use_tsc_trace_clock(bool tsc) {
  std::lock_guard lock(mutex_);
  if (tsc == options_.tsc_trace_clock) return;
  options_.tsc_trace_clock = tsc;
  clock_.reset(tsc);
}

double Drain::trace_clock_ns_per_tick() const {
  std::lock_guard lock(mutex_);
  return clock_.ns_per_tick();
}

void Drain::add_traced_code(const std::vector<TracedCode>& code) {
  std::lock_guard lock(mutex_);
  traced_code_.insert(traced_code_.end(), code.begin(), code.end());
  std::sort(traced_code_.begin(), traced_code_.end(),
            [](const TracedCode& a, const TracedCode& b) { return a.start < b.start; });
  ++interning_version_;
}

const Drain::TracedCode* Drain::traced_code_at(uint64_t address) const {
  auto it = std::upper_bound(traced_code_.begin(), traced_code_.end(), address,
                             [](uint64_t a, const TracedCode& c) { return a < c.start; });
  if (it == traced_code_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

namespace {

uint32_t root_for(uint32_t flags) {
  return (flags & kSampleTruncated)      ? raw::kRootTruncated
         : (flags & kSampleUnwindFailed) ? raw::kRootUnwindFailed
                                         : raw::kRootComplete;
}

}  // namespace

uint32_t Drain::intern_native_locked(uint32_t node, uint64_t address, uint64_t timestamp_ns, ModuleInfo* module,
                                     bool* have_module, uint32_t* innermost_region) {
  if (own_code(address)) {
    if (const TracedCode* code = traced_code_at(address)) {
      node = cct_.child(node, raw::kTracedRegionModule, code->region, &new_nodes_);
      if (innermost_region) *innermost_region = code->region;
    }
    return node;  // the profiler's own frames are not the program's
  }
  if (!*have_module || address < module->start || address >= module->end)
    *have_module = modules_.find(address, timestamp_ns, module);
  node = *have_module ? cct_.child(node, module->id, address - module->bias, &new_nodes_)
                      : cct_.child(node, raw::kUnknownModule, address, &new_nodes_);
  if (innermost_region) *innermost_region = kNoRegion;
  return node;
}

uint32_t Drain::sample_leaf_locked(uint32_t flags, const uint64_t* ips, uint32_t depth, uint32_t node) {
  // The profiler's time: a sample deferred to the end of its section, or
  // one that interrupted its code (a wrapper's own instructions, which
  // intern_native_locked turned into the call's region).
  if ((flags & kSampleInProfiler) || (depth != 0 && own_code(ips[0])))
    return cct_.child(node, raw::kProfilerModule, 0, &new_nodes_);
  return (flags & kSampleInKernel) ? cct_.child(node, raw::kKernelModule, 0, &new_nodes_) : node;
}

void Drain::entering_frames(const uint64_t* ips, uint32_t depth, uint32_t flags, std::vector<uint64_t>* frames) const {
  frames->clear();
  // A stack cut short does not end at the thread's root: nothing to share.
  if (flags & (kSampleTruncated | kSampleUnwindFailed)) return;
  // Innermost first: the runtime's own frames (the adapter's wrapper), then
  // the program's frame that entered the region, then its callers.
  uint32_t entered = 0;
  while (entered < depth && own_code(ips[entered] - 1)) ++entered;
  frames->assign(ips + entered, ips + depth);
}

Drain::EnclosingRegions Drain::enclosing_regions(const DrainedThread& d, const uint64_t* ips, uint32_t depth,
                                                 uint32_t flags) const {
  EnclosingRegions e;
  // Every one open is around the stack in time; only where it goes in the
  // path depends on the frames. A stack cut short goes under all of them.
  const bool whole = !(flags & (kSampleTruncated | kSampleUnwindFailed));
  for (const DrainedThread::OpenRegion& r : d.open_regions) {
    if (!r.encloses || e.count == EnclosingRegions::kMax) continue;
    // Outermost frames in common.
    const size_t most = whole ? std::min<size_t>(r.frames.size(), depth) : 0;
    size_t common = 0;
    while (common < most && r.frames[r.frames.size() - 1 - common] == ips[depth - 1 - common]) ++common;
    const size_t callers = r.frames.empty() ? 0 : r.frames.size() - 1;
    const size_t after = (common >= callers && depth > callers) ? depth - callers - 1 : depth - common;
    e.at[e.count++] = {static_cast<uint32_t>(after), r.region};
  }
  // Outermost frame first, and in the order entered at one frame.
  std::stable_sort(e.at, e.at + e.count, [](const auto& a, const auto& b) { return a.frame > b.frame; });
  return e;
}

uint32_t Drain::insert_regions_locked(EnclosingRegions& e, uint32_t frame, uint32_t node) {
  for (; e.next < e.count && e.at[e.next].frame >= frame; ++e.next)
    node = cct_.child(node, raw::kTracedRegionModule, e.at[e.next].region, &new_nodes_);
  return node;
}

uint32_t Drain::intern_stack_locked(DrainedThread& d, uint32_t node, const StackView& s, uint32_t* flags,
                                    uint32_t* innermost_region, EnclosingRegions* enclosing) {
  ModuleInfo module;
  bool have_module = false;
  uint32_t innermost = kNoRegion;
  // Return addresses point after the call: step back into it so the
  // call's own line is what gets symbolized.
  const auto address_of = [&](uint32_t i) { return (i == 0 && !s.all_return_addresses) ? s.ips[0] : s.ips[i] - 1; };
  const auto native = [&](uint32_t i) {
    if (enclosing) node = insert_regions_locked(*enclosing, i + 1, node);
    node = intern_native_locked(node, address_of(i), s.timestamp_ns, &module, &have_module, &innermost);
  };
  if (s.python_depth == 0) {
    // From where this stack parts from the thread's last one, when both
    // are interned alike (no enclosing region goes in between frames).
    const bool reuse = enclosing == nullptr || enclosing->count == 0;
    const uint32_t root = node;
    DrainedThread::LastInterned& last = d.last_interned;
    uint32_t shared = 0;
    if (reuse && last.version == interning_version_ && last.root == root) {
      const uint32_t most = std::min<uint32_t>(uint32_t(last.frames.size()), s.depth);
      while (shared < most && last.frames[shared].address == address_of(s.depth - 1 - shared)) ++shared;
      if (shared != 0) {
        node = last.frames[shared - 1].node;
        innermost = last.frames[shared - 1].innermost_region;
      }
    }
    if (reuse) {
      last.root = root;
      last.version = interning_version_;
      last.frames.resize(shared);
    }
    for (uint32_t i = s.depth - shared; i-- > 0;) {
      native(i);
      if (reuse) last.frames.push_back({address_of(i), node, innermost});
    }
  } else {
    if (!merge_stacks(s.ips, s.depth, s.python, s.python_depth, options_.python.eval_start, options_.python.eval_end,
                      &merged_))
      *flags |= kSamplePythonIncomplete;
    for (size_t k = merged_.size(); k-- > 0;) {
      const MergedFrame& m = merged_[k];
      if (!m.python) {
        native(m.index);
        continue;
      }
      const python::PythonFrame& f = s.python[m.index];
      const uint32_t code = python_codes_ ? python_codes_->id_for(f, &new_codes_) : 0;
      const uint64_t offset = (uint64_t{code} << 32) | uint32_t(f.byte_offset < 0 ? 0 : f.byte_offset + 1);
      node = cct_.child(node, raw::kPythonModule, offset, &new_nodes_);
      innermost = kNoRegion;
    }
  }
  if (enclosing) node = insert_regions_locked(*enclosing, 0, node);
  if (innermost_region) *innermost_region = innermost;
  return node;
}

uint32_t Drain::enter_context_locked(ThreadState& t, const RegionRecord& r, uint64_t timestamp_ns) {
  const uint32_t depth = r.header.aux;
  const bool remembered = r.stack_generation != 0;
  // The enter's own frame is the region's (its wrapper is traced code);
  // when the unwind did not show it (or the adapter enters every region
  // from one place: OpenMP's), the region ends the path.
  const auto with_region = [&](uint32_t stack_node, uint32_t innermost) {
    return innermost == r.region ? stack_node : cct_.child(stack_node, raw::kTracedRegionModule, r.region, &new_nodes_);
  };
  if (remembered && depth == 0) {
    // A stack seen before. Its return addresses were live on the thread's
    // stack at this enter, so their code is still what it was then.
    if (const DrainedThread::RememberedStack* known = t.drained.remembered(r.stack_generation))
      return with_region(known->node, known->innermost_region);
    // The enter that carried it was lost to a full ring.
    return cct_.child(raw::kRootUnwindFailed, raw::kTracedRegionModule, r.region, &new_nodes_);
  }
  uint32_t innermost = kNoRegion;
  EnclosingRegions enclosing = enclosing_regions(t.drained, r.ips(), depth, r.flags);
  StackView stack{r.ips(), depth, true, timestamp_ns};
  if (r.flags & kRegionPythonFrames) {
    const RegionPythonFrames* python = region_python_frames(r);
    stack.python = python->frames();
    stack.python_depth = python->depth;
  }
  uint32_t flags = r.flags;
  const uint32_t node = intern_stack_locked(t.drained, root_for(flags), stack, &flags, &innermost, &enclosing);
  if (remembered) {
    DrainedThread::RememberedStack& known = t.drained.remember(r.stack_generation);
    known.node = node;
    known.innermost_region = innermost;
    entering_frames(r.ips(), depth, r.flags, &known.frames);
  }
  return with_region(node, innermost);
}

void Drain::append_new_definitions_locked() {
  for (const auto& c : new_codes_) writer_.append(c);
  for (const auto& n : new_nodes_) writer_.append(n);
}

void Drain::convert_locked(ThreadState& t, const RecordHeader& h) {
  new_nodes_.clear();
  new_codes_.clear();
  switch (static_cast<RecordType>(h.type)) {
    case RecordType::kSample: {
      write_unwritten_call_locked(t);
      const auto& s = reinterpret_cast<const SampleRecord&>(h);
      EnclosingRegions enclosing = enclosing_regions(t.drained, s.ips(), h.aux, s.flags);
      uint32_t flags = s.flags;
      const uint32_t stack =
          intern_stack_locked(t.drained, root_for(flags), StackView{s.ips(), h.aux, false, s.timestamp_ns}, &flags, nullptr,
                              &enclosing);
      const uint32_t node = sample_leaf_locked(flags, s.ips(), h.aux, stack);
      append_new_definitions_locked();
      hold_sample_locked(t, raw::Sample{t.index, s.timestamp_ns, node, flags, s.weight ? s.weight : 1});
      break;
    }
    case RecordType::kMixedSample: {
      write_unwritten_call_locked(t);
      const auto& s = reinterpret_cast<const MixedSampleRecord&>(h);
      EnclosingRegions enclosing = enclosing_regions(t.drained, s.ips(), h.aux, s.flags);
      uint32_t flags = s.flags;
      const StackView view{s.ips(), h.aux, false, s.timestamp_ns,
                           reinterpret_cast<const python::PythonFrame*>(s.python_frames()), s.python_depth};
      const uint32_t node =
          sample_leaf_locked(flags, s.ips(), h.aux, intern_stack_locked(t.drained, root_for(flags), view, &flags, nullptr, &enclosing));
      append_new_definitions_locked();
      hold_sample_locked(t, raw::Sample{t.index, s.timestamp_ns, node, flags, s.weight ? s.weight : 1});
      break;
    }
    case RecordType::kRegionEnter:
      convert_enter_locked(t, reinterpret_cast<const RegionRecord&>(h));
      break;
    case RecordType::kRegionLeave:
      convert_leave_locked(t, reinterpret_cast<const RegionRecord&>(h));
      break;
    case RecordType::kEvent: {
      const auto& e = reinterpret_cast<const EventRecord&>(h);
      t.drained.last_event.remember(h.aux, e.payload);
      convert_event_locked(t, h.aux, clock_.to_ns(e.timestamp), e.payload);
      break;
    }
    case RecordType::kEventRepeat: {
      const uint32_t kind = event_repeat_kind(h.aux);
      if (t.drained.last_event.kind != kind) break;  // no producer writes that
      const EventPayload& payload = t.drained.last_event.repeat(event_repeat_how(h.aux));
      convert_event_locked(t, kind, clock_.to_ns(reinterpret_cast<const RepeatRecord&>(h).timestamp), payload);
      break;
    }
    case RecordType::kEventRun: {
      const auto& r = reinterpret_cast<const EventRunRecord&>(h);
      const uint32_t kind = event_repeat_kind(h.aux);
      if (t.drained.last_event.kind != kind || r.count == 0) break;  // no producer writes that
      convert_event_run_locked(t, kind, clock_.to_ns(r.timestamp), event_repeat_how(h.aux), r.count);
      break;
    }
    case RecordType::kRingFlush: {
      // A leaf region at the thread's current place: the records before it
      // are older than its begin, the ones after it younger than its end.
      write_unwritten_call_locked(t);
      const auto& f = reinterpret_cast<const RingFlushRecord&>(h);
      const uint64_t begin = clock_.to_ns(f.begin), end = std::max(begin, clock_.to_ns(f.end));
      const uint32_t parent = t.drained.open_regions.empty() ? raw::kRootComplete : t.drained.open_regions.back().node;
      const uint32_t node = cct_.child(parent, raw::kTracedRegionModule, ring_flush_region(), &new_nodes_);
      append_new_definitions_locked();
      writer_.append(raw::Enter{{t.index, begin, ring_flush_region(), node}});
      writer_.append(raw::Leave{{t.index, end, ring_flush_region(), node}});
      t.drained.ring_flushes += 1;
      t.drained.ring_flush_ns += end - begin;
      break;
    }
    default:
      break;  // unknown record from a newer producer: skip, the size says how far
  }
}

namespace {
RegionBody body_of(const RegionRecord& r) {
  RegionBody b{r.region, r.flags, {}};
  if (b.carries()) b.event = *carried_event(r);
  return b;
}
// A full record again, from what a RepeatRecord stands for.
struct RebuiltRecord {
  RegionRecord record;
  EventPayload event;  // where carried_event() looks for it (no stack)
  RebuiltRecord(RecordType type, uint64_t timestamp, const RegionBody& body, uint32_t slot, uint32_t generation)
      : record{RecordHeader{sizeof(RebuiltRecord), uint16_t(type), 0}, timestamp, body.region, body.flags, slot,
               generation},
        event(body.event) {}
};
static_assert(sizeof(RebuiltRecord) == sizeof(RegionRecord) + sizeof(EventPayload));

// The unwritten call's shape; a repeated enter's is copied from its site
// only now (a loop's call needs none: it is written as a repeat).
raw::CallShape& shape_of(ThreadState& t) {
  DrainedThread::UnwrittenCall& call = t.drained.unwritten_call;
  if (call.shape_at_site) {
    call.shape = t.drained.call_sites.at(call.site).enter_shape;
    call.event_ns.fill(call.enter_ns);
    call.shape_at_site = false;
  }
  return call.shape;
}
}  // namespace

void Drain::hold_sample_locked(ThreadState& t, const raw::Sample& sample) {
  DrainedThread& d = t.drained;
  // A run of samples inside traced calls grows; any other sample ends it.
  const bool run = d.samples_held > 0 && (sample.flags & kSampleInTracedCall) &&
                   (d.held_samples[d.samples_held - 1].flags & kSampleInTracedCall);
  if (!run) write_held_samples_locked(t);
  if (d.samples_held == DrainedThread::kMaxHeldSamples) {
    write_sample_locked(t, d.held_samples[0]);
    std::move(d.held_samples.begin() + 1, d.held_samples.end(), d.held_samples.begin());
    --d.samples_held;
  }
  d.held_samples[d.samples_held++] = sample;
}

void Drain::write_sample_locked(ThreadState& t, const raw::Sample& sample) {
  writer_.append(sample);
  t.drained.last_sample_ns = std::max(t.drained.last_sample_ns, sample.timestamp_ns);
}

void Drain::write_held_samples_locked(ThreadState& t) {
  for (uint32_t i = 0; i < t.drained.samples_held; ++i) write_sample_locked(t, t.drained.held_samples[i]);
  t.drained.samples_held = 0;
}

bool Drain::event_before_held_sample_locked(const ThreadState& t, const RecordHeader& h) const {
  if (t.drained.samples_held == 0) return false;
  uint64_t reading = 0;
  switch (static_cast<RecordType>(h.type)) {
    case RecordType::kEvent:
      reading = reinterpret_cast<const EventRecord&>(h).timestamp;
      break;
    case RecordType::kEventRepeat:
      reading = reinterpret_cast<const RepeatRecord&>(h).timestamp;
      break;
    case RecordType::kEventRun:
      reading = reinterpret_cast<const EventRunRecord&>(h).timestamp;
      break;
    default:
      return false;
  }
  return clock_.to_ns(reading) < t.drained.oldest_held_sample().timestamp_ns;
}

bool Drain::sample_held_inside_locked(const ThreadState& t, uint32_t flags, uint64_t enter) const {
  // The reading converted only when it decides: a loop's enters (not late) skip it.
  if (!(flags & kRegionEnterLate) || t.drained.samples_held == 0) return false;
  const raw::Sample& held = t.drained.oldest_held_sample();
  return (held.flags & kSampleInTracedCall) || held.timestamp_ns >= clock_.to_ns(enter);
}

uint64_t Drain::late_enter_ns(const ThreadState& t, uint64_t timestamp, bool sample_inside) const {
  const uint64_t ns = region_ns(t, timestamp);
  // Not after the sample it encloses (a short call's clock reading may say so).
  return sample_inside ? std::min(ns, t.drained.oldest_held_sample().timestamp_ns) : ns;
}

// Inline: two a call on the drain's hot path (write_call_repeat_locked).
__attribute__((always_inline)) inline uint64_t Drain::region_ns(const ThreadState& t, uint64_t timestamp) const {
  return std::max(clock_.to_ns(timestamp), t.drained.last_sample_ns);
}

void Drain::convert_enter_locked(ThreadState& t, const RegionRecord& r) {
  const bool sample_inside = sample_held_inside_locked(t, r.flags, r.timestamp);
  if (!sample_inside) write_held_samples_locked(t);
  write_unwritten_call_locked(t);  // a call inside a call
  const uint64_t ns = late_enter_ns(t, r.timestamp, sample_inside);
  DrainedThread::UnwrittenCall& call = t.drained.unwritten_call;
  const uint32_t node = enter_context_locked(t, r, ns);
  append_new_definitions_locked();
  if ((r.flags & kRegionLaunchesDeviceWork) && (r.flags & kRegionCarriesEvent))
    device_work_.remember_launch(carried_event(r)->wide[0], node);
  call.shape = raw::CallShape{};
  call.shape.region = r.region;
  call.shape.node = node;
  call.enter_ns = ns;
  call.site = DrainedThread::kNoSite;
  call.shape_at_site = false;
  call.encloses = (r.flags & kRegionEnclosesCode) != 0;
  call.frames_of = 0;
  if (call.encloses) {
    const DrainedThread::RememberedStack* known = t.drained.remembered(r.stack_generation);
    if (r.header.aux != 0)
      entering_frames(r.ips(), r.header.aux, r.flags, &call.frames);
    else if (known)
      call.frames = known->frames;
    else
      call.frames.clear();  // its stack was lost with the enter that carried it
  }
  t.drained.call_unwritten = true;
  convert_carried_events_locked(t, r, ns);
  if (r.stack_generation != 0 && r.stack_slot < DrainedThread::kNoSite) {
    // The stack's site starts afresh, as at the producer (TracedCallWriter).
    // The enter's own events always fit the call, so its shape is whole.
    static_assert(raw::Call::kMaxEvents >= 2, "an enter's empty and carried events");
    DrainedThread::CallSite& site = t.drained.call_sites.at(r.stack_slot);
    site = DrainedThread::CallSite{};
    site.generation = r.stack_generation;
    site.enter = body_of(r);
    site.enter_shape = call.shape;
    call.site = r.stack_slot;
  }
  // The enter, then the sample taken inside the region, still held: the
  // call's events at its start may come as records of their own
  // (event_before_held_sample_locked).
  if (sample_inside) write_unwritten_call_locked(t);
}

void Drain::convert_enter_repeat_locked(ThreadState& t, uint32_t slot, uint64_t timestamp) {
  DrainedThread::CallSite* known = t.drained.call_sites.find(slot);
  if (known == nullptr || known->generation == 0) {
    write_held_samples_locked(t);
    return;  // no producer writes that
  }
  DrainedThread::CallSite& site = *known;
  const bool sample_inside = sample_held_inside_locked(t, site.enter.flags, timestamp);
  if (!sample_inside) write_held_samples_locked(t);
  write_unwritten_call_locked(t);  // a call inside a call
  // The loop case: the same call from the same place as last time (a
  // counting event's number moved on, as at the producer).
  if (site.enter.counts()) {  // in place: no copies on a loop's path
    site.enter.count_on();
    site.enter_shape.count_on();
  }
  const uint64_t ns = late_enter_ns(t, timestamp, sample_inside);
  DrainedThread::UnwrittenCall& call = t.drained.unwritten_call;
  call.enter_ns = ns;
  call.site = slot;
  call.shape_at_site = true;
  call.encloses = (site.enter.flags & kRegionEnclosesCode) != 0;
  // The site's generation is the stack's: its frames are looked up only if
  // the call is written open (a loop's call is written whole, and needs none).
  call.frames_of = call.encloses ? site.generation : 0;
  t.drained.call_unwritten = true;
  if (sample_inside) write_unwritten_call_locked(t);  // as convert_enter_locked
}

bool Drain::write_call_repeat_locked(ThreadState& t, uint32_t slot, uint64_t enter, uint64_t leave) {
  if (!nothing_pending_locked(t)) return false;
  DrainedThread::CallSite* site = t.drained.call_sites.find(slot);
  if (site == nullptr || site->generation == 0 || !site->leave_known) return false;
  const uint64_t enter_ns = region_ns(t, enter), leave_ns = region_ns(t, leave);
  if (leave_ns < enter_ns || !writer_.append_repeat(t.index, site->written, enter_ns, leave_ns)) return false;
  site->count_on_call();
  return true;
}

void Drain::convert_call_repeat_locked(ThreadState& t, uint32_t slot, uint64_t enter, uint64_t leave) {
  if (write_call_repeat_locked(t, slot, enter, leave)) return;
  convert_enter_repeat_locked(t, slot, enter);
  write_held_samples_locked(t);  // those the enter found inside the call (a late one)
  convert_leave_repeat_locked(t, slot, leave);
}

void Drain::convert_pending_enter_repeat_locked(ThreadState& t) {
  const auto enter = t.drained.pending_enter_repeat;
  if (!enter) return;
  t.drained.pending_enter_repeat.reset();
  convert_enter_repeat_locked(t, enter->slot, enter->timestamp);
}

void Drain::skip_call_repeat_locked(ThreadState& t, uint32_t slot) {
  DrainedThread::CallSite* known = t.drained.call_sites.find(slot);
  if (known == nullptr || known->generation == 0 || !known->leave_known) return;  // no producer writes that
  known->count_on_call();
  known->written = {};
}

void Drain::convert_carried_events_locked(ThreadState& t, const RegionRecord& r, uint64_t timestamp_ns) {
  const bool outside = (r.flags & kRegionEventsOutside) != 0;
  if (r.flags & kRegionCarriesEmptyEvent)
    convert_event_locked(t, (r.flags >> kEmptyEventKindShift) & 0xffu, timestamp_ns, EventPayload{}, false, outside);
  if (r.flags & kRegionCarriesEvent)
    convert_event_locked(t, r.flags >> kCarriedEventKindShift, timestamp_ns, *carried_event(r),
                         (r.flags & kRegionEventCounts) != 0, outside);
}

void Drain::convert_event_locked(ThreadState& t, uint32_t kind, uint64_t timestamp_ns, const EventPayload& payload,
                                 bool counts, bool outside) {
  DrainedThread::UnwrittenCall& call = t.drained.unwritten_call;
  if (t.drained.call_unwritten && shape_of(t).event_count < raw::Call::kMaxEvents && timestamp_ns >= call.enter_ns) {
    uint32_t& n = call.shape.event_count;
    call.shape.events[n] = raw::CallShape::Event{kind, 0, counts, outside, 0, payload};
    call.event_ns[n++] = timestamp_ns;
    return;
  }
  write_unwritten_call_locked(t);
  writer_.append(raw::Event{t.index, timestamp_ns, kind, payload});
}

void Drain::convert_event_run_locked(ThreadState& t, uint32_t kind, uint64_t timestamp_ns, EventRepeat how,
                                     uint64_t count) {
  // A short run fits in the call it is part of (which may then repeat whole).
  const DrainedThread::UnwrittenCall& call = t.drained.unwritten_call;
  if (t.drained.call_unwritten && shape_of(t).event_count + count <= raw::Call::kMaxEvents &&
      timestamp_ns >= call.enter_ns) {
    for (uint64_t i = 0; i < count; ++i)
      convert_event_locked(t, kind, timestamp_ns, t.drained.last_event.repeat(how));
    return;
  }
  write_unwritten_call_locked(t);
  const EventPayload first = t.drained.last_event.repeat_run(how, count);
  writer_.append_event_run(t.index, timestamp_ns, kind, first, how, count);
}

void Drain::convert_leave_locked(ThreadState& t, const RegionRecord& r) {
  const uint64_t ns = region_ns(t, r.timestamp);
  DrainedThread::UnwrittenCall& call = t.drained.unwritten_call;
  // The last full leave of a call from its stack, as at the producer.
  DrainedThread::CallSite* site = nullptr;
  if (r.stack_generation != 0) site = t.drained.call_sites.find(r.stack_slot);
  if (site && site->generation != r.stack_generation) site = nullptr;
  if (site) {
    site->leave_known = true;
    site->leave = body_of(r);
    site->written = {};
  }
  // Events after the leave (kRegionEventsOutside) join the call only
  // where they fit it, else they follow the Leave written below.
  const bool after = (r.flags & kRegionEventsOutside) != 0;
  if (!after) convert_carried_events_locked(t, r, ns);
  if (t.drained.call_unwritten && shape_of(t).region == r.region && ns >= call.enter_ns) {
    // A Call stamps each event with the enter's or the leave's time (an
    // event after the leave needs the leave's to differ from the enter's).
    bool stamped_at_ends = true;
    for (uint32_t i = 0; i < call.shape.event_count; ++i)
      stamped_at_ends &= call.event_ns[i] == call.enter_ns || call.event_ns[i] == ns;
    const bool fits_after = ns > call.enter_ns &&
                            call.shape.event_count + carried_event_count(r.flags) <= raw::Call::kMaxEvents;
    if (stamped_at_ends && (!after || fits_after)) {
      if (after) convert_carried_events_locked(t, r, ns);
      for (uint32_t i = 0; i < call.shape.event_count; ++i)
        call.shape.events[i].at_leave = call.event_ns[i] != call.enter_ns;
      t.drained.call_unwritten = false;
      const raw::RecentCalls::Handle kept = writer_.append_call(t.index, call.enter_ns, ns, call.shape);
      // A call of the site's enter (any other was written out when that
      // enter came) and its leave, nothing in between: the next such call
      // repeats it.
      const uint32_t leave_events = carried_event_count(r.flags);
      if (site && call.site == r.stack_slot &&
          call.shape.event_count == site->enter_shape.event_count + leave_events)
        site->written = kept;
      return;
    }
  }
  write_unwritten_call_locked(t);
  if (t.drained.open_regions.empty() && t.drained.window_orphans > 0) {
    --t.drained.window_orphans;  // its region ended with a capture window
    return;
  }
  uint32_t node = raw::kRootComplete;
  if (!t.drained.open_regions.empty()) {
    node = t.drained.open_regions.back().node;
    t.drained.open_regions.pop_back();
  }
  writer_.append(raw::Leave{{t.index, ns, r.region, node}});
  if (after) convert_carried_events_locked(t, r, ns);
}

void Drain::convert_leave_repeat_locked(ThreadState& t, uint32_t slot, uint64_t timestamp) {
  DrainedThread::CallSite* known = t.drained.call_sites.find(slot);
  if (known == nullptr || !known->leave_known) return;  // no producer writes that
  DrainedThread::CallSite& site = *known;
  site.leave.count_on();  // as at the producer
  const DrainedThread::UnwrittenCall& call = t.drained.unwritten_call;
  const uint64_t ns = region_ns(t, timestamp);
  // Enter and leave as last time from here, nothing in between: the call's
  // shape is the one the writer kept then (if it still does).
  if (t.drained.call_unwritten && call.shape_at_site && call.site == slot && ns >= call.enter_ns &&
      writer_.append_repeat(t.index, site.written, call.enter_ns, ns)) {
    t.drained.call_unwritten = false;
    return;
  }
  const RebuiltRecord rebuilt(RecordType::kRegionLeave, timestamp, site.leave, slot, site.generation);
  convert_leave_locked(t, rebuilt.record);
}

void Drain::write_unwritten_call_locked(ThreadState& t) {
  if (!t.drained.call_unwritten) return;
  t.drained.call_unwritten = false;
  DrainedThread::UnwrittenCall& call = t.drained.unwritten_call;
  shape_of(t);
  DrainedThread::OpenRegion& open = t.drained.open_regions.emplace_back();
  open.node = call.shape.node;
  open.region = call.shape.region;
  open.encloses = call.encloses;
  if (call.encloses && call.frames_of != 0) {
    if (const DrainedThread::RememberedStack* known = t.drained.remembered(call.frames_of)) open.frames = known->frames;
  } else if (call.encloses) {
    open.frames.swap(call.frames);
  }
  // Its events are the enter's and those after it (a leave's would have
  // made it a Call): an event outside it comes before the Enter.
  for (uint32_t i = 0; i < call.shape.event_count; ++i)
    if (call.shape.events[i].outside && call.event_ns[i] == call.enter_ns)
      writer_.append(call.shape.event(i, t.index, call.event_ns[i]));
  writer_.append(raw::Enter{{t.index, call.enter_ns, call.shape.region, call.shape.node}});
  for (uint32_t i = 0; i < call.shape.event_count; ++i)
    if (!call.shape.events[i].outside || call.event_ns[i] != call.enter_ns)
      writer_.append(call.shape.event(i, t.index, call.event_ns[i]));
}

bool Drain::set_window(bool open, uint64_t now_ns, const std::string& cause, uint32_t location) {
  if (open) {
    std::lock_guard lock(mutex_);
    if (finished_ || window_open_.load()) return false;
    writer_.append(raw::Mark{now_ns, raw::MarkKind::kWindowOpen, location, cause});
    window_history_.changed(now_ns, true);
    window_open_.store(true);
    return true;
  }
  if (!window_open_.exchange(false)) return false;  // producers stop first
  std::lock_guard lock(mutex_);
  if (finished_) return false;
  window_closed_ns_ = now_ns;
  window_history_.changed(now_ns, false);
  drain_rings_locked();
  for (ThreadState* t : threads_) {
    t->drained.window_orphans += static_cast<uint32_t>(t->drained.open_regions.size() + t->drained.call_unwritten);
    leave_open_regions_locked(*t, now_ns);
  }
  writer_.append(raw::Mark{now_ns, raw::MarkKind::kWindowClose, location, cause});
  return true;
}

void Drain::mark(uint64_t now_ns, uint32_t location, const std::string& text) {
  std::lock_guard lock(mutex_);
  if (!finished_) writer_.append(raw::Mark{now_ns, raw::MarkKind::kMark, location, text});
}

void Drain::leave_open_regions_locked(ThreadState& t, uint64_t end_ns) {
  write_held_samples_locked(t);
  write_unwritten_call_locked(t);
  for (auto& open = t.drained.open_regions; !open.empty(); open.pop_back())
    writer_.append(raw::Leave{{t.index, end_ns, open.back().region, open.back().node}});
}

void Drain::end_thread_locked(ThreadState* t) {
  const uint64_t end_ns = t->end_ns ? t->end_ns : monotonic_ns();
  leave_open_regions_locked(*t, end_ns);
  writer_.append(raw::LocationEnd{t->index, end_ns, t->counters(), thread_name(*t)});
  threads_.erase(std::remove(threads_.begin(), threads_.end(), t), threads_.end());
  void* storage = t->ring_storage;
  const size_t bytes = ThreadState::storage_bytes(t->ring_bytes);
  ThreadState::destroy(t);
  threads_ending_.fetch_sub(1, std::memory_order_relaxed);
  if (!ring_pool_.give(storage, bytes)) munmap(storage, bytes);
}

void Drain::finish_locked(const raw::ProcessEnd& end) {
  if (finished_) return;
  drain_rings_locked();
  // Threads still running (exit from another thread, a signal): end them
  // now but keep their state: they may still be inside a handler.
  for (ThreadState* t : threads_) {
    leave_open_regions_locked(*t, end.timestamp_ns);
    writer_.append(raw::LocationEnd{t->index, end.timestamp_ns, t->counters(), thread_name(*t)});
  }
  write_device_work_locked(/*all=*/true);
  if (device_work_outside_windows_ > 0)
    writer_.append(raw::Notice{std::to_string(device_work_outside_windows_) +
                               " pieces of device work (kernels, copies...) launched and run outside the capture "
                               "windows were left out"});
  for (uint32_t location : appended_locations_) writer_.append(raw::LocationEnd{location, end.timestamp_ns, {}, {}});
  appended_locations_.clear();
  flush_locked();
  // The end is written even past the size limit: the stream is complete.
  writer_.write_closing(end);
  writer_.close();
  finished_ = true;
}

void Drain::stop(const raw::ProcessEnd& end) {
  if (thread_started_ && !pthread_equal(thread_, pthread_self())) {
    stop_requested_.store(true);
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(wake_fd_, &one, sizeof one);
    pthread_join(thread_, nullptr);
    thread_started_ = false;
  }
  std::lock_guard lock(mutex_);
  finish_locked(end);
}

// Async-signal-safe: an atomic store and write(2).
void Drain::request_terminate_from_signal(int signal) {
  int expected = 0;
  if (!terminate_signal_.compare_exchange_strong(expected, signal)) return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t w = write(wake_fd_, &one, sizeof one);
}

void Drain::prepare_fork() {
  mutex_.lock();
  modules_.prepare_fork();
}

void Drain::after_fork_in_parent() {
  modules_.after_fork();
  mutex_.unlock();
}

void Drain::after_fork_in_child() {
  modules_.after_fork();
  // The parent's drain thread does not exist here and its stream and
  // threads belong to the parent: drop them without flushing (the pending
  // chunk is the parent's data) and leak the states (the parent frees its own).
  writer_.abandon();
  threads_.clear();
  threads_ending_ = 0;
  rings_wanted_ = false;
  appended_locations_.clear();
  device_work_.clear();
  cct_.clear();
  ++interning_version_;
  next_location_ = 0;
  event_sets_defined_ = 0;
  finished_ = false;
  recording_ = true;
  thread_started_ = false;
  stop_requested_ = false;
  terminate_signal_ = 0;
  if (wake_fd_ >= 0 && own_fds::release(wake_fd_)) close(wake_fd_);
  wake_fd_ = -1;
  mutex_.unlock();
}

uint64_t Drain::bytes_written() const { return writer_.bytes_written(); }

}  // namespace hybridprof
