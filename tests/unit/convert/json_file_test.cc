// JsonFile: what goes in comes out, byte for byte, across many hand-offs to
// its writer thread, plain and gzip; a failed write leaves nothing behind.
#include "json_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace hybridprof::convert {
namespace {

namespace fs = std::filesystem;

// Writes `records` records through every kind of call; returns what the
// file must then hold.
std::string write_records(JsonFile& out, int records) {
  std::string expected;
  for (int i = 0; i < records; ++i) {
    out.raw("{\"n\":");
    out.number(static_cast<uint64_t>(i) * 7919);
    out.raw(",\"ts\":");
    out.fixed3(i * 0.125);  // exact in binary: no rounding to disagree on
    out.raw(",\"name\":");
    out.string(i % 3 ? "plain name" : "quote\" back\\slash\nnewline");
    out.raw("}\n");
    std::ostringstream ts;
    ts.setf(std::ios::fixed);
    ts.precision(3);
    ts << i * 0.125;
    expected += "{\"n\":" + std::to_string(static_cast<uint64_t>(i) * 7919) + ",\"ts\":" + ts.str() + ",\"name\":" +
                (i % 3 ? "\"plain name\"" : "\"quote\\\" back\\\\slash\\u000anewline\"") + "}\n";
  }
  return expected;
}

class JsonFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("json_file_test." + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read_plain(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static std::string read_gzip(const fs::path& path) {
    gzFile in = gzopen(path.c_str(), "rb");
    EXPECT_NE(in, nullptr);
    std::string text;
    char chunk[65536];
    for (int n; in && (n = gzread(in, chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<size_t>(n));
    if (in) gzclose(in);
    return text;
  }
  // Files in the directory: nothing partial may be left.
  size_t files() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }

  fs::path dir_;
};

TEST_F(JsonFileTest, ManyBuffersComeOutInOrderPlain) {
  const fs::path path = dir_ / "out.json";
  JsonFile out(path);
  const std::string expected = write_records(out, 200'000);  // about 12 MiB: a dozen hand-offs
  ASSERT_GT(expected.size(), size_t{8} << 20);
  out.commit();
  EXPECT_EQ(read_plain(path), expected);
  EXPECT_EQ(files(), 1u);
}

TEST_F(JsonFileTest, ManyBuffersComeOutInOrderGzip) {
  const fs::path path = dir_ / "out.json.gz";
  JsonFile out(path);
  const std::string expected = write_records(out, 200'000);
  out.commit();
  EXPECT_EQ(read_gzip(path), expected);
  EXPECT_EQ(files(), 1u);
}

TEST_F(JsonFileTest, AnUncommittedFileLeavesNothing) {
  {
    JsonFile out(dir_ / "out.json.gz");
    write_records(out, 50'000);
  }
  EXPECT_EQ(files(), 0u);
}

TEST_F(JsonFileTest, AnUncreatableFileSaysWhich) {
  try {
    JsonFile out(dir_ / "no such dir" / "out.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no such dir/out.json"), std::string::npos) << e.what();
  }
}

// A full disk, as a file size limit (in a child process): commit() fails
// and nothing is left.
void write_past_the_limit(const fs::path& dir, const char* name) {
  std::signal(SIGXFSZ, SIG_IGN);  // writes past the limit fail with EFBIG instead
  const rlimit limit{64 << 10, 64 << 10};
  setrlimit(RLIMIT_FSIZE, &limit);
  bool threw = false;
  try {
    JsonFile out(dir / name);
    write_records(out, 400'000);
    out.commit();
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()).find("cannot write") != std::string::npos;
  }
  const bool empty = fs::directory_iterator(dir) == fs::directory_iterator();
  std::_Exit(threw && empty ? 0 : 1);
}

TEST_F(JsonFileTest, AFailedWriteFailsTheCommitAndLeavesNothing) {
  EXPECT_EXIT(write_past_the_limit(dir_, "out.json"), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(write_past_the_limit(dir_, "out.json.gz"), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace hybridprof::convert
