// The control API as sites use it once installed: `cmake --install` into a
// prefix, then a program built against it with CMake's
// find_package(hybridprof) and with pkg-config, run without the profiler
// (the calls are no-ops) and under it (they open the window).
#include <filesystem>
#include <fstream>

#include "integration_support.h"

namespace hybridprof::integration {
namespace {

class Install : public IntegrationTest {};

TEST_F(Install, TheControlApiIsFoundByCMakeAndPkgConfig) {
  if (!have_program("cmake") || !have_program("cc")) GTEST_SKIP() << "no cmake or cc";
  const std::string prefix = scratch / "prefix", consumer = scratch / "consumer";
  const RunResult installed = run({"cmake", "--install", HP_BUILD_DIR, "--prefix", prefix});
  ASSERT_EQ(installed.exit_code, 0) << installed.describe();
  std::filesystem::create_directories(consumer);
  std::ofstream(consumer + "/main.c") << "#include <hybridprof/control.h>\n"
                                         "#include <stdio.h>\n"
                                         "int main(void) {\n"
                                         "  hybridprof_start();\n"
                                         "  hybridprof_mark(\"consumer\");\n"
                                         "  printf(\"recording %d\\n\", hybridprof_recording());\n"
                                         "  hybridprof_stop();\n"
                                         "  return 0;\n"
                                         "}\n";
  std::ofstream(consumer + "/CMakeLists.txt") << "cmake_minimum_required(VERSION 3.16)\n"
                                                 "project(consumer C)\n"
                                                 "find_package(hybridprof REQUIRED)\n"
                                                 "add_executable(consumer main.c)\n"
                                                 "target_link_libraries(consumer PRIVATE hybridprof::control)\n";
  const std::string build = scratch / "build";
  const RunResult configured = run({"cmake", "-S", consumer, "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix});
  ASSERT_EQ(configured.exit_code, 0) << configured.describe();
  const RunResult built = run({"cmake", "--build", build});
  ASSERT_EQ(built.exit_code, 0) << built.describe();
  const RunResult plain = run({build + "/consumer"});
  EXPECT_EQ(plain.exit_code, 0) << plain.describe();
  EXPECT_EQ(plain.out, "recording 0\n");
  const std::string d = scratch / "D";
  const RunResult profiled = profile({"--paused", "-o", d}, {build + "/consumer"});
  EXPECT_EQ(profiled.exit_code, 0) << profiled.describe();
  EXPECT_EQ(profiled.out, "recording 1\n");

  // pkg-config, from the relocated prefix.
  if (!have_program("pkg-config")) return;
  RunOptions options;
  options.env["PKG_CONFIG_PATH"] = prefix + "/lib/pkgconfig";
  const RunResult flags = run({"pkg-config", "--cflags", "--libs", "hybridprof"}, options);
  ASSERT_EQ(flags.exit_code, 0) << flags.describe();
  const RunResult compiled = run({"sh", "-c", "cc \"$0\" -o \"$1\" $2", consumer + "/main.c", scratch / "by_pkg_config",
                                  flags.out.substr(0, flags.out.find('\n'))});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.describe();
  options.env["LD_LIBRARY_PATH"] = prefix + "/lib";
  const RunResult by_pkg_config = run({scratch / "by_pkg_config"}, options);
  EXPECT_EQ(by_pkg_config.exit_code, 0) << by_pkg_config.describe();
  EXPECT_EQ(by_pkg_config.out, "recording 0\n");
}

// The tools, their libraries and man pages from `cmake --install`, moved
// elsewhere after: they still run (found beside each other, no
// LD_LIBRARY_PATH), and the report reads what they wrote.
TEST_F(Install, TheTreeRunsWhereverItIsMoved) {
  if (!have_program("cmake")) GTEST_SKIP() << "no cmake";
  const std::string first = scratch / "first", moved = scratch / "moved";
  const RunResult installed = run({"cmake", "--install", HP_BUILD_DIR, "--prefix", first});
  ASSERT_EQ(installed.exit_code, 0) << installed.describe();
  std::filesystem::rename(first, moved);
  for (const char* tool : {"hybridprof", "hybridprof-report", "hybridprof-merge", "hybridprof-convert"}) {
    EXPECT_TRUE(std::filesystem::exists(moved + "/bin/" + tool)) << tool;
    if (have_program("help2man")) {
      EXPECT_TRUE(std::filesystem::exists(moved + "/share/man/man1/" + std::string(tool) + ".1")) << tool;
    }
  }
  EXPECT_TRUE(std::filesystem::exists(moved + "/share/doc/hybridprof/README.md"));
  RunOptions options;
  options.env["LD_LIBRARY_PATH"] = "";
  options.env["HYBRIDPROF_RUNTIME"] = "";
  const std::string d = scratch / "D";
  const RunResult profiled = run({moved + "/bin/hybridprof", "-o", d, "--", fixture("split_workload"), "1", "0.2"}, options);
  ASSERT_EQ(profiled.exit_code, 0) << profiled.describe();
  EXPECT_NE(profiled.err.find("hybridprof: archive " + d + "/traces.otf2"), std::string::npos) << profiled.err;
  const RunResult report = run({moved + "/bin/hybridprof-report", d}, options);
  EXPECT_EQ(report.exit_code, 0) << report.describe();
  EXPECT_NE(report.out.find("Flat profile"), std::string::npos) << report.out;
  const RunResult version = run({moved + "/bin/hybridprof", "--version"}, options);
  EXPECT_EQ(version.out.rfind("hybridprof 0.1.0 (commit ", 0), 0u) << version.out;
}

// The Debian package, as `cpack -G DEB` makes it: its dependencies are the
// Debian libraries its files link (dpkg-shlibdeps), and it holds the
// tools, the runtime and the man pages under /usr. (Installing it on a
// fresh Debian 12: tools/check-deb.sh.)
TEST_F(Install, TheDebianPackageNamesItsDependencies) {
  if (!have_program("cpack") || !have_program("dpkg-deb") || !have_program("dpkg-shlibdeps"))
    GTEST_SKIP() << "no cpack or dpkg-dev";
  const std::string out = scratch / "deb";
  RunOptions slow;
  slow.timeout_seconds = 300;
  const RunResult packed =
      run({"cpack", "-G", "DEB", "--config", std::string(HP_BUILD_DIR) + "/CPackConfig.cmake", "-B", out}, slow);
  ASSERT_EQ(packed.exit_code, 0) << packed.describe();
  std::string deb;
  for (const auto& entry : std::filesystem::directory_iterator(out))
    if (entry.path().extension() == ".deb") deb = entry.path();
  ASSERT_FALSE(deb.empty()) << packed.describe();
  const RunResult depends = run({"dpkg-deb", "--field", deb, "Depends"});
  ASSERT_EQ(depends.exit_code, 0) << depends.describe();
  for (const char* library : {"libdw1", "libunwind8", "libpfm4", "libopen-trace-format2", "libstdc++6", "libc6"})
    EXPECT_NE(depends.out.find(library), std::string::npos) << library << " in: " << depends.out;
  const RunResult contents = run({"dpkg-deb", "--contents", deb});
  ASSERT_EQ(contents.exit_code, 0) << contents.describe();
  std::vector<std::string> wanted{"./usr/bin/hybridprof\n", "./usr/bin/hybridprof-report\n", "./usr/lib/libhybridprof.so\n",
                                  "./usr/include/hybridprof/control.h\n"};
  if (have_program("help2man")) wanted.push_back("./usr/share/man/man1/hybridprof.1");
  for (const std::string& path : wanted) EXPECT_NE(contents.out.find(path), std::string::npos) << path;
}

}  // namespace
}  // namespace hybridprof::integration
