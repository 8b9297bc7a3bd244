// Timing presets and the suspicion timeout that cores and the simulator share.
#include "gossip_rdzv/config.hpp"

#include <gtest/gtest.h>

namespace gossip_rdzv {
namespace {

using std::chrono::milliseconds;

// memberlist's suspicionTimeout: mult * max(1, log10 N) intervals, here with log10 rounded
// up (a whole number of probe intervals) and floored by suspicion_min.
TEST(Timing, SuspicionTimeoutGrowsWithTheDecimalDigitsOfN) {
  const Timing lan = Timing::lan();  // probe 1 s, mult 4, min 2 s
  EXPECT_EQ(lan.suspicion_timeout(0), milliseconds(4000));
  EXPECT_EQ(lan.suspicion_timeout(1), milliseconds(4000));
  EXPECT_EQ(lan.suspicion_timeout(10), milliseconds(4000));
  EXPECT_EQ(lan.suspicion_timeout(11), milliseconds(8000));
  EXPECT_EQ(lan.suspicion_timeout(100), milliseconds(8000));
  EXPECT_EQ(lan.suspicion_timeout(101), milliseconds(12000));
  EXPECT_EQ(lan.suspicion_timeout(10000), milliseconds(16000));
  const Timing wan = Timing::wan();  // probe 5 s, mult 6
  EXPECT_EQ(wan.suspicion_timeout(64), milliseconds(60000));
}

TEST(Timing, SuspicionTimeoutIsNeverBelowTheMinimum) {
  Timing timing = Timing::local();  // probe 200 ms, mult 4: 800 ms for N <= 10
  EXPECT_EQ(timing.suspicion_timeout(5), timing.suspicion_min);
  timing.suspicion_min = milliseconds(0);
  EXPECT_EQ(timing.suspicion_timeout(5), milliseconds(800));
}

}  // namespace
}  // namespace gossip_rdzv
