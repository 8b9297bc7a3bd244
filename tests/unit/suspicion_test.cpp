// Lifeguard's dynamic suspicion timeout (protocol/suspicion.hpp): the deadline of a
// suspicion as confirmations arrive.
#include "protocol/suspicion.hpp"

#include <gtest/gtest.h>

namespace gossip_rdzv::protocol {
namespace {

using namespace std::chrono_literals;

// The figures of memberlist's TestSuspicion_calcRemainingSuspicionTime (k = 3, min 2 s,
// max 30 s): 30 s with no confirmation, 16 s after one, 7.81 s after two, 2 s after three.
TEST(Suspicion, TimeoutShrinksLogarithmicallyWithConfirmations) {
  const SuspicionClock clock{Time{1s}, Time{2s}, Time{30s}, 3};
  EXPECT_EQ(clock.deadline(0), Time{1s} + Time{30s});
  EXPECT_EQ(clock.deadline(1), Time{1s} + Time{16s});
  EXPECT_NEAR(static_cast<double>((clock.deadline(2) - Time{1s}).count()), 7.81e6, 0.01e6);
  EXPECT_EQ(clock.deadline(3), Time{1s} + Time{2s});
  EXPECT_EQ(clock.deadline(9), Time{1s} + Time{2s});
}

TEST(Suspicion, NoConfirmationsExpectedMeansTheShortTimeout) {
  EXPECT_EQ((SuspicionClock{Time{5s}, Time{4s}, Time{24s}, 0}.deadline(0)), Time{9s});
  // max below min (a misconfigured clock) never lengthens the short timeout's end.
  EXPECT_EQ((SuspicionClock{Time{0}, Time{4s}, Time{1s}, 2}.deadline(0)), Time{4s});
  EXPECT_EQ(SuspicionClock::fixed(Time{7s}).deadline(0), Time{7s});
}

TEST(Suspicion, EveryConfirmationBringsTheDeadlineCloser) {
  const SuspicionClock clock{Time{0}, Time{4s}, Time{24s}, 5};
  for (std::uint32_t c = 0; c < 5; ++c) {
    EXPECT_GT(clock.deadline(c), clock.deadline(c + 1)) << c;
    EXPECT_GE(clock.deadline(c + 1), Time{4s}) << c;
  }
}

}  // namespace
}  // namespace gossip_rdzv::protocol
