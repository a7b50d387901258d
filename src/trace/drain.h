// Drain: the one background thread per process that empties every thread's
// ring, interns stacks into the calling-context tree and streams the raw
// stream to disk every flush interval.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/mapping_pool.h"
#include "common/trace_clock.h"
#include "trace/calling_context_tree.h"
#include "trace/device_work.h"
#include "trace/module_table.h"
#include "trace/python_code_table.h"
#include "trace/raw_stream.h"
#include "trace/records.h"
#include "trace/stack_merge.h"
#include "trace/thread_state.h"
#include "trace/window_history.h"
#include "unwind/python/python_runtime.h"

namespace hybridprof {

// The region a RingFlushRecord becomes (defined in every raw stream).
uint32_t ring_flush_region();

class Drain {
 public:
  using CreateThreadFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  struct Options {
    std::string raw_path;
    uint32_t flush_interval_ms = 50;
    size_t ring_bytes = 256 * 1024;
    // The real pthread_create: the drain thread must not be sampled itself.
    CreateThreadFn create_thread = pthread_create;
    // Runs on the drain thread at a terminate request (from a signal
    // handler): ends the process's profile (stop(), which may be called
    // from the drain thread) and then, typically, the process by the
    // signal. Without it the drain finishes with a signal end reason.
    std::function<void(int signal)> on_terminate;
    // The runtime's own code [start, end): frames there are profiler
    // internals, dropped from stacks unless they lie in traced code.
    uint64_t own_code_start = 0, own_code_end = 0;
    // The program's CPython (runtime == 0: none): samples with Python frames
    // are merged with the native ones and their code objects named.
    python::PythonRuntime python;
    // Traced-call records carry TSC readings (common/trace_clock.h), not ns.
    bool tsc_trace_clock = false;
    // The raw stream stays under this many bytes (0: no limit).
    uint64_t max_bytes = 0;
    // Runs (on the thread that wrote, under the drain's lock: say it and
    // return) once recording stops for good: the stream reached max_bytes,
    // or a write failed (a full disk). `why` is one line, also in the
    // stream as a notice (when that can still be written).
    std::function<void(const std::string& why)> on_recording_stopped;
    // Capture windows: whether the run starts with none open (and why:
    // "--paused", "--delay"), and the window changes due at these
    // monotonic times (0: none), which the drain thread hands, outside its
    // lock, to on_window_due (the runtime then calls set_window).
    bool start_closed = false;
    std::string closed_cause;
    uint64_t open_at_ns = 0, close_at_ns = 0;
    std::function<void(bool open, const char* cause)> on_window_due;
  };
  // Code of the runtime that stands for a traced region (an MPI wrapper):
  // a frame there becomes the region's node, so samples taken inside the
  // call hang under the same context as the call's enter.
  struct TracedCode {
    uint64_t start = 0, end = 0;
    uint32_t region = 0;
  };

  Drain(ModuleTable& modules) : modules_(modules) {}
  ~Drain();

  // Opens the raw stream, writes `begin` and the current modules, starts the thread.
  bool start(const Options& options, const raw::ProcessBegin& begin, std::string* error);
  bool running() const { return thread_started_; }
  // Async-signal-safe (pthread_self reads the thread pointer).
  bool is_drain_thread() const { return thread_started_ && pthread_equal(thread_, pthread_self()); }

  // On the new thread, outside signal handlers: its ring (of ring_bytes,
  // a power of two; 0: Options::ring_bytes) and counters.
  ThreadState* add_thread(pid_t tid, uint64_t now_ns, size_t ring_bytes = 0);
  // The thread will write no more; the drain ends it after its last records.
  void finish_thread(ThreadState* t, uint64_t now_ns);

  // A location that is not a thread and has no ring (a device stream): its
  // adapter appends its records (append(), naming the index returned) as
  // it learns of them, in any order (the finalizer writes such a location's
  // records in time order, a region's records together), and ends it with
  // end_location. The process's end ends those still open. Thread-safe.
  uint32_t add_location(raw::LocationKind kind, uint64_t id, const std::string& name, const std::string& device,
                        uint64_t now_ns);
  void end_location(uint32_t location, uint64_t now_ns);
  // The context node of traced region `region` entered with nothing below
  // it (a kernel on a device stream): what such a location's raw::Enter and
  // raw::Leave name. Its nodes are in the stream before it returns.
  // Thread-safe.
  uint32_t region_context(uint32_t region);
  // A device's work on a location of add_location's, under the context of
  // the traced call that launched it (trace/device_work.h), else under its
  // region alone. In any order, as the device reports it (see
  // add_location). Thread-safe.
  void append_device_work(const DeviceWork& work);
  // Code of a library the runtime loaded and that calls back into it (a
  // tool interface: CUPTI): its frames are the profiler's, dropped from
  // stacks like the runtime's own. Thread-safe.
  void add_tool_code(uint64_t start, uint64_t end);

  // Records from outside the signal path (module changes, notices, region
  // definitions). Thread-safe.
  void append(const raw::Record& record);
  void append(const std::vector<raw::Record>& records);
  // The definition of a region that stands for the code at `code_address`
  // (an outlined parallel body): its module and offset go with it, so the
  // finalizer names its source location (and chooses between `name` and
  // `implicit_name` there: raw::RegionDef). Thread-safe.
  void define_code_region(uint32_t id, std::string name, uint32_t paradigm, uint64_t code_address,
                          std::string implicit_name = {});

  // Synchronously empties all rings and writes to disk (exec, tests).
  void flush_now();

  // Async-signal-safe: asks the drain thread for a pass now rather than at
  // the next interval (a producer whose ring is filling up).
  void wake();

  // How every traced-event producer writes to its thread's ring, so that a
  // full ring loses nothing: `write()` puts one record in and says whether
  // it found room. When it did not, the thread's ring is written out there
  // and then (as Score-P flushes a full buffer), `write()` runs again, and a
  // RingFlushRecord after it marks the wait in the trace ("hybridprof: ring
  // flush"). The record's time must be read before the call, so that the
  // wait comes after it. False only when the record cannot fit at all
  // (larger than the ring, or the drain has stopped); the caller counts
  // that loss.
  // Not the signal path: locks, and writes to disk. Call it on t's own
  // thread, under its busy guard.
  template <typename Write>
  bool write_or_flush(ThreadState& t, Write&& write) {
    if (__builtin_expect(write(), true)) return true;
    return flush_and_write(t, write);
  }

  // Traced-call records carry TSC readings from now on (or not). Thread-safe;
  // called before the first such record is written.
  void use_tsc_trace_clock(bool tsc);

  // The trace clock's ns per reading (1 unless the TSC times traced
  // calls), as known now. Thread-safe.
  double trace_clock_ns_per_tick() const;
  // Adds ranges of traced code (see TracedCode). Thread-safe.
  void add_traced_code(const std::vector<TracedCode>& code);

  // Final drain: ends every thread, writes `end`, closes the stream, joins.
  void stop(const raw::ProcessEnd& end);

  // Async-signal-safe: asks the drain thread to run on_terminate(signal)
  // (the first request only); ended() is true once it has finished.
  void request_terminate_from_signal(int signal);
  // Async-signal-safe: false once recording has stopped for good (see
  // Options::on_recording_stopped): rings are then emptied unread, and only
  // notices and the process's end are written.
  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  // Async-signal-safe: whether a capture window is open (recording needs
  // one: producers check it with recording()).
  bool window_open() const { return window_open_.load(std::memory_order_relaxed); }
  // Opens or closes the capture window at `now_ns`; `cause` says what did
  // ("hybridprof_start()", "--duration"), `location` the thread that asked
  // (raw::kNoLocation: none). Closing stops producers first, then drains
  // every ring (what they hold is the window's) and ends the regions still
  // open on each thread at `now_ns`; a leave that comes for one later is
  // dropped. Either way a raw::Mark says so. False when nothing changed.
  bool set_window(bool open, uint64_t now_ns, const std::string& cause, uint32_t location = raw::kNoLocation);
  // A named point of the process's time (hybridprof_mark), as a raw::Mark.
  void mark(uint64_t now_ns, uint32_t location, const std::string& text);

  // Async-signal-safe: the stream is complete and closed.
  bool ended() const { return finished_.load(std::memory_order_acquire); }
  // Async-signal-safe: how many passes over the rings have been written
  // out so far. Two more after a wake(): what was in the rings then is on disk.
  uint64_t passes_written() const { return passes_written_.load(std::memory_order_acquire); }

  // pthread_atfork hooks: hold the locks across fork so the child gets them
  // in a consistent state; the child then forgets the parent's stream and
  // threads so start() can begin its own.
  void prepare_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

  uint64_t bytes_written() const;

  // Whether `address` lies in the runtime's own code (Options::own_code_*,
  // fixed at start: no lock).
  bool runtime_code(uint64_t address) const {
    return address >= options_.own_code_start && address < options_.own_code_end;
  }

 private:
  static void* thread_main(void* self);
  void loop();
  void drain_rings_locked();
  // Writes the pending chunk; notices the writer's stop (recording()).
  void flush_locked();
  // append()'s: what a record becomes once recording has stopped.
  void append_locked(const raw::Record& record);
  // A pass's start: the clock anchor, module changes, Python's per-pass reads.
  void begin_pass_locked();
  // Writes the modules loaded and unloaded since the last look
  // (ModuleTable::refresh; `force`: whether or not the loader says so);
  // any change moves interning_version_.
  void refresh_modules_locked(uint64_t now, bool force);
  // Empties t's ring into the stream.
  void drain_thread_locked(ThreadState& t);
  // write_or_flush's flush: t's ring into the stream, the stream to disk.
  bool flush_full_ring(ThreadState& t);
  // write_or_flush's rare path, kept out of line so that the common one
  // (the first write) inlines into the MPI wrappers.
  template <typename Write>
  __attribute__((noinline)) bool flush_and_write(ThreadState& t, Write& write) {
    const BusyScope profiler_work(&t);  // the time spent writing the ring out is the profiler's ([hybridprof])
    const uint64_t begin = trace_clock_now();
    if (!flush_full_ring(t) || !write()) return false;
    if (auto* r = reinterpret_cast<RingFlushRecord*>(t.ring.reserve_exclusive(
            sizeof(RingFlushRecord), static_cast<uint16_t>(RecordType::kRingFlush), 0))) {
      r->begin = begin;
      r->end = trace_clock_now();
      t.ring.commit_exclusive();
    }
    return true;
  }
  // The CCT nodes and Python codes the record being converted defined,
  // into the stream before the record that names them.
  void append_new_definitions_locked();
  // One ring record into the stream; RepeatRecords do not come here
  // (drain_rings_locked takes them first: they are most of an MPI rank's).
  void convert_locked(ThreadState& t, const RecordHeader& h);
  // The context node of a traced-call enter (its stack, then its region).
  uint32_t enter_context_locked(ThreadState& t, const RegionRecord& r, uint64_t timestamp_ns);
  // Writes the Enter (and events) of t's unwritten call, if any: something
  // other than its leave came next, or the pass ends.
  void write_unwritten_call_locked(ThreadState& t);
  // The thread's regions still open at its end (a worker waiting for work
  // at exit, a call the process exited in) end there, innermost first, so
  // every enter in the stream has its leave.
  void leave_open_regions_locked(ThreadState& t, uint64_t end_ns);
  // The thread's last samples (DrainedThread::held_samples): held, and
  // written. A late enter at trace clock reading `enter` goes before the
  // held samples (then true), which it keeps held for its call's records
  // after it, else after: when the oldest is younger, or was taken inside
  // a traced call (kSampleInTracedCall, so inside this one). It is then at
  // late_enter_ns, no later than the oldest.
  void hold_sample_locked(ThreadState& t, const raw::Sample& sample);
  void write_held_samples_locked(ThreadState& t);
  void write_sample_locked(ThreadState& t, const raw::Sample& sample);
  bool sample_held_inside_locked(const ThreadState& t, uint32_t flags, uint64_t enter) const;
  // Whether record `h` is an event stamped before the held sample, and so
  // written before it: a call recorded after it ran, from a stack not seen
  // before, writes its events at its start after its enter (MpiCall::start),
  // so after a sample taken inside the call.
  bool event_before_held_sample_locked(const ThreadState& t, const RecordHeader& h) const;
  uint64_t late_enter_ns(const ThreadState& t, uint64_t timestamp, bool sample_inside) const;
  // A region record's time in ns, no earlier than the thread's last sample
  // written (a late enter that could not go before it; a leave read just
  // after a sample that the producer took between its clock read and its
  // write).
  uint64_t region_ns(const ThreadState& t, uint64_t timestamp) const;
  // The records of one traced call, read one by one (see ThreadState::unwritten_call).
  void convert_enter_locked(ThreadState& t, const RegionRecord& r);
  void convert_leave_locked(ThreadState& t, const RegionRecord& r);
  // RepeatRecords: the site's last full enter / leave again (records.h).
  void convert_enter_repeat_locked(ThreadState& t, uint32_t slot, uint64_t timestamp);
  void convert_leave_repeat_locked(ThreadState& t, uint32_t slot, uint64_t timestamp);
  // A CallRepeatRecord (a loop's call) as one repeat of the call the raw
  // stream's writer kept for its site, where nothing else is pending on the
  // thread: what the two above do for it, without the unwritten call's
  // state in between. False (nothing done) where it does not apply.
  bool write_call_repeat_locked(ThreadState& t, uint32_t slot, uint64_t enter, uint64_t leave);
  // A repeated call's enter and leave readings: as one repeat where it
  // applies, else converted one by one.
  void convert_call_repeat_locked(ThreadState& t, uint32_t slot, uint64_t enter, uint64_t leave);
  // Nothing held on the thread (a sample that may go inside a call) and
  // nothing unwritten (a call one would be inside of): a call's enter is
  // late for nothing, and its repeat can be written whole.
  static bool nothing_pending_locked(const ThreadState& t) {
    return t.drained.samples_held == 0 && !t.drained.call_unwritten;
  }
  // The repeated enter drain_thread_locked kept back (DrainedThread::
  // pending_enter_repeat), if any, converted now.
  void convert_pending_enter_repeat_locked(ThreadState& t);
  // A CallRepeatRecord that ends after the capture window closed: the
  // call's enter was still held back (TracedCallWriter::defer_enter) when
  // the window's close drained the rings. It is dropped, as the leave of a
  // call the close found open is; the site's records move on as the
  // producer's did, and the next call from it is written in full.
  void skip_call_repeat_locked(ThreadState& t, uint32_t slot);
  // The events an enter or leave record carries, at its time.
  void convert_carried_events_locked(ThreadState& t, const RegionRecord& r, uint64_t timestamp_ns);
  // A traced event at its own time: into the thread's unwritten call when
  // it fits, as a raw::Event otherwise. `outside`: kRegionEventsOutside.
  void convert_event_locked(ThreadState& t, uint32_t kind, uint64_t timestamp_ns, const EventPayload& payload,
                            bool counts = false, bool outside = false);
  // `count` repeats `how` of the thread's last event at one time (EventRunRecord).
  void convert_event_run_locked(ThreadState& t, uint32_t kind, uint64_t timestamp_ns, EventRepeat how,
                                uint64_t count);
  // Event sets registered since the stream last defined them (event_sets.h).
  void define_new_event_sets_locked();
  // Interning a stack (intern_stack_locked): *innermost_region is the
  // traced region of the innermost frame kept, or kNoRegion.
  static constexpr uint32_t kNoRegion = 0xffffffffu;
  // The leaf of a sample whose stack (ips[0..depth), ips[0] the
  // interrupted instruction) ends at `node`: its [hybridprof] child for
  // the profiler's own time, its [kernel] child for a sample taken in
  // kernel mode, else `node`.
  uint32_t sample_leaf_locked(uint32_t flags, const uint64_t* ips, uint32_t depth, uint32_t node);
  // The regions enclosing code (kRegionEnclosesCode) open on a thread, for
  // a stack the thread has now (a sample, a nested enter): each goes after
  // the frame that entered it when the stack's callers of that frame are
  // the enter's, else after the outermost frames the two stacks share (an
  // OpenMP runtime that enters from one function and runs the code from
  // another); outermost first.
  struct EnclosingRegions {
    struct At {
      uint32_t frame;  // index into the stack's ips: the region comes after it
      uint32_t region;
    };
    static constexpr uint32_t kMax = 16;
    At at[kMax];
    uint32_t count = 0, next = 0;  // found; inserted so far
  };
  EnclosingRegions enclosing_regions(const DrainedThread& d, const uint64_t* ips, uint32_t depth, uint32_t flags) const;
  // Adds to `node` the regions of `e` not inserted yet that come after
  // frame `frame` or further out.
  uint32_t insert_regions_locked(EnclosingRegions& e, uint32_t frame, uint32_t node);
  // A stack to intern: native addresses, innermost first (ips[0] the
  // interrupted instruction unless all_return_addresses), and on a thread
  // running Python its Python frames, merged in (stack_merge.h).
  struct StackView {
    const uint64_t* ips = nullptr;
    uint32_t depth = 0;
    bool all_return_addresses = false;
    uint64_t timestamp_ns = 0;  // when it was taken (which modules were loaded)
    const python::PythonFrame* python = nullptr;
    uint32_t python_depth = 0;
  };
  // Sets kSamplePythonIncomplete in *flags when the Python frames did not
  // merge whole.
  // A stack of native frames only, outside regions that enclose code,
  // starts from where it parts from the thread's last one
  // (DrainedThread::last_interned).
  uint32_t intern_stack_locked(DrainedThread& d, uint32_t node, const StackView& s, uint32_t* flags,
                               uint32_t* innermost_region, EnclosingRegions* enclosing);
  // An enter's return addresses from the program's frame that entered the
  // region outwards (DrainedThread::OpenRegion::frames).
  void entering_frames(const uint64_t* ips, uint32_t depth, uint32_t flags, std::vector<uint64_t>* frames) const;
  bool own_code(uint64_t address) const {
    if (runtime_code(address)) return true;
    for (const auto& [start, end] : tool_code_)
      if (address >= start && address < end) return true;
    return false;
  }
  // Device work ready now (all of it, with `all`; one location's, with
  // `location`) into the stream.
  void write_device_work_locked(bool all, const uint32_t* location = nullptr);
  // One native frame under `node` (the loop step of intern_stack_locked).
  uint32_t intern_native_locked(uint32_t node, uint64_t address, uint64_t timestamp_ns, ModuleInfo* module,
                                bool* have_module, uint32_t* innermost_region);
  const TracedCode* traced_code_at(uint64_t address) const;
  void end_thread_locked(ThreadState* t);
  void finish_locked(const raw::ProcessEnd& end);

  ModuleTable& modules_;
  Options options_;
  mutable std::mutex mutex_;  // guards everything below
  raw::StreamWriter writer_;
  TraceClockConverter clock_;  // traced-call readings to ns
  CallingContextTree cct_;
  std::vector<ThreadState*> threads_;
  std::vector<raw::CctNode> new_nodes_;
  std::vector<TracedCode> traced_code_;  // sorted by start
  std::unique_ptr<PythonCodeTable> python_codes_;  // with options_.python
  std::vector<raw::PythonCode> new_codes_;
  std::vector<MergedFrame> merged_;
  std::vector<uint32_t> appended_locations_;  // add_location's, not yet ended
  DeviceWorkQueue device_work_;
  std::vector<std::pair<uint64_t, uint64_t>> tool_code_;  // add_tool_code's [start, end)
  uint64_t passes_ = 0;  // begin_pass_locked's count
  // Changes whenever what interning a stack reads changes (modules loaded
  // or unloaded, traced or tool code added, the tree emptied): threads'
  // last interned stacks of another version are not reused.
  uint64_t interning_version_ = 1;
  uint32_t next_location_ = 0;  // threads' and appended locations' indices
  size_t event_sets_defined_ = 0;  // registered_event_sets()[0, n) are in the stream
  // Written under mutex_; atomic so that ended() may read it from a handler.
  std::atomic<bool> finished_{false};

  pthread_t thread_{};
  bool thread_started_ = false;
  std::atomic<int> wake_fd_{-1};          // eventfd: stop / terminate requests (own_fds)
  std::atomic<int> terminate_signal_{0};
  std::atomic<uint64_t> passes_written_{0};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> recording_{true};
  std::atomic<bool> window_open_{true};
  uint64_t window_closed_ns_ = 0;  // when the window last closed (under mutex_)
  WindowHistory window_history_;   // under mutex_
  // Device work that neither began in a window nor had a recorded launch:
  // left out, and said at the end (under mutex_).
  uint64_t device_work_outside_windows_ = 0;
  // The drain thread's: the next scheduled window changes (0: none).
  uint64_t open_at_ns_ = 0, close_at_ns_ = 0;
  // The poll timeout that wakes the drain thread for the first of them.
  int next_wake_ms(uint64_t now_ns) const;
  void run_due_window_changes(uint64_t now_ns);
  // Rings (with their scratch and state: ThreadState::storage_bytes) of
  // ended threads, for the next ones; of the default size only.
  MappingPool<16> ring_pool_;
  // Threads finished whose state the drain has not ended yet, and whether
  // a new thread asked for a pass to bring their rings back (add_thread).
  std::atomic<uint32_t> threads_ending_{0};
  std::atomic<bool> rings_wanted_{false};
  uint64_t start_ns_ = 0;  // the stream's begin, for the stop notice
};

}  // namespace hybridprof
