// Liveness of elastic rounds (docs/simulation.md, "Elastic rounds: open failures"): each test
// is the smallest run that blocked a round for good before the fix its comment names, found
// by the simulator (`gossip-rdzv-sim --scenario elastic`).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core_helpers.hpp"

namespace gossip_rdzv::protocol::testing {
namespace {

using namespace std::chrono_literals;

std::optional<Assignment> commit_of(MiniNet& net, int i, std::uint32_t round) {
  for (const auto& a : net.commits(i)) {
    if (a.round == round) return a;
  }
  return std::nullopt;
}

bool all_in_round(MiniNet& net, const std::vector<int>& ids, std::uint32_t round) {
  for (int i : ids) {
    if (!commit_of(net, i, round)) return false;
  }
  return true;
}

std::vector<std::string> endpoints(const Assignment& a) {
  std::vector<std::string> out;
  for (const auto& node : a.nodes)
    out.push_back(node.endpoint + "/g" + std::to_string(node.generation));
  return out;
}

/// The last round node i committed, if it is later than `after` and has `size` members.
std::optional<std::uint32_t> later_round_of_size(MiniNet& net, int i, std::uint32_t after,
                                                 std::size_t size) {
  const auto commits = net.commits(i);
  if (commits.empty() || commits.back().round <= after || commits.back().nnodes() != size)
    return std::nullopt;
  return commits.back().round;
}

NodeOptions three_seeds() {
  NodeOptions options;
  options.elastic = true;
  options.seeds = {MiniNet::endpoint(1), MiniNet::endpoint(2), MiniNet::endpoint(3)};
  return options;
}

// `--scenario elastic --nodes 3 --seed 441`: a seed restarts while its messages to the others
// are lost. The others still gossip to its dead generation, so the first Gossip that reaches
// the new process makes it joined, with no row in its table but its own, and tells it of a
// round that committed without it (below MAX: it awaits the next one, and so stops meeting
// the seeds). It sent nothing again, and the others never learned of the new process. A
// joined node with no live peer and no outcome asks the seeds again, listed seeds included.
TEST(ElasticLiveness, RestartedSeedMadeJoinedByGossipToItsDeadProcessAsksTheSeedsAgain) {
  MiniNet net(2, 3);
  for (int i = 1; i <= 3; ++i) net.add(i, three_seeds());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }));
  net.crash(3);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 1); }));
  // Until their rumours are spent: what reaches the dead process then is its own row.
  net.run([] { return false; }, 3s);
  net.cut_one_way(3, 1), net.cut_one_way(3, 2);
  NodeOptions restarted = three_seeds();
  restarted.generation = 2;
  net.add(3, restarted);
  ASSERT_TRUE(net.run([&] { return net.node(3)->joined() && net.node(3)->round() >= 1; }));
  net.heal();
  ASSERT_TRUE(net.run([&] { return later_round_of_size(net, 3, 1, 3).has_value(); }));
  const std::uint32_t round = *later_round_of_size(net, 3, 1, 3);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, round); }));
  for (int i : {1, 2})
    EXPECT_EQ(endpoints(*commit_of(net, i, round)), endpoints(*commit_of(net, 3, round)));
}

}  // namespace
}  // namespace gossip_rdzv::protocol::testing
