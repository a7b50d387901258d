// Helpers shared by the otf2 and report unit tests: scratch directories,
// running external tools (otf2-print, vite), and one synthetic archive with a
// known calling-context tree and known samples.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "otf2/archive_writer.h"

namespace hybridprof::otf2::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& child) const { return path_ + "/" + child; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;  // -1 if it did not exit normally
  std::string output;  // stdout and stderr, interleaved
};
CommandResult run_command(const std::string& command);
bool have_program(const std::string& name);  // on $PATH
uint64_t file_bytes_under(const std::string& directory, const std::string& extension);

// The known archive. Calling contexts (region@call-site):
//   main ─┬─ A @ main.cc:12
//         └─ B ── C
// Process "app" (PID 4242) on node "host" with threads "main" (TID 100) and
// "worker" (TID 101); process "helper" (PID 4243) with thread "helper" (TID
// 200). Samples: main: main 5, A 20, C 10; worker: B 7, C 3; helper: A 1.
struct KnownArchive {
  uint32_t r_main, r_a, r_b, r_c;          // regions
  uint32_t c_main, c_a, c_b, c_c;          // calling contexts
  uint32_t p_app, p_helper;                // processes
  uint64_t t_main, t_worker, t_helper;     // locations
  uint32_t interrupt_generator;
  std::map<uint64_t, std::vector<std::pair<uint64_t, uint32_t>>> samples;  // location -> (time, context)
  ClockInfo clock;                         // what close() was given
};
KnownArchive write_known_archive(const std::string& directory, bool enter_leave = false);

}  // namespace hybridprof::otf2::testing
