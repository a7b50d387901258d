// The report's numbers on synthetic archives with known samples.
#include <gtest/gtest.h>

#include <sstream>

#include "otf2/archive_reader.h"
#include "otf2/property_names.h"
#include "profile.h"
#include "table.h"
#include "test_support.h"
#include "text_report.h"

namespace hybridprof::report {
namespace {

using otf2::ArchiveWriter;
using otf2::kUndefined;
using otf2::Paradigm;
using otf2::testing::TempDir;

// main -> A (50 samples at two lines of A: 30 at a.cc:11 + 20 at a.cc:12,
// a context's source location being the line in its own function), main -> B (30),
// main -> C (20), and a recursion main -> R -> R -> R (10) when asked.
// With a device stream: the process also drives "GPU 0", whose one stream
// ran a kernel.
void write_abc_archive(const std::string& dir, bool with_recursion = false, bool with_properties = true,
                       bool with_stream = false) {
  ArchiveWriter w({.directory = dir});
  if (with_properties) w.set_property(otf2::property::kProgram, "./abc");
  const uint32_t process = w.define_process("abc", w.define_system_tree_node("h", "node", kUndefined));
  const uint64_t t = w.define_thread(process, "main");
  if (with_stream) {
    const uint64_t stream = w.define_stream(w.define_device(process, "GPU 0"), "stream 7");
    const uint32_t kernel = w.define_calling_context(w.define_region("kernel", "", 0, Paradigm::kUser), kUndefined,
                                                     kUndefined);
    w.write_context_enter(stream, 2'000'000, kernel, 1);
    w.write_context_leave(stream, 9'000'000, kernel);
  }
  const uint32_t main = w.define_calling_context(w.define_region("main", "main.cc", 3, Paradigm::kSampling), kUndefined, kUndefined);
  const uint32_t a = w.define_region("A", "a.cc", 10, Paradigm::kSampling);
  const uint32_t a_site1 = w.define_calling_context(a, w.define_source_location("a.cc", 11), main);
  const uint32_t a_site2 = w.define_calling_context(a, w.define_source_location("a.cc", 12), main);
  const uint32_t b = w.define_calling_context(w.define_region("B", "b.cc", 20, Paradigm::kSampling), kUndefined, main);
  const uint32_t c = w.define_calling_context(w.define_region("C", "", 0, Paradigm::kSampling), kUndefined, main);
  uint64_t time = 1'000'000;
  auto add = [&](uint32_t context, int count) {
    for (int i = 0; i < count; ++i) w.write_sample(t, time += 1'000'000, context, 1, kUndefined);
  };
  add(a_site1, 30);
  add(b, 30);
  add(a_site2, 20);
  add(c, 20);
  if (with_recursion) {
    const uint32_t r_region = w.define_region("R", "r.cc", 1, Paradigm::kSampling);
    uint32_t r = main;
    for (int depth = 0; depth < 3; ++depth) r = w.define_calling_context(r_region, kUndefined, r);
    add(r, 10);
  }
  w.close({});
}

struct Loaded {
  explicit Loaded(const std::string& dir) : reader(dir), counts(count_samples(reader)) {}
  otf2::ArchiveReader reader;
  SampleCounts counts;
  const otf2::Archive& archive() const { return reader.archive(); }
};

const FunctionRow& row_named(const std::vector<FunctionRow>& rows, const std::string& name) {
  for (const FunctionRow& row : rows) {
    if (row.name == name) return row;
  }
  throw std::runtime_error("no row " + name);
}

TEST(FlatProfile, SelfAndInclusiveSamples) {
  TempDir dir;
  write_abc_archive(dir.path());
  Loaded loaded(dir.path());
  EXPECT_EQ(loaded.counts.total, 100u);
  const std::vector<FunctionRow> rows = flat_profile(loaded.archive(), loaded.counts);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, "A");  // sorted by self
  EXPECT_EQ(rows[0].self, 50u);
  EXPECT_EQ(rows[0].inclusive, 50u);
  EXPECT_EQ(rows[0].source, "a.cc:11") << "the line most of A's own samples hit";
  EXPECT_EQ(rows[1].name, "B");
  EXPECT_EQ(rows[1].self, 30u);
  EXPECT_EQ(rows[2].name, "C");
  EXPECT_EQ(rows[2].self, 20u);
  EXPECT_EQ(rows[2].source, "-");
  EXPECT_EQ(rows[3].name, "main");
  EXPECT_EQ(rows[3].self, 0u);
  EXPECT_EQ(rows[3].inclusive, 100u);
  EXPECT_EQ(percent(rows[3].inclusive, loaded.counts.total), "100.0%");
  EXPECT_EQ(percent(rows[1].self, loaded.counts.total), "30.0%");
}

// Modules read as their file's name; the vDSO, saved per process as
// "<host>.<pid>.vdso.so", as [vdso] (the same in every run, for --diff).
TEST(FlatProfile, ModulesAreNamedByTheirFileAndTheVdsoAlike) {
  TempDir dir;
  {
    ArchiveWriter w({.directory = dir.path()});
    const uint32_t process = w.define_process("p", w.define_system_tree_node("h", "node", kUndefined));
    const uint64_t t = w.define_thread(process, "main");
    const uint32_t clock = w.define_calling_context(
        w.define_region("__vdso_clock_gettime", "", 0, Paradigm::kSampling, "/tmp/run/raw/node7.4242.vdso.so"),
        kUndefined, kUndefined);
    const uint32_t copy = w.define_calling_context(
        w.define_region("strlen", "", 0, Paradigm::kSampling, "/usr/lib/x86_64-linux-gnu/libc.so.6"), kUndefined,
        kUndefined);
    w.write_sample(t, 1'000'000, clock, 1, kUndefined);
    w.write_sample(t, 2'000'000, copy, 1, kUndefined);
    w.close({});
  }
  Loaded loaded(dir.path());
  const std::vector<FunctionRow> rows = flat_profile(loaded.archive(), loaded.counts);
  EXPECT_EQ(row_named(rows, "__vdso_clock_gettime").module, "[vdso]");
  EXPECT_EQ(row_named(rows, "strlen").module, "libc.so.6");
}

TEST(FlatProfile, RecursionCountsOncePerSample) {
  TempDir dir;
  write_abc_archive(dir.path(), /*with_recursion=*/true);
  Loaded loaded(dir.path());
  const std::vector<FunctionRow> rows = flat_profile(loaded.archive(), loaded.counts);
  EXPECT_EQ(row_named(rows, "R").self, 10u);
  EXPECT_EQ(row_named(rows, "R").inclusive, 10u);  // not 30
  EXPECT_EQ(row_named(rows, "main").inclusive, 110u);
}

TEST(HottestPaths, CallSitesOfOneFunctionMerge) {
  TempDir dir;
  write_abc_archive(dir.path());
  Loaded loaded(dir.path());
  const std::vector<PathRow> rows = hottest_paths(loaded.archive(), loaded.counts);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].frames, (std::vector<std::string>{"main", "A"}));
  EXPECT_EQ(rows[0].samples, 50u);
  EXPECT_EQ(rows[1].frames, (std::vector<std::string>{"main", "B"}));
  EXPECT_EQ(rows[2].samples, 20u);
}

TEST(Folded, LinesAreExactlyTheStacks) {
  TempDir dir;
  write_abc_archive(dir.path(), /*with_recursion=*/true);
  Loaded loaded(dir.path());
  EXPECT_EQ(folded_stacks(loaded.archive(), loaded.counts),
            (std::vector<std::string>{"main;A 50", "main;B 30", "main;C 20", "main;R;R;R 10"}));
  std::ostringstream out;
  print_folded(out, loaded.archive(), loaded.counts);
  EXPECT_EQ(out.str(), "main;A 50\nmain;B 30\nmain;C 20\nmain;R;R;R 10\n");
}

// A Python program: native Py_RunMain -> <module> -> main, which calls
// work (app.py) at two sites; work's own samples sit on two lines, and a
// native hash function runs under one of them. A second `work`, in another
// file, is another function.
//   main:10 -> work:20          40
//   main:10 -> work:21          25
//   main:11 -> work:20          10
//   main:10 -> work:21 -> hash  15
//   main:12 -> work (other.py)   7
//   main:13                      5
// With `incomplete`, the finalizer's Python properties: the process ran
// Python 3.12, its main thread had `incomplete[0]` samples with an
// incomplete Python stack, a second thread (no samples) `incomplete[1]`.
void write_python_archive(const std::string& dir, std::vector<uint64_t> incomplete = {}) {
  ArchiveWriter w({.directory = dir});
  const uint32_t process = w.define_process("python3", w.define_system_tree_node("h", "node", kUndefined));
  const uint64_t t = w.define_thread(process, "main");
  if (!incomplete.empty()) {
    w.set_process_property(process, otf2::property::kPython, "3.12");
    w.set_thread_property(t, otf2::property::kPythonIncomplete, incomplete[0]);
    const uint64_t worker = w.define_thread(process, "worker");
    w.set_thread_property(worker, otf2::property::kPythonIncomplete, incomplete[1]);
  }
  const uint32_t run = w.define_calling_context(w.define_region("Py_RunMain", "", 0, Paradigm::kSampling), kUndefined, kUndefined);
  const uint32_t module_region = w.define_region("<module>", "/src/app.py", 1, Paradigm::kPython);
  const uint32_t main_region = w.define_region("main", "/src/app.py", 9, Paradigm::kPython);
  const uint32_t work_region = w.define_region("work", "/src/app.py", 19, Paradigm::kPython);
  const uint32_t other_work = w.define_region("work", "/src/other.py", 3, Paradigm::kPython);
  const uint32_t hash_region = w.define_region("hash", "hash.c", 0, Paradigm::kSampling);
  auto at = [&](const char* file, uint32_t line) { return w.define_source_location(file, line); };
  const uint32_t module = w.define_calling_context(module_region, at("/src/app.py", 30), run);
  auto main_at = [&](uint32_t line) { return w.define_calling_context(main_region, at("/src/app.py", line), module); };
  auto work_at = [&](uint32_t parent, uint32_t line) {
    return w.define_calling_context(work_region, at("/src/app.py", line), parent);
  };
  const uint32_t work_21 = work_at(main_at(10), 21);
  uint64_t time = 1'000'000;
  auto add = [&](uint32_t context, int count) {
    for (int i = 0; i < count; ++i) w.write_sample(t, time += 1'000'000, context, 1, kUndefined);
  };
  add(work_at(main_at(10), 20), 40);
  add(work_21, 25);
  add(work_at(main_at(11), 20), 10);
  add(w.define_calling_context(hash_region, kUndefined, work_21), 15);
  add(w.define_calling_context(other_work, at("/src/other.py", 4), main_at(12)), 7);
  add(main_at(13), 5);
  w.close({});
}

uint64_t samples_of(const std::vector<PathRow>& rows, const std::vector<std::string>& frames) {
  for (const PathRow& row : rows) {
    if (row.frames == frames) return row.samples;
  }
  return 0;
}

TEST(PythonFunctions, PathsShowOneFramePerFunctionWithTheLinesSummed) {
  TempDir dir;
  write_python_archive(dir.path());
  Loaded loaded(dir.path());
  const std::vector<std::string> to_work = {"Py_RunMain", "<module> (app.py)", "main (app.py)", "work (app.py)"};
  // By line (the default), work's samples are spread over three paths.
  const std::vector<PathRow> by_line = hottest_paths(loaded.archive(), loaded.counts);
  EXPECT_EQ(samples_of(by_line, {"Py_RunMain", "<module> (app.py:30)", "main (app.py:10)", "work (app.py:20)"}), 40u);
  EXPECT_EQ(samples_of(by_line, to_work), 0u);
  // By function: one path, 40 + 25 + 10 samples; hash and the other file's
  // work stay paths of their own.
  const FrameView functions{.python_functions = true};
  const std::vector<PathRow> rows = hottest_paths(loaded.archive(), loaded.counts, functions);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].frames, to_work);
  EXPECT_EQ(rows[0].samples, 75u);
  std::vector<std::string> to_hash = to_work;
  to_hash.push_back("hash");
  EXPECT_EQ(samples_of(rows, to_hash), 15u);
  EXPECT_EQ(samples_of(rows, {"Py_RunMain", "<module> (app.py)", "main (app.py)", "work (other.py)"}), 7u);
  EXPECT_EQ(samples_of(rows, {"Py_RunMain", "<module> (app.py)", "main (app.py)"}), 5u);
  EXPECT_EQ(folded_stacks(loaded.archive(), loaded.counts, functions),
            (std::vector<std::string>{"Py_RunMain;<module> (app.py);main (app.py) 5",
                                      "Py_RunMain;<module> (app.py);main (app.py);work (app.py) 75",
                                      "Py_RunMain;<module> (app.py);main (app.py);work (app.py);hash 15",
                                      "Py_RunMain;<module> (app.py);main (app.py);work (other.py) 7"}));
}

TEST(PythonFunctions, CombineWithPythonOnly) {
  TempDir dir;
  write_python_archive(dir.path());
  Loaded loaded(dir.path());
  const FrameView view{.python_only = true, .python_functions = true};
  // hash is not Python: its samples are work's own here.
  EXPECT_EQ(folded_stacks(loaded.archive(), loaded.counts, view),
            (std::vector<std::string>{"<module> (app.py);main (app.py) 5", "<module> (app.py);main (app.py);work (app.py) 90",
                                      "<module> (app.py);main (app.py);work (other.py) 7"}));
  const std::vector<FunctionRow> rows = flat_profile(loaded.archive(), loaded.counts, view);
  ASSERT_EQ(rows.size(), 4u) << "<module>, main and the two works";
  EXPECT_EQ(rows[0].name, "work");
  EXPECT_EQ(rows[0].self, 90u);
  EXPECT_EQ(rows[0].source, "/src/app.py:20") << "50 samples at line 20, 40 at 21";
  EXPECT_EQ(row_named(rows, "main").self, 5u);
  EXPECT_EQ(row_named(rows, "main").inclusive, 102u);
  // The text report and the command line.
  std::ostringstream out, err;
  ASSERT_EQ(run_report({"--python-only", "--python-functions", "--full-paths", dir.path()}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("       90  88.2%  <module> (app.py) → main (app.py) → work (app.py)\n"), std::string::npos)
      << out.str();
  std::ostringstream folded;
  ASSERT_EQ(run_report({"--folded", "--python-functions", dir.path()}, folded, err), 0) << err.str();
  EXPECT_NE(folded.str().find("Py_RunMain;<module> (app.py);main (app.py);work (app.py) 75\n"), std::string::npos)
      << folded.str();
}

TEST(PythonSummary, IncompletePythonStacksAreCountedInTheRunAndPerThread) {
  TempDir dir;
  write_python_archive(dir.path(), {9, 4});
  std::ostringstream out, err;
  ASSERT_EQ(run_report({dir.path()}, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("  Python                    3.12\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Incomplete Python stacks  13 (12.7% of samples)\n"), std::string::npos) << text;
  const size_t threads = text.find("Threads (by samples)");
  ASSERT_NE(threads, std::string::npos);
  const std::string table = text.substr(threads);
  EXPECT_NE(table.find("Truncated  Python incomplete\n"), std::string::npos) << table;
  // main: 102 samples, 9 incomplete; worker: none sampled, 4 counted.
  EXPECT_NE(table.find("main      -      102  100.0%        -                -          -                  9\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("worker    -        0    0.0%        -                -          -                  4\n"),
            std::string::npos)
      << table;
}

TEST(PythonSummary, NoPythonNoPythonRows) {
  TempDir dir;
  write_python_archive(dir.path());  // Python frames but no finalizer properties: not read by us
  std::ostringstream out, err;
  ASSERT_EQ(run_report({dir.path()}, out, err), 0) << err.str();
  EXPECT_EQ(out.str().find("Python"), std::string::npos) << out.str();
  TempDir native;
  write_abc_archive(native.path());
  std::ostringstream native_out;
  ASSERT_EQ(run_report({native.path()}, native_out, err), 0) << err.str();
  EXPECT_EQ(native_out.str().find("Python"), std::string::npos) << native_out.str();
}

TEST(Abbreviate, DeepPathsKeepFirstThreeAndLastEight) {
  std::vector<std::string> frames;
  for (int i = 0; i < 20; ++i) frames.push_back("f" + std::to_string(i));
  EXPECT_EQ(abbreviate(frames, false), (std::vector<std::string>{"f0", "f1", "f2", "…", "f12", "f13", "f14", "f15",
                                                                 "f16", "f17", "f18", "f19"}));
  EXPECT_EQ(abbreviate(frames, true), frames);
  frames.resize(12);
  EXPECT_EQ(abbreviate(frames, false), frames);
}

TEST(TextReport, SectionsAndAlignedNumbers) {
  TempDir dir;
  write_abc_archive(dir.path());
  std::ostringstream out, err;
  ASSERT_EQ(run_report({dir.path()}, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_TRUE(err.str().empty()) << err.str();
  EXPECT_NE(text.find("  Program                 ./abc\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Mechanism               -\n"), std::string::npos) << text;  // missing -> "-"
  EXPECT_NE(text.find("  Samples                 100 in archive\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Self%  Self   Incl%  Incl  Function  Module  Source\n"
                      "  50.0%    50   50.0%    50  A         -       a.cc:11\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("   0.0%     0  100.0%   100  main      -       main.cc:3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("       50  50.0%  main → A\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("[-]"), std::string::npos) << text;  // no "[pid]" label when the PID is unknown
}

TEST(TextReport, DeviceStreamsAreNotThreads) {
  TempDir dir;
  write_abc_archive(dir.path(), false, true, /*with_stream=*/true);
  std::ostringstream out, err;
  ASSERT_EQ(run_report({dir.path()}, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("  Processes               1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Threads                 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Device streams          1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("stream 7"), std::string::npos) << "not in the threads' table\n" << text;
  EXPECT_NE(text.find("  Samples                 100 in archive\n"), std::string::npos) << text;
}

TEST(TextReport, TopLimitsRows) {
  TempDir dir;
  write_abc_archive(dir.path());
  std::ostringstream out, err;
  ASSERT_EQ(run_report({"--top", "2", "--paths=1", dir.path()}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("Flat profile (2 of 4 functions"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Hottest call paths (1 of 3"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("  main      main.cc:3"), std::string::npos) << out.str();
}

TEST(TextReport, ArchiveWithoutAnyPropertiesPrintsDashes) {
  TempDir dir;
  write_abc_archive(dir.path(), false, /*with_properties=*/false);
  std::ostringstream out, err;
  ASSERT_EQ(run_report({dir.path()}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("  Program                 -\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("  Dropped samples         -\n"), std::string::npos) << out.str();
}

TEST(TextReport, EnterLeaveArchiveSaysItHasNoSamples) {
  TempDir dir;
  otf2::testing::write_known_archive(dir.path(), /*enter_leave=*/true);
  std::ostringstream out, err;
  ASSERT_EQ(run_report({dir.path()}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("No samples in this archive: it holds"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("Flat profile"), std::string::npos);
  EXPECT_NE(out.str().find("  app [4242]"), std::string::npos) << out.str();
}

TEST(Options, ParseAndReject) {
  Options o = parse_options({"--top", "5", "--paths=3", "--full-paths", "--folded", "--python-functions", "dir"});
  EXPECT_EQ(o.top_functions, 5u);
  EXPECT_EQ(o.top_paths, 3u);
  EXPECT_TRUE(o.full_paths);
  EXPECT_TRUE(o.folded);
  EXPECT_TRUE(o.python_functions);
  EXPECT_FALSE(o.python_only);
  EXPECT_FALSE(parse_options({"dir"}).python_functions);
  EXPECT_EQ(o.archive, "dir");
  EXPECT_EQ(parse_options({"dir"}).top_functions, 25u);
  EXPECT_EQ(parse_options({"dir"}).top_paths, 10u);
  EXPECT_TRUE(parse_options({"--help"}).help);
  EXPECT_THROW(parse_options({"--bogus", "dir"}), std::invalid_argument);
  EXPECT_THROW(parse_options({"--top", "0", "dir"}), std::invalid_argument);
  EXPECT_THROW(parse_options({"--top", "x", "dir"}), std::invalid_argument);
  EXPECT_THROW(parse_options({"dir", "--top"}), std::invalid_argument);
  EXPECT_THROW(parse_options({}), std::invalid_argument);
  EXPECT_THROW(parse_options({"a", "b"}), std::invalid_argument);
}

}  // namespace
}  // namespace hybridprof::report
