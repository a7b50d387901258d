#include "trace/event_source.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hybridprof {
namespace {

// A source that writes down what the runtime told it.
class ToySource final : public EventSource {
 public:
  explicit ToySource(std::string name) : name_(std::move(name)) {}
  const char* name() const override { return name_.c_str(); }
  void fork_child() override { calls.push_back("fork_child"); }
  std::vector<std::string> calls;

 private:
  std::string name_;
};

TEST(EventSources, RegisteredSourcesAreCalledInOrderAndTheTableIsBounded) {
  // This test binary registers no other source: the table is ours. The
  // sources outlive the test, as registered ones must.
  static std::vector<ToySource> sources;
  sources.reserve(kMaxEventSources + 1);
  for (size_t i = 0; i <= kMaxEventSources; ++i) sources.emplace_back("toy" + std::to_string(i));
  for (size_t i = 0; i < kMaxEventSources; ++i) EXPECT_TRUE(register_event_source(&sources[i])) << i;
  EXPECT_FALSE(register_event_source(&sources[kMaxEventSources])) << "a full table refuses, it does not overflow";

  std::vector<std::string> seen;
  for_each_event_source([&](EventSource& s) {
    seen.push_back(s.name());
    s.fork_child();
  });
  ASSERT_EQ(seen.size(), kMaxEventSources);
  for (size_t i = 0; i < kMaxEventSources; ++i) {
    EXPECT_EQ(seen[i], "toy" + std::to_string(i));
    EXPECT_EQ(sources[i].calls, std::vector<std::string>{"fork_child"});
  }
  EXPECT_TRUE(sources[kMaxEventSources].calls.empty());
}

}  // namespace
}  // namespace hybridprof
