#include "hybridprof/output_directory.h"

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

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool make_parents(const std::string& path, std::string* error) {
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] != '/') continue;
    const std::string prefix = path.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create output directory " + prefix + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

// mkdir that may find the directory there; false with `error` otherwise.
bool make_directory(const std::string& path, bool may_exist, std::string* error) {
  if (!make_parents(path, error)) return false;
  if (mkdir(path.c_str(), 0755) == 0) return true;
  if (errno == EEXIST && may_exist) return true;
  *error = "cannot create output directory " + path + ": " + std::strerror(errno);
  return false;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path;
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
      for (int n = 2; mkdir(base.c_str(), 0755) != 0; ++n) {
        if (errno != EEXIST || n > 1000) {
          *error = "cannot create output directory " + base + ": " + std::strerror(errno);
          return false;
        }
        base = "hybridprof-" + name + "-" + stamp + "-" + std::to_string(n);
      }
    }
  }
  base = absolute(base);
  // Ranks share the job directory; each claims its own.
  std::string dir = rank >= 0 ? base + "/rank-" + std::to_string(rank) : base;
  if (rank >= 0 && !make_directory(base, true, error)) return false;
  if (exists(dir + "/traces.otf2") || exists(dir + "/raw")) {
    *error = dir + " already holds a hybridprof run; choose another -o";
    return false;
  }
  if (!make_directory(dir, true, error)) return false;
  if (!make_directory(dir + "/raw", false, error)) return false;
  if (access(dir.c_str(), W_OK) != 0) {
    *error = "output directory " + dir + " is not writable: " + std::strerror(errno);
    return false;
  }
  *path = dir;
  return true;
}

}  // namespace hybridprof::launcher
