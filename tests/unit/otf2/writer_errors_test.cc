// The writer refuses bad places and bad calls with clear exceptions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "otf2/archive_reader.h"
#include "otf2/property_names.h"
#include "test_support.h"

namespace hybridprof::otf2 {
namespace {

using testing::TempDir;

// Runs `f`, expects std::runtime_error, returns its message.
template <class F>
std::string runtime_error_message(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::runtime_error";
  return {};
}

TEST(WriterErrors, ExistingArchiveIsNotOverwritten) {
  TempDir dir;
  testing::write_known_archive(dir.path());
  const std::string message = runtime_error_message([&] { ArchiveWriter w({.directory = dir.path()}); });
  EXPECT_NE(message.find(dir.path()), std::string::npos) << message;
  EXPECT_NE(message.find("already exists"), std::string::npos) << message;
  // ... and the first archive is intact.
  ArchiveReader reader(dir.path());
  EXPECT_EQ(reader.archive().threads.size(), 3u);
}

TEST(WriterErrors, LeftoverTraceFolderCountsAsExisting) {
  TempDir dir;
  std::filesystem::create_directories(dir / "traces");
  const std::string message = runtime_error_message([&] { ArchiveWriter w({.directory = dir.path()}); });
  EXPECT_NE(message.find(dir / "traces"), std::string::npos) << message;
}

TEST(WriterErrors, ExistingEmptyDirectoryIsFine) {
  TempDir dir;
  ArchiveWriter w({.directory = dir.path()});
  w.close({});
  EXPECT_TRUE(std::filesystem::exists(dir / "traces.otf2"));
}

TEST(WriterErrors, DirectoryUnderAFileCannotBeCreated) {
  TempDir dir;
  std::ofstream(dir / "plain-file") << "x";
  const std::string target = dir / "plain-file/archive";
  const std::string message = runtime_error_message([&] { ArchiveWriter w({.directory = target}); });
  EXPECT_NE(message.find(target), std::string::npos) << message;
}

TEST(WriterErrors, UnwritableDirectory) {
  // Root may write anywhere on a normal file system; /proc refuses everyone.
  const std::string target = "/proc/hybridprof-archive-test";
  const std::string message = runtime_error_message([&] { ArchiveWriter w({.directory = target}); });
  EXPECT_NE(message.find(target), std::string::npos) << message;
}

class WriterMisuse : public ::testing::Test {
 protected:
  void SetUp() override {
    writer_ = std::make_unique<ArchiveWriter>(ArchiveWriter::Options{.directory = dir_.path()});
    thread_ = writer_->define_thread(writer_->define_process("p", writer_->define_system_tree_node("h", "node", kUndefined)), "t");
    region_ = writer_->define_region("f", "f.c", 1, Paradigm::kSampling);
    context_ = writer_->define_calling_context(region_, kUndefined, kUndefined);
  }
  TempDir dir_;
  std::unique_ptr<ArchiveWriter> writer_;
  uint64_t thread_;
  uint32_t region_, context_;
};

TEST_F(WriterMisuse, UnknownRefsAreRejected) {
  EXPECT_THROW(writer_->define_calling_context(region_, kUndefined, context_ + 1), std::invalid_argument);
  EXPECT_THROW(writer_->define_calling_context(region_ + 1, kUndefined, kUndefined), std::invalid_argument);
  EXPECT_THROW(writer_->define_calling_context(region_, 7, kUndefined), std::invalid_argument);
  EXPECT_THROW(writer_->define_process("q", 5), std::invalid_argument);
  EXPECT_THROW(writer_->define_thread(9, "t"), std::invalid_argument);
  EXPECT_THROW(writer_->write_sample(thread_ + 1, 1, context_, 1, kUndefined), std::invalid_argument);
  EXPECT_THROW(writer_->write_sample(thread_, 1, context_ + 1, 1, kUndefined), std::invalid_argument);
  EXPECT_THROW(writer_->write_sample(thread_, 1, context_, 1, 3), std::invalid_argument);
  EXPECT_THROW(writer_->set_thread_property(thread_ + 1, "TID", 1), std::invalid_argument);
}

TEST_F(WriterMisuse, PropertyNamesAreCheckedEarly) {
  EXPECT_THROW(writer_->set_property("NO_NAMESPACE", "x"), std::invalid_argument);
  EXPECT_THROW(writer_->set_property("BAD NAME::X", "x"), std::invalid_argument);
  EXPECT_THROW(writer_->set_property("A:::B", "x"), std::invalid_argument);
  EXPECT_THROW(writer_->set_property("A::", "x"), std::invalid_argument);
  writer_->set_property("hybridprof::lower_case", "first");
  writer_->set_property("HYBRIDPROF::LOWER_CASE", "second");  // same property
  writer_->set_property("HYBRIDPROF::EMPTY", "");              // nothing stored
  writer_->close({});
  ArchiveReader reader(dir_.path());
  EXPECT_EQ(reader.archive().properties, (std::map<std::string, std::string>{{"HYBRIDPROF::LOWER_CASE", "second"}}));
}

TEST_F(WriterMisuse, EventsAfterEndThreadOrCloseAreLogicErrors) {
  writer_->write_sample(thread_, 10, context_, 1, kUndefined);
  writer_->end_thread(thread_, 20);
  writer_->end_thread(thread_, 30);  // again: no-op
  EXPECT_THROW(writer_->write_sample(thread_, 40, context_, 1, kUndefined), std::logic_error);
  writer_->close({});
  EXPECT_THROW(writer_->close({}), std::logic_error);
  EXPECT_THROW(writer_->define_thread(0, "late"), std::logic_error);
}

// ... and the archive says, for the location, how many and by how much at most.
TEST_F(WriterMisuse, BackwardsTimeIsClampedAndCounted) {
  writer_->write_sample(thread_, 100, context_, 1, kUndefined);
  writer_->write_sample(thread_, 90, context_, 1, kUndefined);
  writer_->write_sample(thread_, 120, context_, 1, kUndefined);
  writer_->write_sample(thread_, 117, context_, 1, kUndefined);
  EXPECT_EQ(writer_->stats().clamped_timestamps, 2u);
  EXPECT_EQ(writer_->stats().events, 4u);
  writer_->close({});
  ArchiveReader reader(dir_.path());
  std::vector<uint64_t> times;
  reader.read_events([&](const SampleEvent& s) { times.push_back(s.timestamp); });
  EXPECT_EQ(times, (std::vector<uint64_t>{100, 100, 120, 120}));
  const auto& properties = reader.archive().threads.at(thread_).properties;
  EXPECT_EQ(properties.at(property::kOutOfOrderEvents), 2u);
  EXPECT_EQ(properties.at(property::kOutOfOrderNs), 10u);
}

TEST_F(WriterMisuse, DestructorClosesTheArchive) {
  writer_->write_sample(thread_, 100, context_, 1, kUndefined);
  writer_.reset();
  ArchiveReader reader(dir_.path());
  uint64_t samples = 0;
  reader.read_events([&](const SampleEvent&) { ++samples; });
  EXPECT_EQ(samples, 1u);
}

}  // namespace
}  // namespace hybridprof::otf2
