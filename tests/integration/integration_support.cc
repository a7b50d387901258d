#include "integration_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "otf2/property_names.h"

extern char** environ;

namespace hybridprof::integration {
namespace fs = std::filesystem;

std::string launcher() { return HP_LAUNCHER; }
std::string merge_tool() { return HP_MERGE; }
std::string report_tool() { return HP_REPORT; }
std::string fixture(const std::string& name) { return std::string(HP_FIXTURE_DIR) + "/" + name; }
std::string plugin_library() { return HP_PLUGIN; }

std::vector<std::string> check_with(const std::string& checker, const std::string& file) {
  const RunResult r = run({"python3", std::string(HP_CHECKER_DIR) + "/" + checker, file});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  return split_lines(r.out);
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hybridprof-integ-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  if (keep_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {
// Each test process (ctest runs one test in each) gets a symbol cache of its
// own (XDG_CACHE_HOME, inherited by the profiler and the programs): no test
// reads names another test or an earlier build stored, and the user's
// cache is left alone. The symbol cache's own tests set theirs.
const struct OwnSymbolCache {
  TempDir dir;
  OwnSymbolCache() { setenv("XDG_CACHE_HOME", dir.path().c_str(), 1); }
} g_own_symbol_cache;
}  // namespace

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> RunResult::err_lines() const { return split_lines(err); }

std::string RunResult::describe() const {
  std::string text = "exit " + std::to_string(exit_code) + (timed_out ? " (timed out)" : "");
  auto tail = [](const std::string& s) { return s.size() > 3000 ? "..." + s.substr(s.size() - 3000) : s; };
  text += "\n--- stdout ---\n" + tail(out) + "\n--- stderr ---\n" + tail(err);
  return text;
}

namespace {

std::string scratch_file(const char* what) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hybridprof-integ-" + what + "-XXXXXX";
  const int fd = mkstemp(pattern.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed for " + pattern);
  close(fd);
  return pattern;
}


}  // namespace

Process::Process(const std::vector<std::string>& argv, const RunOptions& options) : options_(options) {
  if (argv.empty()) throw std::invalid_argument("Process: empty argv");
  out_path_ = options.discard_stdout ? "/dev/null" : scratch_file("out");
  err_path_ = scratch_file("err");
  // Everything the child needs is built before fork().
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (!options.env.count(name)) env_strings.push_back(entry);
  }
  for (const auto& [name, value] : options.env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    setpgid(0, 0);  // one group: a timeout kills the launcher and its program
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path_.c_str(), O_WRONLY | O_TRUNC);
    const int err = open(err_path_.c_str(), O_WRONLY | O_TRUNC);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (!options.working_directory.empty() && chdir(options.working_directory.c_str()) != 0) _exit(126);
    // Signals the test process ignores or blocks must not leak into the child.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(args[0], args.data(), envp.data());
    const std::string msg = std::string("exec ") + args[0] + ": " + std::strerror(errno) + "\n";
    [[maybe_unused]] ssize_t w = write(2, msg.data(), msg.size());
    _exit(127);
  }
  setpgid(pid_, pid_);  // also from here, so the group exists before any kill
}

Process::~Process() {
  if (!finished_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (out_path_ != "/dev/null") unlink(out_path_.c_str());
  unlink(err_path_.c_str());
}

RunResult Process::finish() {
  RunResult r;
  if (finished_) throw std::logic_error("Process::finish called twice");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.timeout_seconds);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (done < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  finished_ = true;
  // The program the launcher started is in the same group; make sure nothing
  // of this run outlives it (a no-op when all is well).
  kill(-pid_, SIGKILL);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (out_path_ != "/dev/null") r.out = read_text(out_path_);
  r.err = read_text(err_path_);
  return r;
}

CpuHogs::CpuHogs(int count) {
  for (int i = 0; i < count; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (;;) asm volatile("");
    }
    if (pid > 0) pids_.push_back(pid);
  }
}

CpuHogs::~CpuHogs() {
  for (pid_t pid : pids_) kill(pid, SIGKILL);
  for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
}

RunResult run(const std::vector<std::string>& argv, const RunOptions& options) {
  Process p(argv, options);
  return p.finish();
}

RunResult profile(const std::vector<std::string>& profiler_args, const std::vector<std::string>& program,
                  const RunOptions& options) {
  std::vector<std::string> argv{launcher()};
  argv.insert(argv.end(), profiler_args.begin(), profiler_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  return run(argv, options);
}

std::string benchmark_program(const std::string& name) {
  return launcher().substr(0, launcher().rfind('/')) + "/" + name;
}

uint64_t strace_count(const std::string& text, const std::string& syscall) {
  for (const std::string& line : split_lines(text)) {
    std::istringstream fields(line);
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
    // "% time  seconds  usecs/call  calls  [errors]  syscall"
    if (f.size() >= 5 && f.back() == syscall) return std::stoull(f[3]);
  }
  return 0;
}

pid_t wait_for_pid_file(const std::string& path, double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (file_exists(path)) {
      const long pid = std::atol(read_text(path).c_str());
      if (pid > 0) return pid_t(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

double process_cpu_seconds(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream in(stat.substr(paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && (in >> field); ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

bool wait_for_cpu(pid_t pid, double cpu_seconds, double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    const double used = process_cpu_seconds(pid);
    if (used < 0) return false;
    if (used >= cpu_seconds) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void expect_refused(const RunResult& r, const std::string& why, const std::string& marker) {
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.describe();
  EXPECT_EQ(lines[0].rfind("hybridprof:", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(why), std::string::npos) << lines[0];
  EXPECT_FALSE(file_exists(marker)) << "the program ran";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t ViteExport::count(const std::string& element) const {
  size_t n = 0;
  for (size_t at = svg.find(element); at != std::string::npos; at = svg.find(element, at + 1)) ++n;
  return n;
}

ViteExport vite_export(const std::string& archive, const std::string& work_directory) {
  const std::string svg = work_directory + "/vite.svg";
  RunOptions options;
  options.env["QT_QPA_PLATFORM"] = "offscreen";
  options.working_directory = work_directory;
  ViteExport e;
  e.run = run({"vite", archive, "-e", svg}, options);  // (this ViTE has no -f: it takes the file as it is)
  // ViTE reports "N errors and M warnings were found during parsing.", and
  // "cannot find rank R in communicator C" for a message it cannot draw.
  for (const std::string& line : split_lines(e.run.out + "\n" + e.run.err)) {
    std::string l = line;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (l.find("0 errors and 0 warnings") != std::string::npos)
      e.parsed_clean = true;
    else if (l.find("error") != std::string::npos || l.find("cannot find") != std::string::npos)
      e.complaints.push_back(line);
  }
  if (file_exists(svg)) e.svg = read_text(svg);
  return e;
}

std::string python_version_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = "Python" + info.param;
  name.erase(std::remove(name.begin(), name.end(), '.'), name.end());
  return name;
}

std::string pyenv_python(const std::string& version) {
  const std::string root = "/root/.pyenv/versions";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec))
    if (e.path().filename().string().rfind(version + ".", 0) == 0) {
      const std::string python = (e.path() / "bin/python3").string();
      if (file_exists(python)) return python;
    }
  return "";
}

bool have_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

void expect_events_in_order(const otf2::Archive& archive) {
  constexpr uint64_t kMostNs = 20000;
  for (const auto& [location, thread] : archive.threads) {
    auto moved = thread.properties.find(otf2::property::kOutOfOrderNs);
    if (moved == thread.properties.end()) continue;
    EXPECT_LT(moved->second, kMostNs) << archive.anchor << ": location " << location << " (" << thread.name << ") had "
                                      << thread.properties.at(otf2::property::kOutOfOrderEvents)
                                      << " events written after their time to keep its order, one by " << moved->second
                                      << " ns";
  }
}

Profile::Profile(const std::string& path_or_directory) {
  otf2::ArchiveReader reader(path_or_directory);
  archive_ = reader.archive();
  expect_events_in_order(archive_);
  reader.read_events([this](const otf2::SampleEvent& s) { samples_.push_back(s); });
}

const std::vector<std::string>& Profile::path_names(uint32_t context) const {
  auto it = path_cache_.find(context);
  if (it != path_cache_.end()) return it->second;
  std::vector<std::string> names;
  for (uint32_t c : archive_.context_path(context)) {
    const auto& ctx = archive_.contexts.at(c);
    auto region = archive_.regions.find(ctx.region);
    names.push_back(region == archive_.regions.end() ? std::string("<no region>") : region->second.name);
  }
  return path_cache_.emplace(context, std::move(names)).first->second;
}

const std::string& Profile::leaf_name(uint32_t context) const {
  static const std::string empty;
  const auto& names = path_names(context);
  return names.empty() ? empty : names.back();
}

const otf2::RegionInfo* Profile::leaf_region(uint32_t context) const {
  auto c = archive_.contexts.find(context);
  if (c == archive_.contexts.end()) return nullptr;
  auto r = archive_.regions.find(c->second.region);
  return r == archive_.regions.end() ? nullptr : &r->second;
}

uint64_t Profile::self_samples(const std::string& function) const {
  uint64_t n = 0;
  for (const auto& s : samples_) n += leaf_name(s.context) == function;
  return n;
}

uint64_t Profile::inclusive_samples(const std::string& function) const {
  uint64_t n = 0;
  for (const auto& s : samples_) {
    const auto& names = path_names(s.context);
    n += std::find(names.begin(), names.end(), function) != names.end();
  }
  return n;
}

std::map<uint64_t, uint64_t> Profile::self_samples_by_location(const std::string& function) const {
  std::map<uint64_t, uint64_t> counts;
  for (const auto& s : samples_)
    if (leaf_name(s.context) == function) ++counts[s.location];
  return counts;
}

std::map<uint64_t, uint64_t> Profile::samples_by_location() const {
  std::map<uint64_t, uint64_t> counts;
  for (const auto& s : samples_) ++counts[s.location];
  return counts;
}

std::string Profile::notices() const {
  const auto it = archive_.properties.find(otf2::property::kNotices);
  return it == archive_.properties.end() ? "" : it->second;
}

uint64_t Profile::samples_property_total() const {
  uint64_t n = 0;
  for (const auto& [loc, t] : archive_.threads) n += thread_property(loc, "SAMPLES");
  return n;
}

uint64_t Profile::thread_property(uint64_t location, const std::string& name) const {
  auto t = archive_.threads.find(location);
  if (t == archive_.threads.end()) return 0;
  auto p = t->second.properties.find(name);
  return p == t->second.properties.end() ? 0 : p->second;
}

uint32_t Profile::process_of(uint64_t location) const {
  auto t = archive_.threads.find(location);
  return t == archive_.threads.end() ? otf2::kUndefined : t->second.process;
}

uint32_t Profile::process_with_pid(long pid) const {
  for (const auto& [ref, p] : archive_.processes) {
    auto it = p.properties.find("PID");
    if (it != p.properties.end() && it->second == std::to_string(pid)) return ref;
  }
  return otf2::kUndefined;
}

std::unique_ptr<Profile> load_profile(const std::string& directory, std::string* error) {
  try {
    return std::make_unique<Profile>(directory);
  } catch (const std::exception& e) {
    *error = std::string("cannot read the archive in ") + directory + ": " + e.what();
    return nullptr;
  }
}

void IntegrationTest::TearDown() {
  if (HasFailure()) {
    scratch.keep();
    std::fprintf(stderr, "[ kept ] scratch directory %s\n", scratch.path().c_str());
  }
}

// The report's row of parallel region `name` ("Time%  Time  Calls  Avg
// Threads ... Name") says `calls` and `threads`.
// Only rows of that section count: a call path elsewhere can end in the
// region too.
void expect_report_row(const std::string& report, const std::string& name, int calls, int threads) {
  bool found = false, in_section = false;
  for (const std::string& row : split_lines(report)) {
    if (row.rfind("OpenMP parallel regions", 0) == 0) in_section = true;
    if (row.empty()) in_section = false;
    if (!in_section || row.size() < name.size() || row.compare(row.size() - name.size(), name.size(), name) != 0)
      continue;
    std::istringstream cells(row);
    std::string share, time, unit, row_calls, avg, avg_unit, row_threads;
    cells >> share >> time >> unit >> row_calls >> avg >> avg_unit >> row_threads;
    EXPECT_EQ(row_calls, std::to_string(calls)) << row;
    EXPECT_EQ(row_threads, std::to_string(threads)) << row;
    found = true;
  }
  EXPECT_TRUE(found) << name << " in the report:\n" << report;
}

}  // namespace hybridprof::integration
