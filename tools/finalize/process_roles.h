// What each process of a run is there for, in its name: a Python program
// by its script ("python3.11 (train.py)"), a worker that Python's
// multiprocessing started by the function it runs ("python3.11 (DataLoader
// worker 0)"), a multiprocessing helper by what it is. Three processes all
// named "python3.11" tell a user nothing.
#pragma once

#include <string>
#include <vector>

#include "finalize/process_definitions.h"

namespace hybridprof::finalize {

// The role `args` (the command line) and `contexts` (its symbolized
// calling contexts: the Python frames it was sampled in) show; "" when
// nothing does.
//   - a multiprocessing worker: the function its BaseProcess.run called,
//     "<function> worker" ("DataLoader worker" for PyTorch's);
//   - a multiprocessing child not sampled there: what its command line
//     says ("multiprocessing child", "... fork server", "... resource
//     tracker");
//   - a Python program: its script, "-m module" or "-c".
std::string process_role(const std::vector<std::string>& args, const std::vector<ContextNode>& contexts);

// Names every process: "rank N" where its launcher gave it a rank, else
// its executable's file name with its role. Workers of one role and one
// parent are numbered from 0 among those alive at once (the first free
// number when one starts), as PyTorch numbers its DataLoader workers each
// epoch; other roles only where a parent has several at once.
void name_processes(std::vector<ProcessDefinitions*>& processes);

}  // namespace hybridprof::finalize
