#include "hybridprof/left_processes.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

namespace hybridprof::launcher {
namespace {

// The launcher's children still running (reparented orphans among them).
std::vector<pid_t> children() {
  const std::string self = std::to_string(getpid());
  std::ifstream in("/proc/" + self + "/task/" + self + "/children");
  std::vector<pid_t> pids;
  for (pid_t pid; in >> pid;) pids.push_back(pid);
  return pids;
}

}  // namespace

void become_subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

std::string status_text(int status) {
  return WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                           : "signal " + std::to_string(WTERMSIG(status));
}

std::map<uint64_t, std::string> wait_for_left_processes() {
  std::map<uint64_t, std::string> statuses;
  const pid_t session = getsid(0);
  const auto start = std::chrono::steady_clock::now();
  bool said = false;
  for (;;) {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) statuses[uint64_t(pid)] = status_text(status);
    std::vector<pid_t> waiting;
    for (pid_t child : children())
      if (getsid(child) == session) waiting.push_back(child);
    if (waiting.empty()) return statuses;
    if (!said && std::chrono::steady_clock::now() - start > std::chrono::seconds(1)) {
      std::string pids;
      for (pid_t p : waiting) pids += " " + std::to_string(p);
      std::fprintf(stderr, "hybridprof: waiting for %zu process%s the program left running (pid%s), for the archive\n",
                   waiting.size(), waiting.size() == 1 ? "" : "es", pids.c_str());
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace hybridprof::launcher
