// JIT code under the launcher: it asks oneDNN for a perf map unless the
// user chose a setting (or --no-jit-map), the finalizer names the code from
// the map and keeps the map in the run's raw/, and the launcher removes
// from /tmp only the maps it asked for. The program (jit_perf_map) prints
// what it got and writes its map whatever it got, as a JIT asked by other
// means (Python -X perf) would.
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

const std::string kJitName = "jit_spin_loop (generated)";

// What the program said, and the /tmp map it wrote (removed at the end
// whoever should have).
struct JitRun {
  RunResult result;
  long pid = -1;
  std::string system_map;
  ~JitRun() {
    if (!system_map.empty()) std::remove(system_map.c_str());
  }
  bool said(const std::string& line) const {
    for (const auto& l : split_lines(result.out))
      if (l == line) return true;
    return false;
  }
};

class JitMap : public IntegrationTest {
 protected:
  void SetUp() override {
    if (std::getenv("ONEDNN_JIT_PROFILE") || std::getenv("DNNL_JIT_PROFILE"))
      GTEST_SKIP() << "this environment sets oneDNN's profiling itself";
  }

  void profile_jit(const std::vector<std::string>& args, const RunOptions& options, JitRun* run) {
    run->result = profile(args, {fixture("jit_perf_map"), "0.3"}, options);
    for (const auto& l : split_lines(run->result.out))
      if (l.rfind("pid ", 0) == 0) run->pid = std::atol(l.c_str() + 4);
    ASSERT_GT(run->pid, 0) << run->result.describe();
    run->system_map = "/tmp/perf-" + std::to_string(run->pid) + ".map";
    ASSERT_EQ(run->result.exit_code, 0) << run->result.describe();
  }

  // The maps kept in DIR/raw.
  static std::vector<std::string> kept_maps(const std::string& dir) {
    std::vector<std::string> maps;
    if (DIR* d = opendir((dir + "/raw").c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.size() > 9 && name.compare(name.size() - 9, 9, ".perf.map") == 0) maps.push_back(dir + "/raw/" + name);
      }
      closedir(d);
    }
    return maps;
  }

  // The archive's regions named `name`: their modules.
  static std::vector<std::string> modules_of(const Profile& p, const std::string& name) {
    std::vector<std::string> modules;
    for (const auto& [ref, r] : p.archive().regions)
      if (r.name == name) modules.push_back(r.module);
    return modules;
  }
};

TEST_F(JitMap, LauncherAsksForAMapNamesTheCodeAndKeepsTheMapInTheRun) {
  const std::string dir = scratch / "D";
  JitRun jit;
  ASSERT_NO_FATAL_FAILURE(profile_jit({"-o", dir}, {}, &jit));
  EXPECT_TRUE(jit.said("ONEDNN_JIT_PROFILE=2")) << jit.result.out;
  EXPECT_TRUE(jit.said("DNNL_JIT_PROFILE=2")) << jit.result.out;
  EXPECT_FALSE(file_exists(jit.system_map)) << "the launcher asked for it, so it removes it";
  const auto kept = kept_maps(dir);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_NE(read_text(kept[0]).find(" " + kJitName + "\n"), std::string::npos) << read_text(kept[0]);
#if defined(__x86_64__)
  Profile p(dir);
  EXPECT_EQ(modules_of(p, kJitName), std::vector<std::string>{"[jit]"});
  EXPECT_GT(p.self_samples(kJitName), 0u) << "the program spins in its generated code";
  // Rebuilt after /tmp lost the map: named from the kept copy.
  const RunResult merge = run({merge_tool(), "--force", dir});
  ASSERT_EQ(merge.exit_code, 0) << merge.describe();
  Profile again(dir);
  EXPECT_EQ(again.self_samples(kJitName), p.self_samples(kJitName));
#endif
}

TEST_F(JitMap, AUsersOwnSettingIsLeftAloneAndSoIsTheMap) {
  for (const char* variable : {"ONEDNN_JIT_PROFILE", "DNNL_JIT_PROFILE"}) {
    const std::string dir = scratch / variable;
    RunOptions options;
    options.env[variable] = "6";
    JitRun jit;
    ASSERT_NO_FATAL_FAILURE(profile_jit({"-o", dir}, options, &jit));
    const bool onednn = std::string(variable) == "ONEDNN_JIT_PROFILE";
    EXPECT_TRUE(jit.said(onednn ? "ONEDNN_JIT_PROFILE=6" : "ONEDNN_JIT_PROFILE=(unset)")) << jit.result.out;
    EXPECT_TRUE(jit.said(onednn ? "DNNL_JIT_PROFILE=(unset)" : "DNNL_JIT_PROFILE=6")) << jit.result.out;
    EXPECT_TRUE(file_exists(jit.system_map)) << "the user asked for it: theirs to keep";
    EXPECT_EQ(kept_maps(dir).size(), 1u) << "kept with the run all the same";
  }
}

TEST_F(JitMap, NoJitMapAsksForNothing) {
  const std::string dir = scratch / "D";
  JitRun jit;
  ASSERT_NO_FATAL_FAILURE(profile_jit({"--no-jit-map", "-o", dir}, {}, &jit));
  EXPECT_TRUE(jit.said("ONEDNN_JIT_PROFILE=(unset)")) << jit.result.out;
  EXPECT_TRUE(jit.said("DNNL_JIT_PROFILE=(unset)")) << jit.result.out;
  EXPECT_TRUE(file_exists(jit.system_map)) << "not asked for by the launcher: not removed";
}

}  // namespace
}  // namespace hybridprof::integration
