#include "hybridprof/output_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "common/launcher_rank.h"

namespace hybridprof::launcher {
namespace {

// rwxrwxr-x less the umask, as mkdir(1) gives, but never writable by every
// user: others could plant files or symbolic links in a run directory.
constexpr mode_t kDirectoryMode = 0775;

// lstat: a dangling symbolic link is there too.
bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

bool make_parents(const std::string& path, std::string* error) {
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] != '/') continue;
    const std::string prefix = path.substr(0, i);
    if (mkdir(prefix.c_str(), kDirectoryMode) != 0 && errno != EEXIST) {
      *error = "cannot create output directory " + prefix + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

std::string open_failure(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return "output directory " + path + " is a symbolic link; name the directory itself";
  return "cannot open output directory " + path + ": " + std::strerror(errno);
}

// Whether the run's files may go into `path`: the directory itself (a
// symbolic link there could lead them into another user's files), this
// user's, and writable by no one else but its group, or sticky like /tmp
// (where fs.protected_symlinks keeps links others plant from being followed).
bool check_directory(const std::string& path, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = open_failure(path);
    return false;
  }
  struct stat st;
  const bool stated = fstat(fd, &st) == 0;
  close(fd);
  if (!stated) {
    *error = "cannot read output directory " + path + ": " + std::strerror(errno);
  } else if (st.st_uid != geteuid()) {
    *error = "output directory " + path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  } else if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    *error = "output directory " + path + " is writable by every user; choose one of your own";
  } else {
    return true;
  }
  return false;
}

// mkdir that may find the directory there; false with `error` otherwise.
bool make_directory(const std::string& path, bool may_exist, std::string* error) {
  if (!make_parents(path, error)) return false;
  if (mkdir(path.c_str(), kDirectoryMode) != 0 && !(errno == EEXIST && may_exist)) {
    *error = "cannot create output directory " + path + ": " + std::strerror(errno);
    return false;
  }
  return check_directory(path, error);
}

// Against the working directory now: the runtime gets the same directory
// wherever the program (or a program it runs) later goes.
bool make_absolute(std::string* path, std::string* error) {
  while (path->size() > 1 && path->back() == '/') path->pop_back();  // "D/" would follow a link at D
  if ((*path)[0] == '/') return true;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) {
    *error = "cannot resolve output directory " + *path + ": " + std::strerror(errno);
    return false;
  }
  *path = std::string(cwd) + "/" + *path;
  return true;
}

std::string job_id_from_env() {
  for (const char* name : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID", "PMI_JOBID"}) {
    if (const char* v = std::getenv(name); v && *v) return v;
  }
  return std::to_string(getppid());
}

}  // namespace

bool prepare_output_directory(const std::string& requested, const std::string& program, std::string* path,
                              std::string* error) {
  const int64_t rank = launcher_rank_from_env();
  const std::string name = program.substr(program.find_last_of('/') + 1);
  std::string base = requested;
  if (base.empty()) {
    if (rank >= 0) {
      base = "hybridprof-" + name + "-job" + job_id_from_env();
    } else {
      char stamp[32];
      const time_t now = time(nullptr);
      strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
      base = "hybridprof-" + name + "-" + stamp;
      // A new directory per run: the first free name, claimed atomically.
      for (int n = 2; mkdir(base.c_str(), kDirectoryMode) != 0; ++n) {
        if (errno != EEXIST || n > 1000) {
          *error = "cannot create output directory " + base + ": " + std::strerror(errno);
          return false;
        }
        base = "hybridprof-" + name + "-" + stamp + "-" + std::to_string(n);
      }
    }
  }
  if (!make_absolute(&base, error)) return false;
  // Ranks share the job directory; each claims its own.
  std::string dir = rank >= 0 ? base + "/rank-" + std::to_string(rank) : base;
  if (rank >= 0 && !make_directory(base, true, error)) return false;
  if (!make_directory(dir, true, error)) return false;
  if (exists(dir + "/traces.otf2") || exists(dir + "/raw")) {
    *error = dir + " already holds a hybridprof run; choose another -o";
    return false;
  }
  if (!make_directory(dir + "/raw", false, error)) return false;
  if (access(dir.c_str(), W_OK) != 0) {
    *error = "output directory " + dir + " is not writable: " + std::strerror(errno);
    return false;
  }
  *path = dir;
  return true;
}

}  // namespace hybridprof::launcher
