// The raw stream: what the runtime puts on disk while the program runs.
//
// One file per process image (raw/<host>.<pid>.<start-ns>.hpr: a pid that
// execs starts a new file). The
// drain appends whole chunks with one write() each, so a crash or kill loses
// at most the chunk being built (one flush interval); a torn last chunk is
// detected by its length and checksum and skipped. The finalizer
// (tools/finalize) turns these files into the OTF2 archive; it can run after
// the process died.
//
// File:  "HYBPRAW" + version byte, then chunks.
// Chunk: u32 magic 'HPRC', u32 payload bytes, u32 checksum of the payload
//        (a 64-bit multiply-xor mix folded to 32 bits), u32 0,
//        payload = records. A record is a varint tag then its fields:
//        integers as LEB128 varints, signed deltas zigzag-encoded, strings as
//        varint length + bytes. Sample and region timestamps are deltas
//        against the previous timestamp of the same location. Deltas, the
//        call shapes a CallRepeat refers to and the events an EventRepeat
//        does, start over in every chunk.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "trace/event_payload.h"

namespace hybridprof::raw {

// The last byte is the format version: bump it whenever a record changes, so
// a finalizer never misreads a stream from another build.
inline constexpr char kFileMagic[8] = {'H', 'Y', 'B', 'P', 'R', 'A', 'W', 'M'};
// A sample never stands for more periods than this (timer overruns are
// bounded by the run); larger values mean a corrupt stream.
inline constexpr uint32_t kMaxSampleWeight = 1u << 20;
inline constexpr uint32_t kChunkMagic = 0x43525048;  // "HPRC"
// Location indices are dense per process (threads and device streams in
// the order they began); a reader refuses one beyond this.
inline constexpr uint32_t kMaxLocations = 1u << 22;

enum class Tag : uint32_t {
  kProcessBegin = 1,
  kModuleLoad = 2,
  kModuleUnload = 3,
  kLocationBegin = 4,
  kLocationEnd = 5,
  kCctNode = 6,
  kSample = 7,
  kRegionDef = 8,
  kEnter = 9,
  kLeave = 10,
  kProcessEnd = 11,
  kNotice = 12,
  kEvent = 13,
  kDefinition = 14,
  kJobRank = 15,
  kClockOffset = 16,
  kPythonCode = 17,
  kCall = 18,
  kCallRepeat = 19,  // a recent Call again (trace/recent_calls.h: counting events advanced)
  kEventSetDef = 20,
  kMark = 21,
  // An Event that says what its location's last Event record said, or that
  // with its serial number advanced (LastEvent, event_payload.h): its
  // location and time alone. Readers never see it: it reads back as the
  // Event it stands for.
  kEventRepeat = 22,
  kEventCounted = 23,
  // Events at one time on one location: a first one (kind, payload) and
  // `count - 1` more, each the last repeated the same or counted on (a
  // Waitall's completions). Readers never see it: it reads back as the
  // Events it stands for.
  kEventRun = 24,
};
// The most events one kEventRun stands for (longer runs are written as
// several, a record per 4,096 completions): a reader refuses more, as a
// corrupt stream's, so that a few bytes never stand for millions of
// records (a hostile run kept the fuzzed reader busy past its time limit).
inline constexpr uint64_t kMaxEventRun = 1u << 12;

// CCT node ids 0..2 are synthetic roots: a complete stack hangs under
// kRootComplete; a stack cut at --max-depth under kRootTruncated; a stack
// whose unwind failed part-way under kRootUnwindFailed.
inline constexpr uint32_t kRootComplete = 0;
inline constexpr uint32_t kRootTruncated = 1;
inline constexpr uint32_t kRootUnwindFailed = 2;
inline constexpr uint32_t kFirstCctNode = 3;
// A CCT node whose module is kTracedRegionModule is a traced region (an MPI
// call...): its offset is the RegionDef id. Traced-region enters hang their
// region under the caller's native frames, and samples taken inside the call
// continue below it.
inline constexpr uint32_t kTracedRegionModule = 0xfffffffeu;
// A CCT node whose module is kPythonModule is a Python frame: its offset is
// (PythonCode id << 32) | (bytecode offset + 1), 0 before the first
// instruction.
inline constexpr uint32_t kPythonModule = 0xfffffffdu;
// A CCT node whose module is kKernelModule is the kernel working for the
// thread (offset 0): the leaf of a sample taken in kernel mode, under the
// user stack that entered the kernel.
inline constexpr uint32_t kKernelModule = 0xfffffffcu;
// A CCT node whose module is kProfilerModule is hybridprof's own work for
// the thread (offset 0): the leaf of a sample taken in the runtime's code
// or section, under the call it interrupted.
inline constexpr uint32_t kProfilerModule = 0xfffffffbu;
// Module id 0 means "address in no known module"; offset is then absolute.
inline constexpr uint32_t kUnknownModule = 0;

struct ProcessBegin {
  uint64_t pid = 0, ppid = 0;
  uint64_t monotonic_ns = 0, realtime_ns = 0;
  int64_t launcher_rank = -1;  // the rank its launcher gave it (common/launcher_rank.h), or -1
  std::string hostname, executable;
  std::vector<std::string> args;
  std::string event;      // what is really sampled, e.g. "cpu-clock"
  std::string mechanism;  // "perf_event" or "posix-timer"
  uint64_t period = 0;    // events (or ns for clocks) between samples, or Hz
  bool frequency = false; // period holds a frequency in Hz
  uint64_t max_depth = 0;
  uint64_t signal = 0;
  std::string python;     // "3.11" when the process's Python frames are read, else ""
  std::string kernel_time;  // what became of time in the kernel (sampling::kernel_time_text)
  std::string periods;      // "randomized ..." or "fixed" (sampling::periods_text)
};
struct ModuleLoad {
  uint32_t id = 0;
  uint64_t timestamp_ns = 0;
  uint64_t bias = 0;        // load bias: runtime address = bias + ELF vaddr
  uint64_t start = 0, end = 0;  // runtime address range of its PT_LOAD segments
  std::string path;
};
struct ModuleUnload { uint32_t id = 0; uint64_t timestamp_ns = 0; };
// What a location (a timeline of events, OTF2's) is. A thread's records
// come from its ring; a device stream's (a GPU's queue of kernels and
// copies) are appended by the adapter that learns of its work
// (Drain::add_location), in time order.
enum class LocationKind : uint32_t { kThread = 0, kDeviceStream = 1 };
inline constexpr uint32_t kLastLocationKind = 1;
// `id`: a thread's tid; a device stream's id as its adapter numbers it.
// `device`: the device a stream runs on ("GPU 0"), a location group of its
// own in the archive, created by the process; empty for a thread.
struct LocationBegin {
  uint32_t location = 0;
  uint64_t id = 0;
  uint64_t timestamp_ns = 0;
  std::string name;
  LocationKind kind = LocationKind::kThread;
  std::string device;
};
inline LocationBegin thread_begin(uint32_t location, uint64_t tid, uint64_t timestamp_ns) {
  return {location, tid, timestamp_ns, {}, LocationKind::kThread, {}};
}
struct ThreadCounters {
  uint64_t samples = 0;         // samples recorded into the ring
  uint64_t dropped = 0;         // samples lost to a full ring (busy ones are deferred)
  uint64_t unwind_failed = 0;   // unwinds that stopped with an error
  uint64_t truncated = 0;       // unwinds cut at --max-depth
  uint64_t dropped_events = 0;  // traced events (MPI...) lost: ring full
  uint64_t unwind_recovered = 0;  // unwinds continued past code without unwind tables (stack scan)
  uint64_t ring_flushes = 0;    // times a traced-event producer found the ring full and wrote it out
  uint64_t ring_flush_ns = 0;   // ... and the time the thread waited for that
  uint64_t sample_signals = 0;  // sample signals its handler took (a timer's one may stand for several periods)
  uint64_t sample_handler_ns = 0;  // ... and the time the handler took for them (signal delivery not included)
  uint64_t sample_handler_slow = 0;  // ... of them, handlers that took over kSlowHandlerNs (left out of the time)
};
// Every counter, in stream order. The raw stream, the finalizer's
// definitions file and the archive's thread properties walk this list: a
// counter is a field above and an entry here (and its property's name in
// the finalizer, which checks that it has one for each).
inline constexpr uint64_t ThreadCounters::*kThreadCounterFields[] = {
    &ThreadCounters::samples,        &ThreadCounters::dropped,          &ThreadCounters::unwind_failed,
    &ThreadCounters::truncated,      &ThreadCounters::dropped_events,   &ThreadCounters::unwind_recovered,
    &ThreadCounters::ring_flushes,   &ThreadCounters::ring_flush_ns,    &ThreadCounters::sample_signals,
    &ThreadCounters::sample_handler_ns, &ThreadCounters::sample_handler_slow,
};
static_assert(sizeof kThreadCounterFields / sizeof kThreadCounterFields[0] == sizeof(ThreadCounters) / sizeof(uint64_t),
              "every ThreadCounters field is in kThreadCounterFields");
struct LocationEnd {
  uint32_t location = 0;
  uint64_t timestamp_ns = 0;
  ThreadCounters counters;
  std::string name;  // a thread's name when it ended (pthread_setname_np); empty: as it began
};
struct CctNode { uint32_t id = 0, parent = 0, module = 0; uint64_t offset = 0; };
struct Sample {
  uint32_t location = 0;
  uint64_t timestamp_ns = 0;
  uint32_t node = 0;
  uint32_t flags = 0;
  uint32_t weight = 1;  // sampling periods it stands for
};
// `code_module` / `code_offset`: the code a region stands for (an OpenMP
// construct's outlined body), as a CctNode names an address; the
// finalizer adds its source location to the name ("!$omp parallel
// @solver.c:42"). kUnknownModule: none. `implicit_name`, when set, is
// its name instead when the call at the code is not a statement of its own
// (symbolizer's call_is_statement): one runtime call a compiler makes both
// for a statement and for a construct's implicit part (GCC's GOMP_barrier:
// "!$omp barrier" for `#pragma omp barrier`, "!$omp implicit barrier"
// inside the loop it closes).
struct RegionDef {
  uint32_t id = 0;
  std::string name;
  uint32_t paradigm = 0;
  uint32_t code_module = 0;
  uint64_t code_offset = 0;
  std::string implicit_name;
};
struct RegionEvent { uint32_t location = 0; uint64_t timestamp_ns = 0; uint32_t region = 0; uint32_t node = 0; };
struct Enter : RegionEvent {};
struct Leave : RegionEvent {};
enum class EndReason : uint32_t { kExit = 0, kSignal = 1, kExec = 2 };
struct ProcessEnd {
  uint64_t timestamp_ns = 0;
  EndReason reason = EndReason::kExit;
  int64_t status = 0;                // exit status or signal number
  uint64_t samples_without_thread = 0;  // signals on threads we never saw start
};
struct Notice { std::string text; };

// A point of the process's time the user or the run named: a capture
// window opening or closing (what did it: "run start", "--delay",
// "hybridprof_stop()"...), or a mark (hybridprof_mark's text). `location`:
// the thread that made it, kNoLocation when none (the drain's schedule).
enum class MarkKind : uint32_t { kWindowOpen = 0, kWindowClose = 1, kMark = 2 };
inline constexpr uint32_t kLastMarkKind = 2;
inline constexpr uint32_t kNoLocation = 0xffffffffu;
struct Mark {
  uint64_t timestamp_ns = 0;
  MarkKind kind = MarkKind::kMark;
  uint32_t location = kNoLocation;
  std::string text;
};

// An adapter's set of event kinds (trace/event_sets.h): events of kind
// base .. base + kinds - 1 are the set's, and go to the finalizer's writer
// registered for `name` with the kind's index in the set.
struct EventSetDef { uint32_t base = 0, kinds = 0; std::string name; };
// A traced event: what happened is its kind's set's business.
struct Event {
  uint32_t location = 0;
  uint64_t timestamp_ns = 0;
  uint32_t kind = 0;
  EventPayload payload;
};
// A traced call with nothing else recorded on its thread between its enter
// and its leave: the Enter, at most two events stamped at the enter or the
// leave time, and the Leave, stored as one record (an MPI call is mostly
// this: a send, a receive, a collective's begin and end). Only the drain
// writes it and readers never see it: read_stream() delivers the Enter, the
// events and the Leave it stands for, in that order.
struct Call {
  static constexpr uint32_t kMaxEvents = 2;
  uint32_t location = 0;
  uint64_t enter_ns = 0, leave_ns = 0;
  uint32_t region = 0, node = 0;
  uint32_t event_count = 0;
  std::array<Event, kMaxEvents> events;  // each at enter_ns or leave_ns
  // Bit i: events[i] counts (event_payload.h): a repeat of this call stands
  // for it with that event's serial number advanced.
  uint32_t counting = 0;
  // Bit i: events[i] is outside the call (RegionFlags' kRegionEventsOutside):
  // read before the Enter when stamped at the enter, after the Leave when
  // stamped at the leave.
  uint32_t outside = 0;
};
// A definition an adapter's events name by `id` (an MPI communicator, an
// OpenMP thread team): what `values` say is the business of the adapter
// whose set is `set` (trace/event_sets.h), as an Event's payload is. The
// finalizer hands every process's definitions of a set to that set's
// definition writer (sink/definition_set_writer.h). A later definition of
// the same set and id replaces an earlier one (a freed handle's id reused).
struct Definition {
  std::string set;
  uint32_t id = 0;
  std::string name;
  std::vector<uint64_t> values;
};
// This process is rank `rank` of a parallel job of `size` processes, as
// the job's runtime (MPI) numbers them. The archive orders processes by
// it and keeps a place for a rank whose data is missing.
struct JobRank { uint32_t rank = 0, size = 0; };
// At local CLOCK_MONOTONIC `timestamp_ns`, rank 0's clock read
// `timestamp_ns + offset_ns` (measured at MPI init and finalize).
struct ClockOffset { uint64_t timestamp_ns = 0; int64_t offset_ns = 0; uint64_t stddev_ns = 0; };
// A Python code object as the drain saw it while the program ran (it may be
// freed later): names, and the table mapping bytecode offsets to lines in
// the interpreter's own format (python::LineTableFormat).
struct PythonCode {
  uint32_t id = 0;
  std::string qualname, filename;
  uint32_t firstlineno = 0;
  uint32_t line_format = 0;
  std::string linetable;
};

using Record = std::variant<ProcessBegin, ModuleLoad, ModuleUnload, LocationBegin, LocationEnd,
                            CctNode, Sample, RegionDef, Enter, Leave, ProcessEnd, Notice,
                            Event, EventSetDef, Definition, JobRank, ClockOffset, PythonCode, Mark>;

}  // namespace hybridprof::raw
