#include "runtime/log_limiter.hpp"

#include <gtest/gtest.h>

namespace gossip_rdzv::runtime {
namespace {

using namespace std::chrono_literals;

// 20,000 undecodable messages, each claiming another sender, give `burst` lines per period.
TEST(LogLimiter, AFloodGivesAtMostBurstLinesPerPeriod) {
  LogLimiter limiter(5, 10s);
  std::size_t logged = 0;
  for (int i = 0; i < 20000; ++i) logged += limiter.allow(protocol::Time{i}).log ? 1 : 0;
  EXPECT_EQ(logged, 5u);
}

TEST(LogLimiter, TheNextPeriodLogsAgainAndCountsWhatWasSuppressed) {
  LogLimiter limiter(2, 10s);
  for (int i = 0; i < 7; ++i) limiter.allow(1s);
  const auto next = limiter.allow(11s);
  EXPECT_TRUE(next.log);
  EXPECT_EQ(next.suppressed_before, 5u);
  EXPECT_EQ(limiter.allow(12s).suppressed_before, 0u);
  EXPECT_TRUE(limiter.allow(12s).log == false);  // the third line of this period
}

TEST(LogLimiter, QuietPeriodsReportNothingSuppressed) {
  LogLimiter limiter(1, 10s);
  EXPECT_TRUE(limiter.allow(0s).log);
  const auto later = limiter.allow(60s);
  EXPECT_TRUE(later.log);
  EXPECT_EQ(later.suppressed_before, 0u);
}

}  // namespace
}  // namespace gossip_rdzv::runtime
