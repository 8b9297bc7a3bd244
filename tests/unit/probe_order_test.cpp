// SWIM's round-robin probe order (protocol/probe_order.hpp): every pass visits each live peer
// once, passes differ, and a change in the number of live peers starts a new pass.
#include "protocol/probe_order.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace gossip_rdzv::protocol {
namespace {

std::vector<std::size_t> pass(ProbeOrder& order, std::size_t live, Prng& prng) {
  std::vector<std::size_t> picked;
  for (std::size_t i = 0; i < live; ++i) picked.push_back(*order.next(live, prng));
  return picked;
}

TEST(ProbeOrder, EveryPassProbesEachLivePeerOnce) {
  Prng prng(7);
  for (std::size_t live : {1u, 2u, 3u, 4u, 6u, 10u, 64u, 97u, 1000u}) {
    ProbeOrder order;
    for (int p = 0; p < 5; ++p) {
      const auto picked = pass(order, live, prng);
      const std::set<std::size_t> distinct(picked.begin(), picked.end());
      EXPECT_EQ(distinct.size(), live) << live << " peers, pass " << p;
      EXPECT_LT(*distinct.rbegin(), live);
    }
  }
}

// The order is random: passes over the same peers do not all repeat one order.
TEST(ProbeOrder, PassesAreInRandomOrder) {
  Prng prng(11);
  ProbeOrder order;
  std::set<std::vector<std::size_t>> orders;
  for (int p = 0; p < 20; ++p) orders.insert(pass(order, 10, prng));
  EXPECT_GT(orders.size(), 5u);
}

// A member joined or died mid-pass: a new pass over the new number begins, so nobody is
// skipped and no index points past the live peers.
TEST(ProbeOrder, AChangeInLivePeersStartsANewPass) {
  Prng prng(3);
  ProbeOrder order;
  for (int i = 0; i < 3; ++i) order.next(10, prng);
  const auto picked = pass(order, 4, prng);
  EXPECT_EQ(std::set<std::size_t>(picked.begin(), picked.end()).size(), 4u);
  EXPECT_FALSE(order.next(0, prng).has_value());
}

}  // namespace
}  // namespace gossip_rdzv::protocol
