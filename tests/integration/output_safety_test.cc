// Where a run's files go, and what the tools make of damaged ones: output
// directories take the umask but are never writable by every user;
// symbolic links and other users' directories in the output path are not
// followed; a relative -o survives the program's chdir(); a setuid program
// starts no runtime; and corrupt or truncated archives and raw streams get
// a clear error from every tool, no crash, and stay as they were.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

std::string runtime_library() {
  return (fs::path(launcher()).parent_path().parent_path() / "lib/libhybridprof.so").string();
}

mode_t mode_of(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A relative output path of this test's own (a stale one elsewhere, say in
// "/", cannot make it pass or fail).
std::string relative_output(const TempDir& scratch) { return fs::path(scratch.path()).filename().string() + "/D"; }

// Whether a program run from "/" wrote into "/<relative>" (then removed).
bool strayed_into_root(const std::string& relative) {
  if (!fs::exists("/" + relative)) return false;
  std::error_code ec;
  fs::remove_all("/" + relative.substr(0, relative.find('/')), ec);
  return true;
}

// argv run under `umask mask`.
RunResult run_with_umask(const std::string& mask, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"sh", "-c", "umask " + mask + " && exec \"$0\" \"$@\""});
  return run(argv);
}

class OutputSafety : public IntegrationTest {
 protected:
  std::string marker() const { return scratch / "MARKER"; }
  RunResult touch_under_launcher(const std::string& output) {
    return run({launcher(), "-o", output, "--", "touch", marker()});
  }
};

TEST_F(OutputSafety, NewDirectoriesTakeTheUmaskButAreNeverWritableByEveryUser) {
  const std::string relaxed = scratch / "relaxed/run", closed = scratch / "closed/run", runtime_made = scratch / "rt";
  ASSERT_EQ(run_with_umask("000", {launcher(), "-o", relaxed, "--", "true"}).exit_code, 0);
  EXPECT_EQ(mode_of(relaxed), 0775u);
  EXPECT_EQ(mode_of(relaxed + "/raw"), 0775u);
  EXPECT_EQ(mode_of(scratch / "relaxed"), 0775u) << "a parent the launcher made";
  ASSERT_EQ(run_with_umask("077", {launcher(), "-o", closed, "--", "true"}).exit_code, 0);
  EXPECT_EQ(mode_of(closed), 0700u);
  EXPECT_EQ(mode_of(closed + "/raw"), 0700u);
  // The runtime alone (plain LD_PRELOAD) makes its directories the same way.
  const std::string script = "umask 000 && LD_PRELOAD=\"$1\" HYBRIDPROF_OUTPUT_DIR=\"$2\" exec true";
  ASSERT_EQ(run({"sh", "-c", script, "sh", runtime_library(), runtime_made}).exit_code, 0);
  EXPECT_EQ(mode_of(runtime_made), 0775u);
  EXPECT_EQ(mode_of(runtime_made + "/raw"), 0775u);
}

TEST_F(OutputSafety, AnOutputPathThatIsASymbolicLinkIsRefused) {
  const std::string elsewhere = scratch / "elsewhere", to_dir = scratch / "to-dir", dangling = scratch / "dangling";
  fs::create_directory(elsewhere);
  fs::create_directory_symlink(elsewhere, to_dir);
  fs::create_directory_symlink(scratch / "nowhere", dangling);
  expect_refused(touch_under_launcher(to_dir), "symbolic link", marker());
  expect_refused(touch_under_launcher(to_dir + "/"), "symbolic link", marker());
  expect_refused(touch_under_launcher(dangling), "symbolic link", marker());
  EXPECT_TRUE(fs::is_empty(elsewhere)) << "written through the link";
  EXPECT_FALSE(fs::exists(scratch / "nowhere")) << "made through the link";
}

TEST_F(OutputSafety, AnotherUsersDirectoryIsRefused) {
  // As root, a directory given to nobody; as anyone else, root's "/".
  std::string theirs = "/";
  if (geteuid() == 0) {
    theirs = scratch / "theirs";
    fs::create_directory(theirs);
    ASSERT_EQ(chown(theirs.c_str(), kNobody, kNobody), 0);
  }
  expect_refused(touch_under_launcher(theirs), "another user", marker());
  EXPECT_FALSE(fs::exists(theirs + "/raw"));
}

TEST_F(OutputSafety, ADirectoryWritableByEveryUserIsRefused) {
  const std::string shared = scratch / "shared";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all);
  expect_refused(touch_under_launcher(shared), "writable by every user", marker());
  EXPECT_TRUE(fs::is_empty(shared));
}

TEST_F(OutputSafety, ARawDirectoryLinkPlantedInTheOutputDirectoryIsNotFollowed) {
  const std::string d = scratch / "D", elsewhere = scratch / "elsewhere";
  fs::create_directory(d);
  fs::create_directory(elsewhere);
  fs::create_directory_symlink(elsewhere, d + "/raw");
  expect_refused(touch_under_launcher(d), d, marker());
  // The runtime alone: it says so and profiles nothing; the program runs.
  RunOptions preload;
  preload.env = {{"LD_PRELOAD", runtime_library()}, {"HYBRIDPROF_OUTPUT_DIR", d}};
  const RunResult r = run({"touch", marker()}, preload);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("profiling is off"), std::string::npos) << r.describe();
  EXPECT_TRUE(file_exists(marker()));
  EXPECT_TRUE(fs::is_empty(elsewhere)) << "written through the link";
}

TEST_F(OutputSafety, LinksPlantedWhereTheExitStatusGoesAreReplacedNotFollowed) {
  const std::string d = scratch / "D", precious = scratch / "precious";
  write_text(precious, "precious\n");
  fs::create_directory(d);
  fs::create_symlink(precious, d + "/.ended");
  fs::create_symlink(precious, d + "/ended");
  const RunResult r = profile({"-o", d}, {"true"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(read_text(precious), "precious\n");
  EXPECT_FALSE(fs::is_symlink(d + "/ended"));
  EXPECT_NE(read_text(d + "/ended").find("exit 0"), std::string::npos) << read_text(d + "/ended");
}

// /tmp/perf-PID.map is anyone's to plant: a link there to one of our files
// must not be copied into the run (where the run's readers would see it).
TEST_F(OutputSafety, APerfMapThatIsALinkIsNotCopied) {
  const std::string d = scratch / "D", secret = scratch / "secret", pid_file = scratch / "pid";
  write_text(secret, "7f0000000000 10 secret\n");
  // The profiled shell plants the link for its own pid (which the exec'd
  // program keeps), and the secret is newer than the shell's start.
  const std::string script = "ln -s \"$1\" /tmp/perf-$$.map && echo $$ > \"$2\" && touch \"$1\" && exec \"$3\" 1 0.1";
  const RunResult r = profile({"-o", d}, {"sh", "-c", script, "sh", secret, pid_file, fixture("split_workload")});
  const std::string pid = read_text(pid_file).substr(0, read_text(pid_file).find('\n'));
  ASSERT_FALSE(pid.empty()) << r.describe();
  const std::string link = "/tmp/perf-" + pid + ".map";
  const bool kept_link = fs::is_symlink(link);
  std::error_code ec;
  fs::remove(link, ec);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(kept_link) << link << " is not the launcher's to remove";
  for (const auto& entry : fs::directory_iterator(d + "/raw"))
    EXPECT_EQ(entry.path().string().find(".perf.map"), std::string::npos) << entry.path() << " is a copy";
}

// A relative -o is the launcher's working directory's, whatever directory
// the program goes to before it starts (here "/"), alone or as an MPI rank.
struct RelativeCase {
  const char* name;
  std::map<std::string, std::string> env;
};
void PrintTo(const RelativeCase& c, std::ostream* os) { *os << c.name; }

class RelativeOutput : public IntegrationTest, public ::testing::WithParamInterface<RelativeCase> {};

TEST_P(RelativeOutput, SurvivesTheProgramsChdir) {
  RunOptions options;
  options.env = GetParam().env;
  options.working_directory = scratch.path();
  const std::string relative = relative_output(scratch);
  const RunResult r =
      profile({"-o", relative}, {"sh", "-c", "cd / && exec \"$0\" 1 0.3", fixture("split_workload")}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(strayed_into_root(relative)) << "a program run from / wrote into /" << relative;
  std::string error;
  auto p = load_profile(scratch / relative, &error);
  ASSERT_TRUE(p) << error << "\n" << r.describe();
  EXPECT_GT(p->inclusive_samples("descend"), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    OutputSafety, RelativeOutput,
    ::testing::Values(RelativeCase{"Alone", {}},
                      RelativeCase{"AsTheRankOfAJob", {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}}}),
    [](const ::testing::TestParamInfo<RelativeCase>& info) { return std::string(info.param.name); });

// Without the launcher, the runtime makes a relative HYBRIDPROF_OUTPUT_DIR
// absolute for the programs it runs too.
TEST_F(OutputSafety, ARelativeRuntimeOutputDirectorySurvivesAChdir) {
  const std::string relative = relative_output(scratch);
  RunOptions options;
  options.env = {{"LD_PRELOAD", runtime_library()}, {"HYBRIDPROF_OUTPUT_DIR", relative}};
  options.working_directory = scratch.path();
  const RunResult r = run({"sh", "-c", "cd / && exec \"$0\" 1 0.1", fixture("split_workload")}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(strayed_into_root(relative)) << "a program run from / wrote into /" << relative;
  size_t streams = 0;
  for (const auto& entry : fs::directory_iterator(scratch / relative + "/raw"))
    streams += entry.path().extension() == ".hpr";
  EXPECT_EQ(streams, 2u) << "the shell's and split_workload's";
}

// Secure execution: a setuid program's environment is another user's. The
// loader ignores LD_PRELOAD there, but a library can still be loaded (here
// by the program's own dlopen, as the CUDA driver loads an injection
// library): the runtime must start nothing, and neither may the OMPT tool
// or the NVTX callbacks (the program calls their entry points). Root runs
// a copy set-user-ID to nobody, given a directory nobody may write in:
// only the runtime's own check keeps it from starting.
TEST_F(OutputSafety, ASetuidProgramStartsNoRuntime) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to give a setuid program to another user";
  struct statvfs fsinfo;
  if (statvfs(scratch.path().c_str(), &fsinfo) == 0 && (fsinfo.f_flag & ST_NOSUID))
    GTEST_SKIP() << scratch.path() << " is on a nosuid mount";
  const std::string probe = scratch / "id", program = scratch / "setuid_dlopen", plain = scratch / "dlopen";
  fs::copy_file("/usr/bin/id", probe);
  fs::copy_file(fixture("dlopen_workload"), program);
  fs::copy_file(fixture("dlopen_workload"), plain);
  for (const std::string& p : {probe, program}) {
    if (chown(p.c_str(), kNobody, kNobody) != 0) GTEST_SKIP() << "cannot give a file to uid " << kNobody;
    ASSERT_EQ(chmod(p.c_str(), 04755), 0);
  }
  fs::permissions(scratch.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                      fs::perms::others_read | fs::perms::others_exec);
  const RunResult who = run({probe, "-u"});
  if (who.out != std::to_string(kNobody) + "\n")
    GTEST_SKIP() << "set-user-ID has no effect here (no_new_privs?): id -u says " << who.out;
  const std::string anyones = scratch / "anyones";
  fs::create_directory(anyones);
  fs::permissions(anyones, fs::perms::all | fs::perms::sticky_bit);

  // The same load, not set-user-ID, does start the runtime.
  RunOptions options;
  options.env = {{"HYBRIDPROF_OUTPUT_DIR", anyones + "/plain"}};
  const RunResult control = run({plain, runtime_library()}, options);
  ASSERT_NE(control.err.find("dlsym"), std::string::npos) << "the runtime did not load:\n" << control.describe();
  ASSERT_TRUE(fs::exists(anyones + "/plain/raw")) << control.describe();
  // The OMPT and NVTX entry points, where this build has them.
  const bool ompt = control.err.find("ompt_start_tool:") != std::string::npos;
  const bool nvtx = control.err.find("nvtx: tables") != std::string::npos;
  if (ompt) {
    EXPECT_NE(control.err.find("ompt_start_tool: a tool"), std::string::npos) << control.describe();
  }
  if (nvtx) {
    EXPECT_NE(control.err.find("nvtx: tables asked"), std::string::npos) << control.describe();
  }

  options.env = {{"HYBRIDPROF_OUTPUT_DIR", anyones + "/setuid"}};
  const RunResult r = run({program, runtime_library()}, options);
  if (r.err.find("dlopen:") != std::string::npos) GTEST_SKIP() << "nobody cannot load the runtime: " << r.err;
  ASSERT_NE(r.err.find("dlsym"), std::string::npos) << "the runtime did not load:\n" << r.describe();
  for (const auto& line : r.err_lines()) EXPECT_NE(line.rfind("hybridprof", 0), 0u) << line;
  if (ompt) {
    EXPECT_NE(r.err.find("ompt_start_tool: none"), std::string::npos) << r.describe();
  }
  if (nvtx) {
    EXPECT_NE(r.err.find("nvtx: tables not asked"), std::string::npos) << r.describe();
  }
  EXPECT_FALSE(fs::exists(anyones + "/setuid")) << "the runtime started in a setuid program";
}

// Damaged input to hybridprof-report and hybridprof-merge.
enum class Tool { kReport, kMerge };
enum class Damage { kRemove, kHalf, kEmpty, kRandom, kGarbledAfterHeader };

struct CorruptCase {
  const char* name;
  Tool tool;
  std::string file;  // in the run directory; "EVT": its largest event file, "HPR": its raw stream
  Damage damage;
  bool may_succeed;  // with a warning: merge keeps what is readable
};
void PrintTo(const CorruptCase& c, std::ostream* os) { *os << c.name; }

std::map<std::string, std::string> contents_of_files(const std::string& directory) {
  std::map<std::string, std::string> contents;
  for (const auto& entry : fs::recursive_directory_iterator(directory))
    if (entry.is_regular_file()) contents[entry.path().string()] = read_text(entry.path().string());
  return contents;
}

void damage(const std::string& path, Damage how) {
  const std::string text = read_text(path);
  std::mt19937 random(17);
  std::string noise(text.size(), '\0');
  for (char& c : noise) c = char(random());
  switch (how) {
    case Damage::kRemove: fs::remove(path); break;
    case Damage::kHalf: fs::resize_file(path, text.size() / 2); break;
    case Damage::kEmpty: write_text(path, ""); break;
    case Damage::kRandom: write_text(path, noise); break;
    case Damage::kGarbledAfterHeader: write_text(path, text.substr(0, 8) + noise.substr(8)); break;  // a stream's magic
  }
}

std::string largest_file(const std::string& directory, const std::string& extension) {
  std::string largest;
  uintmax_t size = 0;
  for (const auto& entry : fs::directory_iterator(directory))
    if (entry.path().extension() == extension && entry.file_size() >= size) {
      size = entry.file_size();
      largest = entry.path().string();
    }
  return largest;
}

class CorruptInput : public ::testing::TestWithParam<CorruptCase> {
 protected:
  // One profiled run, copied and damaged by each test.
  static void SetUpTestSuite() {
    source_ = new TempDir();
    const RunResult r = profile({"-o", *source_ / "run"}, {fixture("split_workload"), "2", "0.3"});
    if (r.exit_code != 0) source_error_ = r.describe();
  }
  static void TearDownTestSuite() {
    delete source_;
    source_ = nullptr;
  }
  static TempDir* source_;
  static std::string source_error_;
  TempDir scratch_;
};
TempDir* CorruptInput::source_ = nullptr;
std::string CorruptInput::source_error_;

TEST_P(CorruptInput, ClearErrorNoCrashAndTheInputStaysAsItWas) {
  const CorruptCase& c = GetParam();
  ASSERT_TRUE(source_error_.empty()) << source_error_;
  const std::string run_dir = scratch_ / "run";
  fs::copy(*source_ / "run", run_dir, fs::copy_options::recursive);
  if (c.tool == Tool::kMerge)
    for (const char* part : {"traces.otf2", "traces.def", "traces"}) fs::remove_all(run_dir + "/" + part);
  std::string file = run_dir + "/" + c.file;
  if (c.file == "EVT") file = largest_file(run_dir + "/traces", ".evt");
  if (c.file == "HPR") file = largest_file(run_dir + "/raw", ".hpr");
  ASSERT_TRUE(fs::exists(file)) << file;
  damage(file, c.damage);
  const auto before = contents_of_files(run_dir);

  const std::string tool_name = c.tool == Tool::kReport ? "hybridprof-report" : "hybridprof-merge";
  RunOptions options;
  options.discard_stdout = true;
  const RunResult r = run({c.tool == Tool::kReport ? report_tool() : merge_tool(), run_dir}, options);
  EXPECT_FALSE(r.timed_out) << r.describe();
  EXPECT_LT(r.exit_code, 128) << "died of a signal\n" << r.describe();
  for (const char* crash : {"Sanitizer", "runtime error", "terminate called"})
    EXPECT_EQ(r.err.find(crash), std::string::npos) << r.describe();
  const auto lines = r.err_lines();
  ASSERT_FALSE(lines.empty()) << "nothing said\n" << r.describe();
  for (const auto& line : lines) EXPECT_EQ(line.rfind(tool_name + ":", 0), 0u) << line;
  if (r.exit_code == 0) {
    EXPECT_TRUE(c.may_succeed) << r.describe();
    EXPECT_NE(r.err.find(tool_name + ": warning:"), std::string::npos) << r.describe();
  } else {
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    // The damaged file, or what the tool looked for in its place (the archive's anchor).
    const std::string named = c.damage == Damage::kRemove || c.file == "traces.def" ? run_dir : file;
    EXPECT_NE(r.err.find(named), std::string::npos) << "the error does not name " << named << "\n" << r.describe();
    if (c.tool == Tool::kReport) {
      EXPECT_EQ(lines.size(), 1u) << r.describe();
    }
  }
  // Nothing that was there changed (merge adds its archive beside it).
  const auto after = contents_of_files(run_dir);
  for (const auto& [path, text] : before) {
    const auto found = after.find(path);
    ASSERT_NE(found, after.end()) << path << " was removed";
    EXPECT_TRUE(found->second == text) << path << " was changed";
  }
}

INSTANTIATE_TEST_SUITE_P(
    OutputSafety, CorruptInput,
    ::testing::Values(
        CorruptCase{"ReportNoArchive", Tool::kReport, "traces.otf2", Damage::kRemove, false},
        CorruptCase{"ReportTruncatedAnchor", Tool::kReport, "traces.otf2", Damage::kHalf, false},
        CorruptCase{"ReportEmptyAnchor", Tool::kReport, "traces.otf2", Damage::kEmpty, false},
        CorruptCase{"ReportRandomAnchor", Tool::kReport, "traces.otf2", Damage::kRandom, false},
        CorruptCase{"ReportHalfDefinitions", Tool::kReport, "traces.def", Damage::kHalf, false},
        CorruptCase{"ReportRandomDefinitions", Tool::kReport, "traces.def", Damage::kRandom, false},
        CorruptCase{"ReportHalfEvents", Tool::kReport, "EVT", Damage::kHalf, false},
        CorruptCase{"ReportRandomEvents", Tool::kReport, "EVT", Damage::kRandom, false},
        CorruptCase{"MergeTruncatedStream", Tool::kMerge, "HPR", Damage::kHalf, true},
        CorruptCase{"MergeRandomStream", Tool::kMerge, "HPR", Damage::kRandom, false},
        CorruptCase{"MergeGarbledStream", Tool::kMerge, "HPR", Damage::kGarbledAfterHeader, false},
        CorruptCase{"MergeEmptyStream", Tool::kMerge, "HPR", Damage::kEmpty, false}),
    [](const ::testing::TestParamInfo<CorruptCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace hybridprof::integration
