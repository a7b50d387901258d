// ProcessDefinitions travel between the ranks of a job as bytes: every
// field must arrive, and bytes that are not a whole message must be refused.
#include "finalize/process_definitions.h"

#include <gtest/gtest.h>

#include "finalize/result_file.h"

namespace hybridprof::finalize {
namespace {

ProcessDefinitions sample_process(uint64_t pid) {
  ProcessDefinitions p;
  p.pid = pid;
  p.ppid = pid - 1;
  p.launcher_rank = 3;
  p.name = "rank 3";
  p.role = "solver.py";
  p.hostname = "node7";
  p.command = "solver --steps 10";
  p.python = "3.11.2";
  p.exit_status = "exit 0";
  p.samples_without_thread = 4;
  p.event = "cpu-clock";
  p.mechanism = "perf_event";
  p.period = 997;
  p.frequency = true;
  p.begin_monotonic_ns = 1000;
  p.begin_realtime_ns = 1700000000000000000ull;
  p.last_ns = 9000;
  p.threads = {{0, 4242, "main thread", {10, 2, 1, 0, 5}, 3, 8000, raw::LocationKind::kThread, ""},
               {1, 4243, "thread 1 (worker)", {7, 0, 0, 1, 0}, 0, 8500, raw::LocationKind::kThread, ""},
               {2, 7, "stream 7", {}, 0, 8600, raw::LocationKind::kDeviceStream, "GPU 0"}};
  p.clock_offsets = {{1100, -25, 3}, {8900, -31, 4}};
  ContextNode root{true, raw::kRootComplete, {{"main", "solver.cc", "/opt/app/bin/solver", 0, 12, otf2::Paradigm::kSampling}}};
  ContextNode inlined{true, 3, {{"step", "solver.cc", "/opt/app/bin/solver", 0, 40, otf2::Paradigm::kSampling},
                                {"kernel", "kernel.h", "/opt/app/bin/solver", 0, 7, otf2::Paradigm::kSampling}}};
  ContextNode python{true, 4, {{"train", "train.py", "", 20, 25, otf2::Paradigm::kPython}}};
  p.contexts = {ContextNode{}, ContextNode{}, ContextNode{}, root, inlined, python, ContextNode{}};
  p.job_rank = raw::JobRank{3, 8};
  p.definitions = {{"mpi", 0, "MPI_COMM_WORLD", {1, 0xffffffff}},
                   {"mpi", 2, "split", {(4ull << 32) | 1, 0, 1, 3, 5, 7}},
                   {"openmp", 2, "team", {}}};
  p.notices = {"sampling cpu-clock instead"};
  p.warnings = {"thread 4243: 2 traced events lost"};
  return p;
}

TEST(ProcessDefinitions, EveryFieldArrives) {
  const std::vector<ProcessDefinitions> sent{sample_process(1), sample_process(2)};
  std::vector<ProcessDefinitions> got;
  ASSERT_TRUE(parse(serialize(sent), &got));
  ASSERT_EQ(got.size(), 2u);
  const ProcessDefinitions& p = got[1];
  EXPECT_EQ(p.pid, 2u);
  EXPECT_EQ(p.ppid, 1u);
  EXPECT_EQ(p.launcher_rank, 3);
  EXPECT_EQ(p.name, "rank 3");
  EXPECT_EQ(p.role, "solver.py");
  EXPECT_EQ(p.hostname, "node7");
  EXPECT_EQ(p.command, "solver --steps 10");
  EXPECT_EQ(p.python, "3.11.2");
  EXPECT_EQ(p.exit_status, "exit 0");
  EXPECT_EQ(p.samples_without_thread, 4u);
  EXPECT_EQ(p.event, "cpu-clock");
  EXPECT_EQ(p.mechanism, "perf_event");
  EXPECT_EQ(p.period, 997u);
  EXPECT_TRUE(p.frequency);
  EXPECT_EQ(p.begin_monotonic_ns, 1000u);
  EXPECT_EQ(p.begin_realtime_ns, 1700000000000000000ull);
  EXPECT_EQ(p.last_ns, 9000u);
  ASSERT_EQ(p.threads.size(), 3u);
  EXPECT_EQ(p.threads[0].kind, raw::LocationKind::kThread);
  EXPECT_EQ(p.threads[2].kind, raw::LocationKind::kDeviceStream);
  EXPECT_EQ(p.threads[2].device, "GPU 0");
  EXPECT_EQ(p.threads[2].tid, 7u);
  EXPECT_EQ(p.threads[1].index, 1u);
  EXPECT_EQ(p.threads[1].tid, 4243u);
  EXPECT_EQ(p.threads[1].name, "thread 1 (worker)");
  EXPECT_EQ(p.threads[0].counters.dropped_events, 5u);
  EXPECT_EQ(p.threads[1].counters.truncated, 1u);
  EXPECT_EQ(p.threads[0].python_incomplete, 3u);
  EXPECT_EQ(p.threads[1].last_ns, 8500u);
  ASSERT_EQ(p.clock_offsets.size(), 2u);
  EXPECT_EQ(p.clock_offsets[1].timestamp_ns, 8900u);
  EXPECT_EQ(p.clock_offsets[1].offset_ns, -31);
  EXPECT_EQ(p.clock_offsets[1].stddev_ns, 4u);
  ASSERT_EQ(p.contexts.size(), 7u);
  EXPECT_FALSE(p.contexts[0].present);
  EXPECT_FALSE(p.contexts[6].present);
  EXPECT_EQ(p.contexts[4].parent, 3u);
  ASSERT_EQ(p.contexts[4].frames.size(), 2u);
  EXPECT_EQ(p.contexts[4].frames[1].region, "kernel");
  EXPECT_EQ(p.contexts[4].frames[1].file, "kernel.h");
  EXPECT_EQ(p.contexts[4].frames[1].module, "/opt/app/bin/solver");
  EXPECT_EQ(p.contexts[4].frames[1].line, 7u);
  EXPECT_EQ(p.contexts[5].frames[0].begin_line, 20u);
  EXPECT_EQ(p.contexts[5].frames[0].paradigm, otf2::Paradigm::kPython);
  ASSERT_TRUE(p.job_rank.has_value());
  EXPECT_EQ(p.job_rank->rank, 3u);
  EXPECT_EQ(p.job_rank->size, 8u);
  ASSERT_EQ(p.definitions.size(), 3u);
  EXPECT_EQ(p.definitions[1].set, "mpi");
  EXPECT_EQ(p.definitions[1].id, 2u);
  EXPECT_EQ(p.definitions[1].name, "split");
  EXPECT_EQ(p.definitions[1].values, (std::vector<uint64_t>{(4ull << 32) | 1, 0, 1, 3, 5, 7}));
  EXPECT_EQ(p.definitions[2].set, "openmp");
  EXPECT_TRUE(p.definitions[2].values.empty());
  EXPECT_EQ(p.notices, std::vector<std::string>{"sampling cpu-clock instead"});
  EXPECT_EQ(p.warnings, std::vector<std::string>{"thread 4243: 2 traced events lost"});
}

TEST(ProcessDefinitions, AProcessOutsideAJobHasNoRank) {
  ProcessDefinitions p = sample_process(5);
  p.job_rank.reset();
  std::vector<ProcessDefinitions> got;
  ASSERT_TRUE(parse(serialize({p}), &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].job_rank.has_value());
  EXPECT_EQ(got[0].definitions.size(), 3u);
}

TEST(ProcessDefinitions, OnlyAWholeMessageIsAccepted) {
  const std::string bytes = serialize({sample_process(1)});
  std::vector<ProcessDefinitions> got{sample_process(9)};
  for (size_t length = 0; length < bytes.size(); ++length)
    EXPECT_FALSE(parse(bytes.substr(0, length), &got)) << "cut at " << length << " of " << bytes.size();
  EXPECT_FALSE(parse(bytes + "x", &got)) << "bytes after the message";
  std::string other = bytes;
  other[0] ^= 1;
  EXPECT_FALSE(parse(other, &got)) << "another format";
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].pid, 9u) << "a refused message leaves the output alone";
  // Every byte changed in turn: parsed or refused, never undefined (a bool
  // read from a byte that is neither 0 nor 1, say; the sanitizer tier checks).
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::string changed = bytes;
    changed[at] = char(0x6f);
    std::vector<ProcessDefinitions> out;
    parse(changed, &out);
  }
  // A length field that claims more than there is.
  std::string huge = serialize({});
  huge.replace(8, 8, std::string(8, '\xff'));
  EXPECT_FALSE(parse(huge, &got));
}

TEST(ResultFile, WhatTheRanksWroteIsWhatTheLauncherReads) {
  const std::string path = ::testing::TempDir() + "/hybridprof-result-test";
  Result r;
  r.anchor = "/jobs/run 1/traces.otf2";
  r.enter_leave_anchor = "/jobs/run 1/enter-leave/traces.otf2";
  r.processes = 4, r.threads = 12, r.streams = 3, r.samples = 9000, r.dropped = 7, r.unwind_failed = 3, r.truncated = 2;
  r.python_incomplete = 1, r.traced_events = 640, r.events_skipped = 5, r.missing_ranks = 1;
  r.warnings = {"rank 3 of 4: no data", "process 77: torn chunk, 12 bytes of raw data lost"};
  ASSERT_TRUE(save_result(path, r));
  Result back;
  ASSERT_TRUE(load_result(path, &back));
  EXPECT_EQ(back.anchor, r.anchor);
  EXPECT_EQ(back.enter_leave_anchor, r.enter_leave_anchor);
  EXPECT_EQ(back.processes, 4u);
  EXPECT_EQ(back.threads, 12u);
  EXPECT_EQ(back.streams, 3u);
  EXPECT_EQ(back.samples, 9000u);
  EXPECT_EQ(back.dropped, 7u);
  EXPECT_EQ(back.unwind_failed, 3u);
  EXPECT_EQ(back.truncated, 2u);
  EXPECT_EQ(back.python_incomplete, 1u);
  EXPECT_EQ(back.traced_events, 640u);
  EXPECT_EQ(back.events_skipped, 5u);
  EXPECT_EQ(back.missing_ranks, 1u);
  EXPECT_EQ(back.warnings, r.warnings);
  EXPECT_FALSE(load_result(path + ".missing", &back));
  EXPECT_FALSE(load_result("/proc/self/status", &back)) << "not a result file";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hybridprof::finalize
