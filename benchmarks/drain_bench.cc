// What the drain thread spends per traced MPI call (Google Benchmark): a
// ring holding the records of MPI_Send / MPI_Recv pairs as the wrappers
// write them (a remembered caller stack, a message event per call) is
// emptied into the raw stream by one drain pass. On a machine whose cores
// are all busy with ranks (2 ranks on 2 cores here), this time is taken from
// the ranks, so it is part of the per-call overhead the MPI benchmark sees.
//
// BM_DrainCallSites does the same for NVTX-like calls from 1 to 4,096
// stacks in turn (a program calling from many places).
//
//   bin/drain_bench   (counter "ns_per_call": drain time per traced call)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/trace_clock.h"
#include "trace/drain.h"
#include "trace/module_table.h"
#include "trace/records.h"
#include "trace/thread_state.h"

namespace hybridprof {
namespace {

constexpr uint32_t kSendRegion = 1, kRecvRegion = 2;
constexpr size_t kRingBytes = 4u << 20;

// Records timed as the runtime times them where the time-stamp counter can
// (common/trace_clock.h; this VM), so that the drain converts each reading
// to ns as it does there; elsewhere in CLOCK_MONOTONIC ns, which it keeps.
bool tsc_clock() {
  static const bool tsc = [] {
    std::string why;
    return tsc_can_time_calls("", &why);
  }();
  return tsc;
}
uint64_t clock_now() { return tsc_clock() ? read_tsc() : monotonic_ns(); }

// Return addresses inside this program, so the first enter's stack interns
// like a real one (module lookup, CCT nodes).
__attribute__((noinline)) void caller_frames(uint64_t* ips, uint32_t depth) {
  for (uint32_t i = 0; i < depth; ++i) ips[i] = reinterpret_cast<uint64_t>(&caller_frames) + 16 + 8 * i;
}

class MpiRecordWriter {
 public:
  // `whole`: calls that return at once (MPI_Isend, MPI_Irecv), whose
  // repeats hold their enter back and are written whole at their leave
  // (TracedCallWriter::defer_enter: one CallRepeatRecord a call).
  MpiRecordWriter(ThreadState& t, bool whole) : t_(t), whole_(whole) {}

  // One call's records as MpiCall writes them (TracedCallWriter): the first
  // enter from each place (one per region here) carries the stack, later
  // ones refer to it; a send travels in the enter (stamped with the call's
  // start), a receive in the leave (stamped with its end). From the second
  // call from a place on, both are repeats.
  // Event kinds as an adapter numbers them (MPI's send and receive).
  static constexpr uint32_t kSend = 0, kRecv = 1;
  bool call(uint32_t region, uint32_t kind) {
    const uint32_t slot = region % CallerStackCache::kEntries;
    const uint32_t depth = seen_[slot] ? 0 : 12;
    const CallerStackCache::Ref stack{slot, 1, depth != 0};
    const uint64_t enter_ns = now_ += 40, leave_ns = now_ += 500;
    const bool at_enter = kind == kSend;
    EventPayload message;  // peer 1, tag 7, 8 bytes
    message.word[1] = 1, message.word[2] = 7, message.wide[at_enter ? 0 : 1] = 8;
    const RegionBody carrying{region, kRegionCarriesEvent | kind << kCarriedEventKindShift, message};
    const RegionBody plain{region, 0, {}};
    uint64_t ips[12];
    caller_frames(ips, depth);
    const RegionBody& enter = at_enter ? carrying : plain;
    if (!(whole_ && t_.traced.calls.defer_enter(enter_ns, enter, stack, depth, 0)) &&
        !t_.traced.calls.enter(t_.ring, enter_ns, enter, stack, ips, depth))
      return false;
    seen_[slot] = true;
    return t_.traced.calls.leave(t_.ring, leave_ns, at_enter ? plain : carrying, stack);
  }

 private:
  ThreadState& t_;
  bool whole_;
  bool seen_[CallerStackCache::kEntries] = {};
  uint64_t now_ = clock_now();
};

// One NVTX-like call (an enter and a leave, no events) from each of
// `sites` remembered caller stacks in turn, as a program calling from many
// places makes them (benchmarks/call_sites_bench.cc): each stack is handed
// out once with its addresses, then named by its generation alone.
class SiteCallWriter {
 public:
  SiteCallWriter(ThreadState& t, uint32_t sites) : t_(t), seen_(sites) {}
  bool call(uint32_t site) {
    const uint32_t generation = site + 1;
    const bool stored = !seen_[site];
    const uint32_t depth = stored ? 12 : 0;
    const CallerStackCache::Ref stack{generation % CallerStackCache::kEntries, generation, stored};
    uint64_t ips[12];
    caller_frames(ips, depth);
    ips[0] += 8 * site;  // a stack of its own
    const RegionBody body{kSendRegion, 0, {}};
    if (!t_.traced.calls.enter(t_.ring, now_ += 40, body, stack, ips, depth)) return false;
    seen_[site] = true;
    return t_.traced.calls.leave(t_.ring, now_ += 60, body, stack);
  }

 private:
  ThreadState& t_;
  std::vector<bool> seen_;
  uint64_t now_ = clock_now();
};

// A started drain writing into a scratch directory, removed at the end.
class ScratchDrain {
 public:
  explicit ScratchDrain(benchmark::State& state) : drain_(modules_) {
    if (mkdtemp(dir_) == nullptr) {
      state.SkipWithError("mkdtemp failed");
      return;
    }
    path_ = std::string(dir_) + "/raw.hpr";
    Drain::Options options;
    options.raw_path = path_;
    options.flush_interval_ms = 3600 * 1000;  // passes only when asked
    options.ring_bytes = kRingBytes;
    options.tsc_trace_clock = tsc_clock();
    std::string error;
    if (!drain_.start(options, raw::ProcessBegin{}, &error)) {
      state.SkipWithError(error.c_str());
      return;
    }
    started_ = true;
  }
  ~ScratchDrain() {
    if (started_) drain_.stop(raw::ProcessEnd{monotonic_ns(), raw::EndReason::kExit, 0, 0});
    if (!path_.empty()) unlink(path_.c_str());
    rmdir(dir_);
  }
  bool started() const { return started_; }
  Drain& drain() { return drain_; }

 private:
  ModuleTable modules_;
  Drain drain_;
  char dir_[32] = "/tmp/drain_bench.XXXXXX";
  std::string path_;
  bool started_ = false;
};

// Times drain passes over rings that write_pass() fills with
// calls_per_pass calls each (untimed), then ends the thread.
template <typename WritePass>
void time_passes(benchmark::State& state, Drain& drain, ThreadState* t, int64_t calls_per_pass,
                 WritePass write_pass) {
  int64_t calls = 0;
  for (auto _ : state) {
    state.PauseTiming();
    write_pass();
    state.ResumeTiming();
    drain.flush_now();
    calls += calls_per_pass;
  }
  state.counters["ns_per_call"] =
      benchmark::Counter(double(calls), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  drain.finish_thread(t, monotonic_ns());
}

void BM_DrainCallSites(benchmark::State& state) {
  const uint32_t sites = static_cast<uint32_t>(state.range(0));
  ScratchDrain scratch(state);
  if (!scratch.started()) return;
  Drain& drain = scratch.drain();
  drain.append(raw::RegionDef{kSendRegion, "site", 0, raw::kUnknownModule, 0, {}});
  ThreadState* t = drain.add_thread(getpid(), monotonic_ns());
  SiteCallWriter writer(*t, sites);
  // A first round: every stack handed out and interned, outside the timing.
  for (uint32_t s = 0; s < sites; ++s) writer.call(s);
  drain.flush_now();
  const int64_t calls_per_pass = int64_t(kRingBytes / 4 / sizeof(RegionRecord));
  uint32_t next = 0;
  time_passes(state, drain, t, calls_per_pass, [&] {
    for (int64_t i = 0; i < calls_per_pass; ++i) {
      writer.call(next);
      if (++next == sites) next = 0;
    }
  });
}
BENCHMARK(BM_DrainCallSites)->Arg(1)->Arg(9)->Arg(64)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_DrainMpiCalls(benchmark::State& state) {
  ScratchDrain scratch(state);
  if (!scratch.started()) return;
  Drain& drain = scratch.drain();
  drain.append(raw::RegionDef{kSendRegion, "MPI_Send", 0, raw::kUnknownModule, 0, {}});
  drain.append(raw::RegionDef{kRecvRegion, "MPI_Recv", 0, raw::kUnknownModule, 0, {}});
  ThreadState* t = drain.add_thread(getpid(), monotonic_ns());
  MpiRecordWriter writer(*t, state.range(0) != 0);
  const int64_t calls_per_pass = int64_t(kRingBytes / 2 / (2 * sizeof(RepeatRecord)));
  time_passes(state, drain, t, calls_per_pass, [&] {
    for (int64_t i = 0; i < calls_per_pass; i += 2) {
      writer.call(kSendRegion, MpiRecordWriter::kSend);
      writer.call(kRecvRegion, MpiRecordWriter::kRecv);
    }
  });
}
// 0: blocking calls (an enter and a leave record each); 1: calls that
// return at once (one record each).
BENCHMARK(BM_DrainMpiCalls)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hybridprof

BENCHMARK_MAIN();
