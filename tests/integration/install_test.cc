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

}  // namespace
}  // namespace hybridprof::integration
