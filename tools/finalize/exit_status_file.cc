#include "finalize/exit_status_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <fstream>

namespace hybridprof::finalize {
namespace {

void read_status(const std::string& path, std::map<uint64_t, std::string>* statuses) {
  std::ifstream in(path);
  uint64_t pid = 0;
  std::string status;
  if (in >> pid && std::getline(in >> std::ws, status)) (*statuses)[pid] = status;
}

}  // namespace

bool record_exit_status(const std::string& run_dir, pid_t pid, const std::string& status) {
  // Written whole, then renamed: a reader never sees half a file. Created
  // anew (O_EXCL): a symbolic link in its place is not followed.
  const std::string tmp = run_dir + "/." + kExitStatusFile;
  unlink(tmp.c_str());  // left by a launcher that was killed
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const std::string text = std::to_string(pid) + ' ' + status + '\n';
  const bool written = write(fd, text.data(), text.size()) == ssize_t(text.size());
  return close(fd) == 0 && written && rename(tmp.c_str(), (run_dir + "/" + kExitStatusFile).c_str()) == 0;
}

std::map<uint64_t, std::string> recorded_exit_statuses(const std::string& directory) {
  std::map<uint64_t, std::string> statuses;
  read_status(directory + "/" + kExitStatusFile, &statuses);
  if (DIR* d = opendir(directory.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("rank-", 0) == 0) read_status(directory + "/" + name + "/" + kExitStatusFile, &statuses);
    }
    closedir(d);
  }
  return statuses;
}

}  // namespace hybridprof::finalize
