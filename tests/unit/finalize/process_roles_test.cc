// Processes named by their role: from the Python frames a worker ran
// under multiprocessing (PyTorch's DataLoader worker by its loop), from
// the command line otherwise; workers numbered among those alive at once.
#include "finalize/process_roles.h"

#include <gtest/gtest.h>

namespace hybridprof::finalize {
namespace {

ContextFrame python(const std::string& function, const std::string& file) {
  return {function, file, "", 1, 1, otf2::Paradigm::kPython};
}
ContextFrame native(const std::string& function) { return {function, "", "libpython3.11.so", 0, 0}; }

// A stack, outermost first, as one chain of context nodes (node 0 unused).
std::vector<ContextNode> chain(const std::vector<ContextFrame>& frames) {
  std::vector<ContextNode> nodes(1);
  for (const ContextFrame& f : frames) nodes.push_back({true, static_cast<uint32_t>(nodes.size() - 1), {f}});
  nodes[1].parent = 0;
  return nodes;
}

const std::string kProcessPy = "/usr/lib/python3.11/multiprocessing/process.py";

TEST(ProcessRoles, ADataLoaderWorkerIsNamedByItsLoop) {
  const auto contexts = chain({python("<module>", "train.py"), python("BaseProcess._bootstrap", kProcessPy),
                               python("BaseProcess.run", kProcessPy), native("_PyFunction_Vectorcall"),
                               python("_worker_loop", "/site-packages/torch/utils/data/_utils/worker.py"),
                               python("Dataset.__getitem__", "data.py")});
  EXPECT_EQ(process_role({"python3", "train.py"}, contexts), "DataLoader worker");
}

TEST(ProcessRoles, AnyMultiprocessingWorkerIsNamedByItsTarget) {
  // Before 3.11 a code object's name is not qualified.
  const auto contexts =
      chain({python("_bootstrap", kProcessPy), python("run", kProcessPy), python("load_batches", "job.py")});
  EXPECT_EQ(process_role({"python3", "job.py"}, contexts), "load_batches worker");
}

TEST(ProcessRoles, CommandLinesSayWhatAProgramRuns) {
  EXPECT_EQ(process_role({"/usr/bin/python3", "-u", "-X", "dev", "train.py", "--epochs", "3"}, {}), "train.py");
  EXPECT_EQ(process_role({"python3.11", "-m", "torch.distributed.run", "x.py"}, {}), "-m torch.distributed.run");
  EXPECT_EQ(process_role({"python3", "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)",
                          "--multiprocessing-fork"},
                         {}),
            "multiprocessing child");
  EXPECT_EQ(process_role({"python3", "-c", "from multiprocessing.resource_tracker import main;main(7)"}, {}),
            "multiprocessing resource tracker");
  EXPECT_EQ(process_role({"./solver", "input.dat"}, {}), "") << "not Python: its executable names it";
}

ProcessDefinitions process(uint64_t pid, uint64_t ppid, const std::string& role, uint64_t begin, uint64_t last) {
  ProcessDefinitions p;
  p.pid = pid;
  p.ppid = ppid;
  p.name = "python3.11";
  p.role = role;
  p.begin_monotonic_ns = begin;
  p.last_ns = last;
  return p;
}

TEST(ProcessRoles, WorkersAreNumberedAmongThoseAliveAtOnce) {
  // Two epochs of two workers, then a third epoch's worker 0 started while
  // worker 1 of the same epoch was still alive; a rank keeps its name.
  std::vector<ProcessDefinitions> all = {
      process(1, 0, "train.py", 0, 100),          process(2, 1, "DataLoader worker", 10, 20),
      process(3, 1, "DataLoader worker", 11, 21), process(4, 1, "DataLoader worker", 30, 40),
      process(5, 1, "DataLoader worker", 31, 42), process(6, 1, "DataLoader worker", 41, 50),
      process(7, 1, "train.py", 60, 70),  // a fork child running the script itself: one, no number
  };
  ProcessDefinitions rank = process(8, 0, "train.py", 0, 100);
  rank.launcher_rank = 0;
  rank.name = "rank 0";
  all.push_back(rank);
  std::vector<ProcessDefinitions*> named;
  for (auto& p : all) named.push_back(&p);
  name_processes(named);
  EXPECT_EQ(all[0].name, "python3.11 (train.py)");
  EXPECT_EQ(all[1].name, "python3.11 (DataLoader worker 0)");
  EXPECT_EQ(all[2].name, "python3.11 (DataLoader worker 1)");
  EXPECT_EQ(all[3].name, "python3.11 (DataLoader worker 0)");
  EXPECT_EQ(all[4].name, "python3.11 (DataLoader worker 1)");
  EXPECT_EQ(all[5].name, "python3.11 (DataLoader worker 0)") << "worker 0 of its epoch had ended";
  EXPECT_EQ(all[6].name, "python3.11 (train.py)");
  EXPECT_EQ(all[7].name, "rank 0");
}

}  // namespace
}  // namespace hybridprof::finalize
