// DeviceRecordOrder: a device location's records, held and handed back in
// time order, each region's records together; overlaps moved and measured.
#include "finalize/device_order.h"

#include <gtest/gtest.h>

namespace hybridprof::finalize {
namespace {

using Record = DeviceRecordOrder::Record;

// A region [begin, end) on location 3 with an event at its start whose word 0 is `id`.
void add_work(DeviceRecordOrder& order, uint64_t begin, uint64_t end, uint32_t id) {
  raw::Event e{3, begin, 1, {}};
  e.payload.word[0] = id;
  order.add(3, raw::Enter{{3, begin, 10, 20}});
  order.add(3, e);
  order.add(3, raw::Leave{{3, end, 10, 20}});
}

struct Written {
  std::vector<uint64_t> times;
  std::vector<uint32_t> ids;
};
Written release(DeviceRecordOrder& order, DeviceRecordOrder::Moved* moved) {
  Written w;
  *moved = order.release(3, [&](const Record& r) {
    std::visit([&](const auto& v) { w.times.push_back(v.timestamp_ns); }, r);
    if (const auto* e = std::get_if<raw::Event>(&r)) w.ids.push_back(e->payload.word[0]);
  });
  return w;
}

TEST(DeviceRecordOrder, RegionsComeBackByTheirStartWithTheirRecordsTogether) {
  DeviceRecordOrder order;
  // Two runs that interleave in time, as two launching threads' buffers do.
  add_work(order, 300, 350, 3);
  add_work(order, 500, 550, 5);
  add_work(order, 100, 150, 1);
  add_work(order, 400, 450, 4);
  add_work(order, 200, 250, 2);
  EXPECT_TRUE(order.holds(3));
  DeviceRecordOrder::Moved moved;
  const Written w = release(order, &moved);
  EXPECT_EQ(w.ids, (std::vector<uint32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(w.times, (std::vector<uint64_t>{100, 100, 150, 200, 200, 250, 300, 300, 350, 400, 400, 450, 500, 500, 550}));
  EXPECT_EQ(moved.regions, 0u);
  EXPECT_FALSE(order.holds(3)) << "released records are forgotten";
}

TEST(DeviceRecordOrder, OverlapsStartWhereTheWorkBeforeEndedAndAreMeasured) {
  DeviceRecordOrder order;
  add_work(order, 1000, 3000, 1);
  add_work(order, 2000, 4000, 2);     // 1 us early: the engines' stamps, usual
  add_work(order, 12000, 13000, 3);
  add_work(order, 5000, 20000, 4);    // overlaps 3 from 12000 on... and 3 starts inside it
  DeviceRecordOrder::Moved moved;
  const Written w = release(order, &moved);
  EXPECT_EQ(w.ids, (std::vector<uint32_t>{1, 2, 4, 3}));
  // Each region starts at or after the previous record: the stream runs one thing at a time.
  for (size_t i = 1; i < w.times.size(); ++i) EXPECT_LE(w.times[i - 1], w.times[i]) << i;
  EXPECT_EQ(moved.regions, 2u);    // 2 by 1000 ns, 3 by 8000 ns (to 20000)
  EXPECT_EQ(moved.noticeable, 1u);
  EXPECT_EQ(moved.max_ns, 8000u);
}

}  // namespace
}  // namespace hybridprof::finalize
