// Names of the properties the finalizer stores in the archive and
// hybridprof-report reads back. One list, used by both sides, so a rename
// cannot silently break the report.
#pragma once

namespace hybridprof::otf2::property {

// Archive (anchor file) properties: OTF2 wants "NAMESPACE::NAME", [A-Z0-9_].
inline constexpr const char* kProgram = "HYBRIDPROF::PROGRAM";      // command line
inline constexpr const char* kEvent = "HYBRIDPROF::EVENT";          // e.g. "cpu-clock"
inline constexpr const char* kMechanism = "HYBRIDPROF::MECHANISM";  // e.g. "perf_event"
inline constexpr const char* kPeriod = "HYBRIDPROF::PERIOD";        // "1000 Hz" / "1000000 events"
// What became of CPU time in the kernel: "sampled ([kernel] frames)" ...
inline constexpr const char* kKernelTime = "HYBRIDPROF::KERNEL_TIME";
// "randomized (...)" or "fixed": how each sampling period was chosen.
inline constexpr const char* kPeriods = "HYBRIDPROF::PERIODS";
inline constexpr const char* kVersion = "HYBRIDPROF::VERSION";
inline constexpr const char* kCommit = "HYBRIDPROF::COMMIT";    // the git commit the writer was built from
inline constexpr const char* kNotices = "HYBRIDPROF::NOTICES";      // one notice per line
// Who wrote the archive, and when: the ranks at the end of an MPI job, or
// a launcher or hybridprof-merge from the raw data afterwards.
inline constexpr const char* kWrittenBy = "HYBRIDPROF::WRITTEN_BY";

// Process (OTF2 location group) properties, stored as strings.
inline constexpr const char* kPid = "PID";
inline constexpr const char* kParentPid = "PARENT_PID";
inline constexpr const char* kExitStatus = "EXIT_STATUS";
inline constexpr const char* kSamplesWithoutThread = "SAMPLES_WITHOUT_THREAD";
// Threads that recorded nothing (no sample, no traced event): counted
// here, with no location of their own.
inline constexpr const char* kQuietThreads = "QUIET_THREADS";
inline constexpr const char* kPython = "PYTHON";  // "3.11": the process ran Python and its frames were read
// Its capture windows, "FROM TO\tOPENED BY\tCLOSED BY" a line (times in
// the archive's clock: "run start", "--delay", "hybridprof_stop()" ...), and
// its marks, "AT\tTEXT" a line (hybridprof_mark).
inline constexpr const char* kCaptureWindows = "CAPTURE_WINDOWS";
inline constexpr const char* kMarks = "MARKS";

// Thread (OTF2 location) properties, stored as uint64.
inline constexpr const char* kSamples = "SAMPLES";
inline constexpr const char* kDropped = "DROPPED";
inline constexpr const char* kDroppedEvents = "DROPPED_EVENTS";  // traced events (MPI...) lost to a full ring
// A traced-event producer found the ring full and waited while it was
// written out (region "hybridprof: ring flush"): how often, and for how long.
inline constexpr const char* kRingFlushes = "RING_FLUSHES";
inline constexpr const char* kRingFlushNs = "RING_FLUSH_NS";
inline constexpr const char* kUnwindFailures = "UNWIND_FAILURES";
inline constexpr const char* kTruncated = "TRUNCATED";
// Unwinds continued past code without unwind tables (JIT code) by a stack scan.
inline constexpr const char* kUnwindRecovered = "UNWIND_RECOVERED";
// The sample handler's own cost on the thread: the signals it took and the
// nanoseconds it spent in them (the kernel's delivery not included).
inline constexpr const char* kSampleSignals = "SAMPLE_SIGNALS";
inline constexpr const char* kSampleHandlerNs = "SAMPLE_HANDLER_NS";
// Of the signals, those whose handler took over 250 us (switched out by the
// scheduler meanwhile, mostly): their time is not in SAMPLE_HANDLER_NS.
inline constexpr const char* kSampleHandlerSlow = "SAMPLE_HANDLER_SLOW";
inline constexpr const char* kTid = "TID";
// Samples whose Python stack is incomplete: the frame chain could not be read
// to its end, or did not match the native evaluation frames it replaces.
// Only on threads of processes with the PYTHON property.
inline constexpr const char* kPythonIncomplete = "PYTHON_INCOMPLETE";
// Events the archive writer wrote at their location's previous time, not
// their own, because it was earlier (ArchiveWriter rule 2), and the most
// one was moved, in ns. Only on locations that had any. A few nanoseconds
// are the two clocks' rounding (samples and traced calls); microseconds
// mean the records reached the writer out of order.
inline constexpr const char* kOutOfOrderEvents = "OUT_OF_ORDER_EVENTS";
inline constexpr const char* kOutOfOrderNs = "OUT_OF_ORDER_NS";

}  // namespace hybridprof::otf2::property
