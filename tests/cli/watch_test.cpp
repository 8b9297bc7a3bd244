// The pure parts of `join --watch` (watch.hpp): when a watcher takes the job for ended, and
// what --on-round gets on top of the round's variables. The rounds themselves run with real
// processes in test_watch.py.
#include "watch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "support/sample_assignment.hpp"

namespace gossip_rdzv::cli {
namespace {

using testing_support::sample_assignment;
using testing_support::sample_node;

// Round 2 of three nodes, seen by node rank 1 (10.0.0.2:29400).
Assignment three_nodes() {
  return sample_assignment(2, {sample_node(0, 0, 1, "10.0.0.1"), sample_node(1, 1, 2, "10.0.0.2"),
                               sample_node(2, 3, 1, "10.0.0.3")});
}

Progress progress_with(std::vector<std::pair<std::string, std::string>> rows) {
  Progress progress;
  for (auto& [endpoint, status] : rows) {
    progress.members.push_back(MemberProgress{endpoint, "host", status, std::nullopt, false});
  }
  return progress;
}

std::optional<std::string> value_of(const EnvVars& env, const std::string& name) {
  auto found =
      std::find_if(env.begin(), env.end(), [&](const auto& var) { return var.first == name; });
  if (found == env.end()) return std::nullopt;
  return found->second;
}

TEST(WatchTest, TheJobEndedOnlyWhenEveryOtherMemberOfTheRoundIsGone) {
  const Assignment round = three_nodes();
  EXPECT_TRUE(others_left(
      progress_with(
          {{"10.0.0.1:29400", "dead"}, {"10.0.0.2:29400", "alive"}, {"10.0.0.3:29400", "dead"}}),
      round));
  // One of them is still there (or only suspected).
  EXPECT_FALSE(others_left(
      progress_with(
          {{"10.0.0.1:29400", "dead"}, {"10.0.0.2:29400", "alive"}, {"10.0.0.3:29400", "suspect"}}),
      round));
  // A member this node has no row for is not known to have left.
  EXPECT_FALSE(others_left(progress_with({{"10.0.0.1:29400", "dead"}}), round));
  // Nodes outside the round do not count, alive or dead.
  EXPECT_TRUE(others_left(
      progress_with(
          {{"10.0.0.1:29400", "dead"}, {"10.0.0.3:29400", "dead"}, {"10.0.0.9:29400", "alive"}}),
      round));
}

TEST(WatchTest, ARoundOfOneNodeNeverEndsTheJobByItself) {
  Assignment alone = sample_assignment(0, {sample_node(0, 0, 1, "10.0.0.1")});
  alone.my_node_rank = 0;
  EXPECT_FALSE(others_left(progress_with({{"10.0.0.1:29400", "alive"}}), alone));
}

TEST(WatchTest, OnRoundGetsTheRoundAndThePathsOfTheFilesWritten) {
  CliOptions options;
  options.env_file = "/run/job/rank{local_rank}.env";
  options.membership_file = "/run/job/members.json";
  const EnvVars env = on_round_env({{"WORLD_SIZE", "4"}}, three_nodes(), options);
  EXPECT_EQ(value_of(env, "WORLD_SIZE"), "4");
  EXPECT_EQ(value_of(env, "GOSSIP_RDZV_ROUND"), "2");
  // This node runs two workers: one file each, in local-rank order.
  EXPECT_EQ(value_of(env, "GOSSIP_RDZV_ENV_FILES"), "/run/job/rank0.env\n/run/job/rank1.env");
  EXPECT_EQ(value_of(env, "GOSSIP_RDZV_MEMBERSHIP_FILE"), "/run/job/members.json");

  const EnvVars bare = on_round_env({}, three_nodes(), CliOptions{});
  EXPECT_EQ(value_of(bare, "GOSSIP_RDZV_ROUND"), "2");
  EXPECT_FALSE(value_of(bare, "GOSSIP_RDZV_ENV_FILES"));
  EXPECT_FALSE(value_of(bare, "GOSSIP_RDZV_MEMBERSHIP_FILE"));
}

}  // namespace
}  // namespace gossip_rdzv::cli
