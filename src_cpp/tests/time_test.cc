// Logical time: ticks plus ε-steps, ordered lexicographically, saturating at infinity.
#include <limits>

#include "tests/test_util.h"
#include "time/time.h"

namespace cq::test {
namespace {

CQ_TEST(time_order_and_addition_saturate_at_infinity) {
  CQ_EXPECT((Time{5, 0}) < (Time{5, 1}));
  CQ_EXPECT((Time{5, 9}) < (Time{6, 0}));
  CQ_EXPECT(Time::MinusInfinity() < (Time{std::numeric_limits<int64_t>::min() + 1, 0}));
  CQ_EXPECT((Time{std::numeric_limits<int64_t>::max() - 1, 99}) < Time::Infinity());

  CQ_EXPECT_EQ((Time{5, 0}) + Duration::Ticks(10), (Time{15, 0}));
  CQ_EXPECT_EQ((Time{5, 0}) + Duration::Epsilon(), (Time{5, 1}));
  CQ_EXPECT_EQ((Time{5, 2}) + Duration::Ticks(3), (Time{8, 2}));  // the step carries over
  CQ_EXPECT_EQ((Time{5, 0}) + Duration::Infinite(), Time::Infinity());
  CQ_EXPECT_EQ(Time::Infinity() + Duration::Ticks(1), Time::Infinity());
  CQ_EXPECT_EQ(Time::Infinity() + Duration::Ticks(0), Time::Infinity());
  // Past the representable range a lifetime never ends; landing exactly on kInfTick is infinity too.
  const int64_t max = std::numeric_limits<int64_t>::max();
  CQ_EXPECT_EQ((Time{max - 5, 0}) + Duration::Ticks(10), Time::Infinity());
  CQ_EXPECT_EQ((Time{max - 5, 0}) + Duration::Ticks(5), Time::Infinity());
  CQ_EXPECT_EQ((Time{max - 5, 0}) + Duration::Ticks(4), (Time{max - 1, 0}));
}

CQ_TEST(time_and_duration_to_string) {
  CQ_EXPECT_EQ((Time{7, 0}).ToString(), "7");
  CQ_EXPECT_EQ((Time{7, 2}).ToString(), "7+2ε");
  CQ_EXPECT_EQ(Time::Infinity().ToString(), "∞");
  CQ_EXPECT_EQ(Time::MinusInfinity().ToString(), "-∞");
  CQ_EXPECT_EQ(Duration::Ticks(10).ToString(), "10");
  CQ_EXPECT_EQ(Duration::Ticks(0).ToString(), "0");
  CQ_EXPECT_EQ(Duration::Epsilon().ToString(), "ε");
  CQ_EXPECT_EQ((Duration{3, 2, false}).ToString(), "3+2ε");
  CQ_EXPECT_EQ(Duration::Infinite().ToString(), "unbounded");
  CQ_EXPECT(Duration::Ticks(0).IsZero());
  CQ_EXPECT(!Duration::Epsilon().IsZero());
  CQ_EXPECT(!Duration::Infinite().IsZero());
}

}  // namespace
}  // namespace cq::test
