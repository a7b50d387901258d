#include "test_support.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "otf2/property_names.h"

namespace hybridprof::otf2::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hybridprof-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

bool have_program(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null").exit_code == 0;
}

uint64_t file_bytes_under(const std::string& directory, const std::string& extension) {
  uint64_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(directory)) {
    if (entry.is_regular_file() && entry.path().extension() == extension) bytes += entry.file_size();
  }
  return bytes;
}

KnownArchive write_known_archive(const std::string& directory, bool enter_leave) {
  KnownArchive k;
  ArchiveWriter::Options options;
  options.directory = directory;
  options.enter_leave = enter_leave;
  ArchiveWriter w(options);

  w.set_property(property::kProgram, "./app --size 3");
  w.set_property(property::kEvent, "cpu-clock");
  w.set_property(property::kMechanism, "perf_event");
  w.set_property(property::kPeriod, "1000 Hz");
  w.set_property(property::kVersion, "0.1.0");

  const uint32_t node = w.define_system_tree_node("host", "node", kUndefined);
  k.p_app = w.define_process("app", node);
  k.p_helper = w.define_process("helper", node);
  k.t_main = w.define_thread(k.p_app, "main");
  k.t_worker = w.define_thread(k.p_app, "worker");
  k.t_helper = w.define_thread(k.p_helper, "helper");
  w.set_process_property(k.p_app, property::kPid, "4242");
  w.set_process_property(k.p_app, property::kExitStatus, "0");
  w.set_process_property(k.p_helper, property::kPid, "4243");
  w.set_thread_property(k.t_main, property::kTid, 100);
  w.set_thread_property(k.t_worker, property::kTid, 101);
  w.set_thread_property(k.t_helper, property::kTid, 200);
  w.set_thread_property(k.t_main, property::kSamples, 35);
  w.set_thread_property(k.t_main, property::kDropped, 2);
  w.set_thread_property(k.t_worker, property::kSamples, 10);

  k.r_main = w.define_region("main", "main.cc", 10, Paradigm::kSampling);
  k.r_a = w.define_region("A", "a.cc", 5, Paradigm::kSampling);
  k.r_b = w.define_region("B", "b.py", 7, Paradigm::kPython);
  k.r_c = w.define_region("C", "c.cc", 30, Paradigm::kCompiler);
  k.c_main = w.define_calling_context(k.r_main, kUndefined, kUndefined);
  k.c_a = w.define_calling_context(k.r_a, w.define_source_location("main.cc", 12), k.c_main);
  k.c_b = w.define_calling_context(k.r_b, kUndefined, k.c_main);
  k.c_c = w.define_calling_context(k.r_c, kUndefined, k.c_b);
  k.interrupt_generator = w.define_interrupt_generator("cpu-clock", true, 1000000);

  // Interleaved in time across threads, 1 ms apart within a thread.
  const uint64_t t0 = 5'000'000'000;
  auto add = [&](uint64_t location, uint32_t context, int count) {
    auto& list = k.samples[location];
    for (int i = 0; i < count; ++i) list.emplace_back(t0 + list.size() * 1'000'000 + location * 1000, context);
  };
  add(k.t_main, k.c_main, 5);
  add(k.t_main, k.c_a, 20);
  add(k.t_main, k.c_c, 10);
  add(k.t_worker, k.c_b, 7);
  add(k.t_worker, k.c_c, 3);
  add(k.t_helper, k.c_a, 1);
  for (const auto& [location, list] : k.samples) {
    for (const auto& [time, context] : list) w.write_sample(location, time, context, 1, k.interrupt_generator);
  }
  k.clock = {1'000'000'000, t0, 40'000'000, 1'700'000'000'000'000'000ull};
  w.close(k.clock);
  return k;
}

}  // namespace hybridprof::otf2::testing
