#include "finalize/archive_claim.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace hybridprof::finalize {
namespace {

std::string claim_path(const std::string& job_dir) { return job_dir + "/.finalizing"; }

}  // namespace

bool claim_archive(const std::string& job_dir) {
  const int fd = open(claim_path(job_dir).c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return false;  // another launcher got there first
  const std::string pid = std::to_string(getpid()) + "\n";
  [[maybe_unused]] const ssize_t w = write(fd, pid.data(), pid.size());
  close(fd);
  return true;
}

void release_archive(const std::string& job_dir) {
  // Only our own claim: a merge may have taken it over from a dead writer.
  std::ifstream in(claim_path(job_dir));
  long pid = 0;
  if ((in >> pid) && pid == long(getpid())) unlink(claim_path(job_dir).c_str());
}

pid_t archive_writer(const std::string& job_dir) {
  std::ifstream in(claim_path(job_dir));
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return 0;
  // "pid (comm) state ...": a reused pid is some other program (only a
  // launcher writes archives), and a zombie writes nothing any more.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= line.size()) return 0;
  const bool alive = line[close + 2] != 'Z' && line[close + 2] != 'X';
  return alive && line.substr(open + 1, close - open - 1) == "hybridprof" ? pid_t(pid) : 0;
}

}  // namespace hybridprof::finalize
